package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// waitBound bounds every wait of the lease tests: a test that reaches it
// failed, it is not a timing assertion.
const waitBound = 30 * time.Second

func acquire(t *testing.T, s *checkpoint.Saver, thread string, opts checkpoint.LeaseOptions) *checkpoint.Lease {
	t.Helper()
	l, err := s.Acquire(bg, thread, opts)
	if err != nil {
		t.Fatalf("Acquire %q: %v", thread, err)
	}
	t.Cleanup(func() { l.Release(bg) })
	return l
}

// A second owner of a held thread fails at once with a *BusyError that
// names the thread and the holder's run.
func testLeaseBusy(t *testing.T, s *checkpoint.Saver) {
	acquire(t, s, "t", checkpoint.LeaseOptions{RunID: "first-run"})
	_, err := s.Acquire(bg, "t", checkpoint.LeaseOptions{})
	wantErr(t, err, checkpoint.ErrThreadBusy, "second Acquire")
	var be *checkpoint.BusyError
	if !errors.As(err, &be) {
		t.Fatalf("busy error is %T, want *checkpoint.BusyError", err)
	}
	if be.ThreadID != "t" || be.RunID != "first-run" || be.ExpiresAt.IsZero() {
		t.Fatalf("BusyError = %+v; want thread \"t\", run \"first-run\" and an expiry", be)
	}
	if !strings.Contains(err.Error(), `"t"`) {
		t.Fatalf("busy error %q does not name the thread", err)
	}
	// Another thread is free; the same owner may take its lease again.
	acquire(t, s, "other", checkpoint.LeaseOptions{})
	if _, err := s.Acquire(bg, "", checkpoint.LeaseOptions{}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Fatalf("Acquire without a thread: %v, want ErrInvalid", err)
	}
}

// ReleaseWith stops the lease before its caller's write runs, runs that
// write once, and when the write fails releases the lease in the store
// itself: the thread is free at once either way (here the write never
// deletes the row, so only the fallback frees it). Release afterwards,
// and a second ReleaseWith, do nothing.
func testLeaseReleaseWith(t *testing.T, s *checkpoint.Saver) {
	l, err := s.Acquire(bg, "rw", checkpoint.LeaseOptions{RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	err = l.ReleaseWith(bg, func(ctx context.Context) error {
		calls++
		if l.Err() == nil || !errors.Is(l.Err(), checkpoint.ErrLeaseLost) {
			t.Errorf("during the caller's write the lease is still live: Err() = %v", l.Err())
		}
		return errors.New("the caller's write failed")
	})
	if err != nil || calls != 1 {
		t.Fatalf("ReleaseWith = %v after %d calls; want nil (the store's release succeeded) after 1", err, calls)
	}
	acquire(t, s, "rw", checkpoint.LeaseOptions{RunID: "run-2"})
	if err := l.ReleaseWith(bg, func(context.Context) error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("a second ReleaseWith: %v after %d calls; want nothing done", err, calls)
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	// The old lease's Release must not have freed the new owner's thread.
	if _, err := s.Acquire(bg, "rw", checkpoint.LeaseOptions{}); !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("Acquire after the old lease's Release: %v, want ErrThreadBusy (run-2 holds it)", err)
	}
}

// AdoptLease holds a lease its caller took in a write of its own, writing
// nothing: the thread stays busy for others, and Release frees it. A lease
// adopted without being held is lost at its first renewal. Bad arguments
// are ErrInvalid.
func testLeaseAdopt(t *testing.T, s *checkpoint.Saver) {
	// Stands for the caller's own write: the row taken for owner "o".
	acquire(t, s, "ad", checkpoint.LeaseOptions{Owner: "o", RunID: "run-1", TTL: time.Hour})
	l, err := s.AdoptLease("ad", checkpoint.LeaseOptions{Owner: "o", RunID: "run-1", TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner() != "o" || l.ThreadID() != "ad" || l.Err() != nil {
		t.Fatalf("adopted lease: owner %q, thread %q, Err %v", l.Owner(), l.ThreadID(), l.Err())
	}
	var be *checkpoint.BusyError
	if _, err := s.Acquire(bg, "ad", checkpoint.LeaseOptions{}); !errors.As(err, &be) || be.RunID != "run-1" {
		t.Fatalf("Acquire of an adopted lease's thread: %v, want busy, held by run-1", err)
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "ad", checkpoint.LeaseOptions{})

	ghost, err := s.AdoptLease("ghost", checkpoint.LeaseOptions{Owner: "g", TTL: 30 * time.Millisecond}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Release(bg)
	select {
	case <-ghost.Done():
	case <-time.After(waitBound):
		t.Fatal("a lease adopted but never taken was not lost")
	}
	if !errors.Is(ghost.Err(), checkpoint.ErrLeaseLost) {
		t.Fatalf("a lease adopted but never taken ended with %v, want ErrLeaseLost", ghost.Err())
	}

	for _, c := range []struct {
		thread string
		opts   checkpoint.LeaseOptions
	}{{"", checkpoint.LeaseOptions{Owner: "o"}}, {"t", checkpoint.LeaseOptions{}}, {"t", checkpoint.LeaseOptions{Owner: "o", TTL: -time.Second}}} {
		if _, err := s.AdoptLease(c.thread, c.opts, time.Now()); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("AdoptLease(%q, %+v) = %v, want ErrInvalid", c.thread, c.opts, err)
		}
	}
}

// A waiting Acquire tells its OnWait hook once, then gets the thread when
// the holder releases it; a released lease no longer fences writes.
func testLeaseWaitRelease(t *testing.T, s *checkpoint.Saver) {
	first := acquire(t, s, "t", checkpoint.LeaseOptions{RunID: "first"})
	var waits atomic.Int64
	waiting := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, waitBound)
		defer cancel()
		l, err := s.Acquire(ctx, "t", checkpoint.LeaseOptions{Wait: true, OnWait: func(be *checkpoint.BusyError) {
			if waits.Add(1) == 1 && be.RunID == "first" {
				close(waiting)
			}
		}})
		if err == nil {
			err = l.Release(bg)
		}
		got <- err
	}()
	select {
	case <-waiting:
	case <-time.After(waitBound):
		t.Fatal("the second Acquire never reported waiting for the first run")
	}
	if err := first.Release(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting Acquire: %v", err)
	}
	if n := waits.Load(); n != 1 {
		t.Fatalf("OnWait called %d times; want once", n)
	}
	// The first lease is released: a write fenced by it stores nothing.
	ctx := checkpoint.WithLease(bg, first)
	_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, cp("00000001", nil, nil), checkpoint.Metadata{}, nil)
	wantErr(t, err, checkpoint.ErrLeaseLost, "Put fenced by a released lease")
	if tp, _ := s.Get(bg, checkpoint.Config{ThreadID: "t"}); tp != nil {
		t.Fatalf("a refused Put stored checkpoint %s", tp.Config.CheckpointID)
	}
	// A waiting Acquire gives up when its context ends. The context is
	// cancelled once the wait has begun (not after a fixed time, which a
	// loaded machine may spend before the first look at the lease).
	acquire(t, s, "t", checkpoint.LeaseOptions{})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	stop := time.AfterFunc(waitBound, cancel)
	defer stop.Stop()
	_, err = s.Acquire(ctx, "t", checkpoint.LeaseOptions{Wait: true, OnWait: func(*checkpoint.BusyError) { cancel() }})
	wantErr(t, err, checkpoint.ErrThreadBusy, "waiting Acquire whose context ended")
	wantErr(t, err, context.Canceled, "waiting Acquire whose context ended")
}

// A holder that stops renewing (a crashed process) blocks the thread only
// until its lease expires; then another owner takes it over.
func testLeaseExpiry(t *testing.T, s *checkpoint.Saver) {
	// Taken through the driver: nothing renews it, as after a crash.
	if err := s.Driver().AcquireLease(bg, "t", checkpoint.LeaseRequest{Owner: "crashed", RunID: "crashed-run", TTL: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, waitBound)
	defer cancel()
	var waited bool
	l, err := s.Acquire(ctx, "t", checkpoint.LeaseOptions{Wait: true, OnWait: func(*checkpoint.BusyError) { waited = true }})
	if err != nil {
		t.Fatalf("Acquire after the holder's lease expired: %v", err)
	}
	defer l.Release(bg)
	if !waited {
		t.Log("the crashed holder's lease had expired before the first attempt")
	}
	// The crashed holder's renewal now fails.
	if _, err := s.Driver().RenewLease(bg, "t", "crashed", time.Second); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("renewal by the expired holder: %v, want ErrLeaseLost", err)
	}
}

// A write by a run whose lease was taken over is refused, stores nothing,
// and marks the lease lost; the new owner's writes go through.
func testLeaseFencing(t *testing.T, s *checkpoint.Saver) {
	old := acquire(t, s, "t", checkpoint.LeaseOptions{TTL: 10 * time.Second})
	oldCtx := checkpoint.WithLease(bg, old)
	base := mustPutCtx(t, oldCtx, s, "t", "", cp("00000001", map[string]int64{"a": 1}, nil), full("a", 1, `"old"`))
	if err := s.PutWrites(oldCtx, base, "task", []checkpoint.PendingWrite{{Channel: "a", Value: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	// The old owner's lease vanishes (as when it expired) and another
	// owner takes the thread.
	if err := s.Driver().ReleaseLease(bg, "t", old.Owner()); err != nil {
		t.Fatal(err)
	}
	nw := acquire(t, s, "t", checkpoint.LeaseOptions{})
	before := dump(t, s, "t")
	_, err := s.Put(oldCtx, base, cp("00000002", map[string]int64{"a": 2}, nil), checkpoint.Metadata{}, []checkpoint.Blob{full("a", 2, `"stale"`)})
	wantErr(t, err, checkpoint.ErrLeaseLost, "Put by the old owner")
	err = s.PutWrites(oldCtx, base, "task2", []checkpoint.PendingWrite{{Channel: "a", Value: []byte(`2`)}})
	wantErr(t, err, checkpoint.ErrLeaseLost, "PutWrites by the old owner")
	if d := diffTuples(before, dump(t, s, "t")); d != "" {
		t.Fatalf("refused writes changed the thread (-before +after):\n%s", d)
	}
	select {
	case <-old.Done():
		wantErr(t, old.Err(), checkpoint.ErrLeaseLost, "the old lease's Err")
	case <-time.After(waitBound):
		t.Fatal("the old lease's Done did not close after a refused write")
	}
	newCtx := checkpoint.WithLease(bg, nw)
	mustPutCtx(t, newCtx, s, "t", base.CheckpointID, cp("00000003", map[string]int64{"a": 3}, nil), full("a", 3, `"new"`))
	// A lease fences only its own thread.
	mustPutCtx(t, oldCtx, s, "elsewhere", "", cp("00000004", nil, nil))
}

func mustPutCtx(t *testing.T, ctx context.Context, s *checkpoint.Saver, thread, parent string, c *checkpoint.Checkpoint, blobs ...checkpoint.Blob) checkpoint.Config {
	t.Helper()
	cfg, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: parent}, c, checkpoint.Metadata{}, blobs)
	if err != nil {
		t.Fatalf("Put %s in thread %q: %v", c.ID, thread, err)
	}
	return cfg
}

// RequestCancel reaches the holder through its heartbeat: Done closes with
// ErrCancelRequested while the holder keeps the thread until it releases.
func testLeaseCancel(t *testing.T, s *checkpoint.Saver) {
	if ok, err := s.RequestCancel(bg, "t"); err != nil || ok {
		t.Fatalf("RequestCancel on a free thread = %v, %v; want false, nil", ok, err)
	}
	// Renewed every 300ms: the request is seen within that.
	l := acquire(t, s, "t", checkpoint.LeaseOptions{TTL: 900 * time.Millisecond})
	if ok, err := s.RequestCancel(bg, "t"); err != nil || !ok {
		t.Fatalf("RequestCancel on a held thread = %v, %v; want true, nil", ok, err)
	}
	select {
	case <-l.Done():
	case <-time.After(waitBound):
		t.Fatal("the holder's Done did not close after RequestCancel")
	}
	wantErr(t, l.Err(), checkpoint.ErrCancelRequested, "the cancelled lease's Err")
	if _, err := s.Acquire(bg, "t", checkpoint.LeaseOptions{}); !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("Acquire while the cancelled holder still holds: %v; want ErrThreadBusy", err)
	}
	// Still the owner: its writes go through.
	mustPutCtx(t, checkpoint.WithLease(bg, l), s, "t", "", cp("00000001", nil, nil))
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	// A new owner starts without the request.
	l2 := acquire(t, s, "t", checkpoint.LeaseOptions{})
	if st, err := s.Driver().RenewLease(bg, "t", l2.Owner(), time.Minute); err != nil || st.CancelRequested {
		t.Fatalf("renewal by a new owner = %+v, %v; want no cancel request", st, err)
	}
}

// ---------------------------------------------------------------- graph

// Turns is the channel of the ownership graphs: every run appends its
// input and one entry per node, tagged with the run.
var Turns = graph.Reduce("turns", func(cur, upd []string) []string { return append(cur, upd...) })

// who names the run that wrote the input.
var who = graph.Value[string]("who")

// OwnershipGraph is a 3-node graph over Turns: a run given RunInput(id)
// appends id:in, id:a, id:b and id:c.
func OwnershipGraph(t testing.TB, s *checkpoint.Saver) *graph.Graph {
	step := func(name string) graph.NodeFunc {
		return func(ctx context.Context, st graph.State) (graph.Update, error) {
			return Turns.Write([]string{who.Get(st) + ":" + name}), nil
		}
	}
	g, err := graph.New(Turns, who).AddNode(
		"a", step("a"), nil).AddNode(
		"b", step("b"), nil).AddNode(
		"c", step("c"), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(&graph.CompileOptions{Checkpointer: s})

	if err != nil {
		t.Fatal(err)
	}
	return g
}

// RunInput is the input of run id of OwnershipGraph.
func RunInput(id string) graph.Update {
	return who.Write(id).And(Turns.Write([]string{id + ":in"}))
}

// CheckTurns checks a thread's final Turns against the runs that reported
// success and those that did not: each successful run's four entries are
// there, together and in order, and nothing else is.
func CheckTurns(t testing.TB, turns []string, ok, failed []string) {
	t.Helper()
	pos := map[string]int{}
	for i, e := range turns {
		id, _, _ := strings.Cut(e, ":")
		if _, seen := pos[id]; !seen {
			pos[id] = i
		}
	}
	for _, id := range ok {
		i, found := pos[id]
		if !found {
			t.Errorf("run %s reported success, but the thread's final state has none of its turn", id)
			continue
		}
		want := []string{id + ":in", id + ":a", id + ":b", id + ":c"}
		if i+4 > len(turns) || fmt.Sprint(turns[i:i+4]) != fmt.Sprint(want) {
			t.Errorf("run %s's turn in the final state is not %v in one piece: %v", id, want, turns[i:min(i+4, len(turns))])
		}
	}
	for _, id := range failed {
		if _, found := pos[id]; found {
			t.Errorf("run %s failed, but the final state holds its writes", id)
		}
	}
	if len(turns) != 4*len(ok) {
		t.Errorf("the final state has %d entries; want %d (4 for each of %d successful runs): %v", len(turns), 4*len(ok), len(ok), turns)
	}
}

// Twenty runs on one thread at once: in fail mode each either succeeds
// with its whole turn in the final state or fails with ErrThreadBusy
// having written nothing; in wait mode all succeed. Every durability.
func testGraphOneWriterPerThread(t *testing.T, s *checkpoint.Saver) {
	g := OwnershipGraph(t, s)
	for _, dur := range []graph.Durability{graph.DurabilityAsync, graph.DurabilitySync, graph.DurabilityExit} {
		for _, busy := range []graph.BusyPolicy{graph.BusyFail, graph.BusyWait} {
			t.Run(string(dur)+"/"+string(busy), func(t *testing.T) {
				thread := "t-" + string(dur) + "-" + string(busy)
				const n = 20
				ctx, cancel := context.WithTimeout(bg, 2*waitBound)
				defer cancel()
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						_, errs[i] = g.Invoke(ctx, RunInput(fmt.Sprint("r", i)), &graph.RunOptions{ThreadID: thread, Durability: dur, Busy: busy})
					})
				}
				wg.Wait()
				var ok, failed []string
				for i, err := range errs {
					id := fmt.Sprint("r", i)
					switch {
					case err == nil:
						ok = append(ok, id)
					case busy == graph.BusyFail && errors.Is(err, checkpoint.ErrThreadBusy):
						failed = append(failed, id)
					default:
						t.Errorf("run %s: %v", id, err)
					}
				}
				if len(ok) == 0 {
					t.Fatal("no run succeeded")
				}
				if busy == graph.BusyWait && len(ok) != n {
					t.Fatalf("%d of %d waiting runs succeeded; want all", len(ok), n)
				}
				st, err := g.GetState(bg, checkpoint.Config{ThreadID: thread}, nil)
				if err != nil {
					t.Fatal(err)
				}
				CheckTurns(t, Turns.Get(st.Values), ok, failed)
			})
		}
	}
}

// UpdateState owns the thread like a run: it fails at once while a run
// holds it, and works once the thread is free.
func testGraphUpdateStateBusy(t *testing.T, s *checkpoint.Saver) {
	g := OwnershipGraph(t, s)
	if _, err := g.Invoke(bg, RunInput("r0"), &graph.RunOptions{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	l := acquire(t, s, "t", checkpoint.LeaseOptions{})
	_, err := g.UpdateState(bg, checkpoint.Config{ThreadID: "t"}, Turns.Write([]string{"x"}), "c")
	wantErr(t, err, checkpoint.ErrThreadBusy, "UpdateState on a held thread")
	_, err = g.Invoke(bg, RunInput("r1"), &graph.RunOptions{ThreadID: "t"})
	wantErr(t, err, checkpoint.ErrThreadBusy, "Invoke on a held thread")
	// A run handed the held lease runs under it, and leaves it held.
	if _, err := g.Invoke(bg, RunInput("r2"), &graph.RunOptions{ThreadID: "t", Lease: l}); err != nil {
		t.Fatalf("Invoke with the caller's lease: %v", err)
	}
	if l.Err() != nil {
		t.Fatalf("the caller's lease after the run: %v", l.Err())
	}
	// So does an update whose context carries it.
	if _, err := g.UpdateState(checkpoint.WithLease(bg, l), checkpoint.Config{ThreadID: "t"}, Turns.Write([]string{"u"}), "c"); err != nil {
		t.Fatalf("UpdateState under the caller's lease: %v", err)
	}
	if _, err := g.Invoke(bg, RunInput("r3"), &graph.RunOptions{ThreadID: "other", Lease: l}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("Invoke on another thread with the lease: %v; want ErrInvalidInput", err)
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := g.UpdateState(bg, checkpoint.Config{ThreadID: "t"}, Turns.Write([]string{"x"}), "c"); err != nil {
		t.Fatalf("UpdateState on a free thread: %v", err)
	}
	st, err := g.GetState(bg, checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(Turns.Get(st.Values)); got != "[r0:in r0:a r0:b r0:c r2:in r2:a r2:b r2:c u x]" {
		t.Fatalf("final turns = %s", got)
	}
}

// A run whose holder is asked to cancel stops with ErrCancelRequested,
// and a run that loses its lease mid-run stops with ErrLeaseLost having
// written nothing after the loss.
func testGraphLeaseLoss(t *testing.T, s *checkpoint.Saver) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	g, err := graph.New(Turns, who).AddNode(
		"a", func(ctx context.Context, st graph.State) (graph.Update, error) {
			return Turns.Write([]string{who.Get(st) + ":a"}), nil
		}, nil).AddNode(

		"block", func(ctx context.Context, st graph.State) (graph.Update, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				return graph.Update{}, ctx.Err()
			case <-release:
			}
			return Turns.Write([]string{who.Get(st) + ":block"}), nil
		}, nil).
		AddEdge(graph.START, "a").AddEdge("a", "block").Compile(&graph.CompileOptions{Checkpointer: s})

	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "t", Durability: graph.DurabilitySync, LeaseTTL: time.Second}

	// Cancel requested.
	done := make(chan error, 1)
	go func() { _, err := g.Invoke(bg, RunInput("c"), &opts); done <- err }()
	<-started
	if ok, err := s.RequestCancel(bg, "t"); err != nil || !ok {
		t.Fatalf("RequestCancel = %v, %v", ok, err)
	}
	select {
	case err := <-done:
		wantErr(t, err, checkpoint.ErrCancelRequested, "the cancelled run")
	case <-time.After(waitBound):
		t.Fatal("the cancelled run did not stop")
	}

	// Lease lost: another owner takes the thread from under the run.
	go func() { _, err := g.Invoke(bg, RunInput("l"), &opts); done <- err }()
	<-started
	lease := takeOver(t, s, "t")
	before := dump(t, s, "t")
	close(release)
	select {
	case err := <-done:
		wantErr(t, err, checkpoint.ErrLeaseLost, "the run that lost its thread")
	case <-time.After(waitBound):
		t.Fatal("the run that lost its thread did not stop")
	}
	if d := diffTuples(before, dump(t, s, "t")); d != "" {
		t.Fatalf("the run wrote after losing its thread (-before +after):\n%s", d)
	}
	lease.Release(bg)
}

// takeOver removes the thread's current lease, as its expiry would, and
// takes the thread for a new owner.
func takeOver(t *testing.T, s *checkpoint.Saver, thread string) *checkpoint.Lease {
	t.Helper()
	for range 1000 {
		err := s.Driver().AcquireLease(bg, thread, checkpoint.LeaseRequest{Owner: "usurper", TTL: time.Minute})
		var be *checkpoint.BusyError
		if errors.As(err, &be) {
			if err := s.Driver().ReleaseLease(bg, thread, be.Owner); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Acquire(bg, thread, checkpoint.LeaseOptions{Owner: "usurper", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Fatal("could not take the thread over")
	return nil
}
