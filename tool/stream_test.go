package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// streamTools runs the tool node once over msgs with the tools stream
// mode and returns the tools events' JSON, in order, and the messages it
// wrote.
func streamTools(t *testing.T, reg *tool.Registry, opts tool.NodeOptions, msgs ...llm.Message) (events []string, wrote []llm.Message) {
	t.Helper()
	g, err := graph.New(messages).AddNode("tools", tool.Node(reg, messages, opts), nil).
		AddEdge(graph.START, "tools").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range g.Stream(context.Background(), messages.Write(msgs...), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamTools, graph.StreamValues}}) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := ev.Values(); ok {
			wrote = messages.Get(s)[len(msgs):]
			continue
		}
		te, ok := ev.Tool()
		if !ok {
			t.Fatalf("unexpected event %+v", ev)
		}
		if len(ev.Namespace) != 0 {
			t.Errorf("root tool node's event has namespace %q", ev.Namespace)
		}
		b, err := json.Marshal(te)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, string(b))
	}
	return events, wrote
}

// A call that succeeds reports its start with its arguments, the progress
// its tool reports, and its end with the tool message; one that fails
// reports its error code and message. Progress after the call ended is
// dropped.
func TestNodeStreamsToolEvents(t *testing.T) {
	late := make(chan context.Context, 1)
	search := tool.New("search", "searches", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		tool.Progress(ctx, map[string]any{"done": 1, "of": 2})
		tool.Progress(ctx, "half way")
		late <- ctx
		return "found " + in.Q, nil
	})
	broken := tool.New("broken", "fails", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, &tool.Error{Code: "NOT_FOUND", Message: "nothing there"}
	})
	reg, err := tool.NewRegistry(search, broken)
	if err != nil {
		t.Fatal(err)
	}
	evs, wrote := streamTools(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("", call("c1", "search", `{"q":"cafe"}`)))
	if len(wrote) != 1 {
		t.Fatalf("wrote %v", wrote)
	}
	msg, err := json.Marshal(wrote[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"event":"on_tool_start","toolCallId":"c1","name":"search","input":{"q":"cafe"}}`,
		`{"event":"on_tool_event","toolCallId":"c1","name":"search","data":{"done":1,"of":2}}`,
		`{"event":"on_tool_event","toolCallId":"c1","name":"search","data":"half way"}`,
		`{"event":"on_tool_end","toolCallId":"c1","name":"search","output":` + string(msg) + `}`,
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("success (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(msg), `"content":"found cafe"`) || !strings.Contains(string(msg), `"type":"tool"`) {
		t.Errorf("the end's output is not the tool message: %s", msg)
	}
	// The call is over: progress reported now goes nowhere (and does not
	// panic on the finished run).
	tool.Progress(<-late, "too late")

	evs, _ = streamTools(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("", call("c2", "broken", `{}`), call("c3", "nope", `{"a":1}`)))
	// The two calls run in parallel: each call's events are in order, the
	// calls' interleaving is not fixed.
	byCall := map[string][]string{}
	for _, e := range evs {
		var id struct{ ToolCallID string }
		_ = json.Unmarshal([]byte(e), &id)
		byCall[id.ToolCallID] = append(byCall[id.ToolCallID], e)
	}
	wantByCall := map[string][]string{
		"c2": {
			`{"event":"on_tool_start","toolCallId":"c2","name":"broken","input":{}}`,
			`{"event":"on_tool_error","toolCallId":"c2","name":"broken","error":{"error":"NOT_FOUND","message":"nothing there"}}`,
		},
		"c3": {
			`{"event":"on_tool_start","toolCallId":"c3","name":"nope","input":{"a":1}}`,
			`{"event":"on_tool_error","toolCallId":"c3","name":"nope","error":{"error":"unknown_tool","message":"there is no tool named \"nope\"; the tools are [search broken]"}}`,
		},
	}
	if diff := cmp.Diff(wantByCall, byCall); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

// Tool.Run inside a node reports its call too, without a call id and with
// the envelope's data as its output; outside a node, or without the
// tools mode, Progress and Run send nothing and work as before.
func TestRunStreamsToolEvents(t *testing.T) {
	double := tool.New("double", "doubles", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (int, error) {
		tool.Progress(ctx, in.N)
		if in.N < 0 {
			return 0, errors.New("negative")
		}
		return 2 * in.N, nil
	})
	x := graph.Value[int]("x")
	node := func(ctx context.Context, s graph.State) (graph.Update, error) {
		r, err := double.Run(ctx, json.RawMessage(`{"n":21}`), 0)
		if err != nil {
			return graph.Update{}, err
		}
		_, _ = double.Run(ctx, json.RawMessage(`{"n":-1}`), 0)
		return x.Write(r.Data.(int)), nil
	}
	g, err := graph.New(x).AddNode("n", node, nil).AddEdge(graph.START, "n").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for ev, err := range g.Stream(context.Background(), x.Write(0), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamTools}}) {
		if err != nil {
			t.Fatal(err)
		}
		te, _ := ev.Tool()
		b, _ := json.Marshal(te)
		evs = append(evs, string(b))
	}
	want := []string{
		`{"event":"on_tool_start","name":"double","input":{"n":21}}`,
		`{"event":"on_tool_event","name":"double","data":21}`,
		`{"event":"on_tool_end","name":"double","output":42}`,
		`{"event":"on_tool_start","name":"double","input":{"n":-1}}`,
		`{"event":"on_tool_event","name":"double","data":-1}`,
		`{"event":"on_tool_error","name":"double","error":{"error":"tool_error","message":"negative"}}`,
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Outside a graph: the same calls, nothing to report to.
	r, err := double.Run(context.Background(), json.RawMessage(`{"n":2}`), 0)
	if err != nil || r.Data != 4 {
		t.Errorf("Run outside a node: %+v, %v", r, err)
	}
	st, err := g.Invoke(context.Background(), x.Write(0), nil)
	if err != nil || x.Get(st) != 42 {
		t.Errorf("Invoke: %v, %v", st, err)
	}
}

// Progress is taken as JSON when it is reported: a value the tool changes
// afterwards streams as it was, and one that does not encode as null,
// without failing the run.
func TestProgressSnapshot(t *testing.T) {
	tl := tool.New("p", "reports", func(ctx context.Context, _ struct{}) (string, error) {
		m := map[string]int{"n": 1}
		tool.Progress(ctx, m)
		m["n"] = 2
		tool.Progress(ctx, make(chan int))
		return "ok", nil
	})
	reg, err := tool.NewRegistry(tl)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := streamTools(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("", call("c1", "p", `{}`)))
	if len(evs) != 4 {
		t.Fatalf("events %q", evs)
	}
	want := []string{
		`{"event":"on_tool_event","toolCallId":"c1","name":"p","data":{"n":1}}`,
		`{"event":"on_tool_event","toolCallId":"c1","name":"p","data":null}`,
	}
	if diff := cmp.Diff(want, evs[1:3]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Each call's events share a run id of their own (graph.ToolEvent.RunID),
// whether the tool node or Tool.Run makes it: the server's events mode
// tells calls apart by it.
func TestToolEventsRunID(t *testing.T) {
	echo := tool.New("echo", "echoes", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		tool.Progress(ctx, in.S)
		return in.S, nil
	})
	reg, err := tool.NewRegistry(echo)
	if err != nil {
		t.Fatal(err)
	}
	node := tool.Node(reg, messages, tool.NodeOptions{})
	both := func(ctx context.Context, s graph.State) (graph.Update, error) {
		if _, err := echo.Run(ctx, json.RawMessage(`{"s":"run"}`), 0); err != nil {
			return graph.Update{}, err
		}
		return node(ctx, s)
	}
	g, err := graph.New(messages).AddNode("both", both, nil).AddEdge(graph.START, "both").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := messages.Write(llm.Human("go"), llm.AI("", call("c1", "echo", `{"s":"a"}`), call("c2", "echo", `{"s":"b"}`)))
	runs := map[string]map[string]bool{} // call → its events' run ids
	for ev, err := range g.Stream(context.Background(), in, &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamTools}}) {
		if err != nil {
			t.Fatal(err)
		}
		te, _ := ev.Tool()
		key := te.ToolCallID
		if key == "" {
			key = "Run"
		}
		if runs[key] == nil {
			runs[key] = map[string]bool{}
		}
		runs[key][te.RunID] = true
	}
	seen := map[string]string{}
	for call, ids := range runs {
		if len(ids) != 1 || ids[""] {
			t.Errorf("call %s: run ids %v, want one", call, ids)
		}
		for id := range ids {
			if other, ok := seen[id]; ok {
				t.Errorf("calls %s and %s share run id %s", call, other, id)
			}
			seen[id] = call
		}
	}
	if len(runs) != 3 {
		t.Errorf("calls %v, want c1, c2 and Run", runs)
	}
}
