package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// batchingDriver is a memory driver that can batch (its batches are not
// transactions): it counts batches, and writes made outside one.
type batchingDriver struct {
	checkpoint.Driver
	batches, outside atomic.Int64
}

type inBatchKey struct{}

func (d *batchingDriver) WriteBatch(ctx context.Context, _ string, fn func(context.Context) error) error {
	d.batches.Add(1)
	return fn(context.WithValue(ctx, inBatchKey{}, true))
}

func (d *batchingDriver) note(ctx context.Context) {
	if ctx.Value(inBatchKey{}) == nil {
		d.outside.Add(1)
	}
}

func (d *batchingDriver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs []checkpoint.Blob) (checkpoint.Config, error) {
	d.note(ctx)
	return d.Driver.Put(ctx, cfg, cp, meta, blobs)
}

func (d *batchingDriver) PutWrites(ctx context.Context, cfg checkpoint.Config, taskID string, writes []checkpoint.PendingWrite) error {
	d.note(ctx)
	return d.Driver.PutWrites(ctx, cfg, taskID, writes)
}

// A run with async durability over a saver that can batch makes every
// checkpoint write in a batch; with sync durability, none.
func TestAsyncRunWritesInBatches(t *testing.T) {
	for _, tc := range []struct {
		durability graph.Durability
		batched    bool
	}{{graph.DurabilityAsync, true}, {graph.DurabilitySync, false}} {
		d := &batchingDriver{Driver: checkpoint.NewMemoryDriver()}
		g, _ := threeSteps(t, d, graph.CompileOptions{})
		if _, err := g.Invoke(context.Background(), Log.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t", Durability: tc.durability}); err != nil {
			t.Fatal(err)
		}
		snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Metadata.Step != 3 {
			t.Fatalf("%v: latest checkpoint is step %d; want 3", tc.durability, snap.Metadata.Step)
		}
		batches, outside := d.batches.Load(), d.outside.Load()
		switch {
		case tc.batched && (batches == 0 || outside != 0):
			t.Fatalf("%v: %d batches, %d writes outside one; want every write in a batch", tc.durability, batches, outside)
		case !tc.batched && (batches != 0 || outside == 0):
			t.Fatalf("%v: %d batches, %d writes outside one; want no batch", tc.durability, batches, outside)
		}
	}
}
