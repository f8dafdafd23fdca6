package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/server"
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
