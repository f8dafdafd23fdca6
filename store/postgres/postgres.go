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
// Queries run as named prepared statements cached per connection (pgx's
// QueryExecModeCacheStatement): PostgreSQL parses and plans each query
// text once per connection. The query texts vary only with the shape of a
// filter, not its values, so the per-connection cache (512 statements)
// holds them. Behind PgBouncer in transaction pooling mode older than 1.21,
// add default_query_exec_mode=exec to the connection string: every query
// then goes as the unnamed statement.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	pgxconn "github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/weftlabs/weft/internal/pgconn"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/internal/sqlstore"
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
	*sqlstore.Core
	pool     *pgxpool.Pool
	owned    bool
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
// QueryExecModeCacheStatement unless the string names a
// default_query_exec_mode.
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
	b := &Backend{Core: sqlstore.New(newPGDB(pool), Dialect), pool: pool, dims: opts.Dims}
	if err := b.Migrate(ctx); err != nil {
		return nil, err
	}
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
	return sqlstore.New(newPGDB(pool), Dialect).Migrate(ctx)
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
	if use, err := usePGVector(opts.Vector, version); !use {
		return err
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
	b.Vec = vecColumn // the vec column exists: write it
	if err := b.backfill(ctx); err != nil {
		return err
	}
	b.native = b.dims > 0
	return nil
}

// usePGVector decides from the extension's installed version ("" when it
// is neither installed nor installable) whether the backend stores vectors
// in a pgvector column: never when mode is VectorExact, and with
// ErrNoPGVector when mode is VectorPGVector and the extension is missing.
func usePGVector(mode VectorMode, version string) (bool, error) {
	switch {
	case mode == VectorExact:
		return false, nil
	case version != "":
		return true, nil
	case mode == VectorPGVector:
		return false, ErrNoPGVector
	}
	return false, nil
}

// vecColumn is the pgvector column written beside each vector's bytes.
var vecColumn = &sqlstore.Vec{
	Col:  "vec",
	Expr: func(p string) string { return p + "::vector" },
	Arg:  func(v []float32) any { return pgvector.NewVector(v).String() },
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
			v, err := sqlstore.DecodeVector(nil, raw)
			if err != nil {
				rs.Close()
				return fmt.Errorf("store/postgres: backfill vectors: item %d: %w", id, err)
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

// Dialect is the PostgreSQL flavour of the store's SQL: times as
// timestamptz, the value as JSONB filtered with #> paths, and rows a writer
// holds skipped by refreshes and sweeps.
var Dialect = &sqlstore.Dialect{
	Name:            "store/postgres",
	Migrations:      migrations,
	MigrationsTable: `CREATE TABLE IF NOT EXISTS store_migrations (version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
	TTL:             "ttl_us",
	Time:            func(t time.Time) any { return t },
	JSON:            func(p string) string { return p + "::jsonb" },
	Expiry:          func(now string) string { return now + "::timestamptz + ttl_us * interval '1 microsecond'" },
	SkipLocked:      " FOR UPDATE SKIP LOCKED",
	Eq:              eq,
	Compare:         compare,
	IDs: func(a *sqlstore.Args, col string, ids []int64) string {
		return col + " = ANY(" + a.Add(ids) + "::bigint[])"
	},
}

// at is the JSONB value at the path in placeholder p.
func at(p string) string { return "(value #> " + p + "::text[])" }

// eq is Dialect.Eq.
func eq(a *sqlstore.Args, path []string, v any) string {
	p := at(a.Add(path))
	if v == nil {
		return "(" + p + " IS NULL OR jsonb_typeof(" + p + ") = 'null')"
	}
	j, _ := json.Marshal(v)
	return "(" + p + " = " + a.Add(string(j)) + "::jsonb)"
}

// compare is Dialect.Compare. Strings compare byte-wise, as in the other
// backends.
func compare(a *sqlstore.Args, path []string, op string, v any) string {
	p := a.Add(path)
	if s, ok := v.(string); ok {
		return "(jsonb_typeof(" + at(p) + ") = 'string' AND (value #>> " + p + "::text[]) COLLATE \"C\" " + op + " " + a.Add(s) + "::text)"
	}
	j, _ := json.Marshal(v)
	return "(jsonb_typeof(" + at(p) + ") = 'number' AND " + at(p) + " " + op + " " + a.Add(string(j)) + "::jsonb)"
}

// NativeVectorSearch implements store.VectorSearcher: true when pgvector is
// in use and its index was built for dims.
func (b *Backend) NativeVectorSearch(dims int) bool { return b.native && dims == b.dims }

// SearchVectors implements store.VectorSearcher with pgvector's HNSW index
// (approximate). Items with several vectors appear once, at their best.
func (b *Backend) SearchVectors(ctx context.Context, q *store.Query, query []float32) ([]store.Record, error) {
	need := q.Limit + q.Offset
	k := max(need*2, 20)
	for {
		var out []store.Record
		var rowsSeen int
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(efSearch(k))); err != nil {
				return err
			}
			if b.iterScan {
				if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)`); err != nil {
					return err
				}
			}
			sql, a := b.searchSQL(q, query, k)
			rs, err := tx.Query(ctx, sql, a...)
			if err != nil {
				return err
			}
			defer rs.Close()
			seen := map[int64]bool{}
			for rs.Next() {
				rowsSeen++
				var score float64
				r, err := sqlstore.ScanRecord(rs, &score)
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

// efSearch is the HNSW candidate list size for k wanted rows: at least
// pgvector's default of 40, at most its limit of 1000.
func efSearch(k int) int { return min(max(k, 40), 1000) }

// searchSQL is the query of SearchVectors: the k vectors of b.dims
// dimensions nearest to query by cosine distance, through the partial HNSW
// index of that dimension count (the cast and the dims condition must match
// the index's expression and predicate for PostgreSQL to use it), with
// their items' columns and the similarity as score.
func (b *Backend) searchSQL(q *store.Query, query []float32, k int) (string, sqlstore.Args) {
	d := strconv.Itoa(b.dims)
	var a sqlstore.Args
	qv := a.Add(pgvector.NewVector(query))
	dist := `v.vec::vector(` + d + `) <=> ` + qv + `::vector(` + d + `)`
	sql := `SELECT ` + b.ItemCols("i.") + `, 1 - (` + dist + `) AS score
FROM store_vectors v JOIN store_items i ON i.id = v.item_id
WHERE v.dims = ` + d + ` AND v.vec IS NOT NULL AND ` + b.Where(&a, q, "i.") + `
ORDER BY ` + dist + ` LIMIT ` + a.Add(k)
	return sql, a
}

// pgDB adapts a pgx pool to sqlstore.DB.
type pgDB struct {
	pool *pgxpool.Pool
	// describe asks read-only transactions for binary results through a
	// describe round trip (pgx's QueryExecModeDescribeExec), for a pool
	// that does not prepare statements, whose results otherwise come as
	// text; a prepared statement gives binary results already.
	describe bool
}

func newPGDB(pool *pgxpool.Pool) pgDB {
	return pgDB{pool: pool, describe: !pgconn.Prepares(pool.Config().ConnConfig)}
}

func (p pgDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return pgTx{q: p.pool}.Exec(ctx, query, args...)
}

func (p pgDB) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return pgTx{q: p.pool}.Query(ctx, query, args...)
}

// Begin implements sqlstore.DB. A read-only transaction asks for binary
// results (see pgDB.describe; describe-exec is an unnamed statement, safe
// behind PgBouncer because the transaction pins the connection); a
// migration holds a transaction advisory lock.
func (p pgDB) Begin(ctx context.Context, mode sqlstore.Mode, fn func(sqlstore.Tx) error) error {
	opts := pgx.TxOptions{}
	if mode == sqlstore.ReadOnly {
		opts.AccessMode = pgx.ReadOnly
	}
	return pgx.BeginTxFunc(ctx, p.pool, opts, func(tx pgx.Tx) error {
		if mode == sqlstore.Migration {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey); err != nil {
				return err
			}
		}
		return fn(pgTx{tx, p.describe && mode == sqlstore.ReadOnly})
	})
}

// pgQuerier is what a pool and a transaction share.
type pgQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgxconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

type pgTx struct {
	q      pgQuerier
	binary bool
}

// Exec runs a statement; one without arguments goes by the simple protocol,
// which allows several statements in one (the migrations).
func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if len(args) == 0 {
		args = []any{pgx.QueryExecModeSimpleProtocol}
	}
	tag, err := t.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t pgTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if t.binary {
		// The exec mode is an option, not a parameter, so it is not numbered.
		args = append([]any{pgx.QueryExecModeDescribeExec}, args...)
	}
	rs, err := t.q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rs}, nil
}

// ExecBatch sends the statements in one round trip.
func (t pgTx) ExecBatch(ctx context.Context, stmts []sqlstore.Stmt) error {
	batch := &pgx.Batch{}
	for _, st := range stmts {
		batch.Queue(st.Query, st.Args...)
	}
	return t.q.SendBatch(ctx, batch).Close()
}

type pgRows struct{ pgx.Rows }

func (r pgRows) Close() { r.Rows.Close() }
