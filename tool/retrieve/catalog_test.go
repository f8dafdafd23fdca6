package retrieve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
)

// loadCatalog reads testdata/catalog.txt: "name | description | params".
func loadCatalog(t testing.TB) []llm.ToolSpec {
	t.Helper()
	f, err := os.Open("testdata/catalog.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var specs []llm.ToolSpec
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.Split(text, "|")
		if len(parts) != 3 {
			t.Fatalf("catalog.txt:%d: want 3 fields separated by |, got %d", line, len(parts))
		}
		schema, err := paramSchema(parts[2])
		if err != nil {
			t.Fatalf("catalog.txt:%d: %v", line, err)
		}
		specs = append(specs, llm.ToolSpec{Name: strings.TrimSpace(parts[0]), Description: strings.TrimSpace(parts[1]), Parameters: schema})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return specs
}

// paramSchema turns "owner*, repo*, labels[], page:int" into a JSON Schema.
func paramSchema(s string) (json.RawMessage, error) {
	props := map[string]any{}
	var required []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		typ := "string"
		if name, t, ok := strings.Cut(p, ":"); ok {
			p, typ = name, map[string]string{"int": "integer", "num": "number", "bool": "boolean"}[t]
			if typ == "" {
				return nil, fmt.Errorf("unknown type %q", t)
			}
		}
		prop := map[string]any{"type": typ}
		if strings.HasSuffix(p, "[]") {
			p = strings.TrimSuffix(p, "[]")
			prop = map[string]any{"type": "array", "items": map[string]any{"type": typ}}
		}
		if strings.HasSuffix(p, "*") {
			p = strings.TrimSuffix(p, "*")
			required = append(required, p)
		}
		if strings.HasSuffix(p, "[]") { // "ids*[]" and "ids[]*" alike
			p = strings.TrimSuffix(p, "[]")
			prop = map[string]any{"type": "array", "items": map[string]any{"type": typ}}
		}
		props[p] = prop
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return json.Marshal(schema)
}

type labelledQuery struct {
	lang  string
	text  string
	tools []string
}

func loadQueries(t testing.TB) []labelledQuery {
	t.Helper()
	data, err := os.ReadFile("testdata/queries.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var qs []labelledQuery
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("queries.tsv:%d: want 3 tab-separated fields, got %d", i+1, len(f))
		}
		qs = append(qs, labelledQuery{lang: f[0], text: f[1], tools: strings.Split(f[2], ",")})
	}
	return qs
}

func hasHangul(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Hangul, r) {
			return true
		}
	}
	return false
}

// recallReport is recall@k over a query set, overall and by group: the
// query's language, and whether a correct tool is described in the same
// language ("ko→ko") or only in the other ("ko→en").
type recallReport struct {
	k      int
	found  map[string]int
	total  map[string]int
	misses []string
}

func (r *recallReport) add(group string, hit bool) {
	r.total[group]++
	if hit {
		r.found[group]++
	}
}

func (r *recallReport) recall(group string) float64 {
	if r.total[group] == 0 {
		return 0
	}
	return float64(r.found[group]) / float64(r.total[group])
}

func (r *recallReport) String() string {
	var b strings.Builder
	for _, g := range []string{"all", "en", "ko", "ko→ko", "ko→en"} {
		fmt.Fprintf(&b, "%s %.3f (%d/%d)  ", g, r.recall(g), r.found[g], r.total[g])
	}
	return b.String()
}

// measure runs every query against x and reports recall@k.
func measure(t testing.TB, x *Index, specs []llm.ToolSpec, qs []labelledQuery, k int) *recallReport {
	t.Helper()
	desc := map[string]string{}
	for _, s := range specs {
		desc[s.Name] = s.Description
	}
	r := &recallReport{k: k, found: map[string]int{}, total: map[string]int{}}
	for _, q := range qs {
		hits, err := x.Search(context.Background(), q.text, k)
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for _, h := range hits {
			for _, want := range q.tools {
				hit = hit || h.Spec.Name == want
			}
		}
		r.add("all", hit)
		r.add(q.lang, hit)
		if q.lang == "ko" {
			group := "ko→en"
			for _, want := range q.tools {
				if hasHangul(desc[want]) {
					group = "ko→ko"
				}
			}
			r.add(group, hit)
		}
		if !hit {
			var got []string
			for _, h := range hits {
				got = append(got, h.Spec.Name)
			}
			r.misses = append(r.misses, fmt.Sprintf("%s %q want %v got %v", q.lang, q.text, q.tools, got))
		}
	}
	return r
}

// newCatalogIndex indexes the catalogue in an in-memory store with e.
func newCatalogIndex(t testing.TB, e embed.Embedder, specs []llm.ToolSpec, opts Options) *Index {
	t.Helper()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: e, Fields: []string{"text"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	x, err := New(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Sync(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	return x
}
