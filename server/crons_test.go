package server_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/server"
)

// eventually polls cond until it holds, failing the test after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCronEndpoints(t *testing.T) {
	s := newServer(t, server.Options{CronInterval: -1})
	if flags := s.must(200, "GET", "/info", nil).obj(t)["flags"].(map[string]any); flags["crons"] != true {
		t.Errorf("GET /info flags = %v, want crons: true", flags)
	}
	tid := s.newThread()
	before := time.Now()
	c1 := s.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{
		"assistant_id": "slow", "schedule": "*/5 * * * *", "input": map[string]any{"tag": "x"},
		"metadata": map[string]any{"team": "a"}, "multitask_strategy": "enqueue", "on_disconnect": "cancel",
	}).obj(t)
	if c1["thread_id"] != tid || c1["assistant_id"] != server.SystemAssistantID("slow") || c1["schedule"] != "*/5 * * * *" ||
		c1["timezone"] != "UTC" || c1["enabled"] != true || c1["end_time"] != nil || c1["on_run_completed"] != "delete" {
		t.Errorf("created thread cron = %v", c1)
	}
	payload := c1["payload"].(map[string]any)
	if payload["multitask_strategy"] != "enqueue" || payload["input"].(map[string]any)["tag"] != "x" {
		t.Errorf("payload = %v, want the run's fields", payload)
	}
	for _, k := range []string{"schedule", "on_disconnect"} {
		if _, ok := payload[k]; ok {
			t.Errorf("payload = %v, has %s, which is not its runs'", payload, k)
		}
	}
	next, err := time.Parse(time.RFC3339, c1["next_run_date"].(string))
	if err != nil {
		t.Fatalf("next_run_date %v: %v", c1["next_run_date"], err)
	}
	if !next.After(before) || next.Minute()%5 != 0 || next.Second() != 0 || next.Sub(before) > 5*time.Minute {
		t.Errorf("next_run_date = %v, want the next multiple of 5 minutes after %v", next, before)
	}

	c2 := s.must(200, "POST", "/runs/crons", map[string]any{
		"assistant_id": "echo", "schedule": "30 9 * * 1-5", "timezone": "America/New_York",
		"end_time": "2099-01-01T00:00:00Z", "on_run_completed": "keep", "enabled": false,
	}).obj(t)
	if c2["thread_id"] != nil || c2["timezone"] != "America/New_York" || c2["on_run_completed"] != "keep" || c2["enabled"] != false ||
		!strings.HasPrefix(c2["end_time"].(string), "2099-01-01T00:00:00") {
		t.Errorf("created stateless cron = %v", c2)
	}
	ny, _ := time.LoadLocation("America/New_York")
	n2, _ := time.Parse(time.RFC3339, c2["next_run_date"].(string))
	if l := n2.In(ny); l.Hour() != 9 || l.Minute() != 30 || l.Weekday() == time.Saturday || l.Weekday() == time.Sunday {
		t.Errorf("next_run_date %v is %v in New York, want 9:30 on a weekday", n2, l)
	}
	id1, id2 := c1["cron_id"].(string), c2["cron_id"].(string)

	search := func(body map[string]any) []map[string]any {
		t.Helper()
		var out []map[string]any
		s.must(200, "POST", "/runs/crons/search", body).json(t, &out)
		return out
	}
	ids := func(cs []map[string]any) string {
		var out []string
		for _, c := range cs {
			out = append(out, c["cron_id"].(string))
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{}, id2 + "," + id1},
		{map[string]any{"sort_by": "created_at", "sort_order": "asc"}, id1 + "," + id2},
		{map[string]any{"thread_id": tid}, id1},
		{map[string]any{"assistant_id": "echo"}, id2},
		{map[string]any{"assistant_id": server.SystemAssistantID("slow")}, id1},
		{map[string]any{"enabled": false}, id2},
		{map[string]any{"metadata": map[string]any{"team": "a"}}, id1},
		{map[string]any{"limit": 1, "offset": 1}, id1},
	} {
		if got := ids(search(c.body)); got != c.want {
			t.Errorf("search %v = %s, want %s", c.body, got, c.want)
		}
	}
	sel := search(map[string]any{"select": []string{"cron_id", "now"}, "thread_id": tid})
	if len(sel) != 1 || len(sel[0]) != 2 || sel[0]["cron_id"] != id1 || sel[0]["now"] == nil {
		t.Errorf("search selecting cron_id and now = %v", sel)
	}
	r := s.must(200, "POST", "/runs/crons/search", map[string]any{"limit": 1})
	if r.header.Get("X-Pagination-Total") != "2" || r.header.Get("X-Pagination-Next") != "1" {
		t.Errorf("pagination headers = %v", r.header)
	}
	if n := strings.TrimSpace(string(s.must(200, "POST", "/runs/crons/count", map[string]any{}).body)); n != "2" {
		t.Errorf("count = %s, want 2", n)
	}
	if n := strings.TrimSpace(string(s.must(200, "POST", "/runs/crons/count", map[string]any{"assistant_id": "echo"}).body)); n != "1" {
		t.Errorf("count of echo's = %s, want 1", n)
	}

	// Update: the schedule moves the next run; run fields merge into the
	// payload, null removes one.
	up := s.must(200, "PATCH", "/runs/crons/"+id1, map[string]any{
		"schedule": "0 3 * * *", "input": map[string]any{"tag": "y"}, "multitask_strategy": nil,
		"metadata": map[string]any{"team": "b"}, "end_time": "2098-01-01T00:00:00Z",
	}).obj(t)
	p := up["payload"].(map[string]any)
	if up["schedule"] != "0 3 * * *" || p["input"].(map[string]any)["tag"] != "y" || p["multitask_strategy"] != nil ||
		up["metadata"].(map[string]any)["team"] != "b" || !strings.HasPrefix(up["end_time"].(string), "2098") || up["created_at"] != c1["created_at"] {
		t.Errorf("updated cron = %v", up)
	}
	if n, _ := time.Parse(time.RFC3339, up["next_run_date"].(string)); n.Hour() != 3 || n.Minute() != 0 {
		t.Errorf("next_run_date after the new schedule = %v, want 03:00", n)
	}
	up = s.must(200, "PATCH", "/runs/crons/"+id1, map[string]any{"end_time": nil, "enabled": false}).obj(t)
	if up["end_time"] != nil || up["enabled"] != false || up["schedule"] != "0 3 * * *" {
		t.Errorf("cron after clearing end_time and disabling it = %v", up)
	}

	s.must(204, "DELETE", "/runs/crons/"+id1, nil)
	s.must(404, "DELETE", "/runs/crons/"+id1, nil)
	s.must(404, "PATCH", "/runs/crons/"+id1, map[string]any{"enabled": true})
	if got := ids(search(map[string]any{})); got != id2 {
		t.Errorf("crons after the delete = %s, want %s", got, id2)
	}
	// A thread's crons go with it.
	c3 := s.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "@daily"}).obj(t)
	s.must(204, "DELETE", "/threads/"+tid, nil)
	s.must(404, "PATCH", "/runs/crons/"+c3["cron_id"].(string), map[string]any{"enabled": true})
}

func TestCronErrors(t *testing.T) {
	s := newServer(t, server.Options{CronInterval: -1})
	tid := s.newThread()
	cron := "/runs/crons/" + s.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *"}).obj(t)["cron_id"].(string)
	ok := map[string]any{"assistant_id": "echo", "schedule": "* * * * *"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range ok {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		field        string
	}{
		{"POST", "/runs/crons", with("schedule", nil), 400, "schedule"},
		{"POST", "/runs/crons", with("assistant_id", nil), 400, "assistant_id"},
		{"POST", "/runs/crons", with("schedule", "nope"), 400, "schedule"},
		{"POST", "/runs/crons", with("schedule", "* * * * * *"), 400, "schedule"},
		{"POST", "/runs/crons", with("schedule", "61 * * * *"), 400, "schedule"},
		{"POST", "/runs/crons", with("schedule", "CRON_TZ=UTC * * * * *"), 400, "schedule"},
		{"POST", "/runs/crons", with("schedule", 5), 400, "schedule"},
		{"POST", "/runs/crons", with("timezone", "Mars/Olympus"), 400, "timezone"},
		{"POST", "/runs/crons", with("timezone", "Local"), 400, "timezone"},
		{"POST", "/runs/crons", with("end_time", "tomorrow"), 400, "end_time"},
		{"POST", "/runs/crons", with("enabled", "yes"), 400, "enabled"},
		{"POST", "/runs/crons", with("on_run_completed", "maybe"), 400, "on_run_completed"},
		{"POST", "/runs/crons", with("multitask_strategy", "bogus"), 400, "multitask_strategy"},
		{"POST", "/runs/crons", with("metadata", []any{1}), 400, "metadata"},
		{"POST", "/runs/crons", with("config", "x"), 400, "config"},
		{"POST", "/runs/crons", with("webhook", "ftp://example.com/x"), 400, "webhook"},
		{"POST", "/runs/crons", with("stream_mode", "sideways"), 400, "stream_mode"},
		{"POST", "/runs/crons", with("interrupt_before", 5), 400, "interrupt_before"},
		{"POST", "/runs/crons", with("assistant_id", "no-such-graph"), 404, "no-such-graph"},
		{"POST", "/runs/crons", "[1]", 400, ""},
		{"POST", "/runs/crons", "{", 400, "Malformed"},
		{"POST", "/threads/not-a-uuid/runs/crons", ok, 400, "thread_id"},
		{"POST", "/threads/00000000-0000-4000-8000-000000000000/runs/crons", ok, 404, "Thread"},
		{"POST", "/threads/" + tid + "/runs/crons", with("schedule", "nope"), 400, "schedule"},
		{"PATCH", cron, map[string]any{"schedule": "nope"}, 400, "schedule"},
		{"PATCH", cron, map[string]any{"timezone": "Nowhere/Land"}, 400, "timezone"},
		{"PATCH", cron, map[string]any{"end_time": 3}, 400, "end_time"},
		{"PATCH", cron, map[string]any{"on_run_completed": "never"}, 400, "on_run_completed"},
		{"PATCH", cron, map[string]any{"input": "x", "config": []any{}}, 400, "config"},
		{"PATCH", "/runs/crons/nope", map[string]any{}, 400, "cron_id"},
		{"PATCH", "/runs/crons/00000000-0000-4000-8000-000000000000", map[string]any{}, 404, "Cron"},
		{"DELETE", "/runs/crons/nope", nil, 400, "cron_id"},
		{"POST", "/runs/crons/search", map[string]any{"sort_by": "schedule"}, 400, "sort_by"},
		{"POST", "/runs/crons/search", map[string]any{"sort_order": "up"}, 400, "sort_order"},
		{"POST", "/runs/crons/search", map[string]any{"select": []string{"secret"}}, 400, "select"},
		{"POST", "/runs/crons/search", map[string]any{"limit": 0}, 400, "limit"},
		{"POST", "/runs/crons/search", map[string]any{"thread_id": "x"}, 400, "thread_id"},
		{"POST", "/runs/crons/count", map[string]any{"enabled": 1}, 400, "enabled"},
	} {
		r := s.do(c.method, c.path, c.body)
		if r.status != c.status || !strings.Contains(string(r.body), c.field) {
			t.Errorf("%s %s %v: %d %s; want %d naming %q", c.method, c.path, c.body, r.status, r.body, c.status, c.field)
		}
	}
	// None of the bad updates changed it.
	if c := s.must(200, "POST", "/runs/crons/search", map[string]any{}).body; !strings.Contains(string(c), `"schedule":"* * * * *"`) || !strings.Contains(string(c), `"timezone":"UTC"`) {
		t.Errorf("cron after bad updates: %s", c)
	}
}

// ended records the threads of the runs that ended.
type ended struct {
	mu      sync.Mutex
	threads map[string]string
}

func (e *ended) hooks() server.RunHooks {
	return server.RunHooks{OnEnd: func(_ context.Context, run server.RunInfo, status string, _ error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.threads[run.ThreadID] = status
	}}
}

// other returns a thread a run ended on that is not one of known, with
// the run's status.
func (e *ended) other(known ...string) (string, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for th, st := range e.threads {
		if !slices.Contains(known, th) {
			return th, st
		}
	}
	return "", ""
}

func TestCronsFire(t *testing.T) {
	e := &ended{threads: map[string]string{}}
	var logged syncBuffer
	srv := startServer(t, server.Options{CronInterval: 5 * time.Millisecond, Hooks: e.hooks(), Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logged, testLog{t}), nil))})
	s := wrap(t, srv)

	// A thread's cron: its runs are on the thread, as its owner's.
	alice := s.as("alice")
	tid := alice.newThread()
	cid := alice.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "tick"}, "metadata": map[string]any{"from": "cron"}}).obj(t)["cron_id"].(string)
	for i := 1; i <= 2; i++ {
		if err := server.MakeCronDue(srv, "alice", cid); err != nil {
			t.Fatal(err)
		}
		var runs []map[string]any
		eventually(t, "the thread cron's run", func() bool {
			runs = nil
			alice.must(200, "GET", "/threads/"+tid+"/runs", nil).json(t, &runs)
			return len(runs) == i
		})
		run := alice.waitRun(tid, runs[0]["run_id"].(string))
		if run["status"] != "success" || run["metadata"].(map[string]any)["from"] != "cron" {
			t.Errorf("the cron's run = %v", run)
		}
	}
	var log []any
	eventually(t, "the thread's values", func() bool {
		log, _ = alice.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)["values"].(map[string]any)["log"].([]any)
		return len(log) == 2
	})
	c := alice.must(200, "POST", "/runs/crons/search", map[string]any{}).body
	if !strings.Contains(string(c), `"next_run_date":"`+time.Now().UTC().Format("2006")) && !strings.Contains(string(c), `"next_run_date":"`+time.Now().UTC().AddDate(1, 0, 0).Format("2006")) {
		t.Errorf("the cron after its ticks: %s; want its next run on the next 1st of January", c)
	}
	// Disabled, it does not fire: its run count stays (checked after an
	// enabled cron's tick, which the scheduler handles in the same look).
	alice.must(200, "PATCH", "/runs/crons/"+cid, map[string]any{"enabled": false})
	if err := server.MakeCronDue(srv, "alice", cid); err != nil {
		t.Fatal(err)
	}

	// A cron without a thread, keeping its threads.
	keep := alice.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "kept"}, "on_run_completed": "keep"}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "alice", keep); err != nil {
		t.Fatal(err)
	}
	var kept string
	eventually(t, "the stateless cron's run", func() bool {
		kept, _ = e.other(tid)
		return kept != ""
	})
	if _, st := e.other(tid); st != "success" {
		t.Errorf("the kept run ended %s", st)
	}
	th := alice.must(200, "GET", "/threads/"+kept, nil).obj(t)
	if th["status"] != "idle" {
		t.Errorf("the kept thread = %v", th)
	}
	var runs []map[string]any
	alice.must(200, "GET", "/threads/"+tid+"/runs", nil).json(t, &runs)
	if len(runs) != 2 {
		t.Errorf("the disabled cron's thread has %d runs, want 2", len(runs))
	}

	// A cron without a thread, deleting its threads.
	del := alice.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "gone"}}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "alice", del); err != nil {
		t.Fatal(err)
	}
	var gone string
	eventually(t, "the deleting cron's run", func() bool {
		gone, _ = e.other(tid, kept)
		return gone != ""
	})
	eventually(t, "the deleting cron's thread deleted", func() bool {
		return alice.do("GET", "/threads/"+gone, nil).status == 404
	})

	// A cron past its end time does not fire; a tick that fails (its
	// assistant was deleted) is logged and the loop goes on.
	tid2 := alice.newThread()
	aid := alice.must(200, "POST", "/assistants", map[string]any{"graph_id": "slow"}).obj(t)["assistant_id"].(string)
	failing := alice.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": aid, "schedule": "0 0 1 1 *"}).obj(t)["cron_id"].(string)
	alice.must(200, "DELETE", "/assistants/"+aid, nil)
	if err := server.MakeCronDue(srv, "alice", failing); err != nil {
		t.Fatal(err)
	}
	ended := alice.must(200, "POST", "/threads/"+tid2+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "end_time": "2000-01-01T00:00:00Z"}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "alice", ended); err != nil {
		t.Fatal(err)
	}
	after := alice.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "last"}, "on_run_completed": "keep"}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "alice", after); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the last cron's run", func() bool {
		th, _ := e.other(tid, kept, gone)
		return th != ""
	})
	alice.must(200, "GET", "/threads/"+tid2+"/runs", nil).json(t, &runs)
	if len(runs) != 0 {
		t.Errorf("the ended cron fired: %v", runs)
	}
	if l := logged.String(); !strings.Contains(l, "cron_id="+failing) || !strings.Contains(l, "No assistant found") {
		t.Errorf("the failed tick of cron %s is not logged with its cause:\n%s", failing, l)
	}
}

// Two server processes on one database: each tick fires once.
func TestCronFiresOnceAcrossProcesses(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			var srvs []*server.Server
			for range 2 {
				srv, err := server.New(context.Background(), server.Options{Graphs: apitestGraphs(), DB: db, Logger: testLogger(t), CronInterval: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				srvs = append(srvs, srv)
			}
			a := wrap(t, srvs[0])
			tid := a.newThread()
			cid := a.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "t"}, "multitask_strategy": "enqueue"}).obj(t)["cron_id"].(string)
			const ticks = 10
			for i := 1; i <= ticks; i++ {
				if err := server.MakeCronDue(srvs[i%2], "", cid); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the tick's run", func() bool {
					var runs []map[string]any
					a.must(200, "GET", "/threads/"+tid+"/runs", nil).json(t, &runs)
					return len(runs) >= i
				})
			}
			// Shut down, the schedulers have ended every look they began.
			for _, srv := range srvs {
				shutdownServer(t, srv)
			}
			r := newServer(t, server.Options{DB: db, CronInterval: -1})
			var runs []map[string]any
			r.must(200, "GET", "/threads/"+tid+"/runs?limit=100", nil).json(t, &runs)
			if len(runs) != ticks {
				t.Errorf("%d runs for %d ticks fired by two processes", len(runs), ticks)
			}
		})
	}
}

// hold takes the one place of a server at MaxRuns 1 with a run that
// waits until release is called.
func hold(t *testing.T, s *testServer) (release func()) {
	t.Helper()
	tid := s.newThread()
	run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 60000}}).obj(t)
	return func() {
		t.Helper()
		s.must(204, "POST", "/threads/"+tid+"/runs/"+run["run_id"].(string)+"/cancel?wait=1", nil)
	}
}

// threadRuns lists a thread's runs, the last first.
func threadRuns(t *testing.T, s *testServer, tid string) []map[string]any {
	t.Helper()
	var runs []map[string]any
	s.must(200, "GET", "/threads/"+tid+"/runs?limit=100", nil).json(t, &runs)
	return runs
}

// nextNewYear is the first 1 January 00:00 UTC after now.
func nextNewYear() time.Time {
	return time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
}

// A tick refused because the server is at MaxRuns is tried again while
// it is, and makes its run once a place is free; the schedule then goes
// on.
func TestCronTickRetried(t *testing.T) {
	var logged syncBuffer
	srv := startServer(t, server.Options{MaxRuns: 1, CronInterval: 5 * time.Millisecond, CronRetries: 1000,
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logged, testLog{t}), nil))})
	s := wrap(t, srv)
	release := hold(t, s)
	tid := s.newThread()
	cid := s.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "retried"}}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "", cid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tick tried again after failing twice", func() bool {
		_, tick, attempts, err := server.CronRetry(srv, "", cid)
		if err != nil {
			t.Fatal(err)
		}
		return tick != nil && attempts >= 2
	})
	next, _, _, err := server.CronRetry(srv, "", cid)
	if err != nil {
		t.Fatal(err)
	}
	if next == nil || !next.Before(nextNewYear()) {
		t.Errorf("the cron's next_run_date while its tick is tried again = %v, want the retry's time, before its next tick %v", next, nextNewYear())
	}
	if runs := threadRuns(t, s, tid); len(runs) != 0 {
		t.Fatalf("runs made while the server is at MaxRuns: %v", runs)
	}
	release()
	var runs []map[string]any
	eventually(t, "the retried tick's run", func() bool {
		runs = threadRuns(t, s, tid)
		return len(runs) > 0
	})
	if run := s.waitRun(tid, runs[0]["run_id"].(string)); run["status"] != "success" {
		t.Errorf("the retried tick's run = %v", run)
	}
	next, tick, attempts, err := server.CronRetry(srv, "", cid)
	if err != nil {
		t.Fatal(err)
	}
	if next == nil || !next.Equal(nextNewYear()) || tick != nil || attempts != 0 {
		t.Errorf("the cron after its retried tick = next %v, retrying %v (%d failures); want next %v, no retry", next, tick, attempts, nextNewYear())
	}
	if runs := threadRuns(t, s, tid); len(runs) != 1 {
		t.Errorf("%d runs for one tick", len(runs))
	}
	if l := logged.String(); !strings.Contains(l, "it is tried again") || !strings.Contains(l, "retry later") || !strings.Contains(l, "tick tried again created its run") {
		t.Errorf("the retries are not logged with their cause:\n%s", l)
	}
}

// A tick whose run cannot be made for good (its assistant deleted, its
// thread busy under reject) is not tried again; nor one tried as many
// times as Options.CronRetries allows. The schedule goes on.
func TestCronTickNotRetried(t *testing.T) {
	var logged syncBuffer
	srv := startServer(t, server.Options{MaxRuns: 2, CronInterval: 5 * time.Millisecond, CronRetries: 2,
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logged, testLog{t}), nil))})
	s := wrap(t, srv)
	notRetried := func(cid, cause, why string) {
		t.Helper()
		eventually(t, "the failed tick of "+cid+" logged", func() bool {
			for _, l := range strings.Split(logged.String(), "\n") {
				if strings.Contains(l, "cron_id="+cid) && strings.Contains(l, why) {
					return true
				}
			}
			return false
		})
		for _, l := range strings.Split(logged.String(), "\n") {
			if strings.Contains(l, "cron_id="+cid) && strings.Contains(l, why) && !strings.Contains(l, cause) {
				t.Errorf("the failed tick of %s is logged without its cause %q: %s", cid, cause, l)
			}
		}
		next, tick, attempts, err := server.CronRetry(srv, "", cid)
		if err != nil {
			t.Fatal(err)
		}
		if next == nil || !next.Equal(nextNewYear()) || tick != nil || attempts != 0 {
			t.Errorf("cron %s after its failed tick = next %v, retrying %v (%d failures); want its next tick %v, no retry", cid, next, tick, attempts, nextNewYear())
		}
	}

	// Its assistant deleted.
	aid := s.must(200, "POST", "/assistants", map[string]any{"graph_id": "slow"}).obj(t)["assistant_id"].(string)
	gone := s.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": aid, "schedule": "0 0 1 1 *"}).obj(t)["cron_id"].(string)
	s.must(200, "DELETE", "/assistants/"+aid, nil)
	if err := server.MakeCronDue(srv, "", gone); err != nil {
		t.Fatal(err)
	}
	notRetried(gone, "No assistant found", "it is not tried again")
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, "cron_id="+gone+" ") && strings.Contains(l, "it is tried again") {
			t.Errorf("the tick of the cron without its assistant was given back: %s", l)
		}
	}

	// Its thread busy, under reject: the tick is skipped.
	busy := s.newThread()
	run := s.must(200, "POST", "/threads/"+busy+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 60000}}).obj(t)
	rejected := s.must(200, "POST", "/threads/"+busy+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *"}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "", rejected); err != nil {
		t.Fatal(err)
	}
	notRetried(rejected, "already running", "it is not tried again")
	s.must(204, "POST", "/threads/"+busy+"/runs/"+run["run_id"].(string)+"/cancel?wait=1", nil)

	// Refused at MaxRuns more times than CronRetries allows.
	release, second := hold(t, s), hold(t, s)
	tid := s.newThread()
	full := s.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *"}).obj(t)["cron_id"].(string)
	if err := server.MakeCronDue(srv, "", full); err != nil {
		t.Fatal(err)
	}
	notRetried(full, "retry later", "tried as many times as Options.CronRetries allows")
	if n := strings.Count(logged.String(), "cron_id="+full+" "); n != 3 {
		t.Errorf("cron %s's tick logged %d times, want 3 (tried once, then again twice):\n%s", full, n, logged.String())
	}
	release()
	second()
	if runs := threadRuns(t, s, tid); len(runs) != 0 {
		t.Errorf("the tick given up made runs: %v", runs)
	}
}

// Two server processes on one database, both at MaxRuns: a tick tried
// again is tried by either, and once a place is free it makes one run.
func TestCronRetriedOnceAcrossProcesses(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			var srvs []*server.Server
			var ss []*testServer
			for range 2 {
				srv, err := server.New(context.Background(), server.Options{Graphs: apitestGraphs(), DB: db, Logger: testLogger(t),
					CronInterval: time.Millisecond, CronRetries: 1000, MaxRuns: 1})
				if err != nil {
					t.Fatal(err)
				}
				srvs = append(srvs, srv)
				ss = append(ss, wrap(t, srv))
			}
			tid := ss[0].newThread()
			cid := ss[0].must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *", "input": map[string]any{"tag": "t"}}).obj(t)["cron_id"].(string)
			const ticks = 3
			for i := 1; i <= ticks; i++ {
				releases := []func(){hold(t, ss[0]), hold(t, ss[1])}
				if err := server.MakeCronDue(srvs[i%2], "", cid); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the tick tried again after failing twice", func() bool {
					_, tick, attempts, err := server.CronRetry(srvs[0], "", cid)
					if err != nil {
						t.Fatal(err)
					}
					return tick != nil && attempts >= 2
				})
				for _, release := range releases {
					release()
				}
				var runs []map[string]any
				eventually(t, "the tick's run", func() bool {
					runs = threadRuns(t, ss[0], tid)
					return len(runs) >= i
				})
				// Ended, it gives its place back before the next tick.
				ss[0].waitRun(tid, runs[0]["run_id"].(string))
			}
			// Shut down, the schedulers have ended every look they began.
			for _, srv := range srvs {
				shutdownServer(t, srv)
			}
			r := newServer(t, server.Options{DB: db, CronInterval: -1})
			if runs := threadRuns(t, r, tid); len(runs) != ticks {
				t.Errorf("%d runs for %d ticks tried again by two processes", len(runs), ticks)
			}
		})
	}
}

// A tick whose run was made although the process that made it heard an
// error (the answer of its commit lost), and that was so given back to be
// tried again, makes no second run when another process tries it again:
// neither on the cron's thread (under enqueue, where a second run would be
// queued) nor, for a cron without a thread, a second run on a second new
// thread. The schedule then goes on.
func TestCronTickAnswerLost(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			// The process that made the run and lost the answer: no
			// scheduler of its own.
			lost := newServer(t, server.Options{DB: db, CronInterval: -1})
			tid := lost.newThread()
			threaded := lost.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *",
				"input": map[string]any{"tag": "t"}, "multitask_strategy": "enqueue"}).obj(t)["cron_id"].(string)
			stateless := lost.must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "slow", "schedule": "0 0 1 1 *",
				"input": map[string]any{"tag": "s"}, "on_run_completed": "keep"}).obj(t)["cron_id"].(string)
			var made []string
			for _, cid := range []string{threaded, stateless} {
				run, err := server.FireCronAnswerLost(lost.srv, "", cid)
				if err != nil {
					t.Fatal(err)
				}
				made = append(made, run)
			}

			// The process that tries the ticks again.
			var logged syncBuffer
			again := startServer(t, server.Options{DB: db, CronInterval: time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logged, testLog{t}), nil))})
			for _, cid := range []string{threaded, stateless} {
				eventually(t, "the tick of "+cid+" tried again, logged as made already", func() bool {
					for _, l := range strings.Split(logged.String(), "\n") {
						if strings.Contains(l, "cron_id="+cid) && strings.Contains(l, "had made its run already") {
							return true
						}
					}
					return false
				})
				next, tick, attempts, err := server.CronRetry(again, "", cid)
				if err != nil {
					t.Fatal(err)
				}
				if next == nil || !next.Equal(nextNewYear()) || tick != nil || attempts != 0 {
					t.Errorf("cron %s after its tick tried again = next %v, retrying %v (%d failures); want next %v, no retry", cid, next, tick, attempts, nextNewYear())
				}
			}
			if l := logged.String(); strings.Contains(l, "failed to create its run") {
				t.Errorf("a tick tried again failed:\n%s", l)
			}
			if runs := threadRuns(t, lost, tid); len(runs) != 1 || runs[0]["run_id"] != made[0] {
				t.Errorf("the thread's cron's runs = %v, want %s alone", runs, made[0])
			}
			var threads []map[string]any
			lost.must(200, "POST", "/threads/search", map[string]any{"limit": 100}).json(t, &threads)
			var news []string
			for _, th := range threads {
				if th["thread_id"] != tid {
					news = append(news, th["thread_id"].(string))
				}
			}
			if len(news) != 1 {
				t.Fatalf("threads made for the stateless cron's tick = %v, want 1", news)
			}
			if runs := threadRuns(t, lost, news[0]); len(runs) != 1 || runs[0]["run_id"] != made[1] {
				t.Errorf("the stateless cron's runs = %v, want %s alone", runs, made[1])
			}
		})
	}
}
