package rag

import (
	"context"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	unitok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Analyzers for Config.Analyzer: how text is cut into index terms.
const (
	// AnalyzerKoEn, the default, serves Korean and English in one field:
	// Unicode word segmentation, width folding, lower case; then Hangul
	// runs become overlapping character bigrams ("파이프라인을" gives 파이
	// 이프 프라 라인 인을, so the query "파이프라인" matches it without a
	// morphological analyser), Han and kana too, and English words lose
	// possessives and stop words and are stemmed (snowball).
	AnalyzerKoEn = "weft_ko_en"
	// AnalyzerCJK is bleve's "cjk" analyzer as shipped. Its bigrams apply
	// to Han and kana only: Hangul words stay whole, so Korean words with
	// particles attached do not match their bare forms.
	AnalyzerCJK = cjk.AnalyzerName
	// AnalyzerStandard is bleve's "standard" analyzer (Unicode words, lower
	// case, English stop words), for comparison.
	AnalyzerStandard = "standard"
)

// hangulFilterName is the token filter that cuts tokens into script runs and
// marks Hangul runs as ideographic, so that bleve's cjk_bigram filter (which
// bigrams by token type) bigrams Korean too.
const hangulFilterName = "weft_hangul"

// Registering with bleve's registry is how bleve finds analysis components
// by name; it holds constructors, no state.
func init() {
	if err := registry.RegisterTokenFilter(hangulFilterName, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
		return hangulFilter{}, nil
	}); err != nil {
		panic(err)
	}
}

type hangulFilter struct{}

// Filter splits each token at changes between Hangul and other scripts
// ("api를" becomes "api" and "를") and types Hangul runs Ideographic.
func (hangulFilter) Filter(in analysis.TokenStream) analysis.TokenStream {
	out := make(analysis.TokenStream, 0, len(in))
	for _, tok := range in {
		if tok.Type != analysis.AlphaNumeric || !hasHangul(tok.Term) {
			out = append(out, tok)
			continue
		}
		start := 0
		for start < len(tok.Term) {
			r, _ := utf8.DecodeRune(tok.Term[start:])
			h := isHangul(r)
			end := start
			for end < len(tok.Term) {
				r, size := utf8.DecodeRune(tok.Term[end:])
				if isHangul(r) != h {
					break
				}
				end += size
			}
			t := &analysis.Token{
				Term:     tok.Term[start:end],
				Start:    tok.Start + start,
				End:      tok.Start + end,
				Position: tok.Position,
				Type:     analysis.AlphaNumeric,
				KeyWord:  tok.KeyWord,
			}
			if h {
				t.Type = analysis.Ideographic
			}
			out = append(out, t)
			start = end
		}
	}
	return out
}

func isHangul(r rune) bool { return unicode.Is(unicode.Hangul, r) }

func hasHangul(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if isHangul(r) {
			return true
		}
		b = b[size:]
	}
	return false
}

// Field names in the bleve index.
const (
	fTitle    = "title"
	fHeadings = "headings"
	fText     = "text"
	fTags     = "tags"
	fLang     = "language"
	fSource   = "source"
)

// fieldBoosts weigh a match in each searched field. A title or heading
// names what a whole chunk is about, so a match there counts for more.
var fieldBoosts = []struct {
	field string
	boost float64
}{{fTitle, 2}, {fHeadings, 1.5}, {fTags, 1.5}, {fText, 1}}

// lexical is the keyword side of an Index: an in-memory bleve index.
type lexical struct {
	idx bleve.Index
}

func newLexical(analyzer string) (*lexical, error) {
	im := bleve.NewIndexMapping()
	if err := im.AddCustomAnalyzer(AnalyzerKoEn, map[string]any{
		"type":      custom.Name,
		"tokenizer": unitok.Name,
		"token_filters": []any{
			cjk.WidthName, lowercase.Name, hangulFilterName, cjk.BigramName,
			en.PossessiveName, en.StopName, en.SnowballStemmerName,
		},
	}); err != nil {
		return nil, err
	}
	switch analyzer {
	case AnalyzerKoEn, AnalyzerCJK, AnalyzerStandard:
	default:
		return nil, fmt.Errorf("%w: analyzer %q (expected %q, %q or %q)", ErrInvalidConfig, analyzer, AnalyzerKoEn, AnalyzerCJK, AnalyzerStandard)
	}
	im.ScoringModel = index.BM25Scoring
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range []string{fTitle, fHeadings, fText, fTags} {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = analyzer
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f, fm)
	}
	for _, f := range []string{fLang, fSource} {
		fm := bleve.NewKeywordFieldMapping()
		fm.Analyzer = keyword.Name
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f, fm)
	}
	im.DefaultMapping = dm
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	// An empty path keeps scorch's segments in memory: the index is
	// rebuilt from the loaded documents at start, so there is no second
	// copy on disk to keep in step with the store (and no file lock).
	idx, err := bleve.NewUsing("", im, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("rag: create keyword index: %w", err)
	}
	return &lexical{idx: idx}, nil
}

// add indexes chunks in one batch, replacing chunks with the same IDs.
func (l *lexical) add(chunks []Chunk) error {
	b := l.idx.NewBatch()
	for i := range chunks {
		c := &chunks[i]
		doc := map[string]any{
			fTitle: c.Title, fText: c.Text, fLang: c.Language, fSource: c.Source,
		}
		if len(c.Headings) > 0 {
			doc[fHeadings] = c.Headings
		}
		if len(c.Tags) > 0 {
			doc[fTags] = c.Tags
		}
		if err := b.Index(c.ID, doc); err != nil {
			return fmt.Errorf("rag: keyword index %s: %w", c.ID, err)
		}
	}
	if err := l.idx.Batch(b); err != nil {
		return fmt.Errorf("rag: keyword index: %w", err)
	}
	return nil
}

func (l *lexical) delete(ids []string) error {
	b := l.idx.NewBatch()
	for _, id := range ids {
		b.Delete(id)
	}
	return l.idx.Batch(b)
}

type ranked struct {
	id    string
	score float64
}

// search returns up to n chunk IDs best first. A query without any index
// term (only punctuation or stop words) finds nothing.
func (l *lexical) search(ctx context.Context, text string, f filter, n int) ([]ranked, error) {
	var should []query.Query
	for _, fb := range fieldBoosts {
		m := bleve.NewMatchQuery(text)
		m.SetField(fb.field)
		m.SetBoost(fb.boost)
		should = append(should, m)
	}
	var q query.Query = bleve.NewDisjunctionQuery(should...)
	if f.language != "" || f.source != "" {
		must := []query.Query{q}
		for _, t := range []struct{ field, v string }{{fLang, f.language}, {fSource, f.source}} {
			if t.v != "" {
				tq := bleve.NewTermQuery(t.v)
				tq.SetField(t.field)
				must = append(must, tq)
			}
		}
		q = bleve.NewConjunctionQuery(must...)
	}
	req := bleve.NewSearchRequestOptions(q, n, 0, false)
	res, err := l.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("rag: keyword search: %w", err)
	}
	out := make([]ranked, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = ranked{id: h.ID, score: h.Score}
	}
	return out, nil
}

func (l *lexical) close() error { return l.idx.Close() }

// analyze returns the terms analyzer makes of text, for tests and docs.
func analyze(analyzerName, text string) ([]string, error) {
	l, err := newLexical(analyzerName)
	if err != nil {
		return nil, err
	}
	defer l.close()
	a := l.idx.Mapping().AnalyzerNamed(analyzerName)
	if a == nil {
		return nil, fmt.Errorf("%w: analyzer %q not found", ErrInvalidConfig, analyzerName)
	}
	var terms []string
	for _, t := range a.Analyze([]byte(text)) {
		terms = append(terms, string(t.Term))
	}
	return terms, nil
}
