package server

import (
	"errors"
	"testing"

	"github.com/weftlabs/weft/server/internal/records"
)

// A run taken over reads its kwargs back from the database: whatever is
// stored decodes without a panic, or is ErrCorrupt.
func FuzzDecodeKwargs(f *testing.F) {
	f.Add([]byte(`{"input":{"messages":[]},"config":{},"context":{},"stream_mode":["values"],"temporary":false,"subgraphs":false,"resumable":true}`))
	f.Add([]byte(`{"command":{"resume":{"a":1},"goto":["x"]},"interrupt_before":["*"],"after_seconds":1.5}`))
	f.Add([]byte(`{"stream_mode":"values"}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		kw, err := decodeKwargs(raw)
		if err != nil {
			if !errors.Is(err, records.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		_ = headerConfig(kw)
	})
}
