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
	f.Add([]byte(`{"config":{"configurable":{"user_id":"mallory","langgraph_auth_user_id":"mallory","x-a":"b"}}}`))
	f.Add([]byte(`{"config":{"configurable":"not an object"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		kw, err := decodeKwargs(raw)
		if err != nil {
			if !errors.Is(err, records.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		_ = headerConfig(kw)
		// Whatever the stored config says, the run's user is the
		// server's to set.
		c := runConfigurable(kw, RunInfo{RunID: "r", ThreadID: "t", User: "u"})
		if c["langgraph_auth_user_id"] != "u" || c["user_id"] != "u" || c["run_id"] != "r" {
			t.Fatalf("configurable %v does not name the run's user and id", c)
		}
		if c := runConfigurable(kw, RunInfo{}); c["langgraph_auth_user_id"] != nil {
			t.Fatalf("without a user, configurable %v names one", c)
		}
	})
}
