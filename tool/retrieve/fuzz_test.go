package retrieve

import (
	"encoding/json"
	"testing"

	"github.com/weftlabs/weft/store"
)

// FuzzDecodeEntry feeds stored bytes to the decoder of index entries: it
// must fail cleanly, never panic.
func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte(`{"name":"t","description":"d","parameters":{"type":"object","properties":{"a_b":{"type":"string"}}},"hash":"h","text":"t"}`))
	f.Add([]byte(`{"name":"t","parameters":[1,2]}`))
	f.Add([]byte(`{"name":"","hash":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		it := &store.Item{Namespace: []string{"tools"}, Key: "k", Value: json.RawMessage(data)}
		e, err := decodeEntry(it)
		if err == nil && e.spec.Name == "" {
			t.Errorf("decoded an entry without a name from %q", data)
		}
		paramNames(data)
		terms(string(data))
	})
}
