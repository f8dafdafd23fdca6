package graph_test

// Conformance suite, first half: control flow. Each test names the LangGraph
// test (libs/langgraph/tests/...) whose behaviour it checks. The graphs and
// data are weft's own; the expected results follow LangGraph's semantics
// unless a comment says weft deliberately differs.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/weftlabs/weft/graph"
)

// ---------------------------------------------------------------- helpers

func flowAppend(cur, upd []string) []string { return append(slices.Clip(cur), upd...) }

var (
	// flowTrail records what nodes did, in reducer (task-path) order.
	flowTrail = graph.Reduce("trail", flowAppend)
	// flowItem is the payload of Sends; graphs declare it as a node input
	// (NodeOptions.Input) rather than as state.
	flowItem = graph.Value[int]("item")
)

func flowSay(word string) graph.NodeFunc {
	return func(context.Context, graph.State) (graph.Update, error) {
		return flowTrail.Write([]string{word}), nil
	}
}

func flowNoop(context.Context, graph.State) (graph.Update, error) { return graph.Update{}, nil }

// flowWork is a Send target: it records "work|<item>".
func flowWork(_ context.Context, s graph.State) (graph.Update, error) {
	return flowTrail.Write([]string{fmt.Sprintf("work|%d", flowItem.Get(s))}), nil
}

func flowSend(node string, item int) graph.Send {
	return graph.Send{Node: node, Arg: flowItem.Write(item)}
}

func flowCompile(t *testing.T, b *graph.Builder, opts ...graph.CompileOptions) *graph.Graph {
	t.Helper()
	g, err := b.Compile(opt(opts))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return g
}

func flowRun(t *testing.T, g *graph.Graph, in graph.Update, opts ...graph.RunOptions) graph.State {
	t.Helper()
	s, err := g.Invoke(context.Background(), in, opt(opts))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return s
}

func flowDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// flowUpdates streams a run in updates mode and returns its events.
func flowUpdates(t *testing.T, g *graph.Graph, in graph.Update) []graph.NodeUpdate {
	t.Helper()
	var out []graph.NodeUpdate
	for ev, err := range g.Stream(context.Background(), in, &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamUpdates}}) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		out = append(out, ev.Data.(graph.NodeUpdate))
	}
	return out
}

// flowAt records "<name>@<step>" using the task's step.
func flowAt(name string) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Update, error) {
		info, _ := graph.CurrentTask(ctx)
		return flowTrail.Write([]string{fmt.Sprintf("%s@%d", name, info.Step)}), nil
	}
}

func flowWantErr(t *testing.T, err error, target error, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error (%v), got nil", target)
	}
	if target != nil && !errors.Is(err, target) {
		t.Errorf("errors.Is(err, %v) = false; err = %v", target, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q does not mention %q", err, c)
		}
	}
}

// ---------------------------------------------------------------- supersteps

// Mirrors test_pregel.py::test_invoke_two_processes_in_out: a node sees what
// another node wrote only from the next superstep on, never in the same one.
// The node reached by two edges in one step runs once (as node_d in
// test_pregel.py::test_overwrite_parallel).
func TestFlowSuperstepVisibility(t *testing.T) {
	x := graph.Value[string]("x")
	report := func(name string) graph.NodeFunc {
		return func(_ context.Context, s graph.State) (graph.Update, error) {
			return flowTrail.Write([]string{name + " saw x=" + x.Get(s) + " trail=" + strings.Join(flowTrail.Get(s), ",")}), nil
		}
	}
	g := flowCompile(t, graph.New(x, flowTrail).AddNode(
		"writer", func(context.Context, graph.State) (graph.Update, error) {
			return x.Write("new").And(flowTrail.Write([]string{"w"})), nil
		}, nil).AddNode(

		"reader", report("reader"), nil).AddNode(

		"after", report("after"), nil).
		AddEdge(graph.START, "writer").AddEdge(graph.START, "reader").
		AddEdge("writer", "after").AddEdge("reader", "after"))
	s := flowRun(t, g, x.Write("old").And(flowTrail.Write([]string{"in"})))
	flowDiff(t, "trail", []string{
		"in",
		"reader saw x=old trail=in",
		"w",
		"after saw x=new trail=in,reader saw x=old trail=in,w",
	}, flowTrail.Get(s))
	if got := x.Get(s); got != "new" {
		t.Errorf("x = %q, want new", got)
	}
}

// Mirrors test_pregel.py::test_graph_validation (a->b, a->c both write a
// last-value key) and test_pregel.py::test_invoke_two_processes_two_in_two_out_invalid
// (the same through a conditional entry point): two writes to a Value channel
// in one step fail the run, and the error names the key. A single node
// writing the key twice fails the same way (LastValue gets two values).
func TestFlowConcurrentValueWritesFail(t *testing.T) {
	hello := graph.Value[string]("hello")
	say := func(v string) graph.NodeFunc {
		return func(context.Context, graph.State) (graph.Update, error) { return hello.Write(v), nil }
	}
	cases := []struct {
		name  string
		build func(after graph.NodeFunc) *graph.Builder
	}{
		{"parallel edges", func(after graph.NodeFunc) *graph.Builder {
			return graph.New(hello).AddNode(
				"a", flowNoop, nil).AddNode(
				"b", say("b"), nil).AddNode(
				"c", say("c"), nil).AddNode(
				"d", after, nil).
				AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").
				AddEdge("b", "d").AddEdge("c", "d")
		}},
		{"conditional entry point", func(after graph.NodeFunc) *graph.Builder {
			return graph.New(hello).AddNode(
				"b", say("b"), nil).AddNode(
				"c", say("c"), nil).AddNode(
				"d", after, nil).AddConditionalEdges(

				graph.START, func(context.Context, graph.State) (graph.Route, error) {
					return graph.To("b", "c"), nil
				}, nil).
				AddEdge("b", "d").AddEdge("c", "d")
		}},
		{"one node writes twice", func(after graph.NodeFunc) *graph.Builder {
			return graph.New(hello).AddNode(
				"a", func(context.Context, graph.State) (graph.Update, error) {
					return hello.Write("x").And(hello.Write("y")), nil
				}, nil).AddNode(

				"d", after, nil).
				AddEdge(graph.START, "a").AddEdge("a", "d")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ranAfter atomic.Bool
			after := func(context.Context, graph.State) (graph.Update, error) {
				ranAfter.Store(true)
				return graph.Update{}, nil
			}
			g := flowCompile(t, tc.build(after))
			_, err := g.Invoke(context.Background(), graph.Input(), nil)
			flowWantErr(t, err, graph.ErrInvalidUpdate, `"hello"`)
			if ranAfter.Load() {
				t.Error("the node after the failed step ran")
			}
		})
	}
}

// Mirrors test_pregel.py::test_invoke_two_processes_two_in_two_out_valid: the
// same parallel writes to a Topic are all kept, in task-path order.
func TestFlowTopicCollectsParallelWrites(t *testing.T) {
	out := graph.Topic[int]("out", nil)
	var seen []int
	g := flowCompile(t, graph.New(out).AddNode(
		"one", func(context.Context, graph.State) (graph.Update, error) { return out.Write(1), nil }, nil).AddNode(

		"two", func(context.Context, graph.State) (graph.Update, error) { return out.Write(2, 3), nil }, nil).AddNode(

		"sink", func(_ context.Context, s graph.State) (graph.Update, error) {
			seen = out.Get(s)
			return graph.Update{}, nil
		}, nil).
		AddEdge(graph.START, "two").AddEdge(graph.START, "one").
		AddJoin([]string{"one", "two"}, "sink"))
	flowRun(t, g, graph.Input())
	flowDiff(t, "topic seen by sink", []int{1, 2, 3}, seen)
}

// Mirrors test_pregel.py::test_conditional_state_graph_with_list_edge_inputs
// (START->A, START->B, [A,B]->END gives ["A","B"]): a reducer folds the writes
// of one step in task-path order, pull tasks by node name, whatever order the
// tasks finish in and whatever order the nodes were added in. Here the nodes
// finish in the reverse of name order.
func TestFlowReduceOrderIsNameOrderNotCompletionOrder(t *testing.T) {
	zetaDone, midDone := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var finished []string
	finish := func(name string) {
		mu.Lock()
		finished = append(finished, name)
		mu.Unlock()
	}
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"zeta", func(context.Context, graph.State) (graph.Update, error) {
			finish("zeta")
			close(zetaDone)
			return flowTrail.Write([]string{"zeta"}), nil
		}, nil).AddNode(

		"mid", func(context.Context, graph.State) (graph.Update, error) {
			<-zetaDone
			time.Sleep(2 * time.Millisecond)
			finish("mid")
			close(midDone)
			return flowTrail.Write([]string{"mid"}), nil
		}, nil).AddNode(

		"alpha", func(context.Context, graph.State) (graph.Update, error) {
			<-midDone
			time.Sleep(2 * time.Millisecond)
			finish("alpha")
			return flowTrail.Write([]string{"alpha"}), nil
		}, nil).
		AddEdge(graph.START, "zeta").AddEdge(graph.START, "mid").AddEdge(graph.START, "alpha").
		AddJoin([]string{"zeta", "mid", "alpha"}, graph.END))
	s := flowRun(t, g, flowTrail.Write([]string{"in"}))
	flowDiff(t, "finish order", []string{"zeta", "mid", "alpha"}, finished)
	flowDiff(t, "reducer order", []string{"in", "alpha", "mid", "zeta"}, flowTrail.Get(s))
}

// Mirrors test_pregel.py::test_concurrent_emit_sends: in a step with pull and
// Send (push) tasks, the pull tasks' writes come first (by name), then the
// Sends' by index, the index following the order the Sends were written in
// (task-path order of the nodes that sent them). Each Send task here finishes
// only after the one with the next index, and the pull task last of all.
func TestFlowReduceOrderSendsByIndex(t *testing.T) {
	done := map[int]chan struct{}{}
	for i := 1; i <= 5; i++ {
		done[i] = make(chan struct{})
	}
	work := func(_ context.Context, s graph.State) (graph.Update, error) {
		i := flowItem.Get(s)
		<-done[i+1]
		close(done[i])
		return flowTrail.Write([]string{fmt.Sprintf("work|%d", i)}), nil
	}
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"fanA", flowSay("fanA"), nil).AddNode(

		"fanB", flowSay("fanB"), nil).
		AddNode(

			"work", work, &graph.NodeOptions{Input: []graph.Channel{flowItem}}).AddNode(

		"solo", func(context.Context, graph.State) (graph.Update, error) {
			<-done[1]
			return flowTrail.Write([]string{"solo"}), nil
		}, nil).AddNode(

		"tail", flowSay("tail"), nil).
		AddEdge(graph.START, "fanB").AddEdge(graph.START, "fanA").AddConditionalEdges(

		"fanA", func(context.Context, graph.State) (graph.Route, error) {
			return graph.Sends(flowSend("work", 1), flowSend("work", 2)).And(graph.To("solo")), nil
		}, nil).AddConditionalEdges(

		"fanB", func(context.Context, graph.State) (graph.Route, error) {
			return graph.Sends(flowSend("work", 3), flowSend("work", 4)), nil
		}, nil).AddConditionalEdges(

		"work", func(context.Context, graph.State) (graph.Route, error) {
			return graph.To("tail"), nil
		}, nil))
	close(done[5])
	s := flowRun(t, g, flowTrail.Write([]string{"in"}))
	flowDiff(t, "trail", []string{"in", "fanA", "fanB", "solo", "work|1", "work|2", "work|3", "work|4", "tail"}, flowTrail.Get(s))
}

// ---------------------------------------------------------------- Overwrite

// Mirrors test_pregel.py::test_overwrite_sequential: an Overwrite replaces
// the accumulated value instead of going through the reducer. (LangGraph's
// {"__overwrite__": v} dict form has no weft counterpart in node returns;
// weft uses it only to store Overwrite in pending writes.)
func TestFlowOverwriteSequential(t *testing.T) {
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"first", flowSay("first"), nil).AddNode(

		"second", func(context.Context, graph.State) (graph.Update, error) {
			return flowTrail.Overwrite([]string{"second"}), nil
		}, nil).
		AddEdge(graph.START, "first").AddEdge("first", "second"))
	s := flowRun(t, g, flowTrail.Write([]string{"in"}))
	flowDiff(t, "trail", []string{"second"}, flowTrail.Get(s))
}

// Mirrors test_pregel.py::test_overwrite_parallel: one Overwrite in a step
// wins the whole step: the other writes of the step are dropped whether they
// come before or after it in task order; the next step's writes fold in.
func TestFlowOverwriteParallel(t *testing.T) {
	for _, overwriter := range []string{"left", "right"} {
		t.Run("overwrite from "+overwriter, func(t *testing.T) {
			side := func(name string) graph.NodeFunc {
				return func(context.Context, graph.State) (graph.Update, error) {
					if name == overwriter {
						return flowTrail.Overwrite([]string{name}), nil
					}
					return flowTrail.Write([]string{name}), nil
				}
			}
			g := flowCompile(t, graph.New(flowTrail).AddNode(
				"first", flowSay("first"), nil).AddNode(

				"left", side("left"), nil).AddNode(

				"right", side("right"), nil).AddNode(

				"last", flowSay("last"), nil).
				AddEdge(graph.START, "first").
				AddEdge("first", "left").AddEdge("first", "right").
				AddEdge("left", "last").AddEdge("right", "last"))
			s := flowRun(t, g, flowTrail.Write([]string{"in"}))
			flowDiff(t, "trail", []string{overwriter, "last"}, flowTrail.Get(s))
		})
	}
}

// Mirrors test_pregel.py::test_overwrite_parallel_error: two Overwrites of
// one channel in one step fail the run.
func TestFlowOverwriteParallelError(t *testing.T) {
	over := func(name string) graph.NodeFunc {
		return func(context.Context, graph.State) (graph.Update, error) {
			return flowTrail.Overwrite([]string{name}), nil
		}
	}
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"first", flowSay("first"), nil).AddNode(

		"left", over("left"), nil).AddNode(

		"right", over("right"), nil).
		AddEdge(graph.START, "first").
		AddEdge("first", "left").AddEdge("first", "right"))
	_, err := g.Invoke(context.Background(), flowTrail.Write([]string{"in"}), nil)
	flowWantErr(t, err, graph.ErrInvalidUpdate, `"trail"`, "Overwrite")
}

// ---------------------------------------------------------------- channels

// Mirrors test_channels.py::test_topic and test_channels.py::test_topic_accumulate:
// without Accumulate a Topic holds only the values written in the last step
// (and clears in a step nobody writes it); with Accumulate it keeps them all.
func TestFlowTopicAccumulate(t *testing.T) {
	cases := []struct {
		accumulate bool
		want       []string
		final      []int
	}{
		{false, []string{"p1=[]", "p2=[1 2]", "p3=[3]", "p4=[]"}, nil},
		{true, []string{"p1=[]", "p2=[1 2]", "p3=[1 2 3]", "p4=[1 2 3]"}, []int{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("accumulate=%v", tc.accumulate), func(t *testing.T) {
			top := graph.Topic[int]("top", &graph.TopicOptions{Accumulate: tc.accumulate})
			node := func(name string, publish ...int) graph.NodeFunc {
				return func(_ context.Context, s graph.State) (graph.Update, error) {
					u := flowTrail.Write([]string{fmt.Sprintf("%s=%v", name, top.Get(s))})
					if len(publish) > 0 {
						u = u.And(top.Write(publish...))
					}
					return u, nil
				}
			}
			g := flowCompile(t, graph.New(top, flowTrail).AddSequence(
				graph.NamedNode{Name: "p1", Fn: node("p1", 1, 2)},
				graph.NamedNode{Name: "p2", Fn: node("p2", 3)},
				graph.NamedNode{Name: "p3", Fn: node("p3")},
				graph.NamedNode{Name: "p4", Fn: node("p4")},
			).AddEdge(graph.START, "p1"))
			s := flowRun(t, g, graph.Input())
			flowDiff(t, "trail", tc.want, flowTrail.Get(s))
			flowDiff(t, "final topic", tc.final, top.Get(s))
		})
	}
}

// Mirrors test_pregel.py::test_channel_values (an EphemeralValue input channel
// does not outlive its step): an Ephemeral value is visible only in the step
// after it was written, input included; two writes in one step fail.
func TestFlowEphemeralLastsOneStep(t *testing.T) {
	eph := graph.Ephemeral[string]("eph")
	node := func(name string, write bool) graph.NodeFunc {
		return func(_ context.Context, s graph.State) (graph.Update, error) {
			v, ok := eph.Lookup(s)
			if !ok {
				v = "-"
			}
			u := flowTrail.Write([]string{name + ":" + v})
			if write {
				u = u.And(eph.Write("from-" + name))
			}
			return u, nil
		}
	}
	t.Run("one step", func(t *testing.T) {
		g := flowCompile(t, graph.New(eph, flowTrail).AddSequence(
			graph.NamedNode{Name: "a", Fn: node("a", true)},
			graph.NamedNode{Name: "b", Fn: node("b", false)},
			graph.NamedNode{Name: "c", Fn: node("c", false)},
		).AddEdge(graph.START, "a"))
		s := flowRun(t, g, eph.Write("from-input"))
		flowDiff(t, "trail", []string{"a:from-input", "b:from-a", "c:-"}, flowTrail.Get(s))
		if s.Has("eph") {
			t.Errorf("final state still has the ephemeral value %q", eph.Get(s))
		}
	})
	t.Run("two writes in a step", func(t *testing.T) {
		g := flowCompile(t, graph.New(eph, flowTrail).AddNode(
			"p", node("p", true), nil).AddNode(
			"q", node("q", true), nil).
			AddEdge(graph.START, "p").AddEdge(graph.START, "q"))
		_, err := g.Invoke(context.Background(), graph.Input(), nil)
		flowWantErr(t, err, graph.ErrInvalidUpdate, `"eph"`)
	})
}

// ---------------------------------------------------------------- joins and deferred nodes

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge (the
// run part): a join waits for branches of different lengths and runs its
// target once, in the step after the last source finished.
func TestFlowJoinWaitsForBranchesOfDifferentLengths(t *testing.T) {
	var answers atomic.Int32
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"rewrite", flowAt("rewrite"), nil).AddNode(

		"analyze", flowAt("analyze"), nil).AddNode(

		"fetchOne", flowAt("fetchOne"), nil).AddNode(

		"fetchTwo", flowAt("fetchTwo"), nil).AddNode(

		"answer", func(ctx context.Context, s graph.State) (graph.Update, error) {
			answers.Add(1)
			return flowAt("answer")(ctx, s)
		}, nil).
		AddEdge(graph.START, "rewrite").
		AddEdge("rewrite", "analyze").AddEdge("analyze", "fetchOne").
		AddEdge("rewrite", "fetchTwo").
		AddJoin([]string{"fetchOne", "fetchTwo"}, "answer").
		AddEdge("answer", graph.END))
	s := flowRun(t, g, graph.Input())
	flowDiff(t, "trail", []string{"rewrite@1", "analyze@2", "fetchTwo@2", "fetchOne@3", "answer@4"}, flowTrail.Get(s))
	if n := answers.Load(); n != 1 {
		t.Errorf("answer ran %d times, want 1", n)
	}
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple
// (a join followed by a conditional edge that loops back once): the join's
// barrier resets when its target runs, so in the second round the target
// waits for both sources again.
func TestFlowJoinResetsEachRound(t *testing.T) {
	rounds := graph.Reduce("rounds", func(a, b int) int { return a + b })
	g := flowCompile(t, graph.New(flowTrail, rounds).AddNode(
		"rewrite", flowSay("rewrite"), nil).AddNode(

		"analyze", flowSay("analyze"), nil).AddNode(

		"fetchOne", flowSay("fetchOne"), nil).AddNode(

		"fetchTwo", flowSay("fetchTwo"), nil).AddNode(

		"decide", func(_ context.Context, s graph.State) (graph.Update, error) {
			return flowTrail.Write([]string{fmt.Sprintf("decide#%d", rounds.Get(s)+1)}).And(rounds.Write(1)), nil
		}, nil).AddNode(

		"answer", flowSay("answer"), nil).
		AddEdge(graph.START, "rewrite").
		AddEdge("rewrite", "analyze").AddEdge("analyze", "fetchOne").
		AddEdge("rewrite", "fetchTwo").
		AddJoin([]string{"fetchOne", "fetchTwo"}, "decide").AddConditionalEdges(

		"decide", func(_ context.Context, s graph.State) (graph.Route, error) {
			if rounds.Get(s) < 2 {
				return graph.To("again"), nil
			}
			return graph.To("done"), nil
		}, &graph.BranchOptions{PathMap: map[string]string{"again": "rewrite", "done": "answer"}}))
	s := flowRun(t, g, graph.Input())
	flowDiff(t, "trail", []string{
		"rewrite", "analyze", "fetchTwo", "fetchOne", "decide#1",
		"rewrite", "analyze", "fetchTwo", "fetchOne", "decide#2",
		"answer",
	}, flowTrail.Get(s))
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_defer_node (both
// the plain-edge and the waiting-edge variant): a deferred node runs once,
// after every other branch is done, even branches that do not lead to it,
// and in the step after the last one.
func TestFlowDeferredNodeRunsOnceAtTheEnd(t *testing.T) {
	cases := []struct {
		name  string
		wire  func(b *graph.Builder) *graph.Builder
		trail []string
	}{
		{"plain edges", func(b *graph.Builder) *graph.Builder {
			return b.AddEdge(graph.START, "rewrite").
				AddEdge("rewrite", "fetchOne").AddEdge("fetchOne", "analyze").
				AddEdge("rewrite", "fetchTwo").
				AddEdge("fetchOne", "answer").AddEdge("fetchTwo", "answer")
		}, []string{"rewrite@1", "fetchOne@2", "fetchTwo@2", "analyze@3", "answer@4"}},
		{"join", func(b *graph.Builder) *graph.Builder {
			return b.AddEdge(graph.START, "rewrite").
				AddEdge("rewrite", "fetchOne").AddEdge("fetchOne", "analyze").
				AddEdge("rewrite", "fetchTwo").
				AddJoin([]string{"fetchOne", "fetchTwo"}, "answer")
		}, []string{"rewrite@1", "fetchOne@2", "fetchTwo@2", "analyze@3", "answer@4"}},
		{"longest branch leads to it", func(b *graph.Builder) *graph.Builder {
			return b.AddEdge(graph.START, "rewrite").
				AddEdge("rewrite", "analyze").AddEdge("analyze", "fetchOne").AddEdge("fetchOne", "answer").
				AddEdge("rewrite", "fetchTwo").AddEdge("fetchTwo", "answer")
		}, []string{"rewrite@1", "analyze@2", "fetchTwo@2", "fetchOne@3", "answer@4"}},
		{"single chain", func(b *graph.Builder) *graph.Builder {
			return b.AddEdge(graph.START, "rewrite").AddEdge("rewrite", "answer").
				AddEdge("rewrite", "analyze").AddEdge("analyze", "fetchOne").AddEdge("analyze", "fetchTwo")
		}, []string{"rewrite@1", "analyze@2", "fetchOne@3", "fetchTwo@3", "answer@4"}},
		{"only an edge into it", func(b *graph.Builder) *graph.Builder {
			return b.AddEdge(graph.START, "rewrite").AddEdge("rewrite", "answer").AddNode(
				"unused", flowNoop, nil).
				AddEdge("answer", "unused").
				AddEdge("unused", "analyze").AddEdge("unused", "fetchOne").AddEdge("unused", "fetchTwo")
		}, []string{"rewrite@1", "answer@2", "analyze@4", "fetchOne@4", "fetchTwo@4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var answers atomic.Int32
			b := graph.New(flowTrail).AddNode(
				"rewrite", flowAt("rewrite"), nil).AddNode(

				"analyze", flowAt("analyze"), nil).AddNode(

				"fetchOne", flowAt("fetchOne"), nil).AddNode(

				"fetchTwo", flowAt("fetchTwo"), nil).
				AddNode(

					"answer", func(ctx context.Context, s graph.State) (graph.Update, error) {
						answers.Add(1)
						return flowAt("answer")(ctx, s)
					}, &graph.NodeOptions{Defer: true})

			g := flowCompile(t, tc.wire(b))
			s := flowRun(t, g, graph.Input())
			flowDiff(t, "trail", tc.trail, flowTrail.Get(s))
			if n := answers.Load(); n != 1 {
				t.Errorf("deferred node ran %d times, want 1", n)
			}
		})
	}
}

// ---------------------------------------------------------------- conditional edges and Send

// Mirrors test_pregel.py::test_callable_in_conditional_edges_with_no_path_map,
// test_pregel.py::test_function_in_conditional_edges_with_no_path_map and
// test_pregel.py::test_cond_edge_after_send: a router may return one node,
// several (they run in parallel), END, nothing, path-map keys, Sends, or a
// mix of names and Sends. Pull targets' writes come before Send targets',
// Sends by index.
func TestFlowConditionalEdgeResults(t *testing.T) {
	cases := []struct {
		name    string
		route   graph.Route
		pathMap map[string]string
		want    []string
	}{
		{"one name", graph.To("b"), nil, []string{"src", "b"}},
		{"several names", graph.To("c", "b"), nil, []string{"src", "b", "c"}},
		{"END", graph.To(graph.END), nil, []string{"src"}},
		{"nothing", graph.Route{}, nil, []string{"src"}},
		{"path map", graph.To("yes"), map[string]string{"yes": "c", "no": "b"}, []string{"src", "c"}},
		{"path map several", graph.To("yes", "no"), map[string]string{"yes": "c", "no": "b"}, []string{"src", "b", "c"}},
		{"path map to END", graph.To("stop"), map[string]string{"stop": graph.END, "go": "b"}, []string{"src"}},
		{"sends", graph.Sends(flowSend("work", 1), flowSend("work", 2)), nil, []string{"src", "work|1", "work|2"}},
		{"names and sends", graph.Sends(flowSend("work", 2), flowSend("work", 1)).And(graph.To("c")), nil, []string{"src", "c", "work|2", "work|1"}},
		{"path map and sends", graph.To("yes").And(graph.Sends(flowSend("work", 5))), map[string]string{"yes": "b"}, []string{"src", "b", "work|5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			route := tc.route
			// Destinations keeps b, c and work reachable for the
			// reachability check when a path map names only some of them.
			g := flowCompile(t, graph.New(flowTrail).AddNode(
				"src", flowSay("src"), &graph.NodeOptions{Destinations: []string{"b", "c", "work"}}).AddNode(

				"b", flowSay("b"), nil).AddNode(

				"c", flowSay("c"), nil).
				AddNode(

					"work", flowWork, &graph.NodeOptions{Input: []graph.Channel{flowItem}}).
				AddEdge(graph.START, "src").AddConditionalEdges(

				"src", func(context.Context, graph.State) (graph.Route, error) {
					return route, nil
				}, &graph.BranchOptions{PathMap: tc.pathMap}))
			s := flowRun(t, g, graph.Input())
			flowDiff(t, "trail", tc.want, flowTrail.Get(s))
		})
	}
}

// Mirrors test_pregel.py::test_conditional_entrypoint_to_multiple_state_graph:
// a conditional edge from START returning a list starts those nodes in
// parallel.
func TestFlowConditionalEntryPointToSeveralNodes(t *testing.T) {
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"get_weather", flowAt("get_weather"), nil).AddNode(

		"get_news", flowAt("get_news"), nil).AddNode(

		"unused", flowAt("unused"), nil).AddConditionalEdges(

		graph.START, func(_ context.Context, s graph.State) (graph.Route, error) {
			if len(flowTrail.Get(s)) != 1 {
				return graph.Route{}, fmt.Errorf("router saw %v, want the input", flowTrail.Get(s))
			}
			return graph.To("get_weather", "get_news"), nil
		}, nil))
	s := flowRun(t, g, flowTrail.Write([]string{"in"}))
	flowDiff(t, "trail", []string{"in", "get_news@1", "get_weather@1"}, flowTrail.Get(s))
}

// Mirrors test_large_cases.py::test_conditional_state_graph (the router reads
// what its node just returned): a router sees the state as of the start of
// the step plus its own node's writes (reducers applied), but not the writes
// of other nodes in the same step.
func TestFlowRouterSeesOwnWritesOnly(t *testing.T) {
	x := graph.Value[string]("x")
	var mu sync.Mutex
	seen := map[string]string{}
	router := func(from string) graph.Router {
		return func(_ context.Context, s graph.State) (graph.Route, error) {
			mu.Lock()
			seen[from] = fmt.Sprintf("x=%s trail=%v", x.Get(s), flowTrail.Get(s))
			mu.Unlock()
			return graph.To(graph.END), nil
		}
	}
	g := flowCompile(t, graph.New(x, flowTrail).AddNode(
		"left", func(context.Context, graph.State) (graph.Update, error) {
			return x.Write("left-x").And(flowTrail.Write([]string{"left"})), nil
		}, nil).AddNode(

		"right", flowSay("right"), nil).
		AddEdge(graph.START, "left").AddEdge(graph.START, "right").AddConditionalEdges(

		"left", router("left"), nil).AddConditionalEdges(

		"right", router("right"), nil))
	flowRun(t, g, x.Write("in").And(flowTrail.Write([]string{"in"})))
	flowDiff(t, "what the routers saw", map[string]string{
		"left":  "x=left-x trail=[in left]",
		"right": "x=in trail=[in right]",
	}, seen)
}

// Mirrors the router-result checks of LangGraph's graph/_branch.py as used by
// test_pregel.py::test_graph_validation: START as a destination ("Branch did
// not return a valid destination"), a Send to END ("Cannot send a packet to
// the END node") and an unknown path-map key (KeyError) fail the run. Weft
// deliberately differs for unknown node names and Sends to unknown nodes,
// which LangGraph drops with a warning: weft fails the run. Errors name the
// node the edge leaves from.
func TestFlowBadRouterResultsFail(t *testing.T) {
	errRouter := errors.New("router broke")
	cases := []struct {
		name     string
		route    graph.Route
		err      error
		pathMap  map[string]string
		target   error
		contains []string
	}{
		{"unknown node", graph.To("nowhere"), nil, nil, graph.ErrInvalidUpdate, []string{`"nowhere"`}},
		{"unknown path map key", graph.To("maybe"), nil, map[string]string{"yes": "after"}, graph.ErrInvalidUpdate, []string{`"maybe"`}},
		{"START", graph.To(graph.START), nil, nil, graph.ErrInvalidUpdate, []string{graph.START}},
		{"send to END", graph.Sends(graph.Send{Node: graph.END}), nil, nil, graph.ErrInvalidUpdate, []string{"END"}},
		{"send to unknown node", graph.Sends(graph.Send{Node: "ghost"}), nil, nil, graph.ErrInvalidUpdate, []string{`"ghost"`}},
		{"router error", graph.Route{}, errRouter, nil, errRouter, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ranAfter atomic.Bool
			g := flowCompile(t, graph.New(flowTrail).AddNode(
				"src", flowSay("src"), &graph.NodeOptions{Destinations: []string{"after"}}).AddNode(

				"after", func(context.Context, graph.State) (graph.Update, error) {
					ranAfter.Store(true)
					return graph.Update{}, nil
				}, nil).
				AddEdge(graph.START, "src").AddConditionalEdges(

				"src", func(context.Context, graph.State) (graph.Route, error) {
					return tc.route, tc.err
				}, &graph.BranchOptions{PathMap: tc.pathMap}))
			_, err := g.Invoke(context.Background(), graph.Input(), nil)
			flowWantErr(t, err, tc.target, tc.contains...)
			var ne *graph.NodeError
			if !errors.As(err, &ne) || ne.Node != "src" {
				t.Errorf("error %v is not a *graph.NodeError for node src", err)
			}
			if ranAfter.Load() {
				t.Error("a node ran after the bad route")
			}
		})
	}
}

// Mirrors test_pregel.py::test_cond_edge_after_send (map-reduce): Sends fan
// out one task per item, each seeing only its Send's input, not the graph's
// state; their writes are reduced in Send order and the node after them runs
// once with the reduced result.
func TestFlowSendMapReduce(t *testing.T) {
	total := graph.Reduce("total", func(a, b int) int { return a + b })
	var mu sync.Mutex
	var keys [][]string
	g := flowCompile(t, graph.New(flowTrail, total).AddNode(
		"plan", flowSay("plan"), nil).
		AddNode(

			"square", func(_ context.Context, s graph.State) (graph.Update, error) {
				mu.Lock()
				keys = append(keys, s.Keys())
				mu.Unlock()
				i := flowItem.Get(s)
				return flowTrail.Write([]string{fmt.Sprintf("sq|%d", i)}).And(total.Write(i * i)), nil
			}, &graph.NodeOptions{Input: []graph.Channel{flowItem}}).AddNode(

		"gather", func(_ context.Context, s graph.State) (graph.Update, error) {
			return flowTrail.Write([]string{fmt.Sprintf("gather total=%d", total.Get(s))}), nil
		}, nil).
		AddEdge(graph.START, "plan").AddConditionalEdges(

		"plan", func(context.Context, graph.State) (graph.Route, error) {
			var sends []graph.Send
			for i := 1; i <= 4; i++ {
				sends = append(sends, flowSend("square", i))
			}
			return graph.Sends(sends...), nil
		}, nil).
		AddEdge("square", "gather"))
	s := flowRun(t, g, graph.Input())
	flowDiff(t, "trail", []string{"plan", "sq|1", "sq|2", "sq|3", "sq|4", "gather total=30"}, flowTrail.Get(s))
	for _, k := range keys {
		flowDiff(t, "keys a Send target sees", []string{"item"}, k)
	}
}

// Mirrors test_pregel.py::test_send_sequences: a Send target may itself send
// (here by returning graph.SendTo), giving further steps of push tasks.
func TestFlowSendSequences(t *testing.T) {
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"one", func(context.Context, graph.State) (graph.Update, error) {
			return flowTrail.Write([]string{"one"}).And(graph.SendTo(flowSend("work", 1), flowSend("work", 2))), nil
		}, &graph.NodeOptions{Destinations: []string{"work"}}).AddNode(

		"work", func(ctx context.Context, s graph.State) (graph.Update, error) {
			u, _ := flowWork(ctx, s)
			if i := flowItem.Get(s); i <= 2 {
				u = u.And(graph.SendTo(flowSend("work", i+10)))
			}
			return u, nil
		}, &graph.NodeOptions{Input: []graph.Channel{flowItem}}).
		AddEdge(graph.START, "one"))
	s := flowRun(t, g, graph.Input())
	flowDiff(t, "trail", []string{"one", "work|1", "work|2", "work|11", "work|12"}, flowTrail.Get(s))
}

// ---------------------------------------------------------------- Goto

// Mirrors test_pregel.py::test_multistep_plan: a node's Goto with several
// nodes runs them in parallel in the next step; the planner they all lead
// back to runs once per round.
func TestFlowGotoListRunsInParallel(t *testing.T) {
	round := graph.Value[int]("round")
	var planner atomic.Int32
	g := flowCompile(t, graph.New(flowTrail, round).AddNode(
		"planner", func(_ context.Context, s graph.State) (graph.Update, error) {
			planner.Add(1)
			r := round.Get(s)
			u := flowTrail.Write([]string{fmt.Sprintf("planner@%d", r)}).And(round.Write(r + 1))
			switch r {
			case 0:
				return u.Goto("research", "draft"), nil
			case 1:
				return u.Goto("review"), nil
			}
			return u, nil
		}, &graph.NodeOptions{Destinations: []string{"research", "draft", "review"}}).AddNode(

		"research", flowAt("research"), nil).AddNode(

		"draft", flowAt("draft"), nil).AddNode(

		"review", flowAt("review"), nil).
		AddEdge(graph.START, "planner").
		AddEdge("research", "planner").AddEdge("draft", "planner").AddEdge("review", "planner"))
	s := flowRun(t, g, graph.Input())
	flowDiff(t, "trail", []string{"planner@0", "draft@2", "research@2", "planner@1", "review@4", "planner@2"}, flowTrail.Get(s))
	if n := planner.Load(); n != 3 {
		t.Errorf("planner ran %d times, want 3", n)
	}
}

// Mirrors the Command semantics exercised by
// test_pregel.py::test_command_goto_with_static_breakpoints (goto target and
// static-edge target both run): a node's static edges still fire alongside
// its Goto; Goto(END) adds nothing; Goto to an unknown node fails the run
// (weft deliberately differs: LangGraph drops the write with a warning).
func TestFlowGotoWithStaticEdges(t *testing.T) {
	build := func(goto_ ...string) *graph.Graph {
		return flowCompile(t, graph.New(flowTrail).AddNode(
			"a", func(context.Context, graph.State) (graph.Update, error) {
				return flowTrail.Write([]string{"a"}).Goto(goto_...), nil
			}, &graph.NodeOptions{Destinations: []string{"c"}}).AddNode(

			"b", flowSay("b"), nil).AddNode(

			"c", flowSay("c"), nil).
			AddEdge(graph.START, "a").AddEdge("a", "b"))
	}
	t.Run("goto and edge", func(t *testing.T) {
		s := flowRun(t, build("c"), graph.Input())
		flowDiff(t, "trail", []string{"a", "b", "c"}, flowTrail.Get(s))
	})
	t.Run("goto END", func(t *testing.T) {
		s := flowRun(t, build(graph.END), graph.Input())
		flowDiff(t, "trail", []string{"a", "b"}, flowTrail.Get(s))
	})
	t.Run("goto unknown node", func(t *testing.T) {
		_, err := build("nowhere").Invoke(context.Background(), graph.Input(), nil)
		flowWantErr(t, err, graph.ErrInvalidUpdate, `"nowhere"`)
		var ne *graph.NodeError
		if !errors.As(err, &ne) || ne.Node != "a" {
			t.Errorf("error %v is not a *graph.NodeError for node a", err)
		}
	})
}

// Mirrors test_pregel.py::test_multiple_updates, test_pregel.py::test_root_mixed_return
// and test_pregel.py::test_multiple_writes_same_channel_from_same_node:
// several writes to one key from one node (And) reach the reducer in order,
// before the writes of nodes later in task order, and the updates stream
// shows them all, in order.
func TestFlowSeveralWritesToOneKeyFromOneNode(t *testing.T) {
	str := graph.Reduce("s", func(a, b string) string { return a + b })
	g := flowCompile(t, graph.New(str).AddNode(
		"node_a", func(context.Context, graph.State) (graph.Update, error) {
			return str.Write("a1").And(str.Write("a2")), nil
		}, nil).AddNode(

		"node_c", func(context.Context, graph.State) (graph.Update, error) { return str.Write("c"), nil }, nil).AddNode(

		"node_b", func(context.Context, graph.State) (graph.Update, error) { return str.Write("b"), nil }, nil).
		AddEdge(graph.START, "node_a").AddEdge(graph.START, "node_c").
		AddEdge("node_a", "node_b").AddEdge("node_c", "node_b"))
	s := flowRun(t, g, graph.Input())
	if got := str.Get(s); got != "a1a2cb" {
		t.Errorf("s = %q, want a1a2cb", got)
	}
	got := map[string][]graph.Write{}
	for _, u := range flowUpdates(t, g, graph.Input()) {
		got[u.Node] = u.Update.Writes()
	}
	flowDiff(t, "updates", map[string][]graph.Write{
		"node_a": {{Channel: "s", Value: "a1"}, {Channel: "s", Value: "a2"}},
		"node_c": {{Channel: "s", Value: "c"}},
		"node_b": {{Channel: "s", Value: "b"}},
	}, got)
}

// ---------------------------------------------------------------- recursion limit and managed values

func flowChain(n int, ran *atomic.Int32) *graph.Builder {
	b := graph.New(flowTrail)
	var nodes []graph.NamedNode
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, graph.NamedNode{Name: name, Fn: func(ctx context.Context, s graph.State) (graph.Update, error) {
			ran.Add(1)
			return flowSay(name)(ctx, s)
		}})
	}
	return b.AddSequence(nodes...).AddEdge(graph.START, "n1")
}

// Mirrors test_pregel.py::test_invoke_two_processes_in_out (recursion_limit=1
// on a two-step run raises GraphRecursionError) with LangGraph's exact
// arithmetic: a fresh run with limit L may take L supersteps counting the
// START step, so a chain of L-1 nodes finishes and a chain of L nodes fails,
// after its L-th node ran in step L.
func TestFlowRecursionLimitArithmetic(t *testing.T) {
	cases := []struct{ limit, nodes int }{
		{1, 1}, {2, 1}, {2, 2}, {5, 4}, {5, 5}, {25, 24}, {25, 25},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("limit %d, %d nodes", tc.limit, tc.nodes), func(t *testing.T) {
			var ran atomic.Int32
			g := flowCompile(t, flowChain(tc.nodes, &ran))
			opts := graph.RunOptions{RecursionLimit: tc.limit}
			if tc.limit == graph.DefaultRecursionLimit {
				opts = graph.RunOptions{} // the default is 25
			}
			_, err := g.Invoke(context.Background(), graph.Input(), &opts)
			if n := int(ran.Load()); n != tc.nodes {
				t.Errorf("%d nodes ran, want all %d", n, tc.nodes)
			}
			if tc.nodes < tc.limit {
				if err != nil {
					t.Fatalf("Invoke: %v", err)
				}
				return
			}
			flowWantErr(t, err, graph.ErrRecursionLimit, fmt.Sprintf("limit of %d", tc.limit))
			var re *graph.RecursionError
			if !errors.As(err, &re) || re.Limit != tc.limit {
				t.Errorf("error %v is not a *graph.RecursionError with Limit %d", err, tc.limit)
			}
		})
	}
	t.Run("limit below 1", func(t *testing.T) {
		var ran atomic.Int32
		g := flowCompile(t, flowChain(1, &ran))
		_, err := g.Invoke(context.Background(), graph.Input(), &graph.RunOptions{RecursionLimit: -1})
		flowWantErr(t, err, graph.ErrInvalidInput)
		if ran.Load() != 0 {
			t.Error("a node ran")
		}
	})
}

// A graph compiled with a RecursionLimit gives its runs that limit unless a
// run names its own (LangGraph's graph.with_config(recursion_limit=...)); a
// negative one is refused at Compile.
func TestFlowCompiledRecursionLimit(t *testing.T) {
	var ran atomic.Int32
	g := flowCompile(t, flowChain(30, &ran), graph.CompileOptions{RecursionLimit: 40})
	if _, err := g.Invoke(context.Background(), graph.Input(), nil); err != nil {
		t.Fatalf("30 steps under the graph's limit of 40: %v", err)
	}
	_, err := g.Invoke(context.Background(), graph.Input(), &graph.RunOptions{RecursionLimit: 10})
	flowWantErr(t, err, graph.ErrRecursionLimit, "limit of 10")
	_, err = flowChain(1, &ran).Compile(&graph.CompileOptions{RecursionLimit: -1})
	flowWantErr(t, err, graph.ErrInvalidGraph, "RecursionLimit")
}

// Mirrors test_pregel.py::test_invoke_two_processes_in_out (GraphRecursionError
// on a run that does not stop): a self-loop with limit L runs its node in
// steps 1..L, L times, then fails naming the limit.
func TestFlowRecursionLimitStopsLoop(t *testing.T) {
	var ran atomic.Int32
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"spin", func(context.Context, graph.State) (graph.Update, error) {
			ran.Add(1)
			return graph.Update{}, nil
		}, nil).
		AddEdge(graph.START, "spin").AddEdge("spin", "spin"))
	_, err := g.Invoke(context.Background(), graph.Input(), &graph.RunOptions{RecursionLimit: 7})
	flowWantErr(t, err, graph.ErrRecursionLimit, "limit of 7")
	var re *graph.RecursionError
	if !errors.As(err, &re) || re.Limit != 7 {
		t.Errorf("error %v is not a *graph.RecursionError with Limit 7", err)
	}
	if n := ran.Load(); n != 7 {
		t.Errorf("spin ran %d times, want 7", n)
	}
}

// Mirrors LangGraph's managed values (managed/is_last_step.py; RemainingSteps
// = stop - step, IsLastStep = step == stop-1) as checked by
// test_large_cases.py::test_prebuilt_tool_chat: with limit L, the node in step
// s sees L-s remaining steps, and IsLastStep only in step L-1. Outside a node
// both report nothing.
func TestFlowRemainingStepsAndIsLastStep(t *testing.T) {
	rec := func(name string) graph.NodeFunc {
		return func(ctx context.Context, _ graph.State) (graph.Update, error) {
			return flowTrail.Write([]string{fmt.Sprintf("%s:remaining=%d,last=%v", name, graph.RemainingSteps(ctx), graph.IsLastStep(ctx))}), nil
		}
	}
	g := flowCompile(t, graph.New(flowTrail).AddSequence(
		graph.NamedNode{Name: "n1", Fn: rec("n1")},
		graph.NamedNode{Name: "n2", Fn: rec("n2")},
		graph.NamedNode{Name: "n3", Fn: rec("n3")},
	).AddEdge(graph.START, "n1"))
	s := flowRun(t, g, graph.Input(), graph.RunOptions{RecursionLimit: 4})
	flowDiff(t, "trail", []string{
		"n1:remaining=3,last=false",
		"n2:remaining=2,last=false",
		"n3:remaining=1,last=true",
	}, flowTrail.Get(s))
	s = flowRun(t, g, graph.Input())
	flowDiff(t, "trail with the default limit", []string{
		"n1:remaining=24,last=false",
		"n2:remaining=23,last=false",
		"n3:remaining=22,last=false",
	}, flowTrail.Get(s))
	if graph.RemainingSteps(context.Background()) != 0 || graph.IsLastStep(context.Background()) {
		t.Error("RemainingSteps/IsLastStep outside a node should report 0/false")
	}
}

// Mirrors test_large_cases.py::test_prebuilt_tool_chat (recursion_limit=2: the
// agent sees one remaining step and answers "need more steps" instead of
// failing): a looping node that checks IsLastStep ends the run gracefully.
func TestFlowIsLastStepEndsLoopGracefully(t *testing.T) {
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"agent", func(ctx context.Context, _ graph.State) (graph.Update, error) {
			if graph.IsLastStep(ctx) {
				return flowTrail.Write([]string{"sorry, need more steps"}), nil
			}
			return flowTrail.Write([]string{"think"}).Goto("agent"), nil
		}, nil).
		AddEdge(graph.START, "agent"))
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{2, []string{"sorry, need more steps"}},
		{4, []string{"think", "think", "sorry, need more steps"}},
	} {
		s := flowRun(t, g, graph.Input(), graph.RunOptions{RecursionLimit: tc.limit})
		flowDiff(t, fmt.Sprintf("trail with limit %d", tc.limit), tc.want, flowTrail.Get(s))
	}
}

// ---------------------------------------------------------------- retry, timeout, errors

// Mirrors test_retry.py::test_graph_with_single_retry_policy: a failing node
// is retried with exponential backoff (initial 2ms, factor 2, no jitter:
// waits of at least 2ms then 4ms) and the run succeeds on attempt 3; the
// attempt number is 1-based.
func TestFlowRetryAttemptsAndBackoff(t *testing.T) {
	var attempts []int
	var times []time.Time
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"flaky", func(ctx context.Context, _ graph.State) (graph.Update, error) {
			info, _ := graph.CurrentTask(ctx)
			attempts = append(attempts, info.Attempt)
			times = append(times, time.Now())
			if info.Attempt < 3 {
				return graph.Update{}, errors.New("try again")
			}
			return flowTrail.Write([]string{"ok"}), nil
		}, &graph.NodeOptions{Retry: &graph.RetryPolicy{
			InitialInterval: 2 * time.Millisecond, BackoffFactor: 2, MaxAttempts: 3, NoJitter: true,
		}}).
		AddEdge(graph.START, "flaky"))
	s := flowRun(t, g, graph.Input())
	flowDiff(t, "trail", []string{"ok"}, flowTrail.Get(s))
	flowDiff(t, "attempts", []int{1, 2, 3}, attempts)
	if len(times) == 3 {
		for i, min := range []time.Duration{2 * time.Millisecond, 4 * time.Millisecond} {
			if gap := times[i+1].Sub(times[i]); gap < min {
				t.Errorf("wait before attempt %d was %v, want at least %v", i+2, gap, min)
			}
		}
	}
}

// Mirrors test_retry.py::test_graph_with_max_attempts_exceeded: after
// MaxAttempts failures the run fails with the node's last error.
func TestFlowRetryGivesUpAfterMaxAttempts(t *testing.T) {
	errDown := errors.New("service down")
	var calls atomic.Int32
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"call", func(context.Context, graph.State) (graph.Update, error) {
			calls.Add(1)
			return graph.Update{}, errDown
		}, &graph.NodeOptions{Retry: &graph.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 4, NoJitter: true}}).
		AddEdge(graph.START, "call"))
	_, err := g.Invoke(context.Background(), graph.Input(), nil)
	flowWantErr(t, err, errDown)
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "call" {
		t.Errorf("error %v is not a *graph.NodeError for node call", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("node called %d times, want 4", n)
	}
}

// Mirrors test_retry.py::test_should_retry_on_callable and
// test_retry.py::test_graph_with_multiple_retry_policies (an error the policy
// does not match is not retried): RetryOn returning false stops at once.
func TestFlowRetryOnFalseStops(t *testing.T) {
	errPermanent := errors.New("permanent")
	errTransient := errors.New("transient")
	var calls atomic.Int32
	var seen []error
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"call", func(context.Context, graph.State) (graph.Update, error) {
			if calls.Add(1) == 1 {
				return graph.Update{}, errTransient
			}
			return graph.Update{}, errPermanent
		}, &graph.NodeOptions{Retry: &graph.RetryPolicy{
			InitialInterval: time.Millisecond, MaxAttempts: 5, NoJitter: true,
			RetryOn: func(err error) bool {
				seen = append(seen, err)
				return !errors.Is(err, errPermanent)
			},
		}}).
		AddEdge(graph.START, "call"))
	_, err := g.Invoke(context.Background(), graph.Input(), nil)
	flowWantErr(t, err, errPermanent)
	if n := calls.Load(); n != 2 {
		t.Errorf("node called %d times, want 2 (one retry, then RetryOn said no)", n)
	}
	if len(seen) != 2 || !errors.Is(seen[0], errTransient) {
		t.Errorf("RetryOn saw %v, want the transient then the permanent error", seen)
	}
}

// Mirrors test_retry.py::test_should_retry_default_retry_on: the default
// RetryOn retries ordinary errors but not programming errors. Weft's list
// differs from Python's exception classes: panics, ErrInvalidUpdate (also
// a write to a channel the graph lacks) and the other graph sentinels are
// not retried.
func TestFlowDefaultRetryOn(t *testing.T) {
	undeclared := graph.Value[int]("undeclared")
	cases := []struct {
		name  string
		fail  func() (graph.Update, error)
		calls int32
	}{
		{"ordinary error", func() (graph.Update, error) { return graph.Update{}, errors.New("flaky") }, 3},
		{"panic", func() (graph.Update, error) { panic("bug") }, 1},
		{"invalid update", func() (graph.Update, error) {
			return graph.Update{}, fmt.Errorf("bad shape: %w", graph.ErrInvalidUpdate)
		}, 1},
		{"write to undeclared channel", func() (graph.Update, error) { return undeclared.Write(1), nil }, 1},
		{"invalid input", func() (graph.Update, error) { return graph.Update{}, graph.ErrInvalidInput }, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			g := flowCompile(t, graph.New(flowTrail).AddNode(
				"call", func(context.Context, graph.State) (graph.Update, error) {
					calls.Add(1)
					return tc.fail()
				}, &graph.NodeOptions{Retry: &graph.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 3, NoJitter: true}}).
				AddEdge(graph.START, "call"))
			if _, err := g.Invoke(context.Background(), graph.Input(), nil); err == nil {
				t.Fatal("run succeeded, want an error")
			}
			if n := calls.Load(); n != tc.calls {
				t.Errorf("node called %d times, want %d", n, tc.calls)
			}
		})
	}
}

// Mirrors test_retry.py::test_arun_with_retry_timeout_fires_async and
// test_retry.py::test_state_graph_add_node_timeout_composes_with_retry: a
// node that runs past its Timeout fails with ErrNodeTimeout even when it
// ignores its context, and the run does not wait for it; timeouts are
// retried under a retry policy. (LangGraph allows node timeouts only on async
// nodes; every weft node can have one.)
func TestFlowNodeTimeout(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(release) }) }
	t.Cleanup(stop)
	safety := time.AfterFunc(10*time.Second, stop) // never hang the suite
	t.Cleanup(func() { safety.Stop() })

	for _, tc := range []struct {
		name  string
		retry *graph.RetryPolicy
		calls int32
	}{
		{"no retry", nil, 1},
		{"with retry", &graph.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 2, NoJitter: true}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			var ranAfter atomic.Bool
			g := flowCompile(t, graph.New(flowTrail).AddNode(
				"stuck", func(context.Context, graph.State) (graph.Update, error) {
					calls.Add(1)
					<-release
					return flowTrail.Write([]string{"late"}), nil
				}, &graph.NodeOptions{Timeout: 10 * time.Millisecond, Retry: tc.retry}).AddNode(

				"after", func(context.Context, graph.State) (graph.Update, error) {
					ranAfter.Store(true)
					return graph.Update{}, nil
				}, nil).
				AddEdge(graph.START, "stuck").AddEdge("stuck", "after"))
			_, err := g.Invoke(context.Background(), graph.Input(), nil)
			flowWantErr(t, err, graph.ErrNodeTimeout)
			var ne *graph.NodeError
			if !errors.As(err, &ne) || ne.Node != "stuck" {
				t.Errorf("error %v is not a *graph.NodeError for node stuck", err)
			}
			if n := calls.Load(); n != tc.calls {
				t.Errorf("node called %d times, want %d", n, tc.calls)
			}
			if ranAfter.Load() {
				t.Error("the next node ran after a timeout")
			}
		})
	}
}

// Mirrors test_retry.py::test_graph_error_handler_runs_after_retry_exhaustion
// and test_retry.py::test_graph_error_handler_can_route_with_command: the
// OnError handler runs once retries are exhausted, gets the node's error and
// input, and its update (writes and Goto) replaces the node's result.
func TestFlowOnErrorRoutesWithGoto(t *testing.T) {
	foo := graph.Value[string]("foo")
	errAlways := errors.New("always fails")
	var attempts atomic.Int32
	var handled error
	var handlerInput string
	g := flowCompile(t, graph.New(foo).AddNode(
		"always_failing", func(context.Context, graph.State) (graph.Update, error) {
			attempts.Add(1)
			return graph.Update{}, errAlways
		}, &graph.NodeOptions{
			Retry:        &graph.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 2, NoJitter: true},
			Destinations: []string{"after_handler"},
			OnError: func(_ context.Context, s graph.State, err error) (graph.Update, error) {
				handled, handlerInput = err, foo.Get(s)
				return foo.Write("handled").Goto("after_handler"), nil
			},
		}).AddNode(

		"after_handler", func(_ context.Context, s graph.State) (graph.Update, error) {
			return foo.Write(foo.Get(s) + "_after"), nil
		}, nil).
		AddEdge(graph.START, "always_failing"))
	s := flowRun(t, g, foo.Write("start"))
	if got := foo.Get(s); got != "handled_after" {
		t.Errorf("foo = %q, want handled_after", got)
	}
	if n := attempts.Load(); n != 2 {
		t.Errorf("node attempted %d times, want 2", n)
	}
	if !errors.Is(handled, errAlways) {
		t.Errorf("handler got error %v, want one wrapping %v", handled, errAlways)
	}
	var ne *graph.NodeError
	if !errors.As(handled, &ne) || ne.Node != "always_failing" {
		t.Errorf("handler error %v is not a *graph.NodeError for the node", handled)
	}
	if handlerInput != "start" {
		t.Errorf("handler saw foo=%q, want the node's input start", handlerInput)
	}
}

// Mirrors test_retry.py::test_graph_error_handler_failure_fails_run: when the
// handler itself fails, the run fails with the handler's error.
func TestFlowOnErrorFailureFailsRun(t *testing.T) {
	errHandler := errors.New("handler failed")
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"always_failing", func(context.Context, graph.State) (graph.Update, error) {
			return graph.Update{}, errors.New("always fails")
		}, &graph.NodeOptions{OnError: func(context.Context, graph.State, error) (graph.Update, error) {
			return graph.Update{}, errHandler
		}}).
		AddEdge(graph.START, "always_failing"))
	_, err := g.Invoke(context.Background(), graph.Input(), nil)
	flowWantErr(t, err, errHandler, "handler failed")
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "always_failing" {
		t.Errorf("error %v is not a *graph.NodeError for the node", err)
	}
}

// Mirrors test_pregel_async.py::test_node_cancellation_on_other_node_exception:
// a node that fails (here by panicking) fails the run with its own error and
// cancels the context of the nodes running beside it. A panic becomes a
// *graph.PanicError inside a *graph.NodeError (Go has no exceptions).
func TestFlowPanicBecomesNodeError(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		g := flowCompile(t, graph.New(flowTrail).AddNode(
			"boom", func(context.Context, graph.State) (graph.Update, error) { panic("kaboom") }, nil).
			AddEdge(graph.START, "boom"))
		_, err := g.Invoke(context.Background(), graph.Input(), nil)
		flowCheckPanic(t, err, "boom")
	})
	t.Run("beside a waiting node", func(t *testing.T) {
		var canceled atomic.Bool
		// "a_patient" sorts before "boom", so the run must pick the
		// failing node's error over the sibling's cancellation.
		g := flowCompile(t, graph.New(flowTrail).AddNode(
			"boom", func(context.Context, graph.State) (graph.Update, error) { panic("kaboom") }, nil).AddNode(

			"a_patient", func(ctx context.Context, _ graph.State) (graph.Update, error) {
				select {
				case <-ctx.Done():
					canceled.Store(true)
					return graph.Update{}, ctx.Err()
				case <-time.After(5 * time.Second):
					return graph.Update{}, nil
				}
			}, nil).
			AddEdge(graph.START, "boom").AddEdge(graph.START, "a_patient"))
		_, err := g.Invoke(context.Background(), graph.Input(), nil)
		flowCheckPanic(t, err, "boom")
		if !canceled.Load() {
			t.Error("the sibling's context was not cancelled")
		}
	})
}

func flowCheckPanic(t *testing.T, err error, node string) {
	t.Helper()
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != node {
		t.Fatalf("error %v is not a *graph.NodeError for node %s", err, node)
	}
	var pe *graph.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v does not wrap a *graph.PanicError", err)
	}
	if pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Errorf("PanicError = {Value: %v, %d bytes of stack}, want kaboom and a stack", pe.Value, len(pe.Stack))
	}
}

// ---------------------------------------------------------------- cache

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple
// (with_cache=True: a cached node is not called again and its update carries
// {"__metadata__": {"cached": True}}): with a CachePolicy and a graph cache,
// a second run with the same input serves the node's writes from the cache,
// and the updates stream marks them Cached.
func TestFlowNodeCache(t *testing.T) {
	q := graph.Value[string]("q")
	var calls atomic.Int32
	g := flowCompile(t, graph.New(q, flowTrail).AddNode(
		"expensive", func(_ context.Context, s graph.State) (graph.Update, error) {
			calls.Add(1)
			return flowTrail.Write([]string{"answer to " + q.Get(s)}), nil
		}, &graph.NodeOptions{Cache: &graph.CachePolicy{}}).AddNode(

		"cheap", flowSay("cheap"), nil).
		AddEdge(graph.START, "expensive").AddEdge("expensive", "cheap"),
		graph.CompileOptions{Cache: graph.NewMemoryCache()})

	type upd struct {
		Node   string
		Cached bool
		Writes []graph.Write
	}
	run := func(question string) []upd {
		var out []upd
		for _, u := range flowUpdates(t, g, q.Write(question)) {
			out = append(out, upd{u.Node, u.Cached, u.Update.Writes()})
		}
		return out
	}
	want := func(question string, cached bool) []upd {
		return []upd{
			{"expensive", cached, []graph.Write{{Channel: "trail", Value: []string{"answer to " + question}}}},
			{"cheap", false, []graph.Write{{Channel: "trail", Value: []string{"cheap"}}}},
		}
	}
	flowDiff(t, "first run", want("why", false), run("why"))
	flowDiff(t, "second run", want("why", true), run("why"))
	if n := calls.Load(); n != 1 {
		t.Errorf("cached node called %d times over two equal runs, want 1", n)
	}
	s := flowRun(t, g, q.Write("why"))
	flowDiff(t, "state from the cache", []string{"answer to why", "cheap"}, flowTrail.Get(s))
	flowDiff(t, "other input", want("how", false), run("how"))
	if n := calls.Load(); n != 2 {
		t.Errorf("cached node called %d times, want 2 after a new input", n)
	}
}

// ---------------------------------------------------------------- messages

type flowMsg struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text"`
	Drop bool   `json:"drop,omitempty"`
}

func (m flowMsg) MessageID() string               { return m.ID }
func (m flowMsg) WithMessageID(id string) flowMsg { m.ID = id; return m }

// RemovesMessage makes a flowMsg with Drop set stand for LangChain's
// RemoveMessage.
func (m flowMsg) RemovesMessage() bool { return m.Drop }

var flowMsgs = graph.Messages[flowMsg]("messages")

func flowRm(id string) flowMsg { return flowMsg{ID: id, Drop: true} }

// flowApplyMessages starts a graph with left in the channel and applies
// right as one node's update.
func flowApplyMessages(t *testing.T, left []flowMsg, right graph.Update) ([]flowMsg, error) {
	t.Helper()
	g := flowCompile(t, graph.New(flowMsgs).AddNode(
		"apply", func(context.Context, graph.State) (graph.Update, error) { return right, nil }, nil).
		AddEdge(graph.START, "apply"))
	s, err := g.Invoke(context.Background(), flowMsgs.Write(left...), nil)
	return flowMsgs.Get(s), err
}

// Mirrors test_messages_state.py::{test_add_single_message,
// test_add_multiple_messages, test_update_existing_message,
// test_duplicates_in_input, test_duplicates_in_input_with_remove,
// test_remove_message, test_duplicate_remove_message, test_mixed_operations,
// test_delete_all, test_remove_all_messages}: the add-messages rule of a
// Messages channel.
func TestFlowMessagesReducer(t *testing.T) {
	m := func(id, text string) flowMsg { return flowMsg{ID: id, Text: text} }
	cases := []struct {
		name  string
		left  []flowMsg
		right graph.Update
		want  []flowMsg
	}{
		{"add one", nil, flowMsgs.Write(m("1", "hi")), []flowMsg{m("1", "hi")}},
		{"add several", []flowMsg{m("1", "hi")}, flowMsgs.Write(m("2", "yo"), m("3", "hey")),
			[]flowMsg{m("1", "hi"), m("2", "yo"), m("3", "hey")}},
		{"replace by id in place", []flowMsg{m("1", "hi"), m("2", "yo")}, flowMsgs.Write(m("1", "hello")),
			[]flowMsg{m("1", "hello"), m("2", "yo")}},
		{"duplicates in one write", nil, flowMsgs.Write(m("1", "first"), m("1", "second")),
			[]flowMsg{m("1", "second")}},
		{"remove then re-add in one write", []flowMsg{m("1", "hi")}, flowMsgs.Write(flowRm("1"), m("1", "again"), m("1", "again2")),
			[]flowMsg{m("1", "again2")}},
		{"re-added message keeps its place", []flowMsg{m("1", "a"), m("2", "b")}, flowMsgs.Write(flowRm("1"), m("1", "a2")),
			[]flowMsg{m("1", "a2"), m("2", "b")}},
		{"remove", []flowMsg{m("1", "hi"), m("2", "yo")}, flowMsgs.Remove("2"), []flowMsg{m("1", "hi")}},
		{"remove as a message", []flowMsg{m("1", "hi"), m("2", "yo")}, flowMsgs.Write(flowRm("1")), []flowMsg{m("2", "yo")}},
		{"duplicate remove", []flowMsg{m("1", "hi"), m("2", "yo")}, flowMsgs.Write(flowRm("2"), flowRm("2")), []flowMsg{m("1", "hi")}},
		{"mixed operations", []flowMsg{m("1", "hi"), m("2", "yo")}, flowMsgs.Write(m("1", "hi!"), flowRm("2"), m("3", "new")),
			[]flowMsg{m("1", "hi!"), m("3", "new")}},
		{"remove all", []flowMsg{m("1", "hi"), m("2", "yo")}, flowMsgs.RemoveAll(), nil},
		{"remove all then add", []flowMsg{m("1", "hi")}, flowMsgs.RemoveAll().And(flowMsgs.Write(m("9", "fresh"))),
			[]flowMsg{m("9", "fresh")}},
		{"only what follows the last remove-all", []flowMsg{m("1", "hi")},
			flowMsgs.Write(m("2", "gone"), flowRm(graph.RemoveAllMessages), m("3", "kept"), m("4", "kept too")),
			[]flowMsg{m("3", "kept"), m("4", "kept too")}},
		{"overwrite", []flowMsg{m("1", "hi")}, flowMsgs.Overwrite([]flowMsg{m("7", "only")}), []flowMsg{m("7", "only")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := flowApplyMessages(t, tc.left, tc.right)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if len(tc.want) == 0 && len(got) == 0 {
				return
			}
			flowDiff(t, "messages", tc.want, got)
		})
	}
}

// Mirrors test_messages_state.py::test_missing_ids: messages without an id
// get distinct ids, and an id-less message never replaces another.
func TestFlowMessagesMissingIDs(t *testing.T) {
	got, err := flowApplyMessages(t, []flowMsg{{Text: "old"}}, flowMsgs.Write(flowMsg{Text: "a"}, flowMsg{Text: "b"}))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d messages, want 3: %+v", len(got), got)
	}
	ids := map[string]bool{}
	for i, msg := range got {
		if msg.ID == "" {
			t.Errorf("message %d (%q) has no id", i, msg.Text)
		}
		ids[msg.ID] = true
		if want := []string{"old", "a", "b"}[i]; msg.Text != want {
			t.Errorf("message %d = %q, want %q", i, msg.Text, want)
		}
	}
	if len(ids) != 3 {
		t.Errorf("ids are not distinct: %+v", got)
	}
}

// Mirrors test_messages_state.py::test_remove_nonexistent_message: removing
// an id that is not in the list fails, naming the id.
func TestFlowMessagesRemoveUnknownID(t *testing.T) {
	for name, right := range map[string]graph.Update{
		"Remove":            flowMsgs.Remove("404"),
		"removal message":   flowMsgs.Write(flowRm("404")),
		"after own removal": flowMsgs.Remove("1").And(flowMsgs.Remove("1")),
	} {
		t.Run(name, func(t *testing.T) {
			id := "404"
			if name == "after own removal" {
				id = "1"
			}
			_, err := flowApplyMessages(t, []flowMsg{{ID: "1", Text: "hi"}}, right)
			flowWantErr(t, err, graph.ErrInvalidUpdate, `"`+id+`"`)
		})
	}
}

// Mirrors test_pregel.py::test_reducer_before_first_node: the run's input goes
// through the channel's reducer before the first node sees it (messages get
// ids), and a node that returns nothing leaves the state unchanged.
func TestFlowReducerBeforeFirstNode(t *testing.T) {
	var seen []flowMsg
	g := flowCompile(t, graph.New(flowMsgs).AddNode(
		"a", func(_ context.Context, s graph.State) (graph.Update, error) {
			seen = flowMsgs.Get(s)
			return graph.Update{}, nil
		}, nil).
		AddEdge(graph.START, "a"))
	s := flowRun(t, g, flowMsgs.Write(flowMsg{Text: "hello"}))
	if len(seen) != 1 || seen[0].Text != "hello" || seen[0].ID == "" {
		t.Fatalf("node saw %+v, want one message with an id", seen)
	}
	flowDiff(t, "final messages", seen, flowMsgs.Get(s))
	ups := flowUpdates(t, g, flowMsgs.Write(flowMsg{Text: "hello"}))
	if len(ups) != 1 || ups[0].Node != "a" || len(ups[0].Update.Writes()) != 0 {
		t.Errorf("updates = %+v, want one empty update from a", ups)
	}
}

// ---------------------------------------------------------------- compile-time validation

// Mirrors test_pregel.py::test_graph_validation: Compile rejects graphs with
// unknown nodes in edges (suggesting the closest name), no entry point,
// reserved or clashing names, and (a weft check LangGraph lacks) nodes no
// path from START reaches. Every error wraps ErrInvalidGraph.
func TestFlowCompileValidation(t *testing.T) {
	router := func(context.Context, graph.State) (graph.Route, error) { return graph.To(graph.END), nil }
	base := func() *graph.Builder {
		return graph.New(flowTrail).AddNode("summarize", flowNoop, nil).AddEdge(graph.START, "summarize")
	}
	cases := []struct {
		name     string
		build    func() *graph.Builder
		opts     graph.CompileOptions
		contains []string
	}{
		{"unknown edge target", func() *graph.Builder { return base().AddEdge("summarize", "sumarize") },
			graph.CompileOptions{}, []string{`"sumarize"`, `did you mean "summarize"`}},
		{"unknown edge source", func() *graph.Builder { return base().AddEdge("sumarise", "summarize") },
			graph.CompileOptions{}, []string{`"sumarise"`, `did you mean "summarize"`}},
		{"unknown join node", func() *graph.Builder { return base().AddJoin([]string{"summarize", "ghost"}, graph.END) },
			graph.CompileOptions{}, []string{`"ghost"`}},
		{"unknown conditional source", func() *graph.Builder { return base().AddConditionalEdges("ghost", router, nil) },
			graph.CompileOptions{}, []string{`"ghost"`}},
		{"unknown path map target", func() *graph.Builder {
			return base().AddConditionalEdges("summarize", router, &graph.BranchOptions{PathMap: map[string]string{"x": "summarise"}})
		}, graph.CompileOptions{}, []string{`"summarise"`, `did you mean "summarize"`}},
		{"unknown destination", func() *graph.Builder {
			return graph.New(flowTrail).AddNode("a", flowNoop, &graph.NodeOptions{Destinations: []string{"ghost"}}).AddEdge(graph.START, "a")
		}, graph.CompileOptions{}, []string{`"ghost"`}},
		{"no entry point", func() *graph.Builder { return graph.New(flowTrail).AddNode("a", flowNoop, nil) },
			graph.CompileOptions{}, []string{"entry point"}},
		{"unreachable node", func() *graph.Builder { return base().AddNode("island", flowNoop, nil) },
			graph.CompileOptions{}, []string{`"island"`, "unreachable"}},
		{"node named like a channel", func() *graph.Builder { return base().AddNode("trail", flowNoop, nil).AddEdge("summarize", "trail") },
			graph.CompileOptions{}, []string{`"trail"`, "same name"}},
		{"node named START", func() *graph.Builder { return base().AddNode(graph.START, flowNoop, nil) },
			graph.CompileOptions{}, []string{graph.START, "reserved"}},
		{"node named END", func() *graph.Builder { return base().AddNode(graph.END, flowNoop, nil) },
			graph.CompileOptions{}, []string{graph.END, "reserved"}},
		{"node name with |", func() *graph.Builder { return base().AddNode("a|b", flowNoop, nil) },
			graph.CompileOptions{}, []string{`"a|b"`}},
		{"node name with :", func() *graph.Builder { return base().AddNode("a:b", flowNoop, nil) },
			graph.CompileOptions{}, []string{`"a:b"`}},
		{"duplicate node", func() *graph.Builder { return base().AddNode("summarize", flowNoop, nil) },
			graph.CompileOptions{}, []string{`"summarize"`}},
		{"reserved channel name", func() *graph.Builder {
			return graph.New(graph.Value[int]("__secret")).AddNode("a", flowNoop, nil).AddEdge(graph.START, "a")
		}, graph.CompileOptions{}, []string{`"__secret"`, "reserved"}},
		{"channel named like a trigger", func() *graph.Builder {
			return graph.New(graph.Value[int]("branch:to:a")).AddNode("a", flowNoop, nil).AddEdge(graph.START, "a")
		}, graph.CompileOptions{}, []string{`"branch:to:a"`, "reserved"}},
		{"duplicate channel", func() *graph.Builder {
			return graph.New(flowTrail, graph.Value[int]("trail")).AddNode("a", flowNoop, nil).AddEdge(graph.START, "a")
		}, graph.CompileOptions{}, []string{`"trail"`}},
		{"edge out of END", func() *graph.Builder { return base().AddEdge(graph.END, "summarize") },
			graph.CompileOptions{}, []string{"END"}},
		{"edge into START", func() *graph.Builder { return base().AddEdge("summarize", graph.START) },
			graph.CompileOptions{}, []string{"START"}},
		{"cache policy without cache", func() *graph.Builder {
			return graph.New(flowTrail).AddNode("a", flowNoop, &graph.NodeOptions{Cache: &graph.CachePolicy{}}).AddEdge(graph.START, "a")
		}, graph.CompileOptions{}, []string{`"a"`, "Cache"}},
		{"interrupt names unknown node", base, graph.CompileOptions{InterruptBefore: []string{"sumarize"}},
			[]string{`"sumarize"`, `did you mean "summarize"`}},
		{"every problem at once", func() *graph.Builder { return base().AddEdge("summarize", "ghost1").AddEdge("ghost2", "summarize") },
			graph.CompileOptions{}, []string{`"ghost1"`, `"ghost2"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.build().Compile(&tc.opts)
			if g != nil {
				t.Error("Compile returned a graph along with the error")
			}
			flowWantErr(t, err, graph.ErrInvalidGraph, tc.contains...)
		})
	}
	t.Run("goto target listed in Destinations", func(t *testing.T) {
		g := flowCompile(t, graph.New(flowTrail).AddNode(
			"a", func(context.Context, graph.State) (graph.Update, error) { return graph.Goto("b"), nil }, &graph.NodeOptions{Destinations: []string{"b"}}).AddNode(

			"b", flowSay("b"), nil).
			AddEdge(graph.START, "a"))
		s := flowRun(t, g, graph.Input())
		flowDiff(t, "trail", []string{"b"}, flowTrail.Get(s))
	})
}

// ---------------------------------------------------------------- concurrency and cancellation

// Mirrors test_pregel_async.py::test_max_concurrency: RunOptions.MaxConcurrency
// caps how many tasks of a step run at once. Each task waits until two are
// running at once (or a generous timeout), so the peak is exactly the cap
// when the cap holds.
func TestFlowMaxConcurrency(t *testing.T) {
	var active, peak atomic.Int32
	two := make(chan struct{})
	var once sync.Once
	g := flowCompile(t, graph.New(flowTrail).AddNode(
		"fan", func(context.Context, graph.State) (graph.Update, error) {
			var sends []graph.Send
			for i := range 6 {
				sends = append(sends, flowSend("work", i))
			}
			return graph.SendTo(sends...), nil
		}, &graph.NodeOptions{Destinations: []string{"work"}}).AddNode(

		"work", func(ctx context.Context, s graph.State) (graph.Update, error) {
			n := active.Add(1)
			defer active.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			if n >= 2 {
				once.Do(func() { close(two) })
			}
			select {
			case <-two:
			case <-time.After(2 * time.Second):
			}
			return flowWork(ctx, s)
		}, &graph.NodeOptions{Input: []graph.Channel{flowItem}}).
		AddEdge(graph.START, "fan"))
	s := flowRun(t, g, graph.Input(), graph.RunOptions{MaxConcurrency: 2})
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency = %d, want 2", p)
	}
	flowDiff(t, "trail", []string{"work|0", "work|1", "work|2", "work|3", "work|4", "work|5"}, flowTrail.Get(s))
	_, err := g.Invoke(context.Background(), graph.Input(), &graph.RunOptions{MaxConcurrency: -1})
	flowWantErr(t, err, graph.ErrInvalidInput)
}

// Mirrors test_pregel_async.py::test_node_cancellation_on_external_cancel and
// test_pregel_async.py::test_cancel_graph_astream: cancelling the run's
// context stops the run, cancels the running nodes' contexts, runs no
// further step, and returns context.Canceled.
func TestFlowContextCancellation(t *testing.T) {
	t.Run("between steps", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var ranSecond atomic.Bool
		g := flowCompile(t, graph.New(flowTrail).AddNode(
			"first", func(context.Context, graph.State) (graph.Update, error) {
				cancel()
				return flowTrail.Write([]string{"first"}), nil
			}, nil).AddNode(

			"second", func(context.Context, graph.State) (graph.Update, error) {
				ranSecond.Store(true)
				return graph.Update{}, nil
			}, nil).
			AddEdge(graph.START, "first").AddEdge("first", "second"))
		_, err := g.Invoke(ctx, graph.Input(), nil)
		flowWantErr(t, err, context.Canceled)
		if ranSecond.Load() {
			t.Error("a step ran after the context was cancelled")
		}
	})
	for _, parallel := range []int{1, 3} {
		t.Run(fmt.Sprintf("during a step of %d nodes", parallel), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{}, parallel)
			var canceled, ranAfter atomic.Int32
			wait := func(ctx context.Context, _ graph.State) (graph.Update, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					canceled.Add(1)
					return graph.Update{}, ctx.Err()
				case <-time.After(5 * time.Second):
					return graph.Update{}, errors.New("context never cancelled")
				}
			}
			b := graph.New(flowTrail).AddNode("after", func(context.Context, graph.State) (graph.Update, error) {
				ranAfter.Add(1)
				return graph.Update{}, nil
			}, nil)

			for i := range parallel {
				name := fmt.Sprintf("w%d", i)
				b.AddNode(name, wait, nil).AddEdge(graph.START, name).AddEdge(name, "after")
			}
			g := flowCompile(t, b)
			go func() {
				for range parallel {
					<-started
				}
				cancel()
			}()
			_, err := g.Invoke(ctx, graph.Input(), nil)
			flowWantErr(t, err, context.Canceled)
			if ranAfter.Load() != 0 {
				t.Error("a step ran after the context was cancelled")
			}
			if parallel == 1 && canceled.Load() != 1 {
				t.Error("the running node's context was not cancelled")
			}
		})
	}
}

// opt returns the last of a test helper's optional options, or nil.
func opt[T any](o []T) *T {
	if len(o) == 0 {
		return nil
	}
	return &o[len(o)-1]
}
