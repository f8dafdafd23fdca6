package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/internal/sqldb"
	"github.com/weftlabs/weft/store"
)

// Dialect is what differs between the SQL databases.
type Dialect struct {
	// Name prefixes errors: "store/sqlite".
	Name string
	// Numbered rewrites $N placeholders as ?N (SQLite).
	Numbered bool
	// Migrations[v] takes the schema from version v-1 to v; Migrations[0]
	// is unused.
	Migrations []string
	// MigrationsTable creates store_migrations (version, applied_at) if it
	// does not exist.
	MigrationsTable string
	// TTL is the column holding an item's time to live in microseconds.
	TTL string
	// Time returns a time as a query argument, in the type the time
	// columns hold.
	Time func(time.Time) any
	// JSON wraps the placeholder of a JSON text argument for the value
	// column's type.
	JSON func(placeholder string) string
	// Expiry returns the SQL for an item's new expiry: the time at
	// placeholder now plus the item's TTL column.
	Expiry func(now string) string
	// SkipLocked ends a SELECT of items to change so that rows another
	// writer holds are skipped instead of waited for ("" where writers are
	// serialised anyway).
	SkipLocked string
	// Eq matches items whose value at path equals v (nil, a bool, a
	// string or a float64) as store.Condition.Match compares them.
	Eq func(a *Args, path []string, v any) string
	// Compare matches items whose value at path has v's type (string or
	// float64) and stands in SQL operator op to v.
	Compare func(a *Args, path []string, op string, v any) string
	// ValidJSON, when set, is a condition on the value column that holds
	// when the database can read it as JSON (where the column's type does
	// not ensure that): "json_valid(value)".
	ValidJSON string
	// Unlimited is the LIMIT clause of a search without a limit, where an
	// OFFSET needs one (SQLite: " LIMIT -1").
	Unlimited string
	// IDs, when set, matches col against a list of item ids passed as one
	// argument; otherwise the ids are inlined as integer literals.
	IDs func(a *Args, col string, ids []int64) string
}

// Vec is an extra vector column a backend writes besides the bytes (the
// pgvector column).
type Vec struct {
	// Col is the column's name.
	Col string
	// Expr wraps the placeholder of Arg's value: "CAST($1 AS vector)".
	Expr func(placeholder string) string
	// Arg returns the query argument for an embedding.
	Arg func([]float32) any
}

// Core implements the store.Backend and store.VectorSource queries over a
// DB. A backend embeds it.
type Core struct {
	db DB
	d  *Dialect
	// Vec, when set, is written with each vector.
	Vec *Vec
}

// New returns a Core. It does not migrate: call Migrate.
func New(db DB, d *Dialect) *Core { return &Core{db: db, d: d} }

// Q rewrites a query's placeholders for the dialect.
func (c *Core) Q(query string) string {
	if c.d.Numbered {
		return strings.ReplaceAll(query, "$", "?")
	}
	return query
}

// fail wraps a backend error with what was being done.
func (c *Core) fail(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", c.d.Name, op, err)
}

// Args collects query parameters and hands out their placeholders.
type Args []any

// Add appends v and returns its placeholder.
func (a *Args) Add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// PrefixCond matches namespaces in col at or under prefix.
func (a *Args) PrefixCond(col string, prefix []string) string {
	if len(prefix) == 0 {
		return "TRUE"
	}
	p := store.JoinNamespace(prefix)
	lo, hi := store.PrefixRange(p)
	return fmt.Sprintf("(%[1]s = %[2]s OR (%[1]s >= %[3]s AND %[1]s < %[4]s))", col, a.Add(p), a.Add(lo), a.Add(hi))
}

// Where builds the WHERE clause of a search over store_items (as alias,
// "" or "i.").
func (c *Core) Where(a *Args, q *store.Query, alias string) string {
	now := a.Add(c.d.Time(q.Now))
	conds := []string{a.PrefixCond(alias+"namespace", q.Prefix), "(" + alias + "expires_at IS NULL OR " + alias + "expires_at > " + now + ")"}
	if len(q.Filter) > 0 {
		var fc []string
		for _, cd := range q.Filter {
			fc = append(fc, c.cond(a, cd))
		}
		filter := "(" + strings.Join(fc, " AND ") + ")"
		if c.d.ValidJSON != "" {
			// A damaged value passes the filter, so that reading it
			// reports ErrCorrupt instead of failing the whole query.
			filter = "(CASE WHEN " + c.d.ValidJSON + " THEN " + filter + " ELSE TRUE END)"
		}
		conds = append(conds, filter)
	}
	if q.IDs != nil {
		conds = append(conds, c.inIDs(a, alias+"id", q.IDs))
	}
	return strings.Join(conds, " AND ")
}

// cond translates one condition; its semantics are store.Condition.Match.
func (c *Core) cond(a *Args, cd store.Condition) string {
	switch cd.Op {
	case store.OpEq:
		return c.d.Eq(a, cd.Path, cd.Value)
	case store.OpNe:
		return "NOT (" + c.d.Eq(a, cd.Path, cd.Value) + " IS TRUE)"
	}
	switch cd.Value.(type) {
	case string, float64:
		if op := CompareSQL(cd.Op); op != "" {
			return c.d.Compare(a, cd.Path, op, cd.Value)
		}
	}
	return "FALSE"
}

// inIDs matches col against ids.
func (c *Core) inIDs(a *Args, col string, ids []int64) string {
	if c.d.IDs != nil {
		return c.d.IDs(a, col, ids)
	}
	return col + " IN (" + idList(ids) + ")"
}

// idList renders ids as SQL integer literals. Inlining them (they are
// integers, so nothing can be injected) avoids SQLite's cap on parameters
// and lets the planner look each one up by key.
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

// ItemCols lists the columns ScanRecord reads, each prefixed by alias.
func (c *Core) ItemCols(alias string) string {
	cols := []string{"id", "namespace", "key", "value", "created_at", "updated_at", "expires_at", c.d.TTL}
	for i, col := range cols {
		cols[i] = alias + col
	}
	return strings.Join(cols, ", ")
}

// RawRecord is a store_items row as scanned, before decoding.
type RawRecord struct {
	ID                        int64
	Namespace, Key            string
	Value                     []byte
	Created, Updated, Expires any
	TTL                       *int64
}

// Dest returns the scan destinations of ItemCols, followed by extra.
func (r *RawRecord) Dest(extra ...any) []any {
	return append([]any{&r.ID, &r.Namespace, &r.Key, &r.Value, &r.Created, &r.Updated, &r.Expires, &r.TTL}, extra...)
}

// ScanRecord scans and decodes a row of ItemCols, then extra.
func ScanRecord(rows Rows, extra ...any) (store.Record, error) {
	var raw RawRecord
	if err := rows.Scan(raw.Dest(extra...)...); err != nil {
		return store.Record{}, err
	}
	return raw.Decode()
}

// Decode checks a stored row and returns it as a record. Whatever the
// bytes, it returns a record or an error wrapping store.ErrCorrupt that
// names the item: never a value that is not a JSON object, a time of the
// wrong type, or a TTL that is not positive.
func (r *RawRecord) Decode() (store.Record, error) {
	bad := func(format string, args ...any) (store.Record, error) {
		return store.Record{}, fmt.Errorf("%w: item %q in namespace %q (id %d): %s", store.ErrCorrupt, r.Key, r.Namespace, r.ID, fmt.Sprintf(format, args...))
	}
	rec := store.Record{ID: r.ID, Namespace: store.SplitNamespace(r.Namespace), Key: r.Key, Value: r.Value}
	if !isObject(r.Value) {
		return bad("value %.40q is not a JSON object", r.Value)
	}
	var ok bool
	if rec.CreatedAt, ok = asTime(r.Created); !ok {
		return bad("created_at %v is not a time", r.Created)
	}
	if rec.UpdatedAt, ok = asTime(r.Updated); !ok {
		return bad("updated_at %v is not a time", r.Updated)
	}
	if r.Expires != nil {
		if rec.ExpiresAt, ok = asTime(r.Expires); !ok {
			return bad("expires_at %v is not a time", r.Expires)
		}
	}
	if r.TTL != nil {
		us := *r.TTL
		if us <= 0 || us > math.MaxInt64/int64(time.Microsecond) {
			return bad("ttl of %d microseconds is out of range", us)
		}
		rec.TTL = time.Duration(us) * time.Microsecond
	}
	return rec, nil
}

// isObject reports whether v is one valid JSON object.
func isObject(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{' && json.Valid(v)
	}
	return false
}

// asTime converts a scanned time column: Unix microseconds (SQLite) or a
// timestamp (PostgreSQL).
func asTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case int64:
		return time.UnixMicro(t).UTC(), true
	case time.Time:
		return t.UTC(), true
	}
	return time.Time{}, false
}

// Migrate brings the store tables to the dialect's newest version under the
// migration lock, so processes migrating at once wait for each other and
// each migration runs once. A database migrated by a newer weft is an error
// rather than silently misread.
func (c *Core) Migrate(ctx context.Context) error {
	latest := len(c.d.Migrations) - 1
	err := c.db.Begin(ctx, Migration, func(tx Tx) error {
		if _, err := tx.Exec(ctx, c.d.MigrationsTable); err != nil {
			return err
		}
		var cur int64
		if _, err := sqldb.QueryRow(ctx, tx, `SELECT CAST(COALESCE(MAX(version), 0) AS BIGINT) FROM store_migrations`, nil, &cur); err != nil {
			return err
		}
		if cur > int64(latest) {
			return fmt.Errorf("database schema version %d is newer than this weft's %d", cur, latest)
		}
		for v := int(cur) + 1; v <= latest; v++ {
			if _, err := tx.Exec(ctx, c.d.Migrations[v]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, c.Q(`INSERT INTO store_migrations (version, applied_at) VALUES ($1, $2)`), v, c.d.Time(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return c.fail("migrate", err)
	}
	return nil
}

// bump returns the statement that counts a write in every prefix of the
// namespaces, or nil when there are none. Rows are inserted in prefix order
// (see Prefixes), so concurrent writers lock them in one order.
func (c *Core) bump(namespaces [][]string) *Stmt {
	ps := Prefixes(namespaces)
	if len(ps) == 0 {
		return nil
	}
	var a Args
	var sb strings.Builder
	sb.WriteString(`INSERT INTO store_generations (prefix, depth, gen) VALUES `)
	for i, p := range ps {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(" + a.Add(p.Joined) + ", " + a.Add(p.Depth) + ", 1)")
	}
	sb.WriteString(` ON CONFLICT (prefix) DO UPDATE SET gen = store_generations.gen + 1`)
	return &Stmt{Query: c.Q(sb.String()), Args: a}
}

// Put implements store.Backend. Items are written in (namespace, key) order
// and generation rows last, in prefix order, so concurrent transactions
// take row locks in one order and cannot deadlock; a key given twice keeps
// its last value. Vectors are tied to their item by its key, so the whole
// write is one batch.
func (c *Core) Put(ctx context.Context, writes []store.Write) error {
	writes = slices.Clone(writes)
	slices.SortStableFunc(writes, func(x, y store.Write) int {
		if n := strings.Compare(store.JoinNamespace(x.Namespace), store.JoinNamespace(y.Namespace)); n != 0 {
			return n
		}
		return strings.Compare(x.Key, y.Key)
	})
	ttl := c.d.TTL
	upsert := c.Q(`INSERT INTO store_items (namespace, key, value, created_at, updated_at, expires_at, ` + ttl + `)
VALUES ($1, $2, ` + c.d.JSON("$3") + `, $4, $4, $5, $6)
ON CONFLICT (namespace, key) DO UPDATE SET
	value = excluded.value,
	created_at = CASE WHEN store_items.expires_at IS NOT NULL AND store_items.expires_at <= excluded.updated_at
		THEN excluded.created_at ELSE store_items.created_at END,
	updated_at = excluded.updated_at,
	expires_at = excluded.expires_at,
	` + ttl + ` = excluded.` + ttl)
	item := `(SELECT id FROM store_items WHERE namespace = $1 AND key = $2)`
	delVecs := c.Q(`DELETE FROM store_vectors WHERE item_id = ` + item)
	insVec := `INSERT INTO store_vectors (item_id, seq, field, dims, embedding) VALUES (` + item + `, $3, $4, $5, $6)`
	if c.Vec != nil {
		insVec = `INSERT INTO store_vectors (item_id, seq, field, dims, embedding, ` + c.Vec.Col + `) VALUES (` + item + `, $3, $4, $5, $6, ` + c.Vec.Expr("$7") + `)`
	}
	insVec = c.Q(insVec)
	var stmts []Stmt
	namespaces := make([][]string, len(writes))
	for i, w := range writes {
		namespaces[i] = w.Namespace
		ns := store.JoinNamespace(w.Namespace)
		var expires, ttl any
		if w.TTL > 0 {
			expires, ttl = c.d.Time(w.Now.Add(w.TTL)), w.TTL.Microseconds()
		}
		stmts = append(stmts,
			Stmt{Query: upsert, Args: []any{ns, w.Key, string(w.Value), c.d.Time(w.Now), expires, ttl}},
			Stmt{Query: delVecs, Args: []any{ns, w.Key}})
		for seq, v := range w.Vectors {
			args := []any{ns, w.Key, seq, v.Field, len(v.Embedding), EncodeVector(v.Embedding)}
			if c.Vec != nil {
				args = append(args, c.Vec.Arg(v.Embedding))
			}
			stmts = append(stmts, Stmt{Query: insVec, Args: args})
		}
	}
	if b := c.bump(namespaces); b != nil {
		stmts = append(stmts, *b)
	}
	err := c.db.Begin(ctx, ReadWrite, func(tx Tx) error { return tx.ExecBatch(ctx, stmts) })
	if err != nil {
		return c.fail("put", err)
	}
	return nil
}

// Get implements store.Backend. Only an item with a TTL costs a write to
// refresh: reads of others stay reads.
func (c *Core) Get(ctx context.Context, ns []string, key string, now time.Time, refresh bool) (*store.Record, error) {
	rows, err := c.db.Query(ctx, c.Q(`SELECT `+c.ItemCols("")+` FROM store_items
WHERE namespace = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`), store.JoinNamespace(ns), key, c.d.Time(now))
	if err != nil {
		return nil, c.fail("get", err)
	}
	var r store.Record
	found := rows.Next()
	if found {
		r, err = ScanRecord(rows)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return nil, c.fail("get", err)
	}
	if !found {
		return nil, nil
	}
	if refresh && r.TTL > 0 {
		n, err := c.db.Exec(ctx, c.Q(`UPDATE store_items SET expires_at = `+c.d.Expiry("$1")+`
WHERE id = $2 AND `+c.d.TTL+` IS NOT NULL AND expires_at > $1`), c.d.Time(now), r.ID)
		if err != nil {
			return nil, c.fail("get: refresh ttl", err)
		}
		if n == 1 {
			r.ExpiresAt = now.Add(r.TTL)
		}
	}
	return &r, nil
}

// Delete implements store.Backend. The item row is locked first, as Put
// locks it, so a Delete and a Put of one key cannot deadlock.
func (c *Core) Delete(ctx context.Context, ns []string, key string) error {
	err := c.db.Begin(ctx, ReadWrite, func(tx Tx) error {
		ids, _, err := c.deleteItems(ctx, tx, `namespace = $1 AND key = $2`, store.JoinNamespace(ns), key)
		if err != nil || len(ids) == 0 {
			return err
		}
		return tx.ExecBatch(ctx, []Stmt{*c.bump([][]string{ns})})
	})
	if err != nil {
		return c.fail("delete", err)
	}
	return nil
}

// deleteItems deletes the items matching where, then their vectors, and
// returns their ids and their distinct namespaces.
func (c *Core) deleteItems(ctx context.Context, tx Tx, where string, args ...any) ([]int64, [][]string, error) {
	rows, err := tx.Query(ctx, c.Q(`DELETE FROM store_items WHERE `+where+` RETURNING id, namespace`), args...)
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	seen := map[string]bool{}
	var namespaces [][]string
	for rows.Next() {
		var id int64
		var ns string
		if err := rows.Scan(&id, &ns); err != nil {
			rows.Close()
			return nil, nil, err
		}
		ids = append(ids, id)
		if !seen[ns] {
			seen[ns] = true
			namespaces = append(namespaces, store.SplitNamespace(ns))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	var a Args
	if _, err := tx.Exec(ctx, c.Q(`DELETE FROM store_vectors WHERE `+c.inIDs(&a, "item_id", ids)), a...); err != nil {
		return nil, nil, err
	}
	return ids, namespaces, nil
}

// Search implements store.Backend.
func (c *Core) Search(ctx context.Context, q *store.Query) ([]store.Record, error) {
	if q.IDs != nil && len(q.IDs) == 0 {
		return nil, nil
	}
	var a Args
	cols := c.ItemCols("")
	if q.IDsOnly {
		cols = "id"
	}
	query := `SELECT ` + cols + ` FROM store_items WHERE ` + c.Where(&a, q, "") + ` ORDER BY updated_at DESC, namespace, key`
	if q.Limit >= 0 {
		query += ` LIMIT ` + a.Add(q.Limit)
	} else {
		query += c.d.Unlimited
	}
	query += ` OFFSET ` + a.Add(q.Offset)
	rows, err := c.db.Query(ctx, c.Q(query), a...)
	if err != nil {
		return nil, c.fail("search", err)
	}
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		var r store.Record
		if q.IDsOnly {
			err = rows.Scan(&r.ID)
		} else {
			r, err = ScanRecord(rows)
		}
		if err != nil {
			return nil, c.fail("search", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, c.fail("search", err)
	}
	return out, nil
}

// Refresh implements store.Backend. Rows a writer holds are skipped where
// the dialect can (the writer sets a new expiry anyway), so refreshing
// never deadlocks with a multi-item Put.
func (c *Core) Refresh(ctx context.Context, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	a := Args{c.d.Time(now)}
	_, err := c.db.Exec(ctx, c.Q(`UPDATE store_items SET expires_at = `+c.d.Expiry("$1")+`
WHERE id IN (SELECT id FROM store_items WHERE `+c.inIDs(&a, "id", ids)+` AND `+c.d.TTL+` IS NOT NULL AND expires_at > $1
	ORDER BY id`+c.d.SkipLocked+`)`), a...)
	if err != nil {
		return c.fail("refresh ttl", err)
	}
	return nil
}

// Namespaces implements store.Backend.
func (c *Core) Namespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error) {
	var a Args
	query := `SELECT DISTINCT namespace FROM store_items WHERE ` + a.PrefixCond("namespace", prefix) +
		` AND (expires_at IS NULL OR expires_at > ` + a.Add(c.d.Time(now)) + `)`
	rows, err := c.db.Query(ctx, c.Q(query), a...)
	if err != nil {
		return nil, c.fail("list namespaces", err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, c.fail("list namespaces", err)
		}
		out = append(out, store.SplitNamespace(ns))
	}
	if err := rows.Err(); err != nil {
		return nil, c.fail("list namespaces", err)
	}
	return out, nil
}

// SweepBatch is how many expired items one sweep transaction deletes.
const SweepBatch = 1000

// Sweep implements store.Backend. It deletes in batches, each its own
// transaction, skipping rows a writer holds where the dialect can (a
// writer overwriting an expired item makes it live again), so sweeping
// never waits on or deadlocks with writers.
func (c *Core) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for {
		var n int
		err := c.db.Begin(ctx, ReadWrite, func(tx Tx) error {
			ids, namespaces, err := c.deleteItems(ctx, tx, `id IN (
	SELECT id FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= $1
	ORDER BY id LIMIT $2`+c.d.SkipLocked+`)`, c.d.Time(now), SweepBatch)
			if err != nil || len(ids) == 0 {
				return err
			}
			n = len(ids)
			return tx.ExecBatch(ctx, []Stmt{*c.bump(namespaces)})
		})
		if err != nil {
			return total, c.fail("sweep", err)
		}
		total += int64(n)
		if n < SweepBatch {
			return total, nil
		}
	}
}

// Generation implements store.VectorSource.
func (c *Core) Generation(ctx context.Context, prefix []string) (int64, error) {
	query, args := `SELECT CAST(COALESCE(SUM(gen), 0) AS BIGINT) FROM store_generations WHERE depth = 1`, []any(nil)
	if len(prefix) > 0 {
		query, args = c.Q(`SELECT gen FROM store_generations WHERE prefix = $1`), []any{store.JoinNamespace(prefix)}
	}
	var gen int64
	if _, err := sqldb.QueryRow(ctx, c.db, query, args, &gen); err != nil {
		return 0, c.fail("generation", err)
	}
	return gen, nil
}

// Vectors implements store.VectorSource. It reads in one read-only
// transaction.
func (c *Core) Vectors(ctx context.Context, prefix []string, dims int, fn func(id int64, vec []float32) error) error {
	err := c.db.Begin(ctx, ReadOnly, func(tx Tx) error {
		var a Args
		query := `SELECT v.item_id, v.embedding FROM store_items i JOIN store_vectors v ON v.item_id = i.id
WHERE ` + a.PrefixCond("i.namespace", prefix) + ` AND v.dims = ` + a.Add(dims) + ` ORDER BY v.item_id, v.seq`
		rows, err := tx.Query(ctx, c.Q(query), a...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			id  int64
			raw []byte
			vec []float32
		)
		for rows.Next() {
			if err := rows.Scan(&id, &raw); err != nil {
				return err
			}
			if vec, err = DecodeVector(vec, raw); err != nil {
				return fmt.Errorf("item %d: %w", id, err)
			}
			if err := fn(id, vec); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return c.fail("load vectors", err)
	}
	return nil
}
