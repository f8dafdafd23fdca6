package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg store.Config) *store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// ":memory:" is one private database for the store, used from several
// goroutines at once.
func TestInMemory(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, ":memory:", store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprint("k", i)
			if err := s.Put(ctx, []string{"ns"}, key, map[string]any{"i": i}, store.PutOptions{}); err != nil {
				t.Error(err)
				return
			}
			if it, err := s.Get(ctx, []string{"ns"}, key, store.GetOptions{}); err != nil || it == nil {
				t.Errorf("Get(%s) = %v, %v", key, it, err)
			}
		})
	}
	wg.Wait()
}

func TestShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	storetest.RunShared(t, func(t *testing.T, cfg store.Config) (*store.Store, *store.Store) {
		a, err := sqlite.Open(context.Background(), path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sqlite.Open(context.Background(), path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}

// Processes opening a new file at once each migrate it; one wins, the
// others find it done.
func TestConcurrentMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "migrate.db")
	ctx := context.Background()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := sql.Open("sqlite", sqlite.DSN(path))
			if err == nil {
				err = sqlite.Migrate(ctx, db)
				db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	db, err := sql.Open("sqlite", sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, v int
	if err := db.QueryRow(`SELECT count(*), max(version) FROM store_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != sqlite.SchemaVersion || v != sqlite.SchemaVersion {
		t.Errorf("store_migrations has %d rows up to version %d, want %d", n, v, sqlite.SchemaVersion)
	}
}
