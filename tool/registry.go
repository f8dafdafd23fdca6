package tool

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/weftlabs/weft/llm"
)

// Registry holds tools by name. It is safe for concurrent use, and its tools
// can change while graphs run (MCP servers add and remove tools): every
// change gets a new version, a batch of changes is applied at once (Apply),
// and a Snapshot is an unchanging view of one version, so that an agent
// turn can work with one consistent set of tools (Pin).
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*Tool
	order []string
	// version counts the changes to this registry's own tools; Version
	// adds the base's.
	version uint64
	// snap is the snapshot of the current version, made on demand and
	// dropped at every change: an agent asks for it at every model call.
	snap *Snapshot
	// base, when set, is the registry this one extends (see Extend): its
	// tools are this one's too, as they are at each call.
	base *Registry
	// snaps are an extension's snapshots for its own current version, by
	// the base snapshot each combines: the base's current one and those
	// pinned by running turns (a few; see combine). The key is the
	// snapshot itself, not its version: an extension's versions are sums,
	// and a view of a pinned base could share one with another state.
	snaps map[*Snapshot]*Snapshot
}

// Extend returns a registry holding r's tools, as they are at each call
// (tools added to or removed from r later show through), and extra, whose
// names may not be r's. An agent uses it to add a tool of its own (a tool
// search) to a caller's registry without changing it.
//
// The extension's tools are r's, in r's order, then its own. Apply, Add
// and Remove on it change only its own tools, and an added tool may not
// take a name r has. Should r later gain a tool of the same name as one of
// the extension's own, r's tool is the one found, listed and run through
// the extension (the caller's tools are never hidden by an agent's
// additions); the extension's tool shows again once r drops it.
//
// Its Version is r's plus the number of changes to its own tools, so it
// grows whenever either changes. View and Pin on it show r's snapshot
// pinned in the context, or r's current one, with its own tools: a turn
// pinned on r, or on the extension, sees one set of tools throughout.
func (r *Registry) Extend(extra ...*Tool) (*Registry, error) {
	x := &Registry{tools: map[string]*Tool{}, base: r}
	for _, t := range extra {
		if err := x.Add(t); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// Change is a set of changes to a registry's tools, applied at once by
// Apply, and what a source of tools (tool/mcp) reports to those that follow
// it, such as a tool-retrieval index.
type Change struct {
	// Added are tools new to the registry.
	Added []*Tool
	// Updated replace the registered tools of the same names (a new
	// description or schema), keeping their place in the order.
	Updated []*Tool
	// Removed names the tools taken out.
	Removed []string
	// Version is the registry's version after the change; Apply sets it.
	Version uint64
}

// Empty reports whether c changes nothing.
func (c Change) Empty() bool {
	return len(c.Added) == 0 && len(c.Updated) == 0 && len(c.Removed) == 0
}

// NewRegistry returns a registry holding tools; the first tool that cannot
// be added fails it.
func NewRegistry(tools ...*Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]*Tool, len(tools))}
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers t. It fails with ErrInvalidTool when t was declared wrong
// or its name is taken.
func (r *Registry) Add(t *Tool) error {
	_, err := r.Apply(Change{Added: []*Tool{t}})
	return err
}

// Remove unregisters the tool named name and reports whether it was there.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; !ok {
		return false
	}
	r.apply(Change{Removed: []string{name}})
	return true
}

// Apply makes the changes of c at once, as one new version, and returns c
// with that version. Readers see the registry before or after the whole
// change, never a part of it. It fails with ErrInvalidTool, changing
// nothing, when a tool was declared wrong, an added tool's name is taken,
// an updated or removed tool is not registered, or a name appears twice in
// c. An empty change changes nothing and returns the current version.
func (r *Registry) Apply(c Change) (Change, error) {
	seen := map[string]bool{}
	check := func(name string) error {
		if seen[name] {
			return fmt.Errorf("%w: tool %q appears twice in one registry change", ErrInvalidTool, name)
		}
		seen[name] = true
		return nil
	}
	for _, list := range [][]*Tool{c.Added, c.Updated} {
		for _, t := range list {
			if t == nil {
				return c, fmt.Errorf("%w: a nil tool was added to the registry", ErrInvalidTool)
			}
			if t.err != nil {
				return c, t.err
			}
			if err := check(t.name); err != nil {
				return c, err
			}
		}
	}
	for _, name := range c.Removed {
		if err := check(name); err != nil {
			return c, err
		}
	}
	if r.base != nil {
		for _, t := range c.Added {
			if _, dup := r.base.Get(t.name); dup {
				return c, fmt.Errorf("%w: a tool named %q is already registered in the registry extended", ErrInvalidTool, t.name)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range c.Added {
		if _, dup := r.tools[t.name]; dup {
			return c, fmt.Errorf("%w: a tool named %q is already registered", ErrInvalidTool, t.name)
		}
	}
	for _, t := range c.Updated {
		if _, ok := r.tools[t.name]; !ok {
			return c, fmt.Errorf("%w: tool %q cannot be updated: %s", ErrInvalidTool, t.name, r.notOwn(t.name))
		}
	}
	for _, name := range c.Removed {
		if _, ok := r.tools[name]; !ok {
			return c, fmt.Errorf("%w: tool %q cannot be removed: %s", ErrInvalidTool, name, r.notOwn(name))
		}
	}
	if c.Empty() {
		c.Version = r.baseVersion() + r.version
		return c, nil
	}
	return r.apply(c), nil
}

// notOwn says why name is not one of r's own tools.
func (r *Registry) notOwn(name string) string {
	if r.base != nil {
		if _, ok := r.base.Get(name); ok {
			return "it belongs to the registry extended, and an extension changes only its own tools"
		}
	}
	return "it is not registered"
}

// baseVersion is the version of the registry r extends, 0 if none. r.mu
// may be held: locks are taken from an extension to its base, never back.
func (r *Registry) baseVersion() uint64 {
	if r.base == nil {
		return 0
	}
	return r.base.Version()
}

// apply makes a checked change; r.mu is held.
func (r *Registry) apply(c Change) Change {
	if r.tools == nil {
		r.tools = map[string]*Tool{}
	}
	if len(c.Removed) > 0 {
		gone := make(map[string]bool, len(c.Removed))
		for _, name := range c.Removed {
			delete(r.tools, name)
			gone[name] = true
		}
		r.order = slices.DeleteFunc(r.order, func(n string) bool { return gone[n] })
	}
	for _, t := range c.Updated {
		r.tools[t.name] = t
	}
	for _, t := range c.Added {
		r.tools[t.name] = t
		r.order = append(r.order, t.name)
	}
	r.version++
	r.snap, r.snaps = nil, nil
	c.Version = r.baseVersion() + r.version
	return c
}

// Version returns the registry's version: 0 when it was never changed, one
// more with every change. An extension's (Extend) is its base's plus the
// changes to its own tools: both only grow, so the sum changes whenever
// either does and no two states of the extension share one.
func (r *Registry) Version() uint64 {
	b := r.baseVersion()
	r.mu.RLock()
	defer r.mu.RUnlock()
	return b + r.version
}

// Get returns the tool named name; through an extension, the base's tool
// of that name comes first.
func (r *Registry) Get(name string) (*Tool, bool) {
	if r.base != nil {
		if t, ok := r.base.Get(name); ok {
			return t, true
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Tools returns the tools in the order they were added.
func (r *Registry) Tools() []*Tool { return r.Snapshot().Tools() }

// Names returns the tools' names in the order they were added.
func (r *Registry) Names() []string { return r.Snapshot().Names() }

// Specs describes the tools to a model, in the order they were added. The
// slice is made once per version and shared by every caller: do not
// modify it.
func (r *Registry) Specs() []llm.ToolSpec { return r.Snapshot().Specs() }

// Snapshot returns the registry's current tools as an unchanging view. It
// is made once per version: taking one when nothing changed costs a lock.
// An extension's (Extend) is its base's current snapshot with its own
// tools, made once per pair of versions.
func (r *Registry) Snapshot() *Snapshot {
	if r.base != nil {
		return r.combine(r.base.Snapshot())
	}
	r.mu.RLock()
	s := r.snap
	r.mu.RUnlock()
	if s != nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snap == nil {
		tools := make(map[string]*Tool, len(r.tools))
		for n, t := range r.tools {
			tools[n] = t
		}
		r.snap = &Snapshot{version: r.version, tools: tools, order: slices.Clone(r.order)}
	}
	return r.snap
}

// maxCombined bounds an extension's cached snapshots: the current one and
// a few pinned by turns still running; older pins are combined at each
// call rather than kept.
const maxCombined = 4

// combine returns the extension's snapshot of base snapshot b with its own
// current tools. Own tools of a name b has are left out: the base's win.
func (r *Registry) combine(b *Snapshot) *Snapshot {
	r.mu.RLock()
	s := r.snaps[b]
	r.mu.RUnlock()
	if s != nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.snaps[b]; s != nil {
		return s
	}
	tools := make(map[string]*Tool, len(b.tools)+len(r.tools))
	order := make([]string, len(b.order), len(b.order)+len(r.order))
	copy(order, b.order)
	for n, t := range b.tools {
		tools[n] = t
	}
	for _, n := range r.order {
		if _, shadowed := b.tools[n]; !shadowed {
			tools[n] = r.tools[n]
			order = append(order, n)
		}
	}
	s = &Snapshot{version: b.version + r.version, tools: tools, order: order}
	if r.snaps == nil {
		r.snaps = map[*Snapshot]*Snapshot{}
	}
	if len(r.snaps) >= maxCombined {
		// The oldest base snapshot goes (the current one is the newest);
		// one older than all those kept is not kept.
		var oldest *Snapshot
		for k := range r.snaps {
			if oldest == nil || k.version < oldest.version {
				oldest = k
			}
		}
		if b.version < oldest.version {
			return s
		}
		delete(r.snaps, oldest)
	}
	r.snaps[b] = s
	return s
}

type pinKey struct{ r *Registry }

// Pin returns a context that carries the registry's view (View), so that
// the agent turn run under it sees one set of tools from its first model
// call to its last tool call, whatever changes meanwhile: react's model
// node and the tool Node read the registry through View. A context that
// has a pin for r already keeps it; pinning an extension whose base is
// pinned in ctx keeps the base's pinned tools.
func (r *Registry) Pin(ctx context.Context) context.Context {
	if _, ok := ctx.Value(pinKey{r}).(*Snapshot); ok {
		return ctx
	}
	return context.WithValue(ctx, pinKey{r}, r.View(ctx))
}

// View returns the snapshot pinned in ctx by Pin, or the current one. For
// an extension (Extend) with no pin of its own in ctx, it is the base's
// View with the extension's own tools, so a turn pinned on the caller's
// registry sees the same tools through an agent's extension of it.
func (r *Registry) View(ctx context.Context) *Snapshot {
	if s, ok := ctx.Value(pinKey{r}).(*Snapshot); ok {
		return s
	}
	if r.base != nil {
		return r.combine(r.base.View(ctx))
	}
	return r.Snapshot()
}

// Snapshot is an unchanging view of a registry's tools at one version.
type Snapshot struct {
	version uint64
	tools   map[string]*Tool
	order   []string
	once    sync.Once
	specs   []llm.ToolSpec
}

// Version returns the registry version the snapshot shows; an extension's
// is the version of the base snapshot it shows plus the number of changes
// to the extension's own tools.
func (s *Snapshot) Version() uint64 { return s.version }

// Len returns the number of tools.
func (s *Snapshot) Len() int { return len(s.order) }

// Get returns the tool named name.
func (s *Snapshot) Get(name string) (*Tool, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// Tools returns the tools in the order they were added.
func (s *Snapshot) Tools() []*Tool {
	out := make([]*Tool, len(s.order))
	for i, n := range s.order {
		out[i] = s.tools[n]
	}
	return out
}

// Names returns the tools' names in the order they were added.
func (s *Snapshot) Names() []string { return slices.Clone(s.order) }

// Specs describes the tools to a model, in the order they were added. The
// slice is shared by every caller: do not modify it.
func (s *Snapshot) Specs() []llm.ToolSpec {
	s.once.Do(func() {
		s.specs = make([]llm.ToolSpec, len(s.order))
		for i, n := range s.order {
			s.specs[i] = s.tools[n].Spec()
		}
	})
	return s.specs
}
