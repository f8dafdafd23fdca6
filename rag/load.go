package rag

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// KnowledgeBase is the JSON knowledge-base format LoadJSON reads (document
// 004's "JSON 기본 지식"): an object with a list of entries.
//
//	{
//	  "entries": [
//	    {"id": "pipeline-setup", "language": "ko", "title": "데이터 파이프라인 설정",
//	     "text": "…", "tags": ["데이터", "파이프라인"], "url": "https://…"}
//	  ]
//	}
//
// Unknown fields are rejected, so a misspelt field is an error rather than
// text that silently goes unsearched.
type KnowledgeBase struct {
	// Entries are the knowledge items, one Document each.
	Entries []Entry `json:"entries"`
}

// Entry is one knowledge-base item.
type Entry struct {
	// ID is required, unique in the file, and becomes the Document's ID.
	ID string `json:"id"`
	// Title is required; it is searched with a higher weight than the text.
	Title string `json:"title"`
	// Text is the body; required.
	Text string `json:"text"`
	// Tags are optional keywords, searched too.
	Tags []string `json:"tags,omitempty"`
	// Language is "ko", "en", … or empty to detect it.
	Language string `json:"language,omitempty"`
	// URL optionally links to the original.
	URL string `json:"url,omitempty"`
}

// LoadJSON reads a KnowledgeBase from r; source names the file in errors and
// in the documents' Source.
func LoadJSON(r io.Reader, source string) ([]Document, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var kb KnowledgeBase
	if err := dec.Decode(&kb); err != nil {
		return nil, &LoadError{Source: source, Reason: `expected a JSON object {"entries": [{"id", "title", "text", "tags", "language", "url"}, …]}`, Err: err}
	}
	if dec.More() {
		return nil, &LoadError{Source: source, Reason: "expected one JSON object, found more data after it"}
	}
	seen := make(map[string]int, len(kb.Entries))
	docs := make([]Document, 0, len(kb.Entries))
	for i, e := range kb.Entries {
		where := fmt.Sprintf("entry %d", i)
		if e.ID != "" {
			where += fmt.Sprintf(" (id %q)", e.ID)
		}
		var missing []string
		for _, f := range []struct{ name, v string }{{"id", e.ID}, {"title", e.Title}, {"text", e.Text}} {
			if strings.TrimSpace(f.v) == "" {
				missing = append(missing, f.name)
			}
		}
		if len(missing) > 0 {
			return nil, &LoadError{Source: source, Where: where, Reason: "missing " + strings.Join(missing, ", ") + " (id, title and text are required)"}
		}
		if j, dup := seen[e.ID]; dup {
			return nil, &LoadError{Source: source, Where: where, Reason: fmt.Sprintf("id already used by entry %d; ids must be unique", j), Err: ErrDuplicate}
		}
		seen[e.ID] = i
		docs = append(docs, Document{
			ID: e.ID, Source: source, Title: e.Title, Text: e.Text,
			Language: e.Language, Tags: e.Tags, URL: e.URL,
		})
	}
	return docs, nil
}

// frontMatter is the optional YAML header of a Markdown file.
type frontMatter struct {
	ID       string   `yaml:"id"`
	Title    string   `yaml:"title"`
	Language string   `yaml:"language"`
	Tags     []string `yaml:"tags"`
	URL      string   `yaml:"url"`
}

var atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)

// LoadMarkdown reads a Markdown file and returns one Document per section:
// each ATX heading ("#" to "######") starts one, and its Headings are the
// path of headings above and including it. Text before the first heading is
// a section with no headings. Lines inside fenced code blocks are never
// headings. An optional YAML front matter block ("---" lines) sets id,
// title, language, tags and url for every section; without it the id is the
// file name without its extension and the title is the first level-1
// heading. Section IDs are the file's id, "#", and the heading's slug
// (lower-cased, spaces as "-"), made unique with "-2", "-3"…; sections
// without text are skipped.
func LoadMarkdown(r io.Reader, source string) ([]Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &LoadError{Source: source, Reason: "read failed", Err: err}
	}
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")) // files saved on Windows
	var fm frontMatter
	body := data
	if rest, ok := bytes.CutPrefix(data, []byte("---\n")); ok {
		head, tail, found := bytes.Cut(rest, []byte("\n---\n"))
		if !found {
			head, found = bytes.CutSuffix(rest, []byte("\n---"))
			tail = nil
		}
		if !found {
			return nil, &LoadError{Source: source, Where: "front matter", Reason: `the "---" block that opens the file is never closed`}
		}
		dec := yaml.NewDecoder(bytes.NewReader(head))
		dec.KnownFields(true)
		if err := dec.Decode(&fm); err != nil && !errors.Is(err, io.EOF) {
			return nil, &LoadError{Source: source, Where: "front matter", Reason: "expected YAML with id, title, language, tags, url", Err: err}
		}
		body = tail
	}
	base := fm.ID
	if base == "" {
		base = strings.TrimSuffix(path.Base(source), path.Ext(source))
	}

	type section struct {
		headings []string
		text     strings.Builder
	}
	var (
		sections = []*section{{}}
		levels   []int // heading levels of the current path
		hpath    []string
		fence    string
		title    = fm.Title
	)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trim, fence) && strings.TrimSpace(strings.TrimLeft(trim, fence[:1])) == "" {
				fence = ""
			}
		} else if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
		} else if m := atxHeading.FindStringSubmatch(line); m != nil {
			level, text := len(m[1]), strings.TrimSpace(m[2])
			for len(levels) > 0 && levels[len(levels)-1] >= level {
				levels, hpath = levels[:len(levels)-1], hpath[:len(hpath)-1]
			}
			levels, hpath = append(levels, level), append(hpath, text)
			if title == "" && level == 1 {
				title = text
			}
			sections = append(sections, &section{headings: slices.Clone(hpath)})
			continue
		}
		cur := sections[len(sections)-1]
		cur.text.WriteString(line)
		cur.text.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, &LoadError{Source: source, Reason: "read failed", Err: err}
	}
	if title == "" {
		title = base
	}
	var docs []Document
	used := map[string]int{}
	for _, s := range sections {
		// Every heading counts towards its slug's number, with text or
		// without, so an ID depends only on the headings above it.
		slug := "intro"
		if len(s.headings) > 0 {
			slug = Slug(s.headings[len(s.headings)-1])
		}
		used[slug]++
		if n := used[slug]; n > 1 {
			slug += "-" + strconv.Itoa(n)
		}
		text := strings.TrimSpace(s.text.String())
		if text == "" {
			continue
		}
		docs = append(docs, Document{
			ID: base + "#" + slug, Source: source, Title: title, Text: text,
			Language: fm.Language, Tags: fm.Tags, URL: fm.URL, Headings: s.headings,
		})
	}
	return docs, nil
}

// Slug turns a heading into an ID fragment: lower-cased letters and digits
// of any script, other runs of characters as one "-".
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

// LoadFS loads every knowledge file under dir in fsys, in lexical path
// order: *.json with LoadJSON, *.md and *.markdown with LoadMarkdown, *.pdf
// with LoadPDF. Other files are ignored, and so are directories named
// "testdata" or "internal" and names starting with "." or "_". Sources are
// the paths in fsys. Two documents with one ID fail with ErrDuplicate.
func LoadFS(fsys fs.FS, dir string) ([]Document, error) {
	var docs []Document
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (name == "testdata" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		var load func([]byte, string) ([]Document, error)
		switch strings.ToLower(path.Ext(name)) {
		case ".json":
			load = func(b []byte, src string) ([]Document, error) { return LoadJSON(bytes.NewReader(b), src) }
		case ".md", ".markdown":
			load = func(b []byte, src string) ([]Document, error) { return LoadMarkdown(bytes.NewReader(b), src) }
		case ".pdf":
			load = func(b []byte, src string) ([]Document, error) {
				return LoadPDF(bytes.NewReader(b), int64(len(b)), src)
			}
		default:
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ds, err := load(b, p)
		if err != nil {
			return err
		}
		docs = append(docs, ds...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := checkUnique(docs); err != nil {
		return nil, err
	}
	return docs, nil
}

func checkUnique(docs []Document) error {
	seen := make(map[string]string, len(docs))
	for _, d := range docs {
		if src, dup := seen[d.ID]; dup {
			return fmt.Errorf("%w: document %q is in both %s and %s", ErrDuplicate, d.ID, src, d.Source)
		}
		seen[d.ID] = d.Source
	}
	return nil
}
