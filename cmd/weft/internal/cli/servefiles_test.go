package cli

import (
	"path/filepath"
	"testing"
)

// The marketing orchestrator's threads keep their files where weft serve
// tells it to save them; the chat agents keep none.
func TestExampleThreadFiles(t *testing.T) {
	f := ExampleThreadFiles("/data")
	if got, want := f("marketing", "6e4c9f0a-58d3-4a53-9f43-2b1b2f7c0c11"), filepath.Join("/data", resultsDirName, "6e4c9f0a-58d3-4a53-9f43-2b1b2f7c0c11"); got != want {
		t.Errorf("marketing: %q, want %q", got, want)
	}
	if got := f("marketing", "a/../b"); filepath.Dir(got) != filepath.Join("/data", resultsDirName) {
		t.Errorf("a thread id with a path in it: %q is not one directory inside the results", got)
	}
	for _, g := range []string{"career", "echo", "no-such-graph"} {
		if got := f(g, "t1"); got != "" {
			t.Errorf("%s: %q, want no files", g, got)
		}
	}
}
