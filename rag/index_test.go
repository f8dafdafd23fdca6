package rag

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/store/sqlite"
)

func TestAnalyzerTerms(t *testing.T) {
	tests := []struct {
		analyzer, text string
		want           []string
	}{
		// Hangul runs become bigrams, so the bare noun matches the noun
		// with a particle; English loses stop words and is stemmed.
		{AnalyzerKoEn, "파이프라인을 설정", []string{"파이", "이프", "프라", "라인", "인을", "설정"}},
		{AnalyzerKoEn, "API를 쓰는 팀", []string{"api", "를", "쓰는", "팀"}},
		{AnalyzerKoEn, "Planning the pipelines", []string{"plan", "pipelin"}},
		{AnalyzerKoEn, "東京都", []string{"東京", "京都"}},
		// bleve's own cjk analyzer leaves Hangul words whole.
		{AnalyzerCJK, "파이프라인을 설정", []string{"파이프라인을", "설정"}},
		{AnalyzerStandard, "Planning the pipelines", []string{"planning", "pipelines"}},
	}
	for _, tt := range tests {
		got, err := analyze(tt.analyzer, tt.text)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %q (-want +got):\n%s", tt.analyzer, tt.text, diff)
		}
	}
}

var testDocs = []Document{
	{ID: "pipeline-ko", Source: "kb/tools.json", Title: "데이터 파이프라인 설정", Language: "ko", Tags: []string{"데이터"},
		Text: "원천 데이터를 확인하고 수집 주기를 정합니다. 실패한 실행은 세 번까지 재시도합니다."},
	{ID: "approval-ko", Source: "kb/tools.json", Title: "계획 승인", Language: "ko",
		Text: "에이전트는 도구를 실행하기 전에 멈추고 계획을 보여 줍니다. 승인하거나 수정하거나 거절합니다."},
	{ID: "pipeline-en", Source: "kb/guide.md", Title: "Setting up a data pipeline", Language: "en", Headings: []string{"Guide", "Pipelines"},
		Text: "Name each source and how often it changes. Retry a failed run three times, then alert the owner."},
	{ID: "approval-en", Source: "kb/guide.md", Title: "Approving a plan", Language: "en",
		Text: "The agent pauses before it calls tools and shows the plan. Approve, edit or reject it."},
}

func newIndex(t *testing.T, cfg Config, docs ...Document) *Index {
	t.Helper()
	ix, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Add(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	return ix
}

func hitDocs(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Chunk.DocID)
	}
	return out
}

func TestSearchFindsKoreanWithoutTheParticle(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []Mode{Lexical, Vector, Hybrid} {
		t.Run(string(mode), func(t *testing.T) {
			ix := newIndex(t, Config{}, testDocs...)
			hits, err := ix.Search(ctx, "파이프라인 재시도", SearchOptions{K: 1, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"pipeline-ko"}, hitDocs(hits)); diff != "" {
				t.Errorf("hits (-want +got):\n%s", diff)
			}
		})
	}
	// The shipped cjk analyzer keeps "원천" but not the noun inside
	// "파이프라인을"-style forms: "재시도합니다" never meets "재시도".
	ix := newIndex(t, Config{Analyzer: AnalyzerCJK}, testDocs...)
	hits, err := ix.Search(ctx, "재시도", SearchOptions{Mode: Lexical})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Errorf("cjk analyzer matched a Hangul word with a suffix: %v", hitDocs(hits))
	}
}

func TestSearchFilters(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, Config{}, testDocs...)
	tests := []struct {
		opts SearchOptions
		want []string
	}{
		{SearchOptions{Language: "en"}, []string{"pipeline-en", "approval-en"}},
		{SearchOptions{Language: "ko"}, []string{"pipeline-ko", "approval-ko"}},
		{SearchOptions{Source: "kb/guide.md"}, []string{"pipeline-en", "approval-en"}},
		{SearchOptions{Source: "kb/guide.md", Language: "ko"}, nil},
	}
	for _, tt := range tests {
		for _, mode := range []Mode{Lexical, Vector, Hybrid} {
			tt.opts.Mode = mode
			hits, err := ix.Search(ctx, "pipeline 파이프라인 plan 계획 approve 승인 data 데이터", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := hitDocs(hits)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%+v (-want +got):\n%s", tt.opts, diff)
			}
		}
	}
}

func TestSearchReportsRanksAndCitations(t *testing.T) {
	ix := newIndex(t, Config{}, testDocs...)
	hits, err := ix.Search(context.Background(), "retry a failed pipeline run", SearchOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 {
		t.Fatalf("%d hits", len(hits))
	}
	h := hits[0]
	if h.Chunk.ID != "pipeline-en#0" || h.LexicalRank != 1 || h.VectorRank != 1 {
		t.Errorf("hit %s lexical rank %d vector rank %d, want pipeline-en#0 first in both", h.Chunk.ID, h.LexicalRank, h.VectorRank)
	}
	if got := h.Chunk.Citation(); got != "kb/guide.md › Guide › Pipelines" {
		t.Errorf("citation %q", got)
	}
}

// TestSearchNothingMatches: a question the documents do not cover finds
// nothing lexically; the lexical embedder's collision noise stays below
// MinVectorScore 0.1, which then drops it.
func TestSearchNothingMatches(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, Config{}, testDocs...)
	for _, q := range []string{"zzqx", "weather in paris tomorrow", "오늘 날씨 어때"} {
		hits, err := ix.Search(ctx, q, SearchOptions{Mode: Lexical})
		if err != nil || len(hits) != 0 {
			t.Errorf("lexical %q: %v, %v; want no hits and no error", q, hitDocs(hits), err)
		}
		hits, err = ix.Search(ctx, q, SearchOptions{Mode: Vector})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.Score >= 0.1 {
				t.Errorf("vector %q: %s scores %.3f", q, h.Chunk.ID, h.Score)
			}
		}
	}
	strict := newIndex(t, Config{MinVectorScore: 0.1}, testDocs...)
	for _, mode := range []Mode{Vector, Hybrid} {
		hits, err := strict.Search(ctx, "weather in paris tomorrow", SearchOptions{Mode: mode})
		if err != nil || len(hits) != 0 {
			t.Errorf("%s with MinVectorScore: %v, %v; want no hits", mode, hitDocs(hits), err)
		}
	}
	hits, err := strict.Search(ctx, "파이프라인", SearchOptions{Mode: Vector})
	if err != nil || len(hits) == 0 || hits[0].Chunk.DocID != "pipeline-ko" {
		t.Errorf("MinVectorScore dropped a real match: %v, %v", hitDocs(hits), err)
	}
}

func TestSearchRejectsBadOptions(t *testing.T) {
	ix := newIndex(t, Config{}, testDocs...)
	for _, tc := range []struct {
		q    string
		opts SearchOptions
	}{
		{" ", SearchOptions{}},
		{"x", SearchOptions{K: -1}},
		{"x", SearchOptions{K: MaxK + 1}},
		{"x", SearchOptions{Depth: -1}},
		{"x", SearchOptions{Mode: "semantic"}},
		{"x", SearchOptions{Fusion: &Fusion{Method: "max"}}},
	} {
		if _, err := ix.Search(context.Background(), tc.q, tc.opts); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q %+v: err = %v, want ErrInvalidConfig", tc.q, tc.opts, err)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Analyzer: "klingon"},
		{Fusion: Fusion{Method: "max"}},
		{Fusion: Fusion{K: -1}},
		{Splitter: Splitter{Size: 1}},
		{Namespace: []string{"a.b"}},
	} {
		if ix, err := New(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
			if ix != nil {
				ix.Close()
			}
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestAddRejectsBadDocuments(t *testing.T) {
	ix := newIndex(t, Config{}, testDocs...)
	ctx := context.Background()
	if err := ix.Add(ctx, Document{ID: "x", Text: "a"}, Document{ID: "x", Text: "b"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate ids: err = %v, want ErrDuplicate", err)
	}
	if err := ix.Add(ctx, Document{Text: "no id"}); !errors.Is(err, ErrInvalidDocument) {
		t.Errorf("no id: err = %v, want ErrInvalidDocument", err)
	}
	if ix.Len() != len(testDocs) {
		t.Errorf("rejected adds changed the index: %d chunks", ix.Len())
	}
}

func TestAddReplacesAndRemoveDeletes(t *testing.T) {
	ctx := context.Background()
	long := Document{ID: "long", Source: "a.md", Text: "First part about kittens. Second part about puppies. Third part about parrots."}
	ix := newIndex(t, Config{Splitter: Splitter{Size: 60, Overlap: -1}}, long)
	if ix.Len() != 2 {
		t.Fatalf("%d chunks, want 2", ix.Len())
	}
	// The new version is one chunk: the old second chunk must go.
	long.Text = "Only kittens now."
	if err := ix.Add(ctx, long); err != nil {
		t.Fatal(err)
	}
	if _, ok := ix.Chunk("long#1"); ok || ix.Len() != 1 {
		t.Errorf("the old second chunk is still indexed (%d chunks)", ix.Len())
	}
	for _, mode := range []Mode{Lexical, Vector} {
		hits, err := ix.Search(ctx, "parrots", SearchOptions{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.Chunk.ID != "long#0" || h.Chunk.Text != "Only kittens now." {
				t.Errorf("%s: replaced text still found: %+v", mode, h.Chunk)
			}
		}
	}
	if err := ix.Remove(ctx, "long", "unknown"); err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 0 {
		t.Errorf("%d chunks after Remove", ix.Len())
	}
	hits, err := ix.Search(ctx, "kittens", SearchOptions{})
	if err != nil || len(hits) != 0 {
		t.Errorf("removed document found: %v %v", hitDocs(hits), err)
	}
}

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	n atomic.Int64
}

func (c *countingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	c.n.Add(int64(len(texts)))
	return c.Embedder.EmbedDocuments(ctx, texts)
}

// TestDurableStoreKeepsVectors: over a SQLite store, a restart embeds only
// what changed, and Prune removes chunks of documents that are gone.
func TestDurableStoreKeepsVectors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rag.db")
	e := &countingEmbedder{Embedder: embed.NewLexical(256)}
	open := func(docs ...Document) *Index {
		st, err := sqlite.Open(ctx, path, NewStoreConfig(e))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return newIndex(t, Config{Store: st}, docs...)
	}
	open(testDocs...)
	if got := e.n.Load(); got != int64(len(testDocs)) {
		t.Fatalf("first start embedded %d passages, want %d", got, len(testDocs))
	}
	e.n.Store(0)
	changed := slices.Clone(testDocs[:3])
	changed[0].Text += " 알림도 보냅니다."
	ix := open(changed...)
	if got := e.n.Load(); got != 1 {
		t.Errorf("restart embedded %d passages, want 1 (the changed one)", got)
	}
	// approval-en is still stored but was not added: never a hit.
	hits, err := ix.Search(ctx, "approve edit reject plan", SearchOptions{Mode: Vector, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hitDocs(hits), "approval-en") {
		t.Errorf("a chunk not added in this process was returned")
	}
	n, err := ix.Prune(ctx)
	if err != nil || n != 1 {
		t.Errorf("Prune = %d, %v; want 1", n, err)
	}
	if n, err := ix.Prune(ctx); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v; want 0", n, err)
	}
}

func TestFusion(t *testing.T) {
	lex := []ranked{{"a", 9}, {"b", 5}, {"c", 1}}
	vec := []ranked{{"c", 0.9}, {"d", 0.5}, {"a", 0.1}}
	tests := []struct {
		f    Fusion
		want []ranked
	}{
		{Fusion{Method: RRF, K: 1, LexicalWeight: 1, VectorWeight: 1}, []ranked{
			{"a", 1.0/2 + 1.0/4}, {"c", 1.0/4 + 1.0/2}, {"b", 1.0 / 3}, {"d", 1.0 / 3},
		}},
		{Fusion{Method: ScoreFusion, LexicalWeight: 1, VectorWeight: 2}, []ranked{
			{"c", 0 + 2}, {"a", 1 + 0}, {"d", 2 * 0.5}, {"b", 0.5},
		}},
	}
	for _, tt := range tests {
		got := fuse(tt.f, lex, vec)
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(ranked{}), cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.f, diff)
		}
	}
}

func TestConcurrentSearchAndAdd(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, Config{}, testDocs...)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := ix.Search(ctx, "데이터 파이프라인 pipeline", SearchOptions{}); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			d := Document{ID: fmt.Sprintf("extra-%d", i), Source: "x", Text: "more text about pipelines"}
			if err := ix.Add(ctx, d); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ix.Len() != len(testDocs)+8 {
		t.Errorf("%d chunks, want %d", ix.Len(), len(testDocs)+8)
	}
}

func TestClosed(t *testing.T) {
	ix, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(context.Background(), "x", SearchOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Search after Close: %v", err)
	}
	if err := ix.Add(context.Background(), testDocs...); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
}
