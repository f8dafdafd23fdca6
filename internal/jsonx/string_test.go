package jsonx

import (
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
