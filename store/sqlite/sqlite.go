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
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/weftlabs/weft/internal/sqlitefile"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/internal/rows"
)

// Backend is the SQLite store backend. It implements store.Backend and
// store.VectorSource.
type Backend struct {
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
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Backend{db: db}, nil
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
	// A new connection applies the DSN's journal_mode pragma, which fails
	// at once while another process switches the same new file to WAL.
	var conn *sql.Conn
	err := sqlitefile.RetryBusy(ctx, 10*time.Second, func() (err error) {
		conn, err = db.Conn(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	err = migrate(ctx, conn)
	if err == nil {
		_, err = conn.ExecContext(ctx, "COMMIT")
	}
	if err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	return nil
}

func migrate(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS store_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return err
	}
	var cur int
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM store_migrations`).Scan(&cur); err != nil {
		return err
	}
	if cur > SchemaVersion {
		return fmt.Errorf("database schema version %d is newer than this weft's %d", cur, SchemaVersion)
	}
	for v := cur + 1; v <= SchemaVersion; v++ {
		if _, err := conn.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO store_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixMicro()); err != nil {
			return err
		}
	}
	return nil
}

const itemCols = `id, namespace, key, value, created_at, updated_at, expires_at, ttl`

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(x int64) time.Time { return time.UnixMicro(x).UTC() }

type scanner interface{ Scan(dest ...any) error }

func scanRecord(sc scanner) (store.Record, error) {
	var (
		r                store.Record
		ns, value        string
		created, updated int64
		expires, ttl     sql.NullInt64
	)
	if err := sc.Scan(&r.ID, &ns, &r.Key, &value, &created, &updated, &expires, &ttl); err != nil {
		return r, err
	}
	r.Namespace = store.SplitNamespace(ns)
	r.Value = []byte(value)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	if expires.Valid {
		r.ExpiresAt = fromMicros(expires.Int64)
	}
	if ttl.Valid {
		r.TTL = time.Duration(ttl.Int64) * time.Microsecond
	}
	return r, nil
}

// prefixCond matches namespaces at or under prefix.
func prefixCond(col string, prefix []string) (string, []any) {
	if len(prefix) == 0 {
		return "1", nil
	}
	p := store.JoinNamespace(prefix)
	lo, hi := store.PrefixRange(p)
	return fmt.Sprintf("(%[1]s = ? OR (%[1]s >= ? AND %[1]s < ?))", col), []any{p, lo, hi}
}

const liveCond = `(expires_at IS NULL OR expires_at > ?)`

func withTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func bumpGenerations(ctx context.Context, tx *sql.Tx, namespaces [][]string) error {
	ps := rows.Prefixes(namespaces)
	if len(ps) == 0 {
		return nil
	}
	var sb strings.Builder
	args := make([]any, 0, 2*len(ps))
	sb.WriteString(`INSERT INTO store_generations (prefix, depth, gen) VALUES `)
	for i, p := range ps {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, 1)")
		args = append(args, p.Joined, p.Depth)
	}
	sb.WriteString(` ON CONFLICT (prefix) DO UPDATE SET gen = gen + 1`)
	_, err := tx.ExecContext(ctx, sb.String(), args...)
	return err
}

// Put implements store.Backend.
func (b *Backend) Put(ctx context.Context, writes []store.Write) error {
	err := withTx(ctx, b.db, func(tx *sql.Tx) error {
		upsert, err := tx.PrepareContext(ctx, `
INSERT INTO store_items (namespace, key, value, created_at, updated_at, expires_at, ttl)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, key) DO UPDATE SET
	value = excluded.value,
	created_at = CASE WHEN store_items.expires_at IS NOT NULL AND store_items.expires_at <= excluded.updated_at
		THEN excluded.created_at ELSE store_items.created_at END,
	updated_at = excluded.updated_at,
	expires_at = excluded.expires_at,
	ttl = excluded.ttl
RETURNING id`)
		if err != nil {
			return err
		}
		defer upsert.Close()
		delVecs, err := tx.PrepareContext(ctx, `DELETE FROM store_vectors WHERE item_id = ?`)
		if err != nil {
			return err
		}
		defer delVecs.Close()
		insVec, err := tx.PrepareContext(ctx, `INSERT INTO store_vectors (item_id, seq, field, dims, embedding) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer insVec.Close()
		namespaces := make([][]string, len(writes))
		for i, w := range writes {
			namespaces[i] = w.Namespace
			var expires, ttl any
			if w.TTL > 0 {
				expires, ttl = micros(w.Now.Add(w.TTL)), w.TTL.Microseconds()
			}
			var id int64
			if err := upsert.QueryRowContext(ctx, store.JoinNamespace(w.Namespace), w.Key, string(w.Value),
				micros(w.Now), micros(w.Now), expires, ttl).Scan(&id); err != nil {
				return err
			}
			if _, err := delVecs.ExecContext(ctx, id); err != nil {
				return err
			}
			for seq, v := range w.Vectors {
				if _, err := insVec.ExecContext(ctx, id, seq, v.Field, len(v.Embedding), rows.EncodeVector(v.Embedding)); err != nil {
					return err
				}
			}
		}
		return bumpGenerations(ctx, tx, namespaces)
	})
	if err != nil {
		return fmt.Errorf("store/sqlite: put: %w", err)
	}
	return nil
}

// Get implements store.Backend. Only an item with a TTL costs a write to
// refresh: reads of others stay reads.
func (b *Backend) Get(ctx context.Context, ns []string, key string, now time.Time, refresh bool) (*store.Record, error) {
	j := store.JoinNamespace(ns)
	r, err := scanRecord(b.db.QueryRowContext(ctx, `SELECT `+itemCols+` FROM store_items
WHERE namespace = ? AND key = ? AND `+liveCond, j, key, micros(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: get: %w", err)
	}
	if refresh && r.TTL > 0 {
		res, err := b.db.ExecContext(ctx, `UPDATE store_items SET expires_at = ? + ttl
WHERE id = ? AND ttl IS NOT NULL AND expires_at > ?`, micros(now), r.ID, micros(now))
		if err != nil {
			return nil, fmt.Errorf("store/sqlite: get: refresh ttl: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			r.ExpiresAt = now.Add(r.TTL)
		}
	}
	return &r, nil
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, ns []string, key string) error {
	err := withTx(ctx, b.db, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `DELETE FROM store_items WHERE namespace = ? AND key = ? RETURNING id`,
			store.JoinNamespace(ns), key).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM store_vectors WHERE item_id = ?`, id); err != nil {
			return err
		}
		return bumpGenerations(ctx, tx, [][]string{ns})
	})
	if err != nil {
		return fmt.Errorf("store/sqlite: delete: %w", err)
	}
	return nil
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

// condSQL translates one condition; its semantics are store.Condition.Match.
func condSQL(c store.Condition) (string, []any) {
	p := jsonPath(c.Path)
	eq := func() (string, []any) {
		switch v := c.Value.(type) {
		case nil:
			return `(json_type(value, ?) IS NULL OR json_type(value, ?) = 'null')`, []any{p, p}
		case bool:
			if v {
				return `(json_type(value, ?) IS 'true')`, []any{p}
			}
			return `(json_type(value, ?) IS 'false')`, []any{p}
		case string:
			return `(json_type(value, ?) IS 'text' AND json_extract(value, ?) = ?)`, []any{p, p, v}
		case float64:
			return `(json_type(value, ?) IN ('integer', 'real') AND json_extract(value, ?) = ?)`, []any{p, p, v}
		}
		return "0", nil
	}
	switch c.Op {
	case store.OpEq:
		return eq()
	case store.OpNe:
		s, args := eq()
		return "NOT (" + s + " IS TRUE)", args
	}
	op := rows.CompareSQL(c.Op)
	switch v := c.Value.(type) {
	case string:
		return `(json_type(value, ?) IS 'text' AND json_extract(value, ?) ` + op + ` ?)`, []any{p, p, v}
	case float64:
		return `(json_type(value, ?) IN ('integer', 'real') AND json_extract(value, ?) ` + op + ` ?)`, []any{p, p, v}
	}
	return "0", nil
}

// Search implements store.Backend.
func (b *Backend) Search(ctx context.Context, q *store.Query) ([]store.Record, error) {
	where, args := prefixCond("namespace", q.Prefix)
	conds := []string{where, liveCond}
	args = append(args, micros(q.Now))
	for _, c := range q.Filter {
		s, a := condSQL(c)
		conds = append(conds, s)
		args = append(args, a...)
	}
	if q.IDs != nil {
		if len(q.IDs) == 0 {
			return nil, nil
		}
		conds = append(conds, "id IN ("+idList(q.IDs)+")")
	}
	cols := itemCols
	if q.IDsOnly {
		cols = "id"
	}
	query := `SELECT ` + cols + ` FROM store_items WHERE ` + strings.Join(conds, " AND ") +
		` ORDER BY updated_at DESC, namespace, key LIMIT ? OFFSET ?`
	args = append(args, q.Limit, q.Offset)
	rs, err := b.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: search: %w", err)
	}
	defer rs.Close()
	var out []store.Record
	for rs.Next() {
		var r store.Record
		if q.IDsOnly {
			err = rs.Scan(&r.ID)
		} else {
			r, err = scanRecord(rs)
		}
		if err != nil {
			return nil, fmt.Errorf("store/sqlite: search: %w", err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("store/sqlite: search: %w", err)
	}
	return out, nil
}

// idList renders ids as SQL integer literals. Inlining them (they are
// integers, so nothing can be injected) avoids SQLite's cap on parameters
// and lets the planner look each one up by rowid.
func idList(ids []int64) string {
	b := make([]byte, 0, 8*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// Refresh implements store.Backend.
func (b *Backend) Refresh(ctx context.Context, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := b.db.ExecContext(ctx, `UPDATE store_items SET expires_at = ? + ttl
WHERE ttl IS NOT NULL AND expires_at > ? AND id IN (`+idList(ids)+`)`, micros(now), micros(now))
	if err != nil {
		return fmt.Errorf("store/sqlite: refresh ttl: %w", err)
	}
	return nil
}

// Namespaces implements store.Backend.
func (b *Backend) Namespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error) {
	where, args := prefixCond("namespace", prefix)
	args = append(args, micros(now))
	rs, err := b.db.QueryContext(ctx, `SELECT DISTINCT namespace FROM store_items WHERE `+where+` AND `+liveCond, args...)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: list namespaces: %w", err)
	}
	defer rs.Close()
	var out [][]string
	for rs.Next() {
		var ns string
		if err := rs.Scan(&ns); err != nil {
			return nil, fmt.Errorf("store/sqlite: list namespaces: %w", err)
		}
		out = append(out, store.SplitNamespace(ns))
	}
	return out, rs.Err()
}

// Sweep implements store.Backend.
func (b *Backend) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := withTx(ctx, b.db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM store_vectors WHERE item_id IN
(SELECT id FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?)`, micros(now)); err != nil {
			return err
		}
		rs, err := tx.QueryContext(ctx, `DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING namespace`, micros(now))
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		var namespaces [][]string
		for rs.Next() {
			var ns string
			if err := rs.Scan(&ns); err != nil {
				rs.Close()
				return err
			}
			n++
			if !seen[ns] {
				seen[ns] = true
				namespaces = append(namespaces, store.SplitNamespace(ns))
			}
		}
		if err := rs.Close(); err != nil {
			return err
		}
		if err := rs.Err(); err != nil {
			return err
		}
		return bumpGenerations(ctx, tx, namespaces)
	})
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: sweep: %w", err)
	}
	return n, nil
}

// Generation implements store.VectorSource.
func (b *Backend) Generation(ctx context.Context, prefix []string) (int64, error) {
	var gen int64
	var err error
	if len(prefix) == 0 {
		err = b.db.QueryRowContext(ctx, `SELECT coalesce(sum(gen), 0) FROM store_generations WHERE depth = 1`).Scan(&gen)
	} else {
		err = b.db.QueryRowContext(ctx, `SELECT gen FROM store_generations WHERE prefix = ?`, store.JoinNamespace(prefix)).Scan(&gen)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: generation: %w", err)
	}
	return gen, nil
}

// Vectors implements store.VectorSource.
func (b *Backend) Vectors(ctx context.Context, prefix []string, dims int, fn func(id int64, vec []float32) error) error {
	where, args := prefixCond("i.namespace", prefix)
	args = append(args, dims)
	rs, err := b.db.QueryContext(ctx, `SELECT v.item_id, v.embedding FROM store_items i JOIN store_vectors v ON v.item_id = i.id
WHERE `+where+` AND v.dims = ? ORDER BY v.item_id, v.seq`, args...)
	if err != nil {
		return fmt.Errorf("store/sqlite: load vectors: %w", err)
	}
	defer rs.Close()
	var (
		id  int64
		raw sql.RawBytes
		vec []float32
	)
	for rs.Next() {
		if err := rs.Scan(&id, &raw); err != nil {
			return fmt.Errorf("store/sqlite: load vectors: %w", err)
		}
		if vec, err = rows.DecodeVector(vec, raw); err != nil {
			return fmt.Errorf("store/sqlite: item %d: %w", id, err)
		}
		if err := fn(id, vec); err != nil {
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("store/sqlite: load vectors: %w", err)
	}
	return nil
}
