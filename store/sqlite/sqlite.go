// Package sqlite is the embedded store backend: one SQLite file, no
// services, no cgo (modernc.org/sqlite). It is weft's default.
//
// Items live in store_items (the value as JSON text, times as Unix
// microseconds), vectors in store_vectors as little-endian float32 blobs,
// and store_generations counts writes per namespace prefix so every Store
// sharing the file knows when its cached vectors are stale. Filters run in
// SQL through json_type and json_extract; vector ranking is exact, in the
// Store's memory (see store.VectorSource).
//
// The tables are prefixed store_ so the file can also hold the checkpoint
// saver's tables.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/weftlabs/weft/internal/sqldb"
	"github.com/weftlabs/weft/internal/sqlitefile"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/internal/sqlstore"
)

// Backend is the SQLite store backend. It implements store.Backend and
// store.VectorSource.
type Backend struct {
	*sqlstore.Core
	db    *sql.DB
	owned bool
}

var (
	_ store.Backend      = (*Backend)(nil)
	_ store.VectorSource = (*Backend)(nil)
)

// DSN returns the modernc.org/sqlite data source name weft uses for the file
// at path: WAL journal (readers never block the writer), a 10 s busy timeout
// (concurrent writers wait instead of failing), synchronous=NORMAL (durable
// across process crashes; a power loss may drop the last transactions) and
// BEGIN IMMEDIATE transactions. A path already starting with "file:" is
// given the same parameters.
func DSN(path string) string {
	params := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	if !strings.HasPrefix(path, "file:") {
		path = "file:" + path
	}
	if strings.Contains(path, "?") {
		return path + "&" + params
	}
	return path + "?" + params
}

// Open opens (creating if needed) the SQLite file at path, migrates it and
// returns a Store over it configured by cfg.
func Open(ctx context.Context, path string, cfg store.Config) (*store.Store, error) {
	b, err := OpenBackend(ctx, path)
	if err != nil {
		return nil, err
	}
	s, err := store.New(b, cfg)
	if err != nil {
		b.Close()
		return nil, err
	}
	return s, nil
}

// OpenBackend opens the file at path with DSN(path) and migrates it. The
// backend owns the connection pool and closes it on Close.
func OpenBackend(ctx context.Context, path string) (*Backend, error) {
	db, err := sqlitefile.Open(ctx, DSN(path), 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: open %s: %w", path, err)
	}
	b, err := NewBackend(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	b.owned = true
	return b, nil
}

// NewBackend returns a backend over db (opened with the "sqlite" driver,
// ideally with DSN), migrating it first. Close leaves db open.
func NewBackend(ctx context.Context, db *sql.DB) (*Backend, error) {
	b := &Backend{Core: sqlstore.New(&sqlDB{Std: sqldb.Std{Q: db}, db: db}, Dialect), db: db}
	if err := b.Migrate(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Close closes the connection pool if the backend opened it.
func (b *Backend) Close() error {
	if b.owned {
		return b.db.Close()
	}
	return nil
}

// DB returns the connection pool.
func (b *Backend) DB() *sql.DB { return b.db }

// migrations are applied in order; never edit one that has shipped.
var migrations = []string{
	1: `
CREATE TABLE store_items (
	id         INTEGER PRIMARY KEY,
	namespace  TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	expires_at INTEGER,
	ttl        INTEGER,
	UNIQUE (namespace, key)
);
CREATE INDEX store_items_updated ON store_items (updated_at DESC, namespace, key);
CREATE INDEX store_items_expires ON store_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE store_vectors (
	item_id   INTEGER NOT NULL,
	seq       INTEGER NOT NULL,
	field     TEXT    NOT NULL,
	dims      INTEGER NOT NULL,
	embedding BLOB    NOT NULL,
	PRIMARY KEY (item_id, seq)
);
CREATE TABLE store_generations (
	prefix TEXT    PRIMARY KEY,
	depth  INTEGER NOT NULL,
	gen    INTEGER NOT NULL
);
CREATE INDEX store_generations_depth ON store_generations (depth);
`,
}

// SchemaVersion is the schema version this package migrates to.
const SchemaVersion = 1

// Migrate brings db's store tables to SchemaVersion. It runs in one
// BEGIN IMMEDIATE transaction, so processes migrating the same file at once
// wait for each other and each migration runs once. A file migrated by a
// newer weft is an error rather than silently misread.
func Migrate(ctx context.Context, db *sql.DB) error {
	return sqlstore.New(&sqlDB{Std: sqldb.Std{Q: db}, db: db}, Dialect).Migrate(ctx)
}

// Dialect is the SQLite flavour of the store's SQL: times as Unix
// microseconds, the value as JSON text, filters through json_type and
// json_extract. Writers are serialised by SQLite, so nothing skips locked
// rows.
var Dialect = &sqlstore.Dialect{
	Name:            "store/sqlite",
	Numbered:        true,
	Migrations:      migrations,
	MigrationsTable: `CREATE TABLE IF NOT EXISTS store_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
	TTL:             "ttl",
	Time:            func(t time.Time) any { return t.UnixMicro() },
	JSON:            func(p string) string { return p },
	Expiry:          func(now string) string { return now + " + ttl" },
	Eq:              eq,
	Compare:         compare,
	Unlimited:       " LIMIT -1",
	ValidJSON:       "json_valid(value)",
}

// jsonPath renders a filter path as an SQLite JSON path with quoted labels
// (store.ParseFilter rejects labels containing '"' or '\').
func jsonPath(path []string) string {
	var sb strings.Builder
	sb.WriteString("$")
	for _, p := range path {
		sb.WriteString(`."`)
		sb.WriteString(p)
		sb.WriteString(`"`)
	}
	return sb.String()
}

// eq is Dialect.Eq.
func eq(a *sqlstore.Args, path []string, v any) string {
	p := jsonPath(path)
	switch v := v.(type) {
	case nil:
		return `(json_type(value, ` + a.Add(p) + `) IS NULL OR json_type(value, ` + a.Add(p) + `) = 'null')`
	case bool:
		if v {
			return `(json_type(value, ` + a.Add(p) + `) IS 'true')`
		}
		return `(json_type(value, ` + a.Add(p) + `) IS 'false')`
	case string, float64:
		return compare(a, path, "=", v)
	}
	return "FALSE"
}

// compare is Dialect.Compare.
func compare(a *sqlstore.Args, path []string, op string, v any) string {
	p := jsonPath(path)
	types := `IS 'text'`
	if _, ok := v.(float64); ok {
		types = `IN ('integer', 'real')`
	}
	return `(json_type(value, ` + a.Add(p) + `) ` + types + ` AND json_extract(value, ` + a.Add(p) + `) ` + op + ` ` + a.Add(v) + `)`
}

// sqlDB adapts database/sql to sqlstore.DB.
type sqlDB struct {
	sqldb.Std
	db *sql.DB
}

// Begin implements sqlstore.DB. A migration takes the write lock at once
// (BEGIN IMMEDIATE) on its own connection whatever the DSN says; a
// read-only view is a single statement here, which SQLite runs on one
// snapshot, so it needs no transaction.
func (s *sqlDB) Begin(ctx context.Context, mode sqlstore.Mode, fn func(sqlstore.Tx) error) error {
	switch mode {
	case sqlstore.ReadOnly:
		return fn(sqldb.Std{Q: s.db})
	case sqlstore.Migration:
		return s.immediate(ctx, fn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(sqldb.Std{Q: tx}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqlDB) immediate(ctx context.Context, fn func(sqlstore.Tx) error) error {
	// A new connection applies the DSN's journal_mode pragma, which fails
	// at once while another process switches the same new file to WAL.
	var conn *sql.Conn
	err := sqlitefile.RetryBusy(ctx, 10*time.Second, func() (err error) {
		conn, err = s.db.Conn(ctx)
		return err
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err = fn(sqldb.Std{Q: conn})
	if err == nil {
		_, err = conn.ExecContext(ctx, "COMMIT")
	}
	if err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}
