package postgres

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/internal/sqlstore"
)

func TestUsePGVector(t *testing.T) {
	for _, c := range []struct {
		mode    VectorMode
		version string
		use     bool
		err     error
	}{
		{VectorAuto, "", false, nil},
		{VectorAuto, "0.8.0", true, nil},
		{VectorExact, "0.8.0", false, nil},
		{VectorExact, "", false, nil},
		{VectorPGVector, "0.7.4", true, nil},
		{VectorPGVector, "", false, ErrNoPGVector},
	} {
		use, err := usePGVector(c.mode, c.version)
		if use != c.use || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("usePGVector(%d, %q) = %v, %v; want %v, %v", c.mode, c.version, use, err, c.use, c.err)
		}
	}
}

// hnsw.iterative_scan exists from pgvector 0.8; setting it on an older
// version fails the search.
func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"0.8.0": true, "0.8": true, "0.10.1": true, "1.0.0": true, "0.7.4": false, "0": false, "x.y": false, "": false} {
		if got := versionAtLeast(v, 0, 8); got != want {
			t.Errorf("versionAtLeast(%q, 0, 8) = %v, want %v", v, got, want)
		}
	}
}

func TestEfSearch(t *testing.T) {
	for k, want := range map[int]int{1: 40, 40: 40, 100: 100, 1000: 1000, 5000: 1000} {
		if got := efSearch(k); got != want {
			t.Errorf("efSearch(%d) = %d, want %d", k, got, want)
		}
	}
}

// The pgvector search must use the expression and predicate of the partial
// HNSW index setupPGVector creates for the dimension count, or PostgreSQL
// scans every vector; and the store's prefix, expiry, filter and id
// conditions apply to the item.
func TestSearchSQL(t *testing.T) {
	b := &Backend{Core: sqlstore.New(nil, Dialect), dims: 3}
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	filter, err := store.ParseFilter(map[string]any{"kind": "note"})
	if err != nil {
		t.Fatal(err)
	}
	q := &store.Query{Prefix: []string{"u", "1"}, Filter: filter, Now: now, Limit: 5, IDs: []int64{7, 9}}
	sql, args := b.searchSQL(q, []float32{1, 0.5, -2}, 40)
	want := `SELECT i.id, i.namespace, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_us, 1 - (v.vec::vector(3) <=> $1::vector(3)) AS score
FROM store_vectors v JOIN store_items i ON i.id = v.item_id
WHERE v.dims = 3 AND v.vec IS NOT NULL AND (i.namespace = $3 OR (i.namespace >= $4 AND i.namespace < $5)) AND (i.expires_at IS NULL OR i.expires_at > $2) AND (((value #> $6::text[]) = $7::jsonb)) AND i.id = ANY($8::bigint[])
ORDER BY v.vec::vector(3) <=> $1::vector(3) LIMIT $9`
	if sql != want {
		t.Errorf("searchSQL =\n%s\nwant\n%s", sql, want)
	}
	lo, hi := store.PrefixRange("u.1")
	if len(args) != 9 || args[1] != any(now) || args[2] != "u.1" || args[3] != lo || args[4] != hi ||
		!reflect.DeepEqual(args[5], []string{"kind"}) || args[6] != `"note"` || !reflect.DeepEqual(args[7], []int64{7, 9}) || args[8] != 40 {
		t.Errorf("searchSQL arguments = %#v", args)
	}
	// The vector argument is the query in pgvector's text form.
	if s, ok := args[0].(interface{ String() string }); !ok || s.String() != "[1,0.5,-2]" {
		t.Errorf("query vector argument = %#v, want [1,0.5,-2]", args[0])
	}
}

// recorder is a sqlstore.DB that records the statements of write
// transactions instead of running them.
type recorder struct{ stmts []sqlstore.Stmt }

func (r *recorder) Exec(context.Context, string, ...any) (int64, error) { return 0, nil }
func (r *recorder) Query(context.Context, string, ...any) (sqlstore.Rows, error) {
	return nil, errors.New("recorder: no queries")
}
func (r *recorder) Begin(ctx context.Context, _ sqlstore.Mode, fn func(sqlstore.Tx) error) error {
	return fn(r)
}
func (r *recorder) ExecBatch(_ context.Context, stmts []sqlstore.Stmt) error {
	r.stmts = append(r.stmts, stmts...)
	return nil
}

// With pgvector, a Put writes each vector also to the vec column, in
// pgvector's text form cast to vector; without it, the column is left out
// (it does not exist).
func TestPutVectorColumn(t *testing.T) {
	for _, withVec := range []bool{false, true} {
		rec := &recorder{}
		b := &Backend{Core: sqlstore.New(rec, Dialect), dims: 2}
		if withVec {
			b.Vec = vecColumn
		}
		err := b.Put(context.Background(), []store.Write{{
			Namespace: []string{"u"}, Key: "k", Value: []byte(`{"text":"hi"}`), Now: time.Unix(0, 0),
			Vectors: []store.Vector{{Field: "text", Embedding: []float32{0.25, -1}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		var ins *sqlstore.Stmt
		for i, st := range rec.stmts {
			if strings.HasPrefix(st.Query, "INSERT INTO store_vectors") {
				ins = &rec.stmts[i]
			}
		}
		if ins == nil {
			t.Fatalf("no vector insert among %v", rec.stmts)
		}
		want := `INSERT INTO store_vectors (item_id, seq, field, dims, embedding) VALUES ((SELECT id FROM store_items WHERE namespace = $1 AND key = $2), $3, $4, $5, $6)`
		if withVec {
			want = `INSERT INTO store_vectors (item_id, seq, field, dims, embedding, vec) VALUES ((SELECT id FROM store_items WHERE namespace = $1 AND key = $2), $3, $4, $5, $6, $7::vector)`
		}
		if ins.Query != want {
			t.Errorf("pgvector %v: vector insert =\n%s\nwant\n%s", withVec, ins.Query, want)
		}
		wantArgs := []any{"u", "k", 0, "text", 2, sqlstore.EncodeVector([]float32{0.25, -1})}
		if withVec {
			wantArgs = append(wantArgs, "[0.25,-1]")
		}
		if !reflect.DeepEqual(ins.Args, wantArgs) {
			t.Errorf("pgvector %v: vector insert arguments = %#v, want %#v", withVec, ins.Args, wantArgs)
		}
	}
}
