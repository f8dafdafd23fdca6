package sqlstore

import (
	"bytes"
	"encoding/json"
	"testing"
)

// appendBody writes the bytes json.Marshal writes, for names that need
// no escaping and for names that do.
func TestAppendBodyIsJSONMarshal(t *testing.T) {
	uc := []string{"messages", "a<b"}
	empty := []string{}
	cases := []body{
		{},
		{V: 4, CV: map[string]int64{}, VS: map[string]map[string]int64{}},
		{V: 4, CV: map[string]int64{"messages": 3, "__start__": 1, "branch:to:echo": 2}, VS: map[string]map[string]int64{
			"echo": {"branch:to:echo": 2}, "__input__": {}, "n": nil,
		}, UC: &uc},
		{V: 1, CV: map[string]int64{"é": -1, "a\"b": 1 << 62, "<&>": 0, "\u2028": 5, "tab\t": 7}, UC: &empty},
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
