package tool

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/internal/jsonx"
)

// TestFieldsDecoderMatchesUnmarshal checks that when the fields decoder
// fills a struct, json.Unmarshal fills it alike.
func TestFieldsDecoderMatchesUnmarshal(t *testing.T) {
	type in struct {
		Keyword string  `json:"keyword"`
		Limit   int8    `json:"limit,omitempty"`
		Remote  bool    `json:"remote"`
		Score   float64 `json:"score"`
		Plain   string
		Skip    string `json:"-"`
		hidden  string
	}
	d := newFieldsDecoder(reflect.TypeFor[in]())
	if d == nil {
		t.Fatal("no decoder for a plain struct")
	}
	inputs := []string{
		`{}`, `{"keyword":"UX"}`, `{"keyword":"UX","limit":3,"remote":true,"score":12}`, `{"limit":300}`,
		`{"limit":"3"}`, `{"Keyword":"x"}`, `{"keyword":null}`, `{"Plain":"p"}`, `{"plain":"p"}`, `{"-":"x"}`,
		`{"hidden":"h"}`, `{"remote":1}`, `{"score":-5}`, `{"keyword":"한국어"}`, `{"extra":1}`,
	}
	for _, s := range inputs {
		v, ok := jsonx.DecodeCanonical([]byte(s))
		if !ok {
			t.Fatalf("%s is not canonical", s)
		}
		var got, want in
		fast := d.decode(v, reflect.ValueOf(&got).Elem())
		err := json.Unmarshal([]byte(s), &want)
		if got.hidden != "" {
			t.Errorf("%s: an unexported field was filled", s)
		}
		if fast && (err != nil || got != want) {
			t.Errorf("%s: decoded %+v, json.Unmarshal gives %+v (%v)", s, got, want, err)
		}
	}
	type embedded struct{ in }
	type custom struct {
		When json.Number `json:"when"`
		Raw  []byte      `json:"raw"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[embedded](), reflect.TypeFor[custom](), reflect.TypeFor[map[string]any]()} {
		if newFieldsDecoder(typ) != nil {
			t.Errorf("a fields decoder for %v", typ)
		}
	}
}

// TestFieldsValidAgreesWithSchema checks that valid never accepts what the
// schema jsonschema.For derives rejects, and that what it accepts decodes
// as json.Unmarshal decodes it; the tool then skips the validator.
func TestFieldsValidAgreesWithSchema(t *testing.T) {
	type in struct {
		Keyword string  `json:"keyword"`
		Limit   int8    `json:"limit,omitempty"`
		Page    int     `json:"page,omitzero"`
		Remote  bool    `json:"remote"`
		Score   float64 `json:"score,omitempty"`
		Plain   string  `json:",omitempty"`
		Skip    string  `json:"-"`
	}
	schema, err := jsonschema.For[in](nil)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newFieldsDecoder(reflect.TypeFor[in]())
	inputs := []string{
		`{}`, `{"keyword":"UX"}`, `{"keyword":"UX","remote":true}`, `{"keyword":"UX","limit":3,"remote":true,"score":12}`,
		`{"keyword":"UX","limit":127,"remote":false}`, `{"keyword":"UX","limit":128,"remote":false}`, `{"keyword":"UX","limit":-129,"remote":false}`,
		`{"keyword":"UX","limit":1.5,"remote":false}`, `{"keyword":"UX","page":1e30,"remote":false}`, `{"keyword":"UX","page":-7,"remote":false}`,
		`{"keyword":null,"remote":true}`, `{"keyword":"UX","remote":null}`, `{"keyword":"UX","remote":1}`, `{"keyword":3,"remote":true}`,
		`{"Keyword":"UX","remote":true}`, `{"keyword":"UX","remote":true,"extra":1}`, `{"keyword":"UX","remote":true,"-":"x"}`,
		`{"Plain":"p","keyword":"","remote":false}`, `{"keyword":"UX","remote":true,"score":-0.25}`, `{"keyword":"한국어","remote":true}`,
		`[]`, `"x"`, `null`,
	}
	accepted := 0
	for _, s := range inputs {
		v, ok := jsonx.DecodeCanonical([]byte(s))
		if !ok {
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				t.Fatal(err)
			}
		}
		if !d.valid(v) {
			continue
		}
		accepted++
		if err := resolved.Validate(v); err != nil {
			t.Errorf("%s: valid, but the schema rejects it: %v", s, err)
		}
		var got, want in
		if !d.decode(v, reflect.ValueOf(&got).Elem()) {
			t.Errorf("%s: valid, but decode declines it", s)
		}
		if err := json.Unmarshal([]byte(s), &want); err != nil || got != want {
			t.Errorf("%s: decoded %+v, json.Unmarshal gives %+v (%v)", s, got, want, err)
		}
	}
	if accepted < 6 {
		t.Errorf("valid accepted only %d inputs; the fast path is not taken", accepted)
	}
}
