package embed_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/weftlabs/weft/embed"
)

func norm(v []float32) float64 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	return math.Sqrt(n)
}

func TestLexicalDeterministicAndNormalised(t *testing.T) {
	a, b := embed.NewLexical(256), embed.NewLexical(256)
	for _, text := range []string{"Hello, world!", "서울에서 부산까지 기차 여행", "naïve café", "x"} {
		va, vb := a.Embed(text), b.Embed(text)
		if !slices.Equal(va, vb) {
			t.Errorf("%q: two embedders disagree", text)
		}
		if len(va) != 256 {
			t.Errorf("%q: %d dimensions, want 256", text, len(va))
		}
		if n := norm(va); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: norm %v, want 1", text, n)
		}
	}
	if n := norm(a.Embed("  ...  ")); n != 0 {
		t.Errorf("text without words: norm %v, want 0", n)
	}
	if d := embed.NewLexical(0).Dims(); d != embed.DefaultLexicalDims {
		t.Errorf("NewLexical(0).Dims() = %d, want %d", d, embed.DefaultLexicalDims)
	}
}

func TestLexicalSimilarity(t *testing.T) {
	l := embed.NewLexical(0)
	cos := func(a, b string) float64 { return embed.Cosine(l.Embed(a), l.Embed(b)) }
	for _, c := range []struct{ query, near, far string }{
		{"window seat", "prefers a window seat on flights", "vegetarian meals only"},
		{"planning", "plans and planners", "weather report"},
		{"제주도 여행", "다음 달 제주도로 가족 여행을 계획", "매운 음식을 좋아합니다"},
		{"서울", "서울에서 만나요", "부산에서 만나요"},
		{"東京 旅行", "東京旅行の計画", "大阪の天気"},
		{"HELLO World", "hello world", "goodbye moon"},
	} {
		if n, f := cos(c.query, c.near), cos(c.query, c.far); n <= f {
			t.Errorf("%q: near %q scores %.3f, not above far %q at %.3f", c.query, c.near, n, c.far, f)
		}
	}
}

func TestWords(t *testing.T) {
	got := embed.Words("Hello, WORLD! 서울에서-부산 café2go")
	want := []string{"hello", "world", "서울에서", "부산", "café2go"}
	if !slices.Equal(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}

func TestLexicalEmbedder(t *testing.T) {
	var e embed.Embedder = embed.NewLexical(64)
	ctx := context.Background()
	docs, err := e.EmbedDocuments(ctx, []string{"a b", "c"})
	if err != nil || len(docs) != 2 {
		t.Fatalf("EmbedDocuments = %d vectors, %v", len(docs), err)
	}
	q, err := e.EmbedQuery(ctx, "a b")
	if err != nil || !slices.Equal(q, docs[0]) {
		t.Errorf("EmbedQuery differs from EmbedDocuments for the same text (%v)", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.EmbedQuery(cancelled, "x"); err == nil {
		t.Error("EmbedQuery with a cancelled context succeeded")
	}
}

func TestCheckDims(t *testing.T) {
	if err := embed.CheckDims([][]float32{{1, 2}}, 1, 2); err != nil {
		t.Errorf("CheckDims of a good vector: %v", err)
	}
	if err := embed.CheckDims([][]float32{{1, 2, 3}}, 1, 2); err == nil {
		t.Error("CheckDims accepted a vector of the wrong length")
	}
	if err := embed.CheckDims(nil, 1, 2); err == nil {
		t.Error("CheckDims accepted a missing vector")
	}
}
