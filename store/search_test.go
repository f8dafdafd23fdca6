package store_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/storetest"
)

// exactTop ranks keys 0..n-1 by cosine to query, best first, among those
// keep admits.
func exactTop(emb storetest.RandomEmbedder, query string, n, k int, keep func(int) bool) []string {
	q := emb.Vector(query)
	type scored struct {
		key   string
		score float64
	}
	var all []scored
	for i := range n {
		if keep(i) {
			all = append(all, scored{strconv.Itoa(i), embed.Cosine(q, emb.Vector("item "+strconv.Itoa(i)))})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score > b.score {
			return -1
		}
		if a.score < b.score {
			return 1
		}
		return 0
	})
	var out []string
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.key)
	}
	return out
}

func fill(t *testing.T, s *store.Store, n int, ttl func(i int) time.Duration) {
	t.Helper()
	var reqs []store.PutRequest
	for i := range n {
		reqs = append(reqs, store.PutRequest{
			Namespace: []string{"x"}, Key: strconv.Itoa(i),
			Value:   map[string]any{"text": "item " + strconv.Itoa(i), "i": i},
			Options: store.PutOptions{TTL: ttl(i)},
		})
	}
	if err := s.PutMany(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
}

// A filter admitting a handful of thousands of items is applied before
// ranking once widening the ranking stops paying; the result is still the
// exact top of the admitted items.
func TestQuerySelectiveFilterIsExact(t *testing.T) {
	emb := storetest.RandomEmbedder{N: 8}
	s, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"text"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 6000
	fill(t, s, n, func(int) time.Duration { return 0 })
	for _, c := range []struct {
		filter map[string]any
		keep   func(int) bool
	}{
		{map[string]any{"i": map[string]any{"$lt": 3}}, func(i int) bool { return i < 3 }},
		{map[string]any{"i": map[string]any{"$gte": 5990}}, func(i int) bool { return i >= 5990 }},
		{map[string]any{"i": map[string]any{"$lt": 600}}, func(i int) bool { return i < 600 }},
	} {
		for _, query := range []string{"q1", "q2"} {
			items, err := s.Search(context.Background(), []string{"x"}, store.SearchOptions{Query: query, Filter: c.filter, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(items))
			for i, it := range items {
				got[i] = it.Key
			}
			if want := exactTop(emb, query, n, 5, c.keep); !slices.Equal(got, want) {
				t.Errorf("filter %v query %q: got %v, want %v", c.filter, query, got, want)
			}
		}
	}
}

// When most of the best-ranked items have expired (but are not swept, so
// their vectors are still cached), the ranking widens until it has enough
// live ones.
func TestQuerySkipsExpiredCandidates(t *testing.T) {
	emb := storetest.RandomEmbedder{N: 8}
	clk := storetest.NewClock()
	s, err := store.NewMemory(store.Config{Clock: clk.Now, Index: &store.IndexConfig{Embedder: emb, Fields: []string{"text"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 3000
	fill(t, s, n, func(i int) time.Duration {
		if i%50 == 0 {
			return 0
		}
		return time.Minute
	})
	if _, err := s.Search(context.Background(), []string{"x"}, store.SearchOptions{Query: "warm the cache"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	items, err := s.Search(context.Background(), []string{"x"}, store.SearchOptions{Query: "q", Limit: 10, Offset: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
	}
	want := exactTop(emb, "q", n, 12, func(i int) bool { return i%50 == 0 })[2:]
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
