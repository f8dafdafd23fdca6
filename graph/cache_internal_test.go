package graph

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The memory cache holds at most MaxEntries, evicting the least recently
// used, and sweeps expired entries nobody reads again (issue 7 §10).
func TestMemoryCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	c := NewMemoryCacheWith(MemoryCacheOptions{MaxEntries: 3})
	for i := range 3 {
		_ = c.Set(ctx, fmt.Sprint(i), []byte{byte(i)}, 0)
	}
	if _, ok, _ := c.Get(ctx, "0"); !ok { // 0 is now the most recently used
		t.Fatal("entry 0 missing")
	}
	_ = c.Set(ctx, "3", nil, 0)
	if c.Len() != 3 {
		t.Fatalf("Len = %d, want 3", c.Len())
	}
	if _, ok, _ := c.Get(ctx, "1"); ok {
		t.Fatal("entry 1, the least recently used, was not evicted")
	}
	for _, k := range []string{"0", "2", "3"} {
		if _, ok, _ := c.Get(ctx, k); !ok {
			t.Fatalf("entry %s evicted", k)
		}
	}

	// Expired entries go even when nobody reads them.
	now := time.Unix(1000, 0)
	c = NewMemoryCacheWith(MemoryCacheOptions{MaxEntries: 4})
	c.clock = func() time.Time { return now }
	_ = c.Set(ctx, "short", nil, time.Second)
	_ = c.Set(ctx, "forever", nil, 0)
	now = now.Add(time.Minute)
	_ = c.Set(ctx, "x", nil, 0)
	_ = c.Set(ctx, "y", nil, 0)
	if c.Len() != 3 {
		t.Fatalf("Len = %d, want 3: the expired entry was not swept", c.Len())
	}

	// The default cache is bounded too.
	if d := NewMemoryCache(); d.max != DefaultMemoryCacheEntries {
		t.Fatalf("default bound %d", d.max)
	}
}
