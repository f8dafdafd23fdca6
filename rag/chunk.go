package rag

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Chunking defaults, in runes (characters), not bytes: a Hangul syllable is
// three bytes in UTF-8 and one rune, so a byte budget would give Korean
// chunks a third of the text of English ones.
const (
	DefaultChunkSize    = 800
	DefaultChunkOverlap = 120
	// MinChunkSize is the smallest Size a Splitter accepts.
	MinChunkSize = 32
)

// Splitter cuts documents into chunks of at most Size runes that overlap by
// up to Overlap runes. It prefers sentence boundaries: a chunk holds whole
// sentences (ending in . ! ? 。 or a line break) as long as they fit, and the
// overlap is the previous chunk's last whole sentences that fit in Overlap.
// A sentence longer than Size is cut at the last space before Size, or, in a
// run without spaces, between two runes; text is never cut inside a rune.
// The zero value uses the defaults.
type Splitter struct {
	// Size is the most runes a chunk holds (default DefaultChunkSize).
	Size int
	// Overlap is the most runes a chunk repeats from the one before
	// (default DefaultChunkOverlap; negative for none). It must be less
	// than half of Size.
	Overlap int
}

func (s Splitter) withDefaults() (Splitter, error) {
	if s.Size == 0 {
		s.Size = DefaultChunkSize
	}
	if s.Overlap == 0 {
		s.Overlap = DefaultChunkOverlap
	}
	if s.Overlap < 0 {
		s.Overlap = 0
	}
	if s.Size < MinChunkSize {
		return s, fmt.Errorf("%w: chunk size %d runes is below the minimum %d", ErrInvalidConfig, s.Size, MinChunkSize)
	}
	if s.Overlap*2 >= s.Size {
		return s, fmt.Errorf("%w: chunk overlap %d must be less than half the chunk size %d", ErrInvalidConfig, s.Overlap, s.Size)
	}
	return s, nil
}

// Split cuts doc into chunks, numbered from 0, each carrying doc's metadata.
// A document whose text is blank gives no chunks. It fails only for a
// Splitter out of range.
func (s Splitter) Split(doc Document) ([]Chunk, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	runes := []rune(doc.Text)
	lang := doc.Language
	if lang == "" {
		lang = DetectLanguage(doc.Text)
	}
	var out []Chunk
	for _, sp := range s.spans(runes) {
		text := strings.TrimSpace(string(runes[sp[0]:sp[1]]))
		if text == "" {
			continue
		}
		i := len(out)
		out = append(out, Chunk{
			ID: doc.ID + "#" + strconv.Itoa(i), DocID: doc.ID, Index: i,
			Source: doc.Source, Title: doc.Title, Language: lang, Tags: doc.Tags,
			URL: doc.URL, Page: doc.Page, Headings: doc.Headings,
			Text: text, Start: sp[0], End: sp[1],
		})
	}
	return out, nil
}

// spans returns the [start, end) rune ranges of the chunks of runes.
func (s Splitter) spans(runes []rune) [][2]int {
	segs := s.segments(runes)
	var out [][2]int
	for i := 0; i < len(segs); {
		// Take whole segments while they fit.
		j := i
		for j < len(segs) && segs[j][1]-segs[i][0] <= s.Size {
			j++
		}
		out = append(out, [2]int{segs[i][0], segs[j-1][1]})
		if j == len(segs) {
			break
		}
		// The next chunk starts with the last whole segments of this one
		// that fit in the overlap, but always after this chunk's start.
		k := j
		for k-1 > i && segs[j-1][1]-segs[k-1][0] <= s.Overlap {
			k--
		}
		i = k
	}
	return out
}

// segments splits runes into sentences, each with its trailing spaces, and
// cuts sentences longer than s.Size into pieces that fit.
func (s Splitter) segments(runes []rune) [][2]int {
	var segs [][2]int
	add := func(start, end int) {
		for end-start > s.Size {
			cut := start + s.Size
			// Back up to just after a space, if there is one in the
			// second half of the piece; else cut between runes.
			for c := cut; c > start+s.Size/2; c-- {
				if unicode.IsSpace(runes[c-1]) {
					cut = c
					break
				}
			}
			segs = append(segs, [2]int{start, cut})
			start = cut
		}
		if end > start {
			segs = append(segs, [2]int{start, end})
		}
	}
	start := 0
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		end := false
		switch r {
		case '\n':
			end = true
		case '.', '!', '?', '。', '！', '？':
			end = i+1 == len(runes) || unicode.IsSpace(runes[i+1])
		}
		if !end {
			continue
		}
		// Keep the spaces after the sentence with it.
		for i+1 < len(runes) && unicode.IsSpace(runes[i+1]) {
			i++
		}
		add(start, i+1)
		start = i + 1
	}
	add(start, len(runes))
	return segs
}

// DetectLanguage guesses the language of text between Korean and English,
// the two languages weft's knowledge bases are written in: "ko" when at
// least a fifth of its letters are Hangul (Korean prose keeps English
// product names), "en" when it has Latin letters and less Hangul, "" when it
// has no letters. It tells no other language apart.
func DetectLanguage(text string) string {
	var hangul, latin, other int
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Hangul, r):
			hangul++
		case unicode.Is(unicode.Latin, r):
			latin++
		case unicode.IsLetter(r):
			other++
		}
	}
	letters := hangul + latin + other
	switch {
	case letters == 0:
		return ""
	case hangul*5 >= letters:
		return "ko"
	case latin > 0:
		return "en"
	}
	return ""
}
