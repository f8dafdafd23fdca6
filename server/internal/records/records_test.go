package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/internal/pgtest"
)

// backends opens a fresh Store on every backend: an SQLite file shared
// with a checkpoint driver (as the server opens it), the in-memory
// database, and PostgreSQL, with prepared statements and without
// (skipped without a server, except in CI).
var backends = []struct {
	name string
	open func(t *testing.T) *Store
}{
	{"sqlite", func(t *testing.T) *Store {
		ctx := context.Background()
		d, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "weft.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		s, err := OpenSQLite(ctx, d.DB(), d.WriteTx, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"memory", func(t *testing.T) *Store {
		s, closeDB, err := OpenMemory(context.Background(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeDB() })
		return s
	}},
	{"postgres", func(t *testing.T) *Store { return openPostgres(t, pgtest.NewDatabase(t, "weft_records_")) }},
	// Without named prepared statements, as PgBouncer in transaction
	// mode before 1.21 needs.
	{"postgres-exec", func(t *testing.T) *Store {
		return openPostgres(t, pgtest.ExecMode(t, pgtest.NewDatabase(t, "weft_records_")))
	}},
}

// openPostgres opens a Store on the checkpoint driver's pool of url.
func openPostgres(t *testing.T, url string) *Store {
	ctx := context.Background()
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := OpenPostgres(ctx, d.Pool(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func eachBackend(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			// A clock that moves forward by a millisecond each call, so
			// that records made one after another order by time.
			var mu sync.Mutex
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s.now = func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				now = now.Add(time.Millisecond)
				return now
			}
			fn(t, s)
		})
	}
}

// jsonEq compares two JSON texts by value (PostgreSQL's jsonb reorders
// keys).
func jsonEq(t *testing.T, what string, want string, got json.RawMessage) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %s: %v", what, want, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got %s: %v", what, got, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func TestMigrateTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatalf("migrating a current schema again: %v", err)
		}
	})
}

func TestThreads(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		th, err := s.CreateThread(ctx, Thread{ID: "t1", Owner: "alice", Metadata: json.RawMessage(`{"suite":"x","n":1}`)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if th.Status != ThreadIdle || th.CreatedAt.IsZero() || th.Values != nil {
			t.Errorf("new thread = %+v", th)
		}
		if _, err := s.CreateThread(ctx, Thread{ID: "t1", Owner: "alice"}, false); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate create: %v, want ErrConflict", err)
		}
		again, err := s.CreateThread(ctx, Thread{ID: "t1", Owner: "alice"}, true)
		if err != nil || !again.CreatedAt.Equal(th.CreatedAt) {
			t.Errorf("create with do_nothing: %+v, %v; want the existing thread", again, err)
		}
		if _, err := s.CreateThread(ctx, Thread{ID: "t1", Owner: "bob"}, true); !errors.Is(err, ErrConflict) {
			t.Errorf("another owner's id: %v, want ErrConflict", err)
		}
		if _, err := s.GetThread(ctx, "bob", "t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another owner's thread: %v, want ErrNotFound", err)
		}
		got, err := s.GetThread(ctx, "alice", "t1")
		if err != nil {
			t.Fatal(err)
		}
		jsonEq(t, "metadata", `{"suite":"x","n":1}`, got.Metadata)
		jsonEq(t, "config", `{}`, got.Config)

		p, err := s.PatchThread(ctx, "alice", "t1", json.RawMessage(`{"n":2,"extra":"y"}`))
		if err != nil {
			t.Fatal(err)
		}
		jsonEq(t, "patched metadata", `{"suite":"x","n":2,"extra":"y"}`, p.Metadata)
		if !p.UpdatedAt.After(p.CreatedAt) {
			t.Errorf("patch did not move updated_at: %+v", p)
		}
		if _, err := s.PatchThread(ctx, "bob", "t1", json.RawMessage(`{}`)); !errors.Is(err, ErrNotFound) {
			t.Errorf("patching another owner's thread: %v", err)
		}
		if err := s.SetThreadValues(ctx, "t1", ThreadInterrupted, json.RawMessage(`{"a":[1,2]}`), json.RawMessage(`{"task":[]}`)); err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetThread(ctx, "alice", "t1")
		jsonEq(t, "values", `{"a":[1,2]}`, got.Values)
		jsonEq(t, "interrupts", `{"task":[]}`, got.Interrupts)
		if got.Status != ThreadInterrupted {
			t.Errorf("status = %s", got.Status)
		}

		if err := s.DeleteThread(ctx, "bob", "t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting another owner's thread: %v", err)
		}
		if err := s.DeleteThread(ctx, "alice", "t1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetThread(ctx, "alice", "t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted thread: %v", err)
		}
		if err := s.DeleteThread(ctx, "alice", "t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting twice: %v", err)
		}
	})
}

func TestSearchThreads(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		mk := func(id, owner, meta string) {
			t.Helper()
			if _, err := s.CreateThread(ctx, Thread{ID: id, Owner: owner, Metadata: json.RawMessage(meta)}, false); err != nil {
				t.Fatal(err)
			}
		}
		mk("a", "u", `{"kind":"x","n":1,"ok":true,"nested":{"k":"v","d":2},"tags":["p","q"]}`)
		mk("b", "u", `{"kind":"y","n":2}`)
		mk("c", "u", `{"kind":"x","n":3.5,"ok":false}`)
		mk("d", "other", `{"kind":"x"}`)
		if err := s.SetThreadValues(ctx, "c", ThreadError, json.RawMessage(`{"messages":[{"content":"hi"}],"step":4}`), nil); err != nil {
			t.Fatal(err)
		}
		ids := func(ts []Thread) []string {
			out := []string{}
			for _, th := range ts {
				out = append(out, th.ID)
			}
			return out
		}
		tests := []struct {
			name  string
			q     ThreadQuery
			want  []string
			total int
		}{
			{"all, newest first", ThreadQuery{Owner: "u", Desc: true}, []string{"c", "b", "a"}, 3},
			{"oldest first", ThreadQuery{Owner: "u"}, []string{"a", "b", "c"}, 3},
			{"page", ThreadQuery{Owner: "u", Limit: 1, Offset: 1}, []string{"b"}, 3},
			{"string", ThreadQuery{Owner: "u", Metadata: map[string]any{"kind": "x"}}, []string{"a", "c"}, 2},
			{"number", ThreadQuery{Owner: "u", Metadata: map[string]any{"n": 3.5}}, []string{"c"}, 1},
			{"bool", ThreadQuery{Owner: "u", Metadata: map[string]any{"ok": false}}, []string{"c"}, 1},
			{"nested", ThreadQuery{Owner: "u", Metadata: map[string]any{"nested": map[string]any{"k": "v"}}}, []string{"a"}, 1},
			{"array", ThreadQuery{Owner: "u", Metadata: map[string]any{"tags": []any{"p", "q"}}}, []string{"a"}, 1},
			{"missing key", ThreadQuery{Owner: "u", Metadata: map[string]any{"nope": "x"}}, []string{}, 0},
			{"values", ThreadQuery{Owner: "u", Values: map[string]any{"step": 4.0}}, []string{"c"}, 1},
			{"status", ThreadQuery{Owner: "u", Status: ThreadError}, []string{"c"}, 1},
			{"ids", ThreadQuery{Owner: "u", IDs: []string{"a", "b", "d"}}, []string{"a", "b"}, 2},
			{"by id desc", ThreadQuery{Owner: "u", SortBy: "thread_id", Desc: true}, []string{"c", "b", "a"}, 3},
			{"other owner", ThreadQuery{Owner: "other"}, []string{"d"}, 1},
		}
		for _, tt := range tests {
			got, total, err := s.SearchThreads(ctx, tt.q)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.name, diff)
			}
			if total != tt.total {
				t.Errorf("%s: total %d, want %d", tt.name, total, tt.total)
			}
			n, err := s.CountThreads(ctx, tt.q)
			if err != nil || n != tt.total {
				t.Errorf("%s: count %d, %v; want %d", tt.name, n, err, tt.total)
			}
		}
	})
}

func newRun(id, thread, owner, strategy string) NewRun {
	return NewRun{
		Run:               Run{ID: id, ThreadID: thread, Owner: owner, AssistantID: "asst", Metadata: json.RawMessage(`{"kind":"bg"}`), Kwargs: json.RawMessage(`{"input":{"x":1}}`), MultitaskStrategy: strategy, Worker: "w1"},
		GraphID:           "echo",
		AssistantMetadata: json.RawMessage(`{"created_by":"system"}`),
		ThreadConfig:      json.RawMessage(`{"configurable":{"user-agent":"node"}}`),
	}
}

func TestRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, _, err := s.CreateRun(ctx, newRun("r0", "t", "u", MultitaskReject)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("run on a missing thread: %v, want ErrNotFound", err)
		}
		if _, err := s.CreateThread(ctx, Thread{ID: "t", Owner: "u", Metadata: json.RawMessage(`{"suite":"s"}`)}, false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateRun(ctx, newRun("r0", "t", "other", MultitaskReject)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("run on another owner's thread: %v, want ErrNotFound", err)
		}
		r1, inflight, err := s.CreateRun(ctx, newRun("r1", "t", "u", MultitaskReject))
		if err != nil || len(inflight) != 0 {
			t.Fatalf("first run: %v, inflight %v", err, inflight)
		}
		if r1.Status != RunPending || r1.Attempt != 1 {
			t.Errorf("new run = %+v", r1)
		}
		jsonEq(t, "run metadata", `{"created_by":"system","suite":"s","graph_id":"echo","assistant_id":"asst","kind":"bg"}`, r1.Metadata)
		th, _ := s.GetThread(ctx, "u", "t")
		if th.Status != ThreadBusy {
			t.Errorf("thread status after a run = %s, want busy", th.Status)
		}
		jsonEq(t, "thread metadata", `{"suite":"s","graph_id":"echo","assistant_id":"asst"}`, th.Metadata)
		jsonEq(t, "thread config", `{"configurable":{"user-agent":"node"}}`, th.Config)

		if _, inflight, err := s.CreateRun(ctx, newRun("r2", "t", "u", MultitaskReject)); !errors.Is(err, ErrBusy) || len(inflight) != 1 {
			t.Errorf("reject on a busy thread: %v, inflight %d; want ErrBusy and the running one", err, len(inflight))
		}
		_, inflight, err = s.CreateRun(ctx, newRun("r3", "t", "u", MultitaskEnqueue))
		if err != nil || len(inflight) != 1 || inflight[0] != "r1" {
			t.Fatalf("enqueue: %v, inflight %v", err, inflight)
		}
		if ok, err := s.MarkRunning(ctx, "t", "r1", "w1"); err != nil || !ok {
			t.Fatalf("MarkRunning: %v, %v", ok, err)
		}
		if ok, _ := s.MarkRunning(ctx, "t", "r1", "w2"); ok {
			t.Error("another worker marked the run running")
		}
		active, err := s.ActiveRuns(ctx, "t")
		if err != nil || len(active) != 2 || active[0].ID != "r1" || active[0].Status != RunRunning {
			t.Fatalf("active runs = %+v, %v", active, err)
		}
		// r1 ends; r3 is still pending, so the thread stays busy.
		if ok, err := s.FinishRun(ctx, Finish{RunID: "r1", ThreadID: "t", Worker: "w1", Status: RunSuccess, ThreadStatus: ThreadIdle, Values: json.RawMessage(`{"x":1}`), Interrupts: json.RawMessage(`{}`)}); err != nil || !ok {
			t.Fatalf("FinishRun: %v, %v", ok, err)
		}
		th, _ = s.GetThread(ctx, "u", "t")
		if th.Status != ThreadBusy {
			t.Errorf("thread with a pending run left = %s, want busy", th.Status)
		}
		jsonEq(t, "values", `{"x":1}`, th.Values)
		// r3 is cancelled before it started: the thread is idle again.
		done, err := s.CancelPending(ctx, "u", "t", []string{"r3", "r1"}, false)
		if err != nil || len(done) != 1 || done[0] != "r3" {
			t.Fatalf("CancelPending = %v, %v; want [r3]", done, err)
		}
		th, _ = s.GetThread(ctx, "u", "t")
		if th.Status != ThreadIdle {
			t.Errorf("thread after the last pending run was cancelled = %s, want idle", th.Status)
		}
		r3, err := s.GetRun(ctx, "u", "t", "r3")
		if err != nil || r3.Status != RunInterrupted {
			t.Errorf("cancelled pending run = %+v, %v", r3, err)
		}
		if _, err := s.GetRun(ctx, "other", "t", "r3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another owner's run: %v", err)
		}
		// By its id alone, as GET /runs/{run_id}/stream finds it.
		if found, err := s.FindRun(ctx, "u", "r3"); err != nil || found.ThreadID != "t" || found.Status != RunInterrupted {
			t.Errorf("FindRun(r3) = %+v, %v; want thread t, interrupted", found, err)
		}
		if _, err := s.FindRun(ctx, "other", "r3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("FindRun of another owner's run: %v, want ErrNotFound", err)
		}
		if _, err := s.FindRun(ctx, "u", "no-such-run"); !errors.Is(err, ErrNotFound) {
			t.Errorf("FindRun of a missing run: %v, want ErrNotFound", err)
		}
		list, err := s.ListRuns(ctx, RunQuery{Owner: "u", ThreadID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, r := range list {
			order = append(order, r.ID+":"+r.Status)
		}
		if diff := cmp.Diff([]string{"r3:interrupted", "r1:success"}, order); diff != "" {
			t.Errorf("runs, newest first (-want +got):\n%s", diff)
		}
		if list, _ := s.ListRuns(ctx, RunQuery{Owner: "u", ThreadID: "t", Status: RunSuccess, Limit: 5}); len(list) != 1 {
			t.Errorf("status filter: %d runs", len(list))
		}
		if _, err := s.ListRuns(ctx, RunQuery{Owner: "other", ThreadID: "t"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("listing another owner's runs: %v", err)
		}

		// Rollback deletes a pending run.
		if _, _, err := s.CreateRun(ctx, newRun("r4", "t", "u", MultitaskReject)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelPending(ctx, "u", "t", []string{"r4"}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetRun(ctx, "u", "t", "r4"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rolled back run: %v", err)
		}
		if _, _, err := s.CreateRun(ctx, newRun("r5", "t", "u", MultitaskReject)); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteRun(ctx, "u", "t", "r5"); !errors.Is(err, ErrBusy) {
			t.Errorf("deleting a pending run: %v, want ErrBusy", err)
		}
		if err := s.DeleteRun(ctx, "u", "t", "r1"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteRun(ctx, "u", "t", "r1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting twice: %v", err)
		}
		// Deleting the thread deletes its runs.
		if err := s.DeleteThread(ctx, "u", "t"); err != nil {
			t.Fatal(err)
		}
		if active, _ := s.ActiveRuns(ctx, "t"); len(active) != 0 {
			t.Errorf("runs of a deleted thread: %v", active)
		}
	})
}

func TestCreateRunCreatesThread(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		nr := newRun("r1", "t-new", "u", MultitaskReject)
		nr.CreateThread, nr.ThreadMetadata = true, json.RawMessage(`{"temp":true}`)
		if _, _, err := s.CreateRun(ctx, nr); err != nil {
			t.Fatal(err)
		}
		th, err := s.GetThread(ctx, "u", "t-new")
		if err != nil || th.Status != ThreadBusy {
			t.Fatalf("thread = %+v, %v", th, err)
		}
		jsonEq(t, "metadata", `{"temp":true,"graph_id":"echo","assistant_id":"asst"}`, th.Metadata)
	})
}

// A run made from an assistant read earlier is created only while the
// assistant is still that version, visible to the run's owner; else
// nothing is written.
func TestCreateRunChecksAssistant(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.EnsureAssistant(ctx, Assistant{ID: "sys", GraphID: "echo"}); err != nil {
			t.Fatal(err)
		}
		v1, err := s.CreateAssistant(ctx, Assistant{ID: "a1", Owner: "alice", GraphID: "echo"}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateThread(ctx, Thread{ID: "t", Owner: "alice", Metadata: json.RawMessage(`{"k":"v"}`)}, false); err != nil {
			t.Fatal(err)
		}
		run := func(id, owner, thread, assistant string, stamp *AssistantStamp) error {
			nr := newRun(id, thread, owner, MultitaskEnqueue)
			nr.Run.AssistantID, nr.Assistant, nr.CreateThread = assistant, stamp, true
			_, _, err := s.CreateRun(ctx, nr)
			return err
		}
		// unchanged says the refused run wrote nothing: no run, the
		// thread as it was (or none).
		unchanged := func(what, owner, thread, runID string, wantThread bool) {
			t.Helper()
			if _, err := s.GetRun(ctx, owner, thread, runID); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: the refused run is stored (%v)", what, err)
			}
			th, err := s.GetThread(ctx, owner, thread)
			switch {
			case !wantThread && !errors.Is(err, ErrNotFound):
				t.Errorf("%s: the refused run created its thread (%v)", what, err)
			case wantThread && err != nil:
				t.Fatal(err)
			case wantThread:
				if th.Status != ThreadIdle {
					t.Errorf("%s: the thread is %s, want idle", what, th.Status)
				}
				jsonEq(t, what+": the thread's metadata", `{"k":"v"}`, th.Metadata)
			}
		}
		if err := run("r0", "alice", "t", "a1", v1.Stamp()); err != nil {
			t.Fatalf("a run from the current version: %v", err)
		}
		v2, err := s.PatchAssistant(ctx, "alice", "a1", AssistantPatch{Metadata: json.RawMessage(`{"v":2}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := run("r1", "alice", "t2", "a1", v1.Stamp()); !errors.Is(err, ErrStaleAssistant) {
			t.Errorf("a run from a patched assistant's old version: %v, want ErrStaleAssistant", err)
		}
		unchanged("patched", "alice", "t2", "r1", false)
		if err := run("r1", "alice", "t2", "a1", v2.Stamp()); err != nil {
			t.Errorf("a run from the patched version: %v", err)
		}
		// Version 1 made current again is another state than version 1
		// was.
		if _, err := s.SetLatestVersion(ctx, "alice", "a1", 1); err != nil {
			t.Fatal(err)
		}
		for _, stamp := range []*AssistantStamp{v1.Stamp(), v2.Stamp()} {
			if err := run("r2", "alice", "t3", "a1", stamp); !errors.Is(err, ErrStaleAssistant) {
				t.Errorf("a run from version %d after SetLatestVersion(1): %v, want ErrStaleAssistant", stamp.Version, err)
			}
		}
		unchanged("set latest", "alice", "t3", "r2", false)
		cur, err := s.GetAssistant(ctx, "alice", "a1")
		if err != nil {
			t.Fatal(err)
		}
		// Another user's assistant is not there for bob.
		if err := run("r3", "bob", "t4", "a1", cur.Stamp()); !errors.Is(err, ErrStaleAssistant) {
			t.Errorf("bob's run from alice's assistant: %v, want ErrStaleAssistant", err)
		}
		unchanged("another owner", "bob", "t4", "r3", false)
		sys, err := s.GetAssistant(ctx, "bob", "sys")
		if err != nil {
			t.Fatal(err)
		}
		if err := run("r3", "bob", "t4", "sys", sys.Stamp()); err != nil {
			t.Errorf("bob's run from the system assistant: %v", err)
		}
		if err := s.DeleteAssistant(ctx, "alice", "a1"); err != nil {
			t.Fatal(err)
		}
		// On an existing thread: the thread is left as it was.
		if _, err := s.CreateThread(ctx, Thread{ID: "t5", Owner: "alice", Metadata: json.RawMessage(`{"k":"v"}`)}, false); err != nil {
			t.Fatal(err)
		}
		if err := run("r4", "alice", "t5", "a1", cur.Stamp()); !errors.Is(err, ErrStaleAssistant) {
			t.Errorf("a run from a deleted assistant: %v, want ErrStaleAssistant", err)
		}
		unchanged("deleted", "alice", "t5", "r4", true)
	})
}

// The runs pending or running that a new run finds are all of them,
// oldest first, and the thread's only.
func TestCreateRunInflight(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, id := range []string{"t", "u"} {
			if _, err := s.CreateThread(ctx, Thread{ID: id, Owner: "o"}, false); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.CreateRun(ctx, newRun("other", "u", "o", MultitaskReject)); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 4 {
			id := fmt.Sprint("r", i)
			_, inflight, err := s.CreateRun(ctx, newRun(id, "t", "o", MultitaskEnqueue))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, inflight); diff != "" {
				t.Errorf("run %d finds (-want +got):\n%s", i, diff)
			}
			want = append(want, id)
		}
		if ok, err := s.FinishRun(ctx, Finish{RunID: "r1", ThreadID: "t", Worker: "w1", Status: RunSuccess, ThreadStatus: ThreadIdle}); err != nil || !ok {
			t.Fatalf("FinishRun: %v, %v", ok, err)
		}
		if _, inflight, err := s.CreateRun(ctx, newRun("r4", "t", "o", MultitaskEnqueue)); err != nil || !cmp.Equal(inflight, []string{"r0", "r2", "r3"}) {
			t.Errorf("after r1 ended: %v, %v; want [r0 r2 r3]", inflight, err)
		}
	})
}

// Two runs created at once with reject: exactly one is created.
func TestRejectIsAtomic(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateThread(ctx, Thread{ID: "t", Owner: "u"}, false); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = s.CreateRun(ctx, newRun(fmt.Sprint("r", i), "t", "u", MultitaskReject))
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrBusy):
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d runs created at once with reject, want 1", ok)
		}
	})
}

func TestRecovery(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateThread(ctx, Thread{ID: "t", Owner: "u"}, false); err != nil {
			t.Fatal(err)
		}
		for i, w := range []string{"dead", "dead", "alive"} {
			nr := newRun(fmt.Sprint("r", i), "t", "u", MultitaskEnqueue)
			nr.Run.Worker = w
			if _, _, err := s.CreateRun(ctx, nr); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.MarkRunning(ctx, "t", "r0", "dead"); err != nil {
			t.Fatal(err)
		}
		if err := s.Heartbeat(ctx, "alive"); err != nil {
			t.Fatal(err)
		}
		if err := s.Heartbeat(ctx, "dead"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveWorker(ctx, "dead"); err != nil {
			t.Fatal(err)
		}
		// The claimer is alive, so what it claims is no orphan.
		if err := s.Heartbeat(ctx, "me"); err != nil {
			t.Fatal(err)
		}
		got, err := s.ClaimOrphans(ctx, "me", time.Hour, 10)
		if err != nil {
			t.Fatal(err)
		}
		var claimed []string
		for _, r := range got {
			claimed = append(claimed, fmt.Sprintf("%s:%s:%d", r.ID, r.Worker, r.Attempt))
		}
		if diff := cmp.Diff([]string{"r0:me:2", "r1:me:1"}, claimed); diff != "" {
			t.Errorf("claimed (-want +got):\n%s", diff)
		}
		if again, _ := s.ClaimOrphans(ctx, "other", time.Hour, 10); len(again) != 0 {
			t.Errorf("claimed runs were claimed again: %v", again)
		}
		// A shutdown gives its runs back as pending; a running one counts
		// an attempt more.
		if _, err := s.MarkRunning(ctx, "t", "r1", "me"); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseRuns(ctx, "me", []string{"r1"}); err != nil {
			t.Fatal(err)
		}
		r1, _ := s.GetRun(ctx, "u", "t", "r1")
		if r1.Status != RunPending || r1.Attempt != 2 {
			t.Errorf("released run = %s attempt %d, want pending attempt 2", r1.Status, r1.Attempt)
		}
		// A worker whose heartbeat is too old is dead.
		s.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		got, err = s.ClaimOrphans(ctx, "late", time.Hour, 1)
		if err != nil || len(got) != 1 {
			t.Errorf("claiming from workers with stale heartbeats: %v, %v", got, err)
		}
	})
}

func TestAssistants(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		sys, err := s.EnsureAssistant(ctx, Assistant{ID: "sys", GraphID: "echo", Metadata: json.RawMessage(`{"created_by":"system"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if sys.Name != "echo" || sys.Version != 1 {
			t.Errorf("system assistant = %+v", sys)
		}
		if again, err := s.EnsureAssistant(ctx, Assistant{ID: "sys", GraphID: "other"}); err != nil || again.GraphID != "echo" {
			t.Errorf("ensuring again = %+v, %v; want the stored one", again, err)
		}
		desc := "mine"
		mine, err := s.CreateAssistant(ctx, Assistant{ID: "a1", Owner: "alice", GraphID: "echo", Name: "Echo bot", Description: &desc, Config: json.RawMessage(`{"configurable":{"k":1}}`)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateAssistant(ctx, Assistant{ID: "a1", Owner: "alice", GraphID: "echo"}, false); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate: %v", err)
		}
		if _, err := s.GetAssistant(ctx, "bob", "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another user's assistant: %v", err)
		}
		if _, err := s.GetAssistant(ctx, "bob", "sys"); err != nil {
			t.Errorf("a system assistant is everyone's to read: %v", err)
		}
		if _, err := s.PatchAssistant(ctx, "bob", "sys", AssistantPatch{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("a user patched a system assistant: %v", err)
		}
		name := "Renamed"
		p, err := s.PatchAssistant(ctx, "alice", "a1", AssistantPatch{Name: &name, Metadata: json.RawMessage(`{"v":2}`)})
		if err != nil {
			t.Fatal(err)
		}
		if p.Version != 2 || p.Name != "Renamed" || p.Description == nil || *p.Description != "mine" {
			t.Errorf("patched = %+v", p)
		}
		jsonEq(t, "config kept", `{"configurable":{"k":1}}`, p.Config)
		vs, err := s.AssistantVersions(ctx, "alice", "a1", nil, 10, 0)
		if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Name != "Echo bot" {
			t.Fatalf("versions = %+v, %v", vs, err)
		}
		if vs, _ := s.AssistantVersions(ctx, "alice", "a1", map[string]any{"v": 2.0}, 10, 0); len(vs) != 1 {
			t.Errorf("versions with metadata filter: %d", len(vs))
		}
		back, err := s.SetLatestVersion(ctx, "alice", "a1", 1)
		if err != nil || back.Name != "Echo bot" || back.Version != 1 {
			t.Errorf("SetLatestVersion = %+v, %v", back, err)
		}
		if _, err := s.SetLatestVersion(ctx, "alice", "a1", 9); !errors.Is(err, ErrNotFound) {
			t.Errorf("a missing version: %v", err)
		}
		list, total, err := s.SearchAssistants(ctx, AssistantQuery{User: "alice", SortBy: "assistant_id"})
		if err != nil || total != 2 || len(list) != 2 || list[0].ID != "a1" {
			t.Errorf("alice's search = %v (%d), %v", list, total, err)
		}
		if _, total, _ := s.SearchAssistants(ctx, AssistantQuery{User: "bob"}); total != 1 {
			t.Errorf("bob sees %d assistants, want the system one", total)
		}
		if list, _, _ := s.SearchAssistants(ctx, AssistantQuery{User: "alice", Name: "ECHO"}); len(list) != 2 {
			t.Errorf("name search is not case-blind: %v", list)
		}
		if list, _, _ := s.SearchAssistants(ctx, AssistantQuery{User: "alice", Metadata: map[string]any{"created_by": "system"}}); len(list) != 1 || list[0].ID != "sys" {
			t.Errorf("metadata search = %v", list)
		}
		if n, err := s.CountAssistants(ctx, AssistantQuery{User: "alice", GraphID: "echo"}); n != 2 || err != nil {
			t.Errorf("count = %d, %v", n, err)
		}
		if err := s.DeleteAssistant(ctx, "bob", "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting another user's assistant: %v", err)
		}
		if err := s.DeleteAssistant(ctx, "alice", "a1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AssistantVersions(ctx, "alice", "a1", nil, 10, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("versions of a deleted assistant: %v", err)
		}
		_ = mine
	})
}

// Writes queued together share a transaction: the ones that fail do not
// undo the others.
func TestBatchedWritesFailAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make([]error, 60)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Every third id is taken twice.
				id := fmt.Sprint("t", i)
				if i%3 == 2 {
					id = fmt.Sprint("t", i-1)
				}
				_, errs[i] = s.CreateThread(ctx, Thread{ID: id, Owner: "u"}, false)
			}()
		}
		wg.Wait()
		conflicts := 0
		for _, err := range errs {
			switch {
			case errors.Is(err, ErrConflict):
				conflicts++
			case err != nil:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if n, _ := s.CountThreads(ctx, ThreadQuery{Owner: "u"}); n != 40 || conflicts != 20 {
			t.Errorf("%d threads and %d conflicts, want 40 and 20", n, conflicts)
		}
	})
}

// A write that fails after it changed rows, or with a statement that
// failed (which in PostgreSQL aborts the whole transaction), leaves
// nothing of its own and does not undo the writes queued with it.
func TestBatchedWritesSpoiltAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateThread(ctx, Thread{ID: "taken", Owner: "u"}, false); err != nil {
			t.Fatal(err)
		}
		errBoom := errors.New("boom")
		insert := func(tx Tx, id string) error {
			_, err := s.exec(ctx, tx, `INSERT INTO weft_server_threads (`+threadCols+`) VALUES ($1, 'u', 1, 1, '{}', '{}', 'idle', NULL, NULL)`, id)
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, 60)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprint("t", i)
				errs[i] = s.write(ctx, id, func(tx Tx) error {
					if i%4 == 3 { // fails before it changes anything
						_, err := s.getThread(ctx, tx, "u", "missing")
						return err
					}
					if err := insert(tx, id); err != nil {
						return err
					}
					switch i % 4 {
					case 1: // fails after its insert
						return errBoom
					case 2: // a statement fails after its insert
						return insert(tx, "taken")
					}
					return nil
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			_, gerr := s.GetThread(ctx, "u", fmt.Sprint("t", i))
			switch i % 4 {
			case 0:
				if err != nil || gerr != nil {
					t.Errorf("write %d: %v, thread %v; want it written", i, err, gerr)
				}
			case 1, 2:
				if err == nil || (i%4 == 1 && !errors.Is(err, errBoom)) || !errors.Is(gerr, ErrNotFound) {
					t.Errorf("write %d: %v, thread %v; want its error and no thread", i, err, gerr)
				}
			case 3:
				if !errors.Is(err, ErrNotFound) || !errors.Is(gerr, ErrNotFound) {
					t.Errorf("write %d: %v, thread %v; want ErrNotFound and no thread", i, err, gerr)
				}
			}
		}
	})
}

// A run's end given a lease owner deletes that owner's lease of the
// thread in the same write (the checkpoint store's table, which the
// SQLite and PostgreSQL stores share); another owner's lease stays.
func TestFinishRunReleasesLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		if strings.HasSuffix(t.Name(), "/memory") {
			t.Skip("OpenMemory's private database has no checkpoint leases")
		}
		ctx := context.Background()
		lease := func(thread, owner string) {
			t.Helper()
			if err := s.write(ctx, thread, func(tx Tx) error {
				_, err := s.exec(ctx, tx, `INSERT INTO weft_thread_leases (thread_id, owner, run_id, acquired_at, expires_at) VALUES ($1, $2, 'r', 0, 9000000000000000000)`, thread, owner)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range []struct{ holder, releaser, left string }{{"o1", "o1", ""}, {"o1", "o2", "o1"}} {
			th, run := fmt.Sprintf("t%d", i), fmt.Sprintf("r%d", i)
			if _, err := s.CreateThread(ctx, Thread{ID: th, Owner: "u"}, false); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.CreateRun(ctx, newRun(run, th, "u", MultitaskReject)); err != nil {
				t.Fatal(err)
			}
			lease(th, c.holder)
			if ok, err := s.FinishRun(ctx, Finish{RunID: run, ThreadID: th, Worker: "w1", Status: RunSuccess, ThreadStatus: ThreadIdle, LeaseOwner: c.releaser}); err != nil || !ok {
				t.Fatalf("FinishRun: %v, %v", ok, err)
			}
			if got := leaseHolder(t, s, th); got != c.left {
				t.Errorf("lease of %s held by %q, released as %q: now held by %q, want %q", c.holder, th, c.releaser, got, c.left)
			}
			if r, err := s.GetThread(ctx, "u", th); err != nil || r.Status != ThreadIdle {
				t.Errorf("thread after its run's end: %+v, %v", r, err)
			}
		}
	})
}

// leaseHolder returns the owner of a thread's checkpoint lease, "" when
// it has none.
func leaseHolder(t *testing.T, s *Store, thread string) (owner string) {
	t.Helper()
	ctx := context.Background()
	if err := s.read(ctx, func(tx Tx) error {
		_, err := s.queryRow(ctx, tx, `SELECT owner FROM weft_thread_leases WHERE thread_id = $1`, []any{thread}, &owner)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return owner
}

// A run created with a lease request takes its thread's checkpoint lease
// in its own write when the thread has no run pending or running and the
// lease is free or expired: a checkpoint saver on the same database then
// finds the thread busy, held by the run, and adopts the lease without a
// write. Otherwise the run is created without it. A write that fails
// takes neither.
func TestCreateRunTakesLease(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) (*Store, checkpoint.Driver)
	}{
		{"sqlite", func(t *testing.T) (*Store, checkpoint.Driver) {
			ctx := context.Background()
			d, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "weft.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			s, err := OpenSQLite(ctx, d.DB(), d.WriteTx, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, d
		}},
		{"postgres", func(t *testing.T) (*Store, checkpoint.Driver) {
			ctx := context.Background()
			d, err := postgres.Open(ctx, pgtest.NewDatabase(t, "weft_records_"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			s, err := OpenPostgres(ctx, d.Pool(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, d
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, d := b.open(t)
			saver := checkpoint.New(d)
			ctx := context.Background()
			for _, th := range []string{"t1", "t2", "t3"} {
				if _, err := s.CreateThread(ctx, Thread{ID: th, Owner: "u"}, false); err != nil {
					t.Fatal(err)
				}
			}
			create := func(run, thread, owner string, nr NewRun) (bool, error) {
				t.Helper()
				nr.Lease = &LeaseRequest{Owner: owner, RunID: run, TTL: time.Hour}
				_, _, err := s.CreateRun(ctx, nr)
				return nr.Lease.Taken, err
			}

			// A free thread: the run holds it.
			start := time.Now()
			if taken, err := create("r1", "t1", "o1", newRun("r1", "t1", "u", MultitaskEnqueue)); err != nil || !taken {
				t.Fatalf("CreateRun on a free thread: taken %v, %v", taken, err)
			}
			var be *checkpoint.BusyError
			if _, err := saver.Acquire(ctx, "t1", checkpoint.LeaseOptions{}); !errors.As(err, &be) || be.Owner != "o1" || be.RunID != "r1" {
				t.Fatalf("another owner's Acquire of the run's thread: %v, want busy, held by o1 for r1", err)
			}
			adopted, err := saver.AdoptLease("t1", checkpoint.LeaseOptions{Owner: "o1", RunID: "r1", TTL: time.Hour}, start)
			if err != nil {
				t.Fatal(err)
			}
			// A run queued behind it leaves the lease alone.
			if taken, err := create("r2", "t1", "o2", newRun("r2", "t1", "u", MultitaskEnqueue)); err != nil || taken {
				t.Fatalf("CreateRun behind a pending run: taken %v, %v; want the run without the lease", taken, err)
			}
			if got := leaseHolder(t, s, "t1"); got != "o1" {
				t.Fatalf("after a run queued behind: lease held by %q, want o1", got)
			}
			if err := adopted.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := leaseHolder(t, s, "t1"); got != "" {
				t.Errorf("the adopted lease, released, is still held by %q", got)
			}

			// Another owner's unexpired lease: the run is created without.
			other, err := saver.Acquire(ctx, "t2", checkpoint.LeaseOptions{Owner: "x", TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Release(ctx)
			if taken, err := create("r3", "t2", "o3", newRun("r3", "t2", "u", MultitaskReject)); err != nil || taken {
				t.Fatalf("CreateRun on a thread held elsewhere: taken %v, %v; want the run without the lease", taken, err)
			}
			if got := leaseHolder(t, s, "t2"); got != "x" {
				t.Errorf("a busy thread's lease is now held by %q, want x", got)
			}

			// An expired lease is taken over.
			if err := s.write(ctx, "t3", func(tx Tx) error {
				_, err := s.exec(ctx, tx, `INSERT INTO weft_thread_leases (thread_id, owner, run_id, acquired_at, expires_at) VALUES ($1, 'dead', 'r', 0, 1)`, "t3")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if taken, err := create("r4", "t3", "o4", newRun("r4", "t3", "u", MultitaskReject)); err != nil || !taken {
				t.Fatalf("CreateRun on a thread with an expired lease: taken %v, %v", taken, err)
			}
			if got := leaseHolder(t, s, "t3"); got != "o4" {
				t.Errorf("an expired lease is held by %q, want o4", got)
			}

			// A run whose assistant is checked takes the lease as well.
			if _, err := s.EnsureAssistant(ctx, Assistant{ID: "asst", GraphID: "echo"}); err != nil {
				t.Fatal(err)
			}
			asst, err := s.GetAssistant(ctx, "u", "asst")
			if err != nil {
				t.Fatal(err)
			}
			nr := newRun("r7", "t6", "u", MultitaskReject)
			nr.CreateThread, nr.Assistant = true, asst.Stamp()
			if taken, err := create("r7", "t6", "o7", nr); err != nil || !taken {
				t.Fatalf("CreateRun with its assistant checked: taken %v, %v", taken, err)
			}
			if got := leaseHolder(t, s, "t6"); got != "o7" {
				t.Errorf("the lease of a run with its assistant checked is held by %q, want o7", got)
			}

			// A write that fails after the lease's upsert (the new
			// thread's id is another owner's) takes neither.
			if _, err := s.CreateThread(ctx, Thread{ID: "t4", Owner: "other"}, false); err != nil {
				t.Fatal(err)
			}
			nr = newRun("r5", "t4", "u", MultitaskReject)
			nr.CreateThread = true
			if taken, err := create("r5", "t4", "o5", nr); err == nil || taken {
				t.Fatalf("CreateRun over another owner's thread: taken %v, %v; want an error", taken, err)
			}
			if got := leaseHolder(t, s, "t4"); got != "" {
				t.Errorf("a failed CreateRun left the lease held by %q", got)
			}
			if _, err := s.GetRun(ctx, "u", "t4", "r5"); !errors.Is(err, ErrNotFound) {
				t.Errorf("a failed CreateRun left its run: %v", err)
			}
			// A stale assistant fails before the upsert: nothing either.
			nr = newRun("r6", "t5", "u", MultitaskReject)
			nr.CreateThread, nr.Assistant = true, &AssistantStamp{Version: 7}
			if taken, err := create("r6", "t5", "o6", nr); !errors.Is(err, ErrStaleAssistant) || taken {
				t.Fatalf("CreateRun with a stale assistant: taken %v, %v", taken, err)
			}
			if got := leaseHolder(t, s, "t5"); got != "" {
				t.Errorf("a stale assistant's CreateRun left the lease held by %q", got)
			}
		})
	}
}

// The records take a lease by the clock the checkpoint store counts its
// expiry with.
func TestLeaseClock(t *testing.T) {
	if Postgres.LeaseNow != postgres.Dialect.Now {
		t.Errorf("records' lease clock %q, the checkpoint store's %q", Postgres.LeaseNow, postgres.Dialect.Now)
	}
	if SQLite.LeaseNow != sqlite.Dialect.Now {
		t.Errorf("records' lease clock %q, the checkpoint store's %q", SQLite.LeaseNow, sqlite.Dialect.Now)
	}
}
