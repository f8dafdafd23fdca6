package records

import (
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// fakeRow is one stored row handed to a scan function.
type fakeRow struct{ vals []any }

func (r *fakeRow) Next() bool { return false }
func (r *fakeRow) Err() error { return nil }
func (r *fakeRow) Close()     {}
func (r *fakeRow) Scan(dest ...any) error {
	for i, d := range dest {
		v := reflect.ValueOf(d).Elem()
		switch x := r.vals[i].(type) {
		case string:
			if ns, ok := d.(*sql.NullString); ok {
				*ns = sql.NullString{String: x, Valid: true}
				continue
			}
			v.SetString(x)
		case int64:
			v.SetInt(x)
		}
	}
	return nil
}

// Rows whose JSON columns hold any bytes decode without a panic, and a
// column that is not JSON is ErrCorrupt naming the record.
func FuzzDecodeStored(f *testing.F) {
	f.Add(`{"a":1}`, `{}`, `[1,2]`)
	f.Add(`{`, `null`, ``)
	f.Add("\xff", `{"configurable":{"x":[`, `"s"`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		check := func(err error) {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
		}
		_, err := scanThread(&fakeRow{[]any{"t", "o", int64(1), int64(2), a, b, "idle", c, a}})
		check(err)
		_, err = scanRun(&fakeRow{[]any{"r", "t", "o", "as", a, b, "pending", "reject", int64(1), int64(2), int64(1), "w"}})
		check(err)
		_, err = scanAssistant(&fakeRow{[]any{"a", "o", "g", "n", c, a, b, c, int64(1), int64(1), int64(2)}})
		check(err)
		// Merging into a stored object that is not one is ErrCorrupt too.
		if json.Valid([]byte(b)) {
			_, err = mergeObjects(json.RawMessage(a), json.RawMessage(b))
			if err != nil && !errors.Is(err, ErrCorrupt) && json.Valid([]byte(a)) {
				var m map[string]any
				if json.Unmarshal([]byte(b), &m) == nil {
					t.Fatalf("merging %q into %q: %v", b, a, err)
				}
			}
			_, _ = mergeConfig(json.RawMessage(a), json.RawMessage(b))
		}
	})
}

// mergeSeeds are objects as the API and the databases hand them over:
// compact, spaced (PostgreSQL's jsonb), nested, with duplicate keys,
// escapes, HTML characters, non-ASCII text, and things that are no
// objects at all.
var mergeSeeds = [][2]string{
	{`{}`, `{}`},
	{``, `null`},
	{`{"graph_id": "echo", "n": 1, "x": {"a": [1, 2, {"b": null}]}}`, `{"assistant_id":"a1","graph_id":"echo"}`},
	{`{"b":1,"a":2,"b":3}`, `{"a":"x","a":"y"}`},
	{`{"k\"ey":1,"é":"ü"}`, `{"<tag>":"a & b","s":"\u2028 "}`},
	{`{"configurable":{"user-agent":"node","x":1},"tags":["a"]}`, `{"configurable":{"x":2,"y":"<z>"},"recursion_limit":5}`},
	{`{"configurable":"nope"}`, `{"configurable":{"a":1}}`},
	{`{"configurable":{"a":1}}`, `{"configurable":null}`},
	{`[1,2]`, `{}`},
	{`{}`, `"s"`},
	{`{"a":`, `{}`},
	{"{\"a\":\"\xff\"}", `{"b":true,"c":false,"d":-1.5e3}`},
	{"{\"\xff\":1}", `{"a" :  { "b" : [ ] } }`},
}

// mergeObjects and mergeConfig answer what merging through maps answers,
// byte for byte, errors included.
func FuzzMergeObjects(f *testing.F) {
	for _, s := range mergeSeeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, base, patch string) {
		for _, c := range []struct {
			name       string
			fast, maps func(a, b json.RawMessage) (json.RawMessage, error)
		}{{"mergeObjects", mergeObjects, mergeMaps}, {"mergeConfig", mergeConfig, mergeConfigMaps}} {
			got, gerr := c.fast(json.RawMessage(base), json.RawMessage(patch))
			want, werr := c.maps(json.RawMessage(base), json.RawMessage(patch))
			if (gerr == nil) != (werr == nil) || string(got) != string(want) {
				t.Errorf("%s(%q, %q) = %s, %v; through maps %s, %v", c.name, base, patch, got, gerr, want, werr)
			}
			if gerr != nil && errors.Is(gerr, ErrCorrupt) != errors.Is(werr, ErrCorrupt) {
				t.Errorf("%s(%q, %q): error %v, through maps %v", c.name, base, patch, gerr, werr)
			}
		}
	})
}
