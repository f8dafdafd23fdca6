// Package postgres is the PostgreSQL store backend, for stores shared by
// several processes and servers. It uses pgx/v5 with a connection pool.
//
// Items live in store_items (value as JSONB, namespaces and keys in the "C"
// collation so they sort and prefix-match byte-wise like the other
// backends), vectors in store_vectors, and store_generations counts writes
// per namespace prefix so each process knows when its cached vectors are
// stale.
//
// Vector search has two paths, chosen at open:
//
//   - With the pgvector extension installed (or installable by the
//     connecting role), vectors are also stored in a vector column with an
//     HNSW index per dimension count, and PostgreSQL ranks them
//     (approximate nearest neighbours, cosine distance).
//   - Without it, vectors are stored as bytea of little-endian float32 and
//     the Store ranks them exactly in memory (see store.VectorSource).
//
// Queries run in pgx's QueryExecModeExec by default: no named prepared
// statements, so the backend works behind PgBouncer in transaction pooling
// mode. A default_query_exec_mode in the connection string overrides it.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/weftlabs/weft/internal/pgconn"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/internal/rows"
)

// VectorMode chooses how vectors are searched.
type VectorMode int

// Vector modes.
const (
	// VectorAuto uses pgvector when the extension is installed in the
	// database or can be created by the connecting role, else exact search.
	VectorAuto VectorMode = iota
	// VectorExact never uses pgvector: exact ranking in the Store.
	VectorExact
	// VectorPGVector requires pgvector; opening fails without it.
	VectorPGVector
)

// ErrNoPGVector means VectorPGVector was asked for but the extension is
// neither installed nor installable.
var ErrNoPGVector = errors.New("store/postgres: the pgvector extension is not available")

// Options configure a Backend.
type Options struct {
	// Vector chooses the vector search path (default VectorAuto).
	Vector VectorMode
	// Dims is the vector length the pgvector index is built for; Open
	// takes it from the store.Config. Without it pgvector is not used.
	Dims int
}

// Backend is the PostgreSQL store backend. It implements store.Backend,
// store.VectorSource and, with pgvector, store.VectorSearcher.
type Backend struct {
	pool     *pgxpool.Pool
	owned    bool
	pgvector bool // the vec column exists and is written
	native   bool // pgvector searches for dims
	dims     int
	iterScan bool // pgvector >= 0.8: hnsw.iterative_scan exists
}

var (
	_ store.Backend        = (*Backend)(nil)
	_ store.VectorSource   = (*Backend)(nil)
	_ store.VectorSearcher = (*Backend)(nil)
)

// PoolConfig parses a connection string the way Open does: it sets
// QueryExecModeExec unless the string names a default_query_exec_mode.
func PoolConfig(url string) (*pgxpool.Config, error) {
	pc, err := pgconn.PoolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: %w", err)
	}
	return pc, nil
}

// Open connects to url, migrates the database and returns a Store over it
// configured by cfg, with pgvector used when available.
func Open(ctx context.Context, url string, cfg store.Config) (*store.Store, error) {
	return OpenWith(ctx, url, cfg, Options{})
}

// OpenWith is Open with backend options; opts.Dims defaults to the index's.
func OpenWith(ctx context.Context, url string, cfg store.Config, opts Options) (*store.Store, error) {
	if opts.Dims == 0 && cfg.Index != nil {
		opts.Dims = cfg.Index.Dims
		if opts.Dims == 0 && cfg.Index.Embedder != nil {
			opts.Dims = cfg.Index.Embedder.Dims()
		}
	}
	pc, err := PoolConfig(url)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: connect: %w", err)
	}
	b, err := NewBackend(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	b.owned = true
	s, err := store.New(b, cfg)
	if err != nil {
		b.Close()
		return nil, err
	}
	return s, nil
}

// NewBackend migrates the database behind pool, sets up pgvector as opts
// say, and returns a backend over it. Close leaves pool open.
func NewBackend(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Backend, error) {
	if err := Migrate(ctx, pool); err != nil {
		return nil, err
	}
	b := &Backend{pool: pool, dims: opts.Dims}
	if opts.Vector != VectorExact {
		if err := b.setupPGVector(ctx, opts); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Close closes the pool if the backend opened it.
func (b *Backend) Close() error {
	if b.owned {
		b.pool.Close()
	}
	return nil
}

// Pool returns the connection pool.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// UsesPGVector reports whether searches are ranked by pgvector.
func (b *Backend) UsesPGVector() bool { return b.native }

// advisoryKey serialises migrations and pgvector setup across processes.
const advisoryKey int64 = 0x7765667473746f72 // "weftstor"

// migrations are applied in order; never edit one that has shipped.
var migrations = []string{
	1: `
CREATE TABLE store_items (
	id         BIGSERIAL PRIMARY KEY,
	namespace  TEXT COLLATE "C" NOT NULL,
	key        TEXT COLLATE "C" NOT NULL,
	value      JSONB NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ,
	ttl_us     BIGINT,
	UNIQUE (namespace, key)
);
CREATE INDEX store_items_updated ON store_items (updated_at DESC, namespace, key);
CREATE INDEX store_items_expires ON store_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE store_vectors (
	item_id   BIGINT NOT NULL REFERENCES store_items (id) ON DELETE CASCADE,
	seq       INT    NOT NULL,
	field     TEXT   NOT NULL,
	dims      INT    NOT NULL,
	embedding BYTEA  NOT NULL
);
CREATE INDEX store_vectors_item ON store_vectors (item_id, seq);
CREATE TABLE store_generations (
	prefix TEXT COLLATE "C" PRIMARY KEY,
	depth  INT    NOT NULL,
	gen    BIGINT NOT NULL
);
CREATE INDEX store_generations_depth ON store_generations (depth);
`,
}

// SchemaVersion is the schema version this package migrates to.
const SchemaVersion = 1

// Migrate brings the store tables to SchemaVersion. It holds a transaction
// advisory lock while it works, so processes migrating at once wait for each
// other and each migration runs once; a database migrated by a newer weft is
// an error.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS store_migrations (version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM store_migrations`).Scan(&cur); err != nil {
			return err
		}
		if cur > SchemaVersion {
			return fmt.Errorf("database schema version %d is newer than this weft's %d", cur, SchemaVersion)
		}
		for v := cur + 1; v <= SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v], pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO store_migrations (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	return nil
}

// setupPGVector finds or creates the extension and, when it is there, adds
// the vector column, the HNSW index for b.dims and fills in vectors stored
// before pgvector was.
func (b *Backend) setupPGVector(ctx context.Context, opts Options) error {
	var version string
	err := b.pool.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		var available bool
		if err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available); err != nil {
			return fmt.Errorf("store/postgres: look for pgvector: %w", err)
		}
		if available {
			// Needs a role allowed to create it; without one, fall back.
			if _, cerr := b.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); cerr == nil {
				err = b.pool.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version)
			}
		}
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store/postgres: look for pgvector: %w", err)
	}
	if version == "" {
		if opts.Vector == VectorPGVector {
			return ErrNoPGVector
		}
		return nil
	}
	b.iterScan = versionAtLeast(version, 0, 8)
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE store_vectors ADD COLUMN IF NOT EXISTS vec vector`); err != nil {
			return err
		}
		if b.dims > 0 {
			d := strconv.Itoa(b.dims)
			_, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS store_vectors_hnsw_`+d+` ON store_vectors
USING hnsw ((vec::vector(`+d+`)) vector_cosine_ops) WHERE dims = `+d)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store/postgres: set up pgvector %s: %w", version, err)
	}
	b.pgvector = true
	if err := b.backfill(ctx); err != nil {
		return err
	}
	b.native = b.dims > 0
	return nil
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// backfill fills the vector column of rows written without pgvector.
func (b *Backend) backfill(ctx context.Context) error {
	for {
		rs, err := b.pool.Query(ctx, `SELECT item_id, seq, embedding FROM store_vectors WHERE vec IS NULL LIMIT 1000`)
		if err != nil {
			return fmt.Errorf("store/postgres: backfill vectors: %w", err)
		}
		var ids []int64
		var seqs []int32
		var vecs []string
		for rs.Next() {
			var id int64
			var seq int32
			var raw []byte
			if err := rs.Scan(&id, &seq, &raw); err != nil {
				rs.Close()
				return fmt.Errorf("store/postgres: backfill vectors: %w", err)
			}
			v, err := rows.DecodeVector(nil, raw)
			if err != nil {
				rs.Close()
				return err
			}
			ids, seqs, vecs = append(ids, id), append(seqs, seq), append(vecs, pgvector.NewVector(v).String())
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return fmt.Errorf("store/postgres: backfill vectors: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := b.pool.Exec(ctx, `UPDATE store_vectors v SET vec = u.vec::vector
FROM unnest($1::bigint[], $2::int[], $3::text[]) AS u(item_id, seq, vec)
WHERE v.item_id = u.item_id AND v.seq = u.seq`, ids, seqs, vecs); err != nil {
			return fmt.Errorf("store/postgres: backfill vectors: %w", err)
		}
	}
}

func itemCols(alias string) string {
	cols := []string{"id", "namespace", "key", "value", "created_at", "updated_at", "expires_at", "ttl_us"}
	for i, c := range cols {
		cols[i] = alias + c
	}
	return strings.Join(cols, ", ")
}

func scanRecord(sc pgx.Row, extra ...any) (store.Record, error) {
	var (
		r       store.Record
		ns      string
		value   []byte
		expires *time.Time
		ttl     *int64
	)
	dest := append([]any{&r.ID, &ns, &r.Key, &value, &r.CreatedAt, &r.UpdatedAt, &expires, &ttl}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	r.Namespace = store.SplitNamespace(ns)
	r.Value = value
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	if expires != nil {
		r.ExpiresAt = expires.UTC()
	}
	if ttl != nil {
		r.TTL = time.Duration(*ttl) * time.Microsecond
	}
	return r, nil
}

// args collects query parameters and hands out their placeholders.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

func (a *args) prefixCond(col string, prefix []string) string {
	if len(prefix) == 0 {
		return "TRUE"
	}
	p := store.JoinNamespace(prefix)
	lo, hi := store.PrefixRange(p)
	return fmt.Sprintf("(%[1]s = %[2]s OR (%[1]s >= %[3]s AND %[1]s < %[4]s))", col, a.add(p), a.add(lo), a.add(hi))
}

func (a *args) liveCond(alias string, now time.Time) string {
	return fmt.Sprintf("(%[1]sexpires_at IS NULL OR %[1]sexpires_at > %[2]s)", alias, a.add(now))
}

// cond translates one condition; its semantics are store.Condition.Match.
func (a *args) cond(c store.Condition) string {
	p := a.add(c.Path)
	at := "(value #> " + p + "::text[])"
	eq := func() string {
		if c.Value == nil {
			return "(" + at + " IS NULL OR jsonb_typeof(" + at + ") = 'null')"
		}
		j, _ := json.Marshal(c.Value)
		return "(" + at + " = " + a.add(string(j)) + "::jsonb)"
	}
	switch c.Op {
	case store.OpEq:
		return eq()
	case store.OpNe:
		return "NOT (" + eq() + " IS TRUE)"
	}
	op := rows.CompareSQL(c.Op)
	switch v := c.Value.(type) {
	case string:
		return "(jsonb_typeof(" + at + ") = 'string' AND (value #>> " + p + "::text[]) COLLATE \"C\" " + op + " " + a.add(v) + "::text)"
	case float64:
		j, _ := json.Marshal(v)
		return "(jsonb_typeof(" + at + ") = 'number' AND " + at + " " + op + " " + a.add(string(j)) + "::jsonb)"
	}
	return "FALSE"
}

func bumpSQL(a *args, namespaces [][]string) string {
	ps := rows.Prefixes(namespaces)
	if len(ps) == 0 {
		return ""
	}
	prefixes := make([]string, len(ps))
	depths := make([]int32, len(ps))
	for i, p := range ps {
		prefixes[i], depths[i] = p.Joined, int32(p.Depth)
	}
	return `INSERT INTO store_generations (prefix, depth, gen)
SELECT p, d, 1 FROM unnest(` + a.add(prefixes) + `::text[], ` + a.add(depths) + `::int[]) AS u(p, d)
ORDER BY p
ON CONFLICT (prefix) DO UPDATE SET gen = store_generations.gen + 1`
}

// Put implements store.Backend. Items are written in (namespace, key) order
// and generation rows last, in prefix order, so concurrent transactions
// take row locks in one order and cannot deadlock; a key given twice keeps
// its last value.
func (b *Backend) Put(ctx context.Context, writes []store.Write) error {
	writes = slices.Clone(writes)
	slices.SortStableFunc(writes, func(x, y store.Write) int {
		if c := strings.Compare(store.JoinNamespace(x.Namespace), store.JoinNamespace(y.Namespace)); c != 0 {
			return c
		}
		return strings.Compare(x.Key, y.Key)
	})
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		namespaces := make([][]string, len(writes))
		for i, w := range writes {
			namespaces[i] = w.Namespace
			var a args
			var expires *time.Time
			var ttl *int64
			if w.TTL > 0 {
				e, t := w.Now.Add(w.TTL), w.TTL.Microseconds()
				expires, ttl = &e, &t
			}
			fields := make([]string, len(w.Vectors))
			embs := make([][]byte, len(w.Vectors))
			var vecs []string
			for j, v := range w.Vectors {
				fields[j], embs[j] = v.Field, rows.EncodeVector(v.Embedding)
				if b.pgvector {
					vecs = append(vecs, pgvector.NewVector(v.Embedding).String())
				}
			}
			dims := 0
			if len(w.Vectors) > 0 {
				dims = len(w.Vectors[0].Embedding)
			}
			sql := `WITH up AS (
	INSERT INTO store_items (namespace, key, value, created_at, updated_at, expires_at, ttl_us)
	VALUES (` + a.add(store.JoinNamespace(w.Namespace)) + `, ` + a.add(w.Key) + `, ` + a.add(string(w.Value)) + `::jsonb, ` +
				a.add(w.Now) + `, $4, ` + a.add(expires) + `::timestamptz, ` + a.add(ttl) + `::bigint)
	ON CONFLICT (namespace, key) DO UPDATE SET
		value = EXCLUDED.value,
		created_at = CASE WHEN store_items.expires_at IS NOT NULL AND store_items.expires_at <= EXCLUDED.updated_at
			THEN EXCLUDED.created_at ELSE store_items.created_at END,
		updated_at = EXCLUDED.updated_at,
		expires_at = EXCLUDED.expires_at,
		ttl_us = EXCLUDED.ttl_us
	RETURNING id
), del AS (
	DELETE FROM store_vectors WHERE item_id = (SELECT id FROM up)
)
`
			if b.pgvector {
				sql += `INSERT INTO store_vectors (item_id, seq, field, dims, embedding, vec)
SELECT (SELECT id FROM up), t.n - 1, t.field, ` + a.add(dims) + `::int, t.embedding, t.vec::vector
FROM unnest(` + a.add(fields) + `::text[], ` + a.add(embs) + `::bytea[], ` + a.add(vecs) + `::text[]) WITH ORDINALITY AS t(field, embedding, vec, n)`
			} else {
				sql += `INSERT INTO store_vectors (item_id, seq, field, dims, embedding)
SELECT (SELECT id FROM up), t.n - 1, t.field, ` + a.add(dims) + `::int, t.embedding
FROM unnest(` + a.add(fields) + `::text[], ` + a.add(embs) + `::bytea[]) WITH ORDINALITY AS t(field, embedding, n)`
			}
			batch.Queue(sql, a...)
		}
		var a args
		batch.Queue(bumpSQL(&a, namespaces), a...)
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return fmt.Errorf("store/postgres: put: %w", err)
	}
	return nil
}

// Get implements store.Backend. Only an item with a TTL costs a second
// statement to refresh.
func (b *Backend) Get(ctx context.Context, ns []string, key string, now time.Time, refresh bool) (*store.Record, error) {
	r, err := scanRecord(b.pool.QueryRow(ctx, `SELECT `+itemCols("")+` FROM store_items
WHERE namespace = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`, store.JoinNamespace(ns), key, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store/postgres: get: %w", err)
	}
	if refresh && r.TTL > 0 {
		tag, err := b.pool.Exec(ctx, `UPDATE store_items SET expires_at = $1 + ttl_us * interval '1 microsecond'
WHERE id = $2 AND ttl_us IS NOT NULL AND expires_at > $1`, now, r.ID)
		if err != nil {
			return nil, fmt.Errorf("store/postgres: get: refresh ttl: %w", err)
		}
		if tag.RowsAffected() == 1 {
			r.ExpiresAt = now.Add(r.TTL)
		}
	}
	return &r, nil
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, ns []string, key string) error {
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM store_items WHERE namespace = $1 AND key = $2`, store.JoinNamespace(ns), key)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		var a args
		_, err = tx.Exec(ctx, bumpSQL(&a, [][]string{ns}), a...)
		return err
	})
	if err != nil {
		return fmt.Errorf("store/postgres: delete: %w", err)
	}
	return nil
}

// where builds the shared WHERE clause of searches over store_items.
func (a *args) where(q *store.Query, alias string) string {
	conds := []string{a.prefixCond(alias+"namespace", q.Prefix), a.liveCond(alias, q.Now)}
	for _, c := range q.Filter {
		conds = append(conds, a.cond(c))
	}
	if q.IDs != nil {
		conds = append(conds, alias+"id = ANY("+a.add(q.IDs)+"::bigint[])")
	}
	return strings.Join(conds, " AND ")
}

// Search implements store.Backend.
func (b *Backend) Search(ctx context.Context, q *store.Query) ([]store.Record, error) {
	if q.IDs != nil && len(q.IDs) == 0 {
		return nil, nil
	}
	var a args
	cols := itemCols("")
	if q.IDsOnly {
		cols = "id"
	}
	sql := `SELECT ` + cols + ` FROM store_items WHERE ` + a.where(q, "") + ` ORDER BY updated_at DESC, namespace, key`
	if q.Limit >= 0 {
		sql += ` LIMIT ` + a.add(q.Limit)
	}
	sql += ` OFFSET ` + a.add(q.Offset)
	rs, err := b.pool.Query(ctx, sql, a...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
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
			return nil, fmt.Errorf("store/postgres: search: %w", err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("store/postgres: search: %w", err)
	}
	return out, nil
}

// Refresh implements store.Backend.
func (b *Backend) Refresh(ctx context.Context, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	// Rows a writer holds are skipped (the writer sets a new expiry
	// anyway), so refreshing never deadlocks with a multi-item Put.
	_, err := b.pool.Exec(ctx, `UPDATE store_items SET expires_at = $1 + ttl_us * interval '1 microsecond'
WHERE id IN (SELECT id FROM store_items WHERE id = ANY($2::bigint[]) AND ttl_us IS NOT NULL AND expires_at > $1
	ORDER BY id FOR UPDATE SKIP LOCKED)`, now, ids)
	if err != nil {
		return fmt.Errorf("store/postgres: refresh ttl: %w", err)
	}
	return nil
}

// Namespaces implements store.Backend.
func (b *Backend) Namespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error) {
	var a args
	sql := `SELECT DISTINCT namespace FROM store_items WHERE ` + a.prefixCond("namespace", prefix) + ` AND ` + a.liveCond("", now)
	rs, err := b.pool.Query(ctx, sql, a...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list namespaces: %w", err)
	}
	defer rs.Close()
	var out [][]string
	for rs.Next() {
		var ns string
		if err := rs.Scan(&ns); err != nil {
			return nil, fmt.Errorf("store/postgres: list namespaces: %w", err)
		}
		out = append(out, store.SplitNamespace(ns))
	}
	return out, rs.Err()
}

// sweepBatch is how many expired items one sweep transaction deletes.
const sweepBatch = 1000

// Sweep implements store.Backend. It deletes in batches, each its own
// transaction, skipping rows a writer holds (a writer overwriting an expired
// item makes it live again), so sweeping never waits on or deadlocks with
// writers.
func (b *Backend) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			rs, err := tx.Query(ctx, `DELETE FROM store_items WHERE id IN (
	SELECT id FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= $1
	ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING namespace`, now, sweepBatch)
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
			rs.Close()
			if err := rs.Err(); err != nil {
				return err
			}
			if len(namespaces) == 0 {
				return nil
			}
			var a args
			_, err = tx.Exec(ctx, bumpSQL(&a, namespaces), a...)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("store/postgres: sweep: %w", err)
		}
		total += n
		if n < sweepBatch {
			return total, nil
		}
	}
}

// Generation implements store.VectorSource.
func (b *Backend) Generation(ctx context.Context, prefix []string) (int64, error) {
	var gen int64
	var err error
	if len(prefix) == 0 {
		err = b.pool.QueryRow(ctx, `SELECT coalesce(sum(gen), 0)::bigint FROM store_generations WHERE depth = 1`).Scan(&gen)
	} else {
		err = b.pool.QueryRow(ctx, `SELECT gen FROM store_generations WHERE prefix = $1`, store.JoinNamespace(prefix)).Scan(&gen)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("store/postgres: generation: %w", err)
	}
	return gen, nil
}

// Vectors implements store.VectorSource. It reads in one read-only
// transaction with binary results (describe-exec: an unnamed statement,
// safe behind PgBouncer because the transaction pins the connection).
func (b *Backend) Vectors(ctx context.Context, prefix []string, dims int, fn func(id int64, vec []float32) error) error {
	err := pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var a args
		where := a.prefixCond("i.namespace", prefix)
		sql := `SELECT v.item_id, v.embedding FROM store_items i JOIN store_vectors v ON v.item_id = i.id
WHERE ` + where + ` AND v.dims = ` + a.add(dims) + ` ORDER BY v.item_id, v.seq`
		// The exec mode is an option, not a parameter, so it is not numbered.
		rs, err := tx.Query(ctx, sql, append([]any{pgx.QueryExecModeDescribeExec}, a...)...)
		if err != nil {
			return err
		}
		defer rs.Close()
		var (
			id  int64
			raw []byte
			vec []float32
		)
		for rs.Next() {
			if err := rs.Scan(&id, &raw); err != nil {
				return err
			}
			if vec, err = rows.DecodeVector(vec, raw); err != nil {
				return fmt.Errorf("item %d: %w", id, err)
			}
			if err := fn(id, vec); err != nil {
				return err
			}
		}
		return rs.Err()
	})
	if err != nil {
		return fmt.Errorf("store/postgres: load vectors: %w", err)
	}
	return nil
}

// NativeVectorSearch implements store.VectorSearcher: true when pgvector is
// in use and its index was built for dims.
func (b *Backend) NativeVectorSearch(dims int) bool { return b.native && dims == b.dims }

// SearchVectors implements store.VectorSearcher with pgvector's HNSW index
// (approximate). Items with several vectors appear once, at their best.
func (b *Backend) SearchVectors(ctx context.Context, q *store.Query, query []float32) ([]store.Record, error) {
	need := q.Limit + q.Offset
	k := max(need*2, 20)
	d := strconv.Itoa(b.dims)
	for {
		var out []store.Record
		var rowsSeen int
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(min(max(k, 40), 1000))); err != nil {
				return err
			}
			if b.iterScan {
				if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)`); err != nil {
					return err
				}
			}
			var a args
			qv := a.add(pgvector.NewVector(query))
			sql := `SELECT ` + itemCols("i.") + `, 1 - (v.vec::vector(` + d + `) <=> ` + qv + `::vector(` + d + `)) AS score
FROM store_vectors v JOIN store_items i ON i.id = v.item_id
WHERE v.dims = ` + d + ` AND v.vec IS NOT NULL AND ` + a.where(q, "i.") + `
ORDER BY v.vec::vector(` + d + `) <=> ` + qv + `::vector(` + d + `) LIMIT ` + a.add(k)
			rs, err := tx.Query(ctx, sql, a...)
			if err != nil {
				return err
			}
			defer rs.Close()
			seen := map[int64]bool{}
			for rs.Next() {
				rowsSeen++
				var score float64
				r, err := scanRecord(rs, &score)
				if err != nil {
					return err
				}
				if seen[r.ID] {
					continue
				}
				seen[r.ID] = true
				r.Score = &score
				out = append(out, r)
			}
			return rs.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("store/postgres: vector search: %w", err)
		}
		if len(out) >= need || rowsSeen < k {
			if q.Offset >= len(out) {
				return nil, nil
			}
			return out[q.Offset:min(len(out), need)], nil
		}
		k *= 2
	}
}
