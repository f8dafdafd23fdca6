package sqlstore

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/internal/jsonx"
)

// appendBody appends b's JSON to dst: the bytes json.Marshal makes of it
// (keys in order, strings escaped as it escapes them), without its
// reflection over the two maps, which a checkpoint write paid for on
// every Put.
func appendBody(dst []byte, b body) ([]byte, error) {
	// Room for it all at once, not grown append by append.
	n := 64
	for k := range b.CV {
		n += len(k) + 24
	}
	for k, m := range b.VS {
		n += len(k) + 8
		for c := range m {
			n += len(c) + 24
		}
	}
	if b.UC != nil {
		for _, c := range *b.UC {
			n += len(c) + 4
		}
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(b.V), 10)
	dst = append(dst, `,"cv":`...)
	dst = appendVersions(dst, b.CV)
	dst = append(dst, `,"vs":`...)
	if b.VS == nil {
		dst = append(dst, "null"...)
	} else {
		dst, _ = jsonx.AppendObject(dst, b.VS, func(dst []byte, _ string, m map[string]int64) ([]byte, error) {
			return appendVersions(dst, m), nil
		})
	}
	if b.UC != nil {
		dst = append(dst, `,"uc":`...)
		// As json.Marshal writes a []string.
		if *b.UC == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i, c := range *b.UC {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = jsonx.AppendString(dst, c, true)
			}
			dst = append(dst, ']')
		}
	}
	return append(dst, '}'), nil
}

// appendVersions appends a channel-to-version map as json.Marshal does.
func appendVersions(dst []byte, m map[string]int64) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	dst, _ = jsonx.AppendObject(dst, m, func(dst []byte, _ string, v int64) ([]byte, error) {
		return strconv.AppendInt(dst, v, 10), nil
	})
	return dst
}

// marshalMeta returns json.Marshal(meta): by hand for the values run
// metadata holds (strings, integers, floats, booleans, null, and maps and
// lists of them), through json.Marshal for anything else. A checkpoint
// write encoded its metadata with json.Marshal's reflection over its map
// of extras, about fifteen allocations each.
func marshalMeta(meta checkpoint.Metadata) ([]byte, error) {
	n := 64 + len(meta.Source)
	for k, v := range meta.Parents {
		n += len(k) + len(v) + 6
	}
	n += 32 * len(meta.Extra)
	b := make([]byte, 0, n)
	b = append(b, `{"source":`...)
	b = jsonx.AppendString(b, meta.Source, true)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(meta.Step), 10)
	if len(meta.Parents) > 0 {
		b = append(b, `,"parents":`...)
		b, _ = jsonx.AppendObject(b, meta.Parents, func(b []byte, _ string, v string) ([]byte, error) {
			return jsonx.AppendString(b, v, true), nil
		})
	}
	if len(meta.Extra) > 0 {
		b = append(b, `,"extra":`...)
		var ok bool
		if b, ok = appendPlain(b, meta.Extra, 0); !ok {
			return json.Marshal(meta)
		}
	}
	return append(b, '}'), nil
}

// appendPlain appends v as json.Marshal writes it, when v is made of the
// values marshalMeta writes by hand; ok is false otherwise (b is then
// unusable). depth bounds the nesting it follows.
func appendPlain(b []byte, v any, depth int) (_ []byte, ok bool) {
	if depth > 32 {
		return b, false
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return jsonx.AppendString(b, v, true), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case float64:
		return appendFloat(b, v)
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		b, err := jsonx.AppendObject(b, v, func(b []byte, _ string, e any) ([]byte, error) {
			if b, ok = appendPlain(b, e, depth+1); !ok {
				return b, errNotPlain
			}
			return b, nil
		})
		return b, err == nil
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlain(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	return b, false
}

// errNotPlain stops appendPlain's walk of a map at a value it does not
// write itself.
var errNotPlain = errors.New("sqlstore: not a plain JSON value")

// appendFloat appends f as json.Marshal writes a float64; ok is false for
// the values it refuses (NaN, infinities).
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as json.Marshal writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
