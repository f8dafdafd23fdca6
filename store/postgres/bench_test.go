package postgres_test

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/postgres"
	"github.com/weftlabs/weft/store/storetest"
)

// BenchmarkSearch measures the exact path (no pgvector), the one these
// machines have.
func BenchmarkSearch(b *testing.B) {
	storetest.BenchmarkSearch(b, func(b *testing.B, cfg store.Config) *store.Store {
		s, err := postgres.OpenWith(context.Background(), newDatabase(b), cfg, postgres.Options{Vector: postgres.VectorExact})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
