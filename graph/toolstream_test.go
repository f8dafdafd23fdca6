package graph_test

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
)

func mustCompile(t *testing.T, b *graph.Builder, opts *graph.CompileOptions) *graph.Graph {
	t.Helper()
	g, err := b.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// collect streams g and returns its events and the stream's error.
func collect(t *testing.T, g *graph.Graph, in graph.Update, opts *graph.RunOptions) ([]graph.Event, error) {
	t.Helper()
	var evs []graph.Event
	for ev, err := range g.Stream(context.Background(), in, opts) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// A node's StreamTool reaches the tools stream, with its graph's
// namespace, only when the run streams tools events; a subgraph's only
// with Subgraphs, as its other events.
func TestStreamTool(t *testing.T) {
	x := graph.Value[int]("x")
	call := func(ctx context.Context, s graph.State) (graph.Update, error) {
		if !graph.StreamsTools(ctx) {
			return x.Write(-1), nil
		}
		graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolStarted, ToolCallID: "c1", Name: "add", Input: map[string]int{"n": 1}})
		graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolEnded, ToolCallID: "c1", Name: "add", Output: 2})
		return x.Write(x.Get(s) + 1), nil
	}
	leaf := mustCompile(t, graph.New(x).AddNode("call", call, nil).AddEdge(graph.START, "call"), nil)
	root := mustCompile(t, graph.New(x).AddNode("call", call, nil).AddSubgraph("sub", leaf, nil).
		AddEdge(graph.START, "call").AddEdge("call", "sub"), nil)

	tools := func(evs []graph.Event) (out []string) {
		for _, ev := range evs {
			te, ok := ev.Tool()
			if !ok {
				t.Errorf("event %+v in a tools-only stream", ev)
				continue
			}
			b, err := json.Marshal(te)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join(ev.Namespace, "|")+" "+string(b))
		}
		return out
	}
	evs, err := collect(t, root, x.Write(0), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamTools}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		` {"event":"on_tool_start","toolCallId":"c1","name":"add","input":{"n":1}}`,
		` {"event":"on_tool_end","toolCallId":"c1","name":"add","output":2}`,
	}
	if diff := cmp.Diff(want, tools(evs)); diff != "" {
		t.Errorf("root only (-want +got):\n%s", diff)
	}

	evs, err = collect(t, root, x.Write(0), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamTools}, Subgraphs: true})
	if err != nil {
		t.Fatal(err)
	}
	got := tools(evs)
	if len(got) != 4 || !strings.HasPrefix(got[2], "sub:") || !strings.HasPrefix(got[3], "sub:") {
		t.Fatalf("with subgraphs: %q", got)
	}
	// Each event names the task that sent it, as its messages would.
	for _, ev := range evs {
		te, _ := ev.Tool()
		task := te.Task
		ns := "call:" + task.TaskID
		if len(ev.Namespace) > 0 {
			ns = ev.Namespace[0] + "|" + ns
		}
		if task.Node != "call" || task.TaskID == "" || task.Step != 1 || task.Namespace != ns || task.Message != nil {
			t.Errorf("event %v (ns %q) names its task %+v", te.Kind, ev.Namespace, task)
		}
	}
	if diff := cmp.Diff(want, []string{got[0], got[1]}); diff != "" {
		t.Errorf("with subgraphs, the root's (-want +got):\n%s", diff)
	}

	// Without the mode a node sees that nothing would be sent.
	st, err := root.Invoke(context.Background(), x.Write(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := x.Get(st); v != -1 {
		t.Errorf("without the tools mode x = %d, want -1 (StreamsTools false in both nodes)", v)
	}
}

// Each kind of tools event has its LangGraph JSON: the key of its payload
// follows the kind, toolCallId is left out when there is none.
func TestToolEventJSON(t *testing.T) {
	for _, c := range []struct {
		ev   graph.ToolEvent
		want string
	}{
		{graph.ToolEvent{Kind: graph.ToolStarted, ToolCallID: "a", Name: "n", Input: json.RawMessage(`{"q":"x"}`)}, `{"event":"on_tool_start","toolCallId":"a","name":"n","input":{"q":"x"}}`},
		{graph.ToolEvent{Kind: graph.ToolProgress, Name: "n", Data: "half"}, `{"event":"on_tool_event","name":"n","data":"half"}`},
		{graph.ToolEvent{Kind: graph.ToolEnded, ToolCallID: "a", Name: "n"}, `{"event":"on_tool_end","toolCallId":"a","name":"n","output":null}`},
		{graph.ToolEvent{Kind: graph.ToolFailed, ToolCallID: "a", Name: "n", Error: &graph.ErrorInfo{Error: "timeout", Message: "too slow"}}, `{"event":"on_tool_error","toolCallId":"a","name":"n","error":{"error":"timeout","message":"too slow"}}`},
	} {
		b, err := json.Marshal(c.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.ev.Kind, b, c.want)
		}
	}
}

// lifecycles renders a stream's lifecycle events as "kind namespace
// [tool call] [error]", each namespace segment's task id cut off, and
// fails the test on any other event.
func lifecycles(t *testing.T, evs []graph.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		le, ok := ev.Lifecycle()
		if !ok {
			t.Errorf("event %+v in a lifecycle-only stream", ev)
			continue
		}
		if !cmp.Equal(le.Namespace, ev.Namespace) {
			t.Errorf("event namespace %q, lifecycle namespace %q", ev.Namespace, le.Namespace)
		}
		var ns []string
		for _, seg := range ev.Namespace {
			name, id, _ := strings.Cut(seg, ":")
			if id == "" {
				t.Errorf("namespace segment %q has no task id", seg)
			}
			ns = append(ns, name)
		}
		s := string(le.Kind) + " " + strings.Join(ns, "|")
		if le.ToolCallID != "" {
			s += " call=" + le.ToolCallID
		}
		if le.Err != nil {
			s += " err"
		}
		out = append(out, s)
	}
	return out
}

// Subgraphs at every depth report their start and end, in order, with or
// without Subgraphs; a failing one reports "failed" with its error, up
// through its parents.
func TestLifecycleCompletedAndFailed(t *testing.T) {
	x := graph.Value[int]("x")
	step := func(ctx context.Context, s graph.State) (graph.Update, error) {
		if x.Get(s) < 0 {
			return graph.Update{}, errors.New("negative")
		}
		return x.Write(x.Get(s) + 1), nil
	}
	leaf := mustCompile(t, graph.New(x).AddNode("inc", step, nil).AddEdge(graph.START, "inc"), nil)
	mid := mustCompile(t, graph.New(x).AddSubgraph("leaf", leaf, nil).AddEdge(graph.START, "leaf"), nil)
	root := mustCompile(t, graph.New(x).AddNode("inc", step, nil).AddSubgraph("mid", mid, nil).
		AddEdge(graph.START, "inc").AddEdge("inc", "mid"), nil)

	for _, subgraphs := range []bool{false, true} {
		evs, err := collect(t, root, x.Write(0), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamLifecycle}, Subgraphs: subgraphs})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"started mid", "started mid|leaf", "completed mid|leaf", "completed mid"}
		if diff := cmp.Diff(want, lifecycles(t, evs)); diff != "" {
			t.Errorf("subgraphs %v (-want +got):\n%s", subgraphs, diff)
		}
	}

	// A leaf that fails fails its parents.
	root2 := mustCompile(t, graph.New(x).AddSubgraph("mid", mid, nil).AddEdge(graph.START, "mid"), nil)
	evs, err := collect(t, root2, x.Write(-1), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamLifecycle, graph.StreamValues}})
	if err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("run error %v, want the leaf's", err)
	}
	var lcs []graph.Event
	for _, ev := range evs {
		if ev.Mode == graph.StreamLifecycle {
			lcs = append(lcs, ev)
		}
	}
	want := []string{"started mid", "started mid|leaf", "failed mid|leaf err", "failed mid err"}
	if diff := cmp.Diff(want, lifecycles(t, lcs)); diff != "" {
		t.Errorf("failing leaf (-want +got):\n%s", diff)
	}
	le, _ := lcs[2].Lifecycle()
	b, err := json.Marshal(le)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Event     string   `json:"event"`
		Namespace []string `json:"namespace"`
		Error     struct{ Error, Message string }
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Event != "failed" || len(got.Namespace) != 2 || got.Error.Error != "Error" || !strings.Contains(got.Error.Message, "negative") {
		t.Errorf("failed event JSON %s", b)
	}
}

// A subgraph that asks a human reports "interrupted", and "started" and
// "completed" when the run is resumed; one sent a tool call names it.
func TestLifecycleInterruptedAndToolCall(t *testing.T) {
	x := graph.Value[int]("x")
	call := graph.Value[llm.ToolCall]("call")
	ask := func(ctx context.Context, s graph.State) (graph.Update, error) {
		v, err := graph.Interrupt[int](ctx, "how much?")
		if err != nil {
			return graph.Update{}, err
		}
		return x.Write(v), nil
	}
	sub := mustCompile(t, graph.New(x, call).AddNode("ask", ask, nil).AddEdge(graph.START, "ask"), nil)
	route := func(ctx context.Context, s graph.State) (graph.Route, error) {
		return graph.Sends(graph.Send{Node: "sub", Arg: call.Write(llm.ToolCall{ID: "call_7", Name: "delegate"})}), nil
	}
	root := mustCompile(t, graph.New(x, call).AddNode("plan", func(ctx context.Context, s graph.State) (graph.Update, error) { return graph.Update{}, nil }, nil).
		AddSubgraph("sub", sub, nil).AddEdge(graph.START, "plan").AddConditionalEdges("plan", route, nil),
		&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	opts := &graph.RunOptions{ThreadID: "t1", StreamModes: []graph.StreamMode{graph.StreamLifecycle}}
	evs, err := collect(t, root, x.Write(0), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"started sub call=call_7", "interrupted sub call=call_7"}
	if diff := cmp.Diff(want, lifecycles(t, evs)); diff != "" {
		t.Errorf("first run (-want +got):\n%s", diff)
	}
	le, _ := evs[1].Lifecycle()
	b, _ := json.Marshal(le)
	if !strings.HasPrefix(string(b), `{"event":"interrupted","namespace":["sub:`) || !strings.HasSuffix(string(b), `"],"tool_call_id":"call_7"}`) {
		t.Errorf("interrupted JSON %s", b)
	}

	evs, err = collect(t, root, graph.Resume(5), opts)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"started sub call=call_7", "completed sub call=call_7"}
	if diff := cmp.Diff(want, lifecycles(t, evs)); diff != "" {
		t.Errorf("resumed (-want +got):\n%s", diff)
	}
}

// A subgraph sent a pointer to a tool call names it; a nil pointer names
// none (and does not fail the node).
func TestLifecycleToolCallPointer(t *testing.T) {
	ptr := graph.Value[*llm.ToolCall]("ptr")
	noop := func(ctx context.Context, s graph.State) (graph.Update, error) { return graph.Update{}, nil }
	sub := mustCompile(t, graph.New(ptr).AddNode("noop", noop, nil).AddEdge(graph.START, "noop"), nil)
	for _, c := range []struct {
		call *llm.ToolCall
		want string
	}{{&llm.ToolCall{ID: "call_p"}, "started sub call=call_p"}, {nil, "started sub"}} {
		route := func(ctx context.Context, s graph.State) (graph.Route, error) {
			return graph.Sends(graph.Send{Node: "sub", Arg: ptr.Write(c.call)}), nil
		}
		root := mustCompile(t, graph.New(ptr).AddNode("plan", noop, nil).AddSubgraph("sub", sub, nil).
			AddEdge(graph.START, "plan").AddConditionalEdges("plan", route, nil), nil)
		evs, err := collect(t, root, ptr.Write(nil), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamLifecycle}})
		if err != nil {
			t.Fatal(err)
		}
		if got := lifecycles(t, evs); len(got) != 2 || got[0] != c.want {
			t.Errorf("sent %v: %q, want %q first", c.call, got, c.want)
		}
	}
}
