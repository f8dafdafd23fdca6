package tool

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/internal/jsonx"
)

// FuzzFieldsDecoder: for any arguments, what the fast path accepts the
// schema accepts too (valid), and what it fills json.Unmarshal fills
// alike (decode), so that skipping the validator and encoding/json never
// changes what a tool receives.
func FuzzFieldsDecoder(f *testing.F) {
	type in struct {
		Keyword string  `json:"keyword"`
		Limit   int8    `json:"limit,omitempty"`
		Page    int     `json:"page,omitzero"`
		ID      int64   `json:"id,omitempty"`
		Remote  bool    `json:"remote"`
		Score   float64 `json:"score,omitempty"`
		Plain   string  `json:",omitempty"`
	}
	schema, err := jsonschema.For[in](nil)
	if err != nil {
		f.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	d := newFieldsDecoder(reflect.TypeFor[in]())
	for _, s := range []string{
		`{"keyword":"UX","remote":true}`, `{"id":123456789012345,"keyword":"a","limit":-128,"page":7,"remote":false,"score":0.5}`,
		`{"keyword":"한국어\u0000","remote":true}`, `{"Plain":"p","keyword":"","remote":false}`, `{"keyword":null,"remote":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		v, canonical := jsonx.DecodeCanonical(args)
		if !canonical {
			return // the slow path: encoding/json and the validator
		}
		var want in
		wantErr := json.Unmarshal(args, &want)
		if d.valid(v) {
			if err := resolved.Validate(v); err != nil {
				t.Fatalf("%s: valid, but the schema rejects it: %v", args, err)
			}
		}
		var got in
		if d.decode(v, reflect.ValueOf(&got).Elem()) && (wantErr != nil || got != want) {
			t.Fatalf("%s: decoded %+v, json.Unmarshal gives %+v (%v)", args, got, want, wantErr)
		}
	})
}
