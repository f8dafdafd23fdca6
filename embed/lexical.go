package embed

import (
	"context"
	"math"
	"strings"
	"unicode"
)

// Lexical is an offline embedder: it hashes word unigrams, word bigrams and
// character n-grams of each text into a fixed number of dimensions ("feature
// hashing") and L2-normalises the result, so the cosine of two vectors
// measures how much wording two texts share. It needs no model and no
// network, is deterministic (the same text gives the same vector in every
// process and release), and is safe for concurrent use.
//
// It is lexical, not semantic: "car" and "automobile" share nothing. Use it
// for tests, demos and small memories, and a model (embed/openai) where
// meaning matters.
//
// Features and weights:
//   - words are maximal runs of letters, digits and marks, lower-cased, over
//     Unicode (Hangul, Han, Cyrillic... all work);
//   - word unigrams weigh 1, word bigrams 0.8;
//   - character 3-, 4- and 5-grams over the runes of each word padded with
//     boundary markers weigh 0.3, 0.4 and 0.5, so inflected and compound
//     forms ("서울에서" and "서울", "planning" and "plan") still meet;
//   - words in scripts written without spaces between morphemes (Hangul,
//     Han, Hiragana, Katakana) also give their rune bigrams (weight 1, the
//     usual unit of CJK retrieval);
//   - a few very common English function words weigh 0.1 and give no
//     character n-grams, a fixed stand-in for inverse document frequency;
//   - every feature's term frequency is dampened to 1 + ln(tf).
//
// Each feature is hashed (FNV-1a, 64 bits) to a dimension and a sign; the
// sign keeps collisions from adding up in one direction.
type Lexical struct {
	dims int
}

// DefaultLexicalDims is the dimension count [NewLexical] uses for dims <= 0.
// More dimensions mean fewer hash collisions and a larger index.
const DefaultLexicalDims = 1024

// NewLexical returns a lexical embedder producing dims-dimensional vectors
// (DefaultLexicalDims when dims <= 0).
func NewLexical(dims int) *Lexical {
	if dims <= 0 {
		dims = DefaultLexicalDims
	}
	return &Lexical{dims: dims}
}

// Dims returns the vector length.
func (l *Lexical) Dims() int { return l.dims }

// EmbedDocuments embeds each text; it fails only when ctx is done.
func (l *Lexical) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = l.Embed(t)
	}
	return out, nil
}

// EmbedQuery embeds one query exactly as a document.
func (l *Lexical) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.Embed(text), nil
}

// Embed returns the vector of text. An empty text (or one without letters
// or digits) gives the zero vector.
func (l *Lexical) Embed(text string) []float32 {
	f := features{tf: map[uint64]feature{}}
	words := Words(text)
	for i, w := range words {
		stop := isStopword(w)
		wt := float32(1)
		if stop {
			wt = 0.1
		}
		f.add('w', wt, w)
		if i > 0 {
			f.add2('b', 0.8, words[i-1], w)
		}
		if stop {
			continue
		}
		f.charGrams(w)
	}
	v := make([]float32, l.dims)
	for h, ft := range f.tf {
		x := ft.w * float32(1+math.Log(float64(ft.n)))
		d := h % uint64(l.dims)
		if h>>63 == 1 {
			x = -x
		}
		v[d] += x
	}
	Normalize(v)
	return v
}

// Words splits text into lower-cased words: maximal runs of letters, digits
// and combining marks. It is the tokenizer of [Lexical], exported so keyword
// retrievers can share it.
func Words(text string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.IsNumber(r) {
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		flush()
	}
	flush()
	return words
}

type feature struct {
	w float32
	n int32
}

type features struct {
	tf map[uint64]feature
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func (f *features) put(h uint64, w float32) {
	ft := f.tf[h]
	ft.w = w
	ft.n++
	f.tf[h] = ft
}

func (f *features) add(class byte, w float32, s string) {
	h := hashString(hashString(fnvOffset, string(class)), s)
	f.put(h, w)
}

func (f *features) add2(class byte, w float32, a, b string) {
	h := hashString(fnvOffset, string(class))
	h = hashString(h, a)
	h = hashString(h, " ")
	h = hashString(h, b)
	f.put(h, w)
}

// charGrams adds the 3-5 rune n-grams of "<w>" and, for scripts written
// without spaces between morphemes, the rune bigrams of w.
func (f *features) charGrams(w string) {
	rs := make([]rune, 0, len(w)+2)
	rs = append(rs, '<')
	cjk := false
	for _, r := range w {
		rs = append(rs, r)
		if unicode.In(r, unicode.Hangul, unicode.Han, unicode.Hiragana, unicode.Katakana) {
			cjk = true
		}
	}
	rs = append(rs, '>')
	for n := 3; n <= 5; n++ {
		if len(rs) < n {
			break
		}
		w := 0.1 * float32(n)
		for i := 0; i+n <= len(rs); i++ {
			f.add(byte('0'+n), w, string(rs[i:i+n]))
		}
	}
	if cjk {
		inner := rs[1 : len(rs)-1]
		for i := 0; i+2 <= len(inner); i++ {
			f.add('2', 1, string(inner[i:i+2]))
		}
	}
}

func isStopword(w string) bool {
	switch w {
	case "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "for",
		"from", "has", "have", "i", "in", "is", "it", "its", "me", "my", "of",
		"on", "or", "our", "so", "that", "the", "this", "to", "was", "we",
		"were", "what", "with", "you", "your":
		return true
	}
	return false
}
