package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weftlabs/weft/internal/jsonx"
)

// A run's creation merges JSON objects (the thread's metadata and config,
// the run's metadata): mergeObjects and mergeConfig. They answer what
// json.Marshal of the merged map[string]json.RawMessage answers (keys
// sorted, values compact, <, > and & escaped), without decoding into maps:
// the objects are split into their members where they lie, and the
// merged members written in key order. Objects this cannot split simply
// (a key with an escape or a byte past ASCII) are merged through maps,
// mergeMaps, which also gives every error; FuzzMergeObjects checks that
// both ways answer the same.

// member is a member of a JSON object: its key (with neither escapes nor
// bytes past ASCII, so its JSON text is the key) and its value's JSON
// text, both as they lie in the object: a run's creation merges three
// objects, and a string per key was most of what merging them allocated.
type member struct {
	key []byte
	val []byte
}

// members appends the members of obj, a JSON object json.Valid accepted,
// to out, in order. It reports false when obj is not an object or has a
// key that is not plain ASCII.
func members(obj []byte, out []member) ([]member, bool) {
	i := jsonx.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return out, false
	}
	i = jsonx.SkipSpace(obj, i+1)
	if obj[i] == '}' {
		return out, true
	}
	for {
		// obj[i] is the key's opening quote.
		start := i + 1
		end := start
		for obj[end] != '"' {
			if c := obj[end]; c == '\\' || c >= 0x80 {
				return out, false
			}
			end++
		}
		i = jsonx.SkipSpace(obj, end+1) // at ':'
		i = jsonx.SkipSpace(obj, i+1)
		vend := jsonx.ValueEnd(obj, i)
		out = append(out, member{key: obj[start:end], val: obj[i:vend]})
		i = jsonx.SkipSpace(obj, vend)
		if obj[i] == '}' {
			return out, true
		}
		i = jsonx.SkipSpace(obj, i+1) // past ','
	}
}

// configurableKey is the key of a config's configurable values.
var configurableKey = []byte("configurable")

// writeMembers writes ms as a JSON object in key order, the last of
// several members with one key winning, as json.Marshal writes a map.
func writeMembers(ms []member) []byte {
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	n := 2
	for _, m := range ms {
		n += len(m.key) + len(m.val) + 4
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	first := true
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(ms[i+1].key, m.key) {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = jsonx.AppendString(out, string(m.key), true)
		out = append(out, ':')
		out = appendCompact(out, m.val)
	}
	return append(out, '}')
}

// appendCompact appends a valid JSON value as json.Marshal writes a
// json.RawMessage: without spaces, with <, >, &, U+2028 and U+2029
// escaped.
func appendCompact(out, val []byte) []byte {
	plain := true
	for _, c := range val {
		switch c {
		case ' ', '\t', '\r', '\n', '<', '>', '&', 0xE2:
			plain = false
		}
	}
	if plain {
		return append(out, val...)
	}
	var compact, escaped bytes.Buffer
	_ = json.Compact(&compact, val)
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(out, escaped.Bytes()...)
}

// mergeObjects returns base with the keys of patch set: a shallow merge of
// two JSON objects, as the API's metadata patches are.
func mergeObjects(base, patch json.RawMessage) (json.RawMessage, error) {
	base, patch = object(base), object(patch)
	if json.Valid(base) && json.Valid(patch) {
		ms, ok := members(base, make([]member, 0, 16))
		if ok {
			if ms, ok = members(patch, ms); ok {
				return writeMembers(ms), nil
			}
		}
	}
	return mergeMaps(base, patch)
}

// mergeMaps is mergeObjects through maps.
func mergeMaps(base, patch json.RawMessage) (json.RawMessage, error) {
	b, p, err := decodeMaps(base, patch, "object")
	if err != nil {
		return nil, err
	}
	for k, v := range p {
		b[k] = v
	}
	return json.Marshal(b)
}

// decodeMaps decodes a stored object (what names it in the error: it is
// corrupt when it does not decode) and a patch of it, base never nil.
func decodeMaps(base, patch json.RawMessage, what string) (b, p map[string]json.RawMessage, err error) {
	if err := json.Unmarshal(object(base), &b); err != nil {
		return nil, nil, fmt.Errorf("%w: stored %s: %v", ErrCorrupt, what, err)
	}
	if err := json.Unmarshal(object(patch), &p); err != nil {
		return nil, nil, err
	}
	if b == nil {
		b = map[string]json.RawMessage{}
	}
	return b, p, nil
}

// mergeConfig merges a run config into a thread's: top-level keys are
// replaced, "configurable" is merged key by key.
func mergeConfig(base, patch json.RawMessage) (json.RawMessage, error) {
	base, patch = object(base), object(patch)
	if json.Valid(base) && json.Valid(patch) {
		ms, ok := members(base, make([]member, 0, 8))
		n := len(ms)
		if ok {
			ms, ok = members(patch, ms)
		}
		if ok {
			// The last "configurable" of each object; the patch's is
			// merged into the base's.
			var bc, pc []byte
			for i, m := range ms {
				if string(m.key) != "configurable" {
					continue
				}
				if i < n {
					bc = m.val
				} else {
					pc = m.val
				}
			}
			if pc == nil {
				return writeMembers(ms), nil
			}
			merged, err := mergeObjects(bc, pc)
			if err != nil {
				return nil, err
			}
			return writeMembers(append(ms, member{key: configurableKey, val: merged})), nil
		}
	}
	return mergeConfigMaps(base, patch)
}

// mergeConfigMaps is mergeConfig through maps.
func mergeConfigMaps(base, patch json.RawMessage) (json.RawMessage, error) {
	b, p, err := decodeMaps(base, patch, "config")
	if err != nil {
		return nil, err
	}
	for k, v := range p {
		if k == "configurable" {
			merged, err := mergeMaps(b[k], v)
			if err != nil {
				return nil, err
			}
			b[k] = merged
			continue
		}
		b[k] = v
	}
	return json.Marshal(b)
}
