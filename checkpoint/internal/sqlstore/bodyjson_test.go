package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
)

// appendBody writes the bytes json.Marshal writes, for names that need
// no escaping and for names that do.
func TestAppendBodyIsJSONMarshal(t *testing.T) {
	uc := []string{"messages", "a<b"}
	empty := []string{}
	var none []string
	cases := []body{
		{},
		{V: 4, CV: map[string]int64{}, VS: map[string]map[string]int64{}},
		{V: 4, CV: map[string]int64{"messages": 3, "__start__": 1, "branch:to:echo": 2}, VS: map[string]map[string]int64{
			"echo": {"branch:to:echo": 2}, "__input__": {}, "n": nil,
		}, UC: &uc},
		{V: 1, CV: map[string]int64{"é": -1, "a\"b": 1 << 62, "<&>": 0, "\u2028": 5, "tab\t": 7}, UC: &empty},
		{V: 2, UC: &none},
	}
	for _, b := range cases {
		sameAsMarshal(t, b)
	}
}

// sameAsMarshal fails t unless appendBody writes b as json.Marshal does.
func sameAsMarshal(t *testing.T, b body) {
	t.Helper()
	want, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendBody(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("appendBody:\n got %s\nwant %s", got, want)
	}
}

func FuzzAppendBody(f *testing.F) {
	f.Add("messages", "echo", int64(3), true)
	f.Add("a\"<\xff", "\u2028", int64(-9), false)
	f.Fuzz(func(t *testing.T, ch, node string, v int64, withUC bool) {
		b := body{V: 4, CV: map[string]int64{ch: v, ch + "x": v / 2}, VS: map[string]map[string]int64{node: {ch: v}}}
		if withUC {
			b.UC = &[]string{ch, node}
		}
		sameAsMarshal(t, b)
	})
}

// The refs column is written by hand as it was with fmt and json.Marshal:
// stored rows and their readers see the same bytes.
func TestEncodeRefsAsFormatted(t *testing.T) {
	refs := map[string]ref{
		"messages":        {V: 7, Kind: refLog, L: 3, N: 12},
		"branch:to:a":     {V: -1, Kind: refEmpty},
		"x<&>\u2028\"q\"": {V: 1 << 40, Kind: refBlob, O: "fork-<id>\"\\"},
		"tag":             {V: 2, Kind: refValue, J: json.RawMessage(`{"a":[1,"<"]}`)},
		"ééé":             {V: 0, Kind: refBlob},
	}
	var want []byte
	want = append(want, '{')
	for i, ch := range slices.Sorted(maps.Keys(refs)) {
		if i > 0 {
			want = append(want, ',')
		}
		name, _ := json.Marshal(ch)
		want = append(append(want, name...), ':')
		r := refs[ch]
		switch r.Kind {
		case refBlob:
			o, _ := json.Marshal(r.O)
			want = fmt.Appendf(want, "[%d,0,%s]", r.V, o)
		case refEmpty:
			want = fmt.Appendf(want, "[%d,1]", r.V)
		case refValue:
			want = fmt.Appendf(want, "[%d,2,%s]", r.V, r.J)
		default:
			want = fmt.Appendf(want, "[%d,3,%d,%d]", r.V, r.L, r.N)
		}
	}
	want = append(want, '}')
	if got := encodeRefs(refs); string(got) != string(want) {
		t.Errorf("encodeRefs = %s\nwant %s", got, want)
	}
	if encodeRefs(nil) != nil {
		t.Error("encodeRefs(nil) is not nil")
	}
}

// A refs column read without encoding/json holds what json.Unmarshal
// reads from it; columns it does not read that way are left to it.
func TestDecodePlainRefsAsUnmarshal(t *testing.T) {
	plain := []string{
		`{}`, ` { } `, encodeRefsString(t),
		`{"a":[1,1],"b":[-2,0,"o"],"c":[3,2,{"x":[1,2]}],"d":[4,3,5,6],"a":[9,1]}`,
		`{ "a" : [ 1 , 3 , 2 , 0 ] , "é" : [ 0 , 2 , "s" ] }`,
	}
	other := []string{
		`null`, `[]`, `{"a\u0062":[1,1]}`, `{"a":{"v":1,"o":"x"}}`, `{"a":[1]}`, `{"a":[1,1,2]}`, `{"a":[1,2]}`,
		`{"a":[1,0]}`, `{"a":[1,0,"x",2]}`, `{"a":[1,3,2]}`, `{"a":[1,3,2,-1]}`, `{"a":[1.5,1]}`, `{"a":[1e3,1]}`,
		`{"a":[1,4]}`, `{"a":[1,-1]}`, `{"a":[99999999999999999999,1]}`, `{"a":[1,0,"o\"q"]}`, "{\"a\":[1,0,\"\xff\"]}",
		`{"a":[1,"1"]}`, `{"a":1}`,
	}
	for _, raw := range append(plain, other...) {
		want := map[string]ref{}
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, ok := decodePlainRefs([]byte(raw))
		if !ok {
			if slices.Contains(plain, raw) {
				t.Errorf("%s: not read without encoding/json", raw)
			}
			continue
		}
		if slices.Contains(other, raw) {
			t.Errorf("%s: read without encoding/json", raw)
		}
		if wantErr != nil {
			t.Errorf("%s: read, but json.Unmarshal fails: %v", raw, wantErr)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", raw, got, want)
		}
	}
}

// encodeRefsString is a refs column of every kind of entry.
func encodeRefsString(t *testing.T) string {
	t.Helper()
	return string(encodeRefs(map[string]ref{
		"messages": {V: 7, Kind: refLog, L: 3, N: 12}, "t": {V: 1, Kind: refEmpty},
		"b": {V: 2, Kind: refBlob, O: "1ef-origin"}, "v": {V: 3, Kind: refValue, J: json.RawMessage(`"<&>"`)},
	}))
}

// A checkpoint's metadata is written as json.Marshal writes it, by hand
// or through it.
func TestMarshalMetaIsJSONMarshal(t *testing.T) {
	metas := []checkpoint.Metadata{
		{},
		{Source: "loop", Step: -1},
		{Source: "input", Step: 3, Parents: map[string]string{"": "1ef", "a<b": "\u2028"}},
		{Source: "loop", Step: 2, Extra: map[string]any{
			"run_id": "r", "run_attempt": 1, "graph_id": "echo", "n": int64(-7), "ok": true, "none": nil,
			"f": 0.1, "big": 1e21, "small": 1e-7, "neg": math.Copysign(0, -1), "int": 123456789.0, "e": 1.5e-300,
			"nested": map[string]any{"b": []any{1.0, "x<&>", false, nil, map[string]any{}}, "a": []any{}},
			"nilmap": map[string]any(nil), "nillist": []any(nil), "x\xff": "\xfe",
		}},
		{Source: "update", Extra: map[string]any{"other": int32(5), "s": []string{"a"}}},
		{Source: "update", Extra: map[string]any{"num": json.Number("12.50")}},
	}
	for _, m := range metas {
		want, werr := json.Marshal(m)
		got, err := marshalMeta(m)
		if (err == nil) != (werr == nil) || string(got) != string(want) {
			t.Errorf("marshalMeta(%v) = %s, %v\nwant %s, %v", m, got, err, want, werr)
		}
	}
	if _, err := marshalMeta(checkpoint.Metadata{Extra: map[string]any{"nan": math.NaN()}}); err == nil {
		t.Error("marshalMeta took NaN, which json.Marshal refuses")
	}
}

func FuzzMarshalMeta(f *testing.F) {
	f.Add("loop", 3, "k", "v<", 1.25, int64(7))
	f.Add("\xff", -1, "\u2028", "", 1e-9, int64(-1))
	f.Fuzz(func(t *testing.T, source string, step int, k, v string, x float64, n int64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		m := checkpoint.Metadata{Source: source, Step: step, Parents: map[string]string{k: v},
			Extra: map[string]any{k: v, "x": x, "n": n, "l": []any{x, v, map[string]any{v: n}}}}
		want, _ := json.Marshal(m)
		if got, err := marshalMeta(m); err != nil || string(got) != string(want) {
			t.Errorf("marshalMeta = %s, %v\nwant %s", got, err, want)
		}
	})
}
