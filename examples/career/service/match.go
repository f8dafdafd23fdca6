package service

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Keyword matching for Korean and English queries. Korean attaches particles
// to nouns ("디자이너가", "마케터를") and writes compounds with or without
// spaces ("데이터분석가", "데이터 분석가"), so matching is done on lower-case
// text with spaces removed, on tokens with and without a trailing particle,
// and, for near misses ("데이타", "마케팅"), on character bigrams.

// particles are trailing Korean particles and endings tried off a token,
// longest first.
var particles = []string{
	"으로", "에서", "에게", "까지", "부터", "처럼", "이랑", "이나", "한테",
	"가", "이", "은", "는", "을", "를", "에", "의", "로", "와", "과", "도", "랑", "요",
}

// stopwords carry no career or skill meaning: request phrasing, the names of
// the things searched for, and English function words.
var stopwords = map[string]bool{
	"되고": true, "되고싶어": true, "되고싶어요": true, "되려면": true, "싶어": true, "싶어요": true,
	"싶은데": true, "싶습니다": true, "관련": true, "관련된": true, "멘토": true, "멘토링": true,
	"상담": true, "세션": true, "찾아줘": true, "찾아": true, "알려줘": true, "어떻게": true,
	"시작": true, "추천": true, "추천해줘": true, "분야": true, "직무": true, "채용": true,
	"공고": true, "채용공고": true, "구인": true, "취업": true, "일자리": true, "하고": true,
	"있는": true, "좀": true, "주세요": true, "해주세요": true, "경로": true, "학습": true,
	"a": true, "an": true, "the": true, "i": true, "to": true, "be": true, "become": true,
	"want": true, "for": true, "of": true, "in": true, "and": true, "job": true, "jobs": true,
	"mentor": true, "mentors": true, "mentoring": true, "session": true, "sessions": true,
	"career": true, "path": true, "learning": true, "hiring": true, "position": true,
}

// compact lower-cases s and drops everything but letters and digits.
func compact(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// tokens splits a query into meaningful lower-case words: punctuation and
// spaces separate words, stopwords and one-letter words are dropped.
func tokens(query string) []string {
	fields := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var out []string
	seen := map[string]bool{}
	for _, f := range fields {
		if stopwords[f] || stopwords[stripParticle(f)] || utf8.RuneCountInString(f) < 2 || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// stripParticle removes one trailing particle from a token of at least two
// runes left over; it returns the token unchanged otherwise.
func stripParticle(tok string) string {
	for _, p := range particles {
		if strings.HasSuffix(tok, p) && utf8.RuneCountInString(tok)-utf8.RuneCountInString(p) >= 2 {
			return strings.TrimSuffix(tok, p)
		}
	}
	return tok
}

// document is the searchable text of one record.
type document struct {
	all   string   // every field, compacted and concatenated
	words []string // every word of every field, lower-case
}

func newDocument(fields ...string) document {
	var d document
	var all strings.Builder
	for _, f := range fields {
		all.WriteString(compact(f))
		all.WriteByte('|')
		d.words = append(d.words, strings.FieldsFunc(strings.ToLower(f), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		})...)
	}
	d.all = all.String()
	return d
}

// score rates how well the query tokens match the document, from 0 (no
// token matches) to 1 (every token occurs in it). A token counts fully when
// it or its particle-stripped form occurs in the document, and half when it
// is only close to one of the document's words by bigram similarity.
func (d document) score(toks []string) float64 {
	if len(toks) == 0 {
		return 0
	}
	var sum float64
	for _, t := range toks {
		stripped := stripParticle(t)
		switch {
		case strings.Contains(d.all, t) || strings.Contains(d.all, stripped):
			sum++
		case d.near(stripped):
			sum += 0.5
		}
	}
	return sum / float64(len(toks))
}

// near reports whether tok is similar to one of the document's words: a
// Dice coefficient of at least 0.5 over character bigrams, for tokens of at
// least three runes (shorter ones share too many bigrams by chance).
func (d document) near(tok string) bool {
	if utf8.RuneCountInString(tok) < 3 {
		return false
	}
	tb := bigrams(tok)
	for _, w := range d.words {
		if utf8.RuneCountInString(w) < 3 {
			continue
		}
		if dice(tb, bigrams(w)) >= 0.5 {
			return true
		}
	}
	return false
}

func bigrams(s string) []string {
	r := []rune(s)
	out := make([]string, 0, len(r))
	for i := 0; i+1 < len(r); i++ {
		out = append(out, string(r[i:i+2]))
	}
	return out
}

func dice(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	counts := map[string]int{}
	for _, g := range a {
		counts[g]++
	}
	shared := 0
	for _, g := range b {
		if counts[g] > 0 {
			counts[g]--
			shared++
		}
	}
	return 2 * float64(shared) / float64(len(a)+len(b))
}
