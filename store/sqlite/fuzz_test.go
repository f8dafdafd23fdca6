package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/store/storetest"
)

// fuzzColumns are the stored columns FuzzStoredItems overwrites. Each keeps
// the type its schema gives it (as PostgreSQL enforces): integers stay
// integers and bytes stay bytes or text, whatever their contents.
var fuzzColumns = []struct {
	table, col string
	kind       byte // 'i' integer, 'b' bytes, 't' text
}{
	{"store_items", "namespace", 't'},
	{"store_items", "value", 't'},
	{"store_items", "value", 'b'},
	{"store_items", "created_at", 'i'},
	{"store_items", "updated_at", 'i'},
	{"store_items", "expires_at", 'i'},
	{"store_items", "ttl", 'i'},
	{"store_vectors", "item_id", 'i'},
	{"store_vectors", "seq", 'i'},
	{"store_vectors", "field", 't'},
	{"store_vectors", "dims", 'i'},
	{"store_vectors", "embedding", 'b'},
	{"store_generations", "gen", 'i'},
}

// FuzzStoredItems overwrites one stored column of a real store with
// arbitrary contents and reads the store back every way it can be read:
// Get, filtered and vector searches, namespace listing. Reading never
// panics, and fails only with ErrCorrupt.
func FuzzStoredItems(f *testing.F) {
	ctx := context.Background()
	path := filepath.Join(f.TempDir(), "store.db")
	db, err := sql.Open("sqlite", sqlite.DSN(path))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	clock := storetest.NewClock()
	cfg := store.Config{Clock: clock.Now, Index: &store.IndexConfig{Embedder: storetest.RandomEmbedder{N: 4}, Fields: []string{"text"}}}
	// A Store per read, so none is served from a cache; closing one
	// leaves db open.
	open := func() *store.Store {
		b, err := sqlite.NewBackend(ctx, db)
		if err != nil {
			f.Fatal(err)
		}
		s, err := store.New(b, cfg)
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	s := open()
	for i, it := range []struct {
		ns  []string
		key string
		v   map[string]any
		ttl time.Duration
	}{
		{[]string{"u", "1"}, "a", map[string]any{"text": "apples", "n": 1.0, "tag": "x"}, 0},
		{[]string{"u", "1"}, "b", map[string]any{"text": "pears", "n": 2.0}, time.Hour},
		{[]string{"u", "2"}, "c", map[string]any{"text": "plums", "ok": true}, 0},
	} {
		if err := s.Put(ctx, it.ns, it.key, it.v, store.PutOptions{TTL: it.ttl}); err != nil {
			f.Fatal(i, err)
		}
	}
	s.Close()
	rowids := map[string][]int64{}
	for _, c := range fuzzColumns {
		if rowids[c.table] != nil {
			continue
		}
		rs, err := db.Query(`SELECT rowid FROM ` + c.table + ` ORDER BY rowid`)
		if err != nil {
			f.Fatal(err)
		}
		for rs.Next() {
			var id int64
			rs.Scan(&id)
			rowids[c.table] = append(rowids[c.table], id)
		}
		rs.Close()
	}
	for i := range fuzzColumns {
		f.Add(uint8(i), uint8(0), int64(-1), []byte(`{"text":`))
		f.Add(uint8(i), uint8(1), int64(1<<62), []byte{0, 0, 128})
	}
	f.Fuzz(func(t *testing.T, col, row uint8, n int64, data []byte) {
		c := fuzzColumns[int(col)%len(fuzzColumns)]
		ids := rowids[c.table]
		id := ids[int(row)%len(ids)]
		var old any
		if err := db.QueryRow(`SELECT `+c.col+` FROM `+c.table+` WHERE rowid = ?`, id).Scan(&old); err != nil {
			t.Fatal(err)
		}
		var v any = data
		switch c.kind {
		case 'i':
			v = n
		case 't':
			v = string(data)
		}
		if _, err := db.Exec(`UPDATE `+c.table+` SET `+c.col+` = ? WHERE rowid = ?`, v, id); err != nil {
			return // a key the table already has
		}
		defer func() {
			if _, err := db.Exec(`UPDATE `+c.table+` SET `+c.col+` = ? WHERE rowid = ?`, old, id); err != nil {
				t.Fatal(err)
			}
		}()
		check := func(op string, err error) {
			if err != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s.%s = %v: %s = %v, want nil or ErrCorrupt", c.table, c.col, v, op, err)
			}
		}
		s := open()
		defer s.Close()
		for _, k := range []string{"a", "b"} {
			_, err := s.Get(ctx, []string{"u", "1"}, k, store.GetOptions{})
			check("Get", err)
		}
		_, err := s.Search(ctx, []string{"u"}, store.SearchOptions{Limit: 10})
		check("Search", err)
		_, err = s.Search(ctx, []string{"u"}, store.SearchOptions{Filter: map[string]any{"n": map[string]any{"$gte": 1}}, Limit: 10})
		check("Search with a filter", err)
		_, err = s.Search(ctx, nil, store.SearchOptions{Query: "apples", Limit: 2})
		check("Search with a query", err)
		_, err = s.Search(ctx, []string{"u"}, store.SearchOptions{Query: "pears", Filter: map[string]any{"tag": "x"}, Limit: 2})
		check("Search with a query and a filter", err)
		_, err = s.ListNamespaces(ctx, store.ListNamespacesOptions{})
		check("ListNamespaces", err)
	})
}
