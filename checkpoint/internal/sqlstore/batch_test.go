package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore/sqlstoretest"
)

// A checkpoint put again naming itself as its parent (odd input) is
// stored, or refused, in a batch as it is alone: the batch's memory of
// the entries it stored is not taken for the parent's.
func TestBatchSelfParent(t *testing.T) {
	ctx := context.Background()
	_, s := newCounted(t, sqlstore.Options{})
	put := func(ctx context.Context, thread, parent string, blob checkpoint.Blob) error {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: parent},
			&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: "x", Versions: map[string]int64{"m": blob.Version}},
			checkpoint.Metadata{Source: "loop"}, []checkpoint.Blob{blob})
		return err
	}
	first := checkpoint.Blob{Channel: "m", Version: 1, Value: json.RawMessage(`["a"]`)}
	again := checkpoint.Blob{Channel: "m", Version: 2, BaseVersion: 1, Appended: []json.RawMessage{json.RawMessage(`"b"`)}}
	if err := put(ctx, "alone", "", first); err != nil {
		t.Fatal(err)
	}
	aloneErr := put(ctx, "alone", "x", again)
	var batchErr error
	err := s.Batch(ctx, "batched", func(ctx context.Context) error {
		if err := put(ctx, "batched", "", first); err != nil {
			return err
		}
		batchErr = put(ctx, "batched", "x", again)
		return batchErr
	})
	if !errors.Is(err, batchErr) {
		t.Fatalf("Batch returned %v; want the write's error %v", err, batchErr)
	}
	if (aloneErr == nil) != (batchErr == nil) {
		t.Fatalf("a checkpoint put with itself as parent: alone %v, in a batch %v; want the same outcome", aloneErr, batchErr)
	}
}

// A lease statement made in a batch (here a release, through the driver)
// makes the batch's next fenced write check the lease again: the check
// the batch made before may no longer hold.
func TestBatchLeaseChangedInBatch(t *testing.T) {
	ctx := context.Background()
	_, s := newCounted(t, sqlstore.Options{})
	l, err := s.Acquire(ctx, "t", checkpoint.LeaseOptions{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	put := func(ctx context.Context, id string) error {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"},
			&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: id, Versions: map[string]int64{}}, checkpoint.Metadata{Source: "loop"}, nil)
		return err
	}
	var second error
	err = s.Batch(checkpoint.WithLease(ctx, l), "t", func(ctx context.Context) error {
		if err := put(ctx, "1"); err != nil {
			return err
		}
		if err := s.Driver().(checkpoint.LeaseDriver).ReleaseLease(ctx, "t", "a"); err != nil {
			return err
		}
		second = put(ctx, "2")
		return second
	})
	if !errors.Is(second, checkpoint.ErrLeaseLost) || !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("a Put after its lease was released in the same batch returned %v (batch %v); want ErrLeaseLost", second, err)
	}
}

// A task's writes made in a batch do not wait for their lease check
// (sqlstoretest.BatchWritesLeaseChecked), and the batch checks the lease
// once.
func TestBatchWritesLeaseChecked(t *testing.T) {
	c, s := newCounted(t, sqlstore.Options{})
	c.take()
	sqlstoretest.BatchWritesLeaseChecked(t, s, func() int {
		_, stmts := c.take()
		return fenceChecks(stmts)
	})
}
