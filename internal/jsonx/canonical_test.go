package jsonx

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestCanonicalJSON checks that what Canonical accepts is exactly what
// decoding and encoding again gives, so tool's call keys and llm's message
// encoding may use such bytes as they are.
func TestCanonicalJSON(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `{"a":1}`, `{"a":1,"b":2}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
		`{"a": 1}`, ` {"a":1}`, `{"a":1.5}`, `{"a":1e3}`, `{"a":-0}`, `{"a":-12}`, `{"a":012}`,
		`{"a":1234567890123456}`, `{"a":123456789012345}`, `{"a":"x\"y"}`, `{"a":"<b>"}`,
		`{"a":"한국어"}`, "{\"a\":\"\u2028\"}", "{\"a\":\"\xff\"}", `{"a":"\u0041"}`,
		`{"a":[1,"x",true,false,null,{"c":{}}]}`, `{"a":tru}`, `{"a":nul}`, `{"a":}`, `{"a":1,}`,
		`{"keyword":"UX","limit":3}`, `{"query":"` + strings.Repeat("0f0e-", 700) + `"}`,
		`{"a":{"z":1,"y":2}}`, `{"":1,"a":2}`, `{"a":[1,2,]}`, `{"a":1}x`, `"s"`, `1`, ``,
	}
	for _, in := range inputs {
		var v any
		want := false
		if json.Unmarshal([]byte(in), &v) == nil {
			b, _ := json.Marshal(v)
			want = string(b) == in
		}
		got := Canonical([]byte(in))
		if dv, ok := DecodeCanonical([]byte(in)); ok != got {
			t.Errorf("DecodeCanonical(%q) ok = %v, Canonical = %v", in, ok, got)
		} else if ok && !reflect.DeepEqual(dv, v) {
			t.Errorf("DecodeCanonical(%q) = %#v, json.Unmarshal gives %#v", in, dv, v)
		}
		if got && !want {
			t.Errorf("Canonical(%q) = true, but it is not what encoding gives", in)
		}
		if want && !got && len(in) > 0 && !strings.ContainsAny(in, ".e") {
			t.Logf("Canonical(%q) = false (slow path) for canonical input", in)
		}
	}
}

// FuzzDecodeCanonical checks that Canonical never accepts bytes that are
// not exactly what encoding their value gives, and that DecodeCanonical
// then decodes them as json.Unmarshal does. Strings long enough for the
// assembly block scan are in the corpus.
func FuzzDecodeCanonical(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x",true,false,null,{"c":{}}]}`))
	f.Add([]byte(`{"query":"` + strings.Repeat("0f0e-abcd", 9) + `","z":-12}`))
	f.Add([]byte(`{"q":"` + strings.Repeat("abcdefgh", 5) + `<` + strings.Repeat("x", 20) + `"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		dv, ok := DecodeCanonical(in)
		if !ok {
			return
		}
		var v any
		if err := json.Unmarshal(in, &v); err != nil {
			t.Fatalf("Canonical(%q) = true, but json.Unmarshal fails: %v", in, err)
		}
		if b, _ := json.Marshal(v); string(b) != string(in) {
			t.Fatalf("Canonical(%q) = true, but encoding its value gives %s", in, b)
		}
		if !reflect.DeepEqual(dv, v) {
			t.Fatalf("DecodeCanonical(%q) = %#v, json.Unmarshal gives %#v", in, dv, v)
		}
	})
}
