package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftlabs/weft/internal/pgconn"
	"github.com/weftlabs/weft/internal/sqldb"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// OpenSQLite returns a Store over an SQLite database shared with the
// checkpoint saver: reads go to db, writes through write, which should
// queue them behind the saver's own writers (checkpoint/sqlite's
// Driver.WriteTx) and run fn's statements under a context that one
// writer's cancelling does not end: the transaction may be shared with
// other writers (the checkpoint driver's group commit), and SQLite
// answers a statement interrupted in a transaction by rolling the whole
// transaction back. It migrates the schema.
func OpenSQLite(ctx context.Context, db *sql.DB, write func(context.Context, func(Tx) error) error, opts Options) (*Store, error) {
	// One committer: SQLite has one writer at a time anyway.
	s := newStore(&sqliteDB{db: db, write: write}, SQLite, opts, 1)
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenMemory returns a Store in a private SQLite database that lives in a
// temporary directory, for a server that keeps nothing across restarts
// (tests, demos). Its close function deletes it.
func OpenMemory(ctx context.Context, opts Options) (*Store, func() error, error) {
	dir, err := os.MkdirTemp("", "weft-records-")
	if err != nil {
		return nil, nil, fmt.Errorf("records: a directory for the database: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(OFF)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", filepath.Join(dir, "records.db")+"?"+q.Encode())
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("records: opening a temporary database: %w", err)
	}
	db.SetMaxIdleConns(8)
	drop := func() error {
		err := db.Close()
		return errors.Join(err, os.RemoveAll(dir))
	}
	// Writers take turns here rather than in SQLite's busy handler.
	lock := make(chan struct{}, 1)
	var stmts sqldb.StmtCache
	write := func(ctx context.Context, fn func(Tx) error) error {
		select {
		case lock <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-lock }()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(sqldb.Std{Q: sqldb.Cached{Tx: tx, DB: db, Cache: &stmts, Ctx: context.WithoutCancel(ctx)}}); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	s, err := OpenSQLite(ctx, db, write, opts)
	if err != nil {
		drop()
		return nil, nil, err
	}
	return s, func() error { s.Close(); return drop() }, nil
}

type sqliteDB struct {
	db    *sql.DB
	write func(context.Context, func(Tx) error) error
	stmts sqldb.StmtCache
}

// Write runs fn through the write function OpenSQLite was given.
func (d *sqliteDB) Write(ctx context.Context, fn func(Tx) error) error {
	return d.write(ctx, fn)
}

func (d *sqliteDB) Read(ctx context.Context, fn func(Tx) error) error {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(d.tx(tx))
}

// tx runs a transaction's statements prepared once (sqldb.StmtCache).
func (d *sqliteDB) tx(tx *sql.Tx) Tx {
	return sqldb.Std{Q: sqldb.Cached{Tx: tx, DB: d.db, Cache: &d.stmts}}
}

// OpenPostgres returns a Store over a PostgreSQL pool (the checkpoint
// saver's: checkpoint/postgres's Driver.Pool) and migrates the schema.
func OpenPostgres(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	// A few committers: PostgreSQL runs transactions side by side, and
	// each commit waits for its WAL flush.
	s := newStore(pgDB{pool}, Postgres, opts, 4)
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

type pgDB struct{ pool *pgxpool.Pool }

// pgCleanup bounds the rollback of a failed write, whose caller's context
// may have ended (pgconn.RunTx).
const pgCleanup = 5 * time.Second

// Write runs fn in a transaction whose BEGIN goes out with its first
// statement (pgconn.RunTx): a batch of writes pays no round trip for its
// BEGIN.
func (d pgDB) Write(ctx context.Context, fn func(Tx) error) error {
	return pgconn.RunTx(ctx, d.pool, pgCleanup, "BEGIN", nil, func(tx *pgconn.Tx) error { return fn(pgTx{tx}) })
}

// Read runs fn on the pool without a transaction: the reads are single
// statements, or a count and a page that may see different moments, and
// a transaction would cost two more round trips each time.
func (d pgDB) Read(ctx context.Context, fn func(Tx) error) error { return fn(pgPool(d)) }

type pgTx struct{ tx *pgconn.Tx }

func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t pgTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := t.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

// Queue holds a statement back until the transaction's next statement or
// its COMMIT (execLast).
func (t pgTx) Queue(query string, args ...any) { t.tx.Queue(query, args...) }

type pgPool struct{ pool *pgxpool.Pool }

func (p pgPool) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := p.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (p pgPool) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := p.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

type pgRows struct{ rows pgx.Rows }

func (r pgRows) Next() bool             { return r.rows.Next() }
func (r pgRows) Scan(dest ...any) error { return r.rows.Scan(dest...) }
func (r pgRows) Err() error             { return r.rows.Err() }
func (r pgRows) Close()                 { r.rows.Close() }
