// Package kb is the knowledge base of the workflow-guide agent (design
// document 004): workflow guides and tool descriptions in Korean and
// English, as a JSON knowledge base (tools.json), Markdown handbooks
// (guides-ko.md, guides-en.md) and a PDF report (trends-2026.pdf, rendered
// from internal/pdfgen/trends.txt). The files are embedded, so the agent
// needs nothing on disk.
//
// testdata/queries.json is a labelled query set over it: questions phrased
// as users ask them, in both languages, each with the documents that answer
// it. The tests hold retrieval quality above a floor; bench/rag reports the
// figures.
package kb

//go:generate go run ./internal/pdfgen/mkpdf -out trends-2026.pdf

import (
	"embed"
	"io/fs"

	"github.com/weftlabs/weft/rag"
)

//go:embed tools.json guides-ko.md guides-en.md trends-2026.pdf
var files embed.FS

// FS returns the knowledge base's files.
func FS() fs.FS { return files }

// Documents loads every document of the knowledge base.
func Documents() ([]rag.Document, error) {
	return rag.LoadFS(files, ".")
}
