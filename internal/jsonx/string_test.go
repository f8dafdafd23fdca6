package jsonx

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		"", "a", "hello world", `quote " back \ slash`, "<b>&amp;</b>",
		"tab\tnew\nline\rret\bf\f\x00\x01\x1f\x7f", "한국어 텍스트", "\u2028\u2029x",
		"bad \xff utf8 \xc3", strings.Repeat("result for query: 0123-abcd ", 100) + "<",
		strings.Repeat("é", 9) + strings.Repeat("x", 17) + `"` + strings.Repeat("y", 9),
	}
	for i := range 64 {
		cases = append(cases, strings.Repeat("a", i)+"\"\n<"+strings.Repeat("b", 64-i))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s, true); string(got) != string(want) {
			t.Errorf("html %q:\n got %s\nwant %s", s, got, want)
		}
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := AppendString(nil, s, false); string(got) != strings.TrimSuffix(sb.String(), "\n") {
			t.Errorf("no html %q:\n got %s\nwant %s", s, got, sb.String())
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("result for query: 5f0c9a7e-1b2c-4d3e-8f90-a1b2c3d4e5f6", 10*100)
	buf := make([]byte, 0, len(s)+2)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s, true)
	}
}

func BenchmarkEncodingJSONString(b *testing.B) {
	s := strings.Repeat("result for query: 5f0c9a7e-1b2c-4d3e-8f90-a1b2c3d4e5f6", 10*100)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_, _ = json.Marshal(s)
	}
}

func BenchmarkAppendStringNoHTML(b *testing.B) {
	s := strings.Repeat("result for query: 5f0c9a7e-1b2c-4d3e-8f90-a1b2c3d4e5f6", 10*100)
	buf := make([]byte, 0, len(s)+2)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s, false)
	}
}

// needsEscape is safeWords' rule, byte by byte.
func needsEscape(b byte, html bool) bool {
	return b < 0x20 || b >= 0x80 || b == '"' || b == '\\' || (html && (b == '<' || b == '>' || b == '&'))
}

// TestSafeWordsEveryByteEveryPlace puts each byte value at each position
// of safe text of several lengths (around the 16- and 32-byte blocks of
// the assembly scan and its word-by-word tail) and checks that safeWords
// never passes it, and passes all of the whole words before it.
func TestSafeWordsEveryByteEveryPlace(t *testing.T) {
	for _, html := range []bool{false, true} {
		for n := 0; n <= 80; n++ {
			base := []byte(strings.Repeat("abcdefgh ~!#$%'()*+,-./09:;=?@AZ[]^_`z{|}", 2)[:n])
			if got := safeWords(string(base), html); got != n/8*8 {
				t.Fatalf("html %v: safe text of %d bytes: safeWords = %d, want %d", html, n, got, n/8*8)
			}
			for pos := range n {
				for c := range 256 {
					s := bytes.Clone(base)
					s[pos] = byte(c)
					got := safeWords(string(s), html)
					if needsEscape(byte(c), html) {
						if got > pos {
							t.Fatalf("html %v: byte %#x at %d of %d: safeWords = %d passes it", html, c, pos, n, got)
						}
						if got < pos/8*8 {
							t.Fatalf("html %v: byte %#x at %d of %d: safeWords = %d stops short of %d", html, c, pos, n, got, pos/8*8)
						}
					} else if got != n/8*8 {
						t.Fatalf("html %v: safe byte %#x at %d of %d: safeWords = %d, want %d", html, c, pos, n, got, n/8*8)
					}
				}
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("plain text that is long enough for the block scan <&>", true)
	f.Add(strings.Repeat("x", 33)+"\"\\\x00\u2028é\xff", false)
	f.Fuzz(func(t *testing.T, s string, html bool) {
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(sb.String(), "\n")
		if got := AppendString(nil, s, html); string(got) != want {
			t.Fatalf("html %v, %q:\n got %s\nwant %s", html, s, got, want)
		}
	})
}
