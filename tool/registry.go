package tool

import (
	"fmt"
	"slices"
	"sync"

	"github.com/weftlabs/weft/llm"
)

// Registry holds tools by name. It is safe for concurrent use, so tools can
// be added and removed while a graph runs (MCP servers announce changes).
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*Tool
	order []string
	// specs is Specs' answer, made again when the tools change: an agent
	// asks for it at every model call.
	specs []llm.ToolSpec
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

// NewRegistry returns a registry holding tools; the first tool that cannot
// be added fails it.
func NewRegistry(tools ...*Tool) (*Registry, error) {
	r := &Registry{tools: map[string]*Tool{}}
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
	if t == nil {
		return fmt.Errorf("%w: a nil tool was added to the registry", ErrInvalidTool)
	}
	if t.err != nil {
		return t.err
	}
	if r.base != nil {
		if _, dup := r.base.Get(t.name); dup {
			return fmt.Errorf("%w: a tool named %q is already registered", ErrInvalidTool, t.name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = map[string]*Tool{}
	}
	if _, dup := r.tools[t.name]; dup {
		return fmt.Errorf("%w: a tool named %q is already registered", ErrInvalidTool, t.name)
	}
	r.tools[t.name] = t
	r.order = append(r.order, t.name)
	r.specs = nil
	return nil
}

// Remove unregisters the tool named name and reports whether it was there.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; !ok {
		return false
	}
	delete(r.tools, name)
	r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	r.specs = nil
	return true
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

// Tools returns the tools in the order they were added (those of the
// registry extended first).
func (r *Registry) Tools() []*Tool {
	var out []*Tool
	if r.base != nil {
		out = r.base.Tools()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, n := range r.order {
		out = append(out, r.tools[n])
	}
	return out
}

// Names returns the tools' names in the order they were added (those of
// the registry extended first).
func (r *Registry) Names() []string {
	var out []string
	if r.base != nil {
		out = r.base.Names()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append(out, r.order...)
}

// Specs describes the tools to a model, in the order they were added. The
// slice is made once per change of the tools and shared by every caller:
// do not modify it. (A registry made by Extend makes it at each call.)
func (r *Registry) Specs() []llm.ToolSpec {
	if r.base != nil {
		out := slices.Clip(r.base.Specs())
		r.mu.RLock()
		defer r.mu.RUnlock()
		for _, n := range r.order {
			out = append(out, r.tools[n].Spec())
		}
		return out
	}
	r.mu.RLock()
	specs := r.specs
	r.mu.RUnlock()
	if specs != nil {
		return specs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.specs == nil {
		r.specs = make([]llm.ToolSpec, len(r.order))
		for i, n := range r.order {
			r.specs[i] = r.tools[n].Spec()
		}
	}
	return r.specs
}
