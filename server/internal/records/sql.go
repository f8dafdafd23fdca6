package records

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/internal/sqldb"
)

// DB is what a backend provides: transactions over its client library.
type DB interface {
	// Write runs fn in a transaction that may write; fn's error rolls it
	// back.
	Write(ctx context.Context, fn func(Tx) error) error
	// Read runs fn in a transaction that sees one consistent snapshot.
	Read(ctx context.Context, fn func(Tx) error) error
}

// Tx runs statements inside a transaction. Queries use $1, $2... for
// arguments; the Dialect rewrites them where the database wants another
// form.
type Tx = sqldb.Tx

// Rows is the result of a query.
type Rows = sqldb.Rows

// Dialect is what differs between the SQL databases.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Migrations are the schema versions, in order.
	Migrations [][]string
	// Numbered rewrites $N placeholders as ?N (SQLite).
	Numbered bool
	// ForUpdate locks the rows a SELECT reads until the transaction ends
	// (" FOR UPDATE"); empty where write transactions exclude each other
	// already (SQLite).
	ForUpdate string
	// SkipLocked is ForUpdate that passes over rows another transaction
	// holds (" FOR UPDATE SKIP LOCKED"), so that several processes claim
	// different rows at once.
	SkipLocked string
	// Contains returns an SQL condition that the JSON object in column col
	// contains filter: every key of filter is in it, with an equal value
	// (objects compared key by key the same way). arg adds an argument
	// and returns its placeholder.
	Contains func(col string, filter map[string]any, arg func(any) string) (string, error)
	// LeaseNow is the SQL of the current time in Unix nanoseconds by the
	// clock the checkpoint store keeps its thread leases with (the
	// server's, in PostgreSQL: the same expression as the checkpoint
	// dialect's Now); empty means this process's clock, passed as an
	// argument, as the checkpoint store does in SQLite.
	LeaseNow string
	// WritableCTE says a statement may write in its WITH clause
	// (PostgreSQL): a run's insert then takes its thread's lease in the
	// same statement.
	WritableCTE bool

	// rewritten keeps q's rewrites by query (most queries are constants,
	// run for every run), up to maxRewritten of them; kept counts them.
	rewritten sync.Map
	kept      atomic.Int32
	// leaseSQL is takeLeaseSQL with this dialect's LeaseNow, made once.
	leaseSQL     string
	leaseSQLOnce sync.Once
}

// takeLease returns takeLeaseSQL with the time LeaseNow, or, without
// one, the argument $5 that carries this process's clock.
func (d *Dialect) takeLease() string {
	d.leaseSQLOnce.Do(func() {
		now := d.LeaseNow
		if now == "" {
			now = "$5"
		}
		d.leaseSQL = fmt.Sprintf(takeLeaseSQL, now)
	})
	return d.leaseSQL
}

// maxRewritten bounds the rewrites a Dialect keeps: queries built from
// filters come in as many shapes as the filters.
const maxRewritten = 512

// args collects a query's arguments and numbers their placeholders.
type args struct{ vs []any }

func (a *args) add(v any) string {
	a.vs = append(a.vs, v)
	return fmt.Sprintf("$%d", len(a.vs))
}

func (d *Dialect) q(query string) string {
	if !d.Numbered {
		return query
	}
	if q, ok := d.rewritten.Load(query); ok {
		return q.(string)
	}
	q := strings.ReplaceAll(query, "$", "?")
	if d.kept.Load() < maxRewritten {
		if _, had := d.rewritten.LoadOrStore(query, q); !had {
			d.kept.Add(1)
		}
	}
	return q
}

// query runs a query and calls scan for each row.
func (s *Store) query(ctx context.Context, tx Tx, query string, args []any, scan func(Rows) error) error {
	rows, err := tx.Query(ctx, s.d.q(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// exec runs a statement.
func (s *Store) exec(ctx context.Context, tx Tx, query string, args ...any) (int64, error) {
	return tx.Exec(ctx, s.d.q(query), args...)
}

// queuer is a Tx that can hold a statement back, to send it with the
// transaction's next statement or its COMMIT (PostgreSQL's pipelined
// transactions).
type queuer interface {
	Queue(query string, args ...any)
}

// execLast runs a write's last statement, whose count of rows nobody
// reads: where the transaction pipelines (PostgreSQL), it goes with the
// batch's next write's first statement, or with COMMIT, and costs no
// round trip of its own. Its failure then fails the statement it went
// with, and the batch (see batcher.commit) finds out whose it was by
// running the writes again: a write whose statements fail is never
// committed, and it gets its own error. Nothing may follow it in the
// write: a failure of the write's own would not undo it.
func (s *Store) execLast(ctx context.Context, tx Tx, query string, args ...any) error {
	inner, w := tx, (*watchedTx)(nil)
	if wt, ok := tx.(*watchedTx); ok {
		inner, w = wt.tx, wt
	}
	if q, ok := inner.(queuer); ok {
		if w != nil {
			// It may change rows.
			w.changed = true
		}
		q.Queue(s.d.q(query), args...)
		return nil
	}
	_, err := s.exec(ctx, tx, query, args...)
	return err
}

// queryOne scans the first row of a query with scan and reports whether
// there was one.
func queryOne[T any](ctx context.Context, s *Store, tx Tx, query string, args []any, scan func(Rows) (T, error)) (T, bool, error) {
	var out T
	found := false
	err := s.query(ctx, tx, query, args, func(r Rows) error {
		if found {
			return nil
		}
		found = true
		var err error
		out, err = scan(r)
		return err
	})
	return out, found, err
}

// getOne is queryOne for a record looked up by its id: no row is
// ErrNotFound, naming kind and id.
func getOne[T any](ctx context.Context, s *Store, tx Tx, kind, id, query string, args []any, scan func(Rows) (T, error)) (T, error) {
	out, found, err := queryOne(ctx, s, tx, query, args, scan)
	if err == nil && !found {
		err = fmt.Errorf("%w: %s %s", ErrNotFound, kind, id)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// countWhere counts the rows of table that where, with its arguments vs,
// selects.
func (s *Store) countWhere(ctx context.Context, tx Tx, table, where string, vs []any) (int, error) {
	n := 0
	_, err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM `+table+` WHERE `+where, vs, &n)
	return n, err
}

// queryRow scans the first row of a query into dest and reports whether
// there was one.
func (s *Store) queryRow(ctx context.Context, tx Tx, query string, args []any, dest ...any) (bool, error) {
	found := false
	err := s.query(ctx, tx, query, args, func(r Rows) error {
		if found {
			return nil
		}
		found = true
		return r.Scan(dest...)
	})
	return found, err
}

const migrationComponent = "server"

const migrationsTable = `CREATE TABLE IF NOT EXISTS weft_schema_migrations (
	component TEXT NOT NULL,
	version INTEGER NOT NULL,
	applied_at TEXT NOT NULL,
	PRIMARY KEY (component, version)
)`

// Migrate brings the schema up to date. The migration runs in one write
// transaction (under an advisory lock in PostgreSQL), so several processes
// may start at once; a process that finds the schema current does nothing.
func (s *Store) Migrate(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.db.Write(ctx, func(tx Tx) error {
		if s.d.Name == "postgres" {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('weft.server.migrate'))`); err != nil {
				return fmt.Errorf("records: locking for migration: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, migrationsTable); err != nil {
			return fmt.Errorf("records: creating weft_schema_migrations: %w", err)
		}
		var cur int64
		if _, err := s.queryRow(ctx, tx, `SELECT COALESCE(MAX(version), 0) FROM weft_schema_migrations WHERE component = $1`, []any{migrationComponent}, &cur); err != nil {
			return fmt.Errorf("records: reading the schema version: %w", err)
		}
		if int(cur) > len(s.d.Migrations) {
			return fmt.Errorf("records: the database's server schema is at version %d, newer than this build knows (%d): upgrade weft", cur, len(s.d.Migrations))
		}
		for v := int(cur); v < len(s.d.Migrations); v++ {
			for _, stmt := range s.d.Migrations[v] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("records: schema migration %d: %w\n%s", v+1, err, stmt)
				}
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO weft_schema_migrations (component, version, applied_at) VALUES ($1, $2, $3)`,
				migrationComponent, int64(v+1), time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
				return fmt.Errorf("records: recording schema migration %d: %w", v+1, err)
			}
		}
		return nil
	})
}

// schemaSQL fills the column types of one database into the statements
// of a migration written with the placeholders TEXT, INT8 and JSONDOC:
// text, 64-bit integer, and a JSON document.
func schemaSQL(stmts []string, text, integer, jsondoc string) []string {
	r := strings.NewReplacer("TEXT", text, "INT8", integer, "JSONDOC", jsondoc)
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = r.Replace(s)
	}
	return out
}

// The tables are prefixed weft_server_ so they share a database with the
// checkpoint saver's and the long-term store's. Times are Unix
// microseconds. The column for a thread's values is state_values, as
// VALUES is an SQL keyword.
var schemaV1 = []string{
	`CREATE TABLE weft_server_threads (
	thread_id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	created_at INT8 NOT NULL,
	updated_at INT8 NOT NULL,
	metadata JSONDOC NOT NULL,
	config TEXT NOT NULL,
	status TEXT NOT NULL,
	state_values JSONDOC,
	interrupts TEXT
)`,
	`CREATE INDEX weft_server_threads_owner ON weft_server_threads (owner, created_at)`,
	`CREATE TABLE weft_server_runs (
	run_id TEXT PRIMARY KEY,
	thread_id TEXT NOT NULL,
	owner TEXT NOT NULL,
	assistant_id TEXT NOT NULL,
	metadata JSONDOC NOT NULL,
	kwargs TEXT NOT NULL,
	status TEXT NOT NULL,
	multitask_strategy TEXT NOT NULL,
	created_at INT8 NOT NULL,
	updated_at INT8 NOT NULL,
	attempt INT8 NOT NULL,
	worker TEXT NOT NULL
)`,
	`CREATE INDEX weft_server_runs_thread ON weft_server_runs (thread_id, created_at)`,
	`CREATE INDEX weft_server_runs_active ON weft_server_runs (worker, created_at) WHERE status IN ('pending', 'running')`,
	`CREATE TABLE weft_server_assistants (
	assistant_id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	graph_id TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT,
	config TEXT NOT NULL,
	context TEXT NOT NULL,
	metadata JSONDOC NOT NULL,
	version INT8 NOT NULL,
	created_at INT8 NOT NULL,
	updated_at INT8 NOT NULL
)`,
	`CREATE TABLE weft_server_assistant_versions (
	assistant_id TEXT NOT NULL,
	version INT8 NOT NULL,
	graph_id TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT,
	config TEXT NOT NULL,
	context TEXT NOT NULL,
	metadata JSONDOC NOT NULL,
	created_at INT8 NOT NULL,
	PRIMARY KEY (assistant_id, version)
)`,
	`CREATE TABLE weft_server_workers (
	worker_id TEXT PRIMARY KEY,
	started_at INT8 NOT NULL,
	heartbeat_at INT8 NOT NULL
)`,
}

// schemaV2 replaces the index of active runs by worker with one that only
// ClaimOrphans can use. Its predicate holds for every row (a run's attempt
// starts at 1) but is one no other query states, so PostgreSQL never picks
// the index for them: before it has statistics of the table (a new
// database; autovacuum analyzes it a minute later, if at all), it found
// the old index as cheap as the primary key for a run's updates by run_id
// and worker, and as a second index for the thread's active runs, and
// scanned every entry of the worker's active runs, and of the runs that
// had been active since the last vacuum, for each of them: about 460
// index entries and 185 rows read per update at 200 runs at once.
var schemaV2 = []string{
	`DROP INDEX weft_server_runs_active`,
	`CREATE INDEX weft_server_runs_orphans ON weft_server_runs (created_at, run_id) WHERE status IN ('pending', 'running') AND attempt > 0`,
}

// schemaV3 adds the crons: scheduled runs, on their thread (thread_id) or
// each on a new thread (thread_id NULL). Times are Unix microseconds;
// next_run_date is NULL when the schedule has no next time. enabled is 1
// or 0. The partial index serves the scheduler's query of the crons due.
var schemaV3 = []string{
	`CREATE TABLE weft_server_crons (
	cron_id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	assistant_id TEXT NOT NULL,
	thread_id TEXT,
	schedule TEXT NOT NULL,
	timezone TEXT NOT NULL,
	payload TEXT NOT NULL,
	metadata JSONDOC NOT NULL,
	enabled INT8 NOT NULL,
	end_time INT8,
	next_run_date INT8,
	on_run_completed TEXT NOT NULL,
	created_at INT8 NOT NULL,
	updated_at INT8 NOT NULL
)`,
	`CREATE INDEX weft_server_crons_owner ON weft_server_crons (owner, created_at)`,
	`CREATE INDEX weft_server_crons_thread ON weft_server_crons (thread_id)`,
	`CREATE INDEX weft_server_crons_due ON weft_server_crons (next_run_date) WHERE enabled = 1`,
}

// schemaV4 lets a cron's tick whose run could not be made be tried
// again: retry_tick is the tick while next_run_date is when it is tried
// again (NULL otherwise), retry_attempts how many times its run failed.
var schemaV4 = []string{
	`ALTER TABLE weft_server_crons ADD COLUMN retry_tick INT8`,
	`ALTER TABLE weft_server_crons ADD COLUMN retry_attempts INT8 NOT NULL DEFAULT 0`,
}

// schemaV5 makes a cron's tick make its run once: made_tick is the last
// tick whose run was made (NewRun.CronTick), written with the run.
var schemaV5 = []string{
	`ALTER TABLE weft_server_crons ADD COLUMN made_tick INT8`,
}

// pageQuery is one page of a search: the rows of table that where (with
// args vs) selects, ordered by order, then by idCol so that pages do not
// overlap (in the same direction when idFollows).
type pageQuery struct {
	table, cols, idCol, where, order string
	vs                               []any
	desc, idFollows                  bool
	// limit is the page's size (0: 10), offset the rows before it.
	limit, offset int
}

// searchPage returns a page of a search and how many rows it selects in
// all, both read in one transaction.
func searchPage[T any](ctx context.Context, s *Store, q pageQuery, scan func(Rows) (T, error)) ([]T, int, error) {
	dir := " ASC"
	if q.desc {
		dir = " DESC"
	}
	idDir := ""
	if q.idFollows {
		idDir = dir
	}
	limit := q.limit
	if limit <= 0 {
		limit = 10
	}
	out := []T{}
	total := 0
	err := s.read(ctx, func(tx Tx) error {
		out = out[:0]
		var err error
		if total, err = s.countWhere(ctx, tx, q.table, q.where, q.vs); err != nil {
			return err
		}
		page := append(q.vs[:len(q.vs):len(q.vs)], limit, max(q.offset, 0))
		return s.query(ctx, tx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s ORDER BY %s%s, %s%s LIMIT $%d OFFSET $%d`,
			q.cols, q.table, q.where, q.order, dir, q.idCol, idDir, len(page)-1, len(page)), page, func(r Rows) error {
			v, err := scan(r)
			out = append(out, v)
			return err
		})
	})
	return out, total, err
}

// countOf returns how many rows of table where (with args vs) selects.
func (s *Store) countOf(ctx context.Context, table, where string, vs []any) (int, error) {
	n := 0
	err := s.read(ctx, func(tx Tx) error {
		var err error
		n, err = s.countWhere(ctx, tx, table, where, vs)
		return err
	})
	return n, err
}
