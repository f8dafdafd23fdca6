package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	switch r.Kind {
	case refBlob:
		o, _ := json.Marshal(r.O)
		return fmt.Appendf(b, "[%d,0,%s]", r.V, o)
	case refEmpty:
		return fmt.Appendf(b, "[%d,1]", r.V)
	case refValue:
		return fmt.Appendf(b, "[%d,2,%s]", r.V, r.J)
	}
	return fmt.Appendf(b, "[%d,3,%d,%d]", r.V, r.L, r.N)
}

// encodeRefs writes a refs column: nil for no entries.
func encodeRefs(refs map[string]ref) []byte {
	if len(refs) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, ch := range slices.Sorted(maps.Keys(refs)) {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(ch)
		b = append(b, name...)
		b = append(b, ':')
		b = refs[ch].appendJSON(b)
	}
	return append(b, '}')
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
	refs := map[string]ref{}
	if len(raw) == 0 {
		return refs, nil
	}
	if err := json.Unmarshal(raw, &refs); err != nil {
		return nil, corrupt(thread, ns, cpID, "blob references", err)
	}
	return refs, nil
}
