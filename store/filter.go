package store

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Op is a filter comparison operator.
type Op string

// The filter operators. A plain value in a filter means OpEq.
const (
	OpEq  Op = "$eq"
	OpNe  Op = "$ne"
	OpGt  Op = "$gt"
	OpGte Op = "$gte"
	OpLt  Op = "$lt"
	OpLte Op = "$lte"
)

// Ordered reports whether op compares by order ($gt $gte $lt $lte).
func (op Op) Ordered() bool {
	switch op {
	case OpGt, OpGte, OpLt, OpLte:
		return true
	}
	return false
}

// Condition is one comparison of a parsed filter: the value at Path
// compared by Op with Value.
type Condition struct {
	// Path is the sequence of object keys from the item value's root.
	Path []string
	// Op is the operator.
	Op Op
	// Value is a string, a float64, a bool, or nil (JSON null). Ordered
	// operators only take strings and numbers.
	Value any
}

// Filter is a parsed search filter: every condition must hold. Backends
// translate it to their query language; [Filter.Match] is the reference
// semantics they must agree with:
//
//   - OpEq matches a field of the same JSON type and equal value (numbers
//     compare numerically, strings byte-wise); a nil Value matches a JSON
//     null or a missing field.
//   - OpNe matches exactly where OpEq does not, including missing fields.
//   - Ordered operators match a number compared with a number or a string
//     compared with a string (byte-wise, i.e. by code point); any other
//     field, or a missing one, does not match.
type Filter []Condition

// ParseFilter parses a filter written as in LangGraph:
//
//	{"status": "done"}                       // equality
//	{"score": {"$gte": 0.5, "$lt": 0.9}}     // operators
//	{"meta.lang": "ko"}                      // dotted path into nested objects
//	{"meta": {"lang": "ko"}}                 // the same, written nested
//
// Values must be strings, numbers, booleans or null; arrays, unknown
// operators and objects mixing operators with fields are errors
// (*FilterError naming the path).
func ParseFilter(m map[string]any) (Filter, error) {
	var f Filter
	for _, k := range sortedKeys(m) {
		path, err := splitFilterKey(nil, k)
		if err != nil {
			return nil, err
		}
		if err := f.parse(path, m[k]); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func splitFilterKey(parent []string, k string) ([]string, error) {
	at := strings.Join(append(slices.Clone(parent), k), ".")
	if strings.HasPrefix(k, "$") {
		return nil, &FilterError{Path: at, Operator: k, Reason: "unknown operator here: expected a field name; operators are $eq $ne $gt $gte $lt $lte inside a field's object"}
	}
	path := slices.Clone(parent)
	for _, seg := range strings.Split(k, ".") {
		if seg == "" {
			return nil, &FilterError{Path: at, Reason: "empty field name in path"}
		}
		if strings.ContainsAny(seg, "\"\\") {
			return nil, &FilterError{Path: at, Reason: "field names in filters may not contain '\"' or '\\'"}
		}
		path = append(path, seg)
	}
	return path, nil
}

func (f *Filter) parse(path []string, v any) error {
	at := strings.Join(path, ".")
	obj, isObj := v.(map[string]any)
	if !isObj {
		val, err := filterScalar(at, "", v)
		if err != nil {
			return err
		}
		*f = append(*f, Condition{Path: path, Op: OpEq, Value: val})
		return nil
	}
	if len(obj) == 0 {
		return &FilterError{Path: at, Reason: `empty object: expected a value or an operator object such as {"$gt": 1}`}
	}
	ops, fields := 0, 0
	for k := range obj {
		if strings.HasPrefix(k, "$") {
			ops++
		} else {
			fields++
		}
	}
	if ops > 0 && fields > 0 {
		return &FilterError{Path: at, Reason: "object mixes operators and field names: use one or the other"}
	}
	for _, k := range sortedKeys(obj) {
		if fields > 0 {
			sub, err := splitFilterKey(path, k)
			if err != nil {
				return err
			}
			if err := f.parse(sub, obj[k]); err != nil {
				return err
			}
			continue
		}
		op := Op(k)
		switch op {
		case OpEq, OpNe, OpGt, OpGte, OpLt, OpLte:
		default:
			return &FilterError{Path: at, Operator: k, Reason: "unknown operator: expected one of $eq $ne $gt $gte $lt $lte"}
		}
		val, err := filterScalar(at, k, obj[k])
		if err != nil {
			return err
		}
		if op.Ordered() {
			switch val.(type) {
			case string, float64:
			default:
				return &FilterError{Path: at, Operator: k, Reason: fmt.Sprintf("needs a number or a string, got %s", jsonTypeName(val))}
			}
		}
		*f = append(*f, Condition{Path: path, Op: op, Value: val})
	}
	return nil
}

// filterScalar normalises a Go value to the filter value domain.
func filterScalar(at, op string, v any) (any, error) {
	bad := func(reason string) error { return &FilterError{Path: at, Operator: op, Reason: reason} }
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, bad("number must be finite")
		}
		return x, nil
	case float32:
		return filterScalar(at, op, float64(x))
	case int:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case json.Number:
		n, err := x.Float64()
		if err != nil {
			return nil, bad("malformed number " + x.String())
		}
		return filterScalar(at, op, n)
	case map[string]any:
		return nil, bad("an operator's value must be a string, number, boolean or null, not an object")
	default:
		return nil, bad(fmt.Sprintf("value must be a string, number, boolean or null, got %T", v))
	}
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// Match reports whether the decoded JSON value v (as produced by
// encoding/json into an any) satisfies every condition.
func (f Filter) Match(v any) bool {
	for _, c := range f {
		if !c.Match(v) {
			return false
		}
	}
	return true
}

// Match reports whether the decoded JSON value v satisfies c.
func (c Condition) Match(v any) bool {
	x, ok := Lookup(v, c.Path)
	switch c.Op {
	case OpEq:
		return jsonEqual(x, ok, c.Value)
	case OpNe:
		return !jsonEqual(x, ok, c.Value)
	}
	if !ok {
		return false
	}
	var cmp int
	switch want := c.Value.(type) {
	case string:
		s, is := x.(string)
		if !is {
			return false
		}
		cmp = strings.Compare(s, want)
	case float64:
		n, is := x.(float64)
		if !is {
			return false
		}
		switch {
		case n < want:
			cmp = -1
		case n > want:
			cmp = 1
		}
	default:
		return false
	}
	switch c.Op {
	case OpGt:
		return cmp > 0
	case OpGte:
		return cmp >= 0
	case OpLt:
		return cmp < 0
	case OpLte:
		return cmp <= 0
	}
	return false
}

func jsonEqual(x any, present bool, want any) bool {
	if want == nil {
		return !present || x == nil
	}
	if !present {
		return false
	}
	switch w := want.(type) {
	case string:
		s, ok := x.(string)
		return ok && s == w
	case float64:
		n, ok := x.(float64)
		return ok && n == w
	case bool:
		b, ok := x.(bool)
		return ok && b == w
	}
	return false
}

// Lookup follows path through nested JSON objects in v and returns the
// value found and whether it exists.
func Lookup(v any, path []string) (any, bool) {
	for _, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok = obj[k]
		if !ok {
			return nil, false
		}
	}
	return v, true
}
