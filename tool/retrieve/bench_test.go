package retrieve

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
)

// thousandTools is the catalogue padded to 1,000 tools with copies under
// another prefix, as a hub with a second workspace's servers would be.
func thousandTools(b *testing.B) []llm.ToolSpec {
	specs := loadCatalog(b)
	for i := 0; len(specs) < 1000; i++ {
		s := specs[i]
		s.Name = "ws2_" + s.Name
		specs = append(specs, s)
	}
	return specs
}

// BenchmarkSearch1000 times one top-5 search over 1,000 tools, cycling
// through the labelled queries, and reports the median and 95th percentile
// latency (p50-ms, p95-ms) besides the mean.
func BenchmarkSearch1000(b *testing.B) {
	specs := thousandTools(b)
	qs := loadQueries(b)
	for _, backend := range []string{"memory", "sqlite"} {
		for _, r := range []struct {
			name    string
			ranking Ranking
		}{{"hybrid", Hybrid}, {"vector", VectorOnly}, {"keyword", KeywordOnly}} {
			b.Run(backend+"/"+r.name, func(b *testing.B) {
				ctx := context.Background()
				cfg := store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}}
				var st *store.Store
				var err error
				if backend == "memory" {
					st, err = store.NewMemory(cfg)
				} else {
					st, err = sqlite.Open(ctx, filepath.Join(b.TempDir(), "tools.db"), cfg)
				}
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				x, err := New(ctx, st, Options{Ranking: r.ranking})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := x.Sync(ctx, specs); err != nil {
					b.Fatal(err)
				}
				if _, err := x.Search(ctx, "warm up", 5); err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					if _, err := x.Search(ctx, qs[i%len(qs)].text, 5); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
			})
		}
	}
}

// BenchmarkSyncUnchanged times a Sync of 1,000 tools none of which changed:
// what an MCP manager pays on every tools/list_changed.
func BenchmarkSyncUnchanged(b *testing.B) {
	specs := thousandTools(b)
	ctx := context.Background()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	x, err := New(ctx, st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := x.Sync(ctx, specs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := x.Sync(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
}
