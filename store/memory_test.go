package store_test

import (
	"testing"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg store.Config) *store.Store {
		s, err := store.NewMemory(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
