package graph_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/graph"
)

// Subgraphs lists the compiled graphs that run as nodes, by namespace,
// as LangGraph's get_subgraphs does: with recurse, nested ones as
// "node|child"; a namespace picks one, a nested one only with recurse.
func TestSubgraphs(t *testing.T) {
	x := graph.Value[int]("x")
	step := func(ctx context.Context, s graph.State) (graph.Update, error) { return x.Write(x.Get(s) + 1), nil }
	compile := func(b *graph.Builder) *graph.Graph {
		t.Helper()
		g, err := b.Compile(nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	leaf := compile(graph.New(x).AddNode("inc", step, nil).AddEdge(graph.START, "inc"))
	mid := compile(graph.New(x).AddSubgraph("leaf", leaf, nil).AddNode("inc", step, nil).AddEdge(graph.START, "leaf").AddEdge("leaf", "inc"))
	root := compile(graph.New(x).AddNode("first", step, nil).AddSubgraph("mid", mid, nil).AddSubgraph("other", leaf, nil).
		AddEdge(graph.START, "first").AddEdge("first", "mid").AddEdge("mid", "other"))

	list := func(ns string, recurse bool) (names []string, graphs []*graph.Graph) {
		for name, g := range root.Subgraphs(ns, recurse) {
			names, graphs = append(names, name), append(graphs, g)
		}
		return names, graphs
	}
	for _, c := range []struct {
		ns      string
		recurse bool
		want    []string
		graphs  []*graph.Graph
	}{
		{"", false, []string{"mid", "other"}, []*graph.Graph{mid, leaf}},
		{"", true, []string{"mid", "mid|leaf", "other"}, []*graph.Graph{mid, leaf, leaf}},
		{"mid", false, []string{"mid"}, []*graph.Graph{mid}},
		{"mid|leaf", true, []string{"mid|leaf"}, []*graph.Graph{leaf}},
		{"mid|leaf", false, nil, nil},
		{"first", true, nil, nil},
		{"nope", true, nil, nil},
		{"mid|nope", true, nil, nil},
	} {
		names, graphs := list(c.ns, c.recurse)
		if diff := cmp.Diff(c.want, names); diff != "" {
			t.Errorf("Subgraphs(%q, %v) names (-want +got):\n%s", c.ns, c.recurse, diff)
		}
		for i := range graphs {
			if i < len(c.graphs) && graphs[i] != c.graphs[i] {
				t.Errorf("Subgraphs(%q, %v): %s is not the graph added there", c.ns, c.recurse, names[i])
			}
		}
	}
	// Stopping early stops it.
	for name := range root.Subgraphs("", true) {
		if name != "mid" {
			t.Errorf("after a break, got %s", name)
		}
		break
	}
}
