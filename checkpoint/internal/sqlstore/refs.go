package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/weftlabs/weft/internal/jsonx"
)

// A checkpoint row's refs column says, per channel, where the channel's
// value at the checkpoint's version is when it is not the blob row of
// that version with origin "" (the default, which needs no entry):
//
//   - in the blob row of another origin (a fork reused the version);
//   - or in the entry itself (schema version 3): the channel is empty, or
//     its value is a small JSON value, or it is the first n items of a
//     message log. These need no blob row, which costs far more than the
//     few bytes of the entry: most channel versions of a run are triggers
//     that are set and then emptied, and message lists.
//
// A child checkpoint inherits its parent's entries for the channels it
// does not change, so an entry is copied while its version lives; that is
// why only small values are kept inline.

// Entry kinds.
const (
	refBlob   = 0 // the blob row of origin O
	refEmpty  = 1 // no value
	refValue  = 2 // the JSON value J
	refLog    = 3 // the first N items of log L
	refKinds  = 4
	inlineMax = 32 // the largest value, in bytes of JSON, kept inline
)

// ref is one channel's entry, at version V.
type ref struct {
	V    int64
	Kind int
	O    string
	J    json.RawMessage
	L, N int64
}

// appendJSON writes an entry as a short array: [V, 0, O], [V, 1],
// [V, 2, J] or [V, 3, L, N]. J goes in as it is, byte for byte, so the
// value reads back exactly as written.
func (r ref) appendJSON(b []byte) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, r.V, 10)
	switch r.Kind {
	case refBlob:
		b = append(b, ",0,"...)
		b = jsonx.AppendString(b, r.O, true)
	case refEmpty:
		b = append(b, ",1"...)
	case refValue:
		b = append(b, ",2,"...)
		b = append(b, r.J...)
	default:
		b = append(b, ",3,"...)
		b = strconv.AppendInt(b, r.L, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, r.N, 10)
	}
	return append(b, ']')
}

// encodeRefs writes a refs column: nil for no entries.
func encodeRefs(refs map[string]ref) []byte {
	if len(refs) == 0 {
		return nil
	}
	n := 2
	for ch, r := range refs {
		n += len(ch) + len(r.O) + len(r.J) + 32
	}
	b := make([]byte, 0, n)
	b, _ = jsonx.AppendObject(b, refs, func(b []byte, _ string, r ref) ([]byte, error) {
		return r.appendJSON(b), nil
	})
	return b
}

// UnmarshalJSON reads an entry in either form: the array above, or the
// object {"v":V,"o":O} that schema versions 1 and 2 wrote.
func (r *ref) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var old struct {
			V *int64 `json:"v"`
			O string `json:"o"`
		}
		if err := json.Unmarshal(b, &old); err != nil {
			return err
		}
		if old.V == nil {
			return fmt.Errorf("blob reference without a version")
		}
		*r = ref{V: *old.V, Kind: refBlob, O: old.O}
		return nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) < 2 {
		return fmt.Errorf("reference has %d parts, want at least 2", len(parts))
	}
	*r = ref{}
	if err := json.Unmarshal(parts[0], &r.V); err != nil {
		return fmt.Errorf("reference version: %w", err)
	}
	if err := json.Unmarshal(parts[1], &r.Kind); err != nil {
		return fmt.Errorf("reference kind: %w", err)
	}
	want := map[int]int{refBlob: 3, refEmpty: 2, refValue: 3, refLog: 4}[r.Kind]
	if r.Kind < 0 || r.Kind >= refKinds || len(parts) != want {
		return fmt.Errorf("reference of kind %d has %d parts", r.Kind, len(parts))
	}
	switch r.Kind {
	case refBlob:
		return json.Unmarshal(parts[2], &r.O)
	case refValue:
		if !json.Valid(parts[2]) {
			return fmt.Errorf("inline value is not valid JSON")
		}
		r.J = parts[2]
	case refLog:
		if err := json.Unmarshal(parts[2], &r.L); err != nil {
			return err
		}
		if err := json.Unmarshal(parts[3], &r.N); err != nil {
			return err
		}
		if r.N < 0 {
			return fmt.Errorf("inline log length %d is negative", r.N)
		}
	}
	return nil
}

// decodeRefs reads a refs column; an empty one has no entries.
func decodeRefs(thread, ns, cpID string, raw []byte) (map[string]ref, error) {
	if len(raw) == 0 {
		return map[string]ref{}, nil
	}
	if refs, ok := decodePlainRefs(raw); ok {
		return refs, nil
	}
	refs := map[string]ref{}
	if err := json.Unmarshal(raw, &refs); err != nil {
		return nil, corrupt(thread, ns, cpID, "blob references", err)
	}
	return refs, nil
}

// decodePlainRefs reads a refs column as encodeRefs writes it, without
// encoding/json: a checkpoint write reads its parent's entries, and
// decoding them through json.Unmarshal, an entry's parts and each part
// again made tens of allocations a write. ok is false for anything else
// (an escape in a name, the object form of old schema versions, a number
// that is not a plain integer, an entry UnmarshalJSON would refuse):
// decodeRefs reads that with encoding/json, and gives its errors.
func decodePlainRefs(raw []byte) (refs map[string]ref, ok bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	i := jsonx.SkipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, false
	}
	refs = make(map[string]ref, bytes.Count(raw, []byte{'['}))
	i = jsonx.SkipSpace(raw, i+1)
	for raw[i] != '}' {
		name, end, ok := plainString(raw, i)
		if !ok {
			return nil, false
		}
		i = jsonx.SkipSpace(raw, jsonx.SkipSpace(raw, end)+1) // past the colon
		end = jsonx.ValueEnd(raw, i)
		r, ok := plainRef(raw[i:end])
		if !ok {
			return nil, false
		}
		refs[name] = r
		i = jsonx.SkipSpace(raw, end)
		if raw[i] == ',' {
			i = jsonx.SkipSpace(raw, i+1)
		}
	}
	return refs, true
}

// plainRef reads an entry in its array form, in valid JSON, as
// UnmarshalJSON does; ok is false when it is not plain (see
// decodePlainRefs) or UnmarshalJSON would refuse it.
func plainRef(b []byte) (r ref, ok bool) {
	if b[0] != '[' {
		return ref{}, false
	}
	i := jsonx.SkipSpace(b, 1)
	if r.V, i, ok = plainInt(b, i); !ok {
		return ref{}, false
	}
	var kind int64
	if kind, i, ok = plainInt(b, i); !ok || kind < 0 || kind >= refKinds {
		return ref{}, false
	}
	r.Kind = int(kind)
	switch r.Kind {
	case refBlob:
		var end int
		if r.O, end, ok = plainString(b, i); !ok {
			return ref{}, false
		}
		i = jsonx.SkipSpace(b, end)
	case refValue:
		if b[i] == ']' {
			return ref{}, false // no value: too few parts
		}
		end := jsonx.ValueEnd(b, i)
		r.J = bytes.Clone(b[i:end])
		i = jsonx.SkipSpace(b, end)
	case refLog:
		if r.L, i, ok = plainInt(b, i); !ok {
			return ref{}, false
		}
		if r.N, i, ok = plainInt(b, i); !ok || r.N < 0 {
			return ref{}, false
		}
	}
	// After the last part: the closing bracket, and nothing but it.
	return r, b[i] == ']' && i == len(b)-1
}

// plainInt reads the integer at b[i] (digits with an optional minus, as
// json.Unmarshal takes into an int64) and the comma after it, if any.
// It returns where the next part starts, or the closing bracket is.
func plainInt(b []byte, i int) (n int64, next int, ok bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(string(b[start:i]), 10, 64)
	if err != nil || i == start {
		return 0, 0, false
	}
	i = jsonx.SkipSpace(b, i)
	if b[i] == ',' {
		i = jsonx.SkipSpace(b, i+1)
	}
	return n, i, true
}

// plainString reads the string at b[i], which has no escapes and is
// UTF-8 (as json.Unmarshal would give it), and returns where it ends.
func plainString(b []byte, i int) (s string, end int, ok bool) {
	if b[i] != '"' {
		return "", 0, false
	}
	end = jsonx.ValueEnd(b, i)
	body := b[i+1 : end-1]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return "", 0, false
	}
	return string(body), end, true
}
