package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

const runCols = `run_id, thread_id, owner, assistant_id, metadata, kwargs, status, multitask_strategy, created_at, updated_at, attempt, worker`

func scanRun(r Rows) (Run, error) {
	var run Run
	var created, updated, attempt int64
	var meta, kwargs string
	if err := r.Scan(&run.ID, &run.ThreadID, &run.Owner, &run.AssistantID, &meta, &kwargs, &run.Status, &run.MultitaskStrategy, &created, &updated, &attempt, &run.Worker); err != nil {
		return Run{}, err
	}
	run.Metadata, run.Kwargs = json.RawMessage(meta), json.RawMessage(kwargs)
	run.CreatedAt, run.UpdatedAt, run.Attempt = fromMicros(created), fromMicros(updated), int(attempt)
	for _, c := range []struct {
		name string
		raw  []byte
	}{{"metadata", run.Metadata}, {"kwargs", run.Kwargs}} {
		if err := checkJSON("run", run.ID, c.name, c.raw); err != nil {
			return Run{}, err
		}
	}
	return run, nil
}

// NewRun is a run to create with CreateRun.
type NewRun struct {
	// Run is the run: its ID, ThreadID, Owner, AssistantID, Metadata (the
	// request's), Kwargs, MultitaskStrategy and Worker. Its status is
	// pending, its attempt 1.
	Run Run
	// GraphID and AssistantMetadata are the assistant's: the thread's
	// metadata gains graph_id and assistant_id, and the run's metadata is
	// the assistant's, the thread's and the request's, in that order.
	GraphID           string
	AssistantMetadata json.RawMessage
	// Assistant, when not nil, is the state of the assistant GraphID and
	// AssistantMetadata were read from: the run is created only if the
	// assistant Run.AssistantID is still visible to Run.Owner at that
	// version (else ErrStaleAssistant, and nothing is written). A caller
	// that keeps assistants in memory checks them so, in the run's own
	// transaction, rather than reading the assistant before each run.
	Assistant *AssistantStamp
	// ThreadConfig is merged into the thread's config: its keys replace
	// the thread's, except "configurable", whose keys are merged.
	ThreadConfig json.RawMessage
	// CreateThread creates the thread when it does not exist (the API's
	// if_not_exists: "create", and stateless runs), with ThreadMetadata.
	CreateThread   bool
	ThreadMetadata json.RawMessage
	// Lease, when not nil, asks for the thread's checkpoint lease in the
	// same transaction, when the thread has no run pending or running:
	// the run is then to start at once, and its creation and its
	// thread's lease commit together or not at all. CreateRun sets
	// Lease.Taken. Only for a Store that shares its database with the
	// checkpoint store (OpenSQLite, OpenPostgres), as Finish.LeaseOwner.
	Lease *LeaseRequest
	// CronTick, when not nil, names the cron's tick the run is made for:
	// the run is created only if that tick has not made its run yet (else
	// ErrTickMade, and nothing is written), and the cron then records
	// that it has, in the same transaction. A tick tried again after an
	// answer lost (the run's write committed, its caller heard an error)
	// so makes its run once, its thread too, even when the run, or its
	// thread, was deleted meanwhile. A cron deleted meanwhile records
	// nothing: its run is made.
	CronTick *CronTick
}

// CronTick names a cron's tick: the cron's id, and the time it was due.
type CronTick struct {
	CronID string
	Tick   time.Time
}

// tickMade reports whether the cron's tick c (nil: none) made its run
// already, locking the cron's row (PostgreSQL) until the transaction
// ends: a try of the tick made meanwhile by another process waits for
// this one's answer, and reads it.
func (s *Store) tickMade(ctx context.Context, tx Tx, c *CronTick) (bool, error) {
	if c == nil {
		return false, nil
	}
	made := false
	err := s.query(ctx, tx, `SELECT made_tick FROM weft_server_crons WHERE cron_id = $1`+s.d.ForUpdate, []any{c.CronID}, func(r Rows) error {
		var tick sql.NullInt64
		if err := r.Scan(&tick); err != nil {
			return err
		}
		made = tick.Valid && tick.Int64 == micros(c.Tick)
		return nil
	})
	return made, err
}

// LeaseRequest is the checkpoint lease CreateRun takes for a run's
// thread: weft_thread_leases, the checkpoint store's table, with the
// conditional upsert of the store's own AcquireLease (the row is taken
// only when it is missing or expired), so that checkpoint.Saver.AdoptLease
// can hold and renew it afterwards.
type LeaseRequest struct {
	// Owner is the lease's owner token, RunID its run id (informational).
	Owner, RunID string
	// TTL is how long the lease lasts from the write without renewal.
	TTL time.Duration
	// Taken is set by CreateRun: the run was created and holds the lease.
	// It is false when the thread had runs pending or running, or another
	// owner's unexpired lease (then the run waits for the lease as any
	// other does), and when CreateRun failed.
	Taken bool
}

// AssistantStamp names one state of an assistant: its version and when
// that version became current (a version made current again by
// SetLatestVersion is another state).
type AssistantStamp struct {
	Version   int
	UpdatedAt time.Time
}

// Stamp is the assistant's current state, for NewRun.Assistant.
func (a Assistant) Stamp() *AssistantStamp {
	return &AssistantStamp{Version: a.Version, UpdatedAt: a.UpdatedAt}
}

// threadAndActiveRunsSQL reads a thread ($1, of owner $2) and the ids of
// its runs pending or running, oldest first.
const threadAndActiveRunsSQL = `SELECT ` + threadColsOf + `, r.run_id FROM weft_server_threads t
LEFT JOIN weft_server_runs r ON r.thread_id = t.thread_id AND r.status IN ('pending', 'running')
WHERE t.thread_id = $1 AND t.owner = $2 ORDER BY r.created_at, r.run_id`

// CreateRun stores a new pending run on its thread, in one transaction:
// the thread must be the owner's (else ErrNotFound, unless CreateThread),
// and when it has runs pending or running and the strategy is reject, the
// run is not created and the error wraps ErrBusy. A thread that ran
// another graph is ErrOtherGraph. The thread becomes busy.
// It returns the run and the ids of the thread's runs that were pending
// or running before it, oldest first, for the interrupt and rollback
// strategies.
//
// It costs three statements: the thread and its runs pending or running
// (one join), the run's insert (which checks the assistant, when asked),
// and the thread's update (or insert); and the lease's upsert when
// nr.Lease asks for it and the thread has no run pending or running.
func (s *Store) CreateRun(ctx context.Context, nr NewRun) (Run, []string, error) {
	run := nr.Run
	now := s.now()
	run.Status, run.Attempt, run.CreatedAt, run.UpdatedAt = RunPending, 1, now, now
	run.Kwargs = object(run.Kwargs)
	if nr.Lease != nil {
		nr.Lease.Taken = false
	}
	var inflight []string
	leased := false
	err := s.write(ctx, run.ThreadID, func(tx Tx) error {
		// A batch that fails runs its writes again: nothing of a try
		// before counts.
		inflight, leased = nil, false
		var t Thread
		found := false
		// Locks the thread's row (PostgreSQL), not its runs': the
		// thread's lock orders the writes of its runs.
		lock := ""
		if s.d.ForUpdate != "" {
			lock = s.d.ForUpdate + " OF t"
		}
		err := s.query(ctx, tx, threadAndActiveRunsSQL+lock, []any{run.ThreadID, run.Owner}, func(r Rows) error {
			var active sql.NullString
			row, err := scanThreadAnd(r, &active)
			if err != nil {
				return err
			}
			if !found {
				t, found = row, true
			}
			if active.Valid {
				inflight = append(inflight, active.String)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// After the thread's lock, as DeleteThread takes them: thread,
		// then its crons.
		if made, err := s.tickMade(ctx, tx, nr.CronTick); err != nil || made {
			if made {
				err = fmt.Errorf("%w: cron %s, tick %s", ErrTickMade, nr.CronTick.CronID, nr.CronTick.Tick.Format(time.RFC3339Nano))
			}
			return err
		}
		if !found {
			if !nr.CreateThread {
				return fmt.Errorf("%w: thread %s", ErrNotFound, run.ThreadID)
			}
			t = Thread{ID: run.ThreadID, Owner: run.Owner, CreatedAt: now, Metadata: object(nr.ThreadMetadata), Config: json.RawMessage("{}")}
		}
		if found {
			var owned struct {
				GraphID string `json:"graph_id"`
			}
			_ = json.Unmarshal(t.Metadata, &owned)
			if owned.GraphID != "" && nr.GraphID != "" && owned.GraphID != nr.GraphID {
				return fmt.Errorf("%w: thread %s holds the state of graph %q, not %q", ErrOtherGraph, run.ThreadID, owned.GraphID, nr.GraphID)
			}
			if len(inflight) > 0 && run.MultitaskStrategy == MultitaskReject {
				return fmt.Errorf("%w: thread %s has %d run(s) pending or running", ErrBusy, run.ThreadID, len(inflight))
			}
		}
		ids, _ := json.Marshal(map[string]string{"graph_id": nr.GraphID, "assistant_id": run.AssistantID})
		if t.Metadata, err = mergeObjects(t.Metadata, ids); err != nil {
			return err
		}
		if t.Config, err = mergeConfig(t.Config, nr.ThreadConfig); err != nil {
			return err
		}
		if run.Metadata, err = mergeObjects(object(nr.AssistantMetadata), t.Metadata); err != nil {
			return err
		}
		if run.Metadata, err = mergeObjects(run.Metadata, nr.Run.Metadata); err != nil {
			return err
		}
		// The run first: when its assistant changed, nothing is written.
		vals := []any{run.ID, run.ThreadID, run.Owner, run.AssistantID, string(run.Metadata), string(run.Kwargs), run.Status, run.MultitaskStrategy,
			micros(now), micros(now), int64(run.Attempt), run.Worker}
		insert := `INSERT INTO weft_server_runs (` + runCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
		check := ""
		if a := nr.Assistant; a != nil {
			check = `
WHERE EXISTS (SELECT 1 FROM weft_server_assistants WHERE assistant_id = $4 AND (owner = $3 OR owner = '') AND version = $13 AND updated_at = $14)`
			insert = `INSERT INTO weft_server_runs (` + runCols + `) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12` + check
			vals = append(vals, int64(a.Version), micros(a.UpdatedAt))
		}
		// Only a run that is to start at once takes its thread: one
		// queued behind others would hold it from them, or jump ahead
		// of those another process executes.
		lease := nr.Lease
		if len(inflight) > 0 {
			lease = nil
		}
		var n int64
		if lease != nil && s.d.WritableCTE {
			n, leased, err = s.insertRunTakingLease(ctx, tx, insert, check, vals, lease)
		} else {
			n, err = s.exec(ctx, tx, insert, vals...)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: assistant %s is no longer version %d", ErrStaleAssistant, run.AssistantID, nr.Assistant.Version)
		}
		if lease != nil && !s.d.WritableCTE {
			if leased, err = s.takeLease(ctx, tx, run.ThreadID, lease); err != nil {
				return err
			}
		}
		if c := nr.CronTick; c != nil {
			if _, err := s.exec(ctx, tx, `UPDATE weft_server_crons SET made_tick = $1 WHERE cron_id = $2`, micros(c.Tick), c.CronID); err != nil {
				return err
			}
		}
		if found {
			return s.execLast(ctx, tx, `UPDATE weft_server_threads SET status = $1, metadata = $2, config = $3, updated_at = $4 WHERE thread_id = $5`,
				ThreadBusy, string(t.Metadata), string(t.Config), micros(now), run.ThreadID)
		}
		return s.execLast(ctx, tx, `INSERT INTO weft_server_threads (`+threadCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, NULL)`,
			t.ID, t.Owner, micros(now), micros(now), string(t.Metadata), string(t.Config), ThreadBusy)
	})
	if err != nil {
		return Run{}, inflight, err
	}
	if nr.Lease != nil {
		nr.Lease.Taken = leased
	}
	return run, inflight, nil
}

// takeLeaseSQL takes a thread's checkpoint lease ($1) for owner $2 (run
// $3, for $4 ns from now, the time being %[1]s) when it is free, expired or
// already $2's: checkpoint/internal/sqlstore's AcquireLease, in a records
// write. The two must stay the same statement.
const takeLeaseSQL = leaseInsertSQL + `
VALUES ($1, $2, $3, %[1]s, %[1]s + $4, 0)` + leaseConflictSQL

// leaseInsertSQL and leaseConflictSQL are the two ends of takeLeaseSQL,
// around its row.
const (
	leaseInsertSQL   = `INSERT INTO weft_thread_leases (thread_id, owner, run_id, acquired_at, expires_at, cancel_requested)`
	leaseConflictSQL = `
ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, run_id = excluded.run_id,
acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, cancel_requested = 0
WHERE weft_thread_leases.expires_at <= excluded.acquired_at OR weft_thread_leases.owner = excluded.owner`
)

// insertRunTakingLease runs a run's insert (insert, its arguments vals:
// the thread is $2) with takeLeaseSQL as a data-modifying WITH of it,
// under the insert's own condition (check, the assistant's: a run not
// inserted takes no lease), in one statement: one round trip instead of
// two (PostgreSQL). It returns the rows inserted and whether the lease
// was taken.
func (s *Store) insertRunTakingLease(ctx context.Context, tx Tx, insert, check string, vals []any, l *LeaseRequest) (int64, bool, error) {
	a := &args{vs: vals}
	owner, runID, ttl := a.add(l.Owner), a.add(l.RunID), a.add(l.TTL.Nanoseconds())
	now := s.d.LeaseNow
	if now == "" {
		now = a.add(time.Now().UnixNano())
	}
	q := `WITH lease AS (` + leaseInsertSQL + `
SELECT $2, ` + owner + `, ` + runID + `, ` + now + `, ` + now + ` + ` + ttl + `, 0` + check + leaseConflictSQL + `
RETURNING 1)
` + insert + `
RETURNING (SELECT count(*) FROM lease)`
	if w, ok := tx.(*watchedTx); ok {
		// A query, yet it writes: whatever it answers, a failure of
		// this write must roll the batch back (batcher.together).
		w.changed = true
	}
	var taken int64
	found, err := s.queryRow(ctx, tx, q, a.vs, &taken)
	if err != nil || !found {
		return 0, false, err
	}
	return 1, taken > 0, nil
}

// takeLease runs takeLeaseSQL and reports whether the lease was taken.
// Its time is the checkpoint store's lease clock (Dialect.LeaseNow), not
// the records' own (s.now), which tests set back.
func (s *Store) takeLease(ctx context.Context, tx Tx, threadID string, l *LeaseRequest) (bool, error) {
	args := []any{threadID, l.Owner, l.RunID, l.TTL.Nanoseconds()}
	if s.d.LeaseNow == "" {
		args = append(args, time.Now().UnixNano())
	}
	n, err := s.exec(ctx, tx, s.d.takeLease(), args...)
	return n > 0, err
}

// GetRun returns owner's run runID of thread threadID.
func (s *Store) GetRun(ctx context.Context, owner, threadID, runID string) (Run, error) {
	var run Run
	err := s.read(ctx, func(tx Tx) error {
		found, err := s.getRun(ctx, tx, owner, threadID, runID, &run)
		if err == nil && !found {
			err = fmt.Errorf("%w: run %s", ErrNotFound, runID)
		}
		return err
	})
	return run, err
}

// FindRun returns owner's run runID, whatever its thread: a stateless
// run's stream is joined by its id alone (GET /runs/{run_id}/stream).
func (s *Store) FindRun(ctx context.Context, owner, runID string) (Run, error) {
	var run Run
	err := s.read(ctx, func(tx Tx) (err error) {
		run, err = getOne(ctx, s, tx, "run", runID, `SELECT `+runCols+` FROM weft_server_runs WHERE run_id = $1 AND owner = $2`, []any{runID, owner}, scanRun)
		return err
	})
	return run, err
}

func (s *Store) getRun(ctx context.Context, tx Tx, owner, threadID, runID string, out *Run) (bool, error) {
	run, found, err := queryOne(ctx, s, tx, `SELECT `+runCols+` FROM weft_server_runs WHERE run_id = $1 AND thread_id = $2 AND owner = $3`, []any{runID, threadID, owner}, scanRun)
	if found {
		*out = run
	}
	return found, err
}

// RunQuery narrows ListRuns.
type RunQuery struct {
	Owner, ThreadID string
	// Status keeps runs with this status; empty keeps all.
	Status        string
	Limit, Offset int
}

// ListRuns returns a page of the runs of owner's thread, newest first; the
// thread must exist.
func (s *Store) ListRuns(ctx context.Context, q RunQuery) ([]Run, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	var out []Run
	err := s.read(ctx, func(tx Tx) error {
		out = []Run{}
		if _, err := s.getThread(ctx, tx, q.Owner, q.ThreadID); err != nil {
			return err
		}
		a := &args{}
		where := "thread_id = " + a.add(q.ThreadID) + " AND owner = " + a.add(q.Owner)
		if q.Status != "" {
			where += " AND status = " + a.add(q.Status)
		}
		query := `SELECT ` + runCols + ` FROM weft_server_runs WHERE ` + where + ` ORDER BY created_at DESC, run_id DESC LIMIT ` + a.add(limit) + ` OFFSET ` + a.add(max(q.Offset, 0))
		return s.query(ctx, tx, query, a.vs, func(r Rows) error {
			run, err := scanRun(r)
			out = append(out, run)
			return err
		})
	})
	return out, err
}

// setRunStatusSQL sets the status ($1) and updated_at ($2) of run $3 when
// it is still pending or running with worker $4.
const setRunStatusSQL = `UPDATE weft_server_runs SET status = $1, updated_at = $2 WHERE run_id = $3 AND worker = $4 AND status IN ('pending', 'running')`

// MarkRunning records that the worker started run runID of thread
// threadID: its status
// becomes running. It reports false when the run is no longer pending
// with this worker (cancelled, deleted, or taken over).
func (s *Store) MarkRunning(ctx context.Context, threadID, runID, worker string) (bool, error) {
	var n int64
	err := s.write(ctx, threadID, func(tx Tx) (err error) {
		n, err = s.exec(ctx, tx, setRunStatusSQL, RunRunning, micros(s.now()), runID, worker)
		return err
	})
	return n == 1, err
}

// Finish is the end of a run, for FinishRun.
type Finish struct {
	RunID, ThreadID, Worker string
	// Status is the run's final status.
	Status string
	// ThreadStatus is the thread's status unless it has other runs pending
	// or running (then it stays busy).
	ThreadStatus string
	// Values and Interrupts are the thread's state after the run; nil
	// leaves the stored ones.
	Values, Interrupts json.RawMessage
	// LeaseOwner, when set, gives the thread's checkpoint lease up in the
	// same transaction: the row of the thread and this owner in
	// weft_thread_leases, the table the checkpoint store keeps leases in
	// (checkpoint.Lease.ReleaseWith). Only for a Store that shares its
	// database with that checkpoint store (OpenSQLite, OpenPostgres).
	LeaseOwner string
}

// FinishRun records a run's end and its thread's status and values, in
// one transaction. A run that was cancelled or taken over by another
// worker meanwhile keeps what was recorded for it; the thread is updated
// all the same. It reports whether the run's status was written.
func (s *Store) FinishRun(ctx context.Context, f Finish) (bool, error) {
	var n int64
	err := s.write(ctx, f.ThreadID, func(tx Tx) (err error) {
		now := micros(s.now())
		n, err = s.exec(ctx, tx, setRunStatusSQL, f.Status, now, f.RunID, f.Worker)
		if err != nil {
			return err
		}
		if err := s.settleThread(ctx, tx, f.ThreadID, f.RunID, f.ThreadStatus, f.Values, f.Interrupts, now); err != nil {
			return err
		}
		if f.LeaseOwner == "" {
			return nil
		}
		// After the thread's update, which may be held back as well (it
		// was the write's last statement): both go with the next write
		// or the COMMIT.
		return s.execLast(ctx, tx, releaseLeaseSQL, f.ThreadID, f.LeaseOwner)
	})
	return n == 1, err
}

// releaseLeaseSQL deletes a thread's checkpoint lease held by an owner
// (checkpoint/internal/sqlstore's ReleaseLease, in a records write).
const releaseLeaseSQL = `DELETE FROM weft_thread_leases WHERE thread_id = $1 AND owner = $2`

// settledStatus sets the status of thread $1 after run $2 ended: busy
// while other runs are pending or running, else $3.
const settledStatus = `status = CASE WHEN EXISTS (SELECT 1 FROM weft_server_runs WHERE thread_id = $1 AND run_id <> $2 AND status IN ('pending', 'running')) THEN 'busy' ELSE $3 END`

// settleThread sets a thread's status after a run ended: busy while other
// runs than runID are pending or running, else status. One statement: the
// count of the other runs is the update's own.
func (s *Store) settleThread(ctx context.Context, tx Tx, threadID, runID, status string, values, interrupts json.RawMessage, now int64) error {
	if values != nil {
		return s.execLast(ctx, tx, `UPDATE weft_server_threads SET `+settledStatus+`, state_values = $4, interrupts = $5, updated_at = $6 WHERE thread_id = $1`,
			threadID, runID, status, string(values), nullable(interrupts), now)
	}
	return s.execLast(ctx, tx, `UPDATE weft_server_threads SET `+settledStatus+`, updated_at = $4 WHERE thread_id = $1`, threadID, runID, status, now)
}

// CancelPending marks owner's pending runs runIDs of a thread as
// interrupted (or, with remove, deletes them: a rollback), and returns
// those it changed; runs no longer pending are left alone. The thread's
// status is recomputed.
func (s *Store) CancelPending(ctx context.Context, owner, threadID string, runIDs []string, remove bool) ([]string, error) {
	var done []string
	err := s.write(ctx, threadID, func(tx Tx) error {
		done = nil
		now := micros(s.now())
		for _, id := range runIDs {
			var n int64
			var err error
			if remove {
				n, err = s.exec(ctx, tx, `DELETE FROM weft_server_runs WHERE run_id = $1 AND thread_id = $2 AND owner = $3 AND status = 'pending'`, id, threadID, owner)
			} else {
				n, err = s.exec(ctx, tx, `UPDATE weft_server_runs SET status = $1, updated_at = $2 WHERE run_id = $3 AND thread_id = $4 AND owner = $5 AND status = 'pending'`,
					RunInterrupted, now, id, threadID, owner)
			}
			if err != nil {
				return err
			}
			if n == 1 {
				done = append(done, id)
			}
		}
		if len(done) == 0 {
			return nil
		}
		var status string
		if _, err := s.queryRow(ctx, tx, `SELECT status FROM weft_server_threads WHERE thread_id = $1`, []any{threadID}, &status); err != nil {
			return err
		}
		if status == ThreadBusy {
			status = ThreadIdle
		}
		return s.settleThread(ctx, tx, threadID, "", status, nil, nil, now)
	})
	return done, err
}

// DeleteRun deletes owner's run; a run still pending or running cannot be
// deleted (ErrBusy).
func (s *Store) DeleteRun(ctx context.Context, owner, threadID, runID string) error {
	return s.write(ctx, threadID, func(tx Tx) error {
		var run Run
		found, err := s.getRun(ctx, tx, owner, threadID, runID, &run)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: run %s", ErrNotFound, runID)
		}
		if run.Status == RunPending || run.Status == RunRunning {
			return fmt.Errorf("%w: run %s is %s; cancel it first", ErrBusy, runID, run.Status)
		}
		_, err = s.exec(ctx, tx, `DELETE FROM weft_server_runs WHERE run_id = $1`, runID)
		return err
	})
}

// RemoveRun deletes run runID of thread threadID whatever its status: a
// rollback's end.
func (s *Store) RemoveRun(ctx context.Context, threadID, runID string) error {
	return s.write(ctx, threadID, func(tx Tx) error {
		_, err := s.exec(ctx, tx, `DELETE FROM weft_server_runs WHERE run_id = $1`, runID)
		return err
	})
}

// ActiveRuns returns the runs of a thread that are pending or running,
// oldest first.
func (s *Store) ActiveRuns(ctx context.Context, threadID string) ([]Run, error) {
	var out []Run
	err := s.read(ctx, func(tx Tx) error {
		out = nil
		return s.query(ctx, tx, `SELECT `+runCols+` FROM weft_server_runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY created_at, run_id`, []any{threadID}, func(r Rows) error {
			run, err := scanRun(r)
			out = append(out, run)
			return err
		})
	})
	return out, err
}

// ---------------------------------------------------------------- workers

// Heartbeat records that worker is alive.
func (s *Store) Heartbeat(ctx context.Context, worker string) error {
	return s.write(ctx, "", func(tx Tx) error {
		now := micros(s.now())
		_, err := s.exec(ctx, tx, `INSERT INTO weft_server_workers (worker_id, started_at, heartbeat_at) VALUES ($1, $2, $2)
ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`, worker, now)
		return err
	})
}

// RemoveWorker forgets worker: its runs pending or running are at once
// the others' to take over.
func (s *Store) RemoveWorker(ctx context.Context, worker string) error {
	return s.write(ctx, "", func(tx Tx) error {
		_, err := s.exec(ctx, tx, `DELETE FROM weft_server_workers WHERE worker_id = $1`, worker)
		return err
	})
}

// ClaimOrphans gives worker up to limit runs, oldest first, that are
// pending or running for a worker that is not alive (no heartbeat within
// ttl): a process that crashed or shut down. Each run's worker becomes
// worker, and a run that was running counts one more attempt. Several
// processes may claim at once: each run goes to one of them.
func (s *Store) ClaimOrphans(ctx context.Context, worker string, ttl time.Duration, limit int) ([]Run, error) {
	var out []Run
	err := s.write(ctx, "", func(tx Tx) error {
		out = nil
		now := s.now()
		// attempt > 0 holds for every run: it names the partial index
		// weft_server_runs_orphans (schemaV2), which only this query uses.
		err := s.query(ctx, tx, `SELECT `+runCols+` FROM weft_server_runs WHERE status IN ('pending', 'running') AND attempt > 0 AND worker <> $1
AND worker NOT IN (SELECT worker_id FROM weft_server_workers WHERE heartbeat_at >= $2)
ORDER BY created_at, run_id LIMIT $3`+s.d.SkipLocked, []any{worker, micros(now.Add(-ttl)), limit}, func(r Rows) error {
			run, err := scanRun(r)
			out = append(out, run)
			return err
		})
		if err != nil {
			return err
		}
		for i := range out {
			if out[i].Status == RunRunning {
				out[i].Attempt++
			}
			out[i].Worker = worker
			if _, err := s.exec(ctx, tx, `UPDATE weft_server_runs SET worker = $1, attempt = $2, updated_at = $3 WHERE run_id = $4`,
				worker, int64(out[i].Attempt), micros(now), out[i].ID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// ReleaseRuns gives up worker's pending and running runs among ids,
// setting them pending for another worker (or this one's next start) to
// take over: what a shutdown does with the runs it did not finish. A run
// that was running counts one more attempt.
func (s *Store) ReleaseRuns(ctx context.Context, worker string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.write(ctx, "", func(tx Tx) error {
		a := &args{}
		ps := make([]string, len(ids))
		for i, id := range ids {
			ps[i] = a.add(id)
		}
		_, err := s.exec(ctx, tx, `UPDATE weft_server_runs SET attempt = attempt + CASE WHEN status = 'running' THEN 1 ELSE 0 END, status = 'pending', updated_at = `+a.add(micros(s.now()))+
			` WHERE worker = `+a.add(worker)+` AND status IN ('pending', 'running') AND run_id IN (`+strings.Join(ps, ", ")+`)`, a.vs...)
		return err
	})
}
