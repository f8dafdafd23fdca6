package graph

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// A subgraph run by a node attempt that has ended (its timeout abandoned it)
// writes nothing into the namespace the next attempt uses (issue 7 §10).
func TestSubgraphOfEndedAttemptWritesNothing(t *testing.T) {
	ctx := context.Background()
	V := Value[string]("v")
	saver := checkpoint.NewMemory()
	g, err := New(V).AddNode("inner", func(ctx context.Context, s State) (Update, error) {
		return V.Write("late"), nil
	}, nil).
		AddEdge(START, "inner").Compile(&CompileOptions{Checkpointer: saver})

	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Durability{DurabilitySync, DurabilityAsync, DurabilityExit} {
		r, err := g.newRun(RunOptions{ThreadID: "t-" + string(d), Durability: d, RecursionLimit: DefaultRecursionLimit})
		if err != nil {
			t.Fatal(err)
		}
		r.ns, r.sub = "outer:task", true
		r.persist = newPersister(ctx, d == DurabilityAsync, time.Second, nil)
		r.alive = func() bool { return false }
		_, err = r.execute(ctx, V.Write("in"))
		if cerr := r.persist.close(); cerr != nil {
			t.Fatal(cerr)
		}
		// Under exit durability a subgraph that finishes saves nothing
		// anyway.
		if d != DurabilityExit && !errors.Is(err, errAttemptEnded) {
			t.Fatalf("%s: execute = %v, want errAttemptEnded", d, err)
		}
		for tp, err := range saver.List(ctx, "t-"+string(d), checkpoint.ListOptions{}) {
			t.Fatalf("%s: stored %v, %v; want nothing", d, tp.Config, err)
		}
	}
}
