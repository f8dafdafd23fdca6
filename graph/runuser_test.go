package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// whoGraph's node appends what it learns of its run: "node:user:model",
// model being the configurable value "model".
func whoGraph(t *testing.T, name string, saver *checkpoint.Saver, also func(ctx context.Context) string) (*graph.Graph, *graph.ReduceChannel[[]string]) {
	t.Helper()
	seen := graph.Reduce("seen", func(cur, upd []string) []string { return append(append([]string{}, cur...), upd...) })
	g, err := graph.New(seen).AddNode(name, func(ctx context.Context, s graph.State) (graph.Update, error) {
		ti, _ := graph.CurrentTask(ctx)
		model, _ := graph.Configurable(ctx, "model")
		out := []string{fmt.Sprintf("%s:%s:%v", name, ti.User, model)}
		if also != nil {
			out = append(out, also(ctx))
		}
		return seen.Write(out), nil
	}, nil).AddEdge(graph.START, name).Compile(&graph.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return g, seen
}

// Nodes read the run's user and configurable values; a subgraph shares
// them, a graph invoked from inside a node inherits them unless its own
// options name others, and a resumed run acts for the user it names.
func TestRunUserAndConfigurable(t *testing.T) {
	ctx := context.Background()
	inner, innerSeen := whoGraph(t, "inner", nil, nil)
	nested := func(own *graph.RunOptions) func(ctx context.Context) string {
		return func(ctx context.Context) string {
			st, err := inner.Invoke(ctx, graph.Input(), own)
			if err != nil {
				return err.Error()
			}
			return innerSeen.Get(st)[0]
		}
	}
	sub, _ := whoGraph(t, "sub", nil, nil)
	outer, seen := whoGraph(t, "outer", nil, nested(nil))
	cfg := map[string]any{"model": "m1"}
	st, err := outer.Invoke(ctx, graph.Input(), &graph.RunOptions{User: "alice", Configurable: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"outer:alice:m1", "inner:alice:m1"}, seen.Get(st)); diff != "" {
		t.Errorf("nested invoke (-want +got):\n%s", diff)
	}
	own, ownSeen := whoGraph(t, "outer", nil, nested(&graph.RunOptions{User: "bob", Configurable: map[string]any{"model": "m2"}}))
	st, err = own.Invoke(ctx, graph.Input(), &graph.RunOptions{User: "alice", Configurable: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"outer:alice:m1", "inner:bob:m2"}, ownSeen.Get(st)); diff != "" {
		t.Errorf("nested invoke with its own user (-want +got):\n%s", diff)
	}

	// A subgraph node shares its parent's run options.
	seenCh := graph.Reduce("seen", func(cur, upd []string) []string { return append(append([]string{}, cur...), upd...) })
	parent, err := graph.New(seenCh).AddSubgraph("sub", sub, nil).AddEdge(graph.START, "sub").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err = parent.Invoke(ctx, graph.Input(), &graph.RunOptions{User: "carol", Configurable: map[string]any{"model": "m3"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sub:carol:m3"}, seenCh.Get(st)); diff != "" {
		t.Errorf("subgraph (-want +got):\n%s", diff)
	}

	// Outside a node there is no run to ask.
	if _, ok := graph.Configurable(ctx, "model"); ok {
		t.Error("Configurable outside a node reported a value")
	}
	if ti, ok := graph.CurrentTask(ctx); ok || ti.User != "" {
		t.Errorf("CurrentTask outside a node = %+v, %v", ti, ok)
	}
}

// The user is not kept in the checkpoint: a resume acts for the user its
// own options name, from the node's top.
func TestRunUserOnResume(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	seen := graph.Reduce("seen", func(cur, upd []string) []string { return append(append([]string{}, cur...), upd...) })
	g, err := graph.New(seen).AddNode("ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
		ti, _ := graph.CurrentTask(ctx)
		before := ti.User
		graph.Ask[string](ctx, "go?")
		ti, _ = graph.CurrentTask(ctx)
		return seen.Write([]string{before + "→" + ti.User}), nil
	}, nil).AddEdge(graph.START, "ask").Compile(&graph.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, graph.Input(), &graph.RunOptions{ThreadID: "t", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	st, err := g.Invoke(ctx, graph.Resume("yes"), &graph.RunOptions{ThreadID: "t", User: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"dave→dave"}, seen.Get(st)); diff != "" {
		t.Errorf("resumed (-want +got):\n%s", diff)
	}
}
