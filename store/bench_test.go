package store_test

import (
	"testing"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/storetest"
)

func BenchmarkSearch(b *testing.B) {
	storetest.BenchmarkSearch(b, func(b *testing.B, cfg store.Config) *store.Store {
		s, err := store.NewMemory(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
