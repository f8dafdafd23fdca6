package graph_test

// Tests for the runtime defects of issue 7 §10: each reproduces one.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
	g, err := graph.New(Blob).
		AddNode("loop", func(ctx context.Context, s graph.State) (graph.Update, error) {
			m := map[string]any{"name": "self"}
			m["self"] = []any{m}
			return Blob.Write(m), nil
		}).
		AddEdge(graph.START, "loop").
		Compile(graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		_, err = g.Invoke(context.Background(), Blob.Write("start"), graph.RunOptions{ThreadID: "cycle-" + string(d), Durability: d})
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
	g, err := graph.New(Log).
		AddNode("a", node("a")).AddNode("b", node("b")).AddNode("c", node("c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").
		Compile(co)
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
	_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), graph.RunOptions{ThreadID: "t"})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Invoke = %v, want the save error (%v)", err, errDiskFull)
	}
	if got := strings.Join(*ran, ","); got != "a,b,c" {
		t.Fatalf("ran %s", got)
	}
	// Stream reports it too, as its last item.
	var last error
	for _, err := range g.Stream(context.Background(), Log.Write([]string{"in"}), graph.RunOptions{ThreadID: "t2"}) {
		last = err
	}
	if !errors.Is(last, errDiskFull) {
		t.Fatalf("Stream's last error = %v, want %v", last, errDiskFull)
	}
}

// Under sync durability a checkpoint that could not be stored stops the run
// before the next step: no node runs on top of an unsaved parent.
func TestSyncSaveFailureStopsTheRun(t *testing.T) {
	d := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), failPut: func(m checkpoint.Metadata) bool { return m.Step == 1 }}
	g, ran := threeSteps(t, d, graph.CompileOptions{})
	_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), graph.RunOptions{ThreadID: "t", Durability: graph.DurabilitySync})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Invoke = %v, want the save error (%v)", err, errDiskFull)
	}
	if got := strings.Join(*ran, ","); got != "a" {
		t.Fatalf("nodes that ran: %s; want only a: the checkpoint after a was not stored", got)
	}
	snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"})
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
		_, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), graph.RunOptions{ThreadID: "t", Durability: d})
		if !errors.Is(err, graph.ErrCheckpointerTimeout) {
			t.Fatalf("%s: Invoke = %v, want ErrCheckpointerTimeout", d, err)
		}
		if !strings.Contains(err.Error(), "CheckpointerTimeout") {
			t.Fatalf("%s: %v does not name the bound", d, err)
		}
	}
}

// A run whose caller gives up returns, with the caller's error, even when
// its store hangs: the writes still due after the cancellation get one
// bounded window (the final checkpoint of a stopped run included), not
// forever.
func TestCancelledRunReturnsOnHungCheckpointer(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		drv := &faultyDriver{Driver: checkpoint.NewMemoryDriver(), hangPut: func(m checkpoint.Metadata) bool { return m.Step >= 0 }}
		g, err := graph.New(Log).
			AddNode("a", add("a")).
			AddNode("wait", func(ctx context.Context, s graph.State) (graph.Update, error) {
				<-ctx.Done()
				return graph.Update{}, ctx.Err()
			}).
			AddEdge(graph.START, "a").AddEdge("a", "wait").
			Compile(graph.CompileOptions{Checkpointer: checkpoint.New(drv), CheckpointerTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = g.Invoke(ctx, Log.Write([]string{"in"}), graph.RunOptions{ThreadID: "t", Durability: d})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, graph.ErrCheckpointerTimeout) {
			t.Fatalf("%s: Invoke = %v, want the caller's deadline or the checkpointer bound", d, err)
		}
	}
}
