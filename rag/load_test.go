package rag

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoadJSON(t *testing.T) {
	src := `{"entries": [
		{"id": "a", "title": "계산기", "text": "사칙연산을 합니다.", "tags": ["도구"], "language": "ko"},
		{"id": "b", "title": "Time", "text": "Tells the time.", "url": "https://example.com/time"}
	]}`
	docs, err := LoadJSON(strings.NewReader(src), "kb/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Document{
		{ID: "a", Source: "kb/tools.json", Title: "계산기", Text: "사칙연산을 합니다.", Language: "ko", Tags: []string{"도구"}},
		{ID: "b", Source: "kb/tools.json", Title: "Time", Text: "Tells the time.", URL: "https://example.com/time"},
	}
	if diff := cmp.Diff(want, docs); diff != "" {
		t.Errorf("documents (-want +got):\n%s", diff)
	}
}

func TestLoadJSONRejectsBadFiles(t *testing.T) {
	tests := []struct {
		name, src, where string
		dup              bool
	}{
		{name: "not an object", src: `[{"id": "a"}]`},
		{name: "misspelt field", src: `{"entries": [{"id": "a", "title": "t", "txt": "x"}]}`},
		{name: "missing text", src: `{"entries": [{"id": "a", "title": "t"}]}`, where: `entry 0 (id "a")`},
		{name: "blank id", src: `{"entries": [{"id": " ", "title": "t", "text": "x"}]}`, where: `entry 0 (id " ")`},
		{name: "duplicate id", src: `{"entries": [{"id": "a", "title": "t", "text": "x"}, {"id": "a", "title": "u", "text": "y"}]}`, where: `entry 1 (id "a")`, dup: true},
		{name: "trailing data", src: `{"entries": []} {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadJSON(strings.NewReader(tt.src), "kb.json")
			var le *LoadError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("err = %v, want a *LoadError matching ErrInvalidDocument", err)
			}
			if le.Source != "kb.json" || le.Where != tt.where {
				t.Errorf("LoadError source %q where %q, want kb.json, %q", le.Source, le.Where, tt.where)
			}
			if errors.Is(err, ErrDuplicate) != tt.dup {
				t.Errorf("errors.Is(err, ErrDuplicate) = %v, want %v", !tt.dup, tt.dup)
			}
		})
	}
}

func TestLoadMarkdown(t *testing.T) {
	src := "---\nid: guide\nlanguage: ko\ntags: [안내]\n---\n" +
		"머리말입니다.\n\n" +
		"# 업무 안내서\n소개 문단.\n\n" +
		"## 설치\n### 준비\n준비물을 챙깁니다.\n\n" +
		"```sh\n# 이 줄은 제목이 아닙니다\nrun --now\n```\n" +
		"### 실행 ###\n실행합니다.\n" +
		"## 설치\n두 번째 설치 절.\n" +
		"## 빈 절\n\n"
	docs, err := LoadMarkdown(strings.NewReader(src), "kb/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	base := Document{Source: "kb/guide.md", Title: "업무 안내서", Language: "ko", Tags: []string{"안내"}}
	doc := func(id, text string, headings ...string) Document {
		d := base
		d.ID, d.Text, d.Headings = id, text, headings
		return d
	}
	want := []Document{
		doc("guide#intro", "머리말입니다."),
		doc("guide#업무-안내서", "소개 문단.", "업무 안내서"),
		doc("guide#준비", "준비물을 챙깁니다.\n\n```sh\n# 이 줄은 제목이 아닙니다\nrun --now\n```", "업무 안내서", "설치", "준비"),
		doc("guide#실행", "실행합니다.", "업무 안내서", "설치", "실행"),
		doc("guide#설치-2", "두 번째 설치 절.", "업무 안내서", "설치"),
	}
	if diff := cmp.Diff(want, docs); diff != "" {
		t.Errorf("documents (-want +got):\n%s", diff)
	}
}

func TestLoadMarkdownWithoutFrontMatter(t *testing.T) {
	docs, err := LoadMarkdown(strings.NewReader("Just text.\n## Part One\nMore."), "dir/notes.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []Document{
		{ID: "notes#intro", Source: "dir/notes.md", Title: "notes", Text: "Just text."},
		{ID: "notes#part-one", Source: "dir/notes.md", Title: "notes", Text: "More.", Headings: []string{"Part One"}},
	}
	if diff := cmp.Diff(want, docs); diff != "" {
		t.Errorf("documents (-want +got):\n%s", diff)
	}
}

func TestLoadMarkdownWindowsLineEnds(t *testing.T) {
	docs, err := LoadMarkdown(strings.NewReader("---\r\nid: w\r\n---\r\n# T\r\nbody\r\n"), "w.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []Document{{ID: "w#t", Source: "w.md", Title: "T", Text: "body", Headings: []string{"T"}}}
	if diff := cmp.Diff(want, docs); diff != "" {
		t.Errorf("documents (-want +got):\n%s", diff)
	}
}

func TestLoadMarkdownRejectsBadFrontMatter(t *testing.T) {
	for name, src := range map[string]string{
		"unclosed":      "---\nid: x\n# Title\n",
		"unknown field": "---\nidd: x\n---\ntext\n",
		"not YAML":      "---\nid: [x\n---\ntext\n",
	} {
		_, err := LoadMarkdown(strings.NewReader(src), "a.md")
		var le *LoadError
		if !errors.As(err, &le) || le.Where != "front matter" {
			t.Errorf("%s: err = %v, want a front matter *LoadError", name, err)
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Getting started!":  "getting-started",
		"번역과 현지화":           "번역과-현지화",
		"  API / 설정 (v2)  ": "api-설정-v2",
		"***":               "section",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// The knowledge base's PDF was rendered from Korean and English text with
// an embedded TrueType font; its text must come back readable.
const kbPDF = "../examples/guide/kb/trends-2026.pdf"

func TestLoadPDFReadsKorean(t *testing.T) {
	b, err := os.ReadFile(kbPDF)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := LoadPDF(bytes.NewReader(b), int64(len(b)), "kb/trends-2026.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 4 {
		t.Fatalf("%d pages with text, want 4", len(docs))
	}
	d := docs[0]
	if d.ID != "trends-2026#p1" || d.Page != 1 || !strings.HasPrefix(d.Title, "AI 업무 도구 동향 보고서 2026") {
		t.Errorf("page 1: id %q page %d title %q", d.ID, d.Page, d.Title)
	}
	if !strings.Contains(d.Text, "영상 생성 AI 도구의 변화 올해 영상 제작에서") || DetectLanguage(d.Text) != "ko" {
		t.Errorf("page 1 text does not read as the Korean source: %.120q", d.Text)
	}
	if !strings.Contains(docs[2].Text, "Hybrid retrieval, a keyword ranking fused with a vector ranking") {
		t.Errorf("page 3 text: %.120q", docs[2].Text)
	}
}

func TestLoadPDFRejectsMalformed(t *testing.T) {
	b, err := os.ReadFile(kbPDF)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"not a PDF": []byte("hello"),
		"truncated": b[:len(b)/2],
		"header":    []byte("%PDF-1.7\n%%EOF\n"),
	} {
		_, err := LoadPDF(bytes.NewReader(data), int64(len(data)), "x.pdf")
		if !errors.Is(err, ErrInvalidDocument) {
			t.Errorf("%s: err = %v, want ErrInvalidDocument", name, err)
		}
	}
}

func TestLoadFS(t *testing.T) {
	pdf, err := os.ReadFile(kbPDF)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"kb/a.json":              {Data: []byte(`{"entries": [{"id": "a", "title": "A", "text": "alpha"}]}`)},
		"kb/b.md":                {Data: []byte("# B\nbeta")},
		"kb/sub/c.pdf":           {Data: pdf},
		"kb/notes.txt":           {Data: []byte("ignored")},
		"kb/.hidden.md":          {Data: []byte("ignored")},
		"kb/testdata/q.json":     {Data: []byte("not loaded")},
		"kb/internal/src.md":     {Data: []byte("not loaded")},
		"kb/_drafts/draft.md":    {Data: []byte("not loaded")},
		"elsewhere/outside.json": {Data: []byte("not loaded")},
	}
	docs, err := LoadFS(fsys, "kb")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.Source+" "+d.ID)
	}
	want := []string{"kb/a.json a", "kb/b.md b#b", "kb/sub/c.pdf c#p1", "kb/sub/c.pdf c#p2", "kb/sub/c.pdf c#p3", "kb/sub/c.pdf c#p4"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}

	fsys["kb/d.json"] = &fstest.MapFile{Data: []byte(`{"entries": [{"id": "b#b", "title": "dup", "text": "x"}]}`)}
	if _, err := LoadFS(fsys, "kb"); !errors.Is(err, ErrDuplicate) {
		t.Errorf("two documents with one id: err = %v, want ErrDuplicate", err)
	}
	fsys["kb/d.json"] = &fstest.MapFile{Data: []byte(`{`)}
	var le *LoadError
	if _, err := LoadFS(fsys, "kb"); !errors.As(err, &le) || le.Source != "kb/d.json" {
		t.Errorf("a bad file: err = %v, want a *LoadError naming kb/d.json", err)
	}
}

func FuzzLoadMarkdown(f *testing.F) {
	f.Add([]byte("---\nid: x\n---\n# A\ntext\n## B\n```\n# no\n```\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := LoadMarkdown(bytes.NewReader(data), "f.md")
		if err != nil && !errors.Is(err, ErrInvalidDocument) {
			t.Fatalf("error does not match ErrInvalidDocument: %v", err)
		}
		for _, d := range docs {
			if strings.TrimSpace(d.Text) == "" || d.ID == "" {
				t.Fatalf("empty document %+v", d)
			}
		}
	})
}

func FuzzLoadJSON(f *testing.F) {
	f.Add([]byte(`{"entries": [{"id": "a", "title": "t", "text": "x", "tags": ["y"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := LoadJSON(bytes.NewReader(data), "f.json"); err != nil && !errors.Is(err, ErrInvalidDocument) {
			t.Fatalf("error does not match ErrInvalidDocument: %v", err)
		}
	})
}

func FuzzLoadPDF(f *testing.F) {
	b, err := os.ReadFile(kbPDF)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:2048])
	f.Add(b[len(b)-1024:])
	f.Add([]byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := LoadPDF(bytes.NewReader(data), int64(len(data)), "f.pdf"); err != nil && !errors.Is(err, ErrInvalidDocument) {
			t.Fatalf("error does not match ErrInvalidDocument: %v", err)
		}
	})
}
