package rag

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func chunkTexts(cs []Chunk) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Text)
	}
	return out
}

func TestSplitPrefersSentences(t *testing.T) {
	tests := []struct {
		name string
		sp   Splitter
		text string
		want []string
	}{
		{
			name: "fits in one chunk",
			sp:   Splitter{Size: 100, Overlap: 10},
			text: "첫 문장입니다. 둘째 문장입니다.",
			want: []string{"첫 문장입니다. 둘째 문장입니다."},
		},
		{
			name: "whole sentences, last one repeated as overlap",
			sp:   Splitter{Size: 32, Overlap: 15},
			text: "데이터를 먼저 모읍니다. 그다음 정제합니다. 마지막으로 적재합니다. 검증도 잊지 마세요.",
			want: []string{
				"데이터를 먼저 모읍니다. 그다음 정제합니다.",
				"그다음 정제합니다. 마지막으로 적재합니다.",
				"마지막으로 적재합니다. 검증도 잊지 마세요.",
			},
		},
		{
			name: "no overlap",
			sp:   Splitter{Size: 40, Overlap: -1},
			text: "One sentence here. Another one there! A third? Yes.",
			want: []string{"One sentence here. Another one there!", "A third? Yes."},
		},
		{
			name: "a decimal point is not a sentence end",
			sp:   Splitter{Size: 32, Overlap: -1},
			text: "Version 2.5 ships today. Upgrade soon.",
			want: []string{"Version 2.5 ships today.", "Upgrade soon."},
		},
		{
			name: "line breaks end sentences",
			sp:   Splitter{Size: 32, Overlap: -1},
			text: "- 첫째 항목\n- 둘째 항목\n- 셋째 항목 조금 더 길게 씁니다\n- 넷째",
			want: []string{"- 첫째 항목\n- 둘째 항목", "- 셋째 항목 조금 더 길게 씁니다\n- 넷째"},
		},
		{
			name: "a long sentence is cut at a space",
			sp:   Splitter{Size: 32, Overlap: -1},
			text: "alpha beta gamma delta epsilon zeta eta theta iota kappa",
			want: []string{"alpha beta gamma delta epsilon", "zeta eta theta iota kappa"},
		},
		{
			name: "a run without spaces is cut between runes",
			sp:   Splitter{Size: 32, Overlap: -1},
			text: strings.Repeat("가", 70),
			want: []string{strings.Repeat("가", 32), strings.Repeat("가", 32), strings.Repeat("가", 6)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := tt.sp.Split(Document{ID: "d", Text: tt.text})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, chunkTexts(cs)); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitCarriesMetadata(t *testing.T) {
	doc := Document{
		ID: "guide#setup", Source: "kb/guide.md", Title: "Guide", Text: "Install it. Then run it. Then stop it.",
		Tags: []string{"x"}, URL: "https://example.com", Page: 3, Headings: []string{"Guide", "Setup"},
	}
	cs, err := Splitter{Size: 40, Overlap: -1}.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{ID: "guide#setup#0", DocID: "guide#setup", Index: 0, Source: "kb/guide.md", Title: "Guide", Language: "en", Tags: []string{"x"}, URL: "https://example.com", Page: 3, Headings: []string{"Guide", "Setup"}, Text: "Install it. Then run it. Then stop it.", Start: 0, End: 38},
	}
	if diff := cmp.Diff(want, cs); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	if got := cs[0].Citation(); got != "kb/guide.md p.3" {
		t.Errorf("Citation = %q", got)
	}
}

// TestSplitInvariants checks on random Korean and English text what every
// caller relies on: chunks are valid UTF-8 and at most Size runes, their
// offsets point at their text, every non-space rune is in some chunk, and
// neighbours share at most Overlap runes.
func TestSplitInvariants(t *testing.T) {
	words := []string{"데이터를", "파이프라인", "설정합니다.", "pipeline", "approve", "plan.", "계획을", "승인합니다!", "a", "verylongwordwithoutanyspaces", "가나다라마바사아자차카타파하가나다라마바사아자차카타파하", "\n", "\n\n", "3.5", "。"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		var b strings.Builder
		for range r.IntN(120) {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(4) > 0 {
				b.WriteByte(' ')
			}
		}
		text := b.String()
		sp := Splitter{Size: MinChunkSize + r.IntN(200)}
		sp.Overlap = r.IntN(sp.Size / 2)
		if sp.Overlap == 0 {
			sp.Overlap = -1 // zero means the default
		}
		cs, err := sp.Split(Document{ID: "d", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		runes := []rune(text)
		covered := make([]bool, len(runes))
		for j, c := range cs {
			if !utf8.ValidString(c.Text) {
				t.Fatalf("case %d chunk %d: invalid UTF-8", i, j)
			}
			if n := utf8.RuneCountInString(c.Text); n > sp.Size || c.End-c.Start > sp.Size {
				t.Fatalf("case %d chunk %d: %d runes (span %d), size %d", i, j, n, c.End-c.Start, sp.Size)
			}
			if got := strings.TrimSpace(string(runes[c.Start:c.End])); got != c.Text {
				t.Fatalf("case %d chunk %d: offsets give %q, text is %q", i, j, got, c.Text)
			}
			for k := c.Start; k < c.End; k++ {
				covered[k] = true
			}
			if j > 0 && cs[j-1].End-c.Start > max(sp.Overlap, 0) {
				t.Fatalf("case %d chunk %d: overlaps the previous by %d runes, overlap %d", i, j, cs[j-1].End-c.Start, sp.Overlap)
			}
			if j > 0 && c.Start <= cs[j-1].Start {
				t.Fatalf("case %d chunk %d: does not advance", i, j)
			}
		}
		for k, ok := range covered {
			if !ok && !unicode.IsSpace(runes[k]) {
				t.Fatalf("case %d: rune %d %q is in no chunk", i, k, runes[k])
			}
		}
	}
}

func TestSplitterRejectsBadSizes(t *testing.T) {
	for _, sp := range []Splitter{{Size: 10}, {Size: 100, Overlap: 50}, {Size: 100, Overlap: 70}} {
		if _, err := sp.Split(Document{ID: "d", Text: "x"}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", sp, err)
		}
	}
	cs, err := Splitter{}.Split(Document{ID: "d", Text: " \n\t "})
	if err != nil || len(cs) != 0 {
		t.Errorf("blank text: %v, %v; want no chunks", cs, err)
	}
}

func TestDetectLanguage(t *testing.T) {
	tests := map[string]string{
		"데이터 파이프라인을 설정합니다":                 "ko",
		"Slack 알림과 API 키를 설정하세요":           "ko",
		"Set up the pipeline":              "en",
		"AI 도구 trends for 2026 in English": "en",
		"12345 !!!":                        "",
		"東京都":                              "",
	}
	for text, want := range tests {
		if got := DetectLanguage(text); got != want {
			t.Errorf("DetectLanguage(%q) = %q, want %q", text, got, want)
		}
	}
}
