package records

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/internal/pgtest"
)

func TestCrons(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateThread(ctx, Thread{ID: "t1", Owner: "alice"}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateCron(ctx, Cron{ID: "c0", Owner: "bob", AssistantID: "a", ThreadID: "t1", Schedule: "* * * * *", Timezone: "UTC", OnRunCompleted: "delete"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a cron on another owner's thread: got %v, want ErrNotFound", err)
		}
		next := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
		end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
		c1, err := s.CreateCron(ctx, Cron{ID: "c1", Owner: "alice", AssistantID: "a", ThreadID: "t1", Schedule: "* * * * *", Timezone: "UTC",
			Payload: []byte(`{"input":{"x":1}}`), Metadata: []byte(`{"k":"v"}`), Enabled: true, NextRunDate: &next, EndTime: &end, OnRunCompleted: "delete"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateCron(ctx, Cron{ID: "c1", Owner: "alice", AssistantID: "a", Schedule: "* * * * *", Timezone: "UTC", OnRunCompleted: "delete"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second cron c1: got %v, want ErrConflict", err)
		}
		if _, err := s.CreateCron(ctx, Cron{ID: "c2", Owner: "alice", AssistantID: "b", Schedule: "0 * * * *", Timezone: "Europe/Paris", Enabled: true, NextRunDate: &next, OnRunCompleted: "keep"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateCron(ctx, Cron{ID: "c3", Owner: "bob", AssistantID: "a", Schedule: "0 * * * *", Timezone: "UTC", Enabled: false, NextRunDate: &next, OnRunCompleted: "delete"}); err != nil {
			t.Fatal(err)
		}

		got, err := s.GetCron(ctx, "alice", "c1")
		if err != nil {
			t.Fatal(err)
		}
		if got.ThreadID != "t1" || !got.Enabled || got.NextRunDate == nil || !got.NextRunDate.Equal(next) || got.EndTime == nil || !got.EndTime.Equal(end) || got.Timezone != "UTC" || got.OnRunCompleted != "delete" || !got.CreatedAt.Equal(c1.CreatedAt) {
			t.Errorf("GetCron c1 = %+v, want it as created (%+v)", got, c1)
		}
		jsonEq(t, "payload", `{"input":{"x":1}}`, got.Payload)
		jsonEq(t, "metadata", `{"k":"v"}`, got.Metadata)
		if _, err := s.GetCron(ctx, "bob", "c1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("bob reading alice's cron: got %v, want ErrNotFound", err)
		}

		ids := func(cs []Cron) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.ID)
			}
			return out
		}
		for _, c := range []struct {
			q     CronQuery
			want  []string
			total int
		}{
			{CronQuery{Owner: "alice"}, []string{"c1", "c2"}, 2},
			{CronQuery{Owner: "alice", Desc: true}, []string{"c2", "c1"}, 2},
			{CronQuery{Owner: "alice", AssistantID: "b"}, []string{"c2"}, 1},
			{CronQuery{Owner: "alice", ThreadID: "t1"}, []string{"c1"}, 1},
			{CronQuery{Owner: "alice", Metadata: map[string]any{"k": "v"}}, []string{"c1"}, 1},
			{CronQuery{Owner: "alice", Limit: 1, Offset: 1}, []string{"c2"}, 2},
			{CronQuery{Owner: "alice", SortBy: "assistant_id", Desc: true}, []string{"c2", "c1"}, 2},
			{CronQuery{Owner: "bob", Enabled: new(bool)}, []string{"c3"}, 1},
			{CronQuery{Owner: "carol"}, nil, 0},
		} {
			list, total, err := s.SearchCrons(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(list); total != c.total || len(g) != len(c.want) || (len(g) > 0 && g[0] != c.want[0]) || (len(g) > 1 && g[1] != c.want[1]) {
				t.Errorf("SearchCrons(%+v) = %v (%d in all), want %v (%d)", c.q, g, total, c.want, c.total)
			}
			n, err := s.CountCrons(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if n != c.total {
				t.Errorf("CountCrons(%+v) = %d, want %d", c.q, n, c.total)
			}
		}

		// Due: enabled ones only, at their tick.
		due, err := s.DueCrons(ctx, next.Add(-time.Second), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != 0 {
			t.Errorf("DueCrons before the tick = %v, want none", ids(due))
		}
		due, err = s.DueCrons(ctx, next, 10)
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(due); len(g) != 2 || g[0] != "c1" || g[1] != "c2" {
			t.Errorf("DueCrons at the tick = %v, want [c1 c2] (c3 is disabled)", g)
		}
		later := next.Add(time.Minute)
		ok, err := s.ClaimCronTick(ctx, "c1", next, &later)
		if err != nil || !ok {
			t.Fatalf("claiming c1's tick: %v, %v; want true", ok, err)
		}
		ok, err = s.ClaimCronTick(ctx, "c1", next, &later)
		if err != nil || ok {
			t.Fatalf("claiming c1's tick again: %v, %v; want false", ok, err)
		}
		if got, _ := s.GetCron(ctx, "alice", "c1"); got.NextRunDate == nil || !got.NextRunDate.Equal(later) {
			t.Errorf("c1's next run date after its claim = %v, want %v", got.NextRunDate, later)
		}
		if ok, err := s.ClaimCronTick(ctx, "c3", next, &later); err != nil || ok {
			t.Errorf("claiming disabled c3's tick: %v, %v; want false", ok, err)
		}

		// Past its end time, a cron is not due.
		past := next.Add(-time.Hour)
		if _, err := s.UpdateCron(ctx, "alice", "c2", func(c *Cron) error { c.EndTime = &past; return nil }); err != nil {
			t.Fatal(err)
		}
		if due, _ := s.DueCrons(ctx, later, 10); len(due) != 1 || due[0].ID != "c1" {
			t.Errorf("DueCrons with c2 ended = %v, want [c1]", ids(due))
		}

		// Update.
		up, err := s.UpdateCron(ctx, "alice", "c1", func(c *Cron) error {
			c.Schedule, c.Enabled, c.Metadata, c.ID, c.ThreadID = "5 * * * *", false, []byte(`{"n":2}`), "other", "t2"
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if up.ID != "c1" || up.ThreadID != "t1" || up.Schedule != "5 * * * *" || up.Enabled || !up.UpdatedAt.After(up.CreatedAt) {
			t.Errorf("UpdateCron = %+v, want c1 on t1 with its new schedule, disabled, updated later than created", up)
		}
		if got, _ := s.GetCron(ctx, "alice", "c1"); got.Schedule != "5 * * * *" || got.Enabled {
			t.Errorf("c1 read after its update = %+v", got)
		}
		boom := errors.New("boom")
		if _, err := s.UpdateCron(ctx, "alice", "c2", func(*Cron) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("UpdateCron whose change fails: got %v, want its error", err)
		}
		if _, err := s.UpdateCron(ctx, "bob", "c1", func(*Cron) error { return nil }); !errors.Is(err, ErrNotFound) {
			t.Errorf("bob updating alice's cron: got %v, want ErrNotFound", err)
		}

		// Delete.
		if err := s.DeleteCron(ctx, "bob", "c2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("bob deleting alice's cron: got %v, want ErrNotFound", err)
		}
		if err := s.DeleteCron(ctx, "alice", "c2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCron(ctx, "alice", "c2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a deleted cron: got %v, want ErrNotFound", err)
		}
		// A thread's crons go with it.
		if err := s.DeleteThread(ctx, "alice", "t1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCron(ctx, "alice", "c1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the cron of a deleted thread: got %v, want ErrNotFound", err)
		}
	})
}

// A tick given back (RetryCronTick) is due again at its retry's time, with
// the tick and its failures recorded, and only where the claim that gave
// it back still holds.
func TestCronRetry(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
		next := tick.Add(time.Hour)
		// The cron ends after its tick, before the tick's retries.
		end := tick.Add(time.Second)
		if _, err := s.CreateCron(ctx, Cron{ID: "c1", Owner: "alice", AssistantID: "a", Schedule: "1 * * * *", Timezone: "UTC",
			Enabled: true, NextRunDate: &tick, EndTime: &end, OnRunCompleted: "keep"}); err != nil {
			t.Fatal(err)
		}
		read := func() Cron {
			t.Helper()
			c, err := s.GetCron(ctx, "alice", "c1")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if c := read(); c.RetryTick != nil || c.RetryAttempts != 0 {
			t.Errorf("a new cron's retry = %v, %d; want none", c.RetryTick, c.RetryAttempts)
		}
		if ok, err := s.ClaimCronTick(ctx, "c1", tick, &next); err != nil || !ok {
			t.Fatalf("claiming the tick: %v, %v", ok, err)
		}
		retryAt := tick.Add(time.Minute)
		if _, err := s.RetryCronTick(ctx, "c1", &next, retryAt, tick, 0); err == nil || !strings.Contains(err.Error(), "not 0 times") {
			t.Errorf("giving back a tick that failed 0 times: %v, want an error naming the count", err)
		}
		other := next.Add(time.Hour)
		if ok, err := s.RetryCronTick(ctx, "c1", &other, retryAt, tick, 1); err != nil || ok {
			t.Errorf("giving back a tick claimed as another next tick: %v, %v; want false", ok, err)
		}
		if ok, err := s.RetryCronTick(ctx, "c1", &next, retryAt, tick, 1); err != nil || !ok {
			t.Fatalf("giving back the tick: %v, %v; want true", ok, err)
		}
		if c := read(); c.NextRunDate == nil || !c.NextRunDate.Equal(retryAt) || c.RetryTick == nil || !c.RetryTick.Equal(tick) || c.RetryAttempts != 1 {
			t.Errorf("the cron given back = next %v, retry of %v, %d failures; want %v, %v, 1", c.NextRunDate, c.RetryTick, c.RetryAttempts, retryAt, tick)
		}
		// Given back once: the same claim gives nothing back again.
		if ok, err := s.RetryCronTick(ctx, "c1", &next, retryAt.Add(time.Minute), tick, 2); err != nil || ok {
			t.Errorf("giving back the tick twice: %v, %v; want false", ok, err)
		}
		// Due at the retry's time, though after the end time: the tick
		// was not.
		if due, err := s.DueCrons(ctx, retryAt.Add(-time.Microsecond), 10); err != nil || len(due) != 0 {
			t.Errorf("DueCrons before the retry = %v, %v; want none", due, err)
		}
		due, err := s.DueCrons(ctx, retryAt, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != 1 || due[0].RetryTick == nil || !due[0].RetryTick.Equal(tick) || due[0].RetryAttempts != 1 {
			t.Fatalf("DueCrons at the retry = %+v; want c1, retrying %v once failed", due, tick)
		}
		// Changed without moving its next tick, the retry stays;
		// what the change sets of the retry is ignored.
		if _, err := s.UpdateCron(ctx, "alice", "c1", func(c *Cron) error {
			c.Metadata, c.RetryTick, c.RetryAttempts = []byte(`{"k":1}`), nil, 7
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if c := read(); c.RetryTick == nil || !c.RetryTick.Equal(tick) || c.RetryAttempts != 1 {
			t.Errorf("the retry after a change of metadata = %v, %d; want %v, 1", c.RetryTick, c.RetryAttempts, tick)
		}

		// Claimed again (by any process), the retry is over; failing
		// again, it is given back with one more failure.
		if ok, err := s.ClaimCronTick(ctx, "c1", retryAt, &next); err != nil || !ok {
			t.Fatalf("claiming the retry: %v, %v", ok, err)
		}
		if c := read(); c.RetryTick != nil || c.RetryAttempts != 0 || !c.NextRunDate.Equal(next) {
			t.Errorf("the cron after its retry's claim = next %v, retry %v, %d; want %v and no retry", c.NextRunDate, c.RetryTick, c.RetryAttempts, next)
		}
		retry2 := retryAt.Add(time.Minute)
		if ok, err := s.RetryCronTick(ctx, "c1", &next, retry2, tick, 2); err != nil || !ok {
			t.Fatalf("giving back the tick a second time: %v, %v", ok, err)
		}
		// Its next tick moved by a change, the retry is over.
		moved := next.Add(24 * time.Hour)
		if _, err := s.UpdateCron(ctx, "alice", "c1", func(c *Cron) error { c.NextRunDate = &moved; return nil }); err != nil {
			t.Fatal(err)
		}
		if c := read(); c.RetryTick != nil || c.RetryAttempts != 0 || !c.NextRunDate.Equal(moved) {
			t.Errorf("the cron rescheduled during a retry = next %v, retry %v, %d; want %v and no retry", c.NextRunDate, c.RetryTick, c.RetryAttempts, moved)
		}

		// A process that claimed a tick gives it back after another
		// process claimed the tick after it: that claim stands.
		if ok, err := s.ClaimCronTick(ctx, "c1", moved, &next); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if ok, err := s.ClaimCronTick(ctx, "c1", next, &other); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if ok, err := s.RetryCronTick(ctx, "c1", &next, retryAt, moved, 1); err != nil || ok {
			t.Errorf("giving back a tick after a later claim: %v, %v; want false", ok, err)
		}
		if c := read(); !c.NextRunDate.Equal(other) || c.RetryTick != nil {
			t.Errorf("the later claim after the give-back = next %v, retry %v; want %v, none", c.NextRunDate, c.RetryTick, other)
		}

		// A cron with no tick after the one claimed is given back from
		// none; a disabled one is not given back.
		if ok, err := s.ClaimCronTick(ctx, "c1", other, nil); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if ok, err := s.RetryCronTick(ctx, "c1", nil, retryAt, other, 1); err != nil || !ok {
			t.Errorf("giving back the last tick: %v, %v; want true", ok, err)
		}
		if ok, err := s.ClaimCronTick(ctx, "c1", retryAt, &next); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if _, err := s.UpdateCron(ctx, "alice", "c1", func(c *Cron) error { c.Enabled = false; return nil }); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.RetryCronTick(ctx, "c1", &next, retryAt, next, 1); err != nil || ok {
			t.Errorf("giving back a disabled cron's tick: %v, %v; want false", ok, err)
		}
		if c := read(); !c.NextRunDate.Equal(next) || c.RetryTick != nil {
			t.Errorf("the disabled cron = next %v, retry %v; want %v, none", c.NextRunDate, c.RetryTick, next)
		}
	})
}

// migrationBackends open a database on each backend, without a Store.
var migrationBackends = []struct {
	name string
	open func(t *testing.T) (DB, *Dialect)
}{
	{"sqlite", func(t *testing.T) (DB, *Dialect) {
		d, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return &sqliteDB{db: d.DB(), write: d.WriteTx}, SQLite
	}},
	{"postgres", func(t *testing.T) (DB, *Dialect) {
		d, err := postgres.Open(context.Background(), pgtest.NewDatabase(t, "weft_records_"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return pgDB{d.Pool()}, Postgres
	}},
}

// migrateFrom opens, on each backend, a database at schema version
// version, lets before write to it, migrates it to the current version
// and lets after read it.
func migrateFrom(t *testing.T, version int, before, after func(t *testing.T, s *Store)) {
	for _, b := range migrationBackends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			db, d := b.open(t)
			at := &Dialect{Name: d.Name, Migrations: d.Migrations[:version], Numbered: d.Numbered, ForUpdate: d.ForUpdate,
				SkipLocked: d.SkipLocked, Contains: d.Contains, LeaseNow: d.LeaseNow, WritableCTE: d.WritableCTE}
			old := newStore(db, at, Options{}, 1)
			defer old.Close()
			if err := old.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			before(t, old)
			cur := newStore(db, d, Options{}, 1)
			defer cur.Close()
			if err := cur.Migrate(ctx); err != nil {
				t.Fatalf("migrating from version %d: %v", version, err)
			}
			var got int64
			if err := cur.read(ctx, func(tx Tx) error {
				_, err := cur.queryRow(ctx, tx, `SELECT MAX(version) FROM weft_schema_migrations WHERE component = $1`, []any{migrationComponent}, &got)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if int(got) != len(d.Migrations) {
				t.Errorf("schema version after the migration = %d, want %d", got, len(d.Migrations))
			}
			after(t, cur)
		})
	}
}

// TestMigrateToCrons migrates a database at schema version 2, the
// version before the crons, with a thread in it: the thread stays and
// crons can be kept.
func TestMigrateToCrons(t *testing.T) {
	ctx := context.Background()
	migrateFrom(t, 2, func(t *testing.T, old *Store) {
		if _, err := old.CreateThread(ctx, Thread{ID: "t1", Owner: "alice"}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := old.CreateCron(ctx, Cron{ID: "c1", Owner: "alice", ThreadID: "t1"}); err == nil {
			t.Fatal("a cron kept at schema version 2, which has no crons table")
		}
	}, func(t *testing.T, cur *Store) {
		if _, err := cur.GetThread(ctx, "alice", "t1"); err != nil {
			t.Errorf("the thread kept before the migration: %v", err)
		}
		if _, err := cur.CreateCron(ctx, Cron{ID: "c1", Owner: "alice", AssistantID: "a", ThreadID: "t1", Schedule: "* * * * *", Timezone: "UTC", Enabled: true, OnRunCompleted: "delete"}); err != nil {
			t.Fatalf("a cron after the migration: %v", err)
		}
	})
}

// TestMigrateToCronRetries migrates a database at schema version 3, the
// version before the retries of a cron's failed ticks, with a cron in it:
// the cron stays, retrying nothing, and its tick can be given back.
func TestMigrateToCronRetries(t *testing.T) {
	ctx := context.Background()
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	next := tick.Add(time.Hour)
	migrateFrom(t, 3, func(t *testing.T, old *Store) {
		// Written as a build at version 3 wrote it: without the
		// columns of version 4.
		if err := old.write(ctx, "", func(tx Tx) error {
			_, err := old.exec(ctx, tx, `INSERT INTO weft_server_crons (cron_id, owner, assistant_id, thread_id, schedule, timezone, payload, metadata, enabled, end_time, next_run_date, on_run_completed, created_at, updated_at) VALUES ('c1', 'alice', 'a', NULL, '1 * * * *', 'UTC', '{}', '{}', 1, NULL, $1, 'keep', 0, 0)`, micros(tick))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}, func(t *testing.T, cur *Store) {
		due, err := cur.DueCrons(ctx, tick, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != 1 || due[0].ID != "c1" || due[0].RetryTick != nil || due[0].RetryAttempts != 0 {
			t.Fatalf("DueCrons after the migration = %+v; want c1, retrying nothing", due)
		}
		if ok, err := cur.ClaimCronTick(ctx, "c1", tick, &next); err != nil || !ok {
			t.Fatalf("claiming the tick: %v, %v", ok, err)
		}
		if ok, err := cur.RetryCronTick(ctx, "c1", &next, tick.Add(time.Minute), tick, 1); err != nil || !ok {
			t.Fatalf("giving the tick back: %v, %v", ok, err)
		}
		if c, err := cur.GetCron(ctx, "alice", "c1"); err != nil || c.RetryTick == nil || !c.RetryTick.Equal(tick) || c.RetryAttempts != 1 {
			t.Errorf("the cron given back = %+v, %v; want a retry of %v", c, err, tick)
		}
	})
}

// A cron's tick makes its run once (NewRun.CronTick): a second try of the
// tick (an earlier try's answer lost) writes nothing, neither its run nor
// its new thread, even once the first run's thread is gone or its run is
// still going on a thread that rejects another; the cron's next tick
// makes its own; a tick of a cron deleted meanwhile makes its run.
func TestCronTickMakesOneRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
		if _, err := s.CreateThread(ctx, Thread{ID: "t1", Owner: "alice"}, false); err != nil {
			t.Fatal(err)
		}
		for _, c := range []Cron{
			{ID: "stateless", Owner: "alice", AssistantID: "asst", Schedule: "* * * * *", Timezone: "UTC", Enabled: true, OnRunCompleted: "delete"},
			{ID: "threaded", Owner: "alice", AssistantID: "asst", ThreadID: "t1", Schedule: "* * * * *", Timezone: "UTC", Enabled: true, OnRunCompleted: "delete"},
		} {
			if _, err := s.CreateCron(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		stateless := func(run, thread string, tick time.Time) error {
			nr := newRun(run, thread, "alice", MultitaskReject)
			nr.CreateThread = true
			nr.CronTick = &CronTick{CronID: "stateless", Tick: tick}
			_, _, err := s.CreateRun(ctx, nr)
			return err
		}
		absent := func(run, thread string) {
			t.Helper()
			if _, err := s.GetRun(ctx, "alice", thread, run); !errors.Is(err, ErrNotFound) {
				t.Errorf("run %s of a tick made already: %v, want ErrNotFound", run, err)
			}
			if _, err := s.GetThread(ctx, "alice", thread); !errors.Is(err, ErrNotFound) {
				t.Errorf("thread %s of a tick made already: %v, want ErrNotFound", thread, err)
			}
		}
		if err := stateless("r1", "ta", tick); err != nil {
			t.Fatal(err)
		}
		if err := stateless("r2", "tb", tick); !errors.Is(err, ErrTickMade) {
			t.Fatalf("a stateless cron's tick made twice: %v, want ErrTickMade", err)
		}
		absent("r2", "tb")
		if err := s.DeleteThread(ctx, "alice", "ta"); err != nil {
			t.Fatal(err)
		}
		if err := stateless("r3", "tc", tick); !errors.Is(err, ErrTickMade) {
			t.Fatalf("a stateless cron's tick made again once its thread was deleted: %v, want ErrTickMade", err)
		}
		absent("r3", "tc")
		if err := stateless("r4", "td", tick.Add(time.Minute)); err != nil {
			t.Fatalf("the cron's next tick: %v", err)
		}

		threaded := func(run string, tick time.Time) error {
			nr := newRun(run, "t1", "alice", MultitaskReject)
			nr.CronTick = &CronTick{CronID: "threaded", Tick: tick}
			_, _, err := s.CreateRun(ctx, nr)
			return err
		}
		if err := threaded("r5", tick); err != nil {
			t.Fatal(err)
		}
		// r5 is pending: a run of another tick is rejected, a second
		// try of r5's is told it is made.
		if err := threaded("r6", tick); !errors.Is(err, ErrTickMade) {
			t.Fatalf("a thread's cron's tick made twice: %v, want ErrTickMade", err)
		}
		if err := threaded("r7", tick.Add(time.Minute)); !errors.Is(err, ErrBusy) {
			t.Fatalf("the next tick while the thread is busy: %v, want ErrBusy", err)
		}
		runs, err := s.ListRuns(ctx, RunQuery{Owner: "alice", ThreadID: "t1", Limit: 10})
		if err != nil || len(runs) != 1 || runs[0].ID != "r5" {
			t.Fatalf("the thread's runs = %+v, %v; want r5 alone", runs, err)
		}

		if err := s.DeleteCron(ctx, "alice", "stateless"); err != nil {
			t.Fatal(err)
		}
		if err := stateless("r8", "te", tick.Add(2*time.Minute)); err != nil {
			t.Fatalf("a tick of a cron deleted meanwhile: %v, want its run made", err)
		}
	})
}

// Tries of one tick at once (two processes, say, one of which lost the
// answer of its commit while the other tried the tick again) make one
// run between them.
func TestCronTickMadeOnceAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
		if _, err := s.CreateCron(ctx, Cron{ID: "c", Owner: "alice", AssistantID: "asst", Schedule: "* * * * *", Timezone: "UTC", Enabled: true, OnRunCompleted: "delete"}); err != nil {
			t.Fatal(err)
		}
		const tries = 8
		errs := make(chan error, tries)
		var wg sync.WaitGroup
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nr := newRun(fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i), "alice", MultitaskReject)
				nr.CreateThread = true
				nr.CronTick = &CronTick{CronID: "c", Tick: tick}
				_, _, err := s.CreateRun(ctx, nr)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		made := 0
		for err := range errs {
			switch {
			case err == nil:
				made++
			case !errors.Is(err, ErrTickMade):
				t.Errorf("a try of the tick: %v, want ErrTickMade or nothing", err)
			}
		}
		if made != 1 {
			t.Errorf("%d tries of one tick at once made %d runs, want 1", tries, made)
		}
		threads, _, err := s.SearchThreads(ctx, ThreadQuery{Owner: "alice", Limit: 100})
		if err != nil || len(threads) != 1 {
			t.Errorf("threads made = %d (%v), want 1", len(threads), err)
		}
	})
}

// On PostgreSQL, two tries of one tick in transactions side by side (two
// committers, or two processes) make one run: the second waits on the
// cron's row for the first's answer, and reads it.
func TestCronTickMadeOnceSideBySide(t *testing.T) {
	ctx := context.Background()
	s := openPostgres(t, pgtest.NewDatabase(t, "weft_records_"))
	pool := s.db.(pgDB).pool
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	if _, err := s.CreateCron(ctx, Cron{ID: "c", Owner: "alice", AssistantID: "asst", Schedule: "* * * * *", Timezone: "UTC", Enabled: true, OnRunCompleted: "delete"}); err != nil {
		t.Fatal(err)
	}
	// Two new threads whose writes two committers make.
	threads := []string{"t0"}
	for i := 1; len(threads) < 2; i++ {
		if id := fmt.Sprintf("t%d", i); s.batch.lane(id) != s.batch.lane(threads[0]) {
			threads = append(threads, id)
		}
	}
	// The cron's row held, so that both tries are under way at once.
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }() // released below; this in case of failure
	if _, err := holder.Exec(ctx, `SELECT 1 FROM weft_server_crons WHERE cron_id = 'c' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, len(threads))
	for i, th := range threads {
		go func() {
			nr := newRun(fmt.Sprintf("r%d", i), th, "alice", MultitaskReject)
			nr.CreateThread = true
			nr.CronTick = &CronTick{CronID: "c", Tick: tick}
			_, _, err := s.CreateRun(ctx, nr)
			errs <- err
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= len(threads) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d tries wait on the cron's row after 30 s", waiting, len(threads))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	made := 0
	for range threads {
		switch err := <-errs; {
		case err == nil:
			made++
		case !errors.Is(err, ErrTickMade):
			t.Errorf("a try of the tick: %v, want ErrTickMade or nothing", err)
		}
	}
	if made != 1 {
		t.Errorf("two tries of one tick side by side made %d runs, want 1", made)
	}
}

// TestMigrateToCronTickMade migrates a database at schema version 4, the
// version before a tick's run was recorded with its cron, with a cron in
// it: the cron's tick makes its run, once.
func TestMigrateToCronTickMade(t *testing.T) {
	ctx := context.Background()
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	migrateFrom(t, 4, func(t *testing.T, old *Store) {
		// Written as a build at version 4 wrote it: without made_tick.
		if err := old.write(ctx, "", func(tx Tx) error {
			_, err := old.exec(ctx, tx, `INSERT INTO weft_server_crons (cron_id, owner, assistant_id, thread_id, schedule, timezone, payload, metadata, enabled, end_time, next_run_date, on_run_completed, created_at, updated_at, retry_tick, retry_attempts) VALUES ('c1', 'alice', 'asst', NULL, '1 * * * *', 'UTC', '{}', '{}', 1, NULL, $1, 'keep', 0, 0, NULL, 0)`, micros(tick))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}, func(t *testing.T, cur *Store) {
		for i, want := range []error{nil, ErrTickMade} {
			nr := newRun(fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i), "alice", MultitaskReject)
			nr.CreateThread = true
			nr.CronTick = &CronTick{CronID: "c1", Tick: tick}
			if _, _, err := cur.CreateRun(ctx, nr); !errors.Is(err, want) {
				t.Fatalf("try %d of the migrated cron's tick: %v, want %v", i+1, err, want)
			}
		}
	})
}
