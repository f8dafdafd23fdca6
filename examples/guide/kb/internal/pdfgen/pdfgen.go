// Package pdfgen renders the knowledge base's PDF report from its text
// source, trends.txt, so the committed PDF can be checked against (and
// regenerated from) a source a person can edit.
//
// The source's first line is the report's title; each "=== heading" line
// starts a page; blank lines separate paragraphs. Rendering is
// deterministic: no dates, a fixed font, the same bytes for the same input.
//
// Korean needs a TrueType font with Hangul glyphs; the generator uses
// NanumGothic (SIL Open Font License 1.1, which allows embedding in
// documents; Debian's fonts-nanum package installs it), embedded as a
// subset. github.com/signintech/gopdf writes the font's ToUnicode map glyph
// by glyph, which text extractors read back; fpdf's single identity range
// over all codes is not read correctly by github.com/ledongthuc/pdf.
package pdfgen

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/signintech/gopdf"
)

// Source is trends.txt, the report's text.
//
//go:embed trends.txt
var Source []byte

// DefaultFont is where Debian's fonts-nanum installs NanumGothic.
const DefaultFont = "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"

// Page is one page of the report.
type Page struct {
	Heading    string
	Paragraphs []string
}

// Report is the parsed source.
type Report struct {
	Title string
	Pages []Page
}

// Parse reads a source in the format of trends.txt.
func Parse(src []byte) (Report, error) {
	var r Report
	sc := bufio.NewScanner(bytes.NewReader(src))
	var para []string
	flush := func() {
		if len(para) > 0 && len(r.Pages) > 0 {
			p := &r.Pages[len(r.Pages)-1]
			p.Paragraphs = append(p.Paragraphs, strings.Join(para, " "))
		}
		para = nil
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case r.Title == "":
			r.Title = line
		case strings.HasPrefix(line, "=== "):
			flush()
			r.Pages = append(r.Pages, Page{Heading: strings.TrimPrefix(line, "=== ")})
		case line == "":
			flush()
		default:
			if len(r.Pages) == 0 {
				return r, errors.New("pdfgen: text before the first \"=== heading\" line")
			}
			para = append(para, line)
		}
	}
	flush()
	if r.Title == "" || len(r.Pages) == 0 {
		return r, errors.New("pdfgen: expected a title line and at least one \"=== heading\" page")
	}
	return r, sc.Err()
}

// Text returns what a reader should extract from page i (0-based): the
// title on the first page, the heading and the paragraphs, joined by
// spaces.
func (r Report) Text(i int) string {
	parts := []string{}
	if i == 0 {
		parts = append(parts, r.Title)
	}
	parts = append(parts, r.Pages[i].Heading)
	parts = append(parts, r.Pages[i].Paragraphs...)
	return strings.Join(parts, " ")
}

// Page geometry in points (A4).
const (
	margin    = 56.0
	textWidth = 595.28 - 2*margin
	bodySize  = 11.0
	lineGap   = 17.0
)

// Render lays the report out on A4 pages with the TrueType font ttf.
func Render(r Report, ttf []byte) ([]byte, error) {
	pdf := &gopdf.GoPdf{}
	pdf.Start(gopdf.Config{PageSize: *gopdf.PageSizeA4})
	pdf.SetInfo(gopdf.PdfInfo{Title: r.Title, Creator: "weft examples/guide/kb/internal/pdfgen"})
	if err := pdf.AddTTFFontData("nanum", ttf); err != nil {
		return nil, fmt.Errorf("pdfgen: font: %w", err)
	}
	for i, p := range r.Pages {
		pdf.AddPage()
		pdf.SetXY(margin, margin)
		if i == 0 {
			if err := write(pdf, r.Title, 16, 26); err != nil {
				return nil, err
			}
			pdf.Br(10)
		}
		if err := write(pdf, p.Heading, 14, 22); err != nil {
			return nil, err
		}
		pdf.Br(6)
		for _, para := range p.Paragraphs {
			if err := write(pdf, para, bodySize, lineGap); err != nil {
				return nil, err
			}
			pdf.Br(8)
		}
	}
	var b bytes.Buffer
	if _, err := pdf.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("pdfgen: write: %w", err)
	}
	return b.Bytes(), nil
}

// write sets text at size, wrapped at spaces to the text width, one line
// every gap points. Lines break only between words, so an extractor that
// joins lines with spaces gets the source's text back.
func write(pdf *gopdf.GoPdf, text string, size, gap float64) error {
	if err := pdf.SetFont("nanum", "", size); err != nil {
		return err
	}
	var line string
	emit := func() error {
		pdf.SetX(margin)
		if err := pdf.Cell(nil, line); err != nil {
			return err
		}
		pdf.Br(gap)
		return nil
	}
	for _, w := range strings.Fields(text) {
		try := w
		if line != "" {
			try = line + " " + w
		}
		width, err := pdf.MeasureTextWidth(try)
		if err != nil {
			return err
		}
		if width > textWidth && line != "" {
			if err := emit(); err != nil {
				return err
			}
			try = w
		}
		line = try
	}
	if line != "" {
		return emit()
	}
	return nil
}
