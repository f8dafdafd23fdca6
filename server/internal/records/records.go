// Package records keeps the server's own records: threads, runs,
// assistants and their versions, and the server processes alive, in the
// same database as the checkpoints (SQLite or PostgreSQL). One SQL core,
// written once over a small database interface (DB, Tx) and a Dialect,
// serves both; the conformance suite in records_test.go runs on each.
//
// Every record belongs to an owner, the user that made it ("" when
// authentication is off). Reads and writes name the owner, and another
// owner's record reads as missing: ErrNotFound, never its contents.
// Assistants with the owner "" (the system assistants of the served graphs)
// are readable by every user and writable only by the user "".
//
// Every call is bounded: it runs under the caller's context and at most
// Options.Timeout more (DefaultTimeout). Stored JSON is decoded without
// panics (FuzzDecode*).
package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotFound means the record does not exist, or belongs to another
	// owner.
	ErrNotFound = errors.New("records: not found")
	// ErrConflict means a record with that id already exists.
	ErrConflict = errors.New("records: already exists")
	// ErrBusy means the thread has a run pending or running and the new
	// run's multitask strategy is reject.
	ErrBusy = errors.New("records: thread is busy")
	// ErrOtherGraph means a run's thread holds the state of another graph.
	ErrOtherGraph = errors.New("records: the thread belongs to another graph")
	// ErrCorrupt means a stored row cannot be decoded.
	ErrCorrupt = errors.New("records: stored row cannot be decoded")
	// ErrStaleAssistant means a run was not created because its
	// assistant is no longer the version it was made from (it was
	// changed or deleted meanwhile, maybe by another process): read the
	// assistant again.
	ErrStaleAssistant = errors.New("records: the assistant changed")
	// ErrTickMade means a cron's run was not created because the cron's
	// tick it was for already made its run (NewRun.CronTick): an earlier
	// try committed, though its caller may not have heard so.
	ErrTickMade = errors.New("records: the cron's tick already made its run")
)

// Thread statuses.
const (
	ThreadIdle        = "idle"
	ThreadBusy        = "busy"
	ThreadInterrupted = "interrupted"
	ThreadError       = "error"
)

// Run statuses.
const (
	RunPending     = "pending"
	RunRunning     = "running"
	RunSuccess     = "success"
	RunError       = "error"
	RunTimeout     = "timeout"
	RunInterrupted = "interrupted"
)

// Multitask strategies: what a new run does on a thread that has a run
// pending or running.
const (
	MultitaskReject    = "reject"
	MultitaskInterrupt = "interrupt"
	MultitaskRollback  = "rollback"
	MultitaskEnqueue   = "enqueue"
)

// Thread is a conversation: the checkpoints under its id, and this record
// of its status and last values.
type Thread struct {
	ID        string
	Owner     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Metadata and Config are JSON objects.
	Metadata json.RawMessage
	Config   json.RawMessage
	Status   string
	// Values is the state after the last run (a JSON object), and
	// Interrupts its pending interrupts by task id; nil before any run.
	Values     json.RawMessage
	Interrupts json.RawMessage
}

// Run is one execution of a graph on a thread.
type Run struct {
	ID          string
	ThreadID    string
	Owner       string
	AssistantID string
	// Metadata and Kwargs are JSON objects; Kwargs holds what the run was
	// asked to do (input, command, config, stream modes...).
	Metadata          json.RawMessage
	Kwargs            json.RawMessage
	Status            string
	MultitaskStrategy string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	// Attempt counts executions: 1, and one more each time the run is
	// taken over after its process died.
	Attempt int
	// Worker is the server process that executes the run.
	Worker string
}

// Assistant is a graph with its configuration.
type Assistant struct {
	ID          string
	Owner       string
	GraphID     string
	Name        string
	Description *string
	// Config, Context and Metadata are JSON (Config and Metadata objects).
	Config    json.RawMessage
	Context   json.RawMessage
	Metadata  json.RawMessage
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DefaultTimeout bounds each call unless Options.Timeout says otherwise.
const DefaultTimeout = 10 * time.Second

// Options tune a Store.
type Options struct {
	// Timeout bounds each call (0: DefaultTimeout).
	Timeout time.Duration
}

// Store keeps the records in a SQL database.
type Store struct {
	db      DB
	d       *Dialect
	batch   *batcher
	timeout time.Duration
	// now is the clock, replaceable in tests.
	now func() time.Time
}

func newStore(db DB, d *Dialect, opts Options, committers int) *Store {
	s := &Store{db: db, d: d, timeout: opts.Timeout, now: func() time.Time { return time.Now().UTC() }}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	s.batch = newBatcher(db, committers, s.timeout)
	return s
}

// Close stops the store's committers; writes still queued, and writes
// after it, fail with ErrClosed. It does not close the database, which
// the caller opened. Closing twice is closing once.
func (s *Store) Close() error {
	s.batch.close()
	return nil
}

// bound gives a call its deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// write runs fn, a write of thread threadID's rows (its thread's and its
// runs'; "" for a write of no one thread), in a bounded write transaction,
// shared with the other writes queued at the moment (see batch.go).
func (s *Store) write(ctx context.Context, threadID string, fn func(Tx) error) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.batch.do(ctx, threadID, fn)
}

// read runs fn in a bounded read transaction.
func (s *Store) read(ctx context.Context, fn func(Tx) error) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.db.Read(ctx, fn)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(n int64) time.Time { return time.UnixMicro(n).UTC() }

// object returns raw, or {} when it is empty or null.
func object(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// nullable returns raw as a value for a nullable JSON column.
func nullable(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// checkJSON reports a stored JSON column that is not valid JSON.
func checkJSON(table, id, col string, raw []byte) error {
	if raw == nil || json.Valid(raw) {
		return nil
	}
	return fmt.Errorf("%w: %s %s: column %s is not JSON", ErrCorrupt, table, id, col)
}
