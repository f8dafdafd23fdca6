package jsonx

import (
	"bytes"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Canonical reports whether b is valid JSON already in the form json.Marshal
// gives the value it decodes to (as any): no space, object keys sorted and
// distinct, strings without escapes or characters Marshal would escape,
// integers of at most 15 digits. Such bytes need neither decoding and
// encoding again to be compared, nor compacting and escaping to be embedded
// (json.Marshal of a json.RawMessage returns them as they are). It may say
// false for some canonical input; it never says true for input that is
// not.
func Canonical(b []byte) bool {
	n, ok := canonValue(b, 0, 0)
	return ok && n == len(b)
}

// canonMaxDepth bounds the recursion; deeper input takes the slow path.
const canonMaxDepth = 64

func canonValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > canonMaxDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for first := true; ; first = false {
			start := i
			end, ok := canonString(b, i)
			if !ok {
				return i, false
			}
			key := b[start+1 : end-1]
			if !first && string(key) <= string(prev) {
				return i, false
			}
			prev = key
			if end >= len(b) || b[end] != ':' {
				return i, false
			}
			if i, ok = canonValue(b, end+1, depth+1); !ok {
				return i, false
			}
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == '}' {
				return i + 1, true
			}
			return i, false
		}
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonValue(b, i, depth+1); !ok {
				return i, false
			}
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == ']' {
				return i + 1, true
			}
			return i, false
		}
	case c == '"':
		return canonString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return canonInt(b, i)
	case c == 't':
		return canonLiteral(b, i, "true")
	case c == 'f':
		return canonLiteral(b, i, "false")
	case c == 'n':
		return canonLiteral(b, i, "null")
	}
	return i, false
}

func canonLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// canonInt accepts integers that float64 holds exactly and Marshal prints
// as they are: no leading zero, no "-0", at most 15 digits.
func canonInt(b []byte, i int) (int, bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	n := i - digits
	if n == 0 || n > 15 || (b[digits] == '0' && (n > 1 || digits > start)) {
		return i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return i, false
	}
	return i, true
}

// canonString accepts a string with no escapes and nothing json.Marshal
// escapes (control characters, '<', '>', '&', invalid UTF-8, U+2028,
// U+2029); it returns the index after the closing quote.
func canonString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i++
	for i < len(b) {
		if i+8 <= len(b) {
			i += safeWords(unsafe.String(&b[i], len(b)-i), true)
			if i >= len(b) {
				break
			}
		}
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				return i + 1, true
			case c < 0x20 || c == '\\' || c == '<' || c == '>' || c == '&':
				return i, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return i, false
		}
		i += size
	}
	return i, false
}

// DecodeCanonical decodes b as json.Unmarshal into an any would, when b is
// canonical (see Canonical); ok is false, and nothing decoded, otherwise.
// Canonical input has no escapes and only small integers, so strings are
// its bytes and numbers parse exactly as encoding/json parses them.
func DecodeCanonical(b []byte) (v any, ok bool) {
	if !Canonical(b) {
		return nil, false
	}
	return DecodeCanonicalChecked(b), true
}

// DecodeCanonicalChecked is DecodeCanonical for b that Canonical has
// already accepted; given anything else it may panic.
func DecodeCanonicalChecked(b []byte) any {
	v, _ := decodeValue(b, 0)
	return v
}

// decodeValue decodes the canonical value at b[i:] and returns the index
// after it.
func decodeValue(b []byte, i int) (any, int) {
	switch c := b[i]; c {
	case '{':
		m := map[string]any{}
		i++
		if b[i] == '}' {
			return m, i + 1
		}
		for {
			end := stringEnd(b, i)
			key := string(b[i+1 : end-1])
			var v any
			v, i = decodeValue(b, end+1)
			m[key] = v
			if b[i] == '}' {
				return m, i + 1
			}
			i++ // ','
		}
	case '[':
		s := []any{}
		i++
		if b[i] == ']' {
			return s, i + 1
		}
		for {
			var v any
			v, i = decodeValue(b, i)
			s = append(s, v)
			if b[i] == ']' {
				return s, i + 1
			}
			i++ // ','
		}
	case '"':
		end := stringEnd(b, i)
		return string(b[i+1 : end-1]), end
	case 't':
		return true, i + 4
	case 'f':
		return false, i + 5
	case 'n':
		return nil, i + 4
	}
	end, _ := canonInt(b, i)
	f, _ := strconv.ParseFloat(string(b[i:end]), 64)
	return f, end
}

// stringEnd returns the index after the canonical string at b[i:], which
// has no escapes: its closing quote is the next one.
func stringEnd(b []byte, i int) int {
	return i + 1 + bytes.IndexByte(b[i+1:], '"') + 1
}
