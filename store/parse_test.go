package store_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/store"
)

func TestParseFilter(t *testing.T) {
	f, err := store.ParseFilter(map[string]any{
		"a.b":  1,
		"meta": map[string]any{"lang": "ko", "n": map[string]any{"$gte": int64(2), "$lt": float32(9.5)}},
		"z":    nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Filter{
		{Path: []string{"a", "b"}, Op: store.OpEq, Value: 1.0},
		{Path: []string{"meta", "lang"}, Op: store.OpEq, Value: "ko"},
		{Path: []string{"meta", "n"}, Op: store.OpGte, Value: 2.0},
		{Path: []string{"meta", "n"}, Op: store.OpLt, Value: 9.5},
		{Path: []string{"z"}, Op: store.OpEq, Value: nil},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("ParseFilter (-want +got):\n%s", diff)
	}
}

func TestParseFilterErrors(t *testing.T) {
	for _, c := range []struct {
		filter   map[string]any
		path, op string
	}{
		{map[string]any{"a": map[string]any{"$in": []any{1}}}, "a", "$in"},
		{map[string]any{"$and": 1}, "$and", "$and"},
		{map[string]any{"a": map[string]any{"b": map[string]any{"$gt": false}}}, "a.b", "$gt"},
		{map[string]any{"a": []any{1}}, "a", ""},
		{map[string]any{"a.": 1}, "a.", ""},
		{map[string]any{`a"b`: 1}, `a"b`, ""},
		{map[string]any{"n": map[string]any{"$eq": json.Number("x")}}, "n", "$eq"},
	} {
		_, err := store.ParseFilter(c.filter)
		var fe *store.FilterError
		if !errors.As(err, &fe) || !errors.Is(err, store.ErrInvalidFilter) {
			t.Errorf("ParseFilter(%v) = %v, want a *FilterError", c.filter, err)
			continue
		}
		if fe.Path != c.path || fe.Operator != c.op {
			t.Errorf("ParseFilter(%v): error at %q %q, want %q %q (%v)", c.filter, fe.Path, fe.Operator, c.path, c.op, err)
		}
	}
}

func TestFieldPathTexts(t *testing.T) {
	var v any
	json.Unmarshal([]byte(`{
		"title": "T", "n": 3, "ok": true, "none": null,
		"tags": ["x", "y", "z"],
		"sections": [{"body": "b1", "h": "h1"}, {"body": "b2"}],
		"meta": {"summary": "S", "note": {"k": 1, "a": [1, 2]}}
	}`), &v)
	for _, c := range []struct {
		path string
		want []string
	}{
		{"title", []string{"T"}},
		{"n", []string{"3"}},
		{"ok", []string{"true"}},
		{"none", nil},
		{"missing", nil},
		{"tags[*]", []string{"x", "y", "z"}},
		{"tags[0]", []string{"x"}},
		{"tags[-1]", []string{"z"}},
		{"tags[9]", nil},
		{"sections[*].body", []string{"b1", "b2"}},
		{"sections[*].h", []string{"h1"}},
		{"meta.summary", []string{"S"}},
		{"meta.note", []string{`{"a":[1,2],"k":1}`}},
		{"meta.*", []string{`{"a":[1,2],"k":1}`, "S"}},
		{"{title,meta.summary}", []string{"T", "S"}},
		{"title.deeper", nil},
	} {
		p, err := store.ParseFieldPath(c.path)
		if err != nil {
			t.Errorf("ParseFieldPath(%q): %v", c.path, err)
			continue
		}
		if diff := cmp.Diff(c.want, p.Texts(v)); diff != "" {
			t.Errorf("%q texts (-want +got):\n%s", c.path, diff)
		}
	}
	p, _ := store.ParseFieldPath("$")
	if got := p.Texts(map[string]any{"b": "<x>", "a": 1}); !cmp.Equal(got, []string{`{"a":1,"b":"<x>"}`}) {
		t.Errorf("$ texts = %q", got)
	}
	for _, bad := range []string{"a[", "a[x]", "a..b", ".a", "a.", "a]", "{a,}"} {
		if _, err := store.ParseFieldPath(bad); !errors.Is(err, store.ErrInvalidValue) {
			t.Errorf("ParseFieldPath(%q) = %v, want ErrInvalidValue", bad, err)
		}
	}
}

func TestValidateNamespace(t *testing.T) {
	if err := store.ValidateNamespace([]string{"users", "u-1", "memories"}); err != nil {
		t.Errorf("good namespace: %v", err)
	}
	err := store.ValidateNamespace([]string{"users", "a.b"})
	var ne *store.NamespaceError
	if !errors.As(err, &ne) || ne.Label != 1 {
		t.Fatalf("err = %v, want a NamespaceError at label 1", err)
	}
	if want := `store: invalid namespace ("users", "a.b"): label 1 "a.b" contains "." which labels may not contain`; err.Error() != want {
		t.Errorf("message = %q\nwant      %q", err.Error(), want)
	}
}
