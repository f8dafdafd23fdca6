package tool

import (
	"encoding/json"
	"reflect"
	"testing"

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
