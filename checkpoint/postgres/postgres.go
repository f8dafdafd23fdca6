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
// thread id, so writers of one thread, in any process, take turns; writers
// of different threads do not wait for each other. Schema migrations run
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
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/internal/pgconn"
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
	cfg, err := pgconn.PoolConfig(url)
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
	db := pgDB{pool: pool, what: "checkpoint/postgres: " + pgconn.Describe(pool.Config().ConnConfig), cleanup: cleanupTimeout}
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
	// what names the database in errors (pgconn.Describe).
	what string
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
	return pgconn.Explain(p.what, err)
}

// Write begins the transaction and takes the advisory locks in one round
// trip, then runs fn.
func (p pgDB) Write(ctx context.Context, keys []string, fn func(sqlstore.Tx) error) error {
	return p.explain(p.write(ctx, keys, fn))
}

func (p pgDB) write(ctx context.Context, keys []string, fn func(sqlstore.Tx) error) (err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var b strings.Builder
	b.WriteString("BEGIN")
	for _, k := range keys {
		// A literal, so BEGIN and the locks go as one simple-protocol
		// message.
		b.WriteString("; SELECT pg_advisory_xact_lock(hashtextextended('")
		b.WriteString(strings.ReplaceAll("weft.checkpoint:"+k, "'", "''"))
		b.WriteString("', 0))")
	}
	// Closing and rolling back must not wait for a connection that
	// stopped answering: past the bound, the connection is dropped, and
	// the server rolls the transaction back when it notices.
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), p.cleanup)
	}
	drop := func() {
		cctx, cancel := bounded()
		defer cancel()
		conn.Conn().PgConn().Close(cctx)
	}
	if err := conn.Conn().PgConn().Exec(ctx, b.String()).Close(); err != nil {
		// The connection is in an unknown state: do not reuse it.
		drop()
		return err
	}
	defer func() {
		if err != nil {
			rctx, cancel := bounded()
			defer cancel()
			if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
				drop()
			}
		}
	}()
	if err := fn(pgTx{conn.Conn()}); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "COMMIT")
	return err
}

func (p pgDB) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return p.explain(pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(pgTx{tx.Conn()})
	}))
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

type pgTx struct{ c *pgx.Conn }

func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.c.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := t.c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// ExecBatch pipelines the statements: one round trip for all of them.
func (t pgTx) ExecBatch(ctx context.Context, stmts []sqlstore.Stmt) error {
	if len(stmts) == 1 {
		_, err := t.c.Exec(ctx, stmts[0].Query, stmts[0].Args...)
		return err
	}
	var b pgx.Batch
	for _, st := range stmts {
		b.Queue(st.Query, st.Args...)
	}
	return t.c.SendBatch(ctx, &b).Close()
}
