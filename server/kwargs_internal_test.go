package server

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/weftlabs/weft/server/internal/records"
)

// The thread config kwargs makes from the configurable values at hand is
// what headerConfig reads from the stored kwargs, and the modes of
// stream_mode are read as before: one string, or a list.
func TestKwargsThreadConfigIsHeaderConfig(t *testing.T) {
	for _, tc := range []struct {
		config  string
		headers map[string]string
	}{
		{``, nil},
		{``, map[string]string{"User-Agent": "Go-http-client/1.1"}},
		{`null`, map[string]string{"User-Agent": "a", "X-Trace": "t<&>", "X-Api-Key": "secret", "Accept": "*/*"}},
		{`{"configurable":{"model":"m","x-client":{"a":[1,2.5]}}}`, map[string]string{"User-Agent": "a"}},
		{`{"configurable":{"model":"m"}}`, nil},
		{`{"configurable":{"x-a":1e21,"user-agent":"mine"}}`, nil},
		{`{"configurable":null,"recursion_limit":5}`, map[string]string{"x-lower": "l"}},
		{`{"configurable":{}}`, nil},
		{`{"Configurable":{"x-upper":"u"},"configurable":{"x-lower":"l"}}`, map[string]string{"User-Agent": "a"}},
		{`{"CONFIGURABLE":{"x-upper":"u"}}`, nil},
	} {
		body := `{"assistant_id":"a"}`
		if tc.config != "" {
			body = `{"assistant_id":"a","config":` + tc.config + `}`
		}
		r := httptest.NewRequest("POST", "/runs", strings.NewReader(body))
		r.Header = map[string][]string{}
		for k, v := range tc.headers {
			r.Header[k] = []string{v}
		}
		var req runRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		kw, threadConfig, err := req.kwargs(r, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.config, err)
		}
		if want := headerConfig(kw); string(threadConfig) != string(want) {
			t.Errorf("config %s, headers %v: thread config %s, want %s", tc.config, tc.headers, threadConfig, want)
		}
	}

	for raw, want := range map[string]string{
		``: `["values"]`, `null`: `["values"]`, `"updates"`: `["updates"]`, `["values","messages-tuple"]`: `["values","messages-tuple"]`,
		` "custom"`: `["custom"]`, `[]`: `["values"]`,
	} {
		got, err := streamModeList(json.RawMessage(raw))
		if b, _ := json.Marshal(got); err != nil || string(b) != want {
			t.Errorf("streamModeList(%s) = %s, %v; want %s", raw, b, err, want)
		}
	}
	for _, raw := range []string{`1`, `{}`, `"nope"`, `["values",1]`, `"unterminated`, `["values",]`, `["values","nope"]`, `[,]`, `["values" "updates"]`} {
		if _, err := streamModeList(json.RawMessage(raw)); err == nil {
			t.Errorf("streamModeList(%s) took it", raw)
		}
	}
}

// The config of a run without one, encoded by hand, is what json.Marshal
// gives for it; and so is the usual stream_mode read without
// encoding/json.
func TestKwargsWithoutConfigAsMarshal(t *testing.T) {
	for _, headers := range []map[string]string{
		nil,
		{"User-Agent": "Go-http-client/1.1"},
		{"User-Agent": "a\"b\\c", "X-Trace": "t<&>\u2028", "X-B": "\xff", "X-A": "", "X-Api-Key": "secret"},
	} {
		r := httptest.NewRequest("POST", "/runs", nil)
		r.Header = map[string][]string{}
		for k, v := range headers {
			r.Header[k] = []string{v}
		}
		req := runRequest{StreamMode: json.RawMessage(`["values","messages-tuple","updates","custom"]`)}
		kw, _, err := req.kwargs(r, false)
		if err != nil {
			t.Fatal(err)
		}
		configurable := map[string]any{}
		for k, v := range headers {
			if k = strings.ToLower(k); k != "x-api-key" {
				configurable[k] = v
			}
		}
		cfg := map[string]any{}
		if len(configurable) > 0 {
			cfg["configurable"] = configurable
		}
		if want, _ := json.Marshal(cfg); string(kw.Config) != string(want) {
			t.Errorf("headers %v: config %s, want %s", headers, kw.Config, want)
		}
		if want := []string{"values", "messages-tuple", "updates", "custom"}; !reflect.DeepEqual(kw.StreamMode, want) {
			t.Errorf("stream modes %q, want %q", kw.StreamMode, want)
		}
	}
}

// A checkpoint's metadata read from canonical run metadata without
// encoding/json holds what decoding it with encoding/json gives.
func TestCheckpointMetaDecodesAsJSON(t *testing.T) {
	m := &manager{}
	for _, md := range []string{``, `{}`, `{"a":1,"b":[true,null,"c"],"d":{"e":-2}}`, `{"b":1,"a":2}`, `{"a":"<"}`, `{"a":1.5e3}`, `[1]`} {
		lr := &liveRun{rec: records.Run{ID: "r", ThreadID: "t", AssistantID: "as", Attempt: 2, Metadata: json.RawMessage(md)}, graph: &servedGraph{id: "g"}}
		want := map[string]any{}
		_ = json.Unmarshal([]byte(md), &want)
		want["run_id"], want["thread_id"], want["assistant_id"], want["graph_id"], want["run_attempt"] = "r", "t", "as", "g", 2
		if got := m.checkpointMeta(lr); !reflect.DeepEqual(got, want) {
			t.Errorf("checkpointMeta(%s) = %v, want %v", md, got, want)
		}
	}
}

// A run's configurable values decoded from canonical JSON without
// encoding/json are those decoding the config into a struct gives.
func TestRunConfigurableDecodesAsJSON(t *testing.T) {
	info := RunInfo{RunID: "r", ThreadID: "t", AssistantID: "a", GraphID: "g", User: "u"}
	for _, config := range []string{
		``, `{}`, `{"configurable":null}`, `{"configurable":{}}`,
		`{"configurable":{"user-agent":"Go-http-client/1.1"}}`,
		`{"configurable":{"a":[1,{"b":null}],"langgraph_auth_user_id":"mallory","user_id":"m"},"recursion_limit":5}`,
		`{"configurable":"text"}`, `{"configurable":[1]}`,
		`{"Configurable":{"x":1},"configurable":{"y":2}}`, `{"CONFIGURABLE":{"x":1}}`,
		`{"configurable":{"b":1,"a":2}}`, `{"configurable":{"f":1.5}}`,
	} {
		var cfg struct {
			Configurable map[string]any `json:"configurable"`
		}
		_ = json.Unmarshal([]byte(config), &cfg)
		want := cfg.Configurable
		if want == nil {
			want = map[string]any{}
		}
		want["run_id"], want["thread_id"], want["assistant_id"], want["graph_id"] = "r", "t", "a", "g"
		delete(want, "langgraph_auth_user_id")
		want["langgraph_auth_user_id"], want["user_id"] = "u", "u"
		if got := runConfigurable(runKwargs{Config: json.RawMessage(config)}, info); !reflect.DeepEqual(got, want) {
			t.Errorf("runConfigurable(%s) = %v, want %v", config, got, want)
		}
	}
	if _, ok := canonicalConfigurable(json.RawMessage(`{"configurable":{"user-agent":"x"}}`)); !ok {
		t.Error("a canonical config took the slow path")
	}
}

// jsonObject takes what decoding into a map takes, and refuses the rest.
func TestJSONObjectIsMapDecoding(t *testing.T) {
	for _, raw := range []string{``, `null`, `{}`, `{"a":[1,{"b":null}]}`, `{"a":1}x`, `{"a":`, `{]`, `[]`, `"s"`, `1`, ` {}`, `{"a":1,"a":2}`} {
		var m map[string]any
		want := len(raw) == 0 || json.Unmarshal([]byte(raw), &m) == nil
		if got := jsonObject(json.RawMessage(raw), "f") == nil; got != want {
			t.Errorf("jsonObject(%s) took it: %v, want %v", raw, got, want)
		}
	}
}

// A run's recursion limit is what decoding its config gives, whether or
// not the config is decoded.
func TestRecursionConfigAsUnmarshal(t *testing.T) {
	for _, c := range []string{
		``, `null`, `[1]`, `{}`, `{"configurable":{"user-agent":"a"}}`, `{"recursion_limit":5}`, `{"RECURSION_Limit":6}`,
		`{"recursion\u005flimit":7}`, `{"recurſion_limit":8}`, `{"configurable":{"x":"recursion_limit"}}`, `{"recursion_limit":"x"}`,
		`{"recursion_limit":5`, `{"a":1,"Recursion_limit":9}`,
	} {
		var want runConfig
		wantOK := json.Unmarshal([]byte(c), &want) == nil
		got, ok := runKwargs{Config: json.RawMessage(c)}.recursionConfig()
		if wantOK && (!ok || got != want) || !wantOK && ok && got.RecursionLimit > 0 {
			t.Errorf("config %s: %+v, %v; want %+v, %v", c, got, ok, want, wantOK)
		}
	}
}
