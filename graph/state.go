package graph

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
)

// State is a read-only view of a graph's channels: the state as of the start
// of a superstep, or a graph's final state. Read it through the channels
// that declared its keys, such as Plan.Get(s).
type State struct {
	values     map[string]any
	interrupts []Interruption
}

func lookup[T any](s State, key string) (T, bool) {
	v, ok := s.values[key]
	if !ok {
		var zero T
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}

// Has reports whether the channel named key has a value in s.
func (s State) Has(key string) bool { _, ok := s.values[key]; return ok }

// Keys returns the names of the channels that have a value, sorted.
func (s State) Keys() []string {
	keys := slices.Collect(maps.Keys(s.values))
	sort.Strings(keys)
	return keys
}

// Interrupts returns the interrupts a run stopped at, if it stopped for a
// human: Invoke's result carries them.
func (s State) Interrupts() []Interruption { return s.interrupts }

// MarshalJSON renders the state as a JSON object keyed by channel name.
// Its output is json.Marshal's (compact, HTML escaped), so that callers
// may use it as json.Marshal(s) without the copy and check that adds.
func (s State) MarshalJSON() ([]byte, error) {
	if len(s.interrupts) == 0 {
		return json.Marshal(s.values)
	}
	m := maps.Clone(s.values)
	if m == nil {
		m = map[string]any{}
	}
	m["__interrupt__"] = s.interrupts
	return json.Marshal(m)
}

// Update is what a node returns and what a run is started with: writes to
// channels, and optionally where to go next. Build one with a channel's
// Write method or Set, and combine several with And. The zero Update writes
// nothing; as a run's input it means "continue from the checkpoint".
type Update struct {
	writes []write
	gotos  []string
	sends  []Send
	parent *Update
	// input is set for any update built from writes, so an update that
	// writes nothing but was meant as input is not mistaken for "continue".
	input  bool
	resume *resume
	// command is set by AsCommand: the writes apply between steps rather
	// than through START.
	command bool
}

type write struct {
	ch string
	v  any
}

type resume struct {
	value any
	byID  map[string]any
}

func writeOf(ch string, v any) Update {
	return Update{writes: []write{{ch, v}}, input: true}
}

// Writer is a channel that takes writes of type U.
type Writer[U any] interface {
	Channel
	Write(v U) Update
}

// Set returns an update that writes v to ch: graph.Set(Plan, p).
func Set[U any](ch Writer[U], v U) Update { return ch.Write(v) }

// Input returns an empty update that still counts as input: a run started
// with it begins anew rather than continuing from a checkpoint.
func Input() Update { return Update{input: true} }

// And returns an update with the writes and routing of u followed by those
// of others.
func (u Update) And(others ...Update) Update {
	for _, o := range others {
		u.writes = append(slices.Clip(u.writes), o.writes...)
		u.gotos = append(slices.Clip(u.gotos), o.gotos...)
		u.sends = append(slices.Clip(u.sends), o.sends...)
		u.input = u.input || o.input
		u.command = u.command || o.command
		if o.parent != nil {
			if u.parent == nil {
				p := *o.parent
				u.parent = &p
			} else {
				p := u.parent.And(*o.parent)
				u.parent = &p
			}
		}
		if o.resume != nil {
			u.resume = o.resume
		}
	}
	return u
}

// Goto returns an update that makes the named nodes run in the next step, as
// a conditional edge would (LangGraph's Command(goto=...)).
func Goto(nodes ...string) Update { return Update{gotos: nodes, input: true} }

// Goto adds nodes to run next.
func (u Update) Goto(nodes ...string) Update { return u.And(Goto(nodes...)) }

// SendTo returns an update that starts one task of each Send in the next
// step, each with its own input (LangGraph's Command(goto=Send(...))).
func SendTo(sends ...Send) Update { return Update{sends: sends, input: true} }

// ToParent returns an update addressed to the graph that contains this one
// as a subgraph (LangGraph's Command(graph=Command.PARENT)): its writes and
// gotos apply there, as if the subgraph's node had returned them.
func (u Update) ToParent() Update { return Update{parent: &u, input: true} }

// Resume returns the input that resumes a run stopped by Interrupt: the
// interrupted node runs again and its pending Interrupt call returns v. With
// several pending interrupts, use ResumeByID.
func Resume(v any) Update { return Update{resume: &resume{value: v}} }

// ResumeByID resumes several pending interrupts, each with its own value,
// keyed by Interrupt.ID.
func ResumeByID(values map[string]any) Update { return Update{resume: &resume{byID: values}} }

// Writes returns the update's channel writes in order, for inspection: a
// channel name and the value written. A Messages channel write reads as the
// list of messages written ([]M), with removals as MessageRemoval values.
func (u Update) Writes() []Write {
	out := make([]Write, len(u.writes))
	for i, w := range u.writes {
		v := w.v
		if o, ok := v.(overwrite); ok {
			v = o.v
		}
		if p, ok := v.(interface{ public() any }); ok {
			v = p.public()
		}
		out[i] = Write{Channel: w.ch, Value: v}
	}
	return out
}

// Written returns the last value u writes to ch, and whether u writes it at
// all: what a node wrote, read back typed from a task's result
// (NodeUpdate.Update, TaskResult.Result, TaskState.Result) without going
// through JSON. A write of a zero value is still a write. For Messages and
// Topic channels, whose writes are lists, use Update.Writes.
func Written[U any](u Update, ch Writer[U]) (v U, ok bool) {
	name := ch.Name()
	for i := len(u.writes) - 1; i >= 0; i-- {
		w := u.writes[i]
		if w.ch != name {
			continue
		}
		x := w.v
		if o, isOver := x.(overwrite); isOver {
			x = o.v
		}
		if v, ok = x.(U); ok {
			return v, true
		}
	}
	return v, false
}

// IsZero reports whether the update writes and routes nothing.
func (u Update) IsZero() bool {
	return len(u.writes) == 0 && len(u.gotos) == 0 && len(u.sends) == 0 && u.parent == nil && u.resume == nil && !u.input
}

// MarshalJSON renders the writes as a JSON object of channel to value. A
// channel written several times maps to {"$writes": [v1, v2, ...]}, as in
// LangGraph's task results, so several writes never read as one write of
// a list.
func (u Update) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(u.writes))
	counts := map[string]int{}
	for _, w := range u.writes {
		counts[w.ch]++
	}
	repeated := map[string][]any{}
	for _, w := range u.Writes() {
		if counts[w.Channel] > 1 {
			repeated[w.Channel] = append(repeated[w.Channel], w.Value)
			m[w.Channel] = map[string][]any{"$writes": repeated[w.Channel]}
		} else {
			m[w.Channel] = w.Value
		}
	}
	return json.Marshal(m)
}

// Write is one channel write of an Update.
type Write struct {
	Channel string `json:"channel"`
	Value   any    `json:"value"`
}

// Send starts one task of Node in the next step with Arg as its input state
// instead of the graph's state: the map step of map-reduce.
type Send struct {
	Node string
	Arg  Update
}

// Route is what a conditional edge's router returns: the nodes to run next
// (or keys of its path map), and Sends.
type Route struct {
	nodes []string
	sends []Send
}

// To routes to the named nodes (END to stop this branch).
func To(nodes ...string) Route { return Route{nodes: nodes} }

// Sends routes to tasks with their own input.
func Sends(sends ...Send) Route { return Route{sends: sends} }

// And adds more destinations.
func (r Route) And(o Route) Route {
	r.nodes = append(slices.Clip(r.nodes), o.nodes...)
	r.sends = append(slices.Clip(r.sends), o.sends...)
	return r
}
