package storetest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/store"
)

// RandomEmbedder maps each text to a fixed pseudo-random vector (seeded by
// the text's hash): a stand-in for a model in benchmarks, where what matters
// is the number and length of vectors, not their meaning.
type RandomEmbedder struct{ N int }

// Dims returns N.
func (r RandomEmbedder) Dims() int { return r.N }

// Vector returns the vector of text.
func (r RandomEmbedder) Vector(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	v := make([]float32, r.N)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// EmbedDocuments implements embed.Embedder.
func (r RandomEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = r.Vector(t)
	}
	return out, nil
}

// EmbedQuery implements embed.Embedder.
func (r RandomEmbedder) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	return r.Vector(text), nil
}

var _ embed.Embedder = RandomEmbedder{}

// BenchItems is the fixture size of BenchmarkSearch: 100,000, or
// WEFT_BENCH_ITEMS.
func BenchItems() int {
	if n, err := strconv.Atoi(os.Getenv("WEFT_BENCH_ITEMS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchDims is the vector length of BenchmarkSearch.
const BenchDims = 384

// BenchmarkSearch fills a store from open with BenchItems() items of one
// 384-dimension vector each under ("bench", "g0".."g9"), checks that a
// query search returns exactly the brute-force top 10, and times:
//
//   - Query: a top-10 query search over every item (warm vector cache);
//   - QueryFiltered: the same restricted by a filter admitting a tenth;
//   - QueryColdCache: the first query after a write, which reloads the
//     prefix's vectors from storage.
func BenchmarkSearch(b *testing.B, open func(b *testing.B, cfg store.Config) *store.Store) {
	ctx := context.Background()
	emb := RandomEmbedder{N: BenchDims}
	s := open(b, store.Config{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"text"}}})
	defer s.Close()
	n := BenchItems()
	start := time.Now()
	const batch = 2000
	for lo := 0; lo < n; lo += batch {
		reqs := make([]store.PutRequest, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			reqs = append(reqs, store.PutRequest{
				Namespace: []string{"bench", "g" + strconv.Itoa(i%10)},
				Key:       strconv.Itoa(i),
				Value:     map[string]any{"text": "item " + strconv.Itoa(i), "group": i % 10},
			})
		}
		if err := s.PutMany(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d items of %d dimensions in %v", n, BenchDims, time.Since(start).Round(time.Millisecond))

	queries := make([]string, 16)
	for i := range queries {
		queries[i] = "query " + strconv.Itoa(i)
	}
	check := func(query string, filter map[string]any, keep func(i int) bool) {
		items, err := s.Search(ctx, []string{"bench"}, store.SearchOptions{Query: query, Filter: filter, Limit: 10})
		if err != nil {
			b.Fatal(err)
		}
		want := bruteTop10(emb, query, n, keep)
		if got := keysOf(items); !slices.Equal(got, want) {
			b.Fatalf("query %q: store returned %v, exact top 10 is %v", query, got, want)
		}
	}
	t0 := time.Now()
	check(queries[0], nil, nil)
	b.Logf("first query (loads the vector cache): %v", time.Since(t0).Round(time.Millisecond))
	check(queries[1], nil, nil)
	check(queries[2], map[string]any{"group": 3}, func(i int) bool { return i%10 == 3 })

	b.Run("Query", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := s.Search(ctx, []string{"bench"}, store.SearchOptions{Query: queries[i%len(queries)], Limit: 10}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("QueryFiltered", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := s.Search(ctx, []string{"bench"}, store.SearchOptions{Query: queries[i%len(queries)], Filter: map[string]any{"group": 3}, Limit: 10}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("QueryColdCache", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			if err := s.Put(ctx, []string{"bench", "g0"}, "extra", map[string]any{"text": "extra " + strconv.Itoa(i)}, store.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := s.Search(ctx, []string{"bench"}, store.SearchOptions{Query: queries[i%len(queries)], Limit: 10}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func keysOf(items []store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

// bruteTop10 ranks every fixture item in float64, independently of the
// store's float32 scan.
func bruteTop10(emb RandomEmbedder, query string, n int, keep func(int) bool) []string {
	q := emb.Vector(query)
	type scored struct {
		key   int
		score float64
	}
	var all []scored
	for i := range n {
		if keep != nil && !keep(i) {
			continue
		}
		all = append(all, scored{i, embed.Cosine(q, emb.Vector("item "+strconv.Itoa(i)))})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return a.key - b.key
	})
	out := make([]string, 0, 10)
	for _, s := range all[:min(10, len(all))] {
		out = append(out, strconv.Itoa(s.key))
	}
	if math.IsNaN(all[0].score) {
		panic(fmt.Sprint("NaN score for query ", query))
	}
	return out
}
