package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

var (
	Log   = graph.Reduce("log", func(a, b []string) []string { return append(append([]string(nil), a...), b...) })
	Count = graph.Value[int]("count")
)

func add(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		return Log.Write([]string{name}), nil
	}
}

func TestSmokeSequence(t *testing.T) {
	g, err := graph.New(Log, Count).AddNode(
		"a", add("a"), nil).AddNode(
		"b", add("b"), nil).AddNode(
		"c", add("c"), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").AddJoin([]string{"b", "c"}, "d").AddNode(

		"d", add("d"), nil).
		AddEdge("d", graph.END).Compile(nil)

	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Invoke(context.Background(), Count.Write(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Log.Get(s), ","); got != "a,b,c,d" {
		t.Fatalf("log = %s", got)
	}
	if Count.Get(s) != 1 {
		t.Fatal("count")
	}
}

func TestSmokeInterrupt(t *testing.T) {
	saver := checkpoint.NewMemory()
	g, err := graph.New(Log).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			ans, err := graph.Interrupt[string](ctx, "ok?")
			if err != nil {
				return graph.Update{}, err
			}
			return Log.Write([]string{"ans:" + ans}), nil
		}, nil).
		AddEdge(graph.START, "ask").Compile(&graph.CompileOptions{Checkpointer: saver})

	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "t1"}
	s, err := g.Invoke(context.Background(), Log.Write([]string{"start"}), &opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Interrupts()) != 1 || s.Interrupts()[0].Value != "ok?" {
		t.Fatalf("interrupts = %+v", s.Interrupts())
	}
	snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Next) != 1 || snap.Next[0] != "ask" {
		t.Fatalf("next = %v", snap.Next)
	}
	s, err = g.Invoke(context.Background(), graph.Resume("yes"), &opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Log.Get(s), ","); got != "start,ans:yes" {
		t.Fatalf("log = %s", got)
	}
	n := 0
	for _, err := range g.GetStateHistory(context.Background(), "t1", nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("history = %d", n)
	}
}
