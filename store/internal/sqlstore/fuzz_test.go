package sqlstore

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/weftlabs/weft/store"
)

// FuzzDecodeRecord decodes arbitrary stored item rows, with times as
// either backend scans them: it never panics, fails only with ErrCorrupt,
// and what it accepts is a JSON object with a positive TTL if any.
func FuzzDecodeRecord(f *testing.F) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	f.Add("a.b", "k", []byte(`{"text":"hello"}`), now, now, int64(0), false, int64(0), false, false)
	f.Add("a", "k", []byte(`{"n":1}`), now, now, now+60e6, true, int64(60e6), true, true)
	f.Add("", "", []byte(`[1]`), int64(math.MinInt64), int64(math.MaxInt64), int64(-1), true, int64(math.MaxInt64), true, false)
	f.Add("x", "y", []byte(`{"a":`), int64(0), int64(0), int64(0), false, int64(-5), true, true)
	f.Fuzz(func(t *testing.T, ns, key string, value []byte, created, updated, expires int64, hasExpires bool, ttl int64, hasTTL, asTimes bool) {
		tm := func(us int64) any {
			if asTimes {
				return time.UnixMicro(us)
			}
			return us
		}
		raw := RawRecord{ID: 1, Namespace: ns, Key: key, Value: value, Created: tm(created), Updated: tm(updated)}
		if hasExpires {
			raw.Expires = tm(expires)
		}
		if hasTTL {
			raw.TTL = &ttl
		}
		r, err := raw.Decode()
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Decode = %v, want ErrCorrupt", err)
			}
			return
		}
		if !isObject(r.Value) || (hasTTL && r.TTL <= 0) {
			t.Fatalf("Decode accepted value %q, ttl %v", r.Value, r.TTL)
		}
	})
}

// FuzzDecodeVector decodes arbitrary embedding bytes: it never panics,
// fails only with ErrCorrupt, and round-trips what it accepts.
func FuzzDecodeVector(f *testing.F) {
	f.Add(EncodeVector([]float32{0, -1.5, 3.25}))
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeVector(nil, b)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("DecodeVector = %v, want ErrCorrupt", err)
			}
			return
		}
		if got := EncodeVector(v); string(got) != string(b) {
			t.Fatalf("EncodeVector(DecodeVector(%x)) = %x", b, got)
		}
	})
}
