// Command mkpdf writes the knowledge base's PDF report from trends.txt.
// Run it from examples/guide/kb (go generate does):
//
//	go run ./internal/pdfgen/mkpdf [-font NanumGothic.ttf] [-out trends-2026.pdf]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/weftlabs/weft/examples/guide/kb/internal/pdfgen"
)

func main() {
	font := flag.String("font", pdfgen.DefaultFont, "TrueType font with Hangul glyphs (Debian: apt-get install fonts-nanum)")
	out := flag.String("out", "trends-2026.pdf", "the PDF to write")
	flag.Parse()
	if err := run(*font, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkpdf:", err)
		os.Exit(1)
	}
}

func run(font, out string) error {
	ttf, err := os.ReadFile(font)
	if err != nil {
		return fmt.Errorf("%w (install Debian's fonts-nanum or pass -font)", err)
	}
	r, err := pdfgen.Parse(pdfgen.Source)
	if err != nil {
		return err
	}
	b, err := pdfgen.Render(r, ttf)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
