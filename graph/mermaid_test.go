package graph_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/graph"
)

// Run `go test ./graph -run TestMermaid -update` to rewrite the golden files.
var updateMermaidGolden = flag.Bool("update", false, "rewrite the golden files under testdata/mermaid")

var mmSteps = graph.Reduce("steps", func(a, b []string) []string { return append(append([]string(nil), a...), b...) })

func mmNode(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		return mmSteps.Write([]string{name}), nil
	}
}

func mmRoute(to ...string) graph.Router {
	return func(ctx context.Context, s graph.State) (graph.Route, error) { return graph.To(to...), nil }
}

func mmCompile(t *testing.T, b *graph.Builder, opts ...graph.CompileOptions) *graph.Graph {
	t.Helper()
	g, err := b.Compile(opt(opts))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// mmChild is a subgraph that itself holds a subgraph, to draw recursively.
func mmChild(t *testing.T) *graph.Graph {
	grandchild := mmCompile(t, graph.New(mmSteps).AddNode(
		"deep", mmNode("deep"), nil).
		AddEdge(graph.START, "deep").AddEdge("deep", graph.END))
	return mmCompile(t, graph.New(mmSteps).AddNode(
		"research", mmNode("research"), nil).AddSubgraph(

		"grandchild", grandchild, nil).
		AddNode(

			"review", mmNode("review"), nil).
		AddEdge(graph.START, "research").
		AddEdge("research", "grandchild").
		AddEdge("grandchild", "review").AddConditionalEdges(

		"review", mmRoute("done"), &graph.BranchOptions{PathMap: map[string]string{
			"again": "research",
			"done":  graph.END,
		}}))
}

func mmParent(t *testing.T) *graph.Graph {
	return mmCompile(t, graph.New(mmSteps).AddNode(
		"prepare", mmNode("prepare"), nil).AddSubgraph(

		"child", mmChild(t), nil).
		AddNode(

			"finish", mmNode("finish"), nil).
		AddEdge(graph.START, "prepare").
		AddEdge("prepare", "child").
		AddEdge("child", "finish").
		AddEdge("finish", graph.END))
}

func TestMermaidGolden(t *testing.T) {
	tests := []struct {
		name string
		g    func(t *testing.T) *graph.Graph
		opts graph.MermaidOptions
	}{
		{"sequence", func(t *testing.T) *graph.Graph {
			return mmCompile(t, graph.New(mmSteps).
				AddSequence(
					graph.NamedNode{Name: "fetch", Fn: mmNode("fetch")},
					graph.NamedNode{Name: "parse", Fn: mmNode("parse")},
					graph.NamedNode{Name: "store", Fn: mmNode("store")},
				).
				AddEdge(graph.START, "fetch").AddEdge("store", graph.END))
		}, graph.MermaidOptions{}},
		{"branch", func(t *testing.T) *graph.Graph {
			return mmCompile(t, graph.New(mmSteps).AddNode(
				"classify", mmNode("classify"), nil).AddNode(

				"accept", mmNode("accept"), nil).AddNode(

				"reject", mmNode("reject"), nil).
				AddEdge(graph.START, "classify").AddConditionalEdges(

				"classify", mmRoute("accept"), &graph.BranchOptions{PathMap: map[string]string{
					"accept": "accept",
					"no":     "reject",
					"stop":   graph.END,
				}}).
				AddEdge("accept", graph.END).
				AddEdge("reject", graph.END))
		}, graph.MermaidOptions{}},
		{"join", func(t *testing.T) *graph.Graph {
			return mmCompile(t, graph.New(mmSteps).AddNode(
				"split", mmNode("split"), nil).AddNode(

				"left", mmNode("left"), nil).AddNode(

				"right", mmNode("right"), nil).AddNode(

				"merge", mmNode("merge"), nil).
				AddEdge(graph.START, "split").
				AddEdge("split", "left").
				AddEdge("split", "right").
				AddJoin([]string{"left", "right"}, "merge").
				AddEdge("merge", graph.END))
		}, graph.MermaidOptions{}},
		{"subgraph", mmParent, graph.MermaidOptions{}},
		{"subgraph_xray", mmParent, graph.MermaidOptions{XRay: true}},
		{"goto", func(t *testing.T) *graph.Graph {
			return mmCompile(t, graph.New(mmSteps).AddNode(
				"router", func(ctx context.Context, s graph.State) (graph.Update, error) {
					return graph.Goto("left"), nil
				}, &graph.NodeOptions{Destinations: []string{"left", "right", graph.END}}).AddNode(

				"left", mmNode("left"), nil).AddNode(

				"right", mmNode("right"), nil).
				AddEdge(graph.START, "router").
				AddEdge("left", graph.END).
				AddEdge("right", graph.END))
		}, graph.MermaidOptions{}},
		{"escaping", func(t *testing.T) *graph.Graph {
			// Names Mermaid cannot take as ids, a router without a path
			// map (it may go anywhere), and a graph name for the title.
			return mmCompile(t, graph.New(mmSteps).AddNode(
				"end", mmNode("end"), nil).AddNode(

				"my node", mmNode("my node"), nil).AddNode(

				"web-search", mmNode("web-search"), nil).AddNode(

				`say "hi" #1 <b>`, mmNode("quote"), nil).AddNode(

				"검색", mmNode("검색"), nil).
				AddEdge(graph.START, "end").AddConditionalEdges(

				"end", mmRoute("my node"), nil).
				AddConditionalEdges(

					"my node", mmRoute("go-on"), &graph.BranchOptions{PathMap: map[string]string{
						"go-on":   "web-search",
						"a.b|c>d": `say "hi" #1 <b>`,
						"한국어 키":   "검색",
					}}).
				AddEdge("web-search", graph.END), graph.CompileOptions{Name: "escapes: a \"test\""})
		}, graph.MermaidOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.g(t)
			got := g.Mermaid(&tt.opts)
			path := filepath.Join("testdata", "mermaid", tt.name+".mmd")
			if *updateMermaidGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Mermaid() differs from %s (-want +got); run with -update if the change is intended:\n%s", path, diff)
			}
			// Maps in the builder must not make the drawing vary.
			for range 5 {
				if again := g.Mermaid(&tt.opts); again != got {
					t.Fatalf("Mermaid() is not deterministic:\n%s", cmp.Diff(got, again))
				}
			}
			mmCheckSyntax(t, got)
		})
	}
}

var (
	mmIDRe       = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	mmNodeLineRe = regexp.MustCompile(`^\t+([^\s(\[]+)(\(.*\)|\[.*\])(:::\w+)?$`)
	mmEdgeLineRe = regexp.MustCompile(`^\t(\S+) (-->|-\.->|-\. &nbsp;[^"]*&nbsp; \.->) (\S+);$`)
)

// mmCheckSyntax checks the shape of every line: ids made only of safe
// characters, declared once, never a Mermaid keyword, and edges only
// between declared nodes.
func mmCheckSyntax(t *testing.T, out string) {
	t.Helper()
	if !strings.HasPrefix(out, "---\n") || !strings.Contains(out, "\n---\ngraph TD;\n") {
		t.Errorf("missing front matter or graph TD;:\n%s", out)
	}
	body := out[strings.Index(out, "graph TD;\n")+len("graph TD;\n"):]
	declared := map[string]bool{}
	depth := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(body, "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "subgraph "):
			depth++
			id, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "subgraph "), "[")
			mmCheckID(t, id, declared)
		case trimmed == "end":
			depth--
		case strings.HasPrefix(trimmed, "classDef "):
		case strings.Contains(trimmed, "->"):
			m := mmEdgeLineRe.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("malformed edge line %q", line)
				continue
			}
			for _, id := range []string{m[1], m[3]} {
				if !declared[id] {
					t.Errorf("edge %q uses undeclared node %q", line, id)
				}
			}
		default:
			m := mmNodeLineRe.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("malformed node line %q", line)
				continue
			}
			mmCheckID(t, m[1], declared)
		}
		if depth < 0 {
			t.Errorf("unbalanced subgraph end")
		}
	}
	if depth != 0 {
		t.Errorf("%d subgraph blocks left open", depth)
	}
}

func mmCheckID(t *testing.T, id string, declared map[string]bool) {
	t.Helper()
	if !mmIDRe.MatchString(id) {
		t.Errorf("id %q has characters Mermaid may misread", id)
	}
	if strings.EqualFold(id, "end") {
		t.Errorf("id %q is Mermaid's keyword", id)
	}
	if declared[id] {
		t.Errorf("id %q is declared twice", id)
	}
	declared[id] = true
}

func TestMermaidUniqueIDs(t *testing.T) {
	// "a b" escapes to the same id as a node literally named a_x20_b.
	g := mmCompile(t, graph.New(mmSteps).AddNode(
		"a b", mmNode("1"), nil).AddNode(

		"a_x20_b", mmNode("2"), nil).
		AddEdge(graph.START, "a b").
		AddEdge("a b", "a_x20_b").
		AddEdge("a_x20_b", graph.END))
	out := g.Mermaid(nil)
	for _, want := range []string{
		"\ta_x20_b(\"a b\")\n",
		"\ta_x20_b_2(a_x20_b)\n",
		"\ta_x20_b --> a_x20_b_2;\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	mmCheckSyntax(t, out)
}

func TestMermaidXRayPassThrough(t *testing.T) {
	// A subgraph whose START may lead straight to END can be passed
	// through: the node before it connects to the node after it.
	sub := mmCompile(t, graph.New(mmSteps).AddNode(
		"maybe", mmNode("maybe"), nil).AddConditionalEdges(

		graph.START, mmRoute(graph.END), &graph.BranchOptions{PathMap: map[string]string{
			"work": "maybe",
			"skip": graph.END,
		}}))
	g := mmCompile(t, graph.New(mmSteps).AddNode(
		"before", mmNode("before"), nil).AddSubgraph(

		"optional", sub, nil).
		AddNode(

			"after", mmNode("after"), nil).
		AddEdge(graph.START, "before").
		AddEdge("before", "optional").
		AddEdge("optional", "after").
		AddEdge("after", graph.END))
	out := g.Mermaid(&graph.MermaidOptions{XRay: true})
	for _, want := range []string{
		"\tsubgraph optional\n",
		"\t\toptional_x3a_maybe(maybe)\n",
		"\tbefore -. &nbsp;work&nbsp; .-> optional_x3a_maybe;\n",
		"\tbefore -. &nbsp;skip&nbsp; .-> after;\n",
		// maybe has no edge out, so it ends the subgraph.
		"\toptional_x3a_maybe --> after;\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	mmCheckSyntax(t, out)
}
