package kb

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/weftlabs/weft/examples/guide/kb/internal/pdfgen"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/eval"
)

func TestDocumentsCoverBothLanguagesAndFormats(t *testing.T) {
	docs, err := Documents()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, d := range docs {
		lang := d.Language
		if lang == "" {
			lang = rag.DetectLanguage(d.Text)
		}
		count[lang]++
		count[d.Source]++
	}
	for _, k := range []string{"ko", "en", "tools.json", "guides-ko.md", "guides-en.md", "trends-2026.pdf"} {
		if count[k] < 2 {
			t.Errorf("%s: %d documents", k, count[k])
		}
	}
}

// TestPDFReadsBackItsSource: the text extracted from the committed PDF is
// the text of its source, page by page, Korean included.
func TestPDFReadsBackItsSource(t *testing.T) {
	r, err := pdfgen.Parse(pdfgen.Source)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("trends-2026.pdf")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := rag.LoadPDF(bytes.NewReader(b), int64(len(b)), "trends-2026.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(r.Pages) {
		t.Fatalf("%d pages read, the source has %d", len(docs), len(r.Pages))
	}
	for i, d := range docs {
		want := strings.Join(strings.Fields(r.Text(i)), " ")
		if d.Text != want {
			t.Errorf("page %d reads\n%q\nwant\n%q", i+1, d.Text, want)
		}
	}
	if docs[0].Title != r.Title {
		t.Errorf("title %q, want %q", docs[0].Title, r.Title)
	}
}

// TestPDFIsUpToDate renders the source again and compares bytes, so an edit
// of trends.txt without `go generate` fails. It needs the NanumGothic font
// (Debian's fonts-nanum); without it the test above still checks the text.
func TestPDFIsUpToDate(t *testing.T) {
	ttf, err := os.ReadFile(pdfgen.DefaultFont)
	if err != nil {
		t.Skipf("no %s (apt-get install fonts-nanum): %v", pdfgen.DefaultFont, err)
	}
	r, err := pdfgen.Parse(pdfgen.Source)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pdfgen.Render(r, ttf)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("trends-2026.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("trends-2026.pdf is not what internal/pdfgen/trends.txt renders to; run go generate ./examples/guide/kb")
	}
}

func loadQueries(t testing.TB) []eval.Query {
	f, err := os.Open("testdata/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := eval.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func TestQueriesLabelExistingDocuments(t *testing.T) {
	docs, err := Documents()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, d := range docs {
		ids[d.ID] = true
	}
	qs := loadQueries(t)
	langs := map[string]int{}
	for _, q := range qs {
		langs[q.Language]++
		for _, r := range q.Relevant {
			if !ids[r] {
				t.Errorf("query %s: relevant document %q does not exist", q.ID, r)
			}
		}
	}
	if langs["ko"] < 30 || langs["en"] < 30 {
		t.Errorf("queries per language: %v, want at least 30 of each", langs)
	}
}

// Quality floors at k=5 with the default configuration (offline lexical
// embedder, Korean-and-English analyzer, relative-score fusion). Measured
// when written: lexical 0.920 / 0.828, vector 0.780 / 0.697, hybrid
// 0.913 / 0.805 (recall / nDCG); the floors leave room for small changes
// of ranking, not for a broken analyzer or fusion.
var floors = []struct {
	mode         rag.Mode
	recall, ndcg float64
}{
	{rag.Lexical, 0.85, 0.75},
	{rag.Vector, 0.70, 0.62},
	{rag.Hybrid, 0.85, 0.75},
}

func TestRetrievalQuality(t *testing.T) {
	ctx := context.Background()
	docs, err := Documents()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := rag.New(ctx, rag.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	qs := loadQueries(t)
	for _, f := range floors {
		res, err := eval.Run(ctx, ix, qs, rag.SearchOptions{Mode: f.mode}, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: recall@5 %.3f nDCG@5 %.3f MRR %.3f missed %v", f.mode, res.Recall, res.NDCG, res.MRR, res.Missed)
		if res.Recall < f.recall || res.NDCG < f.ndcg {
			t.Errorf("%s: recall@5 %.3f nDCG@5 %.3f, floor %.2f / %.2f", f.mode, res.Recall, res.NDCG, f.recall, f.ndcg)
		}
	}
}
