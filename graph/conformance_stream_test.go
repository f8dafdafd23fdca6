package graph_test

// Conformance cases for streaming: what Graph.Stream yields, in which order,
// for each stream mode, and how a stream ends. Each case names the LangGraph
// test whose behaviour it checks. Cases that need an order between parallel
// tasks get it from gates the test opens while it reads the stream, never
// from sleeps: a task waits until the reader has seen an earlier event.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// ---------------------------------------------------------------- helpers

// csMsg is a chat message for Messages channels.
type csMsg struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (m csMsg) MessageID() string             { return m.ID }
func (m csMsg) WithMessageID(id string) csMsg { m.ID = id; return m }

func csConcat(a, b string) string { return a + b }

func csAppendStrings(a, b []string) []string { return append(slices.Clone(a), b...) }

func csSum(a, b int) int { return a + b }

// csGuard bounds how long a gated task waits for the reader. It only keeps a
// broken run from hanging the test; no assertion depends on time.
const csGuard = 5 * time.Second

// csWait blocks until gate is closed (a nil gate is open).
func csWait(ctx context.Context, gate <-chan struct{}) error {
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(csGuard):
		return errors.New("test gate was never opened")
	}
}

// csGate is a gate the reader opens once.
type csGate struct {
	ch   chan struct{}
	once sync.Once
}

func newCSGate() *csGate { return &csGate{ch: make(chan struct{})} }
func (g *csGate) open()  { g.once.Do(func() { close(g.ch) }) }
func (g *csGate) wait() <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.ch
}

// csDrain reads a whole stream. It checks that an error, if any, is the last
// item and comes with the zero Event, and returns the events and the error.
// onEvent, if set, sees each event as it arrives (to open gates).
func csDrain(t *testing.T, seq iter.Seq2[graph.Event, error], onEvent func(graph.Event)) ([]graph.Event, error) {
	t.Helper()
	var evs []graph.Event
	var runErr error
	for ev, err := range seq {
		if runErr != nil {
			t.Errorf("stream yielded (%+v, %v) after its error %v", ev, err, runErr)
			continue
		}
		if err != nil {
			if ev.Mode != "" || ev.Namespace != nil || ev.Data != nil {
				t.Errorf("the error item carries event %+v; want the zero Event", ev)
			}
			runErr = err
			continue
		}
		evs = append(evs, ev)
		if onEvent != nil {
			onEvent(ev)
		}
	}
	return evs, runErr
}

// csJSON is v's JSON form decoded into plain Go values, for golden checks.
func csJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out
}

// csItem is an event in a comparable form: mode and JSON data.
type csItem struct {
	Mode string
	Data any
}

func csItems(t *testing.T, evs []graph.Event) []csItem {
	t.Helper()
	out := make([]csItem, len(evs))
	for i, ev := range evs {
		out[i] = csItem{Mode: string(ev.Mode), Data: csJSON(t, ev.Data)}
	}
	return out
}

// csData is the JSON data of each event.
func csData(t *testing.T, evs []graph.Event) []any {
	t.Helper()
	out := make([]any, len(evs))
	for i, ev := range evs {
		out[i] = csJSON(t, ev.Data)
	}
	return out
}

// csUpdateNode is the node of an updates event ("" for other events).
func csUpdateNode(ev graph.Event) string {
	if nu, ok := ev.Data.(graph.NodeUpdate); ok && ev.Mode == graph.StreamUpdates {
		return nu.Node
	}
	return ""
}

type csObj = map[string]any

func csModes(ms ...graph.StreamMode) []graph.StreamMode { return ms }

func csCompile(t *testing.T, b *graph.Builder, opts ...graph.CompileOptions) *graph.Graph {
	t.Helper()
	g, err := b.Compile(opt(opts))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return g
}

// ---------------------------------------------------------------- updates

var (
	csQuery  = graph.Value[string]("query")
	csAnswer = graph.Value[string]("answer")
	csDocs   = graph.Reduce("docs", func(a, b []string) []string {
		out := append(slices.Clone(a), b...)
		slices.Sort(out)
		return out
	})
)

// csFanOut is LangGraph's waiting-edge fan-out: rewrite_query feeds
// analyzer_one -> retriever_one and, in parallel, retriever_two; qa joins the
// two retrievers. retriever_two finishes only once gate opens.
func csFanOut(gate *csGate) *graph.Builder {
	return graph.New(csQuery, csAnswer, csDocs).AddNode(
		"rewrite_query", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csQuery.Write("query: " + csQuery.Get(s)), nil
		}, nil).AddNode(

		"analyzer_one", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csQuery.Write("analyzed: " + csQuery.Get(s)), nil
		}, nil).AddNode(

		"retriever_one", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csDocs.Write([]string{"doc1", "doc2"}), nil
		}, nil).AddNode(

		"retriever_two", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if err := csWait(ctx, gate.wait()); err != nil {
				return graph.Update{}, err
			}
			return csDocs.Write([]string{"doc3", "doc4"}), nil
		}, nil).AddNode(

		"qa", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csAnswer.Write(strings.Join(csDocs.Get(s), ",")), nil
		}, nil).
		AddEdge(graph.START, "rewrite_query").
		AddEdge("rewrite_query", "analyzer_one").
		AddEdge("analyzer_one", "retriever_one").
		AddEdge("rewrite_query", "retriever_two").
		AddJoin([]string{"retriever_one", "retriever_two"}, "qa").
		AddEdge("qa", graph.END)
}

// csOpenAfter returns an onEvent callback that opens gate once the reader has
// seen the update of node.
func csOpenAfter(gate *csGate, node string) func(graph.Event) {
	return func(ev graph.Event) {
		if csUpdateNode(ev) == node {
			gate.open()
		}
	}
}

// Mirrors test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge.
// The default mode is updates: one {node: writes} event per finished task, in
// completion order, never one for the hidden __start__ task; a static
// interrupt_after adds {"__interrupt__": []}, and continuing streams the rest.
func TestConformanceStreamDefaultUpdates(t *testing.T) {
	ctx := context.Background()
	want := []any{
		csObj{"rewrite_query": csObj{"query": "query: what is weather in sf"}},
		csObj{"analyzer_one": csObj{"query": "analyzed: query: what is weather in sf"}},
		csObj{"retriever_two": csObj{"docs": []any{"doc3", "doc4"}}},
		csObj{"retriever_one": csObj{"docs": []any{"doc1", "doc2"}}},
		csObj{"qa": csObj{"answer": "doc1,doc2,doc3,doc4"}},
	}

	gate := newCSGate()
	g := csCompile(t, csFanOut(gate))
	evs, err := csDrain(t, g.Stream(ctx, csQuery.Write("what is weather in sf"), nil), csOpenAfter(gate, "analyzer_one"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	for _, ev := range evs {
		if ev.Mode != graph.StreamUpdates || len(ev.Namespace) != 0 {
			t.Errorf("event %+v: want a root updates event", ev)
		}
		if nu, ok := ev.Data.(graph.NodeUpdate); !ok || nu.Node == graph.START {
			t.Errorf("event data %#v: want a NodeUpdate of a user node", ev.Data)
		}
	}
	if diff := cmp.Diff(want, csData(t, evs)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}

	gate = newCSGate()
	gi := csCompile(t, csFanOut(gate), graph.CompileOptions{Checkpointer: checkpoint.NewMemory(), InterruptAfter: []string{"retriever_one"}})
	opts := graph.RunOptions{ThreadID: "1"}
	evs, err = csDrain(t, gi.Stream(ctx, csQuery.Write("what is weather in sf"), &opts), csOpenAfter(gate, "analyzer_one"))
	if err != nil {
		t.Fatalf("Stream with interrupt_after: %v", err)
	}
	wantStop := append(slices.Clone(want[:4]), csObj{"__interrupt__": []any{}})
	if diff := cmp.Diff(wantStop, csData(t, evs)); diff != "" {
		t.Errorf("updates up to the static interrupt (-want +got):\n%s", diff)
	}
	if nu := evs[len(evs)-1].Data.(graph.NodeUpdate); nu.Node != "__interrupt__" || len(nu.Interrupts) != 0 {
		t.Errorf("static interrupt event = %+v; want node __interrupt__ without interrupts", nu)
	}
	evs, err = csDrain(t, gi.Stream(ctx, graph.Update{}, &opts), nil)
	if err != nil {
		t.Fatalf("continue: %v", err)
	}
	if diff := cmp.Diff(want[4:], csData(t, evs)); diff != "" {
		t.Errorf("updates after continuing (-want +got):\n%s", diff)
	}
}

// ---------------------------------------------------------------- values

var (
	csFoo = graph.Value[string]("foo")
	csBar = graph.Value[string]("bar")
)

// Mirrors test_pregel.py::test_get_stream_writer (its values part: the input
// state, then the state after the node even though the node rewrote the same
// value) and the values expectations of test_interrupt_stream_mode_values (an
// input that writes nothing makes no event). A step whose tasks write nothing
// makes no event either.
func TestConformanceStreamValuesMode(t *testing.T) {
	ctx := context.Background()
	g := csCompile(t, graph.New(csFoo, csBar).AddNode(
		"same", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csFoo.Write(csFoo.Get(s)), nil
		}, nil).AddNode(

		"noop", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return graph.Update{}, nil
		}, nil).AddNode(

		"change", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csFoo.Write("baz").And(csBar.Write("b")), nil
		}, nil).
		AddEdge(graph.START, "same").AddEdge("same", "noop").AddEdge("noop", "change").AddEdge("change", graph.END))

	opts := graph.RunOptions{StreamModes: csModes(graph.StreamValues)}
	evs, err := csDrain(t, g.Stream(ctx, csFoo.Write("bar"), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		csObj{"foo": "bar"},             // the input, after the __start__ step
		csObj{"foo": "bar"},             // after "same": rewritten, so emitted
		csObj{"foo": "baz", "bar": "b"}, // after "change"; "noop" made no event
	}
	if diff := cmp.Diff(want, csData(t, evs)); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	for _, ev := range evs {
		if _, ok := ev.Data.(graph.State); !ok || ev.Mode != graph.StreamValues {
			t.Errorf("event %+v: want a values event with a graph.State", ev)
		}
	}

	evs, err = csDrain(t, g.Stream(ctx, graph.Input(), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []any{csObj{"foo": ""}, csObj{"foo": "baz", "bar": "b"}}
	if diff := cmp.Diff(want, csData(t, evs)); diff != "" {
		t.Errorf("values for an empty input (-want +got):\n%s", diff)
	}
}

// ---------------------------------------------------------------- order

// csDescribe renders an event as one line, to check the order of modes.
func csDescribe(t *testing.T, ev graph.Event) string {
	t.Helper()
	switch d := ev.Data.(type) {
	case graph.StateSnapshot:
		return fmt.Sprintf("%s step=%d next=%v", ev.Mode, d.Metadata.Step, d.Next)
	case graph.TaskStart:
		return fmt.Sprintf("tasks start %s step=%d", d.Name, d.Step)
	case graph.TaskResult:
		return fmt.Sprintf("tasks result %s step=%d", d.Name, d.Step)
	case graph.NodeUpdate:
		return "updates " + d.Node
	case graph.State:
		b, _ := json.Marshal(d)
		return "values " + string(b)
	case graph.DebugEvent:
		return fmt.Sprintf("debug %s step=%d", d.Type, d.Step)
	}
	return fmt.Sprintf("%s %v", ev.Mode, ev.Data)
}

// Mirrors test_pregel.py::test_multiple_writes_same_channel_from_same_node
// (["updates", "tasks"]: task start, then per task its update and its result)
// and the order of _loop.py's tick/after_tick: within a step, the checkpoint
// the step starts from, then every task start, then per finished task its
// update and its result, then the values after the step. The order of
// RunOptions.StreamModes does not matter.
func TestConformanceStreamModeOrder(t *testing.T) {
	ctx := context.Background()
	gate := newCSGate()
	node := func(v string, gate *csGate) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			if err := csWait(ctx, gate.wait()); err != nil {
				return graph.Update{}, err
			}
			return csFoo.Write(v), nil
		}
	}
	g := csCompile(t, graph.New(csFoo, csBar).AddNode(
		"one", node("one", nil), nil).AddNode(

		"two", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csBar.Write("two"), nil
		}, nil).AddNode(

		"three", node("three", gate), nil).
		AddEdge(graph.START, "one").AddEdge("one", "two").AddEdge("one", "three").
		AddJoin([]string{"two", "three"}, graph.END),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	// "three" finishes only after the reader saw the result of "two".
	onEvent := func(ev graph.Event) {
		if r, ok := ev.Data.(graph.TaskResult); ok && r.Name == "two" {
			gate.open()
		}
	}
	opts := graph.RunOptions{ThreadID: "1", StreamModes: csModes(graph.StreamValues, graph.StreamUpdates, graph.StreamTasks, graph.StreamCheckpoints)}
	evs, err := csDrain(t, g.Stream(ctx, csFoo.Write("input"), &opts), onEvent)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, csDescribe(t, ev))
	}
	want := []string{
		"checkpoints step=-1 next=[__start__]",
		`values {"foo":"input"}`,
		"checkpoints step=0 next=[one]",
		"tasks start one step=1",
		"updates one",
		"tasks result one step=1",
		`values {"foo":"one"}`,
		"checkpoints step=1 next=[three two]",
		"tasks start three step=2",
		"tasks start two step=2",
		"updates two",
		"tasks result two step=2",
		"updates three",
		"tasks result three step=2",
		`values {"bar":"two","foo":"three"}`,
		"checkpoints step=2 next=[]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event order (-want +got):\n%s", diff)
	}
}

// ---------------------------------------------------------------- interrupts

var (
	csRobot = graph.Value[string]("robot_input")
	csHuman = graph.Value[string]("human_input")
)

// Mirrors test_pregel.py::test_interrupt_stream_mode_values: with
// ["updates", "values"], an interrupt streams {"__interrupt__": [...]} and
// then the state with "__interrupt__"; the resumed run first streams the
// state it continues from.
func TestConformanceStreamInterruptValues(t *testing.T) {
	ctx := context.Background()
	g := csCompile(t, graph.New(csRobot, csHuman).AddNode(
		"robot_input_node", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csRobot.Write("beep boop i am a robot"), nil
		}, nil).AddNode(

		"human_input_node", func(ctx context.Context, s graph.State) (graph.Update, error) {
			v, err := graph.Interrupt[string](ctx, "interrupt")
			if err != nil {
				return graph.Update{}, err
			}
			return csHuman.Write(v), nil
		}, nil).
		AddEdge(graph.START, "robot_input_node").
		AddEdge("robot_input_node", "human_input_node"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	opts := graph.RunOptions{ThreadID: "t", StreamModes: csModes(graph.StreamUpdates, graph.StreamValues)}

	evs, err := csDrain(t, g.Stream(ctx, graph.Input(), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 3 {
		t.Fatalf("got %d events: %s", len(evs), csItems(t, evs))
	}
	nu, _ := evs[2].Data.(graph.NodeUpdate)
	if len(nu.Interrupts) != 1 || nu.Interrupts[0].ID == "" || nu.Interrupts[0].Value != "interrupt" {
		t.Fatalf("third event = %+v; want the interrupt with an id", evs[2])
	}
	intr := []any{csObj{"id": nu.Interrupts[0].ID, "value": "interrupt"}}
	want := []csItem{
		{"updates", csObj{"robot_input_node": csObj{"robot_input": "beep boop i am a robot"}}},
		{"values", csObj{"robot_input": "beep boop i am a robot"}},
		{"updates", csObj{"__interrupt__": intr}},
		{"values", csObj{"robot_input": "beep boop i am a robot", "__interrupt__": intr}},
	}
	if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
		t.Errorf("first run (-want +got):\n%s", diff)
	}
	if st, ok := evs[len(evs)-1].Data.(graph.State); !ok || len(st.Interrupts()) != 1 {
		t.Errorf("last event %+v: want a values State carrying the interrupt", evs[len(evs)-1])
	}

	evs, err = csDrain(t, g.Stream(ctx, graph.Resume("i am a human"), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []csItem{
		{"values", csObj{"robot_input": "beep boop i am a robot"}},
		{"updates", csObj{"human_input_node": csObj{"human_input": "i am a human"}}},
		{"values", csObj{"robot_input": "beep boop i am a robot", "human_input": "i am a human"}},
	}
	if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
		t.Errorf("resumed run (-want +got):\n%s", diff)
	}
}

// Mirrors test_pregel.py::test_nested_graph_interrupts_parallel (its values
// streams with interrupt_before and interrupt_after): a static interrupt
// streams {"__interrupt__": []} with no interrupts and no extra values
// event, and continuing streams the current state first.
func TestConformanceStreamStaticInterrupts(t *testing.T) {
	ctx := context.Background()
	build := func() *graph.Builder {
		step := func(v string) graph.NodeFunc {
			return func(ctx context.Context, s graph.State) (graph.Update, error) {
				return csFoo.Write(csFoo.Get(s) + v), nil
			}
		}
		return graph.New(csFoo).AddSequence(
			graph.NamedNode{Name: "a", Fn: step("a")},
			graph.NamedNode{Name: "b", Fn: step("b")},
		).AddEdge(graph.START, "a")
	}
	ms := csModes(graph.StreamUpdates, graph.StreamValues)

	t.Run("before", func(t *testing.T) {
		g := csCompile(t, build(), graph.CompileOptions{Checkpointer: checkpoint.NewMemory(), InterruptBefore: []string{"b"}})
		opts := graph.RunOptions{ThreadID: "1", StreamModes: ms}
		evs, err := csDrain(t, g.Stream(ctx, csFoo.Write(">"), &opts), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []csItem{
			{"values", csObj{"foo": ">"}},
			{"updates", csObj{"a": csObj{"foo": ">a"}}},
			{"values", csObj{"foo": ">a"}},
			{"updates", csObj{"__interrupt__": []any{}}},
		}
		if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
			t.Errorf("first run (-want +got):\n%s", diff)
		}
		evs, err = csDrain(t, g.Stream(ctx, graph.Update{}, &opts), nil)
		if err != nil {
			t.Fatal(err)
		}
		want = []csItem{
			{"values", csObj{"foo": ">a"}},
			{"updates", csObj{"b": csObj{"foo": ">ab"}}},
			{"values", csObj{"foo": ">ab"}},
		}
		if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
			t.Errorf("continued run (-want +got):\n%s", diff)
		}
	})

	t.Run("after", func(t *testing.T) {
		g := csCompile(t, build(), graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
		opts := graph.RunOptions{ThreadID: "1", StreamModes: ms, InterruptAfter: []string{"a"}}
		evs, err := csDrain(t, g.Stream(ctx, csFoo.Write(">"), &opts), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []csItem{
			{"values", csObj{"foo": ">"}},
			{"updates", csObj{"a": csObj{"foo": ">a"}}},
			{"values", csObj{"foo": ">a"}},
			{"updates", csObj{"__interrupt__": []any{}}},
		}
		if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
			t.Errorf("first run (-want +got):\n%s", diff)
		}
		evs, err = csDrain(t, g.Stream(ctx, graph.Update{}, &opts), nil)
		if err != nil {
			t.Fatal(err)
		}
		want = []csItem{
			{"values", csObj{"foo": ">a"}},
			{"updates", csObj{"b": csObj{"foo": ">ab"}}},
			{"values", csObj{"foo": ">ab"}},
		}
		if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
			t.Errorf("continued run (-want +got):\n%s", diff)
		}
	})
}

// ---------------------------------------------------------------- custom

// Mirrors test_pregel.py::test_get_stream_writer: Emit feeds the custom
// mode; with ["custom", "updates"] the node's custom event comes before its
// update; without the custom mode Emit does nothing.
func TestConformanceStreamCustomWriter(t *testing.T) {
	ctx := context.Background()
	g := csCompile(t, graph.New(csFoo).AddNode(
		"my_node", func(ctx context.Context, s graph.State) (graph.Update, error) {
			graph.Emit(ctx, "custom!")
			return csFoo.Write(csFoo.Get(s)), nil
		}, nil).
		AddEdge(graph.START, "my_node"))

	evs, err := csDrain(t, g.Stream(ctx, csFoo.Write("bar"), &graph.RunOptions{StreamModes: csModes(graph.StreamCustom)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]csItem{{"custom", "custom!"}}, csItems(t, evs)); diff != "" {
		t.Errorf("custom only (-want +got):\n%s", diff)
	}

	evs, err = csDrain(t, g.Stream(ctx, csFoo.Write("bar"), &graph.RunOptions{StreamModes: csModes(graph.StreamValues)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{csObj{"foo": "bar"}, csObj{"foo": "bar"}}, csData(t, evs)); diff != "" {
		t.Errorf("values only (-want +got):\n%s", diff)
	}

	evs, err = csDrain(t, g.Stream(ctx, csFoo.Write("bar"), &graph.RunOptions{StreamModes: csModes(graph.StreamCustom, graph.StreamUpdates)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []csItem{{"custom", "custom!"}, {"updates", csObj{"my_node": csObj{"foo": "bar"}}}}
	if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
		t.Errorf("custom and updates (-want +got):\n%s", diff)
	}
}

var (
	csN    = graph.Value[int]("n")
	csDone = graph.Reduce("done", func(a, b []int) []int { return append(slices.Clone(a), b...) })
)

// Mirrors test_pregel.py::test_stream_buffering_single_node (custom events
// reach the reader while the node is still running) for many parallel Send
// tasks: every custom event arrives, each task's in order and before that
// task's update.
func TestConformanceStreamCustomParallel(t *testing.T) {
	ctx := context.Background()
	const workers, per = 8, 25
	gate := newCSGate()
	g := csCompile(t, graph.New(csN, csDone).AddNode(
		"worker", func(ctx context.Context, s graph.State) (graph.Update, error) {
			n := csN.Get(s)
			if n == 0 {

				graph.Emit(ctx, csObj{"n": 0, "i": -1})
				if err := csWait(ctx, gate.wait()); err != nil {
					return graph.Update{}, err
				}
			}
			for i := range per {
				graph.Emit(ctx, csObj{"n": n, "i": i})
			}
			return csDone.Write([]int{n}), nil
		}, nil).AddConditionalEdges(

		graph.START, func(ctx context.Context, s graph.State) (graph.Route, error) {
			var sends []graph.Send
			for n := range workers {
				sends = append(sends, graph.Send{Node: "worker", Arg: csN.Write(n)})
			}
			return graph.Sends(sends...), nil
		}, nil))

	next := map[int]int{} // the next custom index expected per worker
	finished := map[int]bool{}
	for n := range workers {
		next[n] = 0
	}
	next[0] = -1
	evs, err := csDrain(t, g.Stream(ctx, graph.Input(), &graph.RunOptions{StreamModes: csModes(graph.StreamCustom, graph.StreamUpdates)}), func(ev graph.Event) {
		switch ev.Mode {
		case graph.StreamCustom:
			m := ev.Data.(csObj)
			n, i := m["n"].(int), m["i"].(int)
			if finished[n] {
				t.Errorf("custom event %v arrived after worker %d's update", m, n)
			}
			if i != next[n] {
				t.Errorf("worker %d: custom event %d arrived, want %d", n, i, next[n])
			}
			next[n] = i + 1
			if n == 0 && i == -1 {
				gate.open()
			}
		case graph.StreamUpdates:
			w := ev.Data.(graph.NodeUpdate).Update.Writes()
			n := w[0].Value.([]int)[0]
			finished[n] = true
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	custom := 0
	for _, ev := range evs {
		if ev.Mode == graph.StreamCustom {
			custom++
		}
	}
	if want := workers*per + 1; custom != want {
		t.Errorf("got %d custom events, want %d", custom, want)
	}
	for n := range workers {
		if next[n] != per || !finished[n] {
			t.Errorf("worker %d: %d custom events, finished=%v", n, next[n], finished[n])
		}
	}
}

// ---------------------------------------------------------------- messages

var csMessages = graph.Messages[csMsg]("messages")

func csMsgEvents(t *testing.T, evs []graph.Event) []graph.MessageEvent {
	t.Helper()
	var out []graph.MessageEvent
	for _, ev := range evs {
		if ev.Mode != graph.StreamMessages {
			continue
		}
		me, ok := ev.Data.(graph.MessageEvent)
		if !ok {
			t.Fatalf("messages event data is %T", ev.Data)
		}
		out = append(out, me)
	}
	return out
}

// Mirrors test_messages_state.py::test_push_messages_in_graph and the
// metadata of test_pregel.py::test_stream_mode_messages_command: chunks a
// node streams with StreamMessage, and messages it writes that are new, are
// tagged with the node, step and task; a message streamed as chunks is not
// streamed again when written, nor is one the node got as input. As with
// LangGraph's StreamMessagesHandler (on_chain_end runs before the task's
// writes are committed), a node's written messages precede its update.
func TestConformanceStreamMessages(t *testing.T) {
	ctx := context.Background()
	var chatTask atomic.Value
	g := csCompile(t, graph.New(csMessages).AddNode(
		"chat", func(ctx context.Context, s graph.State) (graph.Update, error) {
			ti, _ := graph.CurrentTask(ctx)
			chatTask.Store(ti.TaskID)
			graph.StreamMessage(ctx, csMsg{ID: "ai-1", Role: "ai", Content: "Hel"})
			graph.StreamMessage(ctx, csMsg{ID: "ai-1", Role: "ai", Content: "lo"})
			in := csMessages.Get(s)
			return csMessages.Write(append(slices.Clone(in),
				csMsg{ID: "ai-1", Role: "ai", Content: "Hello"},
				csMsg{ID: "tool-1", Role: "tool", Content: "42"})...), nil
		}, nil).AddNode(

		"echo", func(ctx context.Context, s graph.State) (graph.Update, error) {

			return csMessages.Write(csMessages.Get(s)...), nil
		}, nil).
		AddEdge(graph.START, "chat").AddEdge("chat", "echo"))

	evs, err := csDrain(t, g.Stream(ctx, csMessages.Write(csMsg{ID: "h-1", Role: "human", Content: "hi"}), &graph.RunOptions{StreamModes: csModes(graph.StreamMessages, graph.StreamUpdates, graph.StreamValues)}),
		nil)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range evs {
		if me, ok := ev.Data.(graph.MessageEvent); ok {
			order = append(order, "message "+me.Message.(csMsg).Content)
			continue
		}
		order = append(order, string(ev.Mode)+" "+csUpdateNode(ev))
	}
	// Chunks stream while the node runs, its new messages as it ends,
	// then its update.
	wantOrder := []string{"values ", "message Hel", "message lo", "message 42", "updates chat", "values ", "updates echo", "values "}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("event order (-want +got):\n%s", diff)
	}
	id, _ := chatTask.Load().(string)
	// The task's triggers, path and namespace are LangGraph's
	// langgraph_triggers, langgraph_path and langgraph_checkpoint_ns.
	tag := func(m csMsg) graph.MessageEvent {
		return graph.MessageEvent{Message: m, Node: "chat", Step: 1, TaskID: id,
			Triggers: []string{"branch:to:chat"}, Path: []any{"__pregel_pull", "chat"}, Namespace: "chat:" + id}
	}
	want := []graph.MessageEvent{
		tag(csMsg{ID: "ai-1", Role: "ai", Content: "Hel"}),
		tag(csMsg{ID: "ai-1", Role: "ai", Content: "lo"}),
		tag(csMsg{ID: "tool-1", Role: "tool", Content: "42"}),
	}
	if diff := cmp.Diff(want, csMsgEvents(t, evs)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	for _, ev := range evs {
		if ev.Mode == graph.StreamMessages && len(ev.Namespace) != 0 {
			t.Errorf("root message event has namespace %v", ev.Namespace)
		}
	}
	final := evs[len(evs)-1]
	wantFinal := csObj{"messages": []any{
		csObj{"id": "h-1", "role": "human", "content": "hi"},
		csObj{"id": "ai-1", "role": "ai", "content": "Hello"},
		csObj{"id": "tool-1", "role": "tool", "content": "42"},
	}}
	if diff := cmp.Diff(csItem{"values", wantFinal}, csItems(t, []graph.Event{final})[0]); diff != "" {
		t.Errorf("final values (-want +got):\n%s", diff)
	}
	// Without the messages mode, StreamMessage does nothing.
	evs, err = csDrain(t, g.Stream(ctx, csMessages.Write(csMsg{ID: "h-1", Role: "human", Content: "hi"}), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := csMsgEvents(t, evs); len(got) != 0 {
		t.Errorf("messages without the messages mode: %+v", got)
	}
}

// csModelGraph is the graph of test_stream_messages_dedupe_*: node_1 is a
// subgraph whose call_model answers with the next of replies; node_2 hands
// the whole state back.
func csModelGraph(t *testing.T, replies []csMsg, co ...graph.CompileOptions) *graph.Graph {
	var mu sync.Mutex
	sub := csCompile(t, graph.New(csMessages).AddNode(
		"call_model", func(ctx context.Context, s graph.State) (graph.Update, error) {
			mu.Lock()
			defer mu.Unlock()
			m := replies[0]
			replies = replies[1:]
			return csMessages.Write(m), nil
		}, nil).AddNode(

		"route", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return graph.Update{}, nil
		}, nil).
		AddEdge(graph.START, "call_model").AddEdge("call_model", "route"))
	return csCompile(t, graph.New(csMessages).AddSubgraph(
		"node_1", sub, nil).
		AddNode(

			"node_2", func(ctx context.Context, s graph.State) (graph.Update, error) {
				return csMessages.Write(csMessages.Get(s)...), nil
			}, nil).
		AddEdge(graph.START, "node_1").AddEdge("node_1", "node_2"), co...)
}

// Mirrors test_pregel.py::test_stream_messages_dedupe_inputs: the model's
// message is streamed once, from call_model inside the subgraph, though the
// subgraph's output and node_2 carry it again.
func TestConformanceStreamMessagesDedupeInputs(t *testing.T) {
	g := csModelGraph(t, []csMsg{{ID: "1", Role: "ai", Content: "hi"}})
	evs, err := csDrain(t, g.Stream(context.Background(), csMessages.Write(csMsg{Role: "human", Content: "hi"}), &graph.RunOptions{StreamModes: csModes(graph.StreamMessages), Subgraphs: true}),
		nil)
	if err != nil {
		t.Fatal(err)
	}
	got := csMsgEvents(t, evs)
	if len(got) != 1 {
		t.Fatalf("got %d message events, want 1: %+v", len(got), got)
	}
	if got[0].Message != (csMsg{ID: "1", Role: "ai", Content: "hi"}) || got[0].Node != "call_model" {
		t.Errorf("message event = %+v; want the model's message from call_model", got[0])
	}
	if len(evs[0].Namespace) != 1 || !strings.HasPrefix(evs[0].Namespace[0], "node_1:") {
		t.Errorf("namespace = %v; want [node_1:<task id>]", evs[0].Namespace)
	}
}

// Mirrors test_pregel.py::test_stream_messages_dedupe_state: on a second
// run on the thread, messages already in the state are not streamed again;
// only the new reply is.
func TestConformanceStreamMessagesDedupeState(t *testing.T) {
	ctx := context.Background()
	g := csModelGraph(t, []csMsg{{ID: "1", Role: "ai", Content: "bye"}, {ID: "2", Role: "ai", Content: "bye again"}},
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	opts := graph.RunOptions{ThreadID: "1", StreamModes: csModes(graph.StreamMessages), Subgraphs: true}
	for i, want := range []csMsg{{ID: "1", Role: "ai", Content: "bye"}, {ID: "2", Role: "ai", Content: "bye again"}} {
		evs, err := csDrain(t, g.Stream(ctx, csMessages.Write(csMsg{Role: "human", Content: fmt.Sprint("hi ", i)}), &opts), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := csMsgEvents(t, evs)
		if len(got) != 1 || got[0].Message != want || got[0].Node != "call_model" {
			t.Errorf("run %d: message events = %+v; want only %+v from call_model", i+1, got, want)
		}
	}
}

// ---------------------------------------------------------------- tasks

// Mirrors test_pregel.py::test_multiple_writes_same_channel_from_same_node
// (task start and result payloads) and the task results of
// test_pregel.py::test_pending_writes_resume: a start carries id, name,
// step, triggers and input; a result carries the writes, an error, or the
// interrupts; hidden __start__ never shows.
func TestConformanceStreamTasksMode(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	g := csCompile(t, graph.New(csFoo, csBar).AddNode(
		"one", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csFoo.Write(csFoo.Get(s) + ", one"), nil
		}, nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			v, err := graph.Interrupt[string](ctx, "q?")
			if err != nil {
				return graph.Update{}, err
			}
			return csBar.Write(v), nil
		}, nil).AddNode(

		"fail", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if csBar.Get(s) == "fail" {
				return graph.Update{}, boom
			}
			return graph.Update{}, nil
		}, nil).
		AddEdge(graph.START, "one").AddEdge("one", "ask").AddEdge("ask", "fail"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	opts := graph.RunOptions{ThreadID: "1", StreamModes: csModes(graph.StreamTasks, graph.StreamUpdates)}

	evs, err := csDrain(t, g.Stream(ctx, csFoo.Write("input"), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 6 {
		t.Fatalf("got %d events, want 6: %v", len(evs), csItems(t, evs))
	}
	start := evs[0].Data.(graph.TaskStart)
	askStart := evs[3].Data.(graph.TaskStart)
	askRes := evs[5].Data.(graph.TaskResult)
	if len(askRes.Interrupts) != 1 {
		t.Fatalf("ask result = %+v; want one interrupt", askRes)
	}
	want := []csItem{
		{"tasks", csObj{"id": start.ID, "name": "one", "step": 1.0, "triggers": []any{"branch:to:one"}, "input": csObj{"foo": "input"}}},
		{"updates", csObj{"one": csObj{"foo": "input, one"}}},
		{"tasks", csObj{"id": start.ID, "name": "one", "step": 1.0, "result": csObj{"foo": "input, one"}, "interrupts": []any{}}},
		{"tasks", csObj{"id": askStart.ID, "name": "ask", "step": 2.0, "triggers": []any{"branch:to:ask"}, "input": csObj{"foo": "input, one"}}},
		{"updates", csObj{"__interrupt__": []any{csObj{"id": askRes.Interrupts[0].ID, "value": "q?"}}}},
		{"tasks", csObj{"id": askStart.ID, "name": "ask", "step": 2.0, "result": csObj{}, "interrupts": []any{csObj{"id": askRes.Interrupts[0].ID, "value": "q?"}}}},
	}
	if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
		t.Errorf("first run (-want +got):\n%s", diff)
	}
	if start.ID == askStart.ID || start.ID == "" {
		t.Errorf("task ids %q and %q: want distinct, non-empty ids", start.ID, askStart.ID)
	}

	evs, err = csDrain(t, g.Stream(ctx, graph.Resume("fail"), &opts), nil)
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("resumed run ended with %v; want the node's error", err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, csDescribe(t, ev))
	}
	wantOrder := []string{"tasks start ask step=2", "updates ask", "tasks result ask step=2", "tasks start fail step=3", "tasks result fail step=3"}
	if diff := cmp.Diff(wantOrder, got); diff != "" {
		t.Fatalf("resumed run (-want +got):\n%s", diff)
	}
	failRes := evs[4].Data.(graph.TaskResult)
	if !strings.Contains(failRes.Error, "boom") || len(failRes.Result.Writes()) != 0 {
		t.Errorf("fail result = %+v; want the error and no writes", failRes)
	}
	if b, _ := json.Marshal(failRes); !strings.Contains(string(b), `"error":`) {
		t.Errorf("fail result JSON %s has no error", b)
	}
}

// ---------------------------------------------------------------- checkpoints

// Mirrors test_pregel.py::test_debug_retry (every streamed checkpoint's
// config and parent equal the saver's history entry) and the debug step
// numbers of test_in_one_fan_out_state_graph_defer_node: a debug checkpoint's
// step is its metadata step, tasks carry the step they run in, and the first
// user task runs at step 1. The debug payloads equal the checkpoints and
// tasks events.
func TestConformanceStreamDebugCheckpoints(t *testing.T) {
	ctx := context.Background()
	node := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csLog.Write([]string{"entered " + name + " node"}), nil
		}
	}
	saver := checkpoint.NewMemory()
	g := csCompile(t, graph.New(csLog).AddNode(
		"one", node("one"), nil).AddNode(
		"two", node("two"), nil).
		AddEdge(graph.START, "one").AddEdge("one", "two").AddEdge("two", graph.END),
		graph.CompileOptions{Checkpointer: saver})
	thread := "1"
	all := csModes(graph.StreamDebug, graph.StreamCheckpoints, graph.StreamTasks)

	check := func(t *testing.T, evs []graph.Event) (steps []string) {
		t.Helper()
		history := map[string]graph.StateSnapshot{}
		for snap, err := range g.GetStateHistory(ctx, thread, nil) {
			if err != nil {
				t.Fatal(err)
			}
			history[snap.Config.CheckpointID] = snap
		}
		var plain []graph.Event // checkpoints and tasks events, in order
		var debug []graph.DebugEvent
		for _, ev := range evs {
			switch ev.Mode {
			case graph.StreamDebug:
				debug = append(debug, ev.Data.(graph.DebugEvent))
			default:
				plain = append(plain, ev)
			}
		}
		if len(plain) != len(debug) {
			t.Fatalf("%d checkpoints/tasks events but %d debug events", len(plain), len(debug))
		}
		for i, d := range debug {
			if diff := cmp.Diff(csJSON(t, plain[i].Data), csJSON(t, d.Payload)); diff != "" {
				t.Errorf("debug payload %d differs from the %s event (-plain +debug):\n%s", i, plain[i].Mode, diff)
			}
			switch d.Type {
			case "checkpoint":
				snap := d.Payload.(graph.StateSnapshot)
				if d.Step != snap.Metadata.Step {
					t.Errorf("debug checkpoint step %d, metadata step %d", d.Step, snap.Metadata.Step)
				}
				h, ok := history[snap.Config.CheckpointID]
				if !ok {
					t.Errorf("streamed checkpoint %s is not in the history", snap.Config)
					continue
				}
				if diff := cmp.Diff(h.Config, snap.Config); diff != "" {
					t.Errorf("config (-history +stream):\n%s", diff)
				}
				if diff := cmp.Diff(h.Parent, snap.Parent); diff != "" {
					t.Errorf("parent config (-history +stream):\n%s", diff)
				}
				if snap.Parent != nil && *snap.Parent == snap.Config {
					t.Errorf("checkpoint %s is its own parent", snap.Config)
				}
				steps = append(steps, fmt.Sprintf("checkpoint %d", d.Step))
			case "task":
				ts := d.Payload.(graph.TaskStart)
				if ts.Step != d.Step {
					t.Errorf("task %s: payload step %d, debug step %d", ts.Name, ts.Step, d.Step)
				}
				steps = append(steps, fmt.Sprintf("task %s %d", ts.Name, d.Step))
			case "task_result":
				tr := d.Payload.(graph.TaskResult)
				steps = append(steps, fmt.Sprintf("task_result %s %d", tr.Name, d.Step))
			default:
				t.Errorf("unknown debug event type %q", d.Type)
			}
		}
		return steps
	}

	evs, err := csDrain(t, g.Stream(ctx, csLog.Write(nil), &graph.RunOptions{ThreadID: thread, StreamModes: all}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"checkpoint -1", "checkpoint 0",
		"task one 1", "task_result one 1", "checkpoint 1",
		"task two 2", "task_result two 2", "checkpoint 2",
	}
	if diff := cmp.Diff(want, check(t, evs)); diff != "" {
		t.Errorf("debug events of the first run (-want +got):\n%s", diff)
	}

	// Re-run step 1 from an update of the checkpoint before it, as
	// test_debug_retry does.
	var target *checkpoint.Config
	for snap, err := range g.GetStateHistory(ctx, thread, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if snap.Metadata.Step == 1 {
			target = snap.Parent
		}
	}
	if target == nil {
		t.Fatal("no checkpoint at step 1 with a parent")
	}
	upd, err := g.UpdateState(ctx, *target, graph.Update{}, "one")
	if err != nil {
		t.Fatal(err)
	}
	evs, err = csDrain(t, g.Stream(ctx, graph.Update{}, &graph.RunOptions{ThreadID: thread, CheckpointID: upd.CheckpointID, StreamModes: all}), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, s := range check(t, evs) {
		if f := strings.Fields(s); f[0] == "task" {
			ran = append(ran, f[1])
		}
	}
	if diff := cmp.Diff([]string{"two"}, ran); diff != "" {
		t.Errorf("tasks of the re-run (-want +got):\n%s", diff)
	}
}

// ---------------------------------------------------------------- subgraphs

var csLog = graph.Reduce("messages", csAppendStrings)

var (
	csMyKey = graph.Reduce("my_key", csConcat)
	csOther = graph.Value[string]("my_other_key")
)

// csNestedGraph is the graph of test_stream_subgraphs_during_execution:
// "inner" (inner_1 -> inner_2) runs in parallel with outer_1, and outer_2
// joins them. outer_1 finishes after gate1, inner_2 after gate2. inner_1
// reports its task namespace on nsSeen and streams a message.
func csNestedGraph(t *testing.T, gate1, gate2 *csGate, nsSeen chan<- string) *graph.Graph {
	inner := csCompile(t, graph.New(csMyKey, csOther, csMessages).AddNode(
		"inner_1", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if ti, ok := graph.CurrentTask(ctx); ok && nsSeen != nil {
				nsSeen <- ti.Namespace
			}
			graph.StreamMessage(ctx, csMsg{ID: "m-inner", Role: "ai", Content: "from inner_1"})
			return csMyKey.Write("got here").And(csOther.Write(csMyKey.Get(s))), nil
		}, nil).AddNode(

		"inner_2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if err := csWait(ctx, gate2.wait()); err != nil {
				return graph.Update{}, err
			}
			return csMyKey.Write(" and there").And(csOther.Write(csMyKey.Get(s))), nil
		}, nil).
		AddEdge(graph.START, "inner_1").AddEdge("inner_1", "inner_2"))
	return csCompile(t, graph.New(csMyKey).AddSubgraph(
		"inner", inner, nil).
		AddNode(

			"outer_1", func(ctx context.Context, s graph.State) (graph.Update, error) {
				if err := csWait(ctx, gate1.wait()); err != nil {
					return graph.Update{}, err
				}
				return csMyKey.Write(" and parallel"), nil
			}, nil).AddNode(

		"outer_2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csMyKey.Write(" and back again"), nil
		}, nil).
		AddEdge(graph.START, "inner").AddEdge(graph.START, "outer_1").
		AddJoin([]string{"inner", "outer_1"}, "outer_2").AddEdge("outer_2", graph.END),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
}

// Mirrors test_pregel.py::test_stream_subgraphs_during_execution: with
// Subgraphs, a subgraph's events carry its namespace ["inner:<task id>"] and
// reach the reader while the parent's step still runs (outer_1 waits for
// inner_1's event, inner_2 for outer_1's); the parent's update for the
// subgraph node is its final state for the parent's channels. Without
// Subgraphs only the parent's updates appear (messages still do).
func TestConformanceStreamSubgraphs(t *testing.T) {
	ctx := context.Background()

	t.Run("subgraphs", func(t *testing.T) {
		gate1, gate2 := newCSGate(), newCSGate()
		nsSeen := make(chan string, 1)
		g := csNestedGraph(t, gate1, gate2, nsSeen)
		evs, err := csDrain(t, g.Stream(ctx, csMyKey.Write(""), &graph.RunOptions{ThreadID: "2", Subgraphs: true}), func(ev graph.Event) {
			switch csUpdateNode(ev) {
			case "inner_1":
				gate1.open()
			case "outer_1":
				gate2.open()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		type nsItem struct {
			NS   string
			Data any
		}
		var got []nsItem
		var innerNS []string
		for _, ev := range evs {
			ns := strings.Join(ev.Namespace, "|")
			if ns != "" {
				innerNS = ev.Namespace
				ns = strings.SplitN(ns, ":", 2)[0] + ":"
			}
			got = append(got, nsItem{ns, csJSON(t, ev.Data)})
		}
		want := []nsItem{
			{"inner:", csObj{"inner_1": csObj{"my_key": "got here", "my_other_key": ""}}},
			{"", csObj{"outer_1": csObj{"my_key": " and parallel"}}},
			{"inner:", csObj{"inner_2": csObj{"my_key": " and there", "my_other_key": "got here"}}},
			{"", csObj{"inner": csObj{"my_key": "got here and there"}}},
			{"", csObj{"outer_2": csObj{"my_key": " and back again"}}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		taskNS := <-nsSeen
		if len(innerNS) != 1 || !strings.HasPrefix(taskNS, innerNS[0]+"|inner_1:") {
			t.Errorf("event namespace %v does not prefix inner_1's task namespace %q", innerNS, taskNS)
		}
	})

	t.Run("no subgraphs", func(t *testing.T) {
		g := csNestedGraph(t, nil, nil, nil)
		evs, err := csDrain(t, g.Stream(ctx, csMyKey.Write(""), &graph.RunOptions{ThreadID: "3", StreamModes: csModes(graph.StreamUpdates, graph.StreamMessages, graph.StreamValues, graph.StreamCustom)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, ev := range evs {
			switch ev.Mode {
			case graph.StreamMessages:
				me := ev.Data.(graph.MessageEvent)
				if me.Node != "inner_1" || len(ev.Namespace) != 1 || !strings.HasPrefix(ev.Namespace[0], "inner:") {
					t.Errorf("message event %+v in %v; want inner_1's message in the inner namespace", me, ev.Namespace)
				}
				continue
			case graph.StreamUpdates:
				nodes = append(nodes, csUpdateNode(ev))
			}
			if len(ev.Namespace) != 0 {
				t.Errorf("%s event from namespace %v without Subgraphs", ev.Mode, ev.Namespace)
			}
		}
		if len(nodes) >= 2 {
			slices.Sort(nodes[:2]) // inner and outer_1 run in parallel
		}
		if diff := cmp.Diff([]string{"inner", "outer_1", "outer_2"}, nodes); diff != "" {
			t.Errorf("updates (-want +got):\n%s", diff)
		}
		last := evs[len(evs)-1]
		if diff := cmp.Diff(csItem{"values", csObj{"my_key": "got here and there and parallel and back again"}}, csItems(t, []graph.Event{last})[0]); diff != "" {
			t.Errorf("final values (-want +got):\n%s", diff)
		}
	})
}

// Mirrors test_pregel.py::test_interrupt_subgraph (as streamed): an
// interrupt in a subgraph streams {"__interrupt__": [...]} in the
// subgraph's namespace and again at the root, with the same interrupt, and
// the parent resumes it.
func TestConformanceStreamSubgraphInterrupt(t *testing.T) {
	ctx := context.Background()
	child := csCompile(t, graph.New(csFoo).AddNode(
		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			v, err := graph.Interrupt[string](ctx, "q?")
			if err != nil {
				return graph.Update{}, err
			}
			return csFoo.Write(csFoo.Get(s) + v), nil
		}, nil).
		AddEdge(graph.START, "ask"))
	g := csCompile(t, graph.New(csFoo).AddSubgraph("child", child, nil).AddEdge(graph.START, "child"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	opts := graph.RunOptions{ThreadID: "1", Subgraphs: true}

	evs, err := csDrain(t, g.Stream(ctx, csFoo.Write(">"), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2: %v", len(evs), csItems(t, evs))
	}
	inner, root := evs[0].Data.(graph.NodeUpdate), evs[1].Data.(graph.NodeUpdate)
	if len(evs[0].Namespace) != 1 || !strings.HasPrefix(evs[0].Namespace[0], "child:") || len(evs[1].Namespace) != 0 {
		t.Errorf("namespaces %v, %v; want [child:<id>] then the root", evs[0].Namespace, evs[1].Namespace)
	}
	if len(inner.Interrupts) != 1 || inner.Interrupts[0].Value != "q?" {
		t.Fatalf("subgraph event %+v; want its interrupt", inner)
	}
	if diff := cmp.Diff(inner.Interrupts, root.Interrupts); diff != "" {
		t.Errorf("root interrupt event (-subgraph +root):\n%s", diff)
	}
	evs, err = csDrain(t, g.Stream(ctx, graph.Resume("!"), &graph.RunOptions{ThreadID: "1"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{csObj{"child": csObj{"foo": ">!"}}}, csData(t, evs)); diff != "" {
		t.Errorf("resumed run (-want +got):\n%s", diff)
	}
}

// Mirrors test_pregel.py::test_nested_graph_interrupts_parallel: a subgraph
// compiled with interrupt_before stops there while outer_1 runs beside it.
// Streamed with Subgraphs, the reader sees outer_1's update, inner_1's (in
// the subgraph's namespace) and one "__interrupt__", the root's: the
// subgraph's static breakpoint yields no chunk of its own. Continuing
// serves outer_1's saved writes and runs the rest.
func TestConformanceStreamNestedStaticInterruptParallel(t *testing.T) {
	ctx := context.Background()
	gate := newCSGate()
	inner := csCompile(t, graph.New(csMyKey, csOther).AddNode(
		"inner_1", func(ctx context.Context, s graph.State) (graph.Update, error) {

			if err := csWait(ctx, gate.wait()); err != nil {
				return graph.Update{}, err
			}
			return csMyKey.Write("got here").And(csOther.Write(csMyKey.Get(s))), nil
		}, nil).AddNode(

		"inner_2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csMyKey.Write(" and there").And(csOther.Write(csMyKey.Get(s))), nil
		}, nil).
		AddEdge(graph.START, "inner_1").AddEdge("inner_1", "inner_2"),
		graph.CompileOptions{InterruptBefore: []string{"inner_2"}})
	outer := graph.New(csMyKey).AddSubgraph(
		"inner", inner, nil).
		AddNode(

			"outer_1", func(ctx context.Context, s graph.State) (graph.Update, error) {
				return csMyKey.Write(" and parallel"), nil
			}, nil).AddNode(

		"outer_2", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csMyKey.Write(" and back again"), nil
		}, nil).
		AddEdge(graph.START, "inner").AddEdge(graph.START, "outer_1").
		AddJoin([]string{"inner", "outer_1"}, "outer_2").AddEdge("outer_2", graph.END)
	g := csCompile(t, outer, graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	evs, err := csDrain(t, g.Stream(ctx, csMyKey.Write(""), &graph.RunOptions{ThreadID: "2", Subgraphs: true}), csOpenAfter(gate, "outer_1"))
	if err != nil {
		t.Fatal(err)
	}
	type nsItem struct {
		NS   string
		Data any
	}
	var got []nsItem
	for _, ev := range evs {
		ns := strings.Join(ev.Namespace, "|")
		if ns != "" {
			ns = strings.SplitN(ns, ":", 2)[0] + ":"
		}
		got = append(got, nsItem{ns, csJSON(t, ev.Data)})
	}
	want := []nsItem{
		{"", csObj{"outer_1": csObj{"my_key": " and parallel"}}},
		{"inner:", csObj{"inner_1": csObj{"my_key": "got here", "my_other_key": ""}}},
		{"", csObj{"__interrupt__": []any{}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	evs, err = csDrain(t, g.Stream(ctx, graph.Update{}, &graph.RunOptions{ThreadID: "2"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRest := []any{
		csObj{"outer_1": csObj{"my_key": " and parallel"}, "__metadata__": csObj{"cached": true}},
		csObj{"inner": csObj{"my_key": "got here and there"}},
		csObj{"outer_2": csObj{"my_key": " and back again"}},
	}
	if diff := cmp.Diff(wantRest, csData(t, evs)); diff != "" {
		t.Errorf("continued events (-want +got):\n%s", diff)
	}

	// The values streams of the same test: the subgraph's breakpoint, and
	// breakpoints before and after the parallel node.
	gate.open()
	values := func(g *graph.Graph, in graph.Update, thread string) []string {
		t.Helper()
		var out []string
		evs, err := csDrain(t, g.Stream(ctx, in, &graph.RunOptions{ThreadID: thread, StreamModes: csModes(graph.StreamValues)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			s, _ := ev.Values()
			out = append(out, csMyKey.Get(s))
		}
		return out
	}
	const (
		parallel = " and parallel"
		there    = "got here and there and parallel"
		back     = "got here and there and parallel and back again"
	)
	for _, c := range []struct {
		name   string
		co     graph.CompileOptions
		stages [][]string
	}{
		{"inner breakpoint", graph.CompileOptions{}, [][]string{{"", parallel}, {"", there, back}}},
		{"before outer_1", graph.CompileOptions{InterruptBefore: []string{"outer_1"}}, [][]string{{""}, {"", parallel}, {"", there, back}}},
		{"after outer_1", graph.CompileOptions{InterruptAfter: []string{"outer_1"}}, [][]string{{"", parallel}, {"", there}, {there, back}}},
	} {
		c.co.Checkpointer = checkpoint.NewMemory()
		g := csCompile(t, outer, c.co)
		in := csMyKey.Write("")
		for i, want := range c.stages {
			if diff := cmp.Diff(want, values(g, in, c.name)); diff != "" {
				t.Errorf("%s, run %d: values (-want +got):\n%s", c.name, i, diff)
			}
			in = graph.Update{}
		}
	}
}

// ---------------------------------------------------------------- ending

// csGoroutinesSettle waits until the goroutine count is back to base.
func csGoroutinesSettle(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(csGuard)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines left, %d before the run:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(time.Millisecond)
	}
}

var csValue = graph.Reduce("value", csSum)

// Mirrors test_pregel_async.py::test_cancel_graph_astream: leaving the range
// loop after the first update stops the run. The parallel node still running
// sees its context cancelled, the node after the break never starts, the
// finished node's writes are kept as pending writes, and no goroutine is
// left behind.
func TestConformanceStreamBreakStopsRun(t *testing.T) {
	ctx := context.Background()

	t.Run("parallel", func(t *testing.T) {
		base := runtime.NumGoroutine()
		var awhileStarted atomic.Bool
		cancelled := make(chan struct{})
		g := csCompile(t, graph.New(csValue).AddNode(
			"alittlewhile", func(ctx context.Context, s graph.State) (graph.Update, error) {
				return csValue.Write(2), nil
			}, nil).AddNode(

			"aparallelwhile", func(ctx context.Context, s graph.State) (graph.Update, error) {
				<-ctx.Done()
				close(cancelled)
				return graph.Update{}, ctx.Err()
			}, nil).AddNode(

			"awhile", func(ctx context.Context, s graph.State) (graph.Update, error) {
				awhileStarted.Store(true)
				return graph.Update{}, nil
			}, nil).
			AddEdge(graph.START, "alittlewhile").AddEdge(graph.START, "aparallelwhile").
			AddEdge("alittlewhile", "awhile"),
			graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
		opts := graph.RunOptions{ThreadID: "1"}
		n := 0
		for ev, err := range g.Stream(ctx, csValue.Write(1), &opts) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if diff := cmp.Diff(csObj{"alittlewhile": csObj{"value": 2.0}}, csJSON(t, ev.Data)); diff != "" {
				t.Errorf("first event (-want +got):\n%s", diff)
			}
			break
		}
		if n != 1 {
			t.Fatalf("got %d events before the break", n)
		}
		select {
		case <-cancelled:
		case <-time.After(csGuard):
			t.Fatal("aparallelwhile never saw its context cancelled")
		}
		if awhileStarted.Load() {
			t.Error("awhile started after the reader stopped")
		}
		csGoroutinesSettle(t, base)
		snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: "1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(csObj{"value": 3.0}, csJSON(t, snap.Values)); diff != "" {
			t.Errorf("state values (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"aparallelwhile"}, snap.Next); diff != "" {
			t.Errorf("next (-want +got):\n%s", diff)
		}
		if snap.Metadata.Source != "loop" || snap.Metadata.Step != 0 {
			t.Errorf("metadata = %+v; want the loop checkpoint of step 0", snap.Metadata)
		}
	})

	// A node that keeps emitting after the reader left, in a step with one
	// task (run on the loop's goroutine) and inside a subgraph: its later
	// events are dropped, nothing is yielded after the break, and the
	// next node never runs.
	for _, tc := range []struct {
		name      string
		subgraphs bool
	}{{"inline", false}, {"subgraph", true}} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			var after atomic.Bool
			emitter := func(ctx context.Context, s graph.State) (graph.Update, error) {
				for i := range 5 {
					graph.Emit(ctx, i)
				}
				return csValue.Write(1), nil
			}
			var g *graph.Graph
			if tc.subgraphs {
				sub := csCompile(t, graph.New(csValue).AddNode("emitter", emitter, nil).AddEdge(graph.START, "emitter"))
				g = csCompile(t, graph.New(csValue).AddSubgraph("emitter", sub, nil).AddNode(
					"after", func(ctx context.Context, s graph.State) (graph.Update, error) {
						after.Store(true)
						return graph.Update{}, nil
					}, nil).
					AddEdge(graph.START, "emitter").AddEdge("emitter", "after"))
			} else {
				g = csCompile(t, graph.New(csValue).AddNode("emitter", emitter, nil).AddNode(
					"after", func(ctx context.Context, s graph.State) (graph.Update, error) {
						after.Store(true)
						return graph.Update{}, nil
					}, nil).
					AddEdge(graph.START, "emitter").AddEdge("emitter", "after"))
			}
			var got []any
			for ev, err := range g.Stream(ctx, csValue.Write(1), &graph.RunOptions{StreamModes: csModes(graph.StreamCustom, graph.StreamUpdates, graph.StreamTasks), Subgraphs: tc.subgraphs}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Mode != graph.StreamCustom {
					continue
				}
				got = append(got, ev.Data)
				if len(got) == 2 {
					break
				}
			}
			if diff := cmp.Diff([]any{0, 1}, got); diff != "" {
				t.Errorf("events before the break (-want +got):\n%s", diff)
			}
			if after.Load() {
				t.Error("the node after the break point ran")
			}
			csGoroutinesSettle(t, base)
		})
	}
}

// Mirrors test_pregel.py::test_pending_writes_resume (one parallel task
// succeeds, the other fails): the success streams its update, then the error
// ends the stream as its last item, with the zero Event.
func TestConformanceStreamErrorEndsStream(t *testing.T) {
	ctx := context.Background()
	gate := newCSGate()
	g := csCompile(t, graph.New(csValue).AddNode(
		"one", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csValue.Write(2), nil
		}, nil).AddNode(

		"two", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if err := csWait(ctx, gate.wait()); err != nil {
				return graph.Update{}, err
			}
			return graph.Update{}, errors.New("I'm not good")
		}, nil).
		AddEdge(graph.START, "one").AddEdge(graph.START, "two"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	evs, err := csDrain(t, g.Stream(ctx, csValue.Write(1), &graph.RunOptions{ThreadID: "1"}), csOpenAfter(gate, "one"))
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "two" || !strings.Contains(err.Error(), "I'm not good") {
		t.Fatalf("stream error = %v; want node two's error", err)
	}
	if diff := cmp.Diff([]any{csObj{"one": csObj{"value": 2.0}}}, csData(t, evs)); diff != "" {
		t.Errorf("events before the error (-want +got):\n%s", diff)
	}

	// A run that never ends fails with the recursion error, also last.
	loop := csCompile(t, graph.New(csValue).AddNode(
		"again", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csValue.Write(1), nil
		}, nil).
		AddEdge(graph.START, "again").AddEdge("again", "again"))
	evs, err = csDrain(t, loop.Stream(ctx, csValue.Write(0), &graph.RunOptions{RecursionLimit: 3}), nil)
	if !errors.Is(err, graph.ErrRecursionLimit) {
		t.Fatalf("stream error = %v; want ErrRecursionLimit", err)
	}
	if len(evs) != 3 {
		t.Errorf("got %d updates before the recursion error, want 3", len(evs))
	}

	// Bad options fail before the run, as the only item.
	evs, err = csDrain(t, loop.Stream(ctx, csValue.Write(0), &graph.RunOptions{StreamModes: csModes("bogus")}), nil)
	if !errors.Is(err, graph.ErrInvalidInput) || len(evs) != 0 {
		t.Errorf("bad stream mode: %d events, error %v; want only ErrInvalidInput", len(evs), err)
	}
}

// ---------------------------------------------------------------- JSON

var csTopic = graph.Topic[string]("items", nil)

// Mirrors the JSON shapes of test_pregel.py::test_multiple_updates (several
// writes to a key: a list of single-key objects), test_parallel_interrupts
// ({"cleanup": null}, and "__metadata__": {"cached": true} for writes
// recovered on resume) and test_interrupt_stream_mode_values
// ({"__interrupt__": [...]}); State marshals to an object keyed by channel.
func TestConformanceStreamJSON(t *testing.T) {
	ctx := context.Background()
	gate := newCSGate()
	g := csCompile(t, graph.New(csFoo, csTopic, csN).AddNode(
		"node_a", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return csTopic.Write("a1", "a2").And(csN.Write(7)), nil
		}, nil).AddNode(

		"cleanup", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return graph.Update{}, nil
		}, nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if err := csWait(ctx, gate.wait()); err != nil {
				return graph.Update{}, err
			}
			v, err := graph.Interrupt[string](ctx, csObj{"question": "ok?"})
			if err != nil {
				return graph.Update{}, err
			}
			return csFoo.Write(v), nil
		}, nil).
		AddEdge(graph.START, "node_a").AddEdge("node_a", "cleanup").AddEdge("node_a", "ask"),
		graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	opts := graph.RunOptions{ThreadID: "1", StreamModes: csModes(graph.StreamUpdates, graph.StreamValues)}
	evs, err := csDrain(t, g.Stream(ctx, csTopic.Write("in"), &opts), csOpenAfter(gate, "cleanup"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 5 {
		t.Fatalf("got %d events: %v", len(evs), csItems(t, evs))
	}
	nu := evs[4].Data.(graph.NodeUpdate)
	if len(nu.Interrupts) != 1 {
		t.Fatalf("event 4 = %+v; want the interrupt", nu)
	}
	intr := []any{csObj{"id": nu.Interrupts[0].ID, "value": csObj{"question": "ok?"}}}
	want := []csItem{
		{"values", csObj{"items": []any{"in"}}},
		{"updates", csObj{"node_a": []any{csObj{"items": "a1"}, csObj{"items": "a2"}, csObj{"n": 7.0}}}},
		{"values", csObj{"items": []any{"a1", "a2"}, "n": 7.0}},
		{"updates", csObj{"cleanup": nil}},
		{"updates", csObj{"__interrupt__": intr}},
		{"values", csObj{"items": []any{"a1", "a2"}, "n": 7.0, "__interrupt__": intr}},
	}
	if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
		t.Errorf("first run (-want +got):\n%s", diff)
	}

	evs, err = csDrain(t, g.Stream(ctx, graph.Resume("yes"), &opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []csItem{
		{"values", csObj{"items": []any{"a1", "a2"}, "n": 7.0}},
		{"updates", csObj{"cleanup": nil, "__metadata__": csObj{"cached": true}}},
		{"updates", csObj{"ask": csObj{"foo": "yes"}}},
		// The Topic cleared: nothing wrote it in this step.
		{"values", csObj{"n": 7.0, "foo": "yes"}},
	}
	if diff := cmp.Diff(want, csItems(t, evs)); diff != "" {
		t.Errorf("resumed run (-want +got):\n%s", diff)
	}
	if nu := evs[1].Data.(graph.NodeUpdate); !nu.Cached {
		t.Errorf("recovered update %+v: want Cached", nu)
	}

	// Values built by hand marshal the same way.
	for _, tc := range []struct {
		name string
		v    any
		want any
	}{
		{"update", graph.NodeUpdate{Node: "a", Update: csFoo.Write("x").And(csN.Write(1))}, csObj{"a": csObj{"foo": "x", "n": 1.0}}},
		{"no writes", graph.NodeUpdate{Node: "a"}, csObj{"a": nil}},
		{"repeated key", graph.NodeUpdate{Node: "a", Update: csTopic.Write("x", "y")}, csObj{"a": []any{csObj{"items": "x"}, csObj{"items": "y"}}}},
		{"list value", graph.NodeUpdate{Node: "a", Update: csDocs.Write([]string{"x", "y"})}, csObj{"a": csObj{"docs": []any{"x", "y"}}}},
		{"static interrupt", graph.NodeUpdate{Node: "__interrupt__"}, csObj{"__interrupt__": []any{}}},
		{"interrupt", graph.NodeUpdate{Node: "__interrupt__", Interrupts: []graph.Interruption{{ID: "i1", Value: 3}}}, csObj{"__interrupt__": []any{csObj{"id": "i1", "value": 3.0}}}},
		{"event", graph.Event{Mode: graph.StreamUpdates, Data: graph.NodeUpdate{Node: "a"}}, csObj{"mode": "updates", "data": csObj{"a": nil}}},
	} {
		if diff := cmp.Diff(tc.want, csJSON(t, tc.v)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
