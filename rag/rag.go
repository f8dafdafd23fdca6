// Package rag is weft's document retrieval: loaders for JSON knowledge bases,
// Markdown and PDF, chunking with overlap and source metadata, and hybrid
// search that fuses a keyword index with vector search (document 004's
// retrieve_docs).
//
// Loading turns files into Documents (a JSON entry, a Markdown section, a PDF
// page); an Index splits them into Chunks and indexes each chunk twice:
//
//   - lexically, in an in-memory bleve index whose analyzer cuts Hangul into
//     character bigrams (Korean writes many words together, so whole-word
//     matching misses "파이프라인" in "파이프라인을") and stems English;
//   - as vectors, in weft's store (store.Store with an IndexConfig), embedded
//     by embed.Lexical offline or by an OpenAI-compatible model.
//
// Search runs both and fuses the two rankings (relative-score fusion by
// default, reciprocal-rank fusion as an option). Tool wraps
// an Index as the retrieve_docs tool for agents, answering with passages and
// their citations.
//
//	docs, _ := rag.LoadFS(os.DirFS("kb"), ".")
//	ix, _ := rag.New(ctx, rag.Config{})
//	_ = ix.Add(ctx, docs...)
//	hits, _ := ix.Search(ctx, "데이터 파이프라인 설정", rag.SearchOptions{K: 5})
package rag

import (
	"errors"
	"fmt"
)

// Document is one unit a loader produces: a knowledge-base entry, a Markdown
// section or a PDF page. An Index splits it into chunks.
type Document struct {
	// ID identifies the document across the index; chunk IDs derive from it.
	ID string `json:"id"`
	// Source is where the document came from (a slash-separated path).
	Source string `json:"source"`
	// Title is the entry's or file's title.
	Title string `json:"title,omitempty"`
	// Text is the body that is chunked and searched.
	Text string `json:"text"`
	// Language is a language code ("ko", "en"); empty means detect it from
	// the text with DetectLanguage.
	Language string `json:"language,omitempty"`
	// Tags are keywords of the entry; they are searched too.
	Tags []string `json:"tags,omitempty"`
	// URL links to the original, if any.
	URL string `json:"url,omitempty"`
	// Page is the PDF page number, counted from 1; 0 when not from a PDF.
	Page int `json:"page,omitempty"`
	// Headings is the Markdown heading path above the section, outermost
	// first.
	Headings []string `json:"headings,omitempty"`
}

// Chunk is a piece of a Document, what the index stores and search returns.
// It carries its document's metadata so a hit can be cited alone.
type Chunk struct {
	// ID is DocID + "#" + Index, e.g. "pipeline-setup#0".
	ID       string   `json:"id"`
	DocID    string   `json:"doc_id"`
	Index    int      `json:"index"`
	Source   string   `json:"source"`
	Title    string   `json:"title,omitempty"`
	Language string   `json:"language,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	URL      string   `json:"url,omitempty"`
	Page     int      `json:"page,omitempty"`
	Headings []string `json:"headings,omitempty"`
	Text     string   `json:"text"`
	// Start and End are the chunk's offsets in the document's text, in
	// runes (End exclusive).
	Start int `json:"start"`
	End   int `json:"end"`
}

// Citation returns a short human-readable reference to where the chunk came
// from: the source, then the PDF page or the heading path.
//
//	kb/workflows.md › 데이터 파이프라인 › 설정
//	kb/trends.pdf p.3
//	kb/kb.json › pipeline-setup
func (c Chunk) Citation() string {
	s := c.Source
	switch {
	case c.Page > 0:
		s += fmt.Sprintf(" p.%d", c.Page)
	case len(c.Headings) > 0:
		for _, h := range c.Headings {
			s += " › " + h
		}
	default:
		s += " › " + c.DocID
	}
	return s
}

var (
	// ErrInvalidDocument means a loaded file or a document does not have the
	// expected shape; the error is a *LoadError or names the document.
	ErrInvalidDocument = errors.New("rag: invalid document")
	// ErrInvalidConfig means a Config, Splitter or SearchOptions value is out
	// of range.
	ErrInvalidConfig = errors.New("rag: invalid configuration")
	// ErrDuplicate means two documents (or two chunks) have the same ID.
	ErrDuplicate = errors.New("rag: duplicate id")
	// ErrClosed means the index was closed.
	ErrClosed = errors.New("rag: index closed")
)

// LoadError describes a file that could not be loaded. It matches
// ErrInvalidDocument with errors.Is and unwraps to its cause.
type LoadError struct {
	// Source is the file.
	Source string
	// Where locates the problem inside it ("entry 3", "page 2", "line 7"),
	// or is empty.
	Where string
	// Reason says what is wrong and what was expected.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

// Error names the source, the place and the reason.
func (e *LoadError) Error() string {
	s := "rag: load " + e.Source
	if e.Where != "" {
		s += ": " + e.Where
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrInvalidDocument.
func (e *LoadError) Is(target error) bool { return target == ErrInvalidDocument }

// Unwrap returns the cause.
func (e *LoadError) Unwrap() error { return e.Err }
