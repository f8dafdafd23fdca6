package tool

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// Handler is the body of a post-processing node: it reads the results of
// the tools that route to it and returns the state update they imply
// (document 000: keep last_recommended_places current). Build one with
// Handle or HandleNode.
type Handler struct {
	// out is the data type the handler reads; nil for HandleNode.
	out reflect.Type
	run func(ctx context.Context, s graph.State, results []llm.Message) (graph.Update, error)
}

// Handle builds a handler that receives the typed results of its tools'
// calls in the last tool step, in call order: successes and failures
// (Success false) alike. Wire checks that every tool routing to it returns
// an Out.
func Handle[Out any](fn func(ctx context.Context, s graph.State, results []Result[Out]) (graph.Update, error)) *Handler {
	return &Handler{
		out: reflect.TypeFor[Out](),
		run: func(ctx context.Context, s graph.State, msgs []llm.Message) (graph.Update, error) {
			rs := make([]Result[Out], 0, len(msgs))
			for _, m := range msgs {
				r, err := ResultOf[Out](m)
				if err != nil {
					return graph.Update{}, err
				}
				rs = append(rs, r)
			}
			return fn(ctx, s, rs)
		},
	}
}

// HandleNode builds a handler from a plain node, for post-processing that
// reads the state itself (LastCalls and ResultOf help).
func HandleNode(fn graph.NodeFunc) *Handler {
	return &Handler{run: func(ctx context.Context, s graph.State, _ []llm.Message) (graph.Update, error) {
		return fn(ctx, s)
	}}
}

// WireOptions name the nodes Wire connects.
type WireOptions struct {
	// Tools is the tool node's name (default "tools").
	Tools string
	// Agent is the node every path returns to (default "agent"). Wire
	// does not add it.
	Agent string
	// Node tunes the tool node.
	Node NodeOptions
}

// Wire adds to b the tool node running reg's tools, a node for every
// post-processing handler the tools declare (Options.Then), the
// conditional edge (document 000's route_after_tools) from the tool node to the handlers of
// the tools just called (to the agent when none has one), and an edge from
// every handler back to the agent. When tools of several handlers ran in
// one step, their handlers run in parallel and the agent runs once after
// them. The edge into the tool node is the caller's (react adds it).
//
// Handlers are read from the tools registered now; a tool added later runs
// but routes back to the agent.
func Wire(b *graph.Builder, reg *Registry, msgs *graph.MessagesChannel[llm.Message], opts WireOptions) error {
	if opts.Tools == "" {
		opts.Tools = "tools"
	}
	if opts.Agent == "" {
		opts.Agent = "agent"
	}
	// tool name -> handler node; handler node -> handler and its tools.
	route := map[string]string{}
	handlers := map[string]*Handler{}
	var order []string
	for _, t := range reg.Tools() {
		o := t.opts
		if o.Then == "" {
			continue
		}
		route[t.name] = o.Then
		if o.Handler != nil {
			if h, dup := handlers[o.Then]; dup && h != o.Handler {
				return fmt.Errorf("%w: post-processing node %q is declared by two tools with different handlers; declare it once and name it in Then of the others", ErrInvalidTool, o.Then)
			}
			handlers[o.Then] = o.Handler
		}
		if !slices.Contains(order, o.Then) {
			order = append(order, o.Then)
		}
	}
	for _, node := range order {
		h := handlers[node]
		var tools []string
		for name, n := range route {
			if n == node {
				tools = append(tools, name)
			}
		}
		slices.Sort(tools)
		if h == nil {
			return fmt.Errorf("%w: tools %v route to post-processing node %q but none declares its Handler", ErrInvalidTool, tools, node)
		}
		if h.out != nil {
			for _, name := range tools {
				t, _ := reg.Get(name)
				if t.out != h.out {
					return fmt.Errorf("%w: handler %q reads results of type %v, but tool %q returns %v", ErrInvalidTool, node, h.out, name, t.out)
				}
			}
		}
		b.AddNode(node, func(ctx context.Context, s graph.State) (graph.Update, error) {
			return h.run(ctx, s, LastCalls(msgs.Get(s), tools...))
		}, nil)

		b.AddEdge(node, opts.Agent)
	}
	b.AddNode(opts.Tools, Node(reg, msgs, opts.Node), nil)
	if len(order) == 0 {
		b.AddEdge(opts.Tools, opts.Agent)
		return nil
	}
	pathMap := map[string]string{opts.Agent: opts.Agent}
	for _, n := range order {
		pathMap[n] = n
	}
	b.AddConditionalEdges(opts.Tools, func(_ context.Context, s graph.State) (graph.Route, error) {
		var to []string
		for _, m := range LastCalls(msgs.Get(s)) {
			if n, ok := route[m.Name]; ok && !slices.Contains(to, n) {
				to = append(to, n)
			}
		}
		if len(to) == 0 {
			return graph.To(opts.Agent), nil
		}
		return graph.To(to...), nil
	}, &graph.BranchOptions{PathMap: pathMap})

	return nil
}
