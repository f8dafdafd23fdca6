package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/sqlitetest"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/store/storetest"
)

// fuzzColumns are the stored columns FuzzStoredItems overwrites; value
// is text or bytes, as either may be found there.
var fuzzColumns = []sqlitetest.Column{
	{Table: "store_items", Col: "namespace", Kind: 't'},
	{Table: "store_items", Col: "value", Kind: 't'},
	{Table: "store_items", Col: "value", Kind: 'b'},
	{Table: "store_items", Col: "created_at", Kind: 'i'},
	{Table: "store_items", Col: "updated_at", Kind: 'i'},
	{Table: "store_items", Col: "expires_at", Kind: 'i'},
	{Table: "store_items", Col: "ttl", Kind: 'i'},
	{Table: "store_vectors", Col: "item_id", Kind: 'i'},
	{Table: "store_vectors", Col: "seq", Kind: 'i'},
	{Table: "store_vectors", Col: "field", Kind: 't'},
	{Table: "store_vectors", Col: "dims", Kind: 'i'},
	{Table: "store_vectors", Col: "embedding", Kind: 'b'},
	{Table: "store_generations", Col: "gen", Kind: 'i'},
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
	sqlitetest.FuzzColumns(f, db, fuzzColumns, nil, func(t *testing.T, what string) {
		check := func(op string, err error) {
			if err != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s: %s = %v, want nil or ErrCorrupt", what, op, err)
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
