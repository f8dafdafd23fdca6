package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/server"
)

// A run that names a webhook is POSTed to it once it ends: the run with
// its final status, then its values or its error. A webhook answered 5xx
// is tried again; the log names the webhook without its query, which may
// hold a token. URLs the server will not call are refused at creation.
func TestWebhooks(t *testing.T) {
	got := make(chan map[string]any, 10)
	var flaky atomic.Int32
	flaky.Store(2)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/flaky" && flaky.Add(-1) >= 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook call %s %s: %v", r.Method, r.Header.Get("Content-Type"), err)
		}
		m["_path"] = r.URL.Path
		got <- m
	}))
	defer hook.Close()
	logs := &syncBuffer{}
	s := newServer(t, server.Options{
		Webhooks: &server.WebhookOptions{Backoff: time.Millisecond, AllowedHosts: []string{"127.0.0.1", "*.example.com"}},
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
	})
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no webhook call in 30 s", what)
			return nil
		}
	}
	tid := s.newThread()
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hook me"), "webhook": hook.URL + "/ok?token=s3cret"})
	m := next("a run that succeeded")
	if m["_path"] != "/ok" || m["thread_id"] != tid || m["status"] != "success" || m["assistant_id"] == nil || m["webhook_sent_at"] == nil || m["error"] != nil {
		t.Errorf("webhook of a run that succeeded = %v", m)
	}
	runs := s.must(200, "GET", "/threads/"+tid+"/runs", nil)
	var list []map[string]any
	runs.json(t, &list)
	if len(list) != 1 || m["run_id"] != list[0]["run_id"] {
		t.Errorf("webhook run_id %v; runs %v", m["run_id"], list)
	}
	if msgs, _ := m["values"].(map[string]any)["messages"].([]any); len(msgs) != 2 {
		t.Errorf("webhook values = %v", m["values"])
	}

	// Answered 503 twice, then delivered on the third try.
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("again"), "webhook": hook.URL + "/flaky?token=s3cret"})
	if m := next("a flaky webhook"); m["_path"] != "/flaky" || m["status"] != "success" {
		t.Errorf("flaky webhook = %v", m)
	}
	if flaky.Load() != -1 {
		t.Errorf("flaky webhook tried %d times, want 3", 2-flaky.Load()+1)
	}

	// A run that failed sends its error, not values.
	bad := s.newThread()
	s.must(200, "POST", "/threads/"+bad+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": "soon"}, "webhook": hook.URL + "/failed"})
	if m := next("a run that failed"); m["status"] != "error" || m["error"] == nil || m["values"] != nil {
		t.Errorf("webhook of a failed run = %v", m)
	}

	for _, url := range []string{"ftp://127.0.0.1/x", "/relative", "http://user:pw@127.0.0.1/x", "http://evil.test/x", "https://example.com.evil.test/x", "http://" + strings.Repeat("a", 2100) + ".example.com/"} {
		r := s.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": human("no"), "webhook": url})
		if r.status != 400 || !strings.Contains(string(r.body), "webhook") {
			t.Errorf("webhook %.60q: %d %s; want 400 naming webhook", url, r.status, r.body)
		}
	}
	if log := logs.String(); strings.Contains(log, "s3cret") || !strings.Contains(log, "trying again") {
		t.Errorf("log: the webhook's token shows, or its retries do not:\n%s", log)
	}
}

// With Disabled, a run naming a webhook is refused rather than run
// without it.
func TestWebhooksDisabled(t *testing.T) {
	s := newServer(t, server.Options{Webhooks: &server.WebhookOptions{Disabled: true}})
	tid := s.newThread()
	r := s.do("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("x"), "webhook": "https://hooks.example.com/x"})
	if r.status != 400 || !strings.Contains(string(r.body), "webhook") {
		t.Errorf("a webhook on a server that calls none: %d %s; want 400 naming webhook", r.status, r.body)
	}
}
