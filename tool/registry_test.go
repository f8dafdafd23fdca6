package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/tool"
)

func TestExtendSeesBaseChanges(t *testing.T) {
	echo := func(context.Context, struct{}) (string, error) { return "ok", nil }
	a, b, own := tool.New("a", "A", echo), tool.New("b", "B", echo), tool.New("own", "mine", echo)
	base, err := tool.NewRegistry(a)
	if err != nil {
		t.Fatal(err)
	}
	x, err := base.Extend(own)
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Add(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "own"}, x.Names()); diff != "" {
		t.Errorf("Names after the base grew (-want +got):\n%s", diff)
	}
	var specNames []string
	for _, s := range x.Specs() {
		specNames = append(specNames, s.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "own"}, specNames); diff != "" {
		t.Errorf("Specs (-want +got):\n%s", diff)
	}
	if got, ok := x.Get("b"); !ok || got != b {
		t.Errorf("Get(b) through the extension = %v, %v", got, ok)
	}
	if _, ok := base.Get("own"); ok {
		t.Error("the extension's tool leaked into the base registry")
	}
	base.Remove("a")
	if _, ok := x.Get("a"); ok {
		t.Error("a tool removed from the base is still found through the extension")
	}
	if len(x.Tools()) != 2 {
		t.Errorf("Tools = %d, want 2", len(x.Tools()))
	}
	// A name of the base cannot be added to the extension.
	if _, err := base.Extend(tool.New("b", "again", echo)); !errors.Is(err, tool.ErrInvalidTool) {
		t.Errorf("Extend with a base tool's name: %v, want ErrInvalidTool", err)
	}
}
