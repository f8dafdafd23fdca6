// Package postgres stores checkpoints in PostgreSQL: for servers that share
// threads across processes and machines.
//
//	d, err := postgres.Open(ctx, "postgres://user@host:5432/weft")
//	if err != nil { ... }
//	defer d.Close()
//	saver := checkpoint.New(d)
//
// It uses a github.com/jackc/pgx/v5 connection pool. Statements are sent
// as named prepared statements cached per connection (pgx's
// QueryExecModeCacheStatement), so PostgreSQL parses and plans each once
// per connection. Behind PgBouncer in transaction mode older than 1.21,
// add default_query_exec_mode=exec to the connection string: statements
// then go as the extended protocol's unnamed statement.
//
// Writes to a thread run under a transaction-scoped advisory lock on the
// thread id, so writers of one thread, in any process, take turns. A write
// is pipelined (BEGIN and the lock go with its first statement, COMMIT
// with its last), and writes of different threads that queue while the
// driver's few write transactions run are committed together, each in a
// savepoint of its own (group commit; see group.go and
// docs/persistence.md). Schema migrations run
// under an advisory lock too, so several processes may start at once.
//
// Runs own their thread through a lease row (weft_thread_leases) whose
// expiry follows the server's clock, so processes on several machines agree
// on it; see "Thread ownership" in docs/persistence.md.
//
// The storage format, shared with checkpoint/sqlite, is described in
// docs/persistence.md.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	pgconnx "github.com/weftlabs/weft/internal/pgconn"
)

// Options tune Open.
type Options struct {
	// SnapshotEvery is how many appends to a message list are sealed
	// into one stored chunk; a read of a list of n items reads about n/N
	// chunks. 0 means 32.
	SnapshotEvery int
	// SkipMigrate leaves the schema alone; Migrate must then be called
	// before use. By default Open migrates.
	SkipMigrate bool
}

// Stats describes what a thread's rows hold; see Driver.Stats.
type Stats = sqlstore.Stats

// Driver is a checkpoint.Driver over a PostgreSQL database. It is safe for
// concurrent use.
type Driver struct {
	*sqlstore.Store
	pool *pgxpool.Pool
}

var _ checkpoint.Driver = (*Driver)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string) and brings its schema up to date. Pass the driver to
// checkpoint.New.
func Open(ctx context.Context, url string) (*Driver, error) {
	return OpenOptions(ctx, url, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, url string, opts Options) (*Driver, error) {
	if url == "" {
		return nil, fmt.Errorf("%w: postgres.Open needs a connection string, got none", checkpoint.ErrInvalid)
	}
	cfg, err := pgconnx.PoolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres connection string: %v", checkpoint.ErrInvalid, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: %w", err)
	}
	return New(ctx, pool, opts)
}

// New returns a driver over an existing pool, which Close then closes. The
// pool's connections should not cache prepared statements if a transaction
// pooler older than PgBouncer 1.21 sits in front of the database.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Driver, error) {
	d := &Driver{pool: pool}
	db := pgDB{pool: pool, what: "checkpoint/postgres: " + pgconnx.Describe(pool.Config().ConnConfig), cleanup: cleanupTimeout, groups: newGroups()}
	d.Store = sqlstore.New(db, Dialect, sqlstore.Options{SnapshotEvery: opts.SnapshotEvery})
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, db.explain(err)
	}
	if !opts.SkipMigrate {
		if err := d.Migrate(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return d, nil
}

// Close closes the pool.
func (d *Driver) Close() error {
	d.pool.Close()
	return nil
}

// Pool returns the connection pool.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Dialect is the PostgreSQL flavour of the shared storage format.
var Dialect = &sqlstore.Dialect{
	Migrations: [][]string{
		sqlstore.SchemaSQL("text", "bigint", "smallint", "bytea", "jsonb", "seq bigint GENERATED ALWAYS AS IDENTITY,"),
		sqlstore.LeaseSchemaSQL("text", "bigint", "smallint"),
		sqlstore.SchemaV3SQL("text", "bigint", "smallint", "bytea",
			// Rows overwritten in place keep room on their page, so that
			// the overwrite is a HOT update, whose dead version the next
			// visit to the page reclaims without a vacuum.
			`ALTER TABLE weft_checkpoint_tails SET (fillfactor = 50)`,
			`ALTER TABLE weft_checkpoint_logs SET (fillfactor = 50)`,
			// These columns hold weft's own DEFLATE output (or values
			// too small to gain from compression): TOAST compression
			// would only spend time failing to shrink them.
			`ALTER TABLE weft_checkpoint_chunks ALTER COLUMN items SET STORAGE EXTERNAL`,
			`ALTER TABLE weft_checkpoint_blobs ALTER COLUMN value SET STORAGE EXTERNAL`,
			`ALTER TABLE weft_checkpoint_writes ALTER COLUMN value SET STORAGE EXTERNAL`,
		),
	},
	// Lease expiry follows the server's clock, which every process shares.
	Now:         "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS bigint)",
	LockRow:     " FOR SHARE",
	WritesOrder: "seq",
	Size: func(col string, _ bool) string {
		return "COALESCE(pg_column_size(" + col + "), 0)"
	},
}

type pgDB struct {
	pool *pgxpool.Pool
	// what names the database in errors (pgconnx.Describe).
	what string
	// groups queues the writers of one thread for group commit; nil
	// runs every write alone.
	groups *groups
	// cleanup bounds the rollback of a failed write (the caller's context
	// may have ended) and the closing of a connection in an unknown
	// state.
	cleanup time.Duration
}

// cleanupTimeout is pgDB.cleanup: a rollback takes a round trip.
const cleanupTimeout = 5 * time.Second

// explain names the database in an error of the server or the connection,
// with what failed (a read-only database, a full disk, a missing
// permission); the errors the store makes itself pass as they are.
func (p pgDB) explain(err error) error {
	for _, own := range []error{checkpoint.ErrInvalid, checkpoint.ErrLeaseLost, checkpoint.ErrCorrupt, checkpoint.ErrNotFound} {
		if errors.Is(err, own) {
			return err
		}
	}
	return pgconnx.Explain(p.what, err)
}

// Write runs fn in a transaction that holds the advisory locks of keys.
// BEGIN and the locks go out with fn's first statement, and fn's last
// batch with COMMIT (pgconnx.Tx): a checkpoint's Put takes three round
// trips (its fenced read, the blobs it may share, its writes with COMMIT).
//
// Writes of one thread are group-committed (see group.go); writes of
// several threads at once run alone.
func (p pgDB) Write(ctx context.Context, keys []string, fn func(sqlstore.Tx) error) error {
	if p.groups == nil || len(keys) != 1 {
		return p.explain(p.run(ctx, "BEGIN", keys, fn))
	}
	return p.explain(p.submit(&writeReq{ctx: ctx, key: keys[0], fn: fn}))
}

// Read runs fn in a read-only transaction that sees one snapshot, begun
// with fn's first statement.
func (p pgDB) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return p.explain(p.run(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", nil, fn))
}

// lockSQL takes a thread's (or the migrations') write lock until the
// transaction ends. One statement text for every key, so it is prepared
// once per connection.
const lockSQL = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"

// lockKey is the text whose hash lockSQL locks for key.
func lockKey(key string) string { return "weft.checkpoint:" + key }

// run runs fn in a transaction begun by begin, holding the advisory locks
// of keys (pgconnx.RunTx).
func (p pgDB) run(ctx context.Context, begin string, keys []string, fn func(sqlstore.Tx) error) error {
	var lead []pgconnx.Stmt
	for _, k := range keys {
		lead = append(lead, pgconnx.Stmt{Query: lockSQL, Args: []any{lockKey(k)}})
	}
	return pgconnx.RunTx(ctx, p.pool, p.cleanup, begin, lead, func(t *pgconnx.Tx) error {
		return fn(pgTx{t: t})
	})
}

// WriteOne runs one statement outside an explicit transaction: one round
// trip.
func (p pgDB) WriteOne(ctx context.Context, query string, args []any, dest ...any) (int64, error) {
	if len(dest) == 0 {
		tag, err := p.pool.Exec(ctx, query, args...)
		return tag.RowsAffected(), p.explain(err)
	}
	err := p.pool.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, p.explain(err)
	}
	return 1, nil
}

// pgTx is a write's or a read's transaction, pipelined (pgconnx.Tx).
type pgTx struct {
	t *pgconnx.Tx
	// group, for a writer of a group commit, is the context the group's
	// statements run under, in place of the writer's own: cancelling one
	// writer's context must not break the connection the others share.
	// The writer's context is still checked before each statement.
	group context.Context
}

// context is the context a statement of the writer whose context is ctx
// runs under.
func (t pgTx) context(ctx context.Context) (context.Context, error) {
	if t.group == nil {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return t.group, nil
}

func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	ctx, err := t.context(ctx)
	if err != nil {
		return 0, err
	}
	tag, err := t.t.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	ctx, err := t.context(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := t.t.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// ExecAll runs the statements, after those queued, in one round trip, and
// returns the rows each changed.
func (t pgTx) ExecAll(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, error) {
	ctx, err := t.context(ctx)
	if err != nil {
		return nil, err
	}
	ps := make([]pgconnx.Stmt, len(stmts))
	for i, st := range stmts {
		ps[i] = pgconnx.Stmt{Query: st.Query, Args: st.Args}
	}
	tags, err := t.t.ExecAll(ctx, ps)
	if err != nil {
		return nil, err
	}
	ns := make([]int64, len(tags))
	for i, tag := range tags {
		ns[i] = tag.RowsAffected()
	}
	return ns, nil
}

// ExecBatch queues the statements: they go out with the next statement,
// or with COMMIT, in one round trip.
func (t pgTx) ExecBatch(ctx context.Context, stmts []sqlstore.Stmt) error {
	if _, err := t.context(ctx); err != nil {
		return err
	}
	for _, st := range stmts {
		t.t.Queue(st.Query, st.Args...)
	}
	return nil
}
