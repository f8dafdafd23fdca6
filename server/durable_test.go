package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/server"
)

// The same flows on SQLite and PostgreSQL: threads and runs live in the
// database with the checkpoints.
func TestDurableBackends(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			s := newServer(t, server.Options{DB: db})
			tid := s.newThread()
			_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("hi you"), "stream_mode": []string{"values", "messages-tuple"}})
			if diff := cmp.Diff([]string{"metadata", "values", "messages", "messages", "values"}, names(evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// A thread holds one graph's state.
			s.must(409, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "x"}})
			tid = s.newThread()
			w := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "x"}}).obj(t)
			if w["__interrupt__"] == nil {
				t.Fatalf("wait = %v", w)
			}
			if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "interrupted" {
				t.Errorf("thread = %v", th["status"])
			}
			s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": "ok"}})
			var hist []any
			s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &hist)
			if len(hist) != 4 {
				t.Errorf("history = %d checkpoints, want 4", len(hist))
			}
			tid = s.newThread()
			first := s.startSlow(tid, "a", 100)
			s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}, "multitask_strategy": "enqueue"})
			last := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "c"}, "multitask_strategy": "enqueue"}).obj(t)
			if diff := cmp.Diff([]any{"a", "b", "c"}, last["log"]); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if run := s.waitRun(tid, first); run["status"] != "success" {
				t.Errorf("first = %v", run["status"])
			}
			var runs []any
			s.must(200, "GET", "/threads/"+tid+"/runs?limit=100", nil).json(t, &runs)
			if len(runs) != 3 {
				t.Errorf("%d runs recorded, want 3", len(runs))
			}
			s.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"n"}, "key": "k", "value": map[string]any{"v": 1}})
			s.must(200, "GET", "/store/items?namespace=n&key=k", nil)
			s.must(204, "DELETE", "/threads/"+tid, nil)
		})
	}
}

// A shutdown stops the runs it cannot finish without failing them: they
// are left pending, and the next server on the database takes them over
// and completes them, a running one from its last checkpoint.
func TestShutdownLeavesRunsResumable(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			srv, err := server.New(context.Background(), server.Options{Graphs: apitestGraphs(), DB: db, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			a := wrap(t, srv)
			tid := a.newThread()
			// Long enough to be going still when Shutdown gives up, even
			// on a loaded machine; short enough for the takeover to finish.
			first := a.startSlow(tid, "a", 2000)
			second := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}, "multitask_strategy": "enqueue"}).obj(t)["run_id"].(string)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := srv.Shutdown(ctx); err == nil {
				t.Fatal("Shutdown with a run still sleeping returned no error")
			}
			a.ts.Close()

			db2 := reopen(t, db)
			s := newServer(t, server.Options{DB: db2})
			joined := s.must(200, "GET", "/threads/"+tid+"/runs/"+second+"/join", nil).obj(t)
			if diff := cmp.Diff([]any{"a", "b"}, joined["log"]); diff != "" {
				t.Errorf("log after the takeover (-want +got):\n%s", diff)
			}
			run := s.waitRun(tid, first)
			if run["status"] != "success" {
				t.Errorf("the stopped run after the takeover = %v", run["status"])
			}
			if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
				t.Errorf("thread = %v", th["status"])
			}
		})
	}
}

// Two servers on one database: a run is rejected on a thread another
// server runs, a join reads its end from the database, and a cancel
// reaches it through the thread's lease.
func TestTwoServers(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			a := newServer(t, server.Options{DB: db, LeaseTTL: 900 * time.Millisecond})
			bs := newServer(t, server.Options{DB: reopen(t, db), LeaseTTL: 900 * time.Millisecond})
			tid := a.newThread()
			rid := a.startSlow(tid, "a", 600000)
			bs.must(409, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}})
			bs.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
			if run := a.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); run["status"] != "interrupted" {
				t.Errorf("run cancelled from the other server = %v", run["status"])
			}
			r2 := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 50, "tag": "c"}}).obj(t)
			joined := bs.must(200, "GET", "/threads/"+tid+"/runs/"+r2["run_id"].(string)+"/join", nil).obj(t)
			if diff := cmp.Diff([]any{"c"}, joined["log"]); diff != "" {
				t.Errorf("joined from the other server (-want +got):\n%s", diff)
			}
		})
	}
}

// reopen opens the database db names again, as another process would.
func reopen(t *testing.T, db *dburl.DB) *dburl.DB {
	t.Helper()
	target := db.Target
	if db.Backend == "postgres" {
		target = pgURLs[db.Target]
	}
	out, err := dburl.Open(context.Background(), target, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return out
}

// A rollback from another server: the run is stopped there, then rolled
// back from here.
func TestRollbackAcrossServers(t *testing.T) {
	db := backends[0].open(t)
	a := newServer(t, server.Options{DB: db, LeaseTTL: 900 * time.Millisecond})
	bs := newServer(t, server.Options{DB: reopen(t, db), LeaseTTL: 900 * time.Millisecond})
	tid := a.newThread()
	rid := a.startSlow(tid, "a", 600000)
	bs.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1&action=rollback", nil)
	a.must(404, "GET", "/threads/"+tid+"/runs/"+rid, nil)
	var hist []any
	a.must(200, "POST", "/threads/"+tid+"/history", map[string]any{}).json(t, &hist)
	if len(hist) != 0 {
		t.Errorf("the rolled back run left %d checkpoints", len(hist))
	}
	if th := a.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
		t.Errorf("thread = %v", th["status"])
	}
}

// A thread another process holds (weft run on the same database) cannot
// be copied, deleted or have its state updated meanwhile: 409, and
// nothing is lost.
func TestThreadHeldElsewhere(t *testing.T) {
	db := backends[0].open(t)
	s := newServer(t, server.Options{DB: db})
	tid := s.newThread()
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")})
	other := reopen(t, db)
	lease, err := other.Saver.Acquire(context.Background(), tid, checkpoint.LeaseOptions{RunID: "weft-run"})
	if err != nil {
		t.Fatal(err)
	}
	s.must(409, "POST", "/threads/"+tid+"/copy", nil)
	s.must(409, "DELETE", "/threads/"+tid, nil)
	s.must(409, "POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}})
	if err := lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var hist []any
	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{}).json(t, &hist)
	if len(hist) == 0 {
		t.Error("the thread's checkpoints are gone")
	}
	s.must(200, "POST", "/threads/"+tid+"/copy", nil)
	s.must(204, "DELETE", "/threads/"+tid, nil)
	s.must(404, "GET", "/threads/"+tid, nil)
}

// A server keeps the assistants its runs were made from, but a change
// made through another server sharing the database is never missed: the
// next run is made from the new version, and a deleted assistant runs no
// more.
func TestAssistantChangedElsewhere(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			a := newServer(t, server.Options{DB: db}).as("alice")
			other := newServer(t, server.Options{DB: reopen(t, db)}).as("alice")
			id := a.must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "metadata": map[string]any{"team": "a"}}).obj(t)["assistant_id"].(string)
			team := func(s *testServer) any {
				t.Helper()
				tid := s.newThread()
				run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": id, "input": human("x")}).obj(t)
				s.waitRun(tid, run["run_id"].(string))
				return run["metadata"].(map[string]any)["team"]
			}
			for range 2 {
				if got := team(a); got != "a" {
					t.Fatalf("run metadata team = %v, want a", got)
				}
			}
			for _, change := range []map[string]any{
				{"path": "/assistants/" + id, "method": "PATCH", "body": map[string]any{"metadata": map[string]any{"team": "b"}}, "want": "b"},
				{"path": "/assistants/" + id + "/latest", "method": "POST", "body": map[string]any{"version": 1}, "want": "a"},
			} {
				other.must(200, change["method"].(string), change["path"].(string), change["body"])
				if got := team(a); got != change["want"] {
					t.Errorf("after %s %s elsewhere: run metadata team = %v, want %v", change["method"], change["path"], got, change["want"])
				}
			}
			other.must(200, "DELETE", "/assistants/"+id, nil)
			a.must(404, "POST", "/threads/"+a.newThread()+"/runs", map[string]any{"assistant_id": id, "input": human("x")})
		})
	}
}
