package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

func named(name, desc string) *tool.Tool {
	return tool.New(name, desc, func(context.Context, struct{}) (string, error) { return desc, nil })
}

func specNames(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name+":"+s.Description)
	}
	return out
}

func TestRegistryApply(t *testing.T) {
	reg, err := tool.NewRegistry(named("a", "1"), named("b", "1"), named("c", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if v := reg.Version(); v != 3 {
		t.Fatalf("version after three adds = %d, want 3", v)
	}
	before := reg.Snapshot()
	got, err := reg.Apply(tool.Change{Added: []*tool.Tool{named("d", "1")}, Updated: []*tool.Tool{named("a", "2")}, Removed: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 4 || reg.Version() != 4 {
		t.Errorf("one change is one version: got %d, registry %d, want 4", got.Version, reg.Version())
	}
	// An update keeps the tool's place; an added tool comes last.
	if diff := cmp.Diff([]string{"a:2", "c:1", "d:1"}, specNames(reg.Specs())); diff != "" {
		t.Errorf("specs (-want +got):\n%s", diff)
	}
	// The snapshot taken before is unchanged.
	if diff := cmp.Diff([]string{"a:1", "b:1", "c:1"}, specNames(before.Specs())); diff != "" {
		t.Errorf("old snapshot changed (-want +got):\n%s", diff)
	}
	if before.Version() != 3 {
		t.Errorf("old snapshot version %d, want 3", before.Version())
	}
	if v, _ := reg.Apply(tool.Change{}); v.Version != 4 {
		t.Errorf("an empty change moved the version to %d", v.Version)
	}

	bad := []struct {
		name string
		c    tool.Change
	}{
		{"add a registered name", tool.Change{Added: []*tool.Tool{named("x", "1"), named("a", "3")}}},
		{"update an unknown tool", tool.Change{Added: []*tool.Tool{named("x", "1")}, Updated: []*tool.Tool{named("zz", "1")}}},
		{"remove an unknown tool", tool.Change{Added: []*tool.Tool{named("x", "1")}, Removed: []string{"zz"}}},
		{"a name twice", tool.Change{Added: []*tool.Tool{named("x", "1")}, Removed: []string{"x"}}},
		{"a tool declared wrong", tool.Change{Added: []*tool.Tool{named("x", "1"), tool.New[struct{}, int]("y", "", nil)}}},
		{"a nil tool", tool.Change{Updated: []*tool.Tool{nil}}},
	}
	for _, tc := range bad {
		if _, err := reg.Apply(tc.c); !errors.Is(err, tool.ErrInvalidTool) {
			t.Errorf("%s: err = %v, want ErrInvalidTool", tc.name, err)
		}
	}
	// Nothing of the failed changes was applied.
	if diff := cmp.Diff([]string{"a:2", "c:1", "d:1"}, specNames(reg.Specs())); diff != "" || reg.Version() != 4 {
		t.Errorf("a failed change changed the registry (version %d) (-want +got):\n%s", reg.Version(), diff)
	}
}

// A turn run under Pin sees the tools of its start: the model is offered
// them and the tool node runs them, whatever changes meanwhile.
func TestRegistryPinnedTurn(t *testing.T) {
	reg, err := tool.NewRegistry(named("search", "old"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := reg.Pin(context.Background())
	if _, err := reg.Apply(tool.Change{Updated: []*tool.Tool{named("search", "new")}, Added: []*tool.Tool{named("other", "x")}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"search:old"}, specNames(reg.View(ctx).Specs())); diff != "" {
		t.Errorf("pinned view (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"search:new", "other:x"}, specNames(reg.View(context.Background()).Specs())); diff != "" {
		t.Errorf("unpinned view (-want +got):\n%s", diff)
	}
	// A second Pin keeps the first.
	if got := reg.View(reg.Pin(ctx)).Version(); got != 1 {
		t.Errorf("re-pinned version %d, want 1", got)
	}

	g, err := graph.New(messages).AddNode("tools", tool.Node(reg, messages, tool.NodeOptions{}), nil).AddEdge(graph.START, "tools").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := llm.AI("", call("1", "search", `{}`), call("2", "other", `{}`))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want []string
	}{
		{"pinned", ctx, []string{"search: old", "other: error unknown_tool"}},
		{"current", context.Background(), []string{"search: new", "other: x"}},
	} {
		st, err := g.Invoke(tc.ctx, messages.Write(in), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range messages.Get(st)[1:] {
			r, err := tool.ResultOf[string](m)
			if err != nil {
				t.Fatal(err)
			}
			if r.Success {
				got = append(got, m.Name+": "+r.Data)
			} else {
				got = append(got, m.Name+": error "+r.ErrorCode)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: results (-want +got):\n%s", tc.name, diff)
		}
	}
}

// Readers never see part of a change: tools added and removed in pairs are
// always seen in pairs, while writers change them concurrently.
func TestRegistryConcurrentChanges(t *testing.T) {
	reg, _ := tool.NewRegistry()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				a, b := fmt.Sprintf("w%d_%d_a", w, i), fmt.Sprintf("w%d_%d_b", w, i)
				if _, err := reg.Apply(tool.Change{Added: []*tool.Tool{named(a, "x"), named(b, "x")}}); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if _, err := reg.Apply(tool.Change{Removed: []string{a, b}}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 200 {
				s := reg.Snapshot()
				names := map[string]bool{}
				for _, sp := range s.Specs() {
					names[sp.Name] = true
				}
				for n := range names {
					pair := strings.TrimSuffix(n, "_a") + "_b"
					if strings.HasSuffix(n, "_a") && !names[pair] {
						t.Errorf("version %d has %s without %s", s.Version(), n, pair)
						return
					}
				}
				if s.Len() != len(names) {
					t.Errorf("version %d: Len %d, %d specs", s.Version(), s.Len(), len(names))
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := len(reg.Names()), 4*25*2; got != want {
		t.Errorf("%d tools left, want %d", got, want)
	}
}

func TestNewRawKeepsSchemaAndValidates(t *testing.T) {
	schema := `{"type": "object", "properties": {"path": {"type": "string", "description": "a file"}, "n": {"type": "integer", "minimum": 1}}, "required": ["path"], "additionalProperties": false, "x-vendor": true}`
	var got []string
	tl := tool.NewRaw("read", "reads a file", json.RawMessage(schema), func(_ context.Context, args json.RawMessage) (any, error) {
		got = append(got, string(args))
		return map[string]any{"ok": true}, nil
	})
	if err := tl.Err(); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"path":{"type":"string","description":"a file"},"n":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false,"x-vendor":true}`
	if p := string(tl.Spec().Parameters); p != want {
		t.Errorf("parameters\n got %s\nwant %s", p, want)
	}
	r, err := tl.Run(context.Background(), json.RawMessage(`{"path": "a.txt"}`), 0)
	if err != nil || !r.Success {
		t.Fatalf("valid call: %+v, %v", r, err)
	}
	r, err = tl.Run(context.Background(), json.RawMessage(`{"n": 0, "extra": 1}`), 0)
	if !errors.Is(err, tool.ErrInvalidArgs) || r.ErrorCode != tool.CodeInvalidArgs {
		t.Fatalf("invalid call: %+v, %v", r, err)
	}
	var v tool.Violations
	if !errors.As(err, &v) || len(v) != 3 {
		t.Errorf("want three violations (unknown, missing, minimum), got %v", err)
	}
	if diff := cmp.Diff([]string{`{"path": "a.txt"}`}, got); diff != "" {
		t.Errorf("the function ran for (-want +got):\n%s", diff)
	}

	// A schema the validator cannot resolve is kept, and the arguments go
	// to the function unchecked.
	remote := `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`
	tl = tool.NewRaw("remote", "", json.RawMessage(remote), func(_ context.Context, args json.RawMessage) (any, error) { return "ran", nil })
	if r, err := tl.Run(context.Background(), json.RawMessage(`{"a": 1}`), 0); err != nil || r.Data != "ran" {
		t.Errorf("unresolvable schema: %+v, %v", r, err)
	}
	if string(tl.Spec().Parameters) != remote {
		t.Errorf("parameters %s", tl.Spec().Parameters)
	}
}

func TestNewRawRejects(t *testing.T) {
	fn := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name, schema string
		opts         tool.Options
	}{
		{"not JSON", `{"type":`, tool.Options{}},
		{"not an object schema", `{"type": "string"}`, tool.Options{}},
		{"an array", `[1]`, tool.Options{}},
		{"Handler without Then", `{"type": "object"}`, tool.Options{Handler: tool.HandleNode(nil)}},
		{"Options.Schema", `{"type": "object"}`, tool.Options{Schema: func(*jsonschema.Schema) {}}},
	} {
		if err := tool.NewRaw("t", "", json.RawMessage(tc.schema), fn, tc.opts).Err(); !errors.Is(err, tool.ErrInvalidTool) {
			t.Errorf("%s: err = %v, want ErrInvalidTool", tc.name, err)
		}
	}
	if err := tool.NewRaw("t", "", json.RawMessage(`{"type":"object"}`), nil).Err(); !errors.Is(err, tool.ErrInvalidTool) {
		t.Errorf("nil function: %v", err)
	}
}

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
