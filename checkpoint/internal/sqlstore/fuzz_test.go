package sqlstore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzChunkPrefix cuts prefixes of stored chunks with arbitrary item
// counts, sizes and bytes: a cut never panics, and what it returns is a
// prefix of the chunk's bytes.
func FuzzChunkPrefix(f *testing.F) {
	data, sizes := encodeChunk([]json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`{"b":[1,2]}`), json.RawMessage(`3`)})
	f.Add(int64(3), int64(2), data, sizes)
	f.Add(int64(3), int64(3), data, sizes)
	f.Add(int64(2), int64(2), []byte(`"a","b"`), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add(int64(-1), int64(-1), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, count, k int64, items, sizes []byte) {
		c := chunk{count: count, items: items, sizes: sizes}
		got, err := c.prefix(k)
		if err == nil && !bytes.HasPrefix(items, got) {
			t.Fatalf("prefix(%d) = %q, not a prefix of %q", k, got, items)
		}
	})
}

// FuzzDecode decodes arbitrary stored values in every format: it never
// panics, and a value encode made decodes to itself.
func FuzzDecode(f *testing.F) {
	for _, v := range []string{`{"small":1}`, `"` + strings.Repeat("compressible text ", 100) + `"`} {
		stored, fm := encode([]byte(v))
		f.Add(stored, int64(fm))
	}
	f.Add([]byte("not deflate"), int64(formatFlate))
	f.Add([]byte{}, int64(7))
	f.Fuzz(func(t *testing.T, data []byte, format int64) {
		decode(data, format)
		stored, fm := encode(data)
		got, err := decode(stored, int64(fm))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("decode(encode(%q)) = %q, %v", data, got, err)
		}
	})
}
