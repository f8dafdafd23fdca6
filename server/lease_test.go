package server_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/server"
)

// leaseWrites counts the lease writes a saver makes through its driver:
// those of Saver.Acquire (each attempt, waiting ones too) and of
// Lease.Release.
type leaseWrites struct{ acquires, releases atomic.Int64 }

// countingSQLite and countingPostgres are the backends' drivers, every
// capability kept, with their lease writes counted.
type countingSQLite struct {
	*sqlite.Driver
	n *leaseWrites
}

func (d countingSQLite) AcquireLease(ctx context.Context, threadID string, req checkpoint.LeaseRequest) error {
	d.n.acquires.Add(1)
	return d.Driver.AcquireLease(ctx, threadID, req)
}

func (d countingSQLite) ReleaseLease(ctx context.Context, threadID, owner string) error {
	d.n.releases.Add(1)
	return d.Driver.ReleaseLease(ctx, threadID, owner)
}

type countingPostgres struct {
	*postgres.Driver
	n *leaseWrites
}

func (d countingPostgres) AcquireLease(ctx context.Context, threadID string, req checkpoint.LeaseRequest) error {
	d.n.acquires.Add(1)
	return d.Driver.AcquireLease(ctx, threadID, req)
}

func (d countingPostgres) ReleaseLease(ctx context.Context, threadID, owner string) error {
	d.n.releases.Add(1)
	return d.Driver.ReleaseLease(ctx, threadID, owner)
}

// countLeaseWrites makes db's saver count its lease writes; the server
// still finds the records' database through db.Driver.
func countLeaseWrites(t *testing.T, db *dburl.DB) *leaseWrites {
	t.Helper()
	n := &leaseWrites{}
	switch d := db.Driver().(type) {
	case *sqlite.Driver:
		db.Saver = checkpoint.New(countingSQLite{d, n})
	case *postgres.Driver:
		db.Saver = checkpoint.New(countingPostgres{d, n})
	default:
		t.Fatalf("driver %T", d)
	}
	return n
}

// heldBy fails unless another process finds thread held by run runID.
func heldBy(t *testing.T, other *dburl.DB, thread, runID string) {
	t.Helper()
	_, err := other.Saver.Acquire(context.Background(), thread, checkpoint.LeaseOptions{})
	var be *checkpoint.BusyError
	if !errors.As(err, &be) || be.RunID != runID {
		t.Fatalf("another process's Acquire of thread %s: %v; want it busy, held by run %s", thread, err, runID)
	}
}

// free fails unless another process takes thread at once.
func free(t *testing.T, other *dburl.DB, thread string) {
	t.Helper()
	l, err := other.Saver.Acquire(context.Background(), thread, checkpoint.LeaseOptions{})
	if err != nil {
		t.Fatalf("another process's Acquire of thread %s: %v; want it free", thread, err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A run that is to start at once takes its thread's lease in the write
// that creates it, and executes with that lease without writing it again:
// meanwhile another process finds the thread busy, held by the run. A run
// cancelled or left by a shutdown before it started gives the thread up
// at once.
func TestRunTakesLeaseWithItsRecord(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			n := countLeaseWrites(t, db)
			other := reopen(t, db)
			srv := startServer(t, server.Options{DB: db, Workers: 1})
			s := wrap(t, srv)

			tid := s.newThread()
			s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")})
			if a, r := n.acquires.Load(), n.releases.Load(); a != 0 || r != 0 {
				t.Errorf("a run wrote its lease %d times and released it %d times by itself; want 0 and 0 (taken with its record, given up with its end)", a, r)
			}
			free(t, other, tid)

			// The one worker is busy: the next runs wait for it, holding
			// their threads.
			busy := s.newThread()
			first := s.startSlow(busy, "a", 600000)
			heldBy(t, other, busy, first)
			waiting := s.newThread()
			run := s.must(200, "POST", "/threads/"+waiting+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}}).obj(t)["run_id"].(string)
			heldBy(t, other, waiting, run)
			if a := n.acquires.Load(); a != 0 {
				t.Errorf("runs took their threads with %d writes of their own; want 0", a)
			}
			s.must(204, "POST", "/threads/"+waiting+"/runs/"+run+"/cancel?wait=1", nil)
			if st := s.must(200, "GET", "/threads/"+waiting+"/runs/"+run, nil).obj(t)["status"]; st != "interrupted" {
				t.Errorf("a run cancelled before it started = %v", st)
			}
			free(t, other, waiting)

			left := s.newThread()
			pending := s.must(200, "POST", "/threads/"+left+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "c"}}).obj(t)["run_id"].(string)
			heldBy(t, other, left, pending)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := srv.Shutdown(ctx); err == nil {
				t.Fatal("Shutdown with a run still sleeping returned no error")
			}
			free(t, other, left)
			// Another process takes it over and runs it.
			next := newServer(t, server.Options{DB: reopen(t, db)})
			if st := next.waitRun(left, pending)["status"]; st != "success" {
				t.Errorf("a run left by a shutdown before it started, taken over = %v", st)
			}
			next.must(204, "POST", "/threads/"+busy+"/runs/"+first+"/cancel?wait=1", nil)
		})
	}
}

// A run on a thread another process holds is created all the same and
// waits for the thread, as before: the lease is not taken with its record.
func TestRunWaitsForThreadHeldElsewhere(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			n := countLeaseWrites(t, db)
			other := reopen(t, db)
			s := newServer(t, server.Options{DB: db})
			tid := s.newThread()
			held, err := other.Saver.Acquire(context.Background(), tid, checkpoint.LeaseOptions{RunID: "weft-run"})
			if err != nil {
				t.Fatal(err)
			}
			run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": human("hello")}).obj(t)["run_id"].(string)
			// The run waits for the thread: its Acquire tries at least once.
			deadline := time.Now().Add(30 * time.Second)
			for n.acquires.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the run never tried to take its thread")
				}
				time.Sleep(time.Millisecond)
			}
			heldBy(t, other, tid, "weft-run")
			if err := held.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := s.waitRun(tid, run)["status"]; st != "success" {
				t.Errorf("the run, once the thread was free = %v", st)
			}
			free(t, other, tid)
		})
	}
}

// TestConcurrentEnqueueOnIdleThread creates runs together on an idle
// thread with the enqueue strategy: one takes the lease with its record,
// the others find the thread taken, and whichever gets into the thread's
// line first runs first. Every run must end, whatever the order (a run
// holding the lease behind one waiting for it would wait for ever).
func TestConcurrentEnqueueOnIdleThread(t *testing.T) {
	s := newServer(t, server.Options{DB: backends[0].open(t)})
	for i := range 30 {
		tid := s.newThread()
		var wg sync.WaitGroup
		ids := make([]string, 4)
		for j := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": human("hello"), "multitask_strategy": "enqueue"})
				if r.status != 200 {
					t.Errorf("creating run %d: status %d %s", j, r.status, r.body)
					return
				}
				ids[j] = r.obj(t)["run_id"].(string)
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		deadline := time.Now().Add(20 * time.Second)
		for _, id := range ids {
			for {
				st := s.must(200, "GET", "/threads/"+tid+"/runs/"+id, nil).obj(t)["status"]
				if st != "pending" && st != "running" {
					if st != "success" {
						t.Errorf("round %d: run %s ended %v, want success", i, id, st)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: run %s of thread %s still %v after 20s", i, id, tid, st)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
}

// A state update that finds no run recorded on the thread but its lease
// still held (a run whose end is recorded and whose lease is on its way
// back, or weft run holding the thread for a moment) waits for the lease
// a little, rather than answering 409 to a client that saw the run end;
// a lease held on is still a 409.
func TestUpdateStateWaitsForALeaseOnItsWayBack(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			other := reopen(t, db)
			s := newServer(t, server.Options{DB: db})
			tid := s.newThread()
			s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")})
			update := map[string]any{"values": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "added", "id": "upd-1"}}}, "as_node": "echo"}

			held, err := other.Saver.Acquire(context.Background(), tid, checkpoint.LeaseOptions{RunID: "weft-run"})
			if err != nil {
				t.Fatal(err)
			}
			released := make(chan error, 1)
			go func() {
				time.Sleep(300 * time.Millisecond)
				released <- held.Release(context.Background())
			}()
			s.must(200, "POST", "/threads/"+tid+"/state", update)
			if err := <-released; err != nil {
				t.Fatal(err)
			}

			held, err = other.Saver.Acquire(context.Background(), tid, checkpoint.LeaseOptions{RunID: "weft-run"})
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release(context.Background())
			if r := s.do("POST", "/threads/"+tid+"/state", update); r.status != 409 {
				t.Errorf("update of a thread held on: %d %s; want 409", r.status, r.body)
			}
		})
	}
}
