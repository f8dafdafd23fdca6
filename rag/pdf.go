package rag

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/ledongthuc/pdf"
)

// MaxPDFPages bounds the pages LoadPDF reads, so a hostile file claiming
// millions of pages cannot hold a loader for ever.
const MaxPDFPages = 5000

// LoadPDF extracts the text of a PDF (read from r, size bytes) with
// github.com/ledongthuc/pdf, a pure-Go reader, and returns one Document per
// page that has text, with Page set. The text's line breaks become spaces
// (PDF lines break where the layout did, not where sentences end). IDs are
// the file name without extension, "#p", and the page number; the title is
// the PDF's Info title, or the file name.
//
// Text comes out as the PDF's fonts map it to Unicode. Embedded fonts with
// a ToUnicode CMap (what most producers write, including for Korean) read
// correctly; a PDF whose ToUnicode CMap is one identity range over all
// two-byte codes (<0000> <FFFF> <0000>, written by some generators such as
// fpdf) reads as mojibake for non-Latin text, and a scanned PDF has no text
// at all (no OCR here). Encrypted PDFs are opened with an empty password
// only. A malformed file is an error, never a panic.
func LoadPDF(r io.ReaderAt, size int64, source string) (docs []Document, err error) {
	defer func() {
		// The reader panics on some malformed input; report it as the
		// malformed file it is.
		if p := recover(); p != nil {
			docs, err = nil, &LoadError{Source: source, Reason: "not a readable PDF", Err: fmt.Errorf("%v", p)}
		}
	}()
	rd, err := pdf.NewReader(r, size)
	if err != nil {
		return nil, &LoadError{Source: source, Reason: "not a readable PDF", Err: err}
	}
	n := rd.NumPage()
	if n > MaxPDFPages {
		return nil, &LoadError{Source: source, Reason: fmt.Sprintf("%d pages, more than the %d LoadPDF reads", n, MaxPDFPages)}
	}
	base := strings.TrimSuffix(path.Base(source), path.Ext(source))
	title := strings.TrimSpace(rd.Trailer().Key("Info").Key("Title").Text())
	if title == "" {
		title = base
	}
	for i := 1; i <= n; i++ {
		p := rd.Page(i)
		if p.V.IsNull() {
			continue
		}
		text, err := p.GetPlainText(nil)
		if err != nil {
			return nil, &LoadError{Source: source, Where: "page " + strconv.Itoa(i), Reason: "text could not be extracted", Err: err}
		}
		text = collapseSpace(text)
		if text == "" {
			continue
		}
		docs = append(docs, Document{
			ID: base + "#p" + strconv.Itoa(i), Source: source, Title: title,
			Text: text, Page: i,
		})
	}
	return docs, nil
}

// collapseSpace joins the words of s with single spaces.
func collapseSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}
