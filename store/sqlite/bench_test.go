package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/store/storetest"
)

func BenchmarkSearch(b *testing.B) {
	storetest.BenchmarkSearch(b, func(b *testing.B, cfg store.Config) *store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
