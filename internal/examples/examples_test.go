package examples_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/internal/examples"
)

func TestEveryExampleBuilds(t *testing.T) {
	all := examples.All()
	if len(all) == 0 {
		t.Fatal("no examples")
	}
	if !slices.IsSortedFunc(all, func(a, b examples.Example) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("examples are not sorted by name: %v", examples.Names())
	}
	for _, e := range all {
		g, err := e.Build()
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if len(g.Nodes()) == 0 {
			t.Errorf("%s has no nodes", e.Name)
		}
	}
}

func TestLookup(t *testing.T) {
	if e, err := examples.Lookup("approval"); err != nil || e.Name != "approval" {
		t.Fatalf("Lookup(approval) = %v, %v", e.Name, err)
	}
	_, err := examples.Lookup("nope")
	if !errors.Is(err, examples.ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
	if !strings.Contains(err.Error(), "approval") {
		t.Errorf("error %q does not list the known graphs", err)
	}
}
