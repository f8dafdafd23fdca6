// Package tooltest generates tool arguments that are valid against a tool's
// JSON Schema, to check that a tool accepts everything its schema admits: a
// model may send any of them, and arguments the schema accepts but the tool
// then rejects end in errors the model cannot foresee.
//
// The values are the ones most likely to find a gap: every enum member, the
// bounds of numbers, the shortest and longest strings and lists allowed,
// strings of spaces, punctuation and common words where a pattern admits
// them, and nulls where a type allows null.
package tooltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrUnsupported: the schema uses a construct the generator does not cover.
var ErrUnsupported = errors.New("tooltest: unsupported schema")

// Arguments returns argument objects valid against params, a tool's JSON
// Schema for an object: the required properties alone, with each of them at
// each of its sample values in turn (the others at their first), then each
// optional property added at each of its samples. Every object returned has
// been validated against params.
func Arguments(params json.RawMessage) ([]json.RawMessage, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(params, &s); err != nil {
		return nil, fmt.Errorf("tooltest: the schema is not JSON Schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("%w: type %q; want an object", ErrUnsupported, s.Type)
	}
	whole, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tooltest: resolving the schema: %w", err)
	}
	objs, err := objects(&s)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	seen := map[string]bool{}
	for _, args := range objs {
		if err := whole.Validate(args); err != nil {
			return nil, fmt.Errorf("tooltest: generated arguments the schema rejects: %w", err)
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, b)
		}
	}
	return out, nil
}

// objects returns the sample objects of an object schema: the required
// properties alone, with each of them at each of its sample values in
// turn (the others at their first), then each optional property added at
// each of its samples. Nested objects are sampled the same way.
func objects(s *jsonschema.Schema) ([]map[string]any, error) {
	names := slices.Clone(s.PropertyOrder)
	for name := range s.Properties {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names) // PropertyOrder is not in the JSON
	samples := map[string][]any{}
	for _, name := range names {
		vs, err := valuesFor(s.Properties[name])
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", name, err)
		}
		if len(vs) == 0 {
			return nil, fmt.Errorf("%w: property %s: no sample value satisfies its schema", ErrUnsupported, name)
		}
		samples[name] = vs
	}
	base := map[string]any{}
	for _, name := range s.Required {
		vs, ok := samples[name]
		if !ok {
			return nil, fmt.Errorf("%w: required property %s has no schema", ErrUnsupported, name)
		}
		base[name] = vs[0]
	}
	out := []map[string]any{base}
	for _, name := range names {
		for _, v := range samples[name] {
			args := make(map[string]any, len(base)+1)
			for k, bv := range base {
				args[k] = bv
			}
			args[name] = v
			out = append(out, args)
		}
	}
	return out, nil
}

// strs are the strings tried for a string property, kept when its schema
// admits them.
var strs = []string{
	"", " ", "a", "ab", "!!", "a b", "x-1", "the", "제주", "추천", "UX 디자이너", "ms-001",
	"...", "。。", " ab ", "0", "123",
}

// valuesFor returns the sample values of a property that its schema admits.
func valuesFor(p *jsonschema.Schema) ([]any, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: no schema", ErrUnsupported)
	}
	r, err := (&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"v": p}}).Resolve(nil)
	if err != nil {
		return nil, err
	}
	var cands []any
	switch {
	case p.Const != nil:
		cands = []any{*p.Const}
	case len(p.Enum) > 0:
		cands = slices.Clone(p.Enum)
	default:
		types := p.Types
		if p.Type != "" {
			types = []string{p.Type}
		}
		for _, t := range types {
			cs, err := candidates(t, p)
			if err != nil {
				return nil, err
			}
			cands = append(cands, cs...)
		}
	}
	var out []any
	seen := map[string]bool{}
	for _, c := range cands {
		b, _ := json.Marshal(c)
		if seen[string(b)] || r.Validate(map[string]any{"v": normal(c)}) != nil {
			continue
		}
		seen[string(b)] = true
		out = append(out, c)
	}
	return out, nil
}

// normal turns a value into what json.Unmarshal into an any gives, the
// form the validator expects.
func normal(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func candidates(t string, p *jsonschema.Schema) ([]any, error) {
	switch t {
	case "null":
		return []any{nil}, nil
	case "boolean":
		return []any{false, true}, nil
	case "integer", "number":
		return numbers(t == "integer", p), nil
	case "string":
		out := make([]any, 0, len(strs)+2)
		for _, s := range strs {
			out = append(out, s)
		}
		if p.MinLength != nil {
			out = append(out, strings.Repeat("a", *p.MinLength))
		}
		if p.MaxLength != nil {
			out = append(out, strings.Repeat("a", *p.MaxLength), strings.Repeat("가", *p.MaxLength))
		}
		return out, nil
	case "array":
		return arrays(p)
	case "object":
		objs, err := objects(p)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(objs))
		for i, o := range objs {
			out[i] = o
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: type %q", ErrUnsupported, t)
}

// numbers are the bounds of a number (just inside exclusive ones), zero,
// one and a middle value, or, without bounds, values a model might choose.
func numbers(integer bool, p *jsonschema.Schema) []any {
	step := 1e-6
	if integer {
		step = 1
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if p.Minimum != nil {
		lo = *p.Minimum
	}
	if p.ExclusiveMinimum != nil {
		lo = max(lo, *p.ExclusiveMinimum+step)
	}
	if p.Maximum != nil {
		hi = *p.Maximum
	}
	if p.ExclusiveMaximum != nil {
		hi = min(hi, *p.ExclusiveMaximum-step)
	}
	vals := []float64{0, 1, -1, 0.5, 1e6, -1e6}
	if !math.IsInf(lo, 0) {
		vals = append([]float64{lo}, vals...)
	}
	if !math.IsInf(hi, 0) {
		vals = append(vals, hi)
	}
	if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		vals = append(vals, lo+(hi-lo)/2)
	}
	var out []any
	for _, v := range vals {
		if integer {
			v = math.Ceil(v)
		}
		if v >= lo && v <= hi {
			out = append(out, v)
		}
	}
	return out
}

// arrays are the shortest and the longest list allowed (up to 60 items),
// of distinct items when the schema asks for them.
func arrays(p *jsonschema.Schema) ([]any, error) {
	if p.Items == nil {
		return []any{[]any{}}, nil
	}
	items, err := valuesFor(p.Items)
	if err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	// Strings of a kind ids take, so that long lists can be distinct.
	if p.Items.Type == "string" && len(p.Items.Enum) == 0 {
		extra := make([]any, 60)
		for i := range extra {
			extra[i] = "id-" + strconv.Itoa(i+1)
		}
		r, err := (&jsonschema.Schema{Type: "array", Items: p.Items}).Resolve(nil)
		if err != nil {
			return nil, err
		}
		for _, e := range extra {
			if r.Validate([]any{e}) == nil {
				items = append(items, e)
			}
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	lo, hi := 0, 60
	if p.MinItems != nil {
		lo = *p.MinItems
	}
	if p.MaxItems != nil {
		hi = min(hi, *p.MaxItems)
	}
	list := func(n int) []any {
		out := make([]any, 0, n)
		for i := range n {
			if p.UniqueItems && i >= len(items) {
				break
			}
			out = append(out, items[i%len(items)])
		}
		return out
	}
	out := []any{list(lo), list(hi)}
	if lo <= 1 && hi >= 1 {
		// One item of each sample, so every item value is tried.
		for _, it := range items[:min(len(items), len(strs))] {
			out = append(out, []any{it})
		}
	}
	return out, nil
}
