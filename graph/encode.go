package graph

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	"github.com/weftlabs/weft/internal/jsonx"
)

// valueEncoder encodes the channel values of one checkpoint to JSON. State
// built from dynamic JSON-shaped values ([]any, map[string]any) shares them
// freely: a reducer that concatenates lists keeps the same element maps in
// several channels and many positions. Within one checkpoint such a value
// is encoded once and its bytes reused wherever it appears again, which is
// safe because nothing changes a value while a checkpoint is being made.
// The output is what encoding/json produces for the same value.
type valueEncoder struct {
	// The output is a list of segments joined once at the end, so bytes
	// are copied into place once, and a repeated value is one segment.
	segs    [][]byte
	cur     []byte
	flushed int
	maps    map[uintptr]*encoded
	slices  map[sliceKey]*encoded
	// depth counts the composites being encoded; past cycleCheckDepth the
	// encoder tracks them in visiting to report a cycle as an error, as
	// encoding/json does, instead of recursing until the stack overflows.
	depth    int
	visiting map[sliceKey]bool
}

// cycleCheckDepth is the nesting past which composites are checked for
// cycles; encoding/json starts at the same depth, and shallower values pay
// nothing for the check.
const cycleCheckDepth = 1000

// encoded is a composite's encoding: its segments, flattened into one slice
// the first time the composite appears again.
type encoded struct {
	parts [][]byte
	flat  []byte
}

type sliceKey struct {
	p uintptr
	n int
}

// sharedMin is the smallest composite worth remembering: below it, encoding
// again costs less than the bookkeeping.
const sharedMin = 64

func (e *valueEncoder) encode(v any) ([]byte, error) {
	switch v.(type) {
	case []any, map[string]any:
	default:
		return json.Marshal(v)
	}
	// A fresh segment list: cached parts of earlier values point into the
	// old one, which must not be overwritten.
	e.segs, e.cur, e.flushed = nil, nil, 0
	if err := e.value(v); err != nil {
		return nil, err
	}
	e.flush()
	out := make([]byte, 0, e.flushed)
	for _, s := range e.segs {
		out = append(out, s...)
	}
	return out, nil
}

func (e *valueEncoder) flush() {
	if len(e.cur) > 0 {
		e.segs = append(e.segs, e.cur)
		e.flushed += len(e.cur)
		e.cur = e.cur[len(e.cur):]
	}
}

// room makes space for n more bytes in cur without moving what is there.
func (e *valueEncoder) room(n int) {
	if cap(e.cur)-len(e.cur) < n {
		e.flush()
		e.cur = make([]byte, 0, max(16<<10, n))
	}
}

func (e *valueEncoder) repeat(c *encoded) {
	if c.flat == nil {
		n := 0
		for _, s := range c.parts {
			n += len(s)
		}
		c.flat = make([]byte, 0, n)
		for _, s := range c.parts {
			c.flat = append(c.flat, s...)
		}
		c.parts = nil
	}
	e.flush()
	e.segs = append(e.segs, c.flat)
	e.flushed += len(c.flat)
}

// enter starts encoding composite v (k identifies it); deep enough, it
// fails if v is already being encoded further up: v contains itself.
func (e *valueEncoder) enter(k sliceKey, v any) error {
	e.depth++
	if e.depth <= cycleCheckDepth {
		return nil
	}
	if e.visiting == nil {
		e.visiting = make(map[sliceKey]bool)
	}
	if e.visiting[k] {
		e.depth--
		return &json.UnsupportedValueError{Value: reflect.ValueOf(v), Str: fmt.Sprintf("encountered a cycle via %T", v)}
	}
	e.visiting[k] = true
	return nil
}

func (e *valueEncoder) leave(k sliceKey) {
	if e.depth > cycleCheckDepth {
		delete(e.visiting, k)
	}
	e.depth--
}

func (e *valueEncoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.room(4)
		e.cur = append(e.cur, "null"...)
		return nil
	case bool:
		e.room(5)
		e.cur = strconv.AppendBool(e.cur, x)
		return nil
	case string:
		e.room(len(x) + 2)
		e.cur = jsonx.AppendString(e.cur, x, true)
		return nil
	case int:
		e.room(20)
		e.cur = strconv.AppendInt(e.cur, int64(x), 10)
		return nil
	case int64:
		e.room(20)
		e.cur = strconv.AppendInt(e.cur, x, 10)
		return nil
	case int32:
		e.room(20)
		e.cur = strconv.AppendInt(e.cur, int64(x), 10)
		return nil
	case float64:
		if a := math.Abs(x); !math.IsInf(x, 0) && !math.IsNaN(x) && (a == 0 || (a >= 1e-6 && a < 1e21)) {
			e.room(32)
			e.cur = strconv.AppendFloat(e.cur, x, 'f', -1, 64)
			return nil
		}
	case []any:
		if len(x) == 0 {
			e.room(4)
			if x == nil {
				e.cur = append(e.cur, "null"...)
			} else {
				e.cur = append(e.cur, "[]"...)
			}
			return nil
		}
		key := sliceKey{uintptr(reflect.ValueOf(x).UnsafePointer()), len(x)}
		if c, ok := e.slices[key]; ok {
			e.repeat(c)
			return nil
		}
		if err := e.enter(key, x); err != nil {
			return err
		}
		defer e.leave(key)
		e.flush()
		from, start := len(e.segs), e.flushed
		e.room(1)
		e.cur = append(e.cur, '[')
		for i, el := range x {
			if i > 0 {
				e.room(1)
				e.cur = append(e.cur, ',')
			}
			if err := e.value(el); err != nil {
				return err
			}
		}
		e.room(1)
		e.cur = append(e.cur, ']')
		e.flush()
		if e.flushed-start >= sharedMin {
			if e.slices == nil {
				e.slices = make(map[sliceKey]*encoded)
			}
			e.slices[key] = &encoded{parts: e.segs[from:len(e.segs):len(e.segs)]}
		}
		return nil
	case map[string]any:
		if x == nil {
			e.room(4)
			e.cur = append(e.cur, "null"...)
			return nil
		}
		key := uintptr(reflect.ValueOf(x).UnsafePointer())
		if c, ok := e.maps[key]; ok {
			e.repeat(c)
			return nil
		}
		if err := e.enter(sliceKey{key, -1}, x); err != nil {
			return err
		}
		defer e.leave(sliceKey{key, -1})
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.flush()
		from, start := len(e.segs), e.flushed
		e.room(1)
		e.cur = append(e.cur, '{')
		for i, k := range keys {
			e.room(len(k) + 4)
			if i > 0 {
				e.cur = append(e.cur, ',')
			}
			e.cur = jsonx.AppendString(e.cur, k, true)
			e.cur = append(e.cur, ':')
			if err := e.value(x[k]); err != nil {
				return err
			}
		}
		e.room(1)
		e.cur = append(e.cur, '}')
		e.flush()
		if e.flushed-start >= sharedMin {
			if e.maps == nil {
				e.maps = make(map[uintptr]*encoded)
			}
			e.maps[key] = &encoded{parts: e.segs[from:len(e.segs):len(e.segs)]}
		}
		return nil
	}
	// Everything else as encoding/json writes it.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.flush()
	e.segs = append(e.segs, b)
	e.flushed += len(b)
	return nil
}
