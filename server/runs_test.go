package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// GRAPHS.md: echo's events for values, updates, messages-tuple and custom
// on a 2-token input, in this order; the chunks share one run-<uuid> id,
// which the reply in the final values carries.
func TestStreamEcho(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	r, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "echo", "input": human("hi you"),
		"stream_mode": []string{"values", "updates", "messages-tuple", "custom"},
	})
	want := []string{"metadata", "values", "custom", "messages", "messages", "custom", "updates", "values"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	meta := evs[0].obj(t)
	runID, _ := meta["run_id"].(string)
	if meta["attempt"] != 1.0 || runID == "" {
		t.Errorf("metadata = %v", meta)
	}
	if loc := r.header.Get("Content-Location"); loc != "/threads/"+tid+"/runs/"+runID {
		t.Errorf("Content-Location = %q", loc)
	}
	for i, e := range evs {
		if e.ID != string(rune('0'+i)) {
			t.Errorf("event %d has id %q", i, e.ID)
		}
	}
	var tuple [2]map[string]any
	if err := json.Unmarshal(evs[3].Data, &tuple); err != nil {
		t.Fatal(err)
	}
	chunk, md := tuple[0], tuple[1]
	if chunk["type"] != "ai" || chunk["content"] != "hi " || !strings.HasPrefix(chunk["id"].(string), "run-") {
		t.Errorf("chunk = %v", chunk)
	}
	for _, k := range []string{"tool_calls", "invalid_tool_calls", "tool_call_chunks", "additional_kwargs", "response_metadata"} {
		if _, ok := chunk[k]; !ok {
			t.Errorf("chunk lacks %s: %v", k, chunk)
		}
	}
	wantMeta := map[string]any{
		"langgraph_node": "echo", "langgraph_step": 1.0, "langgraph_triggers": []any{"branch:to:echo"},
		"langgraph_path": []any{"__pregel_pull", "echo"}, "thread_id": tid, "run_id": runID,
		"graph_id": "echo", "assistant_id": server.SystemAssistantID("echo"), "created_by": "system", "run_attempt": 1.0,
	}
	for k, v := range wantMeta {
		if diff := cmp.Diff(v, md[k]); diff != "" {
			t.Errorf("metadata %s (-want +got):\n%s", k, diff)
		}
	}
	if ns, _ := md["langgraph_checkpoint_ns"].(string); !strings.HasPrefix(ns, "echo:") || md["checkpoint_ns"] != ns {
		t.Errorf("checkpoint namespaces = %v, %v", md["langgraph_checkpoint_ns"], md["checkpoint_ns"])
	}
	var second [2]map[string]any
	_ = json.Unmarshal(evs[4].Data, &second)
	if second[0]["id"] != chunk["id"] || second[0]["content"] != "you" {
		t.Errorf("second chunk = %v", second[0])
	}
	final := evs[7].obj(t)["messages"].([]any)
	if len(final) != 2 {
		t.Fatalf("final messages = %v", final)
	}
	reply := final[1].(map[string]any)
	if reply["type"] != "ai" || reply["content"] != "hi you" || reply["id"] != chunk["id"] {
		t.Errorf("reply = %v", reply)
	}
	if first := final[0].(map[string]any); first["type"] != "human" || first["id"] == "" {
		t.Errorf("input message = %v", first)
	}
	th := s.must(200, "GET", "/threads/"+tid, nil).obj(t)
	if th["status"] != "idle" || th["values"] == nil {
		t.Errorf("thread after the run = %v", th)
	}
	meta2 := th["metadata"].(map[string]any)
	if meta2["graph_id"] != "echo" || meta2["assistant_id"] != server.SystemAssistantID("echo") {
		t.Errorf("thread metadata = %v", meta2)
	}
	run := s.must(200, "GET", "/threads/"+tid+"/runs/"+runID, nil).obj(t)
	if run["status"] != "success" {
		t.Errorf("run = %v", run)
	}
}

// The events mode streams LangChain's stream events as the reference
// server does: the graph's chain around its nodes' chains, and each
// model reply's start, chunks and end inside its node.
func TestStreamEventsMode(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("a b"), "stream_mode": []string{"events", "values"}})
	type row struct{ Event, Name string }
	var got []row
	var runID, nodeRun string
	for _, e := range evs {
		switch e.Event {
		case "metadata":
			runID = e.obj(t)["run_id"].(string)
		case "events":
			m := e.obj(t)
			got = append(got, row{m["event"].(string), m["name"].(string)})
			for _, k := range []string{"run_id", "parent_ids", "tags", "metadata", "data"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s %s has no %s: %v", m["event"], m["name"], k, m)
				}
			}
			data := m["data"].(map[string]any)
			// parent_ids: none for the graph, the graph's run for its
			// node, the graph's and the node's for the model's reply.
			parents, _ := json.Marshal(m["parent_ids"])
			wantParents := `["` + runID + `"]`
			switch {
			case m["name"] == "LangGraph":
				wantParents = "[]"
			case m["name"] != "echo":
				wantParents = `["` + runID + `","` + nodeRun + `"]`
			}
			if string(parents) != wantParents {
				t.Errorf("%s %s: parent_ids %s, want %s", m["event"], m["name"], parents, wantParents)
			}
			switch m["event"] {
			case "on_chain_start":
				if m["name"] == "echo" {
					nodeRun = m["run_id"].(string)
				}
				if m["name"] == "LangGraph" && (m["run_id"] != runID || data["input"].(map[string]any)["messages"] == nil) {
					t.Errorf("the graph's start = %v", m)
				}
				if m["name"] == "echo" {
					md := m["metadata"].(map[string]any)
					if md["langgraph_node"] != "echo" || md["langgraph_step"] != 1.0 || md["thread_id"] != tid || m["tags"].([]any)[0] != "graph:step:1" {
						t.Errorf("the node's start = %v", m)
					}
				}
			case "on_chat_model_stream":
				if data["chunk"].(map[string]any)["type"] != "ai" {
					t.Errorf("a chunk = %v", data)
				}
			case "on_chat_model_end":
				if data["output"].(map[string]any)["content"] != "a b" {
					t.Errorf("the reply's end = %v", data)
				}
			case "on_chain_end":
				msgs := data["output"].(map[string]any)["messages"].([]any)
				if (m["name"] == "echo" && len(msgs) != 1) || (m["name"] == "LangGraph" && len(msgs) != 2) {
					t.Errorf("%s's end = %v", m["name"], data)
				}
			}
		}
	}
	want := []row{
		{"on_chain_start", "LangGraph"}, {"on_chain_start", "echo"},
		{"on_chat_model_start", "ChatModel"}, {"on_chat_model_stream", "ChatModel"}, {"on_chat_model_stream", "ChatModel"},
		{"on_chat_model_end", "ChatModel"}, {"on_chain_end", "echo"}, {"on_chain_end", "LangGraph"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestStreamModes(t *testing.T) {
	s := newServer(t, server.Options{})
	tests := []struct {
		mode any
		want []string
	}{
		{"values", []string{"metadata", "values", "values"}},
		{"updates", []string{"metadata", "updates"}},
		{"custom", []string{"metadata", "custom", "custom"}},
		{"messages-tuple", []string{"metadata", "messages", "messages", "messages"}},
		{nil, []string{"metadata", "values", "values"}},
		// As the reference: echo's start and result, not START's.
		{[]string{"tasks"}, []string{"metadata", "tasks", "tasks"}},
		{[]string{"checkpoints"}, []string{"metadata", "checkpoints", "checkpoints", "checkpoints"}},
		{[]string{"debug"}, []string{"metadata", "debug", "debug", "debug", "debug", "debug"}},
		{[]string{"events"}, []string{"metadata", "events", "events", "events", "events", "events", "events", "events", "events", "events"}},
	}
	for _, tt := range tests {
		tid := s.newThread()
		body := map[string]any{"assistant_id": "echo", "input": human("a b c")}
		if tt.mode != nil {
			body["stream_mode"] = tt.mode
		}
		_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", body)
		if diff := cmp.Diff(tt.want, names(evs)); diff != "" {
			t.Errorf("stream_mode %v (-want +got):\n%s", tt.mode, diff)
		}
	}

	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("x y z"), "stream_mode": "custom"})
	if got := string(evs[1].Data); got != `{"event":"echo_start","tokens":3}` {
		t.Errorf("custom = %s", got)
	}
	if got := string(evs[2].Data); got != `{"event":"echo_end","text":"x y z"}` {
		t.Errorf("custom = %s", got)
	}
	_, evs = s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("a b c"), "stream_mode": "updates"})
	up := evs[1].obj(t)["echo"].(map[string]any)["messages"].([]any)[0].(map[string]any)
	if up["content"] != "a b c" || up["type"] != "ai" {
		t.Errorf("updates = %s", evs[1].Data)
	}
	_, evs = s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("dbg"), "stream_mode": []string{"tasks", "checkpoints", "debug"}})
	for _, e := range evs {
		switch e.Event {
		case "checkpoints":
			cp := e.obj(t)
			for _, k := range []string{"config", "values", "metadata", "next", "tasks", "checkpoint", "parent_checkpoint"} {
				if _, ok := cp[k]; !ok {
					t.Errorf("checkpoints event lacks %s: %s", k, e.Data)
				}
			}
		case "tasks":
			task := e.obj(t)
			if task["name"] != "echo" && task["name"] != "__start__" {
				t.Errorf("task = %s", e.Data)
			}
		case "debug":
			d := e.obj(t)
			if d["type"] == nil || d["payload"] == nil || d["step"] == nil || d["timestamp"] == nil {
				t.Errorf("debug = %s", e.Data)
			}
		}
	}
}

// The legacy messages mode: a human message sent whole, then the reply's
// metadata, its partial messages growing chunk by chunk, and the reply
// whole.
func TestStreamMessagesLegacy(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("p q"), "stream_mode": "messages"})
	want := []string{"metadata", "messages/complete", "messages/metadata", "messages/partial", "messages/partial", "messages/complete"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	var partial []map[string]any
	_ = json.Unmarshal(evs[4].Data, &partial)
	if partial[0]["content"] != "p q" || partial[0]["type"] != "ai" {
		t.Errorf("second partial = %s", evs[4].Data)
	}
	var md map[string]map[string]any
	_ = json.Unmarshal(evs[2].Data, &md)
	if m := md[partial[0]["id"].(string)]["metadata"].(map[string]any); m["langgraph_node"] != "echo" {
		t.Errorf("messages/metadata = %s", evs[2].Data)
	}
	var complete []map[string]any
	_ = json.Unmarshal(evs[5].Data, &complete)
	if len(complete) != 1 || complete[0]["content"] != "p q" || complete[0]["id"] != partial[0]["id"] {
		t.Errorf("complete = %s", evs[5].Data)
	}
}

func TestStreamError(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": "soon"}})
	if diff := cmp.Diff([]string{"metadata", "error"}, names(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	e := evs[1].obj(t)
	if e["error"] == nil || !strings.Contains(e["message"].(string), "delay_ms") {
		t.Errorf("error = %s", evs[1].Data)
	}
	runID := evs[0].obj(t)["run_id"].(string)
	if run := s.must(200, "GET", "/threads/"+tid+"/runs/"+runID, nil).obj(t); run["status"] != "error" {
		t.Errorf("run status = %v", run["status"])
	}
	if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "error" {
		t.Errorf("thread status = %v", th["status"])
	}
	// The wait endpoint answers the error in the body.
	w := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"nope": 1}}).obj(t)
	if e, ok := w["__error__"].(map[string]any); !ok || !strings.Contains(e["message"].(string), "nope") {
		t.Errorf("wait of a failing run = %v", w)
	}
	// A later run that succeeds makes the thread idle again.
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "ok"}})
	if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
		t.Errorf("thread status after a good run = %v", th["status"])
	}
}

func TestWait(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	r := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello wait")})
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type = %q", ct)
	}
	if !strings.HasPrefix(r.header.Get("Content-Location"), "/threads/"+tid+"/runs/") {
		t.Errorf("Content-Location = %q", r.header.Get("Content-Location"))
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(r.body))), &v); err != nil {
		t.Fatalf("wait body %q: %v", r.body, err)
	}
	if msgs := v["messages"].([]any); len(msgs) != 2 {
		t.Errorf("wait result = %v", v)
	}
	var runs []map[string]any
	s.must(200, "GET", "/threads/"+tid+"/runs", nil).json(t, &runs)
	if len(runs) != 1 || runs[0]["status"] != "success" {
		t.Fatalf("runs = %v", runs)
	}
	kw := runs[0]["kwargs"].(map[string]any)
	for _, k := range []string{"input", "config", "context", "stream_mode", "temporary", "subgraphs", "resumable"} {
		if _, ok := kw[k]; !ok {
			t.Errorf("kwargs lacks %s: %v", k, kw)
		}
	}
	if cfg := kw["config"].(map[string]any)["configurable"].(map[string]any); cfg["user-agent"] == nil {
		t.Errorf("the user agent header is not in config.configurable: %v", cfg)
	}
	md := runs[0]["metadata"].(map[string]any)
	if md["created_by"] != "system" || md["graph_id"] != "echo" {
		t.Errorf("run metadata = %v", md)
	}
}

func TestStateless(t *testing.T) {
	s := newServer(t, server.Options{})
	r := s.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": human("no thread")})
	if !strings.HasPrefix(r.header.Get("Content-Location"), "/runs/") {
		t.Errorf("Content-Location = %q", r.header.Get("Content-Location"))
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(r.body))), &v); err != nil || len(v["messages"].([]any)) != 2 {
		t.Errorf("stateless wait = %s (%v)", r.body, err)
	}
	r2, evs := s.stream("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": human("x y"), "stream_mode": "updates"})
	if diff := cmp.Diff([]string{"metadata", "updates"}, names(evs)); diff != "" {
		t.Errorf("stateless stream (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(r2.header.Get("Content-Location"), "/runs/") {
		t.Errorf("Content-Location = %q", r2.header.Get("Content-Location"))
	}
	// The temporary threads are gone.
	var list []any
	s.must(200, "POST", "/threads/search", map[string]any{}).json(t, &list)
	if len(list) != 0 {
		t.Errorf("stateless runs left threads: %v", list)
	}
	// on_completion keep keeps the thread.
	run := s.must(200, "POST", "/runs", map[string]any{"assistant_id": "echo", "input": human("keep"), "on_completion": "keep"}).obj(t)
	s.waitRun(run["thread_id"].(string), run["run_id"].(string))
	s.must(200, "GET", "/threads/"+run["thread_id"].(string), nil)
	var batch []map[string]any
	s.must(200, "POST", "/runs/batch", []map[string]any{{"assistant_id": "echo", "input": human("1")}, {"assistant_id": "slow", "input": map[string]any{}}}).json(t, &batch)
	if len(batch) != 2 || batch[0]["status"] != "pending" {
		t.Errorf("batch = %v", batch)
	}
}

func TestBackgroundRunJoinListGet(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	r := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 50, "tag": "bg"}, "metadata": map[string]any{"kind": "bg"}})
	run := r.obj(t)
	rid := run["run_id"].(string)
	if run["status"] != "pending" || run["thread_id"] != tid || run["assistant_id"] != server.SystemAssistantID("slow") || run["multitask_strategy"] != "reject" {
		t.Errorf("created run = %v", run)
	}
	if md := run["metadata"].(map[string]any); md["kind"] != "bg" || md["graph_id"] != "slow" {
		t.Errorf("run metadata = %v", md)
	}
	if r.header.Get("Content-Location") != "/threads/"+tid+"/runs/"+rid {
		t.Errorf("Content-Location = %q", r.header.Get("Content-Location"))
	}
	if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "busy" {
		t.Errorf("thread while its run goes = %v", th["status"])
	}
	joined := s.must(200, "GET", "/threads/"+tid+"/runs/"+rid+"/join", nil).obj(t)
	if diff := cmp.Diff(map[string]any{"delay_ms": 50.0, "tag": "bg", "log": []any{"bg"}}, joined); diff != "" {
		t.Errorf("join (-want +got):\n%s", diff)
	}
	if got := s.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); got["status"] != "success" {
		t.Errorf("run after join = %v", got["status"])
	}
	// A join after the run ended answers the thread's values.
	again := s.must(200, "GET", "/threads/"+tid+"/runs/"+rid+"/join", nil).obj(t)
	if diff := cmp.Diff(joined, again); diff != "" {
		t.Errorf("second join (-first +second):\n%s", diff)
	}
	r2 := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "two"}}).obj(t)
	s.must(200, "GET", "/threads/"+tid+"/runs/"+r2["run_id"].(string)+"/join", nil)
	var list []map[string]any
	s.must(200, "GET", "/threads/"+tid+"/runs?limit=10&offset=0", nil).json(t, &list)
	if len(list) != 2 || list[0]["run_id"] != r2["run_id"] {
		t.Errorf("runs, newest first = %v", list)
	}
	s.must(200, "GET", "/threads/"+tid+"/runs?limit=1&offset=1", nil).json(t, &list)
	if len(list) != 1 || list[0]["run_id"] != rid {
		t.Errorf("second page = %v", list)
	}
	s.must(200, "GET", "/threads/"+tid+"/runs?status=error", nil).json(t, &list)
	if len(list) != 0 {
		t.Errorf("status filter = %v", list)
	}
	s.must(400, "GET", "/threads/"+tid+"/runs?status=sleepy", nil)
	s.must(400, "GET", "/threads/"+tid+"/runs?limit=x", nil)
	r404 := s.must(404, "GET", "/threads/"+tid+"/runs/00000000-0000-4000-8000-000000000000", nil)
	if string(r404.body) != "Run not found" {
		t.Errorf("404 body = %q", r404.body)
	}
	s.must(404, "GET", "/threads/"+tid+"/runs/00000000-0000-4000-8000-000000000000/join", nil)
	s.must(204, "DELETE", "/threads/"+tid+"/runs/"+rid, nil)
	s.must(404, "GET", "/threads/"+tid+"/runs/"+rid, nil)
	s.must(404, "DELETE", "/threads/"+tid+"/runs/"+rid, nil)
}

func TestRunRequestErrors(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	missing := "00000000-0000-4000-8000-000000000000"
	tests := []struct {
		name, path string
		body       any
		status     int
		text       string
	}{
		{"no assistant", "/runs/wait", map[string]any{"input": map[string]any{}}, 400, `"assistant_id"`},
		{"unknown assistant", "/runs/wait", map[string]any{"assistant_id": "no-such-graph", "input": map[string]any{}}, 404, `No assistant found for "no-such-graph"`},
		{"bad strategy", "/runs/wait", map[string]any{"assistant_id": "echo", "multitask_strategy": "bogus"}, 400, `"multitask_strategy"`},
		{"bad stream mode", "/threads/" + tid + "/runs/stream", map[string]any{"assistant_id": "echo", "stream_mode": "everything"}, 400, `"stream_mode"`},
		{"bad on_disconnect", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "echo", "on_disconnect": "sulk"}, 400, `"on_disconnect"`},
		{"bad interrupt_before", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "echo", "interrupt_before": 3}, 400, `"interrupt_before"`},
		{"bad durability", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "echo", "durability": "forever"}, 400, `"durability"`},
		{"metadata type", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "echo", "metadata": []int{1}}, 400, `"metadata"`},
		{"recursion limit type", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "echo", "config": map[string]any{"recursion_limit": "x"}}, 400, `"recursion_limit"`},
		{"malformed", "/threads/" + tid + "/runs", "{", 400, "Malformed JSON"},
		{"missing thread", "/threads/" + missing + "/runs", map[string]any{"assistant_id": "echo"}, 404, "Thread with ID " + missing + " not found"},
		{"non-uuid thread", "/threads/x/runs", map[string]any{"assistant_id": "echo"}, 400, `"thread_id"`},
	}
	for _, tt := range tests {
		r := s.do("POST", tt.path, tt.body)
		if r.status != tt.status || !strings.Contains(string(r.body), tt.text) {
			t.Errorf("%s: %d %s; want %d with %s", tt.name, r.status, r.body, tt.status, tt.text)
		}
	}
	// if_not_exists create makes the thread.
	nid := "9a25a375-e12e-43a2-917a-38d495a0db7e"
	s.must(200, "POST", "/threads/"+nid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("x"), "if_not_exists": "create"})
	if th := s.must(200, "GET", "/threads/"+nid, nil).obj(t); th["status"] != "idle" {
		t.Errorf("created thread = %v", th)
	}
}

// GRAPHS.md's approval flow: the run stops at the interrupt (run success,
// thread interrupted, its interrupts by task), and a command resumes it.
func TestInterruptAndResume(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "deploy"}, "stream_mode": []string{"values", "updates"}})
	if diff := cmp.Diff([]string{"metadata", "values", "updates", "values"}, names(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	its := evs[2].obj(t)["__interrupt__"].([]any)
	it := its[0].(map[string]any)
	iid := it["id"].(string)
	if len(iid) != 32 {
		t.Errorf("interrupt id %q is not 32 hex digits", iid)
	}
	if diff := cmp.Diff(map[string]any{"question": "Approve deploy?"}, it["value"]); diff != "" {
		t.Errorf("interrupt value (-want +got):\n%s", diff)
	}
	if last := evs[3].obj(t); last["__interrupt__"] == nil || last["request"] != "deploy" {
		t.Errorf("last values = %s", evs[3].Data)
	}
	runID := evs[0].obj(t)["run_id"].(string)
	if run := s.must(200, "GET", "/threads/"+tid+"/runs/"+runID, nil).obj(t); run["status"] != "success" {
		t.Errorf("run stopped at an interrupt: %v", run["status"])
	}
	th := s.must(200, "GET", "/threads/"+tid, nil).obj(t)
	if th["status"] != "interrupted" {
		t.Errorf("thread status = %v", th["status"])
	}
	if diff := cmp.Diff(map[string]any{"request": "deploy"}, th["values"]); diff != "" {
		t.Errorf("thread values (-want +got):\n%s", diff)
	}
	st := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	task := st["tasks"].([]any)[0].(map[string]any)
	byTask := th["interrupts"].(map[string]any)
	if diff := cmp.Diff([]any{it}, byTask[task["id"].(string)]); diff != "" {
		t.Errorf("thread interrupts by task (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"ask"}, st["next"]); diff != "" {
		t.Errorf("next (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{it}, task["interrupts"]); diff != "" {
		t.Errorf("task interrupts (-want +got):\n%s", diff)
	}

	_, evs = s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": "yes"}, "stream_mode": []string{"values", "updates"}})
	if diff := cmp.Diff([]string{"metadata", "values", "updates", "values", "updates", "values"}, names(evs)); diff != "" {
		t.Fatalf("resumed events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"request": "deploy", "answer": "yes", "decided": true}, evs[5].obj(t)); diff != "" {
		t.Errorf("final values (-want +got):\n%s", diff)
	}
	th = s.must(200, "GET", "/threads/"+tid, nil).obj(t)
	if th["status"] != "idle" || len(th["interrupts"].(map[string]any)) != 0 {
		t.Errorf("thread after resume = %v", th)
	}

	// The wait endpoint: the interrupt, then a resume by interrupt id.
	t2 := s.newThread()
	w := s.must(200, "POST", "/threads/"+t2+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "x"}}).obj(t)
	its = w["__interrupt__"].([]any)
	id2 := its[0].(map[string]any)["id"].(string)
	w = s.must(200, "POST", "/threads/"+t2+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{id2: map[string]any{"ok": false}}}}).obj(t)
	if diff := cmp.Diff(map[string]any{"request": "x", "answer": map[string]any{"ok": false}, "decided": true}, w); diff != "" {
		t.Errorf("resumed by id (-want +got):\n%s", diff)
	}
	// A map that is not of interrupt ids is a resume value.
	t3 := s.newThread()
	s.must(200, "POST", "/threads/"+t3+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "y"}})
	w = s.must(200, "POST", "/threads/"+t3+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{"ok": true}, "update": map[string]any{"request": "z"}}}).obj(t)
	if diff := cmp.Diff(map[string]any{"request": "z", "answer": map[string]any{"ok": true}, "decided": true}, w); diff != "" {
		t.Errorf("resumed with an update (-want +got):\n%s", diff)
	}
}

func TestCommandGotoAndBreakpoints(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	w := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "r"}, "interrupt_before": []string{"ask"}}).obj(t)
	if w["request"] != "r" || w["answer"] != nil {
		t.Errorf("stopped before ask: %v", w)
	}
	st := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	if diff := cmp.Diff([]any{"ask"}, st["next"]); diff != "" {
		t.Errorf("next at the breakpoint (-want +got):\n%s", diff)
	}
	// goto finish skips the question.
	w = s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"goto": "finish", "update": [][]any{{"answer", "skipped"}}}}).obj(t)
	if w["decided"] != true || w["answer"] != "skipped" {
		t.Errorf("after goto = %v", w)
	}
	t2 := s.newThread()
	w = s.must(200, "POST", "/threads/"+t2+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "a"}, "interrupt_after": "*"}).obj(t)
	if diff := cmp.Diff([]any{"a"}, w["log"]); diff != "" {
		t.Errorf("log after interrupt_after (-want +got):\n%s", diff)
	}
}

// Subgraph events are named mode|namespace with stream_subgraphs.
func TestStreamSubgraphs(t *testing.T) {
	graphs := apitestGraphs()
	graphs["outer"] = func(saver *checkpoint.Saver, st *store.Store) (*graph.Graph, error) {
		inner, err := apitest.Echo(nil, st)
		if err != nil {
			return nil, err
		}
		return graph.New(apitest.Messages).AddSubgraph("inner", inner, nil).AddEdge(graph.START, "inner").
			Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	s := newServer(t, server.Options{Graphs: graphs})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "outer", "input": human("a b"), "stream_subgraphs": true, "stream_mode": []string{"values", "updates", "messages-tuple", "custom"},
	})
	var sub []string
	for _, e := range evs {
		if i := strings.Index(e.Event, "|"); i >= 0 {
			if !strings.HasPrefix(e.Event[i+1:], "inner:") {
				t.Errorf("namespace of %q", e.Event)
			}
			sub = append(sub, e.Event[:i])
		}
	}
	if diff := cmp.Diff([]string{"values", "custom", "messages", "messages", "custom", "updates", "values"}, sub); diff != "" {
		t.Errorf("subgraph events (-want +got):\n%s", diff)
	}
	if last := evs[len(evs)-1]; last.Event != "values" || len(last.obj(t)["messages"].([]any)) != 2 {
		t.Errorf("last event = %s %s", last.Event, last.Data)
	}
	// Without stream_subgraphs only the graph's own events.
	_, evs = s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "outer", "input": human("c"), "stream_mode": []string{"values", "updates"}})
	for _, e := range evs {
		if strings.Contains(e.Event, "|") {
			t.Errorf("subgraph event without stream_subgraphs: %s", e.Event)
		}
	}
}

func TestHooks(t *testing.T) {
	type call struct{ what, graph, status string }
	calls := make(chan call, 16)
	s := newServer(t, server.Options{Hooks: server.RunHooks{
		OnStart: func(ctx context.Context, r server.RunInfo) { calls <- call{"start", r.GraphID, ""} },
		OnEnd: func(ctx context.Context, r server.RunInfo, status string, err error) {
			calls <- call{"end", r.GraphID, status}
		},
	}})
	tid := s.newThread()
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("x")})
	t2 := s.newThread()
	s.must(200, "POST", "/threads/"+t2+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": "x"}})
	want := []call{{"start", "echo", ""}, {"end", "echo", "success"}, {"start", "slow", ""}, {"end", "slow", "error"}}
	for i, w := range want {
		if got := <-calls; got != w {
			t.Errorf("hook call %d = %v, want %v", i, got, w)
		}
	}
}

// countingBroker counts the events a run publishes.
type countingBroker struct {
	server.Broker
	mu sync.Mutex
	n  int
}

func (b *countingBroker) Publish(runID string, ev server.Event) error {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	return b.Broker.Publish(runID, ev)
}

func TestBrokerOption(t *testing.T) {
	b := &countingBroker{Broker: server.NewMemoryBroker()}
	s := newServer(t, server.Options{Broker: b})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("a b")})
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n != len(evs) || b.n == 0 {
		t.Errorf("the broker carried %d events, the stream had %d", b.n, len(evs))
	}
}

// A wait writes a newline every second while its run goes on, before the
// answer.
func TestWaitKeepAlive(t *testing.T) {
	s := newServer(t, server.Options{})
	r := s.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1200, "tag": "k"}})
	if !strings.HasPrefix(string(r.body), "\n") {
		t.Errorf("no keep-alive newline before the answer: %q", r.body)
	}
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil || v["tag"] != "k" {
		t.Errorf("answer after the newlines: %q (%v)", r.body, err)
	}
}
