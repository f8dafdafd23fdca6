package graph

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// StreamMode selects a kind of event a run streams.
type StreamMode string

// Stream modes, as in LangGraph.
const (
	// StreamValues: the whole state after each step that changed it.
	StreamValues StreamMode = "values"
	// StreamUpdates: each node's writes as it finishes.
	StreamUpdates StreamMode = "updates"
	// StreamMessages: messages and model tokens, with the node that made them.
	StreamMessages StreamMode = "messages"
	// StreamCustom: whatever nodes pass to Emit.
	StreamCustom StreamMode = "custom"
	// StreamTasks: each task's start and result.
	StreamTasks StreamMode = "tasks"
	// StreamCheckpoints: each checkpoint as it is made.
	StreamCheckpoints StreamMode = "checkpoints"
	// StreamDebug: checkpoints and tasks, with step and time.
	StreamDebug StreamMode = "debug"
	// StreamTools: each tool call's start, progress, end or failure, as
	// the tool package reports them (ToolEvent).
	StreamTools StreamMode = "tools"
	// StreamLifecycle: each subgraph's start and end (LifecycleEvent), at
	// every depth, whether or not RunOptions.Subgraphs is set.
	StreamLifecycle StreamMode = "lifecycle"
)

type modeSet uint16

var modeBits = map[StreamMode]modeSet{
	StreamValues: 1 << 0, StreamUpdates: 1 << 1, StreamMessages: 1 << 2, StreamCustom: 1 << 3,
	StreamTasks: 1 << 4, StreamCheckpoints: 1 << 5, StreamDebug: 1 << 6,
	StreamTools: 1 << 7, StreamLifecycle: 1 << 8,
}

func modesOf(ms []StreamMode) modeSet {
	var s modeSet
	for _, m := range ms {
		s |= modeBits[m]
	}
	return s
}

func (s modeSet) has(m StreamMode) bool { return s&modeBits[m] != 0 }

// Event is one item of a run's stream.
type Event struct {
	// Mode is the kind of event; Data's type follows from it: State
	// (values), NodeUpdate (updates), MessageEvent (messages), the value
	// a node emitted (custom), TaskStart or TaskResult (tasks),
	// StateSnapshot (checkpoints), DebugEvent (debug), ToolEvent (tools),
	// LifecycleEvent (lifecycle).
	Mode StreamMode `json:"mode"`
	// Namespace is empty for the graph itself and names the subgraph
	// task path ("node:taskid", ...) for subgraph events. A lifecycle
	// event's is the namespace of the subgraph it is about.
	Namespace []string `json:"ns,omitempty"`
	Data      any      `json:"data"`
}

// Values returns a values event's state; ok is false for other events.
func (e Event) Values() (s State, ok bool) { return eventData[State](e, StreamValues) }

// Update returns an updates event's node and writes; ok is false for other
// events.
func (e Event) Update() (u NodeUpdate, ok bool) { return eventData[NodeUpdate](e, StreamUpdates) }

// Message returns a messages event's message and the node that made it; ok
// is false for other events. MessageAs gives the message typed.
func (e Event) Message() (m MessageEvent, ok bool) { return eventData[MessageEvent](e, StreamMessages) }

// TaskStart returns a tasks event sent when a task starts; ok is false for
// other events.
func (e Event) TaskStart() (ts TaskStart, ok bool) { return eventData[TaskStart](e, StreamTasks) }

// TaskResult returns a tasks event sent when a task ends; ok is false for
// other events.
func (e Event) TaskResult() (tr TaskResult, ok bool) { return eventData[TaskResult](e, StreamTasks) }

// Checkpoint returns a checkpoints event's snapshot; ok is false for other
// events.
func (e Event) Checkpoint() (snap StateSnapshot, ok bool) {
	return eventData[StateSnapshot](e, StreamCheckpoints)
}

// Debug returns a debug event; ok is false for other events.
func (e Event) Debug() (d DebugEvent, ok bool) { return eventData[DebugEvent](e, StreamDebug) }

// Tool returns a tools event; ok is false for other events.
func (e Event) Tool() (te ToolEvent, ok bool) { return eventData[ToolEvent](e, StreamTools) }

// Lifecycle returns a lifecycle event; ok is false for other events.
func (e Event) Lifecycle() (le LifecycleEvent, ok bool) {
	return eventData[LifecycleEvent](e, StreamLifecycle)
}

// Interrupts returns the interrupts of an "__interrupt__" updates event
// (empty for a static breakpoint); ok is false for any other event.
func (e Event) Interrupts() (its []Interruption, ok bool) {
	u, ok := e.Update()
	if !ok || u.Node != "__interrupt__" {
		return nil, false
	}
	return u.Interrupts, true
}

// CustomAs returns a custom event's value (what a node passed to Emit) as
// a T; ok is false for other events and for values of another type.
func CustomAs[T any](e Event) (v T, ok bool) { return eventData[T](e, StreamCustom) }

// MessageAs returns a messages event's message as an M (a whole message or
// a model's token chunk, whichever the node streamed); ok is false for
// other events and for messages of another type.
func MessageAs[M any](e Event) (m M, node string, ok bool) {
	me, ok := e.Message()
	if !ok {
		return m, "", false
	}
	m, ok = me.Message.(M)
	return m, me.Node, ok
}

func eventData[T any](e Event, mode StreamMode) (T, bool) {
	if e.Mode != mode {
		var zero T
		return zero, false
	}
	v, ok := e.Data.(T)
	return v, ok
}

// NodeUpdate is an updates event: what one node wrote. A run that stops
// for a human reports Node "__interrupt__" with the interrupts.
type NodeUpdate struct {
	Node       string
	Update     Update
	Interrupts []Interruption
	// Cached means the writes were not computed now: they were saved by an
	// earlier attempt of the same step, or served from the cache.
	Cached bool
}

// MarshalJSON renders {node: writes} as LangGraph does.
func (u NodeUpdate) MarshalJSON() ([]byte, error) {
	if u.Node == "__interrupt__" {
		its := u.Interrupts
		if its == nil {
			its = []Interruption{}
		}
		return json.Marshal(map[string]any{"__interrupt__": its})
	}
	var v any = u.Update
	if len(u.Update.writes) == 0 {
		v = nil
	} else if ws := u.Update.Writes(); repeatsChannel(ws) {
		// A channel written more than once: as in LangGraph, each write
		// is its own {channel: value}, in order, so that several writes
		// do not read as one write of a list.
		l := make([]map[string]any, len(ws))
		for i, w := range ws {
			l[i] = map[string]any{w.Channel: w.Value}
		}
		v = l
	}
	m := map[string]any{u.Node: v}
	if u.Cached {
		m["__metadata__"] = map[string]bool{"cached": true}
	}
	return json.Marshal(m)
}

func repeatsChannel(ws []Write) bool {
	seen := make(map[string]bool, len(ws))
	for _, w := range ws {
		if seen[w.Channel] {
			return true
		}
		seen[w.Channel] = true
	}
	return false
}

// MessageEvent is a messages event: a message or a model token chunk, and
// the node it came from.
type MessageEvent struct {
	Message any    `json:"message"`
	Node    string `json:"langgraph_node"`
	Step    int    `json:"langgraph_step"`
	TaskID  string `json:"task_id"`
	// Triggers are the channels that made the task run, Path its place in
	// the step (["__pregel_pull", node], or ["__pregel_push", index] for
	// a Send) and Namespace its checkpoint namespace ("node:taskid", with
	// its parents' before it inside a subgraph): LangGraph's
	// langgraph_triggers, langgraph_path and langgraph_checkpoint_ns.
	// The events of one task share Triggers and Path: read them only.
	Triggers  []string `json:"langgraph_triggers,omitempty"`
	Path      []any    `json:"langgraph_path,omitempty"`
	Namespace string   `json:"langgraph_checkpoint_ns,omitempty"`
}

// TaskStart is a tasks event sent when a task starts.
type TaskStart struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Step     int      `json:"step"`
	Triggers []string `json:"triggers"`
	Input    State    `json:"input"`
}

// TaskResult is a tasks event sent when a task ends.
type TaskResult struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Step       int            `json:"step"`
	Error      string         `json:"error,omitempty"`
	Result     Update         `json:"result"`
	Interrupts []Interruption `json:"interrupts"`
}

// DebugEvent is a debug event: a checkpoint ("checkpoint"), a task start
// ("task") or a task result ("task_result").
type DebugEvent struct {
	Type      string    `json:"type"`
	Step      int       `json:"step"`
	Timestamp time.Time `json:"timestamp"`
	Payload   any       `json:"payload"`
}

// send passes ev to the consumer, unless it stopped reading.
func (s *streamSink) send(ev Event) {
	if s.emit == nil || s.stopped {
		return
	}
	if !s.emit(ev) {
		s.stopped = true
	}
}

func (r *run) emitValues(interrupts []Interruption) {
	if r.modes.has(StreamValues) {
		r.send(Event{Mode: StreamValues, Namespace: r.path, Data: r.output(interrupts)})
	}
}

func (r *run) emitUpdate(node string, u Update, t *task, cached bool) {
	if !r.modes.has(StreamUpdates) {
		return
	}
	nu := NodeUpdate{Node: node, Update: u, Cached: cached || (t != nil && t.cached)}
	if node == "__interrupt__" && t != nil {
		nu.Interrupts = t.interrupts
	}
	r.send(Event{Mode: StreamUpdates, Namespace: r.path, Data: nu})
}

func (r *run) emitTaskStarts(tasks []*task) {
	if !r.modes.has(StreamTasks) && !r.modes.has(StreamDebug) {
		return
	}
	for _, t := range tasks {
		if t.node.hidden {
			continue
		}
		ts := TaskStart{ID: t.id, Name: t.name, Step: r.step, Triggers: t.triggers, Input: t.input}
		if r.modes.has(StreamTasks) {
			r.send(Event{Mode: StreamTasks, Namespace: r.path, Data: ts})
		}
		if r.modes.has(StreamDebug) {
			r.send(Event{Mode: StreamDebug, Namespace: r.path, Data: DebugEvent{Type: "task", Step: r.step, Timestamp: time.Now().UTC(), Payload: ts}})
		}
	}
}

func (r *run) emitTaskResult(t *task) {
	if !r.modes.has(StreamTasks) && !r.modes.has(StreamDebug) {
		return
	}
	res := TaskResult{ID: t.id, Name: t.name, Step: r.step, Interrupts: t.interrupts}
	if res.Interrupts == nil {
		res.Interrupts = []Interruption{}
	}
	if t.err != nil && !isInterrupt(t.err) {
		res.Error = t.err.Error()
	} else {
		res.Result = t.update
	}
	if r.modes.has(StreamTasks) {
		r.send(Event{Mode: StreamTasks, Namespace: r.path, Data: res})
	}
	if r.modes.has(StreamDebug) {
		r.send(Event{Mode: StreamDebug, Namespace: r.path, Data: DebugEvent{Type: "task_result", Step: r.step, Timestamp: time.Now().UTC(), Payload: res}})
	}
}

func (r *run) emitCheckpoint(tasks []*task) {
	snap := r.snapshotOf(tasks, false)
	if r.modes.has(StreamCheckpoints) {
		r.send(Event{Mode: StreamCheckpoints, Namespace: r.path, Data: snap})
	}
	if r.modes.has(StreamDebug) {
		r.send(Event{Mode: StreamDebug, Namespace: r.path, Data: DebugEvent{Type: "checkpoint", Step: r.step - 1, Timestamp: r.cpTS, Payload: snap}})
	}
}

// messageList is implemented by the writes of a Messages channel.
type messageList interface{ messageItems() []any }

func (o msgOps[M]) messageItems() []any {
	out := make([]any, 0, len(o))
	for _, op := range o {
		if op.Remove == "" {
			out = append(out, op.Msg)
		}
	}
	return out
}

type identified interface{ MessageID() string }

// emitWrittenMessages streams the messages a node wrote that it did not
// already stream as tokens and that were not in its input.
func (r *run) emitWrittenMessages(t *task) {
	if !r.modes.has(StreamMessages) {
		return
	}
	for _, w := range t.update.writes {
		ml, ok := w.v.(messageList)
		if !ok {
			continue
		}
		var inputIDs map[string]bool
		for _, m := range ml.messageItems() {
			id := ""
			if im, ok := m.(identified); ok {
				id = im.MessageID()
			}
			if id != "" {
				if t.streamed[id] {
					continue
				}
				if inputIDs == nil {
					inputIDs = inputMessageIDs(t.input, w.ch)
				}
				if inputIDs[id] {
					continue
				}
			}
			r.send(Event{Mode: StreamMessages, Namespace: r.path, Data: t.messageEvent(m, r.step)})
		}
	}
}

func inputMessageIDs(s State, ch string) map[string]bool {
	ids := map[string]bool{}
	v, ok := s.values[ch]
	if !ok {
		return ids
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return ids
	}
	for i := range rv.Len() {
		if im, ok := rv.Index(i).Interface().(identified); ok {
			ids[im.MessageID()] = true
		}
	}
	return ids
}

// Emit sends v to the run's custom stream. Outside a node, or when the
// stream does not include custom events, it does nothing. It may be called
// from a goroutine the node started, until the node returns.
func Emit(ctx context.Context, v any) {
	tc := taskFrom(ctx)
	if tc == nil || !tc.r.modes.has(StreamCustom) || tc.emit == nil || !tc.live() {
		return
	}
	tc.emit(Event{Mode: StreamCustom, Namespace: tc.r.path, Data: v})
}

// StreamMessage sends a message or a model token chunk to the run's
// messages stream, tagged with the node. A message whose id was streamed
// this way is not streamed again when the node writes it to a Messages
// channel. Model code calls this for each token chunk it receives.
func StreamMessage(ctx context.Context, msg any) {
	tc := taskFrom(ctx)
	if tc == nil || !tc.r.modes.has(StreamMessages) || tc.emit == nil {
		return
	}
	tc.mu.Lock()
	if tc.dead {
		tc.mu.Unlock()
		return
	}
	if im, ok := msg.(identified); ok && im.MessageID() != "" {
		if tc.streamed == nil {
			tc.streamed = map[string]bool{}
		}
		tc.streamed[im.MessageID()] = true
	}
	tc.mu.Unlock()
	tc.emit(Event{Mode: StreamMessages, Namespace: tc.r.path, Data: tc.t.messageEvent(msg, tc.step)})
}

// StateSnapshot is a graph's state at one checkpoint.
type StateSnapshot struct {
	// Values is the state.
	Values State `json:"values"`
	// Next names the nodes that run in the next step.
	Next []string `json:"next"`
	// Config addresses the checkpoint.
	Config checkpoint.Config `json:"config"`
	// Parent addresses the checkpoint before it, if any.
	Parent   *checkpoint.Config  `json:"parent_config"`
	Metadata checkpoint.Metadata `json:"metadata"`
	// CreatedAt is when the checkpoint was made.
	CreatedAt time.Time `json:"created_at"`
	// Tasks are the tasks of the next step, with their results, errors
	// and interrupts where a failed or interrupted attempt left them.
	Tasks []TaskState `json:"tasks"`
	// Interrupts lists every pending interrupt of the tasks.
	Interrupts []Interruption `json:"interrupts"`
}

// TaskState is a pending task of a StateSnapshot.
type TaskState struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Error      string         `json:"error,omitempty"`
	Interrupts []Interruption `json:"interrupts"`
	// Result holds the task's writes when it already succeeded.
	Result *Update `json:"result,omitempty"`
	// Namespace is a subgraph task's checkpoint namespace.
	Namespace string `json:"checkpoint_ns,omitempty"`
	// State is a subgraph task's own state, with StateOptions.Subgraphs.
	State *StateSnapshot `json:"state,omitempty"`
}

// snapshotOf describes the current checkpoint and its next tasks.
func (r *run) snapshotOf(tasks []*task, applyPending bool) StateSnapshot {
	snap := StateSnapshot{
		Config:    checkpoint.Config{ThreadID: r.opts.ThreadID, Namespace: r.ns, CheckpointID: r.cpID},
		Metadata:  r.cpMeta,
		CreatedAt: r.cpTS,
		Next:      []string{},
		Tasks:     []TaskState{},
	}
	if r.cpParent != "" {
		snap.Parent = &checkpoint.Config{ThreadID: r.opts.ThreadID, Namespace: r.ns, CheckpointID: r.cpParent}
	}
	errs := map[string]string{}
	intr := map[string][]Interruption{}
	for _, pw := range r.pending {
		switch pw.Channel {
		case checkpoint.ErrorChannel:
			var s string
			_ = json.Unmarshal(pw.Value, &s)
			errs[pw.TaskID] = s
		case checkpoint.InterruptChannel:
			var its []Interruption
			_ = json.Unmarshal(pw.Value, &its)
			intr[pw.TaskID] = its
		}
	}
	var doneWrites []write
	for _, t := range tasks {
		if t.node.hidden && t.done && applyPending {
			continue
		}
		ts := TaskState{ID: t.id, Name: t.name, Error: errs[t.id], Interrupts: intr[t.id]}
		if ts.Interrupts == nil {
			ts.Interrupts = []Interruption{}
		}
		if t.node.sub != nil {
			ts.Namespace = t.ns
		}
		if t.done {
			u := Update{writes: stateWrites(r.g, t.writes)}
			ts.Result = &u
			doneWrites = append(doneWrites, t.writes...)
		}
		if !t.done || !applyPending {
			// As in LangGraph, a checkpoint read as it was saved (by id, in
			// history, in the checkpoints stream) lists every task of its
			// next step, including those whose writes are pending.
			snap.Next = append(snap.Next, t.name)
		}
		if !t.done {
			// A finished task's interrupt was answered: it is not pending.
			snap.Interrupts = append(snap.Interrupts, ts.Interrupts...)
		}
		snap.Tasks = append(snap.Tasks, ts)
	}
	if snap.Interrupts == nil {
		snap.Interrupts = []Interruption{}
	}
	snap.Values = r.output(nil)
	if applyPending {
		snap.Values, _ = r.outputWith(doneWrites, nil)
	}
	return snap
}

func pick(m map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
