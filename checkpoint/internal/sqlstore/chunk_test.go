package sqlstore

import (
	"github.com/weftlabs/weft/checkpoint"

	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

func TestChunkPrefix(t *testing.T) {
	items := []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`{"b":[1,2]}`), json.RawMessage(`3`)}
	data, sizes := encodeChunk(items)
	c := chunk{count: 3, items: data, sizes: sizes}
	for k, want := range []string{``, `"a"`, `"a",{"b":[1,2]}`, `"a",{"b":[1,2]},3`} {
		got, err := c.prefix(int64(k))
		if err != nil || string(got) != want {
			t.Errorf("prefix(%d) = %q, %v; want %q", k, got, err, want)
		}
	}
	bad := chunk{count: 3, items: data, sizes: sizes[:2]}
	if _, err := bad.prefix(3); err == nil {
		t.Error("prefix with missing sizes succeeded")
	}
	short := chunk{count: 3, items: data[:5], sizes: sizes}
	if _, err := short.prefix(3); err == nil {
		t.Error("prefix of truncated data succeeded")
	}
}

func TestCodec(t *testing.T) {
	for _, v := range [][]byte{[]byte(`{"small":1}`), []byte(`"` + strings.Repeat("compressible text ", 100) + `"`)} {
		stored, f := encode(v)
		if len(v) >= compressLimit && (f != formatFlate || len(stored) >= len(v)) {
			t.Errorf("a %d-byte repetitive value was stored with format %d in %d bytes", len(v), f, len(stored))
		}
		got, err := decode(stored, int64(f))
		if err != nil || !bytes.Equal(got, v) {
			t.Errorf("decode(encode(%.20q)) = %.20q, %v", v, got, err)
		}
	}
	if _, err := decode([]byte("x"), 7); err == nil {
		t.Error("decode of an unknown format succeeded")
	}
	if _, err := decode([]byte("not deflate"), formatFlate); err == nil {
		t.Error("decode of damaged compressed data succeeded")
	}
}

// Every channel checkpoint treats as special has a fixed index here, or
// its writes would be appended instead of replaced.
func TestSpecialIdxCoversSpecialChannels(t *testing.T) {
	for _, ch := range []string{checkpoint.ErrorChannel, checkpoint.ScheduledChannel, checkpoint.InterruptChannel, checkpoint.ResumeChannel, checkpoint.TasksChannel, "messages"} {
		_, has := specialIdx[ch]
		if has != checkpoint.IsSpecialChannel(ch) {
			t.Errorf("channel %q: fixed index %v, but checkpoint.IsSpecialChannel says %v", ch, has, checkpoint.IsSpecialChannel(ch))
		}
	}
}

// A stored item size of 2^63 or more is negative as an int: it must be
// reported as damage, not used to slice.
func TestChunkHugeSize(t *testing.T) {
	items := []byte(`"a","b"`)
	for _, sizes := range [][]byte{
		binary.AppendUvarint(nil, 1<<63),
		binary.AppendUvarint(binary.AppendUvarint(nil, 3), 1<<63),
		binary.AppendUvarint(binary.AppendUvarint(nil, 1<<64-5), 10),
	} {
		c := chunk{count: 2, items: items, sizes: sizes}
		c.prefix(1) // must not panic
		if got, err := c.prefix(2); err == nil {
			t.Errorf("sizes %x: prefix(2) = %q, want an error", sizes, got)
		}
	}
}
