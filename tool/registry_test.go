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
	if diff := cmp.Diff([]string{"a:A", "b:B", "own:mine"}, specNames(x.Specs())); diff != "" {
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

// An extension's version grows whenever its base's or its own tools
// change, and its snapshot is made once per pair of versions.
func TestExtendVersionsAndSnapshots(t *testing.T) {
	base, err := tool.NewRegistry(named("a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := base.Extend(named("own", "1"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() (uint64, error) // the version the change reports
		want   []string
	}{
		{"base adds", func() (uint64, error) {
			c, err := base.Apply(tool.Change{Added: []*tool.Tool{named("b", "1")}})
			return c.Version, err
		}, []string{"a:1", "b:1", "own:1"}},
		{"extension updates its own", func() (uint64, error) {
			c, err := x.Apply(tool.Change{Updated: []*tool.Tool{named("own", "2")}})
			return c.Version, err
		}, []string{"a:1", "b:1", "own:2"}},
		{"base updates and removes", func() (uint64, error) {
			c, err := base.Apply(tool.Change{Updated: []*tool.Tool{named("b", "2")}, Removed: []string{"a"}})
			return c.Version, err
		}, []string{"b:2", "own:2"}},
		{"extension adds", func() (uint64, error) {
			c, err := x.Apply(tool.Change{Added: []*tool.Tool{named("own2", "1")}})
			return c.Version, err
		}, []string{"b:2", "own:2", "own2:1"}},
	}
	prev := x.Snapshot()
	if diff := cmp.Diff([]string{"a:1", "own:1"}, specNames(prev.Specs())); diff != "" {
		t.Fatalf("first snapshot (-want +got):\n%s", diff)
	}
	if prev.Version() != x.Version() || x.Snapshot() != prev {
		t.Fatalf("an unchanged extension's snapshot is made again, or has version %d, not %d", prev.Version(), x.Version())
	}
	for _, st := range steps {
		before := prev.Specs()
		reported, err := st.change()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		s := x.Snapshot()
		if s.Version() <= prev.Version() {
			t.Errorf("%s: version %d after %d; want it to grow", st.name, s.Version(), prev.Version())
		}
		if x.Version() != s.Version() {
			t.Errorf("%s: Version %d, snapshot's %d", st.name, x.Version(), s.Version())
		}
		if x.Snapshot() != s {
			t.Errorf("%s: a second snapshot of the same versions was made again", st.name)
		}
		if diff := cmp.Diff(st.want, specNames(s.Specs())); diff != "" {
			t.Errorf("%s: snapshot (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(before, prev.Specs()); diff != "" {
			t.Errorf("%s: the previous snapshot changed (-before +after):\n%s", st.name, diff)
		}
		// A change made on the extension reports the extension's version,
		// one on the base the base's.
		want := base.Version()
		if strings.HasPrefix(st.name, "extension") {
			want = s.Version()
		}
		if reported != want {
			t.Errorf("%s: the change reported version %d, want %d", st.name, reported, want)
		}
		prev = s
	}
	// The extension changes only its own tools.
	for _, tc := range []struct {
		name string
		c    tool.Change
	}{
		{"add a base tool's name", tool.Change{Added: []*tool.Tool{named("b", "3")}}},
		{"update a base tool", tool.Change{Updated: []*tool.Tool{named("b", "3")}}},
		{"remove a base tool", tool.Change{Removed: []string{"b"}}},
	} {
		if _, err := x.Apply(tc.c); !errors.Is(err, tool.ErrInvalidTool) {
			t.Errorf("%s through the extension: %v, want ErrInvalidTool", tc.name, err)
		}
	}
	if x.Remove("b") {
		t.Error("Remove on the extension removed a base tool")
	}
	if diff := cmp.Diff([]string{"b:2"}, specNames(base.Specs())); diff != "" || x.Version() != prev.Version() {
		t.Errorf("refused changes changed something (version %d, was %d); base (-want +got):\n%s", x.Version(), prev.Version(), diff)
	}
}

// A base that gains a tool named like one of the extension's own wins:
// its tool is the one found, listed once and run, and the extension's
// shows again when the base drops it.
func TestExtendShadowedByBase(t *testing.T) {
	base, err := tool.NewRegistry(named("a", "base"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := base.Extend(named("search", "own"), named("z", "own"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := x.Pin(context.Background())
	if err := base.Add(named("search", "base")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a:base", "search:base", "z:own"}, specNames(x.Specs())); diff != "" {
		t.Errorf("specs with the base's tool (-want +got):\n%s", diff)
	}
	if got, ok := x.Get("search"); !ok || got.Spec().Description != "base" {
		t.Errorf("Get(search) = %v, %v; want the base's", got, ok)
	}
	if got, ok := x.Snapshot().Get("search"); !ok || got.Spec().Description != "base" {
		t.Errorf("Snapshot.Get(search) = %v, %v; want the base's", got, ok)
	}
	// The extension's own tool is still its own to change, while hidden.
	if _, err := x.Apply(tool.Change{Updated: []*tool.Tool{named("search", "own2")}}); err != nil {
		t.Fatalf("updating the hidden own tool: %v", err)
	}
	if diff := cmp.Diff([]string{"a:base", "search:base", "z:own"}, specNames(x.Specs())); diff != "" {
		t.Errorf("specs after the hidden tool's update (-want +got):\n%s", diff)
	}
	// A turn pinned before the base gained it keeps the extension's.
	if diff := cmp.Diff([]string{"a:base", "search:own", "z:own"}, specNames(x.View(pinned).Specs())); diff != "" {
		t.Errorf("pinned view (-want +got):\n%s", diff)
	}
	base.Remove("search")
	if diff := cmp.Diff([]string{"a:base", "search:own2", "z:own"}, specNames(x.Specs())); diff != "" {
		t.Errorf("specs once the base dropped it (-want +got):\n%s", diff)
	}
}

// A turn pinned on the base registry, or on the extension, sees one set of
// tools through the extension: in its views and in the tool node.
func TestExtendPinnedTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		pin  func(ctx context.Context, base, x *tool.Registry) context.Context
		// want are the view's tools and the node's results after the
		// base and the extension changed.
		want, results []string
	}{
		{
			"base pinned", func(ctx context.Context, base, _ *tool.Registry) context.Context { return base.Pin(ctx) },
			// The extension's own tools are its current ones.
			[]string{"search:old", "own:new"}, []string{"search: old", "own: new", "other: error unknown_tool"},
		},
		{
			"extension pinned", func(ctx context.Context, _, x *tool.Registry) context.Context { return x.Pin(ctx) },
			[]string{"search:old", "own:old"}, []string{"search: old", "own: old", "other: error unknown_tool"},
		},
		{
			"base, then extension pinned", func(ctx context.Context, base, x *tool.Registry) context.Context {
				ctx = base.Pin(ctx)
				// A base change between the two pins is not seen: the
				// extension's pin keeps the base's.
				if _, err := base.Apply(tool.Change{Added: []*tool.Tool{named("between", "x")}}); err != nil {
					t.Fatal(err)
				}
				return x.Pin(ctx)
			},
			[]string{"search:old", "own:old"}, []string{"search: old", "own: old", "other: error unknown_tool"},
		},
		{
			"none", func(ctx context.Context, _, _ *tool.Registry) context.Context { return ctx },
			[]string{"search:new", "other:x", "own:new"}, []string{"search: new", "own: new", "other: x"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := tool.NewRegistry(named("search", "old"))
			if err != nil {
				t.Fatal(err)
			}
			x, err := base.Extend(named("own", "old"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := tc.pin(context.Background(), base, x)
			if _, err := base.Apply(tool.Change{Updated: []*tool.Tool{named("search", "new")}, Added: []*tool.Tool{named("other", "x")}}); err != nil {
				t.Fatal(err)
			}
			if _, err := x.Apply(tool.Change{Updated: []*tool.Tool{named("own", "new")}}); err != nil {
				t.Fatal(err)
			}
			got := specNames(x.View(ctx).Specs())
			if _, ok := base.View(ctx).Get("between"); ok {
				got = append(got, "between")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
			if v1, v2 := x.View(ctx), x.View(ctx); v1 != v2 {
				t.Error("two views of one context are two snapshots")
			}
			g, err := graph.New(messages).AddNode("tools", tool.Node(x, messages, tool.NodeOptions{}), nil).AddEdge(graph.START, "tools").Compile(nil)
			if err != nil {
				t.Fatal(err)
			}
			st, err := g.Invoke(ctx, messages.Write(llm.AI("", call("1", "search", `{}`), call("2", "own", `{}`), call("3", "other", `{}`))), nil)
			if err != nil {
				t.Fatal(err)
			}
			var results []string
			for _, m := range messages.Get(st)[1:] {
				r, err := tool.ResultOf[string](m)
				if err != nil {
					t.Fatal(err)
				}
				if r.Success {
					results = append(results, m.Name+": "+r.Data)
				} else {
					results = append(results, m.Name+": error "+r.ErrorCode)
				}
			}
			if diff := cmp.Diff(tc.results, results); diff != "" {
				t.Errorf("tool node results (-want +got):\n%s", diff)
			}
		})
	}
}

// Readers of an extension never see part of a change of either registry,
// nor a tool twice, while both change concurrently.
func TestExtendConcurrentChanges(t *testing.T) {
	base, _ := tool.NewRegistry()
	x, err := base.Extend()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w, reg := range []*tool.Registry{base, x, base, x} {
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
	for r := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			if r%2 == 1 {
				ctx = base.Pin(ctx)
			}
			var last uint64
			for range 200 {
				s := x.View(ctx)
				if r%2 == 0 && s.Version() < last {
					t.Errorf("version went back from %d to %d", last, s.Version())
					return
				}
				last = s.Version()
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
					t.Errorf("version %d: Len %d, %d distinct specs", s.Version(), s.Len(), len(names))
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := len(x.Names()), 4*25*2; got != want {
		t.Errorf("%d tools left, want %d", got, want)
	}
	if got, want := x.Version(), uint64(4*75); got != want {
		t.Errorf("extension version %d, want %d (every change of either)", got, want)
	}
}

// An extension of an extension combines all three registries, and a turn
// pinned on the innermost sees its pinned tools with the others' current
// ones, even when those changed after the same sum of versions was seen.
func TestExtendOfExtension(t *testing.T) {
	base, err := tool.NewRegistry(named("a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	mid, err := base.Extend(named("m", "1"))
	if err != nil {
		t.Fatal(err)
	}
	outer, err := mid.Extend(named("o", "1"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := base.Pin(context.Background())
	if err := base.Add(named("b", "1")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a:1", "b:1", "m:1", "o:1"}, specNames(outer.View(context.Background()).Specs())); diff != "" {
		t.Errorf("current view (-want +got):\n%s", diff)
	}
	// mid's own change makes mid's view of the pinned base (base 1, mid 2)
	// have the version its current view had before (base 2, mid 1).
	if _, err := mid.Apply(tool.Change{Updated: []*tool.Tool{named("m", "2")}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a:1", "m:2", "o:1"}, specNames(outer.View(pinned).Specs())); diff != "" {
		t.Errorf("view pinned on the innermost (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a:1", "b:1", "m:2", "o:1"}, specNames(outer.Specs())); diff != "" {
		t.Errorf("current specs (-want +got):\n%s", diff)
	}
	if got, want := outer.Version(), base.Version()+2+1; got != want {
		t.Errorf("outer version %d, want %d", got, want)
	}
}

// Turns pinned at more base versions than an extension keeps combined
// still see their own tools, and the current view stays cached.
func TestExtendManyPins(t *testing.T) {
	base, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	x, err := base.Extend(named("own", "1"))
	if err != nil {
		t.Fatal(err)
	}
	var pins []context.Context
	for i := range 8 {
		if err := base.Add(named(fmt.Sprintf("t%d", i), "1")); err != nil {
			t.Fatal(err)
		}
		pins = append(pins, base.Pin(context.Background()))
	}
	current := x.Snapshot()
	for round := range 2 {
		for i, ctx := range pins {
			if got := x.View(ctx).Len(); got != i+2 {
				t.Errorf("round %d: the turn pinned at base version %d sees %d tools, want %d", round, i+1, got, i+2)
			}
		}
		if x.Snapshot() != current {
			t.Errorf("round %d: the current snapshot was made again", round)
		}
	}
}
