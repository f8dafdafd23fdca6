package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
)

// toolsServer serves toolsGraph as the assistant "tooly".
func toolsServer(t *testing.T) *testServer {
	return newServer(t, server.Options{Graphs: map[string]server.GraphFunc{"tooly": toolsGraph}})
}

// toolsGraph is START → agent → tools → sub → END. The agent calls the
// tool the human message names ("search" or "broken"), once, as call_1;
// search reports progress. The subgraph sub runs check, which calls the
// tool "echo" with Tool.Run and then fails when the human message is
// "fail" and asks a human when it is "ask".
func toolsGraph(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
	msgs := graph.Messages[llm.Message]("messages")
	search := tool.New("search", "searches", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		tool.Progress(ctx, map[string]int{"done": 1, "of": 2})
		return "found " + in.Q, nil
	})
	broken := tool.New("broken", "fails", func(ctx context.Context, _ struct {
		Q string `json:"q"`
	}) (string, error) {
		return "", errors.New("out of order")
	})
	echo := tool.New("echo", "echoes", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	reg, err := tool.NewRegistry(search, broken, echo)
	if err != nil {
		return nil, err
	}
	lastHuman := func(s graph.State) string {
		ms := msgs.Get(s)
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Type == llm.TypeHuman {
				return ms[i].Text()
			}
		}
		return ""
	}
	agent := func(ctx context.Context, s graph.State) (graph.Update, error) {
		name := lastHuman(s)
		if name != "search" && name != "broken" {
			return graph.Update{}, nil
		}
		return msgs.Write(llm.AI("", llm.ToolCall{ID: "call_1", Name: name, Args: json.RawMessage(`{"q":"cafe"}`)})), nil
	}
	check := func(ctx context.Context, s graph.State) (graph.Update, error) {
		if _, err := echo.Run(ctx, json.RawMessage(`{"s":"hi"}`), 0); err != nil {
			return graph.Update{}, err
		}
		switch lastHuman(s) {
		case "fail":
			return graph.Update{}, errors.New("check failed")
		case "ask":
			if _, err := graph.Interrupt[string](ctx, "sure?"); err != nil {
				return graph.Update{}, err
			}
		}
		return graph.Update{}, nil
	}
	sub, err := graph.New(msgs).AddNode("check", check, nil).AddEdge(graph.START, "check").Compile(nil)
	if err != nil {
		return nil, err
	}
	return graph.New(msgs).
		AddNode("agent", agent, nil).
		AddNode("tools", tool.Node(reg, msgs, tool.NodeOptions{}), nil).
		AddSubgraph("sub", sub, nil).
		AddEdge(graph.START, "agent").AddEdge("agent", "tools").AddEdge("tools", "sub").AddEdge("sub", graph.END).
		Compile(&graph.CompileOptions{Checkpointer: saver})
}

// stripIDs renders events as "name data", an on_tool_end's tool message
// id (random) replaced with "ID".
func stripIDs(t *testing.T, evs []sseEvent) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Event == "metadata" {
			out = append(out, "metadata")
			continue
		}
		data := string(e.Data)
		var m struct {
			Output struct{ ID string } `json:"output"`
		}
		if json.Unmarshal(e.Data, &m) == nil && m.Output.ID != "" {
			data = strings.Replace(data, m.Output.ID, "ID", 1)
		}
		out = append(out, e.Event+" "+data)
	}
	return out
}

// stream_mode tools: each tool call's start, progress and end (the tool
// message) or error, as LangGraph's tools events; a subgraph's only with
// stream_subgraphs, named "tools|<namespace>".
func TestStreamModeTools(t *testing.T) {
	s := toolsServer(t)
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "tooly", "input": human("search"), "stream_mode": []string{"tools"}})
	want := []string{
		"metadata",
		`tools {"event":"on_tool_start","toolCallId":"call_1","name":"search","input":{"q":"cafe"}}`,
		`tools {"event":"on_tool_event","toolCallId":"call_1","name":"search","data":{"done":1,"of":2}}`,
		`tools {"event":"on_tool_end","toolCallId":"call_1","name":"search","output":{"type":"tool","id":"ID","name":"search","content":"found cafe","tool_call_id":"call_1","status":"success"}}`,
	}
	if diff := cmp.Diff(want, stripIDs(t, evs)); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
	// The end's output is the message the state holds, id and all.
	var end struct {
		Output struct{ ID string } `json:"output"`
	}
	_ = json.Unmarshal(evs[3].Data, &end)
	state := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	ids := []string{}
	for _, m := range state["values"].(map[string]any)["messages"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	if end.Output.ID == "" || !strings.Contains(strings.Join(ids, ","), end.Output.ID) {
		t.Errorf("on_tool_end's message id %q is not in the state's %v", end.Output.ID, ids)
	}

	// A failing tool, with the subgraph's tool call: stream_subgraphs
	// names its event after its namespace.
	_, evs = s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "tooly", "input": human("broken"), "stream_mode": []string{"tools"}, "stream_subgraphs": true})
	got := stripIDs(t, evs)
	want = []string{
		"metadata",
		`tools {"event":"on_tool_start","toolCallId":"call_1","name":"broken","input":{"q":"cafe"}}`,
		`tools {"event":"on_tool_error","toolCallId":"call_1","name":"broken","error":{"error":"tool_error","message":"out of order"}}`,
	}
	if len(got) != 5 {
		t.Fatalf("with subgraphs: %q", got)
	}
	if diff := cmp.Diff(want, got[:3]); diff != "" {
		t.Errorf("broken (-want +got):\n%s", diff)
	}
	ns := strings.TrimPrefix(evs[3].Event, "tools|")
	if !strings.HasPrefix(ns, "sub:") || strings.Contains(ns, "|") {
		t.Fatalf("subgraph tool event named %q", evs[3].Event)
	}
	if diff := cmp.Diff([]string{
		`tools|` + ns + ` {"event":"on_tool_start","name":"echo","input":{"s":"hi"}}`,
		`tools|` + ns + ` {"event":"on_tool_end","name":"echo","output":"hi"}`,
	}, got[3:]); diff != "" {
		t.Errorf("subgraph's tool (-want +got):\n%s", diff)
	}

	// With other modes: the tool's events come before the tools node's
	// update.
	_, evs = s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "tooly", "input": human("search"), "stream_mode": []string{"updates", "tools"}})
	var order []string
	for _, e := range evs {
		if e.Event == "updates" {
			for k := range e.obj(t) {
				order = append(order, "updates:"+k)
			}
		} else {
			order = append(order, e.Event)
		}
	}
	if diff := cmp.Diff([]string{"metadata", "updates:agent", "tools", "tools", "tools", "updates:tools", "updates:sub"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// stream_mode lifecycle: "lifecycle|<namespace>" events as each subgraph
// starts and ends (completed, failed with the error, interrupted), with
// or without stream_subgraphs; nothing for the root graph.
func TestStreamModeLifecycle(t *testing.T) {
	s := toolsServer(t)
	lifecycle := func(text string, subgraphs bool) ([]string, []sseEvent) {
		t.Helper()
		tid := s.newThread()
		_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "tooly", "input": human(text), "stream_mode": []string{"lifecycle"}, "stream_subgraphs": subgraphs})
		var out []string
		for _, e := range evs {
			name, ns, _ := strings.Cut(e.Event, "|")
			if name != "lifecycle" {
				out = append(out, e.Event)
				continue
			}
			if !strings.HasPrefix(ns, "sub:") || strings.Contains(ns, "|") {
				t.Errorf("lifecycle event named %q", e.Event)
			}
			data := strings.ReplaceAll(string(e.Data), ns, "NS")
			out = append(out, "lifecycle|NS "+data)
		}
		return out, evs
	}
	for _, subgraphs := range []bool{false, true} {
		got, _ := lifecycle("hello", subgraphs)
		want := []string{
			"metadata",
			`lifecycle|NS {"event":"started","namespace":["NS"]}`,
			`lifecycle|NS {"event":"completed","namespace":["NS"]}`,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("subgraphs %v (-want +got):\n%s", subgraphs, diff)
		}
	}
	got, evs := lifecycle("fail", false)
	want := []string{
		"metadata",
		`lifecycle|NS {"event":"started","namespace":["NS"]}`,
		"lifecycle|NS FAILED",
		"error",
	}
	if len(got) == 4 && strings.HasPrefix(got[2], `lifecycle|NS {"event":"failed","namespace":["NS"],"error":{"error":"Error","message":"`) &&
		strings.Contains(got[2], "check failed") {
		got[2] = "lifecycle|NS FAILED"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fail (-want +got):\n%s", diff)
	}
	if len(evs) == 4 {
		var run, sub struct{ Error, Message string }
		_ = json.Unmarshal(evs[3].Data, &run)
		var le struct {
			Error struct{ Error, Message string } `json:"error"`
		}
		_ = json.Unmarshal(evs[2].Data, &le)
		sub = le.Error
		if run.Error != sub.Error {
			t.Errorf("the subgraph's error %+v and the run's %+v are named differently", sub, run)
		}
	}
	got, _ = lifecycle("ask", false)
	want = []string{
		"metadata",
		`lifecycle|NS {"event":"started","namespace":["NS"]}`,
		`lifecycle|NS {"event":"interrupted","namespace":["NS"]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ask (-want +got):\n%s", diff)
	}
}

// tools and lifecycle are stream modes like the others: alone, in a list,
// with the rest; a mode that does not exist still is refused.
func TestStreamModesToolsLifecycleAccepted(t *testing.T) {
	s := newServer(t, server.Options{})
	for _, mode := range []any{"tools", "lifecycle", []string{"values", "tools", "lifecycle"}, json.RawMessage(`[ "lifecycle" ]`)} {
		_, evs := s.stream("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": human("x"), "stream_mode": mode})
		// echo calls no tool and has no subgraph.
		for _, e := range evs {
			if e.Event != "metadata" && e.Event != "values" {
				t.Errorf("stream_mode %v: event %s %s", mode, e.Event, e.Data)
			}
		}
	}
	r := s.do("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": human("x"), "stream_mode": []string{"tools", "tool"}})
	if r.status/100 != 4 || !strings.Contains(string(r.body), "'tools' | 'lifecycle', received 'tool'") {
		t.Errorf("unknown mode: %d %s", r.status, r.body)
	}
}
