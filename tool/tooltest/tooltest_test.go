package tooltest_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/tool/tooltest"
)

func TestArgumentsCoverEnumsBoundsAndRequired(t *testing.T) {
	schema := `{"type":"object","required":["region"],"additionalProperties":false,"properties":{
		"region":{"type":"string","pattern":"\\S"},
		"category":{"type":"string","enum":["cafe","shop"]},
		"limit":{"type":"integer","minimum":1,"maximum":50},
		"ids":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3,"uniqueItems":true}}}`
	all, err := tooltest.Arguments(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, a := range all {
		var m map[string]any
		if err := json.Unmarshal(a, &m); err != nil {
			t.Fatal(err)
		}
		r, ok := m["region"].(string)
		if !ok || r == "" || r == " " {
			t.Errorf("%s: region missing or blank", a)
		}
		seen = append(seen, string(a))
	}
	for _, want := range []string{`"category":"cafe"`, `"category":"shop"`, `"limit":1`, `"limit":50`, `"ids":["a"]`} {
		if !slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no argument set with %s in %q", want, seen)
		}
	}
	for _, s := range seen {
		if strings.Contains(s, `"limit":0`) || strings.Contains(s, `"limit":51`) || strings.Contains(s, `"ids":[]`) {
			t.Errorf("%s is outside the schema", s)
		}
	}
}

func TestArgumentsRejectsNonObjects(t *testing.T) {
	if _, err := tooltest.Arguments(json.RawMessage(`{"type":"string"}`)); err == nil {
		t.Error("a string schema was accepted")
	}
}

func TestArgumentsSampleNestedObjects(t *testing.T) {
	schema := `{"type":"object","required":["content"],"properties":{
		"id":{"type":"string"},
		"content":{"type":"object","required":["text"],"additionalProperties":false,"properties":{
			"text":{"type":"string","pattern":"\\S"},
			"kind":{"type":"string","enum":["fact","preference"]}}}}}`
	all, err := tooltest.Arguments(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, a := range all {
		var m struct {
			Content map[string]any `json:"content"`
		}
		if err := json.Unmarshal(a, &m); err != nil {
			t.Fatal(err)
		}
		if s, _ := m.Content["text"].(string); strings.TrimSpace(s) == "" {
			t.Errorf("%s: the nested required text is missing or blank", a)
		}
		seen = append(seen, string(a))
	}
	for _, want := range []string{`"kind":"fact"`, `"kind":"preference"`, `"id":""`} {
		if !slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no argument set with %s in %q", want, seen)
		}
	}
}
