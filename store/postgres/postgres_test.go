package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/postgres"
	"github.com/weftlabs/weft/store/storetest"
)

// newDatabase creates a uniquely named database for the test (see
// internal/pgtest: skipped without a server, except in CI) and returns its
// connection string.
func newDatabase(t testing.TB) string {
	t.Helper()
	dbURL := pgtest.NewDatabase(t, "weft_store_test_")
	// Where pgvector is available, install it in public as an administrator
	// would, so every schema's search_path finds the type.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, dbURL); err == nil {
		c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector")
		c.Close(ctx)
	}
	return dbURL
}

// newSchema creates a uniquely named schema in the database at dbURL and
// returns a connection string whose search_path is that schema: a fresh,
// isolated store far cheaper than a database per test.
func newSchema(t testing.TB, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	name := "s_" + hex.EncodeToString(b)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name+",public")
	u.RawQuery = q.Encode()
	return u.String()
}

func TestConformance(t *testing.T) {
	db := newDatabase(t)
	storetest.Run(t, func(t *testing.T, cfg store.Config) *store.Store {
		s, err := postgres.Open(context.Background(), newSchema(t, db), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// With default_query_exec_mode=exec in its URL (PgBouncer in transaction
// mode before 1.21) the store behaves the same, without named prepared
// statements.
func TestConformanceExecMode(t *testing.T) {
	db := newDatabase(t)
	storetest.Run(t, func(t *testing.T, cfg store.Config) *store.Store {
		ctx := context.Background()
		pc, err := postgres.PoolConfig(pgtest.ExecMode(t, newSchema(t, db)))
		if err != nil {
			t.Fatal(err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		// The store's Close leaves the pool open, and runs first.
		t.Cleanup(func() {
			defer pool.Close()
			for _, c := range pool.AcquireAllIdle(ctx) {
				var n int
				if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM pg_prepared_statements`).Scan(&n); err != nil {
					t.Error(err)
				} else if n != 0 {
					t.Errorf("a connection in exec mode holds %d prepared statements; want none", n)
				}
				c.Release()
			}
		})
		opts := postgres.Options{}
		if cfg.Index != nil {
			opts.Dims = cfg.Index.Dims
			if opts.Dims == 0 && cfg.Index.Embedder != nil {
				opts.Dims = cfg.Index.Embedder.Dims()
			}
		}
		b, err := postgres.NewBackend(ctx, pool, opts)
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.New(b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T, cfg store.Config) (*store.Store, *store.Store) {
		url := newSchema(t, newDatabase(t))
		a, err := postgres.Open(context.Background(), url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := postgres.Open(context.Background(), url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}

// Where pgvector exists TestConformance runs on it, so the exact path is
// run here explicitly; without pgvector TestConformance already ran it.
func TestConformanceExact(t *testing.T) {
	db := newDatabase(t)
	probe, err := postgres.OpenWith(context.Background(), newSchema(t, db), store.Config{}, postgres.Options{Dims: 8})
	if err != nil {
		t.Fatal(err)
	}
	native := probe.Backend().(*postgres.Backend).UsesPGVector()
	probe.Close()
	if !native {
		t.Skip("pgvector is not installed: TestConformance ran the exact path")
	}
	storetest.Run(t, func(t *testing.T, cfg store.Config) *store.Store {
		s, err := postgres.OpenWith(context.Background(), newSchema(t, db), cfg, postgres.Options{Vector: postgres.VectorExact})
		if err != nil {
			t.Fatal(err)
		}
		if b := s.Backend().(*postgres.Backend); b.UsesPGVector() {
			t.Fatal("VectorExact backend uses pgvector")
		}
		return s
	})
}

func TestConcurrentMigrate(t *testing.T) {
	url := newDatabase(t)
	ctx := context.Background()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			pc, err := postgres.PoolConfig(url)
			if err != nil {
				errs <- err
				return
			}
			pool, err := pgxpool.NewWithConfig(ctx, pc)
			if err != nil {
				errs <- err
				return
			}
			defer pool.Close()
			errs <- postgres.Migrate(ctx, pool)
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n, v int
	if err := c.QueryRow(ctx, `SELECT count(*), max(version) FROM store_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion || v != postgres.SchemaVersion {
		t.Errorf("store_migrations has %d rows up to version %d, want %d", n, v, postgres.SchemaVersion)
	}
}

// pgvectorInstalled reports whether the server has the extension, so tests
// of its absence know where they can run.
func pgvectorInstalled(t *testing.T, dbURL string) bool {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_extension WHERE extname = 'vector'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// Without the extension, VectorAuto falls back to exact ranking in the
// Store (and ranks correctly), and VectorPGVector refuses to open.
func TestWithoutPGVector(t *testing.T) {
	db := newDatabase(t)
	if pgvectorInstalled(t, db) {
		t.Skip("pgvector is installed here: TestConformance runs it")
	}
	ctx := context.Background()
	cfg := store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0), Fields: []string{"text"}}}
	_, err := postgres.OpenWith(ctx, newSchema(t, db), cfg, postgres.Options{Vector: postgres.VectorPGVector})
	if !errors.Is(err, postgres.ErrNoPGVector) {
		t.Fatalf("OpenWith(VectorPGVector) = %v, want ErrNoPGVector", err)
	}
	s, err := postgres.Open(ctx, newSchema(t, db), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.Backend().(*postgres.Backend)
	dims := embed.NewLexical(0).Dims()
	if b.UsesPGVector() || b.NativeVectorSearch(dims) {
		t.Fatalf("without pgvector: UsesPGVector %v, NativeVectorSearch(%d) %v; want false", b.UsesPGVector(), dims, b.NativeVectorSearch(dims))
	}
	for k, text := range map[string]string{"a": "chess openings and endgames", "b": "gardening in spring", "c": "chess clubs"} {
		if err := s.Put(ctx, []string{"u"}, k, map[string]any{"text": text}, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	items, err := s.Search(ctx, []string{"u"}, store.SearchOptions{Query: "gardening", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Key != "b" || items[0].Score == nil {
		t.Errorf("exact search for gardening = %v, want b with a score", items)
	}
}

// NewBackend over a caller's pool leaves the pool open on Close.
func TestNewBackendOverPool(t *testing.T) {
	ctx := context.Background()
	pc, err := postgres.PoolConfig(newSchema(t, newDatabase(t)))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b, err := postgres.NewBackend(ctx, pool, postgres.Options{Vector: postgres.VectorExact})
	if err != nil {
		t.Fatal(err)
	}
	if b.Pool() != pool {
		t.Error("Pool() is not the pool given")
	}
	b.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the pool is closed after the backend's Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := postgres.Open(ctx, "postgres://%zz", store.Config{}); err == nil {
		t.Error("Open of a malformed URL succeeded")
	}
	// A database migrated by a newer weft is refused, not misread.
	url := newSchema(t, newDatabase(t))
	s, err := postgres.Open(ctx, url, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	exec(t, url, `INSERT INTO store_migrations (version) VALUES (99)`)
	if s, err := postgres.Open(ctx, url, store.Config{}); err == nil {
		s.Close()
		t.Error("Open of a database at schema version 99 succeeded")
	}
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// Rows damaged behind the store's back are ErrCorrupt naming the item:
// a value that is not an object, a TTL out of range, an embedding that is
// not whole float32s.
func TestCorruptRows(t *testing.T) {
	ctx := context.Background()
	url := newSchema(t, newDatabase(t))
	cfg := store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0), Fields: []string{"text"}}}
	for _, c := range []struct{ name, damage, key string }{
		{"value not an object", `UPDATE store_items SET value = '[1]' WHERE key = 'a'`, "a"},
		{"negative ttl", `UPDATE store_items SET ttl_us = -5 WHERE key = 'a'`, "a"},
		{"embedding of 3 bytes", `UPDATE store_vectors SET embedding = '\x010203'`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			exec(t, url, `DROP TABLE IF EXISTS store_vectors, store_items, store_generations, store_migrations`)
			s, err := postgres.OpenWith(ctx, url, cfg, postgres.Options{Vector: postgres.VectorExact})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Put(ctx, []string{"u"}, "a", map[string]any{"text": "apples"}, store.PutOptions{TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			exec(t, url, c.damage)
			if c.key != "" {
				_, err = s.Get(ctx, []string{"u"}, c.key, store.GetOptions{})
			} else {
				_, err = s.Search(ctx, []string{"u"}, store.SearchOptions{Query: "apples"})
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("read after damage = %v, want ErrCorrupt", err)
			}
			if c.key != "" && !strings.Contains(err.Error(), `item "a"`) {
				t.Errorf("error %q does not name the item", err)
			}
		})
	}
}
