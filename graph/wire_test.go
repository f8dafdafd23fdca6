package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

var (
	wMessages = graph.Messages[llm.Message]("messages")
	wDelay    = graph.Value[float64]("delay_ms")
	wTag      = graph.Value[string]("tag")
	wLog      = graph.Reduce("log", func(cur, upd []string) []string { return append(cur, upd...) })
	wSeen     = graph.Topic[int]("seen", nil)
	wAny      = graph.Value[any]("answer")
	wStep     = graph.Ephemeral[bool]("flag")
)

func wGraph(t *testing.T) *graph.Graph {
	t.Helper()
	noop := func(ctx context.Context, s graph.State) (graph.Update, error) { return graph.Update{}, nil }
	g, err := graph.New(wMessages, wDelay, wTag, wLog, wSeen, wAny, wStep).
		AddNode("a", noop, nil).AddEdge(graph.START, "a").AddEdge("a", graph.END).
		Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// writesJSON renders an update's writes as JSON, so that messages decoded
// from different forms compare by content.
func writesJSON(t *testing.T, u graph.Update) string {
	t.Helper()
	b, err := json.Marshal(u.Writes())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeInput(t *testing.T) {
	g := wGraph(t)
	tests := []struct {
		name, in string
		want     []graph.Write
	}{
		{"values of every kind", `{"delay_ms": 400, "tag": "a", "log": ["x"], "seen": [1, 2], "answer": {"ok": true}, "flag": true}`,
			[]graph.Write{{Channel: "delay_ms", Value: 400.0}, {Channel: "tag", Value: "a"}, {Channel: "log", Value: []string{"x"}},
				{Channel: "seen", Value: 1}, {Channel: "seen", Value: 2}, {Channel: "answer", Value: map[string]any{"ok": true}}, {Channel: "flag", Value: true}}},
		{"one topic value", `{"seen": 3}`, []graph.Write{{Channel: "seen", Value: 3}}},
		{"empty object writes nothing", `{}`, []graph.Write{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := g.DecodeInput([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if u.IsZero() {
				t.Fatal("decoded input is the zero Update, which would continue instead of starting a run")
			}
			if diff := cmp.Diff(tt.want, u.Writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
	for _, in := range []string{"", "null", "  null "} {
		u, err := g.DecodeInput([]byte(in))
		if err != nil || !u.IsZero() {
			t.Errorf("DecodeInput(%q) = %v, %v; want the zero Update (continue)", in, u.Writes(), err)
		}
	}
}

func TestDecodeInputMessages(t *testing.T) {
	g := wGraph(t)
	want := `[{"channel":"messages","value":[{"type":"human","id":"m1","content":"hi"}]}]`
	for _, in := range []string{
		`{"messages": [{"role": "user", "content": "hi", "id": "m1"}]}`,
		`{"messages": [{"type": "human", "content": "hi", "id": "m1"}]}`,
		`{"messages": {"type": "human", "content": "hi", "id": "m1"}}`,
	} {
		u, err := g.DecodeInput([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := writesJSON(t, u); got != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
	u, err := g.DecodeInput([]byte(`{"messages": "hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := u.Writes()[0].Value.([]llm.Message)
	if len(msgs) != 1 || msgs[0].Type != llm.TypeHuman || msgs[0].Content != "hello" || msgs[0].ID == "" {
		t.Errorf("a string is one human message with an id, got %+v", msgs)
	}
}

func TestDecodeInputErrorsNameTheKey(t *testing.T) {
	g := wGraph(t)
	tests := []struct{ in, key string }{
		{`{"nope": 1}`, "nope"},
		{`{"delay_ms": "soon"}`, "delay_ms"},
		{`{"log": "x"}`, "log"},
		{`{"messages": [{"role": "user"}, 5]}`, "messages"},
		{`{"messages": 5}`, "messages"},
		{`[1]`, ""},
		{`"x"`, ""},
		{`{"tag": "a"`, ""},
	}
	for _, tt := range tests {
		_, err := g.DecodeInput([]byte(tt.in))
		var ie *graph.InputError
		if !errors.As(err, &ie) || !errors.Is(err, graph.ErrInvalidInput) {
			t.Errorf("DecodeInput(%s) = %v; want an *InputError", tt.in, err)
			continue
		}
		if ie.Key != tt.key {
			t.Errorf("DecodeInput(%s) names key %q, want %q (%v)", tt.in, ie.Key, tt.key, err)
		}
	}
}

func TestDecodeInputOnlyInputKeys(t *testing.T) {
	noop := func(ctx context.Context, s graph.State) (graph.Update, error) { return graph.Update{}, nil }
	g, err := graph.New(wTag, wLog).Input(wTag).AddNode("a", noop, nil).AddEdge(graph.START, "a").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.DecodeInput([]byte(`{"log": ["x"]}`)); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("a key outside Builder.Input was accepted as input: %v", err)
	}
	u, err := g.DecodeUpdate([]byte(`{"log": ["x"]}`))
	if err != nil || len(u.Writes()) != 1 {
		t.Errorf("DecodeUpdate of a state key: %v, %v", u.Writes(), err)
	}
	if u, err := g.DecodeUpdate([]byte(`null`)); err != nil || u.IsZero() {
		t.Errorf("DecodeUpdate(null) = %v, %v; want an update that writes nothing but is not zero", u, err)
	}
}

func TestDecodedInputRuns(t *testing.T) {
	ctx := context.Background()
	echo := func(ctx context.Context, s graph.State) (graph.Update, error) {
		in := wMessages.Get(s)
		return wMessages.Write(llm.AI(in[len(in)-1].Content)), nil
	}
	g, err := graph.New(wMessages).AddNode("echo", echo, nil).AddEdge(graph.START, "echo").
		Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	u, err := g.DecodeInput([]byte(`{"messages": [{"role": "user", "content": "ping"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(ctx, u, &graph.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := wMessages.Get(out)
	if len(msgs) != 2 || msgs[0].Type != llm.TypeHuman || msgs[1].Content != "ping" {
		t.Errorf("final messages = %+v", msgs)
	}
}

func TestSchemas(t *testing.T) {
	g := wGraph(t)
	s, err := g.Schemas()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s.State)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	want := map[string]any{
		"messages": map[string]any{"langgraph_type": "messages", "description": "A list of chat messages"},
		"delay_ms": map[string]any{"type": "number"},
		"tag":      map[string]any{"type": "string"},
		"log":      map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "string"}},
		"seen":     map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "integer"}},
		"answer":   map[string]any{"description": "Any JSON value"},
		"flag":     map[string]any{"type": "boolean"},
	}
	if diff := cmp.Diff(want, props); diff != "" {
		t.Errorf("state schema properties (-want +got):\n%s", diff)
	}
	if got["type"] != "object" {
		t.Errorf("schema type = %v, want object", got["type"])
	}
}

func TestDrawable(t *testing.T) {
	noop := func(ctx context.Context, s graph.State) (graph.Update, error) { return graph.Update{}, nil }
	inner, err := graph.New(wTag).AddNode("x", noop, nil).AddNode("y", noop, nil).
		AddEdge(graph.START, "x").AddEdge("x", "y").AddEdge("y", graph.END).Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	route := func(ctx context.Context, s graph.State) (graph.Route, error) { return graph.To("sub"), nil }
	g, err := graph.New(wTag).AddNode("a", noop, nil).AddSubgraph("sub", inner, nil).
		AddEdge(graph.START, "a").AddConditionalEdges("a", route, &graph.BranchOptions{PathMap: map[string]string{"go": "sub", "stop": graph.END}}).
		AddEdge("sub", graph.END).Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	type edge struct {
		S, T, D string
		C       bool
	}
	shape := func(d graph.Drawable) ([]string, []edge) {
		var ns []string
		for _, n := range d.Nodes {
			ns = append(ns, n.Type+" "+n.ID)
		}
		var es []edge
		for _, e := range d.Edges {
			es = append(es, edge{e.Source, e.Target, e.Data, e.Conditional})
		}
		return ns, es
	}
	ns, es := shape(g.Drawable(nil))
	if diff := cmp.Diff([]string{"schema __start__", "runnable a", "runnable sub", "schema __end__"}, ns); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	wantEdges := []edge{{"__start__", "a", "", false}, {"sub", "__end__", "", false}, {"a", "sub", "go", true}, {"a", "__end__", "stop", true}}
	if diff := cmp.Diff(wantEdges, es); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	ns, es = shape(g.Drawable(&graph.DrawableOptions{XRay: -1}))
	if diff := cmp.Diff([]string{"schema __start__", "runnable a", "runnable sub:x", "runnable sub:y", "schema __end__"}, ns); diff != "" {
		t.Errorf("xray nodes (-want +got):\n%s", diff)
	}
	for _, want := range []edge{{"a", "sub:x", "go", true}, {"sub:x", "sub:y", "", false}, {"sub:y", "__end__", "", false}} {
		found := false
		for _, e := range es {
			found = found || e == want
		}
		if !found {
			t.Errorf("xray edges %v lack %v", es, want)
		}
	}
	b, _ := json.Marshal(g.Drawable(nil).Nodes[1])
	if string(b) != `{"id":"a","type":"runnable","data":{"id":["langgraph","RunnableCallable"],"name":"a"},"metadata":{}}` {
		t.Errorf("node JSON = %s", b)
	}
}

func TestInterruptIDsAreLangGraphShaped(t *testing.T) {
	ask := func(ctx context.Context, s graph.State) (graph.Update, error) {
		v := graph.Ask[string](ctx, "ok?")
		return wTag.Write(v), nil
	}
	g, err := graph.New(wTag).AddNode("ask", ask, nil).AddEdge(graph.START, "ask").
		Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := g.Invoke(ctx, graph.Input(), &graph.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	its := out.Interrupts()
	if len(its) != 1 || !graph.IsInterruptID(its[0].ID) {
		t.Fatalf("interrupts = %+v; want one with a 32-hex id", its)
	}
	out, err = g.Invoke(ctx, graph.ResumeByID(map[string]any{its[0].ID: "yes"}), &graph.RunOptions{ThreadID: "t"})
	if err != nil || wTag.Get(out) != "yes" {
		t.Fatalf("resume by id: %v, %v", wTag.Get(out), err)
	}
	for _, s := range []string{"", "486C030CB20F16A45EEDA0E457E73937", "486c030cb20f16a45eeda0e457e7393", "486c030c-b20f-16a4-5eed-a0e457e73937"} {
		if graph.IsInterruptID(s) {
			t.Errorf("IsInterruptID(%q) = true", s)
		}
	}
}

// A command's update and goto apply between steps: on a new thread, goto
// skips what START leads to.
func TestAsCommand(t *testing.T) {
	ctx := context.Background()
	ran := []string{}
	node := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			ran = append(ran, name)
			return graph.Update{}, nil
		}
	}
	g, err := graph.New(wTag).AddNode("ask", node("ask"), nil).AddNode("finish", node("finish"), nil).
		AddEdge(graph.START, "ask").AddEdge("ask", "finish").
		Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(ctx, graph.AsCommand(wTag.Write("direct").Goto("finish")), &graph.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"finish"}, ran); diff != "" {
		t.Errorf("nodes run (-want +got):\n%s", diff)
	}
	if wTag.Get(out) != "direct" {
		t.Errorf("tag = %q", wTag.Get(out))
	}
	// On a thread that ran, the same: only finish runs again.
	ran = nil
	if _, err := g.Invoke(ctx, graph.AsCommand(wTag.Write("again").Goto("finish")), &graph.RunOptions{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"finish"}, ran); diff != "" {
		t.Errorf("nodes run on a thread with state (-want +got):\n%s", diff)
	}
	if _, err := g.Invoke(ctx, graph.AsCommand(graph.Goto("nope")), &graph.RunOptions{ThreadID: "t"}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("goto an unknown node: %v", err)
	}
}
