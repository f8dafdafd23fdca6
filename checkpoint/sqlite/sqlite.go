// Package sqlite stores checkpoints in a SQLite file: weft's embedded
// default, with no server and no cgo.
//
//	d, err := sqlite.Open(ctx, "weft.db")
//	if err != nil { ... }
//	defer d.Close()
//	saver := checkpoint.New(d)
//
// It uses modernc.org/sqlite, SQLite translated to Go, through database/sql.
// The file is opened in WAL mode, so readers never wait for the writer; a
// write takes the database's write lock at its start (BEGIN IMMEDIATE) and
// waits up to BusyTimeout for another process holding it. Several processes
// may share one file.
//
// The storage format, shared with checkpoint/postgres, is described in
// docs/persistence.md: a channel's value is stored once per version, and
// message lists as appended items, so a thread's storage grows in proportion
// to its length.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/internal/sqldb"
	"github.com/weftlabs/weft/internal/sqlitefile"
)

// Options tune Open.
type Options struct {
	// SnapshotEvery is how many appends to a message list are sealed
	// into one stored chunk; a read of a list of n items reads about n/N
	// chunks. 0 means 32.
	SnapshotEvery int
	// BusyTimeout is how long a write waits for another process holding
	// the write lock. 0 means 10 seconds.
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: "NORMAL" (the default)
	// survives a crash of the process, and in WAL mode keeps the database
	// consistent on power loss, though the last commits may roll back;
	// "FULL" syncs every commit to disk, surviving power loss, at the cost
	// of a disk flush per checkpoint.
	Synchronous string
	// SkipMigrate leaves the schema alone; Migrate must then be called
	// before use. By default Open migrates.
	SkipMigrate bool
}

// Stats describes what a thread's rows hold; see Driver.Stats.
type Stats = sqlstore.Stats

// Driver is a checkpoint.Driver over a SQLite file. It is safe for
// concurrent use.
type Driver struct {
	*sqlstore.Store
	db   *sql.DB
	w    *sqlDB
	path string
}

var _ checkpoint.Driver = (*Driver)(nil)

// Open opens (creating if needed) the SQLite file at path and brings its
// schema up to date. Pass the driver to checkpoint.New.
func Open(ctx context.Context, path string) (*Driver, error) {
	return OpenOptions(ctx, path, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, path string, opts Options) (*Driver, error) {
	return openOptions(ctx, path, opts, nil)
}

// maxIdleConns is how many connections the pool keeps open when idle.
const maxIdleConns = 32

// openOptions is OpenOptions with pragmas of the caller's added to every
// connection's (tests limit the file's size with max_page_count).
func openOptions(ctx context.Context, path string, opts Options, pragmas []string) (*Driver, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: sqlite.Open needs a file path, got none", checkpoint.ErrInvalid)
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("%w: sqlite file path %q contains '?', which SQLite reads as the start of options", checkpoint.ErrInvalid, path)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	switch s := strings.ToUpper(opts.Synchronous); s {
	case "":
		opts.Synchronous = "NORMAL"
	case "NORMAL", "FULL", "EXTRA":
		opts.Synchronous = s
	default:
		return nil, fmt.Errorf("%w: sqlite Synchronous must be NORMAL, FULL or EXTRA, got %q", checkpoint.ErrInvalid, opts.Synchronous)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+opts.Synchronous+")")
	q.Add("_pragma", "foreign_keys(OFF)")
	// Savepoints (each writer of a group commit runs in one) keep the
	// pages they change in a sub-journal, a temporary file once it passes
	// 64 KiB: in memory it costs a copy instead of a write system call
	// per page.
	q.Add("_pragma", "temp_store(MEMORY)")
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	// Write transactions take the write lock when they begin, so two
	// writers never deadlock upgrading read locks; read-only transactions
	// stay deferred.
	q.Set("_txlock", "immediate")
	// sqlitefile.Open switches a new file to WAL once, before the pool's
	// connections each ask for it: SQLite fails concurrent switches at
	// once instead of waiting.
	db, err := sqlitefile.Open(ctx, path+"?"+q.Encode(), opts.BusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: opening %s: %w", path, sqlitefile.ExplainUnwritable(path, err))
	}
	// Keep connections open: a new one runs the pragmas again, and a
	// server's concurrent readers (one per request at once) would open
	// and close connections all the time with fewer kept.
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(0)
	d := &Driver{db: db, w: &sqlDB{db: db, path: path, wlock: make(chan struct{}, 1)}, path: path}
	d.Store = sqlstore.New(d.w, Dialect, sqlstore.Options{SnapshotEvery: opts.SnapshotEvery})
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("checkpoint/sqlite: opening %s: %w", path, sqlitefile.ExplainUnwritable(path, err))
	}
	// A database in memory is one per connection: its pool has one
	// connection, which the writers keep (wal.go), and a read or a
	// statement prepared on the pool would wait for another for ever.
	var seq int
	var name, file string
	if err := db.QueryRowContext(ctx, "PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		db.Close()
		return nil, fmt.Errorf("checkpoint/sqlite: opening %s: %w", path, err)
	}
	if file == "" {
		db.Close()
		return nil, fmt.Errorf("%w: sqlite.Open needs a file; %q is a database in memory, one per connection (checkpoint.NewMemory keeps checkpoints in memory)", checkpoint.ErrInvalid, path)
	}
	if !opts.SkipMigrate {
		if err := d.Migrate(ctx); err != nil {
			// Named and explained by sqlDB.
			d.Close()
			return nil, err
		}
	}
	d.w.startCheckpointer()
	return d, nil
}

// Close waits for the write in progress, stops the driver's WAL
// checkpoints and closes the database.
func (d *Driver) Close() error {
	return errors.Join(d.w.close(), d.db.Close())
}

// Path returns the file the driver was opened on.
func (d *Driver) Path() string { return d.path }

// Dialect is the SQLite flavour of the shared storage format.
var Dialect = &sqlstore.Dialect{
	Migrations: [][]string{
		sqlstore.SchemaSQL("TEXT", "INTEGER", "INTEGER", "BLOB", "TEXT", ""),
		sqlstore.LeaseSchemaSQL("TEXT", "INTEGER", "INTEGER"),
		sqlstore.SchemaV3SQL("TEXT", "INTEGER", "INTEGER", "BLOB"),
	},
	Numbered:    true,
	WritesOrder: "rowid",
	Size: func(col string, integer bool) string {
		if integer {
			// The bytes of SQLite's record format for an integer.
			return "(CASE WHEN " + col + " IS NULL OR " + col + " IN (0, 1) THEN 0 WHEN " + col + " BETWEEN -128 AND 127 THEN 1 WHEN " + col + " BETWEEN -32768 AND 32767 THEN 2 WHEN " +
				col + " BETWEEN -8388608 AND 8388607 THEN 3 WHEN " + col + " BETWEEN -2147483648 AND 2147483647 THEN 4 WHEN " + col + " BETWEEN -140737488355328 AND 140737488355327 THEN 6 ELSE 8 END)"
		}
		return "COALESCE(octet_length(" + col + "), 0)"
	},
}

// sqlDB adapts database/sql to sqlstore.DB.
type sqlDB struct {
	db    *sql.DB
	path  string
	stmts sqldb.StmtCache
	// wlock serializes this process's writers, so they queue here instead
	// of sleeping in SQLite's busy handler, and commit in groups (see
	// group.go); other processes are kept out by BEGIN IMMEDIATE and wait
	// under busy_timeout.
	wlock chan struct{}
	q     queue
	// wconn is the connection writes run on, under wlock (wal.go), and
	// raw the statements prepared on it, run on its driver connection.
	wconn *sql.Conn
	raw   sqldb.Conn
	// closed is set, under wlock, when the driver closes: no writer
	// takes a connection after that.
	closed bool
	// ckpt copies the log into the database (wal.go).
	ckpt *walCheckpointer
}

// explain names the file in an error of SQLite, and says what made it
// unwritable when that is why (a full disk, a read-only file or
// directory); the errors the store makes itself pass as they are.
func (s *sqlDB) explain(err error) error {
	var se *sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("checkpoint/sqlite: %s: %w", s.path, sqlitefile.ExplainUnwritable(s.path, err))
}

func (s *sqlDB) Write(ctx context.Context, keys []string, fn func(sqlstore.Tx) error) error {
	return s.explain(s.write(ctx, keys, fn))
}

func (s *sqlDB) write(ctx context.Context, _ []string, fn func(sqlstore.Tx) error) error {
	return s.submit(&writeReq{ctx: ctx, fn: fn})
}

// WriteOne runs one statement in a write transaction of its own, queued
// behind this process's other writers like every write.
func (s *sqlDB) WriteOne(ctx context.Context, query string, args []any, dest ...any) (n int64, err error) {
	err = s.Write(ctx, nil, func(tx sqlstore.Tx) error {
		n, err = sqlstore.ExecOne(ctx, tx, query, args, dest...)
		return err
	})
	return n, err
}

func (s *sqlDB) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// BEGIN of a read never waits in WAL mode: it is not watched for
	// ctx's cancelling (by a goroutine of the driver's and one of
	// database/sql's); the statements are.
	tx, err := s.db.BeginTx(context.WithoutCancel(ctx), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.explain(err)
	}
	defer tx.Rollback()
	return s.explain(fn(sqldb.Std{Q: sqldb.Cached{Tx: tx, DB: s.db, Cache: &s.stmts}}))
}
