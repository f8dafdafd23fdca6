package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
	if c, err := pgtest.Connect(ctx, dbURL); err == nil {
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
