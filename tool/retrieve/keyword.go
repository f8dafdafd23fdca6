package retrieve

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weftlabs/weft/embed"
)

// keywordIndex scores tools by BM25 over their name, description and
// parameter names, each field's terms weighted (fieldWeights). It is
// rebuilt from scratch whenever the tools change: a catalogue of a thousand
// tools takes about a millisecond, far less than embedding the changed ones.
type keywordIndex struct {
	docs     []keywordDoc
	postings map[string][]posting
	avgLen   float64
}

type keywordDoc struct {
	name string
	len  float64
}

type posting struct {
	doc int
	tf  float64
}

// BM25 parameters: the usual k1 and b.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// fieldWeights weigh a term by the field it occurs in. The name is short
// and says what the tool does ("jira_transition_issue"), so its terms
// count twice; parameter names mostly repeat generic words ("id", "query").
var fieldWeights = [...]float64{fieldName: 2, fieldDescription: 1, fieldParams: 0.5}

const (
	fieldName = iota
	fieldDescription
	fieldParams
)

func newKeywordIndex(entries []*entry) *keywordIndex {
	k := &keywordIndex{docs: make([]keywordDoc, len(entries)), postings: map[string][]posting{}}
	var total float64
	for i, e := range entries {
		tf := map[string]float64{}
		var n float64
		for f, text := range [...]string{fieldName: e.spec.Name, fieldDescription: e.spec.Description, fieldParams: strings.Join(e.params, " ")} {
			for _, t := range terms(text) {
				tf[t] += fieldWeights[f]
				n += fieldWeights[f]
			}
		}
		for t, w := range tf {
			k.postings[t] = append(k.postings[t], posting{doc: i, tf: w})
		}
		k.docs[i] = keywordDoc{name: e.spec.Name, len: n}
		total += n
	}
	if len(entries) > 0 {
		k.avgLen = total / float64(len(entries))
	}
	return k
}

// score returns the BM25 score of every tool that shares a term with
// query, by tool name.
func (k *keywordIndex) score(query string) map[string]float64 {
	out := map[string]float64{}
	if len(k.docs) == 0 {
		return out
	}
	n := float64(len(k.docs))
	seen := map[string]bool{}
	for _, t := range terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := k.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			d := k.docs[p.doc]
			out[d.name] += idf * p.tf * (bm25K1 + 1) / (p.tf + bm25K1*(1-bm25B+bm25B*d.len/k.avgLen))
		}
	}
	return out
}

// terms splits text into the keyword index's terms: words (embed.Words)
// without English function words, English words lightly stemmed
// ("crashes" and "crash" meet), and for words in Hangul, Han or kana their
// rune bigrams as well, because such words carry particles and endings
// ("회의실을", "회의실에") that only the bigrams see past.
func terms(text string) []string {
	var out []string
	for _, w := range embed.Words(text) {
		if stopwords[w] {
			continue
		}
		if !isCJK(w) {
			out = append(out, stem(w))
			continue
		}
		out = append(out, w)
		rs := []rune(w)
		for i := 0; i+1 < len(rs); i++ {
			out = append(out, string(rs[i:i+2]))
		}
	}
	return out
}

func isCJK(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.In(r, unicode.Hangul, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// stem strips the commonest English inflections, conservatively: enough
// for "files"/"file", "merged"/"merge", "running"/"run" to meet, never
// shortening a word below three letters.
func stem(w string) string {
	if len(w) <= 4 || w[0] >= utf8.RuneSelf {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 5:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ing") && len(w) > 6:
		w = w[:len(w)-3]
	case strings.HasSuffix(w, "ed") && len(w) > 5:
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "es") && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	default:
		return w
	}
	// "running" → "runn" → "run"; "stopped" → "stopp" → "stop".
	if n := len(w); n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		w = w[:n-1]
	}
	return w
}

// stopwords are English function words and the generic request words that
// say nothing about which tool is meant.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but of to in on at by for from with into onto about as is are was were be been being
		it its this that these those there here i me my mine we us our you your he she they them their his her
		do does did done can could would should will shall may might must have has had not no
		what which who whom whose when where why how all any some each every just also so than then too very
		please pls want need like get got let s t d ll re ve m`) {
		m[w] = true
	}
	return m
}()
