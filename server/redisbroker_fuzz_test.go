package server

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// decodeEntry reads what Redis holds, written by any process sharing the
// prefix: whatever it holds, an error or an event, never a panic; and
// what Publish writes reads back as it was.
func FuzzDecodeEntry(f *testing.F) {
	f.Add("0-1", "metadata", `{"run_id":"r"}`, false)
	f.Add("12-1", "values", `{}`, true)
	f.Add("12-0", "", "", false)
	f.Add("-1-1", "x", "y", false)
	f.Add("99999999999999999999-1", "x", "y", false)
	f.Fuzz(func(t *testing.T, id, name, data string, end bool) {
		vals := map[string]any{"n": name, "d": data}
		if end {
			vals = map[string]any{"end": "1"}
		}
		ev, isEnd, err := decodeEntry(redis.XMessage{ID: id, Values: vals})
		if err != nil {
			return
		}
		if entryID(ev.ID) != id {
			t.Errorf("id %q read as %d, written back as %q", id, ev.ID, entryID(ev.ID))
		}
		if isEnd != end {
			t.Errorf("end = %v, want %v", isEnd, end)
		}
		if !end && (ev.Name != name || string(ev.Data) != data) {
			t.Errorf("event %q %q read as %q %q", name, data, ev.Name, ev.Data)
		}
	})
}
