package graph

import (
	"cmp"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// Graph is a compiled graph, ready to run. It is safe for concurrent use:
// every run keeps its own state.
type Graph struct {
	name       string
	decls      map[string]Channel
	stateKeys  []string
	inputKeys  []string
	outputKeys []string
	nodes      map[string]*node
	nodeList   []*node // START first, then in the order added
	// channels names the channels of decls in sorted order, for the
	// steps and saves that go through them in order: sorted once here
	// instead of at each of them.
	channels []string
	// triggers maps a channel to the nodes it makes run.
	triggers map[string][]*node
	saver    *checkpoint.Saver
	before   map[string]bool
	after    map[string]bool
	cache    Cache
	// saverTimeout bounds each checkpointer call.
	saverTimeout time.Duration
	log          *slog.Logger
	// keepState: as a subgraph, the graph keeps its state per thread.
	keepState bool
	// recursionLimit is the runs' default RecursionLimit.
	recursionLimit int
	// spec keeps the builder's edges for drawing.
	spec *Builder
}

type node struct {
	name     string
	fn       NodeFunc
	sub      *Graph
	opts     NodeOptions
	triggers []string
	// trigger is the node's own trigger channel (triggerName), named once
	// here rather than at every Goto or routed edge to it.
	trigger  string
	edges    []write
	branches []*branchSpec
	// inputs are channels Sends to the node may carry beyond the graph's.
	inputs map[string]Channel
	hidden bool
	// lastRun is how long the node's last run took as one of several tasks
	// of a step, in nanoseconds; 0 until it has run so. Runs of the graph
	// share it.
	lastRun atomic.Int64
}

// short reports whether the node's last timed run took less than
// inlineBelow.
func (n *node) short() bool {
	d := n.lastRun.Load()
	return d > 0 && d < int64(inlineBelow)
}

func triggerName(n string) string { return "branch:to:" + n }

func joinName(from []string, to string) string {
	return "join:" + strings.Join(from, "+") + ":" + to
}

func compile(b *Builder, co CompileOptions) *Graph {
	g := &Graph{
		name:           co.Name,
		decls:          make(map[string]Channel, len(b.channels)+len(b.order)+2),
		nodes:          make(map[string]*node, len(b.order)+1),
		triggers:       make(map[string][]*node),
		saver:          co.Checkpointer,
		before:         toSet(co.InterruptBefore),
		after:          toSet(co.InterruptAfter),
		cache:          co.Cache,
		keepState:      co.KeepState,
		recursionLimit: cmp.Or(co.RecursionLimit, DefaultRecursionLimit),
		spec:           b,
	}
	g.log = co.Logger
	g.saverTimeout = co.CheckpointerTimeout
	if g.saverTimeout <= 0 {
		g.saverTimeout = DefaultCheckpointerTimeout
	}
	if g.name == "" {
		g.name = "LangGraph"
	}
	for _, c := range b.channels {
		g.decls[c.Name()] = c
		g.stateKeys = append(g.stateKeys, c.Name())
	}
	g.inputKeys = b.input
	if len(g.inputKeys) == 0 {
		g.inputKeys = g.stateKeys
	}
	g.outputKeys = b.output
	if len(g.outputKeys) == 0 {
		g.outputKeys = g.stateKeys
	}
	g.decls[START] = &internalChannel{START, func() slot { return &startSlot{g: g} }}
	g.decls[checkpoint.TasksChannel] = &internalChannel{checkpoint.TasksChannel, func() slot { return &sendsSlot{g: g} }}

	start := &node{name: START, hidden: true, triggers: []string{START}}
	g.nodes[START] = start
	g.nodeList = append(g.nodeList, start)
	for _, name := range b.order {
		spec := b.nodes[name]
		n := &node{name: name, fn: spec.fn, sub: spec.sub, opts: spec.opts}
		trig := triggerName(name)
		n.trigger = trig
		deferred := spec.opts.Defer
		g.decls[trig] = &internalChannel{trig, func() slot { return &trigger{afterFinish: deferred} }}
		n.triggers = []string{trig}
		if len(spec.opts.Input) > 0 {
			n.inputs = make(map[string]Channel)
			for _, c := range spec.opts.Input {
				n.inputs[c.Name()] = c
			}
		}
		g.nodes[name] = n
		g.nodeList = append(g.nodeList, n)
	}
	for _, e := range b.edges {
		if e[1] == END {
			continue
		}
		from := g.nodes[e[0]]
		from.edges = append(from.edges, write{triggerName(e[1]), true})
	}
	for _, j := range b.joins {
		if j.to == END {
			// A join into END writes nothing, like an edge to END.
			continue
		}
		ch := joinName(j.from, j.to)
		names := slices.Clone(j.from)
		deferred := b.nodes[j.to].opts.Defer
		g.decls[ch] = &internalChannel{ch, func() slot { return &barrier{names: names, afterFinish: deferred} }}
		to := g.nodes[j.to]
		if !slices.Contains(to.triggers, ch) {
			to.triggers = append(to.triggers, ch)
		}
		for _, f := range j.from {
			g.nodes[f].edges = append(g.nodes[f].edges, write{ch, f})
		}
	}
	for _, br := range b.branches {
		g.nodes[br.from].branches = append(g.nodes[br.from].branches, br)
	}
	for _, n := range g.nodeList {
		for _, t := range n.triggers {
			g.triggers[t] = append(g.triggers[t], n)
		}
	}
	g.channels = sortedKeys(g.decls)
	return g
}

func (g *Graph) logger() *slog.Logger {
	if g.log != nil {
		return g.log
	}
	return slog.Default()
}

func toSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Name returns the graph's name.
func (g *Graph) Name() string { return g.name }

// Nodes returns the names of the graph's nodes in the order they were added.
func (g *Graph) Nodes() []string {
	out := make([]string, 0, len(g.nodeList)-1)
	for _, n := range g.nodeList[1:] {
		out = append(out, n.name)
	}
	return out
}

// Subgraphs yields the graphs that run as nodes of g (added with a
// compiled *Graph as the node), by namespace: the node's name, and with
// recurse their own subgraphs' too, as "node|child" (LangGraph's
// get_subgraphs). A namespace other than "" yields only the subgraph at
// that exact namespace; a nested one needs recurse. Graphs a node invokes
// from inside its function are not among them.
func (g *Graph) Subgraphs(namespace string, recurse bool) iter.Seq2[string, *Graph] {
	return func(yield func(string, *Graph) bool) {
		g.subgraphs(namespace, recurse, yield)
	}
}

// subgraphs yields as Subgraphs does; false means the caller stopped, or
// the one namespace asked for was found.
func (g *Graph) subgraphs(namespace string, recurse bool, yield func(string, *Graph) bool) bool {
	for _, n := range g.nodeList[1:] {
		if n.sub == nil || (namespace != "" && namespace != n.name && !strings.HasPrefix(namespace, n.name+"|")) {
			continue
		}
		if namespace == n.name {
			yield(n.name, n.sub)
			return false
		}
		if namespace == "" && !yield(n.name, n.sub) {
			return false
		}
		if !recurse {
			continue
		}
		inner := ""
		if namespace != "" {
			inner = namespace[len(n.name)+1:]
		}
		more := n.sub.subgraphs(inner, true, func(child string, sg *Graph) bool {
			return yield(n.name+"|"+child, sg)
		})
		if !more || namespace != "" {
			return false
		}
	}
	return true
}

// Checkpointer returns the saver the graph was compiled with, if any.
func (g *Graph) Checkpointer() *checkpoint.Saver { return g.saver }

// decl finds the declaration of channel ch as seen by node (its extra
// inputs, or a subgraph's channels, count).
func (g *Graph) decl(nodeName, ch string) Channel {
	if c, ok := g.decls[ch]; ok {
		return c
	}
	if n := g.nodes[nodeName]; n != nil {
		if c, ok := n.inputs[ch]; ok {
			return c
		}
		if n.sub != nil {
			return n.sub.decls[ch]
		}
	}
	return nil
}

// ---------------------------------------------------------------- writes JSON

// encodedWrite is a write as saved in checkpoints.
type encodedWrite struct {
	Channel string          `json:"channel"`
	Value   json.RawMessage `json:"value"`
}

func encodeWrites(ws []write) ([]encodedWrite, error) {
	out := make([]encodedWrite, len(ws))
	for i, w := range ws {
		b, err := json.Marshal(w.v)
		if err != nil {
			return nil, fmt.Errorf("channel %q: cannot encode value of type %T: %w", w.ch, w.v, err)
		}
		out[i] = encodedWrite{w.ch, b}
	}
	return out, nil
}

func (g *Graph) decodeWrites(nodeName string, ews []encodedWrite) ([]write, error) {
	out := make([]write, len(ews))
	for i, ew := range ews {
		c := g.decl(nodeName, ew.Channel)
		if c == nil {
			return nil, fmt.Errorf("saved write to channel %q: the graph has no such channel (declare it in graph.New, or in NodeOptions.Input of node %q)", ew.Channel, nodeName)
		}
		v, err := c.newSlot().decodeWrite(ew.Value)
		if err != nil {
			return nil, fmt.Errorf("saved write to channel %q: %w", ew.Channel, err)
		}
		out[i] = write{ew.Channel, v}
	}
	return out, nil
}

// startSlot holds a run's input until the START task applies it.
type startSlot struct {
	g  *Graph
	ws []write
	ok bool
}

func (s *startSlot) get() (any, bool) { return s.ws, s.ok }

func (s *startSlot) hasValue() bool { return s.ok }
func (s *startSlot) update(key string, vals []any) (bool, error) {
	if len(vals) == 0 {
		if s.ok {
			s.ws, s.ok = nil, false
			return true, nil
		}
		return false, nil
	}
	ws, _ := vals[len(vals)-1].([]write)
	s.ws, s.ok = ws, true
	return true, nil
}
func (s *startSlot) consume() bool { return false }
func (s *startSlot) finish() bool  { return false }
func (s *startSlot) clone() slot   { c := *s; return &c }
func (s *startSlot) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if !s.ok {
		return nil, false, nil
	}
	ews, err := encodeWrites(s.ws)
	if err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(ews)
	return b, true, err
}
func (s *startSlot) unmarshal(data json.RawMessage) error {
	var ews []encodedWrite
	if err := json.Unmarshal(data, &ews); err != nil {
		return err
	}
	ws, err := s.g.decodeWrites(START, ews)
	if err != nil {
		return err
	}
	s.ws, s.ok = ws, true
	return nil
}
func (s *startSlot) decodeWrite(data json.RawMessage) (any, error) {
	var ews []encodedWrite
	if err := json.Unmarshal(data, &ews); err != nil {
		return nil, err
	}
	return s.g.decodeWrites(START, ews)
}

// sendsSlot holds the Sends of one step: the tasks to push in the next.
type sendsSlot struct {
	g     *Graph
	sends []Send
}

type encodedSend struct {
	Node   string         `json:"node"`
	Writes []encodedWrite `json:"arg"`
}

func (s *sendsSlot) get() (any, bool) { return s.sends, len(s.sends) > 0 }

func (s *sendsSlot) hasValue() bool { return len(s.sends) > 0 }
func (s *sendsSlot) update(key string, vals []any) (bool, error) {
	changed := len(s.sends) > 0
	s.sends = nil
	for _, v := range vals {
		sd, ok := v.(Send)
		if !ok {
			return false, fmt.Errorf("%w: %s takes Sends, got %T", ErrInvalidUpdate, key, v)
		}
		s.sends = append(s.sends, sd)
		changed = true
	}
	return changed, nil
}
func (s *sendsSlot) consume() bool { return false }
func (s *sendsSlot) finish() bool  { return false }
func (s *sendsSlot) clone() slot   { c := *s; return &c }
func (s *sendsSlot) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if len(s.sends) == 0 {
		return nil, false, nil
	}
	out := make([]encodedSend, len(s.sends))
	for i, sd := range s.sends {
		ews, err := encodeWrites(sd.Arg.writes)
		if err != nil {
			return nil, false, fmt.Errorf("send to %q: %w", sd.Node, err)
		}
		out[i] = encodedSend{sd.Node, ews}
	}
	b, err := json.Marshal(out)
	return b, true, err
}
func (s *sendsSlot) unmarshal(data json.RawMessage) error {
	var es []encodedSend
	if err := json.Unmarshal(data, &es); err != nil {
		return err
	}
	s.sends = nil
	for _, e := range es {
		sd, err := s.g.decodeSend(e)
		if err != nil {
			return err
		}
		s.sends = append(s.sends, sd)
	}
	return nil
}
func (s *sendsSlot) decodeWrite(data json.RawMessage) (any, error) {
	var e encodedSend
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, err
	}
	return s.g.decodeSend(e)
}

func (g *Graph) decodeSend(e encodedSend) (Send, error) {
	ws, err := g.decodeWrites(e.Node, e.Writes)
	if err != nil {
		return Send{}, fmt.Errorf("send to %q: %w", e.Node, err)
	}
	return Send{Node: e.Node, Arg: Update{writes: ws, input: true}}, nil
}

// MarshalJSON renders a Send as {"node", "arg"}.
func (s Send) MarshalJSON() ([]byte, error) {
	ews, err := encodeWrites(s.Arg.writes)
	if err != nil {
		return nil, err
	}
	return json.Marshal(encodedSend{s.Node, ews})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
