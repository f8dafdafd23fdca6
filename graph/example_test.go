package graph_test

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// A node asks a human with Ask; the run stops, and Resume answers it. The
// events of the resumed run are read typed.
func ExampleAsk() {
	ctx := context.Background()
	draft := graph.Value[string]("draft")
	g, err := graph.New(draft).AddNode(
		"review", func(ctx context.Context, s graph.State) (graph.Update, error) {
			verdict := graph.Ask[string](ctx, "publish "+draft.Get(s)+"?")
			return draft.Write(draft.Get(s) + " (" + verdict + ")"), nil
		}, nil).
		AddEdge(graph.START, "review").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	if err != nil {
		fmt.Println(err)
		return
	}
	thread := graph.RunOptions{ThreadID: "t1"}
	st, err := g.Invoke(ctx, draft.Write("post"), &thread)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("asked:", st.Interrupts()[0].Value)

	for ev, err := range g.Stream(ctx, graph.Resume("approved"), &thread) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if u, ok := ev.Update(); ok {
			v, _ := graph.Written(u.Update, draft)
			fmt.Println(u.Node, "wrote:", v)
		}
	}
	// Output:
	// asked: publish post?
	// review wrote: post (approved)
}

// UpdateState's config runs as it is, through At.
func ExampleAt() {
	ctx := context.Background()
	n := graph.Value[int]("n")
	g, err := graph.New(n).AddNode(
		"double", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return n.Write(2 * n.Get(s)), nil
		}, nil).
		AddEdge(graph.START, "double").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"double"}})

	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := g.Invoke(ctx, n.Write(1), &graph.RunOptions{ThreadID: "t1"}); err != nil {
		fmt.Println(err)
		return
	}
	// Change n before double runs, as START would have written it.
	cfg, err := g.UpdateState(ctx, checkpoint.Config{ThreadID: "t1"}, n.Write(5), graph.START)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := g.Invoke(ctx, graph.Update{}, graph.At(cfg))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n.Get(st))
	// Output: 10
}
