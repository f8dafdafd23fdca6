package graph

// Drawable is a graph's structure as LangGraph's drawable graph JSON (what
// the LangGraph Server API's GET /assistants/{id}/graph returns and
// LangGraph Studio draws): its nodes, START and END among them, and its
// edges, conditional ones flagged.
type Drawable struct {
	Nodes []DrawableNode `json:"nodes"`
	Edges []DrawableEdge `json:"edges"`
}

// DrawableNode is a node of a Drawable. Type is "schema" for START and END
// and "runnable" for the graph's nodes; inside an expanded subgraph the id
// is "sub:inner".
type DrawableNode struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Data     map[string]any `json:"data"`
	Metadata map[string]any `json:"metadata,omitzero"`
}

// DrawableEdge is an edge of a Drawable. Data holds a conditional edge's
// path-map key when it differs from the node it leads to.
type DrawableEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Data        string `json:"data,omitempty"`
	Conditional bool   `json:"conditional"`
}

// DrawableOptions configures Drawable.
type DrawableOptions struct {
	// XRay expands subgraph nodes into their own nodes and edges, this
	// many levels deep; -1 expands every level, 0 none.
	XRay int
}

// Drawable returns the graph's structure as LangGraph's drawable graph:
// the same nodes and edges Mermaid draws (a conditional edge without a
// path map leads to every other node and END). opts may be nil for the
// defaults.
func (g *Graph) Drawable(opts *DrawableOptions) Drawable {
	o := deref(opts)
	out := Drawable{Nodes: []DrawableNode{}, Edges: []DrawableEdge{}}
	schemaNode := func(id string) DrawableNode {
		return DrawableNode{ID: id, Type: "schema", Data: map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema"}}
	}
	out.Nodes = append(out.Nodes, schemaNode(START))
	if g == nil || g.spec == nil {
		out.Nodes = append(out.Nodes, schemaNode(END))
		return out
	}
	items, edges := mmFlatten(g.spec, "", o.XRay)
	for _, n := range mmLeaves(items) {
		out.Nodes = append(out.Nodes, DrawableNode{
			ID:       n,
			Type:     "runnable",
			Data:     map[string]any{"id": []string{"langgraph", "RunnableCallable"}, "name": n},
			Metadata: map[string]any{},
		})
	}
	out.Nodes = append(out.Nodes, schemaNode(END))
	for _, e := range mmDedupe(edges) {
		out.Edges = append(out.Edges, DrawableEdge{Source: e.from, Target: e.to, Data: e.label, Conditional: e.dotted})
	}
	return out
}
