package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// START and END are the virtual first and last nodes of every graph.
// INPUT names a run's input as the source of an update (UpdateState,
// BulkUpdateState): the input is recorded for START to apply in the next
// step, as a run's first checkpoint records it.
const (
	START = "__start__"
	END   = "__end__"
	INPUT = "__input__"
)

// NodeFunc is a node: it reads the state as of the start of the step and
// returns its writes.
type NodeFunc func(ctx context.Context, s State) (Update, error)

// Router decides where a conditional edge goes. It sees the state as of the
// start of the step plus the writes of the node it leaves from.
type Router func(ctx context.Context, s State) (Route, error)

// NodeOptions configures a node.
type NodeOptions struct {
	// Retry retries the node when it fails; nil means no retry.
	Retry *RetryPolicy
	// Timeout bounds one attempt of the node; 0 means no limit.
	Timeout time.Duration
	// Defer runs the node only when nothing else is left to run, for
	// example to aggregate after branches of different lengths.
	Defer bool
	// Cache serves the node's writes from the graph's cache for inputs it
	// has seen; it needs CompileOptions.Cache.
	Cache *CachePolicy
	// OnError is called when the node fails for good (after retries). If
	// it returns a nil error, its update stands in for the node's result:
	// its writes and Gotos apply, and the node's own edges and conditional
	// edges do not fire (as with LangGraph's error handler), so it decides
	// where the run goes.
	OnError func(ctx context.Context, s State, err error) (Update, error)
	// Destinations lists the nodes the node may Goto, for drawing and for
	// the reachability check. Without it, a node may go anywhere.
	Destinations []string
	// Input declares channels that Sends to this node may carry but that
	// the graph itself does not have.
	Input []Channel
}

// BranchOptions configures a conditional edge.
type BranchOptions struct {
	// PathMap maps the names the router returns to node names. When set,
	// the router may return only its keys.
	PathMap map[string]string
}

// NamedNode pairs a name with a node function, for AddSequence.
type NamedNode struct {
	Name string
	Fn   NodeFunc
}

type nodeSpec struct {
	name  string
	fn    NodeFunc
	sub   *Graph
	opts  NodeOptions
	order int
}

type branchSpec struct {
	from    string
	router  Router
	pathMap map[string]string
}

// Builder assembles a graph. Its methods record problems and Compile
// reports them all at once.
type Builder struct {
	channels []Channel
	byName   map[string]Channel
	nodes    map[string]*nodeSpec
	order    []string
	edges    [][2]string
	joins    []joinSpec
	branches []*branchSpec
	input    []string
	output   []string
	errs     []error
}

type joinSpec struct {
	from []string
	to   string
}

// New starts a graph whose state has the given channels.
func New(channels ...Channel) *Builder {
	b := &Builder{byName: make(map[string]Channel), nodes: make(map[string]*nodeSpec)}
	for _, c := range channels {
		b.addChannel(c)
	}
	return b
}

func (b *Builder) errorf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidGraph}, args...)...))
}

func (b *Builder) addChannel(c Channel) {
	if c == nil {
		b.errorf("a nil channel was passed to graph.New")
		return
	}
	name := c.Name()
	switch {
	case name == "":
		b.errorf("a channel has an empty name")
		return
	case strings.HasPrefix(name, "__") || strings.HasPrefix(name, "branch:to:") || strings.HasPrefix(name, "join:"):
		b.errorf("channel name %q is reserved: names starting with \"__\", \"branch:to:\" or \"join:\" are used by the runtime", name)
		return
	}
	if _, dup := b.byName[name]; dup {
		b.errorf("channel %q is declared twice", name)
		return
	}
	b.byName[name] = c
	b.channels = append(b.channels, c)
}

func (b *Builder) addNode(spec *nodeSpec) *Builder {
	name := spec.name
	switch {
	case name == "":
		b.errorf("a node has an empty name")
	case name == START || name == END || name == INPUT:
		b.errorf("node name %q is reserved", name)
	case strings.ContainsAny(name, "|:"):
		b.errorf("node name %q contains '|' or ':', which separate checkpoint namespaces", name)
	case b.nodes[name] != nil:
		b.errorf("node %q is added twice", name)
	default:
		spec.order = len(b.order)
		b.nodes[name] = spec
		b.order = append(b.order, name)
	}
	return b
}

// AddNode adds a node; opts may be nil for the defaults.
func (b *Builder) AddNode(name string, fn NodeFunc, opts *NodeOptions) *Builder {
	if fn == nil {
		b.errorf("node %q has a nil function", name)
		return b
	}
	return b.addNode(&nodeSpec{name: name, fn: fn, opts: deref(opts)})
}

// AddSubgraph adds a compiled graph as a node. It reads the parent's state
// for the channels it shares with the parent and writes its output channels
// back; it keeps its own checkpoints in a namespace of the parent's thread.
// opts may be nil for the defaults.
func (b *Builder) AddSubgraph(name string, g *Graph, opts *NodeOptions) *Builder {
	if g == nil {
		b.errorf("subgraph %q is nil", name)
		return b
	}
	return b.addNode(&nodeSpec{name: name, sub: g, opts: deref(opts)})
}

// deref returns *p, or the zero options when p is nil: every options
// parameter of the package is a pointer, nil meaning the defaults.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// AddEdge makes to run in the step after from.
func (b *Builder) AddEdge(from, to string) *Builder {
	if from == END {
		b.errorf("an edge cannot leave END (edge %q -> %q)", from, to)
	}
	if to == START {
		b.errorf("an edge cannot enter START (edge %q -> %q)", from, to)
	}
	b.edges = append(b.edges, [2]string{from, to})
	return b
}

// AddJoin makes to run once every node in from has run (a join edge; the
// sources may finish in different steps).
func (b *Builder) AddJoin(from []string, to string) *Builder {
	if len(from) == 0 {
		b.errorf("join into %q has no source nodes", to)
		return b
	}
	for _, f := range from {
		if f == START || f == END {
			b.errorf("join into %q cannot wait for %q", to, f)
		}
	}
	if to == START {
		b.errorf("a join cannot enter START")
	}
	b.joins = append(b.joins, joinSpec{from: slices.Clone(from), to: to})
	return b
}

// AddConditionalEdges routes from a node to the nodes router picks; opts
// may be nil for the defaults.
func (b *Builder) AddConditionalEdges(from string, router Router, opts *BranchOptions) *Builder {
	if router == nil {
		b.errorf("conditional edges from %q have a nil router", from)
		return b
	}
	if from == END {
		b.errorf("conditional edges cannot leave END")
	}
	br := &branchSpec{from: from, router: router, pathMap: deref(opts).PathMap}
	b.branches = append(b.branches, br)
	return b
}

// AddSequence adds nodes that run one after another, chained with edges.
func (b *Builder) AddSequence(nodes ...NamedNode) *Builder {
	for i, n := range nodes {
		b.AddNode(n.Name, n.Fn, nil)
		if i > 0 {
			b.AddEdge(nodes[i-1].Name, n.Name)
		}
	}
	return b
}

// Input restricts what a run's input (and a parent graph, for a subgraph)
// may write to these channels. By default every channel is input.
func (b *Builder) Input(chs ...Channel) *Builder {
	for _, c := range chs {
		b.input = append(b.input, c.Name())
	}
	return b
}

// Output restricts the final state (and what a subgraph writes back to its
// parent) to these channels. By default every channel is output.
func (b *Builder) Output(chs ...Channel) *Builder {
	for _, c := range chs {
		b.output = append(b.output, c.Name())
	}
	return b
}

// CompileOptions configures Compile.
type CompileOptions struct {
	// Checkpointer saves the graph's progress per thread. A subgraph
	// without one uses its parent's.
	Checkpointer *checkpoint.Saver
	// InterruptBefore and InterruptAfter stop a run before or after the
	// named nodes run (graph.All for every node).
	InterruptBefore, InterruptAfter []string
	// Cache stores the results of nodes with a CachePolicy.
	Cache Cache
	// Name names the graph in drawings and events.
	Name string
	// CheckpointerTimeout bounds each call a run makes to the Checkpointer
	// (0: DefaultCheckpointerTimeout). Reads also end when the caller's
	// context does; writes, which record work already done, get 2 s (or
	// this long, if shorter) to finish after the caller cancels. A call
	// that takes longer fails the run with ErrCheckpointerTimeout.
	CheckpointerTimeout time.Duration
	// Logger receives the problems the runtime reports without failing the
	// run (a node cache that fails to answer, see CacheError); nil means
	// slog.Default().
	Logger *slog.Logger
	// KeepState makes the graph, added to another with AddSubgraph, keep
	// its state across calls within the parent's thread (LangGraph's
	// checkpointer=True): each call applies its input on top of the state
	// the last call left, instead of starting empty. Its checkpoints live
	// in the namespace of the node's name (no task id), and its events
	// carry that namespace. It saves through the parent's checkpointer
	// unless Checkpointer is set. Such a subgraph must not run twice in
	// one step (two Sends to it), as both calls would share one state.
	KeepState bool
	// RecursionLimit is the graph's default for RunOptions.RecursionLimit
	// (0: DefaultRecursionLimit), for graphs whose runs are known to take
	// more supersteps than the default allows, such as a planner whose
	// plans run in many waves (LangGraph's with_config(recursion_limit)).
	// A run's own RecursionLimit still wins.
	RecursionLimit int
}

// All, in InterruptBefore or InterruptAfter, means every node.
const All = "*"

// Compile checks the graph and returns a runnable Graph. Every problem found
// is reported in one error. opts may be nil for the defaults.
func (b *Builder) Compile(opts *CompileOptions) (*Graph, error) {
	co := deref(opts)
	errs := slices.Clone(b.errs)
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidGraph}, args...)...))
	}
	if co.RecursionLimit < 0 {
		bad("RecursionLimit must be 0 (the default, %d) or positive, got %d", DefaultRecursionLimit, co.RecursionLimit)
	}
	if co.CheckpointerTimeout < 0 {
		bad("CheckpointerTimeout must be 0 (the default, %v) or positive, got %v", DefaultCheckpointerTimeout, co.CheckpointerTimeout)
	}
	known := func(n string) bool { return n == START || n == END || b.nodes[n] != nil }
	for _, n := range b.order {
		if _, clash := b.byName[n]; clash {
			bad("node %q has the same name as a channel; rename one of them", n)
		}
	}
	for _, e := range b.edges {
		for _, n := range e {
			if !known(n) {
				bad("edge %q -> %q names unknown node %q%s", e[0], e[1], n, b.suggest(n))
			}
		}
	}
	for _, j := range b.joins {
		for _, n := range append(slices.Clone(j.from), j.to) {
			if !known(n) {
				bad("join %v -> %q names unknown node %q%s", j.from, j.to, n, b.suggest(n))
			}
		}
	}
	for _, br := range b.branches {
		if !known(br.from) {
			bad("conditional edges leave unknown node %q%s", br.from, b.suggest(br.from))
		}
		for k, n := range br.pathMap {
			if !known(n) || n == START {
				bad("path map of conditional edges from %q maps %q to unknown node %q%s", br.from, k, n, b.suggest(n))
			}
		}
	}
	for name, n := range b.nodes {
		for _, d := range n.opts.Destinations {
			if !known(d) || d == START {
				bad("node %q lists unknown destination %q%s", name, d, b.suggest(d))
			}
		}
		if n.opts.Cache != nil && co.Cache == nil {
			bad("node %q has a CachePolicy but the graph is compiled without CompileOptions.Cache", name)
		}
	}
	for _, lst := range [][]string{co.InterruptBefore, co.InterruptAfter} {
		for _, n := range lst {
			if n != All && b.nodes[n] == nil {
				bad("interrupt names unknown node %q%s", n, b.suggest(n))
			}
		}
	}
	for _, c := range append(slices.Clone(b.input), b.output...) {
		if b.byName[c] == nil {
			bad("input/output channel %q is not a channel of the graph", c)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, b.checkReachable()...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return compile(b, co), nil
}

// checkReachable reports a graph with no entry and nodes that no path from
// START reaches.
func (b *Builder) checkReachable() []error {
	next := map[string][]string{}
	anywhere := map[string]bool{}
	for _, e := range b.edges {
		next[e[0]] = append(next[e[0]], e[1])
	}
	for _, j := range b.joins {
		for _, f := range j.from {
			next[f] = append(next[f], j.to)
		}
	}
	for _, br := range b.branches {
		if br.pathMap == nil {
			anywhere[br.from] = true
			continue
		}
		for _, n := range br.pathMap {
			next[br.from] = append(next[br.from], n)
		}
	}
	for name, n := range b.nodes {
		next[name] = append(next[name], n.opts.Destinations...)
	}
	if len(next[START]) == 0 && !anywhere[START] {
		return []error{fmt.Errorf("%w: the graph has no entry point: add an edge from graph.START to the first node", ErrInvalidGraph)}
	}
	seen := map[string]bool{START: true}
	queue := []string{START}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if anywhere[n] {
			for _, m := range b.order {
				if !seen[m] {
					seen[m] = true
					queue = append(queue, m)
				}
			}
		}
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	var errs []error
	for _, n := range b.order {
		if !seen[n] {
			errs = append(errs, fmt.Errorf("%w: node %q is unreachable: no path from START leads to it (if a node reaches it with Goto, list it in that node's NodeOptions.Destinations)", ErrInvalidGraph, n))
		}
	}
	return errs
}

func (b *Builder) suggest(n string) string {
	best, bestD := "", 3
	for _, m := range b.order {
		if d := editDistance(n, m); d < bestD {
			best, bestD = m, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
