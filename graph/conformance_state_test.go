package graph_test

// Conformance suite, second half: interrupts and resume, static
// breakpoints, durability, pending writes after failures, the state API
// (UpdateState, fork, replay, history), subgraphs, Send fan-out with
// interrupts, concurrent threads and cancellation.
//
// Every case names the LangGraph test whose behaviour it mirrors. The
// graphs are rebuilt for weft; no LangGraph code is reused. Identifiers in
// this file start with "cst" so they cannot clash with the other test
// files of the package.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// ---------------------------------------------------------------- helpers

func cstConcat(cur, upd []string) []string {
	out := make([]string, 0, len(cur)+len(upd))
	return append(append(out, cur...), upd...)
}

func cstSum(cur, upd int) int { return cur + upd }

// cstLog declares a fresh append-only list of strings: the usual "trail of
// what ran" channel of these tests.
func cstLog(name string) *graph.ReduceChannel[[]string] {
	return graph.Reduce(name, cstConcat)
}

// cstCalls counts node entries; nodes of one step run on goroutines.
type cstCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func newCstCalls() *cstCalls { return &cstCalls{n: map[string]int{}} }

func (c *cstCalls) hit(name string) {
	c.mu.Lock()
	c.n[name]++
	c.mu.Unlock()
}

func (c *cstCalls) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (c *cstCalls) all() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// cstStep is a node that counts its entry and appends its name to log.
func cstStep(log *graph.ReduceChannel[[]string], calls *cstCalls, name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		calls.hit(name)
		return log.Write([]string{name}), nil
	}
}

func cstCompile(t *testing.T, b *graph.Builder, co ...graph.CompileOptions) *graph.Graph {
	t.Helper()
	g, err := b.Compile(opt(co))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return g
}

func cstInvoke(t *testing.T, g *graph.Graph, in graph.Update, opts *graph.RunOptions) graph.State {
	t.Helper()
	s, err := g.Invoke(context.Background(), in, opts)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return s
}

func cstState(t *testing.T, g *graph.Graph, cfg checkpoint.Config, opts ...graph.StateOptions) graph.StateSnapshot {
	t.Helper()
	snap, err := g.GetState(context.Background(), cfg, opt(opts))
	if err != nil {
		t.Fatalf("GetState: %v", err)
	}
	return snap
}

func cstHistory(t *testing.T, g *graph.Graph, thread string, opts ...graph.HistoryOptions) []graph.StateSnapshot {
	t.Helper()
	var out []graph.StateSnapshot
	for snap, err := range g.GetStateHistory(context.Background(), thread, opt(opts)) {
		if err != nil {
			t.Fatalf("GetStateHistory: %v", err)
		}
		out = append(out, snap)
	}
	return out
}

func cstInterruptValues(its []graph.Interruption) []any {
	out := make([]any, len(its))
	for i, it := range its {
		out[i] = it.Value
	}
	return out
}

func cstDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func cstThread(id string) *graph.RunOptions { return &graph.RunOptions{ThreadID: id} }

func cstCfg(id string) checkpoint.Config { return checkpoint.Config{ThreadID: id} }

// ---------------------------------------------------------------- interrupts

// Mirrors test_pregel.py::test_node_before_interrupt_resume_graph_api (one
// question): the node that called interrupt() runs again from its top when
// resumed, so code before the interrupt runs twice, while the node before it
// does not run again.
func TestStateInterruptResumeRerunsNodeFromTop(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"prep", cstStep(trail, calls, "prep"), nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			ans, err := graph.Interrupt[string](ctx, "approve?")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{"ask:" + ans}), nil
		}, nil).AddNode(

		"after", cstStep(trail, calls, "after"), nil).
		AddEdge(graph.START, "prep").AddEdge("prep", "ask").AddEdge("ask", "after").AddEdge("after", graph.END),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	if len(out.Interrupts()) != 1 || out.Interrupts()[0].Value != "approve?" || out.Interrupts()[0].ID == "" {
		t.Fatalf("interrupts = %+v, want one with value \"approve?\" and an id", out.Interrupts())
	}
	cstDiff(t, "state at interrupt", []string{"in", "prep"}, trail.Get(out))
	cstDiff(t, "calls at interrupt", map[string]int{"prep": 1, "ask": 1}, calls.all())

	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next", []string{"ask"}, snap.Next)
	cstDiff(t, "snapshot interrupts", out.Interrupts(), snap.Interrupts)

	out = cstInvoke(t, g, graph.Resume("yes"), cstThread("t"))
	if len(out.Interrupts()) != 0 {
		t.Fatalf("interrupts after resume = %+v", out.Interrupts())
	}
	cstDiff(t, "final trail", []string{"in", "prep", "ask:yes", "after"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"prep": 1, "ask": 2, "after": 1}, calls.all())
	snap = cstState(t, g, cstCfg("t"))
	cstDiff(t, "next after finish", []string{}, snap.Next)
	cstDiff(t, "interrupts after finish", []graph.Interruption{}, snap.Interrupts)
}

// Mirrors test_pregel.py::test_node_before_multiple_interrupt_cycles_graph_api
// and test_multiple_interrupt_state_persistence: a node asking three
// questions is resumed three times; the k-th Interrupt call returns the
// k-th resume value, every resume re-runs the node from its top, all its
// interrupts share one id, and the state does not change until the node
// finally returns.
func TestStateSeveralInterruptsInOneNode(t *testing.T) {
	answers := cstLog("answers")
	calls := newCstCalls()
	var seenMu sync.Mutex
	var seen [][]string // answers the node held on each entry
	g := cstCompile(t, graph.New(answers).AddNode(
		"setup", cstStep(answers, calls, "setup"), nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			var got []string
			for _, topic := range []string{"red", "green", "blue"} {
				a, err := graph.Interrupt[string](ctx, "about "+topic+"?")
				if err != nil {
					seenMu.Lock()
					seen = append(seen, got)
					seenMu.Unlock()
					return graph.Update{}, err
				}
				got = append(got, topic+"="+a)
			}
			return answers.Write(got), nil
		}, nil).
		AddEdge(graph.START, "setup").AddEdge("setup", "ask"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, graph.Input(), cstThread("t"))
	cstDiff(t, "first question", []any{"about red?"}, cstInterruptValues(out.Interrupts()))
	id := out.Interrupts()[0].ID

	for i, step := range []struct{ answer, next string }{{"1", "about green?"}, {"2", "about blue?"}} {
		out = cstInvoke(t, g, graph.Resume(step.answer), cstThread("t"))
		cstDiff(t, fmt.Sprintf("question after resume %d", i+1), []any{step.next}, cstInterruptValues(out.Interrupts()))
		if got := out.Interrupts()[0].ID; got != id {
			t.Errorf("resume %d: interrupt id = %q, want the node's first id %q", i+1, got, id)
		}
		// Nothing is written while the node keeps asking.
		snap := cstState(t, g, cstCfg("t"))
		cstDiff(t, "answers while asking", []string{"setup"}, answers.Get(snap.Values))
		cstDiff(t, "next while asking", []string{"ask"}, snap.Next)
	}
	out = cstInvoke(t, g, graph.Resume("3"), cstThread("t"))
	cstDiff(t, "final answers", []string{"setup", "red=1", "green=2", "blue=3"}, answers.Get(out))
	cstDiff(t, "calls", map[string]int{"setup": 1, "ask": 4}, calls.all())
	cstDiff(t, "answers held on each interrupted entry", [][]string{nil, {"red=1"}, {"red=1", "green=2"}}, seen)
}

// cstTwoAskers builds START -> (a, b) in parallel, both asking a human, then
// a join into "done".
func cstTwoAskers(t *testing.T, calls *cstCalls) (*graph.Graph, *graph.ReduceChannel[[]string]) {
	trail := cstLog("trail")
	asker := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit(name)
			v, err := graph.Interrupt[string](ctx, "question for "+name)
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{name + ":" + v}), nil
		}
	}
	g := cstCompile(t, graph.New(trail).AddNode(
		"a", asker("a"), nil).AddNode(
		"b", asker("b"), nil).AddNode(

		"done", cstStep(trail, calls, "done"), nil).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").
		AddJoin([]string{"a", "b"}, "done"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	return g, trail
}

func cstIDsByValue(t *testing.T, its []graph.Interruption) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, it := range its {
		v, ok := it.Value.(string)
		if !ok {
			t.Fatalf("interrupt value %#v is not a string", it.Value)
		}
		m[v] = it.ID
	}
	return m
}

// Mirrors test_pregel.py::test_null_resume_disallowed_with_multiple_interrupts:
// two parallel nodes interrupt; one Resume value for both is refused with
// an error that says why, and leaves the thread as it was; a resume map keyed
// by interrupt id (ResumeByID) answers both.
func TestStateParallelInterruptsNeedResumeByID(t *testing.T) {
	calls := newCstCalls()
	g, trail := cstTwoAskers(t, calls)
	out := cstInvoke(t, g, graph.Input(), cstThread("t"))
	ids := cstIDsByValue(t, out.Interrupts())
	if len(ids) != 2 || ids["question for a"] == ids["question for b"] {
		t.Fatalf("want two interrupts with distinct ids, got %+v", out.Interrupts())
	}

	_, err := g.Invoke(context.Background(), graph.Resume("same for all"), cstThread("t"))
	if !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("single Resume with 2 pending interrupts: err = %v, want ErrInvalidInput", err)
	}
	for _, want := range []string{"2 interrupts are pending", "ResumeByID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	snap := cstState(t, g, cstCfg("t"))
	if len(snap.Interrupts) != 2 {
		t.Fatalf("after the refused resume, interrupts = %+v, want both still pending", snap.Interrupts)
	}
	cstDiff(t, "calls before resume", map[string]int{"a": 1, "b": 1}, calls.all())

	out = cstInvoke(t, g, graph.ResumeByID(map[string]any{
		ids["question for a"]: "x",
		ids["question for b"]: "y",
	}), cstThread("t"))

	cstDiff(t, "final trail", []string{"a:x", "b:y", "done"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 2, "b": 2, "done": 1}, calls.all())
}

// Mirrors test_pregel.py::test_parallel_interrupts: parallel interrupts are
// answered one id at a time. The answered node's result is kept and it is
// not run again; the other asks again with the same id. Once only one
// interrupt is left, a plain Resume is enough (LangGraph counts an interrupt
// whose task already has its resume as answered).
func TestStateParallelInterruptsResumedOneAtATime(t *testing.T) {
	calls := newCstCalls()
	g, trail := cstTwoAskers(t, calls)
	out := cstInvoke(t, g, graph.Input(), cstThread("t"))
	ids := cstIDsByValue(t, out.Interrupts())

	out = cstInvoke(t, g, graph.ResumeByID(map[string]any{ids["question for b"]: "y"}), cstThread("t"))
	cstDiff(t, "interrupts after answering b", []graph.Interruption{{ID: ids["question for a"], Value: "question for a"}}, out.Interrupts())
	cstDiff(t, "calls after answering b", map[string]int{"a": 2, "b": 2}, calls.all())

	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next", []string{"a"}, snap.Next)
	// b's result is shown applied to the latest state.
	cstDiff(t, "values with b's pending write", []string{"b:y"}, trail.Get(snap.Values))

	out = cstInvoke(t, g, graph.Resume("x"), cstThread("t"))
	cstDiff(t, "final trail", []string{"a:x", "b:y", "done"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 3, "b": 2, "done": 1}, calls.all())
}

// No LangGraph test: LangGraph ignores a Command(resume=...) that nothing
// waits for (nearest: test_pregel.py::test_null_resume_disallowed_with_multiple_interrupts).
// weft refuses it so a misrouted answer is not silently lost.
func TestStateResumeWithoutPendingInterrupt(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"a", cstStep(trail, calls, "a"), nil).
		AddEdge(graph.START, "a"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	_, err := g.Invoke(context.Background(), graph.Resume("x"), cstThread("empty"))
	if !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("Resume on an empty thread: err = %v, want ErrInvalidInput", err)
	}
	cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	_, err = g.Invoke(context.Background(), graph.Resume("x"), cstThread("t"))
	if !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), "no pending interrupt") {
		t.Errorf("Resume on a finished thread: err = %v, want ErrInvalidInput naming no pending interrupt", err)
	}
	cstDiff(t, "calls", map[string]int{"a": 1}, calls.all())
	cstDiff(t, "state untouched", []string{"in", "a"}, trail.Get(cstState(t, g, cstCfg("t")).Values))
}

// Mirrors test_large_cases.py::test_dynamic_interrupt (the part without a
// checkpointer). Deliberate difference: LangGraph stops the run and returns
// __interrupt__ even without a checkpointer (the answer can then never be
// given); weft fails fast with ErrNoCheckpointer, naming the node. Resuming
// without a checkpointer fails in both ("Cannot use Command(resume=...)
// without checkpointer").
func TestStateInterruptWithoutCheckpointer(t *testing.T) {
	trail := cstLog("trail")
	g := cstCompile(t, graph.New(trail).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			v, err := graph.Interrupt[string](ctx, "?")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{v}), nil
		}, nil).
		AddEdge(graph.START, "ask"))

	_, err := g.Invoke(context.Background(), graph.Input(), &graph.RunOptions{})
	if !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("err = %v, want ErrNoCheckpointer", err)
	}
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "ask" {
		t.Errorf("err = %v, want a *graph.NodeError for node \"ask\"", err)
	}
	if _, err := g.Invoke(context.Background(), graph.Resume("x"), &graph.RunOptions{}); !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Errorf("Resume without a checkpointer: err = %v, want ErrNoCheckpointer", err)
	}
	if _, err := g.GetState(context.Background(), cstCfg("t"), nil); !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Errorf("GetState without a checkpointer: err = %v, want ErrNoCheckpointer", err)
	}
}

// ---------------------------------------------------------------- static interrupts

// cstChain builds START -> a -> b -> c -> END where each node appends its
// name to trail.
func cstChain(trail *graph.ReduceChannel[[]string], calls *cstCalls) *graph.Builder {
	return graph.New(trail).AddNode(
		"a", cstStep(trail, calls, "a"), nil).AddNode(

		"b", cstStep(trail, calls, "b"), nil).AddNode(

		"c", cstStep(trail, calls, "c"), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END)
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge (the
// interrupt_before=["qa"] part): a compile-time InterruptBefore stops the run
// before the node, with no interrupt payload; continuing with no input (the
// zero Update) passes the breakpoint, and the node runs once.
func TestStateStaticInterruptBeforeAtCompile(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{
		Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"b"},
	})
	out := cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	cstDiff(t, "trail at breakpoint", []string{"in", "a"}, trail.Get(out))
	if len(out.Interrupts()) != 0 {
		t.Errorf("a static breakpoint carries no interrupt payload, got %+v", out.Interrupts())
	}
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next at breakpoint", []string{"b"}, snap.Next)
	cstDiff(t, "calls at breakpoint", map[string]int{"a": 1}, calls.all())

	out = cstInvoke(t, g, graph.Update{}, cstThread("t"))
	cstDiff(t, "final trail", []string{"in", "a", "b", "c"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1, "b": 1, "c": 1}, calls.all())

	// The breakpoint fires again on a new run of the same thread.
	out = cstInvoke(t, g, trail.Write([]string{"again"}), cstThread("t"))
	cstDiff(t, "second run stops before b", []string{"in", "a", "b", "c", "again", "a"}, trail.Get(out))
	cstDiff(t, "next in second run", []string{"b"}, cstState(t, g, cstCfg("t")).Next)
}

// Mirrors test_large_cases.py::test_invoke_two_processes_in_out_interrupt:
// interrupt_after given per run (RunOptions) stops after the node, with
// its successors next; continuing passes it; new input while stopped drops
// the pending step and starts over from START.
func TestStateStaticInterruptAfterViaRunOptions(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	opts := graph.RunOptions{ThreadID: "t", InterruptAfter: []string{"a"}}

	out := cstInvoke(t, g, trail.Write([]string{"1"}), &opts)
	cstDiff(t, "trail after a", []string{"1", "a"}, trail.Get(out))
	cstDiff(t, "next after a", []string{"b"}, cstState(t, g, cstCfg("t")).Next)

	// New input while stopped: b is dropped and the run restarts.
	out = cstInvoke(t, g, trail.Write([]string{"2"}), &opts)
	cstDiff(t, "trail after new input", []string{"1", "a", "2", "a"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 2}, calls.all())

	out = cstInvoke(t, g, graph.Update{}, &opts)
	cstDiff(t, "trail after continuing", []string{"1", "a", "2", "a", "b", "c"}, trail.Get(out))
	cstDiff(t, "next at end", []string{}, cstState(t, g, cstCfg("t")).Next)

	// RunOptions.InterruptBefore works the same way, per run.
	out = cstInvoke(t, g, trail.Overwrite([]string{"3"}), &graph.RunOptions{ThreadID: "t", InterruptBefore: []string{"c"}})
	cstDiff(t, "stopped before c", []string{"3", "a", "b"}, trail.Get(out))
	cstDiff(t, "next before c", []string{"c"}, cstState(t, g, cstCfg("t")).Next)

	// An unknown node in the per-run lists is an input error.
	if _, err := g.Invoke(context.Background(), graph.Update{}, &graph.RunOptions{ThreadID: "t", InterruptAfter: []string{"nope"}}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("unknown interrupt node: err = %v, want ErrInvalidInput", err)
	}
}

// Mirrors test_interruption.py::test_interruption_without_state_updates:
// interrupt_after="*" over a chain of three nodes that write nothing stops
// after each of them; the thread holds 3, 4, 5 checkpoints with durability
// sync or async, and 1, 2, 3 with durability exit.
func TestStateInterruptAfterAllStopsEachStep(t *testing.T) {
	for _, tc := range []struct {
		d     graph.Durability
		count []int
	}{
		{graph.DurabilitySync, []int{3, 4, 5}},
		{graph.DurabilityAsync, []int{3, 4, 5}},
		{graph.DurabilityExit, []int{1, 2, 3}},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			input := graph.Value[string]("input")
			calls := newCstCalls()
			noop := func(name string) graph.NodeFunc {
				return func(ctx context.Context, s graph.State) (graph.Update, error) {
					calls.hit(name)
					return graph.Update{}, nil
				}
			}
			g := cstCompile(t, graph.New(input).AddNode(
				"step_1", noop("step_1"), nil).AddNode(
				"step_2", noop("step_2"), nil).AddNode(
				"step_3", noop("step_3"), nil).
				AddEdge(graph.START, "step_1").AddEdge("step_1", "step_2").AddEdge("step_2", "step_3").AddEdge("step_3", graph.END),
				graph.CompileOptions{Checkpointer: checkpoint.NewMemory(), InterruptAfter: []string{graph.All}})
			opts := graph.RunOptions{ThreadID: "t", Durability: tc.d}
			nexts := [][]string{{"step_2"}, {"step_3"}, {}}
			for i := range 3 {
				in := graph.Update{}
				if i == 0 {
					in = input.Write("hello world")
				}
				out := cstInvoke(t, g, in, &opts)
				if got := input.Get(out); got != "hello world" {
					t.Errorf("run %d: input = %q", i+1, got)
				}
				cstDiff(t, fmt.Sprintf("next after run %d", i+1), nexts[i], cstState(t, g, cstCfg("t")).Next)
				if got := len(cstHistory(t, g, "t")); got != tc.count[i] {
					t.Errorf("run %d: %d checkpoints, want %d", i+1, got, tc.count[i])
				}
			}
			cstDiff(t, "each node ran once", map[string]int{"step_1": 1, "step_2": 1, "step_3": 1}, calls.all())
		})
	}
}

// ---------------------------------------------------------------- durability and failures

// Mirrors test_pregel.py::test_checkpoint_recovery (durability
// parametrisation): a checkpoint per step with sync, and with exit only the
// one written when the run ends, even when it ends in an error.
func TestStateDurabilityCheckpointCounts(t *testing.T) {
	for _, tc := range []struct {
		d          graph.Durability
		ok, failed int
	}{
		// ok: input, __start__ step, a, b, c; failed: input, __start__, a.
		{graph.DurabilitySync, 5, 3},
		{graph.DurabilityAsync, 5, 3},
		{graph.DurabilityExit, 1, 1},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			trail := cstLog("trail")
			calls := newCstCalls()
			fail := true
			g := cstCompile(t, graph.New(trail).AddNode(
				"a", cstStep(trail, calls, "a"), nil).AddNode(

				"b", func(ctx context.Context, s graph.State) (graph.Update, error) {
					calls.hit("b")
					if fail {
						return graph.Update{}, errors.New("b is down")
					}
					return trail.Write([]string{"b"}), nil
				}, nil).AddNode(

				"c", cstStep(trail, calls, "c"), nil).
				AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c"),
				graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
			opts := graph.RunOptions{ThreadID: "ok", Durability: tc.d}
			fail = false
			cstInvoke(t, g, trail.Write([]string{"in"}), &opts)
			hist := cstHistory(t, g, "ok")
			if len(hist) != tc.ok {
				t.Errorf("successful run: %d checkpoints, want %d", len(hist), tc.ok)
			}
			cstDiff(t, "latest state", []string{"in", "a", "b", "c"}, trail.Get(hist[0].Values))

			// A failing run: sync keeps input, __start__ and a; exit keeps
			// only the checkpoint the failure happened on.
			fail = true
			opts.ThreadID = "bad"
			if _, err := g.Invoke(context.Background(), trail.Write([]string{"in"}), &opts); err == nil {
				t.Fatal("want b's error")
			}
			hist = cstHistory(t, g, "bad")
			if len(hist) != tc.failed {
				t.Errorf("failed run: %d checkpoints, want %d", len(hist), tc.failed)
			}
			cstDiff(t, "failed run next", []string{"b"}, hist[0].Next)
			cstDiff(t, "failed run state", []string{"in", "a"}, trail.Get(hist[0].Values))
		})
	}
}

// Mirrors test_pregel.py::test_pending_writes_resume: two parallel nodes,
// one succeeds and one fails (after its retries). The latest checkpoint is
// the one before the step; GetState shows the failed node as next, its
// error, the successful node's result, and the values with that result
// applied (but not when asked for the checkpoint by id). Continuing re-runs
// only the failed node. Checkpoints: 3 (exit: 2).
func TestStatePendingWritesKeptOnFailure(t *testing.T) {
	for _, tc := range []struct {
		d     graph.Durability
		count int
	}{
		{graph.DurabilitySync, 3},
		{graph.DurabilityAsync, 3},
		{graph.DurabilityExit, 2},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			value := graph.Reduce("value", cstSum)
			calls := newCstCalls()
			var mu sync.Mutex
			healthy := false
			g := cstCompile(t, graph.New(value).AddNode(
				"one", func(ctx context.Context, s graph.State) (graph.Update, error) {
					calls.hit("one")
					return value.Write(2), nil
				}, nil).
				AddNode(

					"two", func(ctx context.Context, s graph.State) (graph.Update, error) {
						calls.hit("two")
						mu.Lock()
						ok := healthy
						mu.Unlock()
						if !ok {
							return graph.Update{}, errors.New("I'm not good")
						}
						return value.Write(3), nil
					}, &graph.NodeOptions{Retry: &graph.RetryPolicy{MaxAttempts: 2, InitialInterval: 1, NoJitter: true}}).
				AddEdge(graph.START, "one").AddEdge(graph.START, "two"),
				graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
			opts := graph.RunOptions{ThreadID: "t", Durability: tc.d}

			_, err := g.Invoke(context.Background(), value.Write(1), &opts)
			var ne *graph.NodeError
			if !errors.As(err, &ne) || ne.Node != "two" || !strings.Contains(err.Error(), "I'm not good") {
				t.Fatalf("err = %v, want node two's error", err)
			}
			cstDiff(t, "calls after failure", map[string]int{"one": 1, "two": 2}, calls.all())

			snap := cstState(t, g, cstCfg("t"))
			if got := value.Get(snap.Values); got != 3 {
				t.Errorf("latest values: value = %d, want 3 (input 1 + one's pending 2)", got)
			}
			cstDiff(t, "next", []string{"two"}, snap.Next)
			if snap.Metadata.Source != "loop" || snap.Metadata.Step != 0 {
				t.Errorf("metadata = %+v, want the loop checkpoint of step 0", snap.Metadata)
			}
			if len(snap.Tasks) != 2 {
				t.Fatalf("tasks = %+v", snap.Tasks)
			}
			byName := map[string]graph.TaskState{}
			for _, ts := range snap.Tasks {
				byName[ts.Name] = ts
			}
			if r := byName["one"].Result; r == nil || byName["one"].Error != "" {
				t.Errorf("task one = %+v, want a result and no error", byName["one"])
			} else {
				cstDiff(t, "one's result", []graph.Write{{Channel: "value", Value: 2}}, r.Writes())
			}
			if ts := byName["two"]; ts.Result != nil || !strings.Contains(ts.Error, "I'm not good") {
				t.Errorf("task two = %+v, want its error and no result", ts)
			}
			// By checkpoint id, pending writes are not applied to values.
			byID := cstState(t, g, snap.Config)
			if got := value.Get(byID.Values); got != 1 {
				t.Errorf("values by checkpoint id: value = %d, want 1", got)
			}
			cstDiff(t, "next by checkpoint id lists every task", []string{"one", "two"}, byID.Next)

			mu.Lock()
			healthy = true
			mu.Unlock()
			out := cstInvoke(t, g, graph.Update{}, &opts)
			if got := value.Get(out); got != 6 {
				t.Errorf("final value = %d, want 1+2+3 = 6", got)
			}
			cstDiff(t, "calls after continuing", map[string]int{"one": 1, "two": 3}, calls.all())
			if got := len(cstHistory(t, g, "t")); got != tc.count {
				t.Errorf("%d checkpoints, want %d", got, tc.count)
			}
			snap = cstState(t, g, cstCfg("t"))
			cstDiff(t, "next at end", []string{}, snap.Next)
			if snap.Metadata.Step != 1 {
				t.Errorf("final step = %d, want 1", snap.Metadata.Step)
			}
		})
	}
}

// Mirrors test_pregel.py::test_checkpoint_recovery: after a failure the
// latest state is the input, the failed node is next with its error; new
// input (instead of continuing) drops the failed task and restarts from
// START. History: 6 checkpoints (exit: 2), one of them showing the error.
// DeleteThread then empties the history.
func TestStateNewInputAfterFailureRestarts(t *testing.T) {
	for _, tc := range []struct {
		d     graph.Durability
		count int
	}{
		{graph.DurabilitySync, 6},
		{graph.DurabilityExit, 2},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			steps := cstLog("steps")
			attempt := graph.Value[int]("attempt")
			calls := newCstCalls()
			saver := checkpoint.NewMemory()
			g := cstCompile(t, graph.New(steps, attempt).AddNode(
				"node1", func(ctx context.Context, s graph.State) (graph.Update, error) {
					calls.hit("node1")
					if attempt.Get(s) == 1 {
						return graph.Update{}, errors.New("simulated failure")
					}
					return steps.Write([]string{"node1"}), nil
				}, nil).AddNode(

				"node2", cstStep(steps, calls, "node2"), nil).
				AddEdge(graph.START, "node1").AddEdge("node1", "node2"),
				graph.CompileOptions{Checkpointer: saver})
			opts := graph.RunOptions{ThreadID: "t", Durability: tc.d}

			if _, err := g.Invoke(context.Background(), steps.Write([]string{"start"}).And(attempt.Write(1)), &opts); err == nil {
				t.Fatal("want the simulated failure")
			}
			snap := cstState(t, g, cstCfg("t"))
			cstDiff(t, "steps after failure", []string{"start"}, steps.Get(snap.Values))
			cstDiff(t, "next after failure", []string{"node1"}, snap.Next)
			if len(snap.Tasks) != 1 || !strings.Contains(snap.Tasks[0].Error, "simulated failure") {
				t.Fatalf("tasks = %+v, want node1 with its error", snap.Tasks)
			}

			out := cstInvoke(t, g, steps.Write([]string{}).And(attempt.Write(2)), &opts)
			cstDiff(t, "steps", []string{"start", "node1", "node2"}, steps.Get(out))
			if attempt.Get(out) != 2 {
				t.Errorf("attempt = %d", attempt.Get(out))
			}
			cstDiff(t, "calls", map[string]int{"node1": 2, "node2": 1}, calls.all())

			hist := cstHistory(t, g, "t")
			if len(hist) != tc.count {
				t.Errorf("%d checkpoints, want %d", len(hist), tc.count)
			}
			failed := 0
			for _, h := range hist {
				if len(h.Tasks) > 0 && strings.Contains(h.Tasks[0].Error, "simulated failure") {
					failed++
				}
			}
			if failed != 1 {
				t.Errorf("%d checkpoints show the failure, want 1", failed)
			}

			if err := saver.DeleteThread(context.Background(), "t"); err != nil {
				t.Fatal(err)
			}
			if n := len(cstHistory(t, g, "t")); n != 0 {
				t.Errorf("history after DeleteThread has %d entries", n)
			}
			if tp, err := saver.Get(context.Background(), cstCfg("t")); tp != nil || err != nil {
				t.Errorf("Get after DeleteThread = %v, %v; want nil, nil", tp, err)
			}
		})
	}
}

// ---------------------------------------------------------------- UpdateState

// Mirrors test_large_cases.py::test_invoke_two_processes_in_out_interrupt
// (update_state with as_node while stopped): UpdateState as a node applies
// the update as if that node had returned it, so its edges fire and Next
// becomes its successors; continuing runs those without running the node.
func TestStateUpdateStateAsNode(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{
		Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"b"},
	})
	cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	before := cstState(t, g, cstCfg("t"))

	cfg, err := g.UpdateState(context.Background(), cstCfg("t"), trail.Write([]string{"manual b"}), "b")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ThreadID != "t" || cfg.CheckpointID == "" || cfg.CheckpointID == before.Config.CheckpointID {
		t.Fatalf("UpdateState returned %+v, want a new checkpoint of thread t", cfg)
	}
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "latest is the update", cfg, snap.Config)
	cstDiff(t, "next after update as b", []string{"c"}, snap.Next)
	cstDiff(t, "values after update", []string{"in", "a", "manual b"}, trail.Get(snap.Values))
	if snap.Metadata.Source != "update" || snap.Metadata.Step != before.Metadata.Step+1 {
		t.Errorf("metadata = %+v, want source update, step %d", snap.Metadata, before.Metadata.Step+1)
	}
	if snap.Parent == nil || snap.Parent.CheckpointID != before.Config.CheckpointID {
		t.Errorf("parent = %+v, want the checkpoint it updated", snap.Parent)
	}

	out := cstInvoke(t, g, graph.Update{}, cstThread("t"))
	cstDiff(t, "final trail", []string{"in", "a", "manual b", "c"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1, "c": 1}, calls.all())

	if _, err := g.UpdateState(context.Background(), cstCfg("t"), trail.Write([]string{"x"}), "nope"); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("UpdateState as unknown node: err = %v, want ErrInvalidInput", err)
	}
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge
// (update_state without as_node) and test_time_travel.py::test_fork_reruns_with_modified_state:
// with no node given, the update is applied as the node that ran last.
// A graph with a single node uses it; on an empty thread the update is
// START's.
func TestStateUpdateStateInfersNode(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{
		Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"c"},
	})
	cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	cstDiff(t, "next before update", []string{"c"}, cstState(t, g, cstCfg("t")).Next)

	// b ran last: the update counts as b's, so c is next.
	if _, err := g.UpdateState(context.Background(), cstCfg("t"), trail.Write([]string{"x"}), ""); err != nil {
		t.Fatal(err)
	}
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next after inferred update", []string{"c"}, snap.Next)
	cstDiff(t, "values", []string{"in", "a", "b", "x"}, trail.Get(snap.Values))
	out := cstInvoke(t, g, graph.Update{}, cstThread("t"))
	cstDiff(t, "final", []string{"in", "a", "b", "x", "c"}, trail.Get(out))

	// Empty thread: as in LangGraph, the update is START's (its writes and
	// its edge to the first node), and the run continues from it.
	if _, err := g.UpdateState(context.Background(), cstCfg("fresh"), trail.Write([]string{"seed"}), ""); err != nil {
		t.Fatal(err)
	}
	snap = cstState(t, g, cstCfg("fresh"))
	cstDiff(t, "next on a seeded thread", []string{"a"}, snap.Next)
	if snap.Metadata.Source != "update" || snap.Metadata.Step != 0 {
		t.Errorf("seeded metadata = %+v, want source update, step 0", snap.Metadata)
	}
	out = cstInvoke(t, g, graph.Update{}, cstThread("fresh"))
	cstDiff(t, "seeded run stops before c", []string{"seed", "a", "b"}, trail.Get(out))

	// One-node graph: that node.
	only := cstLog("only")
	g1 := cstCompile(t, graph.New(only).AddNode("solo", cstStep(only, calls, "solo"), nil).AddEdge(graph.START, "solo"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	cstInvoke(t, g1, only.Write([]string{"in"}), cstThread("t"))
	if _, err := g1.UpdateState(context.Background(), cstCfg("t"), only.Write([]string{"x"}), ""); err != nil {
		t.Fatal(err)
	}
	snap = cstState(t, g1, cstCfg("t"))
	cstDiff(t, "one-node graph: nothing next", []string{}, snap.Next)
	cstDiff(t, "one-node graph values", []string{"in", "solo", "x"}, only.Get(snap.Values))
}

// Mirrors test_pregel.py::test_bulk_state_updates ("Ambiguous update,
// specify as_node"): when two nodes ran last in the same step, the update
// cannot be attributed without asNode; naming one works.
func TestStateUpdateStateAmbiguous(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"left", cstStep(trail, calls, "left"), nil).AddNode(

		"right", cstStep(trail, calls, "right"), nil).AddNode(

		"join", cstStep(trail, calls, "join"), nil).
		AddEdge(graph.START, "left").AddEdge(graph.START, "right").
		AddJoin([]string{"left", "right"}, "join"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"join"}})
	cstInvoke(t, g, graph.Input(), cstThread("t"))
	before := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next", []string{"join"}, before.Next)

	_, err := g.UpdateState(context.Background(), cstCfg("t"), trail.Write([]string{"x"}), "")
	if !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), "asNode") {
		t.Fatalf("err = %v, want ErrInvalidInput asking for asNode", err)
	}
	if after := cstState(t, g, cstCfg("t")); after.Config != before.Config {
		t.Errorf("a refused update must not write a checkpoint: latest %v, was %v", after.Config, before.Config)
	}
	if _, err := g.UpdateState(context.Background(), cstCfg("t"), trail.Write([]string{"x"}), "left"); err != nil {
		t.Fatalf("UpdateState as left: %v", err)
	}
}

// Mirrors test_large_cases.py::test_dynamic_interrupt
// (update_state(None, as_node=END)): UpdateState as END drops the pending
// tasks, so Next and the interrupts are empty and the run is over; the new
// checkpoint has source update and the next step number.
func TestStateUpdateStateAsEndClearsInterrupts(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			v, err := graph.Interrupt[string](ctx, "?")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{v}), nil
		}, nil).AddNode(

		"after", cstStep(trail, calls, "after"), nil).
		AddEdge(graph.START, "ask").AddEdge("ask", "after"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	before := cstState(t, g, cstCfg("t"))
	if len(before.Interrupts) != 1 {
		t.Fatalf("interrupts = %+v", before.Interrupts)
	}

	if _, err := g.UpdateState(context.Background(), cstCfg("t"), graph.Update{}, graph.END); err != nil {
		t.Fatal(err)
	}
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next", []string{}, snap.Next)
	cstDiff(t, "interrupts", []graph.Interruption{}, snap.Interrupts)
	cstDiff(t, "tasks", []graph.TaskState{}, snap.Tasks)
	if snap.Metadata.Source != "update" || snap.Metadata.Step != before.Metadata.Step+1 {
		t.Errorf("metadata = %+v, want source update, step %d", snap.Metadata, before.Metadata.Step+1)
	}
	cstDiff(t, "values kept", []string{"in"}, trail.Get(snap.Values))

	// Nothing is left to resume or run.
	if _, err := g.Invoke(context.Background(), graph.Resume("late"), cstThread("t")); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("Resume after END update: err = %v, want ErrInvalidInput", err)
	}
	out := cstInvoke(t, g, graph.Update{}, cstThread("t"))
	cstDiff(t, "continuing is a no-op", []string{"in"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"ask": 1}, calls.all())
}

// ---------------------------------------------------------------- fork, replay, history

type cstSummary struct {
	Next   []string
	Values []string
	Source string
}

func cstSummarize(hist []graph.StateSnapshot, trail *graph.ReduceChannel[[]string]) []cstSummary {
	out := make([]cstSummary, len(hist))
	for i, h := range hist {
		out[i] = cstSummary{Next: h.Next, Values: trail.Get(h.Values), Source: h.Metadata.Source}
		if out[i].Values == nil {
			out[i].Values = []string{}
		}
	}
	return out
}

func cstIDs(hist []graph.StateSnapshot) map[string]bool {
	m := map[string]bool{}
	for _, h := range hist {
		m[h.Config.CheckpointID] = true
	}
	return m
}

// cstCountingChain is a -> b -> c where b writes "b<n>" for its n-th call.
func cstCountingChain(t *testing.T, trail *graph.ReduceChannel[[]string], calls *cstCalls) *graph.Graph {
	return cstCompile(t, graph.New(trail).AddNode(
		"a", cstStep(trail, calls, "a"), nil).AddNode(

		"b", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("b")
			return trail.Write([]string{fmt.Sprintf("b%d", calls.get("b"))}), nil
		}, nil).AddNode(

		"c", cstStep(trail, calls, "c"), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
}

var cstOriginalHistory = []cstSummary{
	{Next: []string{}, Values: []string{"a", "b1", "c"}, Source: "loop"},
	{Next: []string{"c"}, Values: []string{"a", "b1"}, Source: "loop"},
	{Next: []string{"b"}, Values: []string{"a"}, Source: "loop"},
	{Next: []string{"a"}, Values: []string{}, Source: "loop"},
	{Next: []string{graph.START}, Values: []string{}, Source: "input"},
}

// Mirrors test_time_travel.py::test_fork_creates_branch_preserving_old_checkpoints
// and test_pregel.py::test_fork_does_not_apply_pending_writes: UpdateState
// at an old checkpoint creates a branch whose parent is that checkpoint;
// invoking from it runs the nodes after it (not the ones before), adds
// no extra checkpoint beyond the update and the new steps, and leaves the
// old branch as it was.
func TestStateForkFromOldCheckpoint(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCountingChain(t, trail, calls)
	cstInvoke(t, g, graph.Input(), cstThread("t"))
	orig := cstHistory(t, g, "t")
	cstDiff(t, "original history", cstOriginalHistory, cstSummarize(orig, trail))
	origIDs := cstIDs(orig)
	beforeB := orig[2]

	forkCfg, err := g.UpdateState(context.Background(), beforeB.Config, trail.Write([]string{"x"}), "")
	if err != nil {
		t.Fatal(err)
	}
	fork := cstState(t, g, forkCfg)
	if fork.Parent == nil || fork.Parent.CheckpointID != beforeB.Config.CheckpointID {
		t.Errorf("fork parent = %+v, want the checkpoint before b", fork.Parent)
	}
	cstDiff(t, "fork next", []string{"b"}, fork.Next)

	out := cstInvoke(t, g, graph.Update{}, &graph.RunOptions{ThreadID: "t", CheckpointID: forkCfg.CheckpointID})
	cstDiff(t, "fork result", []string{"a", "x", "b2", "c"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1, "b": 2, "c": 2}, calls.all())

	post := cstHistory(t, g, "t")
	want := append([]cstSummary{
		{Next: []string{}, Values: []string{"a", "x", "b2", "c"}, Source: "loop"},
		{Next: []string{"c"}, Values: []string{"a", "x", "b2"}, Source: "loop"},
		{Next: []string{"b"}, Values: []string{"a", "x"}, Source: "update"},
	}, cstOriginalHistory...)
	cstDiff(t, "history after fork", want, cstSummarize(post, trail))
	for id := range origIDs {
		if !cstIDs(post)[id] {
			t.Errorf("original checkpoint %s is gone", id)
		}
	}
	// The old tip still reads as it did.
	oldTip := cstState(t, g, orig[0].Config)
	cstDiff(t, "old tip", []string{"a", "b1", "c"}, trail.Get(oldTip.Values))
	cstDiff(t, "latest is the new tip", []string{"a", "x", "b2", "c"}, trail.Get(cstState(t, g, cstCfg("t")).Values))
}

// Mirrors test_time_travel.py::test_replay_creates_branch_preserving_old_checkpoints
// and test_replay_reruns_nodes_after_checkpoint: invoking with no input at
// an old CheckpointID re-runs the nodes after it (not the ones before),
// first saving a "fork" checkpoint whose parent is the replayed one; the
// original checkpoints stay.
func TestStateReplayFromCheckpoint(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCountingChain(t, trail, calls)
	cstInvoke(t, g, graph.Input(), cstThread("t"))
	orig := cstHistory(t, g, "t")
	beforeB := orig[2]

	out := cstInvoke(t, g, graph.Update{}, &graph.RunOptions{ThreadID: "t", CheckpointID: beforeB.Config.CheckpointID})
	cstDiff(t, "replay result", []string{"a", "b2", "c"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1, "b": 2, "c": 2}, calls.all())

	post := cstHistory(t, g, "t")
	want := append([]cstSummary{
		{Next: []string{}, Values: []string{"a", "b2", "c"}, Source: "loop"},
		{Next: []string{"c"}, Values: []string{"a", "b2"}, Source: "loop"},
		{Next: []string{"b"}, Values: []string{"a"}, Source: "fork"},
	}, cstOriginalHistory...)
	cstDiff(t, "history after replay", want, cstSummarize(post, trail))
	fork := post[2]
	if fork.Parent == nil || fork.Parent.CheckpointID != beforeB.Config.CheckpointID {
		t.Errorf("fork parent = %+v, want the replayed checkpoint", fork.Parent)
	}
	if fork.Metadata.Step != beforeB.Metadata.Step+1 {
		t.Errorf("fork step = %d, want %d", fork.Metadata.Step, beforeB.Metadata.Step+1)
	}
	for id := range cstIDs(orig) {
		if !cstIDs(post)[id] {
			t.Errorf("original checkpoint %s is gone", id)
		}
	}
}

// Mirrors test_time_travel.py::test_replay_from_final_checkpoint_is_noop:
// replaying a checkpoint with nothing next runs nothing and returns its
// values.
func TestStateReplayFinalCheckpointIsNoop(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode("a", cstStep(trail, calls, "a"), nil).AddEdge(graph.START, "a"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	cstInvoke(t, g, graph.Input(), cstThread("t"))
	final := cstState(t, g, cstCfg("t"))
	cstDiff(t, "final next", []string{}, final.Next)

	out := cstInvoke(t, g, graph.Update{}, &graph.RunOptions{ThreadID: "t", CheckpointID: final.Config.CheckpointID})
	cstDiff(t, "replayed values", []string{"a"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1}, calls.all())
}

// Mirrors test_pregel.py::test_invoke_checkpoint_three (history listing):
// GetStateHistory is newest first, Limit caps it, Before pages back from a
// checkpoint, Filter matches metadata (source, step and RunOptions.Metadata
// keys, as in test_checkpoint_metadata), and other threads are separate.
func TestStateHistoryListing(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	cstInvoke(t, g, trail.Write([]string{"1"}), &graph.RunOptions{ThreadID: "t", Metadata: map[string]any{"run": "first"}})
	cstInvoke(t, g, trail.Write([]string{"2"}), &graph.RunOptions{ThreadID: "t", Metadata: map[string]any{"run": "second"}})
	cstInvoke(t, g, trail.Write([]string{"other"}), cstThread("u"))

	all := cstHistory(t, g, "t")
	if len(all) != 10 {
		t.Fatalf("%d checkpoints, want 2 runs x (input + start + 3 nodes) = 10", len(all))
	}
	for i := 1; i < len(all); i++ {
		if !all[i].CreatedAt.Before(all[i-1].CreatedAt) && !all[i].CreatedAt.Equal(all[i-1].CreatedAt) {
			t.Errorf("history not newest first at %d", i)
		}
		if all[i].Config.CheckpointID >= all[i-1].Config.CheckpointID {
			t.Errorf("checkpoint ids not descending at %d: %s then %s", i, all[i-1].Config.CheckpointID, all[i].Config.CheckpointID)
		}
		if all[i-1].Parent == nil || all[i-1].Parent.CheckpointID != all[i].Config.CheckpointID {
			t.Errorf("checkpoint %d's parent = %+v, want the one before it", i-1, all[i-1].Parent)
		}
	}
	if all[len(all)-1].Parent != nil {
		t.Errorf("the first checkpoint has parent %+v", all[len(all)-1].Parent)
	}
	cstDiff(t, "latest", []string{"1", "a", "b", "c", "2", "a", "b", "c"}, trail.Get(all[0].Values))

	limited := cstHistory(t, g, "t", graph.HistoryOptions{Limit: 1})
	if len(limited) != 1 || limited[0].Config != all[0].Config {
		t.Errorf("Limit 1 = %+v, want the latest only", limited)
	}
	page := cstHistory(t, g, "t", graph.HistoryOptions{Limit: 2, Before: all[0].Config.CheckpointID})
	if len(page) != 2 || page[0].Config != all[1].Config || page[1].Config != all[2].Config {
		t.Errorf("Before latest, Limit 2: got %d entries, want checkpoints 1 and 2", len(page))
	}
	loops := cstHistory(t, g, "t", graph.HistoryOptions{Filter: map[string]any{"source": "loop"}})
	if len(loops) != 8 {
		t.Errorf("Filter source=loop: %d, want 8", len(loops))
	}
	for _, h := range loops {
		if h.Metadata.Source != "loop" {
			t.Errorf("filtered entry has source %q", h.Metadata.Source)
		}
	}
	first := cstHistory(t, g, "t", graph.HistoryOptions{Filter: map[string]any{"run": "first"}})
	if len(first) != 5 {
		t.Errorf("Filter run=first: %d, want 5", len(first))
	}
	step1 := cstHistory(t, g, "t", graph.HistoryOptions{Filter: map[string]any{"source": "loop", "step": 1}})
	if len(step1) != 1 || !slices.Equal(step1[0].Next, []string{"b"}) {
		t.Errorf("Filter source=loop, step=1: %+v, want the second run's checkpoint after a", step1)
	}
	if n := len(cstHistory(t, g, "u")); n != 5 {
		t.Errorf("thread u: %d checkpoints, want 5", n)
	}
	if n := len(cstHistory(t, g, "none")); n != 0 {
		t.Errorf("unknown thread: %d checkpoints", n)
	}
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_defer_node (step
// numbers) and test_large_cases.py::test_fork_always_re_runs_nodes: the
// input checkpoint is step -1 (next __start__), the __start__ step is 0, and
// the user nodes count from 1; a second run on the thread continues the
// numbering.
func TestStateMetadataStepNumbers(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"a", cstStep(trail, calls, "a"), nil).AddNode(
		"b", cstStep(trail, calls, "b"), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	cstInvoke(t, g, graph.Input(), cstThread("t"))
	cstInvoke(t, g, graph.Input(), cstThread("t"))

	type row struct {
		Source string
		Step   int
		Next   []string
	}
	var got []row
	hist := cstHistory(t, g, "t")
	for i := len(hist) - 1; i >= 0; i-- {
		got = append(got, row{hist[i].Metadata.Source, hist[i].Metadata.Step, hist[i].Next})
	}
	cstDiff(t, "steps oldest first", []row{
		{"input", -1, []string{graph.START}},
		{"loop", 0, []string{"a"}},
		{"loop", 1, []string{"b"}},
		{"loop", 2, []string{}},
		{"input", 3, []string{graph.START}},
		{"loop", 4, []string{"a"}},
		{"loop", 5, []string{"b"}},
		{"loop", 6, []string{}},
	}, got)
}

// ---------------------------------------------------------------- subgraphs

// cstAppendTo is a node that appends "+name" to a string Value channel.
func cstAppendTo(ch *graph.ValueChannel[string], calls *cstCalls, name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		calls.hit(name)
		return ch.Write(ch.Get(s) + "+" + name), nil
	}
}

// Mirrors test_subgraph_persistence.py::test_stateless_state_resets and
// test_pregel.py::test_stream_subgraphs_during_execution (the parent's update
// for a subgraph node is the subgraph's final state filtered to parent
// keys): a compiled graph used as a node reads the channels it shares with
// the parent, writes them back when done, keeps its own channels to itself,
// and saves its checkpoints under its own namespace of the thread.
func TestStateSubgraphSharesChannels(t *testing.T) {
	calls := newCstCalls()
	trail := graph.Value[string]("trail")
	inner := graph.Value[string]("inner")
	child := cstCompile(t, graph.New(trail, inner).AddNode(
		"c1", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("c1")
			return inner.Write("saw " + trail.Get(s)).And(trail.Write(trail.Get(s) + "+c1")), nil
		}, nil).AddNode(

		"c2", cstAppendTo(trail, calls, "c2"), nil).
		AddEdge(graph.START, "c1").AddEdge("c1", "c2"))
	parentTrail := graph.Value[string]("trail")
	saver := checkpoint.NewMemory()
	g := cstCompile(t, graph.New(parentTrail).AddNode(
		"p1", cstAppendTo(parentTrail, calls, "p1"), nil).AddSubgraph(

		"sub", child, nil).
		AddNode(

			"p2", cstAppendTo(parentTrail, calls, "p2"), nil).
		AddEdge(graph.START, "p1").AddEdge("p1", "sub").AddEdge("sub", "p2"),
		graph.CompileOptions{Checkpointer: saver})

	out := cstInvoke(t, g, parentTrail.Write("in"), cstThread("t"))
	if got := parentTrail.Get(out); got != "in+p1+c1+c2+p2" {
		t.Errorf("trail = %q, want in+p1+c1+c2+p2", got)
	}
	cstDiff(t, "parent keys", []string{"trail"}, out.Keys())
	cstDiff(t, "calls", map[string]int{"p1": 1, "c1": 1, "c2": 1, "p2": 1}, calls.all())

	root := cstHistory(t, g, "t")
	if len(root) != 5 {
		t.Errorf("root history has %d checkpoints, want 5 (input, start, p1, sub, p2)", len(root))
	}
	var subNS []string
	for tp, err := range saver.List(context.Background(), "t", checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if tp.Config.Namespace != "" {
			subNS = append(subNS, tp.Config.Namespace)
			if _, ok := tp.Checkpoint.Values["inner"]; !ok && tp.Metadata.Step >= 1 {
				t.Errorf("subgraph checkpoint at step %d lacks its own channel", tp.Metadata.Step)
			}
		}
	}
	if len(subNS) == 0 {
		t.Fatal("the subgraph saved no checkpoint under a namespace")
	}
	for _, ns := range subNS {
		if !strings.HasPrefix(ns, "sub:") || ns != subNS[0] {
			t.Errorf("subgraph namespace %q, want one namespace \"sub:<task id>\"", ns)
		}
	}
}

// Mirrors test_large_cases.py::test_nested_graph_state: a static
// interrupt_before inside a subgraph stops the parent with the subgraph task
// next (and no error recorded for it); GetState with Subgraphs shows the
// subgraph's own state, namespace and next node, and the parent checkpoint
// it belongs to; continuing finishes without re-running what already ran.
func TestStateSubgraphStateWhileInterrupted(t *testing.T) {
	calls := newCstCalls()
	trail := graph.Value[string]("trail")
	inner := graph.Value[string]("inner")
	child := cstCompile(t, graph.New(trail, inner).AddNode(
		"c1", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("c1")
			return inner.Write("hidden").And(trail.Write(trail.Get(s) + "+c1")), nil
		}, nil).AddNode(

		"c2", cstAppendTo(trail, calls, "c2"), nil).
		AddEdge(graph.START, "c1").AddEdge("c1", "c2"),
		graph.CompileOptions{InterruptBefore: []string{"c2"}})
	g := cstCompile(t, graph.New(trail).AddNode(
		"p1", cstAppendTo(trail, calls, "p1"), nil).AddSubgraph(

		"sub", child, nil).
		AddEdge(graph.START, "p1").AddEdge("p1", "sub"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	cstInvoke(t, g, trail.Write("in"), cstThread("t"))
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "parent next", []string{"sub"}, snap.Next)
	if len(snap.Tasks) != 1 {
		t.Fatalf("parent tasks = %+v", snap.Tasks)
	}
	task := snap.Tasks[0]
	if task.Name != "sub" || !strings.HasPrefix(task.Namespace, "sub:") || task.Error != "" || task.State != nil {
		t.Errorf("parent task = %+v, want sub with its namespace, no error, no state without Subgraphs", task)
	}
	if got := trail.Get(snap.Values); got != "in+p1" {
		t.Errorf("parent trail = %q", got)
	}

	nested := cstState(t, g, cstCfg("t"), graph.StateOptions{Subgraphs: true})
	sub := nested.Tasks[0].State
	if sub == nil {
		t.Fatal("GetState with Subgraphs gave no subgraph state")
	}
	cstDiff(t, "subgraph next", []string{"c2"}, sub.Next)
	if sub.Config.Namespace != task.Namespace {
		t.Errorf("subgraph namespace = %q, want %q", sub.Config.Namespace, task.Namespace)
	}
	if got := trail.Get(sub.Values); got != "in+p1+c1" {
		t.Errorf("subgraph trail = %q, want in+p1+c1", got)
	}
	if got := inner.Get(sub.Values); got != "hidden" {
		t.Errorf("subgraph's own channel = %q, want hidden", got)
	}
	if got := sub.Metadata.Parents[""]; got != snap.Config.CheckpointID {
		t.Errorf("subgraph checkpoint parents = %v, want \"\" -> %s", sub.Metadata.Parents, snap.Config.CheckpointID)
	}

	out := cstInvoke(t, g, graph.Update{}, cstThread("t"))
	if got := trail.Get(out); got != "in+p1+c1+c2" {
		t.Errorf("final trail = %q", got)
	}
	cstDiff(t, "calls", map[string]int{"p1": 1, "c1": 1, "c2": 1}, calls.all())
}

// Mirrors test_pregel.py::test_interrupt_subgraph (with call counts as in
// test_subgraph_persistence.py::test_stateless_interrupt_resume): an
// interrupt inside a subgraph surfaces at the parent; resuming the parent
// re-enters the subgraph where it stopped, so the subgraph's finished nodes
// do not run again, and only the interrupted node re-runs.
func TestStateSubgraphInterruptResumedFromParent(t *testing.T) {
	calls := newCstCalls()
	trail := graph.Value[string]("trail")
	child := cstCompile(t, graph.New(trail).AddNode(
		"c1", cstAppendTo(trail, calls, "c1"), nil).AddNode(

		"c2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("c2")
			v, err := graph.Interrupt[string](ctx, "inner question")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write(trail.Get(s) + "+c2:" + v), nil
		}, nil).AddNode(

		"c3", cstAppendTo(trail, calls, "c3"), nil).
		AddEdge(graph.START, "c1").AddEdge("c1", "c2").AddEdge("c2", "c3"))
	g := cstCompile(t, graph.New(trail).AddNode(
		"p1", cstAppendTo(trail, calls, "p1"), nil).AddSubgraph(

		"sub", child, nil).
		AddNode(

			"p2", cstAppendTo(trail, calls, "p2"), nil).
		AddEdge(graph.START, "p1").AddEdge("p1", "sub").AddEdge("sub", "p2"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, trail.Write("in"), cstThread("t"))
	cstDiff(t, "interrupt values", []any{"inner question"}, cstInterruptValues(out.Interrupts()))
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "parent next", []string{"sub"}, snap.Next)
	cstDiff(t, "parent sees the inner interrupt", out.Interrupts(), snap.Interrupts)
	cstDiff(t, "calls at interrupt", map[string]int{"p1": 1, "c1": 1, "c2": 1}, calls.all())

	out = cstInvoke(t, g, graph.Resume("ok"), cstThread("t"))
	if got := trail.Get(out); got != "in+p1+c1+c2:ok+c3+p2" {
		t.Errorf("final trail = %q", got)
	}
	cstDiff(t, "calls", map[string]int{"p1": 1, "c1": 1, "c2": 2, "c3": 1, "p2": 1}, calls.all())
}

// Mirrors test_pregel.py::test_double_interrupt_subgraph: two nodes of a
// subgraph interrupt one after the other; each resume from the parent
// answers one, and nothing else runs twice.
func TestStateSubgraphSequentialInterrupts(t *testing.T) {
	calls := newCstCalls()
	answers := cstLog("answers")
	asker := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit(name)
			v, err := graph.Interrupt[string](ctx, name+"?")
			if err != nil {
				return graph.Update{}, err
			}
			return answers.Write([]string{name + "=" + v}), nil
		}
	}
	child := cstCompile(t, graph.New(answers).AddNode(
		"q1", asker("q1"), nil).AddNode(
		"q2", asker("q2"), nil).
		AddEdge(graph.START, "q1").AddEdge("q1", "q2"))
	parentAnswers := cstLog("answers")
	g := cstCompile(t, graph.New(parentAnswers).AddSubgraph(
		"sub", child, nil).
		AddEdge(graph.START, "sub"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, graph.Input(), cstThread("t"))
	cstDiff(t, "first question", []any{"q1?"}, cstInterruptValues(out.Interrupts()))
	out = cstInvoke(t, g, graph.Resume("one"), cstThread("t"))
	cstDiff(t, "second question", []any{"q2?"}, cstInterruptValues(out.Interrupts()))
	out = cstInvoke(t, g, graph.Resume("two"), cstThread("t"))
	if len(out.Interrupts()) != 0 {
		t.Fatalf("still interrupted: %+v", out.Interrupts())
	}
	cstDiff(t, "answers", []string{"q1=one", "q2=two"}, parentAnswers.Get(out))
	cstDiff(t, "calls", map[string]int{"q1": 2, "q2": 2}, calls.all())
}

// Mirrors test_pregel.py::test_doubly_nested_graph_interrupts: an interrupt
// two subgraph levels down reaches the root; GetState with Subgraphs shows
// the chain of nested states, each namespace extending its parent's; the
// resume reaches the innermost node and nothing that finished re-runs.
func TestStateDoublyNestedSubgraphInterrupt(t *testing.T) {
	calls := newCstCalls()
	trail := graph.Value[string]("trail")
	grandchild := cstCompile(t, graph.New(trail).AddNode(
		"g1", cstAppendTo(trail, calls, "g1"), nil).AddNode(

		"g2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("g2")
			v, err := graph.Interrupt[string](ctx, "deep question")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write(trail.Get(s) + "+g2:" + v), nil
		}, nil).
		AddEdge(graph.START, "g1").AddEdge("g1", "g2"))
	child := cstCompile(t, graph.New(trail).AddNode(
		"c1", cstAppendTo(trail, calls, "c1"), nil).AddSubgraph(

		"grand", grandchild, nil).
		AddNode(

			"c2", cstAppendTo(trail, calls, "c2"), nil).
		AddEdge(graph.START, "c1").AddEdge("c1", "grand").AddEdge("grand", "c2"))
	g := cstCompile(t, graph.New(trail).AddNode(
		"p1", cstAppendTo(trail, calls, "p1"), nil).AddSubgraph(

		"child", child, nil).
		AddNode(

			"p2", cstAppendTo(trail, calls, "p2"), nil).
		AddEdge(graph.START, "p1").AddEdge("p1", "child").AddEdge("child", "p2"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, trail.Write("in"), cstThread("t"))
	cstDiff(t, "interrupt", []any{"deep question"}, cstInterruptValues(out.Interrupts()))

	snap := cstState(t, g, cstCfg("t"), graph.StateOptions{Subgraphs: true})
	cstDiff(t, "root next", []string{"child"}, snap.Next)
	lvl1 := snap.Tasks[0].State
	if lvl1 == nil {
		t.Fatal("no state for the child task")
	}
	cstDiff(t, "child next", []string{"grand"}, lvl1.Next)
	if len(lvl1.Tasks) != 1 || lvl1.Tasks[0].State == nil {
		t.Fatalf("child tasks = %+v, want the grandchild's state", lvl1.Tasks)
	}
	lvl2 := lvl1.Tasks[0].State
	cstDiff(t, "grandchild next", []string{"g2"}, lvl2.Next)
	if got := trail.Get(lvl2.Values); got != "in+p1+c1+g1" {
		t.Errorf("grandchild trail = %q", got)
	}
	if !strings.HasPrefix(lvl1.Config.Namespace, "child:") ||
		!strings.HasPrefix(lvl2.Config.Namespace, lvl1.Config.Namespace+"|grand:") {
		t.Errorf("namespaces %q, %q: want child:<id> and child:<id>|grand:<id>", lvl1.Config.Namespace, lvl2.Config.Namespace)
	}
	cstDiff(t, "the root lists the deep interrupt", out.Interrupts(), snap.Interrupts)

	out = cstInvoke(t, g, graph.ResumeByID(map[string]any{out.Interrupts()[0].ID: "fine"}), cstThread("t"))
	if got := trail.Get(out); got != "in+p1+c1+g1+g2:fine+c2+p2" {
		t.Errorf("final trail = %q", got)
	}
	cstDiff(t, "calls", map[string]int{"p1": 1, "c1": 1, "g1": 1, "g2": 2, "c2": 1, "p2": 1}, calls.all())
}

// Mirrors test_pregel.py::test_parent_command_goto: a subgraph node returns
// an update addressed to the parent (ToParent) with a Goto; the parent
// applies the update as the subgraph node's own result and routes to the
// named parent node. The subgraph's other writes are not returned.
func TestStateParentCommandGoto(t *testing.T) {
	calls := newCstCalls()
	dialog := cstLog("dialog")
	child := cstCompile(t, graph.New(dialog).AddNode(
		"a_child", cstStep(dialog, calls, "a_child"), nil).AddNode(

		"b_child", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("b_child")
			return dialog.Write([]string{"b_child_state"}).Goto("b_parent").ToParent(), nil
		}, nil).
		AddEdge(graph.START, "a_child").AddEdge("a_child", "b_child"))
	parentDialog := cstLog("dialog")
	g := cstCompile(t, graph.New(parentDialog).AddSubgraph(
		"sub", child, &graph.NodeOptions{Destinations: []string{"b_parent"}}).
		AddNode(

			"b_parent", cstStep(parentDialog, calls, "b_parent"), nil).
		AddEdge(graph.START, "sub"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, parentDialog.Write([]string{"init_state"}), cstThread("t"))
	cstDiff(t, "dialog", []string{"init_state", "b_child_state", "b_parent"}, parentDialog.Get(out))
	cstDiff(t, "calls", map[string]int{"a_child": 1, "b_child": 1, "b_parent": 1}, calls.all())
	cstDiff(t, "nothing left", []string{}, cstState(t, g, cstCfg("t")).Next)
}

// Mirrors test_pregel.py::test_timeout_with_parent_command: ToParent from a
// node of a graph that is not a subgraph fails the run (LangGraph raises
// ParentCommand to the caller); as run input it is an input error.
func TestStateParentCommandAtRootIsError(t *testing.T) {
	value := graph.Value[string]("value")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(value).AddNode(
		"parent_cmd", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("parent_cmd")
			return value.Write("x").Goto("elsewhere").ToParent(), nil
		}, nil).
		AddEdge(graph.START, "parent_cmd"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	_, err := g.Invoke(context.Background(), value.Write("start"), cstThread("t"))
	if err == nil || !strings.Contains(err.Error(), "ToParent") || !strings.Contains(err.Error(), "not a subgraph") {
		t.Fatalf("err = %v, want the parent-update error", err)
	}
	cstDiff(t, "calls", map[string]int{"parent_cmd": 1}, calls.all())
	if got := value.Get(cstState(t, g, cstCfg("t")).Values); got != "start" {
		t.Errorf("state = %q: the node's writes must not apply", got)
	}
	if _, err := g.Invoke(context.Background(), value.Write("y").ToParent(), cstThread("t2")); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("ToParent as input: err = %v, want ErrInvalidInput", err)
	}
}

// ---------------------------------------------------------------- Send + interrupts

// cstSendAskers builds START -> fan, which Sends one "worker" task per item;
// each worker asks about its item and records the answer.
func cstSendAskers(t *testing.T, items []string, calls *cstCalls) (*graph.Graph, *graph.ReduceChannel[[]string]) {
	results := cstLog("results")
	item := graph.Value[string]("item")
	g := cstCompile(t, graph.New(results).AddNode(
		"fan", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("fan")
			return graph.Update{}, nil
		}, nil).
		AddNode(

			"worker", func(ctx context.Context, s graph.State) (graph.Update, error) {
				it := item.Get(s)
				calls.hit("worker " + it)
				ans, err := graph.Interrupt[string](ctx, "about "+it)
				if err != nil {
					return graph.Update{}, err
				}
				return results.Write([]string{it + "=" + ans}), nil
			}, &graph.NodeOptions{Input: []graph.Channel{item}}).
		AddEdge(graph.START, "fan").AddConditionalEdges(

		"fan", func(ctx context.Context, s graph.State) (graph.Route, error) {
			var sends []graph.Send
			for _, it := range items {
				sends = append(sends, graph.Send{Node: "worker", Arg: item.Write(it)})
			}
			return graph.Sends(sends...), nil
		}, nil),

		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	return g, results
}

// Mirrors test_large_cases.py::test_send_dedupe_on_resume and
// test_pregel.py::test_parallel_interrupts: Send tasks that interrupt are
// resumed by id one at a time, in any order; answered tasks are not run
// again, unanswered ones ask again under the same id, and the results come
// out in Send order whatever the order of the answers.
func TestStateSendFanOutInterruptsResumedByID(t *testing.T) {
	calls := newCstCalls()
	g, results := cstSendAskers(t, []string{"x", "y", "z"}, calls)
	out := cstInvoke(t, g, graph.Input(), cstThread("t"))
	ids := cstIDsByValue(t, out.Interrupts())
	if len(ids) != 3 {
		t.Fatalf("interrupts = %+v, want one per Send", out.Interrupts())
	}
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next", []string{"worker", "worker", "worker"}, snap.Next)

	out = cstInvoke(t, g, graph.ResumeByID(map[string]any{ids["about z"]: "3"}), cstThread("t"))
	cstDiff(t, "left after z", map[string]string{"about x": ids["about x"], "about y": ids["about y"]}, cstIDsByValue(t, out.Interrupts()))
	out = cstInvoke(t, g, graph.ResumeByID(map[string]any{ids["about x"]: "1"}), cstThread("t"))
	cstDiff(t, "left after x", map[string]string{"about y": ids["about y"]}, cstIDsByValue(t, out.Interrupts()))
	cstDiff(t, "pending results shown before the step ends", []string{"x=1", "z=3"}, results.Get(cstState(t, g, cstCfg("t")).Values))
	out = cstInvoke(t, g, graph.ResumeByID(map[string]any{ids["about y"]: "2"}), cstThread("t"))
	if len(out.Interrupts()) != 0 {
		t.Fatalf("still interrupted: %+v", out.Interrupts())
	}
	cstDiff(t, "results in Send order", []string{"x=1", "y=2", "z=3"}, results.Get(out))
	// z: asked, answered. x: asked, asked again, answered. y: four entries.
	cstDiff(t, "calls", map[string]int{"fan": 1, "worker z": 2, "worker x": 3, "worker y": 4}, calls.all())
}

// Mirrors test_pregel.py::test_multi_resume: five Send tasks interrupt;
// one ResumeByID built from GetState's interrupts answers them all in one
// invocation.
func TestStateSendFanOutResumedAtOnce(t *testing.T) {
	calls := newCstCalls()
	items := []string{"1", "2", "3", "4", "5"}
	g, results := cstSendAskers(t, items, calls)
	cstInvoke(t, g, graph.Input(), cstThread("t"))
	snap := cstState(t, g, cstCfg("t"))
	if len(snap.Interrupts) != 5 {
		t.Fatalf("interrupts = %+v", snap.Interrupts)
	}
	answers := map[string]any{}
	for _, it := range snap.Interrupts {
		answers[it.ID] = "ans for " + it.Value.(string)
	}
	out := cstInvoke(t, g, graph.ResumeByID(answers), cstThread("t"))
	var want []string
	for _, it := range items {
		want = append(want, it+"=ans for about "+it)
	}
	cstDiff(t, "results", want, results.Get(out))
	for _, it := range items {
		if n := calls.get("worker " + it); n != 2 {
			t.Errorf("worker %s ran %d times, want 2", it, n)
		}
	}
	if _, err := g.Invoke(context.Background(), graph.ResumeByID(map[string]any{"no-such-id": "x"}), cstThread("t")); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("ResumeByID with an unknown id: err = %v, want ErrInvalidInput", err)
	}
}

// ---------------------------------------------------------------- concurrency and cancellation

// Mirrors test_pregel.py::test_concurrent_execution_thread_safety: one
// compiled graph runs many threads at once (run under -race); each thread
// keeps its own state, interrupts and history.
func TestStateConcurrentThreads(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"left", cstStep(trail, calls, "left"), nil).AddNode(

		"right", cstStep(trail, calls, "right"), nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			v, err := graph.Interrupt[string](ctx, "who?")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{"ask:" + v}), nil
		}, nil).
		AddEdge(graph.START, "left").AddEdge(graph.START, "right").
		AddJoin([]string{"left", "right"}, "ask"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("thread-%d", i)
			opts := graph.RunOptions{ThreadID: id}
			out, err := g.Invoke(context.Background(), trail.Write([]string{id}), &opts)
			if err != nil {
				errs <- err
				return
			}
			if len(out.Interrupts()) != 1 {
				errs <- fmt.Errorf("%s: interrupts %+v", id, out.Interrupts())
				return
			}
			out, err = g.Invoke(context.Background(), graph.Resume(id), &opts)
			if err != nil {
				errs <- err
				return
			}
			if got, want := trail.Get(out), []string{id, "left", "right", "ask:" + id}; !slices.Equal(got, want) {
				errs <- fmt.Errorf("%s: trail %v, want %v", id, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cstDiff(t, "calls", map[string]int{"left": n, "right": n, "ask": 2 * n}, calls.all())
	for i := range n {
		id := fmt.Sprintf("thread-%d", i)
		snap := cstState(t, g, cstCfg(id))
		cstDiff(t, id, []string{id, "left", "right", "ask:" + id}, trail.Get(snap.Values))
		// input, __start__, left+right, ask.
		if h := cstHistory(t, g, id); len(h) != 4 {
			t.Errorf("%s: %d checkpoints, want 4", id, len(h))
		}
	}
}

// Mirrors test_pregel_async.py::test_checkpoint_put_after_cancellation: a
// run whose context is cancelled while a node runs ends with the context's
// error and leaves the last checkpoint whole: GetState works, the node that
// was running is next, and continuing finishes the run without re-running
// the nodes before it.
func TestStateCancelMidStepKeepsLastCheckpoint(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(string(d), func(t *testing.T) {
			trail := cstLog("trail")
			calls := newCstCalls()
			started := make(chan struct{}, 1)
			var mu sync.Mutex
			block := true
			g := cstCompile(t, graph.New(trail).AddNode(
				"a", cstStep(trail, calls, "a"), nil).AddNode(

				"slow", func(ctx context.Context, s graph.State) (graph.Update, error) {
					calls.hit("slow")
					mu.Lock()
					b := block
					mu.Unlock()
					if b {
						started <- struct{}{}
						<-ctx.Done()
						return graph.Update{}, ctx.Err()
					}
					return trail.Write([]string{"slow"}), nil
				}, nil).AddNode(

				"c", cstStep(trail, calls, "c"), nil).
				AddEdge(graph.START, "a").AddEdge("a", "slow").AddEdge("slow", "c"),
				graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
			opts := graph.RunOptions{ThreadID: "t", Durability: d}

			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-started
				cancel()
			}()
			_, err := g.Invoke(ctx, trail.Write([]string{"in"}), &opts)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			snap := cstState(t, g, cstCfg("t"))
			cstDiff(t, "next after cancel", []string{"slow"}, snap.Next)
			cstDiff(t, "state after cancel", []string{"in", "a"}, trail.Get(snap.Values))

			mu.Lock()
			block = false
			mu.Unlock()
			out := cstInvoke(t, g, graph.Update{}, &opts)
			cstDiff(t, "final", []string{"in", "a", "slow", "c"}, trail.Get(out))
			cstDiff(t, "calls", map[string]int{"a": 1, "slow": 2, "c": 1}, calls.all())
		})
	}
}

// Mirrors test_pregel_async.py::test_node_cancellation_on_external_cancel
// (parallel variant): cancelled while one of two parallel nodes is still
// running, the run returns the context's error promptly; the thread's
// latest checkpoint is the one before the step, and continuing runs the
// step to completion with a correct final state.
func TestStateCancelWithParallelNodes(t *testing.T) {
	value := graph.Reduce("value", cstSum)
	calls := newCstCalls()
	started := make(chan struct{}, 1)
	var mu sync.Mutex
	block := true
	g := cstCompile(t, graph.New(value).AddNode(
		"fast", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("fast")
			return value.Write(10), nil
		}, nil).AddNode(

		"slow", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("slow")
			mu.Lock()
			b := block
			mu.Unlock()
			if b {
				started <- struct{}{}
				<-ctx.Done()
				return graph.Update{}, ctx.Err()
			}
			return value.Write(100), nil
		}, nil).
		AddEdge(graph.START, "fast").AddEdge(graph.START, "slow"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := g.Invoke(ctx, value.Write(1), cstThread("t"))
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	snap := cstState(t, g, cstCfg("t"))
	if snap.Metadata.Step != 0 {
		t.Errorf("latest checkpoint step = %d, want 0 (before the cancelled step)", snap.Metadata.Step)
	}
	if !slices.Contains(snap.Next, "slow") {
		t.Errorf("next = %v, want slow among them", snap.Next)
	}
	mu.Lock()
	block = false
	mu.Unlock()
	out := cstInvoke(t, g, graph.Update{}, cstThread("t"))
	if got := value.Get(out); got != 111 {
		t.Errorf("final value = %d, want 1+10+100 = 111", got)
	}
	if n := calls.get("slow"); n != 2 {
		t.Errorf("slow ran %d times, want 2", n)
	}
}

// ---------------------------------------------------------------- more interrupt cases

// Mirrors test_pregel_async.py::test_node_not_cancelled_on_other_node_interrupted:
// a node that interrupts does not stop the node running beside it; that
// node's result is kept with the interrupted step and it does not run again
// when the interrupt is answered.
func TestStateInterruptKeepsSiblingResult(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			v, err := graph.Interrupt[string](ctx, "?")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{"ask:" + v}), nil
		}, nil).AddNode(

		"work", cstStep(trail, calls, "work"), nil).
		AddEdge(graph.START, "ask").AddEdge(graph.START, "work"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	cstInvoke(t, g, graph.Input(), cstThread("t"))
	snap := cstState(t, g, cstCfg("t"))
	cstDiff(t, "next", []string{"ask"}, snap.Next)
	cstDiff(t, "sibling's result shown", []string{"work"}, trail.Get(snap.Values))
	out := cstInvoke(t, g, graph.Resume("go"), cstThread("t"))
	cstDiff(t, "final", []string{"ask:go", "work"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"ask": 2, "work": 1}, calls.all())
}

// Mirrors test_time_travel.py::test_replay_from_before_interrupt_refires and
// test_replay_from_before_interrupt_then_resume: replaying from the
// checkpoint before an interrupting node asks again (the old answer is not
// reused); answering continues the new branch, and the original branch
// keeps its own answer.
func TestStateReplayBeforeInterruptRefires(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, graph.New(trail).AddNode(
		"a", cstStep(trail, calls, "a"), nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			v, err := graph.Interrupt[string](ctx, "name?")
			if err != nil {
				return graph.Update{}, err
			}
			return trail.Write([]string{"ask:" + v}), nil
		}, nil).
		AddEdge(graph.START, "a").AddEdge("a", "ask"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	first := cstInvoke(t, g, graph.Input(), cstThread("t"))
	out := cstInvoke(t, g, graph.Resume("first"), cstThread("t"))
	cstDiff(t, "first answer", []string{"a", "ask:first"}, trail.Get(out))
	oldTip := cstState(t, g, cstCfg("t"))

	var beforeAsk graph.StateSnapshot
	for _, h := range cstHistory(t, g, "t") {
		if slices.Equal(h.Next, []string{"ask"}) {
			beforeAsk = h
			break
		}
	}
	if beforeAsk.Config.CheckpointID == "" {
		t.Fatal("no checkpoint before ask in history")
	}
	out = cstInvoke(t, g, graph.Update{}, &graph.RunOptions{ThreadID: "t", CheckpointID: beforeAsk.Config.CheckpointID})
	cstDiff(t, "replay asks again", []any{"name?"}, cstInterruptValues(out.Interrupts()))
	if out.Interrupts()[0].ID == first.Interrupts()[0].ID {
		t.Errorf("the replayed interrupt reuses the old id %s; a fork gets new task ids", first.Interrupts()[0].ID)
	}
	out = cstInvoke(t, g, graph.Resume("second"), cstThread("t"))
	cstDiff(t, "second answer", []string{"a", "ask:second"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1, "ask": 4}, calls.all())
	cstDiff(t, "old branch keeps its answer", []string{"a", "ask:first"}, trail.Get(cstState(t, g, oldTip.Config).Values))
}

// Mirrors the is_resuming rule of LangGraph's loop (notes §1.2, §6.5; no
// dedicated LangGraph test): replay is a continuation, so replaying from
// the checkpoint a static breakpoint stopped at runs past the breakpoint
// (on a new branch) instead of stopping again without doing anything.
func TestStateReplayPassesStaticBreakpoint(t *testing.T) {
	trail := cstLog("trail")
	calls := newCstCalls()
	g := cstCompile(t, cstChain(trail, calls), graph.CompileOptions{
		Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"b"},
	})
	cstInvoke(t, g, trail.Write([]string{"in"}), cstThread("t"))
	stopped := cstState(t, g, cstCfg("t"))
	cstDiff(t, "stopped before b", []string{"b"}, stopped.Next)

	out := cstInvoke(t, g, graph.Update{}, &graph.RunOptions{ThreadID: "t", CheckpointID: stopped.Config.CheckpointID})
	cstDiff(t, "replay runs b and c", []string{"in", "a", "b", "c"}, trail.Get(out))
	cstDiff(t, "calls", map[string]int{"a": 1, "b": 1, "c": 1}, calls.all())
	latest := cstState(t, g, cstCfg("t"))
	cstDiff(t, "done", []string{}, latest.Next)
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_defer_node (its
// interrupt_before=["qa"] part): qa is deferred until the retrievers and
// analyzer_one are done, and a static breakpoint stops before it. An
// UpdateState there (as the node that ran last) keeps qa pending: the
// snapshot still shows next [qa], and continuing runs it on the updated
// state.
func TestStateUpdateStateKeepsDeferredNodePending(t *testing.T) {
	for _, join := range []bool{false, true} {
		t.Run(fmt.Sprintf("join=%v", join), func(t *testing.T) { cstDeferredUpdate(t, join) })
	}
}

func cstDeferredUpdate(t *testing.T, join bool) {
	query := graph.Value[string]("query")
	answer := graph.Value[string]("answer")
	docs := graph.Reduce("docs", func(a, b []string) []string {
		out := cstConcat(a, b)
		slices.Sort(out)
		return out
	})
	node := func(f func(s graph.State) graph.Update) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) { return f(s), nil }
	}
	b := graph.New(query, answer, docs).AddNode(
		"rewrite_query", node(func(s graph.State) graph.Update { return query.Write("query: " + query.Get(s)) }), nil).AddNode(

		"analyzer_one", node(func(s graph.State) graph.Update { return query.Write("analyzed: " + query.Get(s)) }), nil).AddNode(

		"retriever_one", node(func(graph.State) graph.Update { return docs.Write([]string{"doc1", "doc2"}) }), nil).AddNode(

		"retriever_two", node(func(graph.State) graph.Update { return docs.Write([]string{"doc3", "doc4"}) }), nil).
		AddNode(

			"qa", node(func(s graph.State) graph.Update { return answer.Write(strings.Join(docs.Get(s), ",")) }), &graph.NodeOptions{Defer: true}).
		AddEdge(graph.START, "rewrite_query").
		AddEdge("rewrite_query", "retriever_one").AddEdge("retriever_one", "analyzer_one").
		AddEdge("rewrite_query", "retriever_two").
		AddEdge("qa", graph.END)
	if join {
		b.AddJoin([]string{"retriever_one", "retriever_two"}, "qa")
	} else {
		b.AddEdge("retriever_one", "qa").AddEdge("retriever_two", "qa")
	}
	g := cstCompile(t, b, graph.CompileOptions{Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"qa"}})

	ctx := context.Background()
	cstInvoke(t, g, query.Write("what is weather in sf"), cstThread("2"))
	cstDiff(t, "next at the breakpoint", []string{"qa"}, cstState(t, g, cstCfg("2")).Next)

	if _, err := g.UpdateState(ctx, cstCfg("2"), docs.Write([]string{"doc5"}), ""); err != nil {
		t.Fatalf("UpdateState: %v", err)
	}
	snap := cstState(t, g, cstCfg("2"))
	cstDiff(t, "next after the update", []string{"qa"}, snap.Next)
	cstDiff(t, "docs after the update", []string{"doc1", "doc2", "doc3", "doc4", "doc5"}, docs.Get(snap.Values))
	if snap.Metadata.Source != "update" || snap.Metadata.Step != 4 {
		t.Errorf("metadata = %+v, want source update, step 4", snap.Metadata)
	}

	var ran []string
	for ev, err := range g.Stream(ctx, graph.Update{}, cstThread("2")) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if nu, ok := ev.Data.(graph.NodeUpdate); ok {
			ran = append(ran, nu.Node)
		}
	}
	out := cstState(t, g, cstCfg("2"))
	cstDiff(t, "nodes run on continuing", []string{"qa"}, ran)
	if got := answer.Get(out.Values); got != "doc1,doc2,doc3,doc4,doc5" {
		t.Errorf("answer = %q, want doc1,doc2,doc3,doc4,doc5", got)
	}
}

// Mirrors test_pregel.py::test_interrupt_multiple: a node asks twice. The
// first resume comes with an update (LangGraph's Command(resume=...,
// update=...), weft's Resume(v).And(update)): the update applies and the
// node runs again up to its second question. The update is kept while the
// run waits again, so the last resume shows it in the state it starts from
// and in the result, whether resumed by value or by interrupt id.
func TestStateResumeWithUpdate(t *testing.T) {
	for _, byID := range []bool{false, true} {
		t.Run(fmt.Sprintf("byID=%v", byID), func(t *testing.T) {
			myKey := graph.Reduce("my_key", func(a, b string) string { return a + b })
			g := cstCompile(t, graph.New(myKey).AddNode(
				"node", func(ctx context.Context, s graph.State) (graph.Update, error) {
					a, err := graph.Interrupt[string](ctx, map[string]int{"value": 1})
					if err != nil {
						return graph.Update{}, err
					}
					b, err := graph.Interrupt[string](ctx, map[string]int{"value": 2})
					if err != nil {
						return graph.Update{}, err
					}
					return myKey.Write(a + " " + b), nil
				}, nil).
				AddEdge(graph.START, "node"),
				graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
			ctx := context.Background()
			resume := func(its []graph.Interruption, v string) graph.Update {
				if byID {
					return graph.ResumeByID(map[string]any{its[0].ID: v})
				}
				return graph.Resume(v)
			}
			stream := func(in graph.Update, modes ...graph.StreamMode) []graph.Event {
				t.Helper()
				var evs []graph.Event
				for ev, err := range g.Stream(ctx, in, &graph.RunOptions{ThreadID: "1", StreamModes: modes}) {
					if err != nil {
						t.Fatalf("Stream: %v", err)
					}
					evs = append(evs, ev)
				}
				return evs
			}
			interruptsOf := func(evs []graph.Event) []graph.Interruption {
				t.Helper()
				if len(evs) != 1 {
					t.Fatalf("events = %+v, want one __interrupt__", evs)
				}
				nu, _ := evs[0].Data.(graph.NodeUpdate)
				if nu.Node != "__interrupt__" || len(nu.Interrupts) != 1 {
					t.Fatalf("event = %+v, want one __interrupt__ with one interrupt", evs[0].Data)
				}
				return nu.Interrupts
			}

			its := interruptsOf(stream(myKey.Write("DE")))
			cstDiff(t, "first question", map[string]int{"value": 1}, its[0].Value)

			its = interruptsOf(stream(resume(its, "answer 1").And(myKey.Write(" foofoo "))))
			cstDiff(t, "second question", map[string]int{"value": 2}, its[0].Value)
			if got := myKey.Get(cstState(t, g, cstCfg("1")).Values); got != "DE foofoo " {
				t.Errorf("state while waiting again = %q, want the update applied", got)
			}

			var values []string
			for _, ev := range stream(resume(its, "answer 2"), graph.StreamValues) {
				values = append(values, myKey.Get(ev.Data.(graph.State)))
			}
			cstDiff(t, "values", []string{"DE foofoo ", "DE foofoo answer 1 answer 2"}, values)
		})
	}
}

// Mirrors test_pregel.py::test_update_as_input: two runs on one thread are
// rebuilt on another by BulkUpdateState, superstep by superstep: the input
// (as INPUT), the START task (as START), then each node. The rebuilt
// history has the same values, next nodes and step numbers as the one the
// runs made.
func TestStateBulkUpdateRebuildsHistory(t *testing.T) {
	foo := graph.Value[string]("foo")
	set := func(v string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) { return foo.Write(v), nil }
	}
	g := cstCompile(t, graph.New(foo).AddNode(
		"agent", set("agent"), nil).AddNode(

		"tool", set("tool"), nil).
		AddEdge(graph.START, "agent").AddEdge("agent", "tool"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	for range 2 {
		if got := foo.Get(cstInvoke(t, g, foo.Write("input"), cstThread("1"))); got != "tool" {
			t.Fatalf("run result = %q, want tool", got)
		}
	}
	type row struct {
		Values map[string]string
		Next   []string
		Step   int
	}
	rows := func(thread string) []row {
		var out []row
		for _, snap := range cstHistory(t, g, thread) {
			vals := map[string]string{}
			if snap.Values.Has("foo") {
				vals["foo"] = foo.Get(snap.Values)
			}
			out = append(out, row{vals, snap.Next, snap.Metadata.Step})
		}
		return out
	}
	history := rows("1")

	var steps [][]graph.StateUpdate
	for range 2 {
		steps = append(steps,
			[]graph.StateUpdate{{Update: foo.Write("input"), AsNode: graph.INPUT}},
			[]graph.StateUpdate{{Update: foo.Write("input"), AsNode: graph.START}},
			[]graph.StateUpdate{{Update: foo.Write("agent"), AsNode: "agent"}},
			[]graph.StateUpdate{{Update: foo.Write("tool"), AsNode: "tool"}},
		)
	}
	cfg, err := g.BulkUpdateState(context.Background(), cstCfg("2"), steps)
	if err != nil {
		t.Fatalf("BulkUpdateState: %v", err)
	}
	if got := foo.Get(cstState(t, g, cfg).Values); got != "tool" {
		t.Errorf("rebuilt state = %q, want tool", got)
	}
	cstDiff(t, "rebuilt history", history, rows("2"))
	if len(history) != 8 {
		t.Errorf("history has %d checkpoints, want 8", len(history))
	}

	bad := []struct {
		name  string
		steps [][]graph.StateUpdate
	}{
		{"no supersteps", nil},
		{"empty superstep", [][]graph.StateUpdate{{}}},
		{"several without AsNode", [][]graph.StateUpdate{{{Update: foo.Write("a")}, {Update: foo.Write("b"), AsNode: "agent"}}}},
		{"input among others", [][]graph.StateUpdate{{{Update: foo.Write("a"), AsNode: graph.INPUT}, {Update: foo.Write("b"), AsNode: "agent"}}}},
		{"unknown node", [][]graph.StateUpdate{{{Update: foo.Write("a"), AsNode: "nope"}}}},
	}
	for _, c := range bad {
		if _, err := g.BulkUpdateState(context.Background(), cstCfg("3"), c.steps); !errors.Is(err, graph.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", c.name, err)
		}
	}
}

// Mirrors test_pregel.py::test_subgraph_checkpoint_true: a subgraph compiled
// with KeepState (LangGraph's checkpointer=True) keeps its state across its
// calls within the parent's thread, so its second call starts from what the
// first left (my_key accumulates in the subgraph, my_other_key shows it).
// Its events carry the namespace ["inner"], and the parent's history holds
// only the parent's four checkpoints.
func TestStateSubgraphKeepsStateAcrossCalls(t *testing.T) {
	myKey := graph.Reduce("my_key", func(a, b string) string { return a + b })
	other := graph.Value[string]("my_other_key")
	inner := cstCompile(t, graph.New(myKey, other).AddNode(
		"inner_1", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return myKey.Write(" got here").And(other.Write(myKey.Get(s))), nil
		}, nil).AddNode(

		"inner_2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return myKey.Write(" and there"), nil
		}, nil).
		AddEdge(graph.START, "inner_1").AddEdge("inner_1", "inner_2"),
		graph.CompileOptions{KeepState: true})
	parentKey := graph.Value[string]("my_key")
	g := cstCompile(t, graph.New(parentKey).AddSubgraph(
		"inner", inner, nil).
		AddEdge(graph.START, "inner").AddConditionalEdges(

		"inner", func(ctx context.Context, s graph.State) (graph.Route, error) {
			if strings.Count(parentKey.Get(s), "there") < 2 {
				return graph.To("inner"), nil
			}
			return graph.To(graph.END), nil
		}, nil),

		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	for _, d := range []graph.Durability{graph.DurabilityAsync, graph.DurabilitySync, graph.DurabilityExit} {
		t.Run(string(d), func(t *testing.T) { cstKeptSubgraphRun(t, g, d, parentKey) })
	}
}

func cstKeptSubgraphRun(t *testing.T, g *graph.Graph, d graph.Durability, parentKey *graph.ValueChannel[string]) {
	ctx := context.Background()
	type item struct {
		NS     string
		Node   string
		Writes map[string]string
	}
	var got []item
	thread := "kept-" + string(d)
	for ev, err := range g.Stream(ctx, parentKey.Write(""), &graph.RunOptions{ThreadID: thread, Subgraphs: true, Durability: d}) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		u, ok := ev.Update()
		if !ok {
			continue
		}
		ws := map[string]string{}
		for _, w := range u.Update.Writes() {
			ws[w.Channel] = w.Value.(string)
		}
		got = append(got, item{strings.Join(ev.Namespace, "|"), u.Node, ws})
	}
	want := []item{
		{"inner", "inner_1", map[string]string{"my_key": " got here", "my_other_key": ""}},
		{"inner", "inner_2", map[string]string{"my_key": " and there"}},
		{"", "inner", map[string]string{"my_key": " got here and there"}},
		{"inner", "inner_1", map[string]string{"my_key": " got here", "my_other_key": " got here and there got here and there"}},
		{"inner", "inner_2", map[string]string{"my_key": " and there"}},
		{"", "inner", map[string]string{"my_key": " got here and there got here and there got here and there"}},
	}
	cstDiff(t, "events", want, got)
	wantCheckpoints := 4
	if d == graph.DurabilityExit {
		wantCheckpoints = 1
	}
	if n := len(cstHistory(t, g, thread)); n != wantCheckpoints {
		t.Errorf("parent history has %d checkpoints, want %d", n, wantCheckpoints)
	}
	// Another thread starts the subgraph afresh.
	out := cstInvoke(t, g, parentKey.Write(""), &graph.RunOptions{ThreadID: thread + "-other", Durability: d})
	if got := parentKey.Get(out); got != " got here and there got here and there got here and there" {
		t.Errorf("other thread's result = %q", got)
	}
}

// A subgraph that keeps its state and stops at an interrupt is continued,
// not restarted, when the parent resumes; its next call then builds on the
// state the resumed call left.
func TestStateKeptSubgraphInterruptResumes(t *testing.T) {
	ctx := context.Background()
	calls := newCstCalls()
	bar := cstLog("bar")
	inner := cstCompile(t, graph.New(bar).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.hit("ask")
			return bar.Write([]string{graph.Ask[string](ctx, "baz?")}), nil
		}, nil).
		AddEdge(graph.START, "ask"),
		graph.CompileOptions{KeepState: true})
	g := cstCompile(t, graph.New(bar).AddSubgraph("sub", inner, nil).AddEdge(graph.START, "sub"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	out := cstInvoke(t, g, bar.Write([]string{"a"}), cstThread("1"))
	cstDiff(t, "interrupt", []any{"baz?"}, cstInterruptValues(out.Interrupts()))
	snap := cstState(t, g, cstCfg("1"), graph.StateOptions{Subgraphs: true})
	if len(snap.Tasks) != 1 || snap.Tasks[0].State == nil || snap.Tasks[0].Namespace != "sub" {
		t.Fatalf("tasks = %+v, want the sub task with its state in namespace sub", snap.Tasks)
	}
	cstDiff(t, "subgraph state", []string{"a"}, bar.Get(snap.Tasks[0].State.Values))

	out = cstInvoke(t, g, graph.Resume("b"), cstThread("1"))
	// The parent's bar gets the subgraph's whole list back: a + (a, b).
	cstDiff(t, "after resume", []string{"a", "a", "b"}, bar.Get(out))
	cstDiff(t, "ask calls", 2, calls.get("ask"))

	// A new call: its input lands on the subgraph's kept [a b].
	out = cstInvoke(t, g, bar.Write([]string{"x"}), cstThread("1"))
	cstDiff(t, "second interrupt", []any{"baz?"}, cstInterruptValues(out.Interrupts()))
	snap = cstState(t, g, cstCfg("1"), graph.StateOptions{Subgraphs: true})
	cstDiff(t, "kept subgraph state", []string{"a", "b", "a", "a", "b", "x"}, bar.Get(snap.Tasks[0].State.Values))
	if _, err := g.Invoke(ctx, graph.Resume("y"), cstThread("1")); err != nil {
		t.Fatal(err)
	}
	cstDiff(t, "ask calls", 4, calls.get("ask"))
}
