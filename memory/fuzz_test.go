package memory

import (
	"encoding/json"
	"testing"

	"github.com/weftlabs/weft/store"
)

// FuzzDecodeStored feeds stored bytes to the decoders of memories and
// records: they must fail cleanly, never panic.
func FuzzDecodeStored(f *testing.F) {
	f.Add([]byte(`{"kind":"semantic","content":{"category":"fact","content":"x"},"text":"x","hash":"h"}`))
	f.Add([]byte(`{"kind":"tool","text":"s","data":{"step":"s","tool":"t","successes":2}}`))
	f.Add([]byte(`{"kind":"behaviour","data":{"actions":{"accept":-1},"total":"x"}}`))
	f.Add([]byte(`{"user":"u","messages":[{"type":"human","content":"hi"}],"error":"e"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		it := &store.Item{Namespace: []string{Root, "u", "semantic"}, Key: "k", Value: json.RawMessage(data)}
		decodeMemory[Fact](it)
		decodeMemory[Episode](it)
		var env envelope[behaviourRecord]
		it.Decode(&env)
		var rec failedRecord
		it.Decode(&rec)
	})
}
