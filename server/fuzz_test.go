package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/server"
)

// Any request body gets an answer below 500 from every endpoint that
// reads one: bad input is the client's error, never a crash.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"metadata":{"a":1}}`, `{"metadata":5}`, `{not json`, `null`, `[]`, `"x"`,
		`{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`,
		`{"assistant_id":"slow","input":{"delay_ms":"soon"},"stream_mode":["values","bogus"]}`,
		`{"assistant_id":"approval","command":{"resume":{"x":1},"update":[["request",1]],"goto":{"node":"finish"}}}`,
		`{"limit":-1,"offset":"x","sort_by":"name","ids":["nope"]}`,
		`{"namespace":["a","b"],"key":"k","value":{"x":1},"index":["x"],"ttl":1}`,
		`{"namespace_prefix":["a"],"filter":{"x":{"$gt":1}},"query":"q"}`,
		`{"values":{"messages":[1,2]},"as_node":"echo"}`,
		`{"before":{"configurable":{"checkpoint_id":5}}}`,
		`{"user_input":"hi","assistant_id":"echo","timeout":0.5}`, `{"input":{"delay_ms":1},"assistant_id":"slow","session_id":"` + "5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2" + `"}`,
		`{"assistant_id":"echo","schedule":"*/5 * * * *","timezone":"Europe/Paris","end_time":"2099-01-01T00:00:00Z","on_run_completed":"keep","enabled":false}`,
		`{"schedule":"61 * * * *","timezone":"Nowhere","end_time":null,"input":null,"select":["now","cron_id"],"sort_by":"next_run_date"}`,
		`{"thread_ids":["nope",5],"strategy":"keep_latest"}`, `{"user_action":"accept","edited_content":[1]}`, `{"session_id":"x","assistant_id":"nobody"}`,
	} {
		f.Add(seed)
	}
	// No cron fires: the crons the fuzzer makes are for their endpoints.
	srv, err := server.New(context.Background(), server.Options{Graphs: apitestGraphs(), CronInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Shutdown(context.Background()) })
	tid := "5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2"
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("POST", "/threads", strings.NewReader(`{"thread_id":"`+tid+`"}`)))
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("POST", "/runs/crons", strings.NewReader(`{"assistant_id":"echo","schedule":"0 0 * * *"}`)))
	var cron struct {
		CronID string `json:"cron_id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &cron); err != nil || cron.CronID == "" {
		f.Fatalf("creating a cron: %d %s", rec.Code, rec.Body)
	}
	targets := []struct{ method, path string }{
		{"POST", "/threads/" + tid + "/runs/crons"}, {"POST", "/runs/crons"}, {"PATCH", "/runs/crons/" + cron.CronID},
		{"POST", "/runs/crons/search"}, {"POST", "/runs/crons/count"},
		{"POST", "/threads"}, {"POST", "/threads/search"}, {"POST", "/threads/count"},
		{"PATCH", "/threads/" + tid}, {"POST", "/threads/" + tid + "/state"}, {"POST", "/threads/" + tid + "/history"},
		{"POST", "/threads/" + tid + "/state/checkpoint"}, {"POST", "/threads/prune"}, {"PATCH", "/threads/" + tid + "/state"},
		{"POST", "/assistants"}, {"POST", "/assistants/search"}, {"POST", "/assistants/count"},
		{"PATCH", "/assistants/echo"}, {"POST", "/assistants/echo/versions"}, {"POST", "/assistants/echo/latest"},
		{"PUT", "/store/items"}, {"DELETE", "/store/items"}, {"POST", "/store/items/search"}, {"POST", "/store/namespaces"},
		{"POST", "/threads/" + tid + "/runs/wait"}, {"POST", "/runs/wait"}, {"POST", "/runs/batch"}, {"POST", "/runs/cancel"},
		// The document API's.
		{"POST", "/agent/run"}, {"POST", "/agent/run-async"}, {"POST", "/agent/stream"}, {"POST", "/sessions"}, {"POST", "/approve/" + tid},
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, tg := range targets {
			// A run told to sleep long holds a wait request: the fuzzer
			// does not wait for it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(tg.method, tg.path, strings.NewReader(body)).WithContext(ctx))
			cancel()
			if rec.Code >= 500 {
				t.Fatalf("%s %s with %q: %d %s", tg.method, tg.path, body, rec.Code, rec.Body)
			}
		}
		// Whatever ran finishes before the next input.
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("POST", "/runs/cancel", strings.NewReader(`{"thread_id":"`+tid+`","status":"all"}`)))
		if rec.Code != http.StatusNoContent {
			t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
		}
	})
}
