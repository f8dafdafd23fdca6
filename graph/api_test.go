package graph_test

// Tests of the conveniences that make the common path short (issue 7 §9):
// typed stream events, RunOptions from a checkpoint config, typed task
// results and interrupt values, and Ask.

import (
	"context"
	"errors"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

type apiDecision struct {
	OK   bool   `json:"ok"`
	Note string `json:"note"`
}

type apiQuestion struct {
	Text string `json:"text"`
}

// apiGraph asks with Ask, then writes the answer; deferred counts the
// deferred calls of the node, which run when Ask stops it too.
func apiGraph(t *testing.T, deferred *int, saver *checkpoint.Saver) (*graph.Graph, *graph.ValueChannel[string]) {
	t.Helper()
	out := graph.Value[string]("out")
	g, err := graph.New(out).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			defer func() { *deferred++ }()
			d := graph.Ask[apiDecision](ctx, apiQuestion{"go?"})
			graph.Emit(ctx, d)
			return out.Write(d.Note), nil
		}, nil).
		AddEdge(graph.START, "ask").Compile(&graph.CompileOptions{Checkpointer: saver})

	if err != nil {
		t.Fatal(err)
	}
	return g, out
}

func TestAskStopsAndResumes(t *testing.T) {
	ctx := context.Background()
	deferred := 0
	g, out := apiGraph(t, &deferred, checkpoint.NewMemory())

	st, err := g.Invoke(ctx, out.Write("in"), &graph.RunOptions{ThreadID: "1"})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if len(st.Interrupts()) != 1 || deferred != 1 {
		t.Fatalf("interrupts %v, deferred calls %d; want one interrupt and the deferred call run", st.Interrupts(), deferred)
	}
	if q, err := graph.InterruptValue[apiQuestion](st.Interrupts()[0]); err != nil || q.Text != "go?" {
		t.Errorf("InterruptValue = %+v, %v", q, err)
	}
	// Read back from the checkpoint the value is JSON; InterruptValue
	// decodes it all the same.
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := graph.InterruptValue[apiQuestion](snap.Interrupts[0]); err != nil || q.Text != "go?" {
		t.Errorf("InterruptValue from GetState = %+v, %v", q, err)
	}
	if _, err := graph.InterruptValue[int](snap.Interrupts[0]); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("InterruptValue into the wrong type: err = %v, want ErrInvalidInput", err)
	}

	var custom []apiDecision
	var updates []string
	for ev, err := range g.Stream(ctx, graph.Resume(apiDecision{true, "yes"}), &graph.RunOptions{
		ThreadID: "1", StreamModes: []graph.StreamMode{graph.StreamCustom, graph.StreamUpdates},
	}) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if d, ok := graph.CustomAs[apiDecision](ev); ok {
			custom = append(custom, d)
		}
		if u, ok := ev.Update(); ok {
			if v, ok := graph.Written(u.Update, out); ok {
				updates = append(updates, u.Node+"="+v)
			}
		}
		if _, ok := ev.Values(); ok {
			t.Errorf("an updates or custom event read as values: %+v", ev)
		}
	}
	cstDiff(t, "custom events", []apiDecision{{true, "yes"}}, custom)
	cstDiff(t, "updates", []string{"ask=yes"}, updates)
}

func TestAskFailuresAreNodeErrors(t *testing.T) {
	ctx := context.Background()
	deferred := 0
	g, out := apiGraph(t, &deferred, nil)
	_, err := g.Invoke(ctx, out.Write("in"), nil)
	var ne *graph.NodeError
	if !errors.Is(err, graph.ErrNoCheckpointer) || !errors.As(err, &ne) || ne.Node != "ask" {
		t.Errorf("Ask without a checkpointer: err = %v, want a NodeError of ask wrapping ErrNoCheckpointer", err)
	}
	var pe *graph.PanicError
	if errors.As(err, &pe) {
		t.Errorf("Ask's stop surfaced as a panic: %v", err)
	}

	g, out = apiGraph(t, &deferred, checkpoint.NewMemory())
	if _, err := g.Invoke(ctx, out.Write("in"), &graph.RunOptions{ThreadID: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, graph.Resume("not a decision"), &graph.RunOptions{ThreadID: "1"}); !errors.Is(err, graph.ErrInvalidInput) || !errors.As(err, &ne) {
		t.Errorf("resume value of the wrong type: err = %v, want a NodeError wrapping ErrInvalidInput", err)
	}
}

func TestEventAccessorsMatchTheirMode(t *testing.T) {
	ctx := context.Background()
	v := graph.Value[int]("v")
	g, err := graph.New(v).AddNode(
		"inc", func(ctx context.Context, s graph.State) (graph.Update, error) {
			graph.Emit(ctx, "hi")
			return v.Write(v.Get(s) + 1), nil
		}, nil).
		AddEdge(graph.START, "inc").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for ev, err := range g.Stream(ctx, v.Write(1), &graph.RunOptions{ThreadID: "1", StreamModes: []graph.StreamMode{
		graph.StreamValues, graph.StreamUpdates, graph.StreamCustom, graph.StreamTasks, graph.StreamCheckpoints, graph.StreamDebug,
	}}) {
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if s, ok := ev.Values(); ok {
			n++
			counts["values"]++
			_ = v.Get(s)
		}
		if u, ok := ev.Update(); ok {
			n++
			if got, ok := graph.Written(u.Update, v); !ok || got != 2 {
				t.Errorf("Written(update of %s) = %d, %v; want 2", u.Node, got, ok)
			}
			counts["updates"]++
		}
		if s, ok := graph.CustomAs[string](ev); ok {
			n++
			if s != "hi" {
				t.Errorf("custom = %q", s)
			}
			counts["custom"]++
		}
		if _, ok := ev.TaskStart(); ok {
			n++
			counts["task start"]++
		}
		if tr, ok := ev.TaskResult(); ok {
			n++
			if got, _ := graph.Written(tr.Result, v); got != 2 {
				t.Errorf("task result writes v = %d, want 2", got)
			}
			counts["task result"]++
		}
		if _, ok := ev.Checkpoint(); ok {
			n++
			counts["checkpoints"]++
		}
		if _, ok := ev.Debug(); ok {
			n++
			counts["debug"]++
		}
		if n != 1 {
			t.Errorf("%s event matched %d accessors, want 1", ev.Mode, n)
		}
	}
	cstDiff(t, "events by accessor", map[string]int{
		"values": 2, "updates": 1, "custom": 1, "task start": 1, "task result": 1, "checkpoints": 3, "debug": 5,
	}, counts)
	if _, ok := graph.CustomAs[int](graph.Event{Mode: graph.StreamCustom, Data: "x"}); ok {
		t.Error("CustomAs[int] accepted a string")
	}
}

// UpdateState's config runs as it is: At makes the RunOptions.
func TestRunOptionsAtUpdatedCheckpoint(t *testing.T) {
	ctx := context.Background()
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{
		Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"c"},
	})
	cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	cfg, err := g.UpdateState(ctx, cstCfg("t"), trail.Write([]string{"x"}), "b")
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(ctx, graph.Update{}, graph.At(cfg))
	if err != nil {
		t.Fatalf("Invoke at UpdateState's config: %v", err)
	}
	cstDiff(t, "trail", []string{"in", "a", "b", "x", "c"}, trail.Get(out))

	opts := graph.RunOptions{RecursionLimit: 3}.At(cfg)
	if opts.ThreadID != "t" || opts.CheckpointID != cfg.CheckpointID || opts.RecursionLimit != 3 {
		t.Errorf("RunOptions.At = %+v", opts)
	}
	sub := cfg
	sub.Namespace = "child:1"
	if _, err := g.Invoke(ctx, graph.Update{}, graph.At(sub)); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("At a subgraph's checkpoint: err = %v, want ErrInvalidInput", err)
	}
}

// Ask on a goroutine the node started cannot stop the node by panicking
// (nothing of the runtime's would recover it, and the program would
// crash): it fails the node instead, naming the rule, and the goroutine
// ends without running the code after Ask. Interrupt works there.
func TestAskOffTheNodeGoroutineFailsTheNode(t *testing.T) {
	ctx := context.Background()
	out := graph.Value[string]("out")
	after := 0
	g, err := graph.New(out).AddNode("ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
		done := make(chan string, 1)
		go func() {
			defer close(done)
			done <- graph.Ask[string](ctx, "go?")
			after++
		}()
		return out.Write(<-done), nil
	}, nil).AddEdge(graph.START, "ask").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(ctx, out.Write("in"), &graph.RunOptions{ThreadID: "1"})
	var ne *graph.NodeError
	if !errors.Is(err, graph.ErrAskOffNodeGoroutine) || !errors.As(err, &ne) || ne.Node != "ask" {
		t.Errorf("err = %v, want a NodeError of ask wrapping ErrAskOffNodeGoroutine", err)
	}
	if after != 0 {
		t.Errorf("the code after Ask ran %d times", after)
	}
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Interrupts) != 0 || len(snap.Next) != 1 {
		t.Errorf("after the failure: interrupts %v, next %v; want none pending and ask to run again", snap.Interrupts, snap.Next)
	}
}

// A panic in a node's error handler (NodeOptions.OnError) fails the node
// with a PanicError, as a panic in the node does, instead of crashing the
// program; Ask in the handler stops the run for a human as it does in a
// node.
func TestErrorHandlerPanicFailsTheNode(t *testing.T) {
	ctx := context.Background()
	out := graph.Value[string]("out")
	build := func(handler func(context.Context, graph.State, error) (graph.Update, error)) *graph.Graph {
		g, err := graph.New(out).AddNode("work", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return graph.Update{}, errors.New("work failed")
		}, &graph.NodeOptions{OnError: handler}).AddEdge(graph.START, "work").
			Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := build(func(context.Context, graph.State, error) (graph.Update, error) { panic("handler bug") })
	_, err := g.Invoke(ctx, out.Write("in"), &graph.RunOptions{ThreadID: "1"})
	var pe *graph.PanicError
	var ne *graph.NodeError
	if !errors.As(err, &pe) || pe.Value != "handler bug" || !errors.As(err, &ne) || ne.Node != "work" {
		t.Errorf("err = %v, want a NodeError of work with the handler's PanicError", err)
	}

	g = build(func(ctx context.Context, s graph.State, err error) (graph.Update, error) {
		return out.Write(graph.Ask[string](ctx, "retry? "+err.Error())), nil
	})
	st, err := g.Invoke(ctx, out.Write("in"), &graph.RunOptions{ThreadID: "2"})
	if err != nil || len(st.Interrupts()) != 1 {
		t.Fatalf("Ask in the handler: %v, interrupts %v; want the run stopped for a human", err, st.Interrupts())
	}
	st, err = g.Invoke(ctx, graph.Resume("handled"), &graph.RunOptions{ThreadID: "2"})
	if err != nil || out.Get(st) != "handled" {
		t.Errorf("after the resume: %v, out %q; want the handler's answer", err, out.Get(st))
	}
}

// Continuing (the zero Update) needs a checkpointer, as resuming does: the
// error says so, rather than naming an empty thread.
func TestContinueWithoutCheckpointer(t *testing.T) {
	out := graph.Value[string]("out")
	g, err := graph.New(out).AddNode("a", func(context.Context, graph.State) (graph.Update, error) {
		return out.Write("a"), nil
	}, nil).AddEdge(graph.START, "a").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), graph.Update{}, nil); !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Errorf("err = %v, want ErrNoCheckpointer", err)
	}
}
