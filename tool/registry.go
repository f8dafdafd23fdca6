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
	mu      sync.RWMutex
	tools   map[string]*Tool
	order   []string
	version uint64
	// snap is the snapshot of the current version, made on demand and
	// dropped at every change: an agent asks for it at every model call.
	snap *Snapshot
	// base, when set, is the registry this one extends (see Extend): its
	// tools are this one's too, as they are at each call.
	base *Registry
}

// Extend returns a registry holding r's tools, as they are at each call
// (tools added to or removed from r later show through), and extra, whose
// names may not be r's. An agent uses it to add a tool of its own (a tool
// search) to a caller's registry without changing it. Add and Remove on
// the result change only its own tools; a tool of r's is found first.
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
				return c, fmt.Errorf("%w: a tool named %q is already registered", ErrInvalidTool, t.name)
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
			return c, fmt.Errorf("%w: tool %q cannot be updated: it is not registered", ErrInvalidTool, t.name)
		}
	}
	for _, name := range c.Removed {
		if _, ok := r.tools[name]; !ok {
			return c, fmt.Errorf("%w: tool %q cannot be removed: it is not registered", ErrInvalidTool, name)
		}
	}
	if c.Empty() {
		c.Version = r.version
		return c, nil
	}
	return r.apply(c), nil
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
	r.snap = nil
	c.Version = r.version
	return c
}

// Version returns the registry's version: 0 when it was never changed, one
// more with every change.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Get returns the tool named name.
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
// (A registry made by Extend makes it at each call, the tools of the
// registry extended first.)
func (r *Registry) Snapshot() *Snapshot {
	if r.base != nil {
		b := r.base.Snapshot()
		r.mu.RLock()
		defer r.mu.RUnlock()
		tools := make(map[string]*Tool, len(b.tools)+len(r.tools))
		for n, t := range r.tools {
			tools[n] = t
		}
		for n, t := range b.tools {
			tools[n] = t
		}
		return &Snapshot{version: r.version, tools: tools, order: append(slices.Clone(b.order), r.order...)}
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

type pinKey struct{ r *Registry }

// Pin returns a context that carries the registry's current snapshot, so
// that the agent turn run under it sees one set of tools from its first
// model call to its last tool call, whatever changes meanwhile: react's
// model node and the tool Node read the registry through View. A context
// that has a pin for r already keeps it.
func (r *Registry) Pin(ctx context.Context) context.Context {
	if _, ok := ctx.Value(pinKey{r}).(*Snapshot); ok {
		return ctx
	}
	return context.WithValue(ctx, pinKey{r}, r.Snapshot())
}

// View returns the snapshot pinned in ctx by Pin, or the current one.
func (r *Registry) View(ctx context.Context) *Snapshot {
	if s, ok := ctx.Value(pinKey{r}).(*Snapshot); ok {
		return s
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

// Version returns the registry version the snapshot shows.
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
