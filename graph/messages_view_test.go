package graph_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/weftlabs/weft/graph"
)

// Routers see the state plus their own node's writes. Their views of a
// message list share its storage with the list itself; a view kept past
// the step never changes, whether the committed writes are the router's
// own (one task) or several tasks' (parallel branches).
func TestMessageViewsOfRoutersStayFixed(t *testing.T) {
	msgs := graph.Messages[flowMsg]("msgs")
	var mu sync.Mutex
	kept := map[string][]flowMsg{}
	want := map[string][]string{}
	ids := func(ms []flowMsg) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	node := func(name string) graph.NodeFunc {
		return func(context.Context, graph.State) (graph.Update, error) {
			return msgs.Write(flowMsg{ID: name + "1"}, flowMsg{ID: name + "2"}), nil
		}
	}
	route := func(name, next string) graph.Router {
		return func(_ context.Context, s graph.State) (graph.Route, error) {
			v := msgs.Get(s)
			mu.Lock()
			kept[name], want[name] = v, ids(v)
			mu.Unlock()
			return graph.To(next), nil
		}
	}
	g, err := graph.New(msgs).AddNode(
		"a", node("a"), nil).AddNode(
		"b", node("b"), nil).AddNode(
		"c", node("c"), nil).AddNode(
		"d", node("d"), nil).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddConditionalEdges(

		"a", route("a", "c"), nil).AddConditionalEdges(

		"b", route("b", "c"), nil).AddConditionalEdges(

		"c", route("c", "d"), nil).AddConditionalEdges(

		"d", route("d", graph.END), nil).Compile(&graph.CompileOptions{})

	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		st, err := g.Invoke(context.Background(), msgs.Write(flowMsg{ID: "in"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := ids(msgs.Get(st)), []string{"in", "a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"}; !slices.Equal(got, w) {
			t.Fatalf("final messages %v, want %v", got, w)
		}
		for name, v := range kept {
			if got := ids(v); !slices.Equal(got, want[name]) {
				t.Errorf("router %s's view changed from %v to %v", name, want[name], got)
			}
		}
		if w := []string{"in", "a1", "a2"}; !slices.Equal(want["a"], w) {
			t.Errorf("router a saw %v, want %v", want["a"], w)
		}
		if w := []string{"in", "b1", "b2"}; !slices.Equal(want["b"], w) {
			t.Errorf("router b saw %v, want %v", want["b"], w)
		}
	}
}
