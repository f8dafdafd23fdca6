package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// FieldPath is a parsed index field path: which parts of an item's value are
// embedded. The syntax follows LangGraph's index fields:
//
//	$                  the whole value, as JSON with sorted keys
//	title              a top-level field
//	meta.summary       a nested field
//	tags[*]            every element of an array (one vector each)
//	steps[0].text      one element; negative indexes count from the end
//	sections[*].body   a field of every element
//	*                  every value of an object or array
//	{title,meta.note}  several fields at one level, one vector each
//
// A string is embedded as it is; a number or boolean as its JSON text; an
// object or array as its JSON text with sorted keys; null and missing
// fields give nothing.
type FieldPath struct {
	raw    string
	tokens []string
}

// ParseFieldPath parses p, reporting a malformed path with ErrInvalidValue.
func ParseFieldPath(p string) (FieldPath, error) {
	if p == "" || p == "$" {
		return FieldPath{raw: "$"}, nil
	}
	var toks []string
	var cur strings.Builder
	bad := func(why string) (FieldPath, error) {
		return FieldPath{}, fmt.Errorf("%w: index field path %q: %s", ErrInvalidValue, p, why)
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '.':
			if cur.Len() == 0 {
				if i == 0 || (p[i-1] != ']' && p[i-1] != '}') {
					return bad("empty field name")
				}
				continue
			}
			toks = append(toks, cur.String())
			cur.Reset()
		case '[', '{':
			if cur.Len() > 0 {
				toks = append(toks, cur.String())
				cur.Reset()
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			end := strings.IndexByte(p[i:], closer)
			if end < 0 {
				return bad(fmt.Sprintf("unclosed %q", c))
			}
			tok := p[i : i+end+1]
			inner := tok[1 : len(tok)-1]
			if c == '[' && inner != "*" {
				if _, err := strconv.Atoi(inner); err != nil {
					return bad(fmt.Sprintf("array index %q must be an integer or *", inner))
				}
			}
			if c == '{' {
				for _, f := range strings.Split(inner, ",") {
					if strings.TrimSpace(f) == "" {
						return bad("empty field in {...}")
					}
				}
			}
			toks = append(toks, tok)
			i += end
		case ']', '}':
			return bad(fmt.Sprintf("unexpected %q", c))
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		toks = append(toks, cur.String())
	} else if p[len(p)-1] == '.' {
		return bad("ends with '.'")
	}
	return FieldPath{raw: p, tokens: toks}, nil
}

// String returns the path as written.
func (p FieldPath) String() string { return p.raw }

// Texts returns the texts at p in the decoded JSON value v.
func (p FieldPath) Texts(v any) []string {
	if p.tokens == nil {
		return []string{jsonText(v)}
	}
	return extract(v, p.tokens)
}

func extract(v any, toks []string) []string {
	if len(toks) == 0 {
		switch x := v.(type) {
		case nil:
			return nil
		case string:
			return []string{x}
		default:
			return []string{jsonText(x)}
		}
	}
	tok, rest := toks[0], toks[1:]
	var out []string
	switch {
	case tok[0] == '[':
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		inner := tok[1 : len(tok)-1]
		if inner == "*" {
			for _, e := range arr {
				out = append(out, extract(e, rest)...)
			}
			return out
		}
		i, _ := strconv.Atoi(inner)
		if i < 0 {
			i += len(arr)
		}
		if i < 0 || i >= len(arr) {
			return nil
		}
		return extract(arr[i], rest)
	case tok[0] == '{':
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, f := range strings.Split(tok[1:len(tok)-1], ",") {
			sub, err := ParseFieldPath(strings.TrimSpace(f))
			if err != nil || sub.tokens == nil {
				continue
			}
			out = append(out, extract(obj, append(sub.tokens, rest...))...)
		}
		return out
	case tok == "*":
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				out = append(out, extract(x[k], rest)...)
			}
		case []any:
			for _, e := range x {
				out = append(out, extract(e, rest)...)
			}
		}
		return out
	default:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		e, ok := obj[tok]
		if !ok {
			return nil
		}
		return extract(e, rest)
	}
}

func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
