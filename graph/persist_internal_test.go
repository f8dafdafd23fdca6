package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeStore is a store whose batches are transactions: a batch's writes
// are staged and kept only when the whole batch succeeds.
type fakeStore struct {
	mu      sync.Mutex
	stored  []string
	batches [][]string
	// hang makes batches wait for their context to end.
	hang bool
	// slowBatches makes batches of more than one write wait for their
	// context to end after their writes: each write is quick, but
	// together they outlast the bound.
	slowBatches bool
}

type stageKey struct{}

type stage struct{ writes []string }

func (s *fakeStore) batch(ctx context.Context, fn func(context.Context) error) error {
	if s.hang {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	st := &stage{}
	err := fn(context.WithValue(ctx, stageKey{}, st))
	if err == nil && s.slowBatches && len(st.writes) > 1 {
		<-ctx.Done()
		err = context.Cause(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, st.writes)
	if err == nil {
		s.stored = append(s.stored, st.writes...)
	}
	return err
}

// write is a write the persister makes: staged in a batch, or stored at
// once; fail makes it fail with its own error.
func (s *fakeStore) write(name string, fail bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if fail {
			return fmt.Errorf("write %s failed", name)
		}
		if st, ok := ctx.Value(stageKey{}).(*stage); ok {
			st.writes = append(st.writes, name)
			return nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stored = append(s.stored, name)
		return nil
	}
}

func (s *fakeStore) state() (stored []string, batches [][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stored), slices.Clone(s.batches)
}

// queueBehind queues the writes while the first one is being made, so
// that they wait behind it, and returns when all are queued.
func queueBehind(p *persister, s *fakeStore, names []string, failing string) {
	started, release := make(chan struct{}), make(chan struct{})
	first := s.write(names[0], names[0] == failing)
	var once sync.Once
	_ = p.do(names[0], func(ctx context.Context) error {
		// Made again, one at a time, after a failed batch.
		once.Do(func() { close(started) })
		<-release
		return first(ctx)
	})
	<-started
	for _, n := range names[1:] {
		_ = p.do(n, s.write(n, n == failing))
	}
	close(release)
}

// Writes queued behind the one being made join its batch: one
// transaction, in order, and a flush returns once it is stored.
func TestPersisterBatchesQueuedWrites(t *testing.T) {
	s := &fakeStore{}
	p := newPersister(context.Background(), true, time.Minute, s.batch)
	queueBehind(p, s, []string{"put 1", "writes 1", "put 2", "writes 2"}, "")
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	stored, batches := s.state()
	want := []string{"put 1", "writes 1", "put 2", "writes 2"}
	if !slices.Equal(stored, want) {
		t.Fatalf("stored %v at the flush; want %v", stored, want)
	}
	if len(batches) != 1 {
		t.Fatalf("the writes went in %d batches %v; want one", len(batches), batches)
	}
	// After the flush, a write alone is a batch of its own.
	_ = p.do("put 3", s.write("put 3", false))
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if stored, batches = s.state(); len(batches) != 2 || !slices.Equal(stored, append(want, "put 3")) {
		t.Fatalf("after close: stored %v in batches %v", stored, batches)
	}
}

// A write that fails in a batch fails it; its writes are then made one at
// a time: those before the failing one are stored, its error is the
// run's, and those after it are not made.
func TestPersisterBatchFailureMatchesOneByOne(t *testing.T) {
	s := &fakeStore{}
	p := newPersister(context.Background(), true, time.Minute, s.batch)
	queueBehind(p, s, []string{"put 1", "writes 1", "put 2", "writes 2"}, "put 2")
	err := p.close()
	if err == nil || err.Error() != "write put 2 failed" {
		t.Fatalf("close = %v; want the failing write's error", err)
	}
	stored, batches := s.state()
	if want := []string{"put 1", "writes 1"}; !slices.Equal(stored, want) {
		t.Fatalf("stored %v; want %v, the writes before the failing one", stored, want)
	}
	if len(batches) != 1 {
		t.Fatalf("batches %v; want the failed one only, then writes one at a time", batches)
	}
	if err := p.do("later", s.write("later", false)); err == nil {
		t.Fatal("a write after the failure was accepted")
	}
}

// A batch cut short by the checkpointer timeout is not made again one
// write at a time: its error names the bound.
func TestPersisterBatchTimeout(t *testing.T) {
	s := &fakeStore{hang: true}
	p := newPersister(context.Background(), true, 20*time.Millisecond, s.batch)
	_ = p.do("put 1", s.write("put 1", false))
	_ = p.do("writes 1", s.write("writes 1", false))
	err := p.close()
	if !errors.Is(err, ErrCheckpointerTimeout) {
		t.Fatalf("close = %v; want ErrCheckpointerTimeout", err)
	}
	if stored, _ := s.state(); len(stored) != 0 {
		t.Fatalf("stored %v after the batch timed out; want nothing", stored)
	}
}

// Sync durability never batches: each write is made when asked.
func TestPersisterSyncDoesNotBatch(t *testing.T) {
	s := &fakeStore{}
	p := newPersister(context.Background(), false, time.Minute, s.batch)
	for _, n := range []string{"put 1", "writes 1"} {
		if err := p.do(n, s.write(n, false)); err != nil {
			t.Fatal(err)
		}
		if stored, _ := s.state(); stored[len(stored)-1] != n {
			t.Fatalf("after %s: stored %v", n, stored)
		}
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if _, batches := s.state(); len(batches) != 0 {
		t.Fatalf("sync durability made batches %v", batches)
	}
}

// A batch whose writes each finish within the checkpointer timeout but
// together outlast it does not fail the run, as the same writes one at a
// time would not: its writes are made again one at a time, each with the
// bound it has alone.
func TestPersisterBatchOutlastingItsBound(t *testing.T) {
	s := &fakeStore{slowBatches: true}
	p := newPersister(context.Background(), true, 50*time.Millisecond, s.batch)
	names := []string{"put 1", "writes 1", "put 2", "writes 2"}
	queueBehind(p, s, names, "")
	if err := p.close(); err != nil {
		t.Fatalf("close = %v; want nil: no write took longer than the timeout", err)
	}
	stored, batches := s.state()
	if !slices.Equal(stored, names) {
		t.Fatalf("stored %v; want %v", stored, names)
	}
	if len(batches) != 1 || len(batches[0]) != len(names) {
		t.Fatalf("batches %v; want the one that outlasted its bound", batches)
	}
}

// The background writes share one bound context: a write that outlasts
// the bound fails naming it, the next write gets a bound of its own (with
// its deadline), and a write after the parent ended fails at once, as
// with a context per write.
func TestSerialBound(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	b := &serialBound{parent: parent, d: 20 * time.Millisecond}
	defer b.close()
	err := b.call("put 1", func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, ErrCheckpointerTimeout) {
		t.Fatalf("hanging write = %v; want ErrCheckpointerTimeout", err)
	}
	for i := range 3 {
		err = b.call("put 2", func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("no deadline")
			}
			return ctx.Err()
		})
		if err != nil {
			t.Fatalf("write %d after a timed-out one = %v; want nil", i, err)
		}
	}
	cancel()
	err = b.call("put 3", func(ctx context.Context) error { return ctx.Err() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("write after the parent ended = %v; want context.Canceled", err)
	}
}
