package sqlstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// BatchWritesLeaseChecked checks a task's writes made in a batch, which
// do not wait for their lease check: the batch's next fenced write makes
// it, or the batch before it commits. A batch whose lease was taken over
// stores none of them, either way, and says ErrLeaseLost; with its lease,
// it stores them. checks, when not nil, returns the lease checks made
// since it was last called: one per batch.
func BatchWritesLeaseChecked(t *testing.T, s *checkpoint.Saver, checks func() int) {
	ctx := context.Background()
	writes := func(ctx context.Context, thread string) error {
		return s.PutWrites(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: "1"}, "task", []checkpoint.PendingWrite{{Channel: "m", Value: json.RawMessage(`"w"`)}})
	}
	put := func(ctx context.Context, thread, parent, id string) error {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: parent},
			&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: id, Versions: map[string]int64{}}, checkpoint.Metadata{Source: "loop"}, nil)
		return err
	}
	for _, then := range []string{"nothing", "put"} {
		for _, lost := range []bool{false, true} {
			thread := fmt.Sprintf("%s-%v", then, lost)
			if err := put(ctx, thread, "", "1"); err != nil {
				t.Fatal(err)
			}
			l, err := s.Acquire(ctx, thread, checkpoint.LeaseOptions{Owner: "a"})
			if err != nil {
				t.Fatal(err)
			}
			if lost {
				// Taken over: released behind the holder's back, and
				// taken by another.
				lt := s.Driver().(checkpoint.LeaseDriver)
				if err := lt.ReleaseLease(ctx, thread, "a"); err != nil {
					t.Fatal(err)
				}
				if err := lt.AcquireLease(ctx, thread, checkpoint.LeaseRequest{Owner: "b", TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
			}
			if checks != nil {
				checks()
			}
			err = s.Batch(checkpoint.WithLease(ctx, l), thread, func(ctx context.Context) error {
				if err := writes(ctx, thread); err != nil {
					return err
				}
				if then == "put" {
					return put(ctx, thread, "1", "2")
				}
				return nil
			})
			if checks != nil {
				if n := checks(); n != 1 {
					t.Errorf("%s: %d lease checks; want 1", thread, n)
				}
			}
			tup, gerr := s.Get(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: "1"})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if lost {
				if !errors.Is(err, checkpoint.ErrLeaseLost) {
					t.Errorf("%s: Batch = %v; want ErrLeaseLost", thread, err)
				}
				if len(tup.PendingWrites) != 0 {
					t.Errorf("%s: the writes of a batch without its lease were stored: %v", thread, tup.PendingWrites)
				}
				if got, _ := s.Get(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: "2"}); got != nil {
					t.Errorf("%s: the checkpoint of a batch without its lease was stored", thread)
				}
			} else {
				if err != nil {
					t.Errorf("%s: Batch = %v", thread, err)
				}
				if len(tup.PendingWrites) != 1 {
					t.Errorf("%s: pending writes %v; want the one made", thread, tup.PendingWrites)
				}
			}
			l.Release(ctx)
		}
	}
}
