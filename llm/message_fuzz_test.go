package llm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weftlabs/weft/llm"
)

// FuzzMessageJSON decodes any bytes as a message, as a thread's stored
// messages are read back: it never panics, a failure matches
// ErrInvalidMessage, and what decodes encodes, and round-trips unchanged
// from then on: decoding the encoding gives the same message, which
// encodes to the same bytes.
func FuzzMessageJSON(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/messages/*.json")
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		var msgs []json.RawMessage
		if err := json.Unmarshal(data, &msgs); err != nil {
			f.Fatal(err)
		}
		for _, m := range msgs {
			f.Add([]byte(m))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m llm.Message
		if err := json.Unmarshal(data, &m); err != nil {
			var syntax *json.SyntaxError
			if !errors.Is(err, llm.ErrInvalidMessage) && !errors.As(err, &syntax) {
				t.Fatalf("decode error %v matches neither ErrInvalidMessage nor a JSON syntax error", err)
			}
			return
		}
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("a decoded message does not encode: %v (%+v)", err, m)
		}
		var back llm.Message
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("the encoding of a decoded message does not decode: %v\n%s", err, enc)
		}
		again, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, again) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, again)
		}
		if diff := cmp.Diff(m, back, cmpopts.EquateEmpty(), sameJSON); diff != "" {
			t.Fatalf("round trip changed the message (-decoded +again):\n%s\n%s", diff, enc)
		}
	})
}

// sameJSON compares JSON kept verbatim by value: escaping may differ ("&"
// is written "\u0026", as json.Marshal writes it).
var sameJSON = cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 && len(b) > 0 }, cmp.Transformer("json", func(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	return v
}))
