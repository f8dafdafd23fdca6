package graph_test

// Tests for the runtime defects of issue 7 §10: each reproduces one.

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// A value that contains itself, in an any-typed channel, fails the run with
// an error naming the channel (as encoding/json fails), instead of
// overflowing the stack and killing the process.
func TestCyclicValueFailsCheckpointWithError(t *testing.T) {
	Blob := graph.Value[any]("blob")
	g, err := graph.New(Blob).AddNode(
		"loop", func(ctx context.Context, s graph.State) (graph.Update, error) {
			m := map[string]any{"name": "self"}
			m["self"] = []any{m}
			return Blob.Write(m), nil
		}, nil).
		AddEdge(graph.START, "loop").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		_, err = g.Invoke(context.Background(), Blob.Write("start"), &graph.RunOptions{ThreadID: "cycle-" + string(d), Durability: d})
		var uve *json.UnsupportedValueError
		if !errors.As(err, &uve) {
			t.Fatalf("%s: err = %v, want a *json.UnsupportedValueError", d, err)
		}
		if !strings.Contains(err.Error(), `"blob"`) {
			t.Fatalf("%s: err = %v, want it to name channel \"blob\"", d, err)
		}
	}
}

// faultyDriver is a memory checkpointer whose Put fails or hangs for the
// checkpoints failPut or hangPut pick (by step).
type faultyDriver struct {
	checkpoint.Driver
	failPut func(meta checkpoint.Metadata) bool
	hangPut func(meta checkpoint.Metadata) bool
	// hangList makes List hang after its first item.
	hangList bool
}

func (d *faultyDriver) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	if !d.hangList {
		return d.Driver.List(ctx, threadID, opts)
	}
	return func(yield func(*checkpoint.Tuple, error) bool) {
		for tp, err := range d.Driver.List(ctx, threadID, opts) {
			if !yield(tp, err) {
				return
			}
			break
		}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

var errDiskFull = errors.New("test: disk full")

func (d *faultyDriver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs []checkpoint.Blob) (checkpoint.Config, error) {
	if d.failPut != nil && d.failPut(meta) {
		return checkpoint.Config{}, errDiskFull
	}
	if d.hangPut != nil && d.hangPut(meta) {
		// A stalled connection: nothing comes back until the caller gives
		// up.
		<-ctx.Done()
		return checkpoint.Config{}, ctx.Err()
	}
	return d.Driver.Put(ctx, cfg, cp, meta, blobs)
}

// threeSteps is a → b → c, counting the nodes that ran. Its checkpoints
// are step -1 (input), 0 (START's), 1 (after a), 2 (after b) and 3.
func threeSteps(t *testing.T, d checkpoint.Driver, co graph.CompileOptions) (*graph.Graph, *[]string) {
	t.Helper()
	var ran []string
	node := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			ran = append(ran, name)
			return Log.Write([]string{name}), nil
		}
	}
	co.Checkpointer = checkpoint.New(d)
	g, err := graph.New(Log).AddNode(
		"a", node("a"), nil).AddNode(
		"b", node("b"), nil).AddNode(
		"c", node("c"), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(&co)

	if err != nil {
		t.Fatal(err)
	}
	return g, &ran
}

// Under the default async durability, a run whose last checkpoint could not
// be stored reports it: it does not return nil for a run it did not save.
func TestAsyncSaveFailureOfLastCheckpointIsReturned(t *testing.T) {
	d := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), failPut: func(m checkpoint.Metadata) bool { return m.Step == 3 }}
	g, ran := threeSteps(t, d, graph.CompileOptions{})
	_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t"})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Invoke = %v, want the save error (%v)", err, errDiskFull)
	}
	if got := strings.Join(*ran, ","); got != "a,b,c" {
		t.Fatalf("ran %s", got)
	}
	// Stream reports it too, as its last item.
	var last error
	for _, err := range g.Stream(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t2"}) {
		last = err
	}
	if !errors.Is(last, errDiskFull) {
		t.Fatalf("Stream's last error = %v, want %v", last, errDiskFull)
	}
}

// Under async durability, once a checkpoint could not be stored nothing is
// stored on top of it: the thread keeps the last checkpoint before the
// failure, never a child whose parent is missing.
func TestAsyncSaveFailureStoresNothingAfterIt(t *testing.T) {
	d := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), failPut: func(m checkpoint.Metadata) bool { return m.Step == 1 }}
	g, _ := threeSteps(t, d, graph.CompileOptions{})
	_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t"})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Invoke = %v, want the save error (%v)", err, errDiskFull)
	}
	snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Metadata.Step != 0 {
		t.Fatalf("latest stored checkpoint is step %d, want 0 (the one before the failed save)", snap.Metadata.Step)
	}
}

// Under sync durability a checkpoint that could not be stored stops the run
// before the next step: no node runs on top of an unsaved parent.
func TestSyncSaveFailureStopsTheRun(t *testing.T) {
	d := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), failPut: func(m checkpoint.Metadata) bool { return m.Step == 1 }}
	g, ran := threeSteps(t, d, graph.CompileOptions{})
	_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t", Durability: graph.DurabilitySync})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Invoke = %v, want the save error (%v)", err, errDiskFull)
	}
	if got := strings.Join(*ran, ","); got != "a" {
		t.Fatalf("nodes that ran: %s; want only a: the checkpoint after a was not stored", got)
	}
	snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Metadata.Step != 0 {
		t.Fatalf("latest stored checkpoint is step %d, want 0 (the one before a)", snap.Metadata.Step)
	}
}

// A store that hangs fails the run with an error naming the bound, in every
// durability mode, instead of blocking it forever.
func TestHungCheckpointerIsBounded(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		drv := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), hangPut: func(checkpoint.Metadata) bool { return true }}
		g, _ := threeSteps(t, drv, graph.CompileOptions{CheckpointerTimeout: 20 * time.Millisecond})
		_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t", Durability: d})
		if !errors.Is(err, graph.ErrCheckpointerTimeout) {
			t.Fatalf("%s: Invoke = %v, want ErrCheckpointerTimeout", d, err)
		}
		if !strings.Contains(err.Error(), "CheckpointerTimeout") {
			t.Fatalf("%s: %v does not name the bound", d, err)
		}
	}
}

// Reading a thread's history from a store that stalls ends with an error
// naming the bound, not never.
func TestHungCheckpointerListIsBounded(t *testing.T) {
	drv := &faultyDriver{Driver: checkpoint.NewMemoryDriver()}
	g, _ := threeSteps(t, drv, graph.CompileOptions{CheckpointerTimeout: 20 * time.Millisecond})
	if _, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	drv.hangList = true
	n := 0
	var last error
	for _, err := range g.GetStateHistory(context.Background(), "t", nil) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if n != 1 || !errors.Is(last, graph.ErrCheckpointerTimeout) {
		t.Fatalf("history gave %d snapshots then %v; want 1, then ErrCheckpointerTimeout", n, last)
	}
}

// A run whose caller gives up returns, with the caller's error, even when
// its store hangs: the writes still due after the cancellation get one
// bounded window (the final checkpoint of a stopped run included), not
// forever.
func TestCancelledRunReturnsOnHungCheckpointer(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		drv := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), hangPut: func(m checkpoint.Metadata) bool { return m.Step >= 0 }}
		g, err := graph.New(Log).AddNode(
			"a", add("a"), nil).AddNode(

			"wait", func(ctx context.Context, s graph.State) (graph.Update, error) {
				<-ctx.Done()
				return graph.Update{}, ctx.Err()
			}, nil).
			AddEdge(graph.START, "a").AddEdge("a", "wait").Compile(&graph.CompileOptions{Checkpointer: checkpoint.New(drv), CheckpointerTimeout: 50 * time.Millisecond})

		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = g.Invoke(ctx, Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t", Durability: d})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, graph.ErrCheckpointerTimeout) {
			t.Fatalf("%s: Invoke = %v, want the caller's deadline or the checkpointer bound", d, err)
		}
	}
}

// A node with a Timeout and a Retry: the attempt its timeout abandoned keeps
// running, and what it does late (Emit, StreamMessage, Interrupt,
// CurrentTask) must neither race with the next attempt nor reach the run.
func TestAbandonedAttemptIsIsolatedFromTheNext(t *testing.T) {
	Out := graph.Value[string]("out")
	release := make(chan struct{})
	lateDone := make(chan graph.TaskInfo, 1)
	var attempts atomic.Int32
	g, err := graph.New(Out).AddNode(
		"slow", func(ctx context.Context, s graph.State) (graph.Update, error) {
			if attempts.Add(1) == 1 {

				<-release
				graph.Emit(ctx, "late")
				graph.StreamMessage(ctx, "late token")
				_, ierr := graph.Interrupt[string](ctx, "late question")
				info, _ := graph.CurrentTask(ctx)
				_ = ierr
				lateDone <- info
				return Out.Write("late"), nil
			}
			close(release)

			for range 20 {
				graph.Emit(ctx, "second")
				graph.StreamMessage(ctx, "token")
				graph.CurrentTask(ctx)
			}
			info := <-lateDone
			if info.Attempt != 1 {
				t.Errorf("the abandoned attempt sees Attempt %d, want its own (1)", info.Attempt)
			}
			return Out.Write("second"), nil
		}, &graph.NodeOptions{Timeout: 10 * time.Millisecond, Retry: &graph.RetryPolicy{InitialInterval: -1, MaxAttempts: 2}}).
		AddEdge(graph.START, "slow").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	if err != nil {
		t.Fatal(err)
	}
	var custom []any
	var results []graph.TaskResult
	var final graph.State
	for ev, err := range g.Stream(context.Background(), Out.Write("in"), &graph.RunOptions{ThreadID: "t", StreamModes: []graph.StreamMode{graph.StreamCustom, graph.StreamTasks, graph.StreamValues, graph.StreamMessages}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case graph.TaskResult:
			results = append(results, d)
		case graph.State:
			final = d
		}
		if ev.Mode == graph.StreamCustom {
			custom = append(custom, ev.Data)
		}
	}
	for _, c := range custom {
		if c != "second" {
			t.Fatalf("custom events %v: the abandoned attempt's %q reached the stream", custom, c)
		}
	}
	if len(results) != 1 || len(results[0].Interrupts) != 0 || results[0].Error != "" {
		t.Fatalf("task results %+v: want one clean result of the second attempt", results)
	}
	if Out.Get(final) != "second" || len(final.Interrupts()) != 0 {
		t.Fatalf("final state %v, interrupts %v", Out.Get(final), final.Interrupts())
	}
}

func consumerBoom() { panic("boom from the loop body") }

// A panic in the body of a loop over Stream is the consumer's: it leaves the
// loop as itself, with its stack, whatever sent the event (a node's Emit,
// inline, on a goroutine of its timeout, in parallel, or a subgraph).
func TestStreamConsumerPanicPropagates(t *testing.T) {
	emitter := func(ctx context.Context, s graph.State) (graph.Update, error) {
		graph.Emit(ctx, "ping")
		return graph.Update{}, nil
	}
	sub, err := graph.New(Log).AddNode("inner", emitter, nil).AddEdge(graph.START, "inner").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A node may Emit from a goroutine it starts; the loop body may then
	// run there, and its panic must still reach the consumer.
	helper := func(ctx context.Context, s graph.State) (graph.Update, error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			graph.Emit(ctx, "ping")
		}()
		<-done
		return graph.Update{}, nil
	}
	cases := map[string]*graph.Builder{
		"helper goroutine": graph.New(Log).AddNode("a", helper, nil).AddEdge(graph.START, "a"),
		"inline":           graph.New(Log).AddNode("a", emitter, nil).AddEdge(graph.START, "a"),
		"timeout":          graph.New(Log).AddNode("a", emitter, &graph.NodeOptions{Timeout: time.Minute}).AddEdge(graph.START, "a"),
		"parallel":         graph.New(Log).AddNode("a", emitter, nil).AddNode("b", emitter, nil).AddEdge(graph.START, "a").AddEdge(graph.START, "b"),
		"subgraph":         graph.New(Log).AddSubgraph("s", sub, nil).AddEdge(graph.START, "s"),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			g, err := b.Compile(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				p := recover()
				if p != "boom from the loop body" {
					t.Fatalf("recovered %v (%T), want the loop body's own panic", p, p)
				}
				if name != "helper goroutine" && !strings.Contains(string(debug.Stack()), "consumerBoom") {
					t.Fatalf("the panic's stack was lost:\n%s", debug.Stack())
				}
			}()
			for ev, err := range g.Stream(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamCustom}, Subgraphs: true}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Mode == graph.StreamCustom {
					consumerBoom()
				}
			}
			t.Fatal("the loop ended without the panic")
		})
	}
}

// A cached node inside a subgraph is served from the cache on the next run:
// its key holds the node's place in the graph, not the parent task's id.
func TestNodeCacheHitsInsideSubgraphs(t *testing.T) {
	var calls atomic.Int32
	sub, err := graph.New(Log).AddNode(
		"expensive", func(ctx context.Context, s graph.State) (graph.Update, error) {
			calls.Add(1)
			return Log.Write([]string{"computed"}), nil
		}, &graph.NodeOptions{Cache: &graph.CachePolicy{}}).
		AddEdge(graph.START, "expensive").Compile(&graph.CompileOptions{Cache: graph.NewMemoryCache()})

	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.New(Log).AddSubgraph("outer", sub, nil).AddEdge(graph.START, "outer").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s, err := g.Invoke(context.Background(), Log.Write([]string{"q"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(Log.Get(s), ","); got != "q,q,computed" {
			t.Fatalf("log = %s", got)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the cached node inside the subgraph ran %d times over 3 equal runs, want 1", n)
	}
}

// failingCache fails every Get and Set.
type failingCache struct{}

var errCacheDown = errors.New("test: cache down")

func (failingCache) Get(context.Context, string) ([]byte, bool, error) {
	return nil, false, errCacheDown
}
func (failingCache) Set(context.Context, string, []byte, time.Duration) error {
	return errCacheDown
}

// Cache failures are never silent: a key that cannot be computed fails the
// task; a cache that fails to read or write lets the node run and reports
// the failure in the debug stream and the log.
func TestNodeCacheErrorsAreReported(t *testing.T) {
	var logged strings.Builder
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	ran := 0
	g, err := graph.New(Log).AddNode(
		"a", func(ctx context.Context, s graph.State) (graph.Update, error) {
			ran++
			return Log.Write([]string{"a"}), nil
		}, &graph.NodeOptions{Cache: &graph.CachePolicy{}}).
		AddEdge(graph.START, "a").Compile(&graph.CompileOptions{Cache: failingCache{}, Logger: logger})

	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for ev, err := range g.Stream(context.Background(), Log.Write([]string{"q"}), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamDebug}}) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(graph.DebugEvent); ok && d.Type == "cache_error" {
			ce, ok := d.Payload.(*graph.CacheError)
			if !ok || !errors.Is(ce, errCacheDown) || ce.Node != "a" {
				t.Fatalf("cache_error payload %#v", d.Payload)
			}
			ops = append(ops, ce.Op)
		}
	}
	if strings.Join(ops, ",") != "get,set" || ran != 1 {
		t.Fatalf("cache errors streamed %v, node ran %d times; want get,set and 1", ops, ran)
	}
	if !strings.Contains(logged.String(), errCacheDown.Error()) {
		t.Fatalf("log = %q, want the cache error", logged.String())
	}

	// A key function that fails fails the task, naming the node.
	keyErr := errors.New("test: no key")
	g, err = graph.New(Log).AddNode(
		"k", add("k"), &graph.NodeOptions{Cache: &graph.CachePolicy{Key: func(graph.State) (string, error) { return "", keyErr }}}).
		AddEdge(graph.START, "k").Compile(&graph.CompileOptions{Cache: graph.NewMemoryCache()})

	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), Log.Write([]string{"q"}), nil)
	var ce *graph.CacheError
	var ne *graph.NodeError
	if !errors.As(err, &ce) || ce.Op != "key" || !errors.Is(err, keyErr) || !errors.As(err, &ne) || ne.Node != "k" {
		t.Fatalf("Invoke = %v, want the node's cache key error", err)
	}
}

// Under the default async durability a run whose input checkpoint cannot be
// stored fails before its first node runs: a node with side effects (a
// booking tool) never acts on a run that could not be saved.
func TestAsyncInputSaveFailureRunsNoNode(t *testing.T) {
	for _, failStep := range []int{-1, 0} {
		d := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), failPut: func(m checkpoint.Metadata) bool { return m.Step == failStep }}
		g, ran := threeSteps(t, d, graph.CompileOptions{})
		_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t"})
		if !errors.Is(err, errDiskFull) {
			t.Fatalf("step %d: Invoke = %v, want the save error (%v)", failStep, err, errDiskFull)
		}
		if len(*ran) != 0 {
			t.Fatalf("step %d: nodes ran (%v) although the input checkpoint was not stored", failStep, *ran)
		}
	}
}

// graceDriver records the deadline of each write made after the caller
// cancelled the run (after cancelled is set).
type graceDriver struct {
	checkpoint.Driver
	cancelled atomic.Bool
	deadlines chan string
}

func (d *graceDriver) note(op string, ctx context.Context) {
	if !d.cancelled.Load() {
		return
	}
	dl, ok := ctx.Deadline()
	if !ok {
		d.deadlines <- op + ": none"
		return
	}
	d.deadlines <- op + ": " + dl.Format(time.RFC3339Nano)
}

func (d *graceDriver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs []checkpoint.Blob) (checkpoint.Config, error) {
	d.note("Put", ctx)
	return d.Driver.Put(ctx, cfg, cp, meta, blobs)
}

func (d *graceDriver) PutWrites(ctx context.Context, cfg checkpoint.Config, task string, writes []checkpoint.PendingWrite) error {
	d.note("PutWrites", ctx)
	return d.Driver.PutWrites(ctx, cfg, task, writes)
}

func (d *graceDriver) ReleaseLease(ctx context.Context, thread, owner string) error {
	d.note("ReleaseLease", ctx)
	return d.Driver.ReleaseLease(ctx, thread, owner)
}

// After the caller cancels a run, the writes still due (the work of the
// step that was running, the lease's release) get a short grace, not the
// whole CheckpointerTimeout or the lease's TTL: a cancelled run on a
// stalled store returns within about two seconds. The deadlines the
// store's calls carry say so.
func TestCancelledRunWritesGetAShortGrace(t *testing.T) {
	for _, dur := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		d := &graceDriver{Driver: checkpoint.NewMemoryDriver(), deadlines: make(chan string, 100)}
		ctx, cancel := context.WithCancel(context.Background())
		var cancelledAt time.Time
		g, err := graph.New(Log).
			AddNode("a", func(context.Context, graph.State) (graph.Update, error) {
				cancelledAt = time.Now()
				d.cancelled.Store(true)
				cancel()
				return Log.Write([]string{"a"}), nil
			}, nil).
			AddEdge(graph.START, "a").
			Compile(&graph.CompileOptions{Checkpointer: checkpoint.New(d), CheckpointerTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Invoke(ctx, Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t", Durability: dur, LeaseTTL: time.Hour})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: Invoke = %v; want context.Canceled", dur, err)
		}
		close(d.deadlines)
		var calls []string
		for c := range d.deadlines {
			calls = append(calls, c)
			op, when, _ := strings.Cut(c, ": ")
			dl, err := time.Parse(time.RFC3339Nano, when)
			if err != nil {
				t.Fatalf("%s: %s had no deadline after the cancel", dur, op)
			}
			// Without the grace it would be an hour away.
			if dl.Sub(cancelledAt) > time.Minute {
				t.Errorf("%s: %s after the cancel had %v to finish; want the grace of a few seconds", dur, op, dl.Sub(cancelledAt))
			}
		}
		if !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "ReleaseLease") }) {
			t.Errorf("%s: no release of the lease after the cancel among %v", dur, calls)
		}
		t.Logf("%s: %v", dur, calls)
	}
}
