package graph

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The checkpoint encoder must write exactly what encoding/json writes, for
// shared and unshared values alike.
func TestValueEncoderMatchesEncodingJSON(t *testing.T) {
	shared := map[string]any{"deep": []any{"x", 1, true, nil, 6327816386138}, "note": strings.Repeat("hi?", 30)}
	sharedList := []any{shared, shared, "tail"}
	cases := []any{
		[]any{},
		[]any(nil),
		map[string]any{},
		map[string]any(nil),
		[]any{shared, shared, sharedList, sharedList[:2], map[string]any{"again": shared}},
		map[string]any{"b": 1.5, "a": math.Copysign(0, -1), "c": 1e-7, "d": 1e21, "e": 123456789.0, "f": 0.1},
		[]any{"<tag>", "a&b", "quote\"", "back\\slash", "tab\t", "ünï", "\u2028", string([]byte{0xff, 'x'})},
		[]any{int64(-5), int32(7), uint(9), float32(0.25), json.Number("12"), json.RawMessage(`{"k": 1}`), struct{ A int }{3}},
		map[string]any{"<key>": shared, "z": []any{[]any{[]any{}}}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		cases = append(cases, randomValue(r, 4, shared))
	}
	for i, v := range cases {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&valueEncoder{}).encode(v)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// One encoder serves every channel of a checkpoint: values encoded
	// later reuse parts of earlier ones.
	e := &valueEncoder{}
	for round := range 3 {
		for i, v := range cases {
			want, _ := json.Marshal(v)
			got, err := e.encode(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("shared encoder, round %d, case %d:\n got %s\nwant %s", round, i, got, want)
			}
		}
	}
	if _, err := (&valueEncoder{}).encode([]any{math.NaN()}); err == nil {
		t.Error("NaN encoded without error; encoding/json refuses it")
	}
}

func randomValue(r *rand.Rand, depth int, shared map[string]any) any {
	if depth == 0 {
		switch r.IntN(5) {
		case 0:
			return r.Float64() * 1000
		case 1:
			return strings.Repeat("ab<", r.IntN(5))
		case 2:
			return r.IntN(2) == 0
		case 3:
			return nil
		default:
			return shared
		}
	}
	if r.IntN(2) == 0 {
		n := r.IntN(4)
		l := make([]any, n)
		for i := range l {
			l[i] = randomValue(r, depth-1, shared)
		}
		return l
	}
	m := map[string]any{}
	for i := range r.IntN(4) {
		m[string(rune('a'+i))] = randomValue(r, depth-1, shared)
	}
	return m
}
