package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/llm"
)

// The stream modes a client may ask for.
const (
	modeValues        = "values"
	modeUpdates       = "updates"
	modeMessages      = "messages"
	modeMessagesTuple = "messages-tuple"
	modeCustom        = "custom"
	modeDebug         = "debug"
	modeTasks         = "tasks"
	modeCheckpoints   = "checkpoints"
	modeEvents        = "events"
	modeTools         = "tools"
	modeLifecycle     = "lifecycle"
)

var streamModes = []string{modeValues, modeMessages, modeMessagesTuple, modeUpdates, modeEvents, modeTasks, modeCheckpoints, modeDebug, modeCustom, modeTools, modeLifecycle}

// encoder turns a run's graph events into the API's stream events. It
// also keeps what the run's end needs: the last values and the pending
// interrupts.
type encoder struct {
	want      map[string]bool
	subgraphs bool
	// meta is the JSON of the metadata every messages event carries,
	// without its closing brace, so that each event appends its task's.
	meta []byte

	// lastValues is the state after the last step (the root graph's);
	// lastValuesJSON its JSON as the values stream sent it, with pending
	// interrupts.
	lastValues     *graph.State
	lastValuesJSON []byte
	interrupted    bool

	// The legacy "messages" mode: chunks merged per message id, and the
	// ids of messages already sent whole.
	partial   map[string]llm.Chunk
	completed map[string]bool

	// lc is the events mode's state (events_stream.go), once started.
	lc *langchainRun
}

func newEncoder(modes []string, subgraphs bool, meta []byte) *encoder {
	e := &encoder{want: map[string]bool{}, subgraphs: subgraphs, meta: meta}
	for _, m := range modes {
		e.want[m] = true
	}
	if e.want[modeMessages] {
		e.partial, e.completed = map[string]llm.Chunk{}, map[string]bool{}
	}
	return e
}

// graphModes are the modes to run the graph with: what the client asked
// for, and values and updates, which the run's end needs.
func (e *encoder) graphModes() []graph.StreamMode {
	out := []graph.StreamMode{graph.StreamValues, graph.StreamUpdates}
	if e.want[modeMessages] || e.want[modeMessagesTuple] || e.want[modeEvents] {
		out = append(out, graph.StreamMessages)
	}
	for _, m := range []graph.StreamMode{graph.StreamCustom, graph.StreamDebug, graph.StreamTasks, graph.StreamCheckpoints, graph.StreamTools, graph.StreamLifecycle} {
		// The events mode is built from tasks and tools events too.
		if e.want[string(m)] || ((m == graph.StreamTasks || m == graph.StreamTools) && e.want[modeEvents]) {
			out = append(out, m)
		}
	}
	return out
}

// encode turns one graph event into zero or more stream events.
func (e *encoder) encode(ev graph.Event, emit func(name string, data []byte) error) error {
	if e.lc != nil {
		if err := e.encodeEvents(ev, emit); err != nil {
			return err
		}
	}
	if ev.Mode == graph.StreamLifecycle {
		// Named after the subgraph's namespace, with or without
		// stream_subgraphs, as the SDK's LifecycleStreamEvent is.
		return e.lifecycle(ev, emit)
	}
	root := len(ev.Namespace) == 0
	if !root && !e.subgraphs {
		return nil
	}
	name := func(mode string) string {
		if root {
			return mode
		}
		return mode + "|" + strings.Join(ev.Namespace, "|")
	}
	switch ev.Mode {
	case graph.StreamValues:
		s, _ := ev.Values()
		var data []byte
		if e.want[modeValues] || (root && e.want[modeMessages]) {
			// What json.Marshal(s) gives, without copying and checking
			// it again: MarshalJSON's output is json.Marshal's already.
			var err error
			if data, err = s.MarshalJSON(); err != nil {
				return err
			}
		}
		if root {
			// Encoded at the end only when no client asked for values.
			e.lastValues, e.lastValuesJSON = &s, data
		}
		if e.want[modeMessages] && root {
			if err := e.completeMessages(data, emit); err != nil {
				return err
			}
		}
		if e.want[modeValues] {
			return emit(name(modeValues), data)
		}
	case graph.StreamUpdates:
		u, _ := ev.Update()
		if root && u.Node == "__interrupt__" {
			e.interrupted = true
		}
		if e.want[modeUpdates] {
			data, err := json.Marshal(u)
			if err != nil {
				return err
			}
			return emit(name(modeUpdates), data)
		}
	case graph.StreamMessages:
		if !e.want[modeMessagesTuple] && !e.want[modeMessages] {
			return nil // asked for the events mode only
		}
		me, _ := ev.Message()
		if e.want[modeMessagesTuple] {
			data, err := e.messageTuple(me)
			if err != nil {
				return err
			}
			if err := emit(name(modeMessages), data); err != nil {
				return err
			}
		}
		if e.want[modeMessages] {
			return e.partialMessage(me, emit)
		}
	case graph.StreamCustom:
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return err
		}
		return emit(name(modeCustom), data)
	case graph.StreamTools:
		if !e.want[modeTools] {
			return nil // asked for the events mode only
		}
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return err
		}
		return emit(name(modeTools), data)
	case graph.StreamTasks:
		if !e.want[modeTasks] {
			return nil // asked for the server's telemetry only
		}
		data, err := json.Marshal(taskEventOut(ev.Data))
		if err != nil {
			return err
		}
		return emit(name(modeTasks), data)
	case graph.StreamCheckpoints:
		snap, _ := ev.Checkpoint()
		data, err := json.Marshal(checkpointEventOut(snap))
		if err != nil {
			return err
		}
		return emit(name(modeCheckpoints), data)
	case graph.StreamDebug:
		d, _ := ev.Debug()
		payload := d.Payload
		switch p := d.Payload.(type) {
		case graph.StateSnapshot:
			payload = checkpointEventOut(p)
		case graph.TaskStart, graph.TaskResult:
			payload = taskEventOut(p)
		case error:
			payload = map[string]string{"error": p.Error()}
		}
		data, err := json.Marshal(map[string]any{"step": d.Step, "type": d.Type, "timestamp": apiTime(d.Timestamp), "payload": payload})
		if err != nil {
			return err
		}
		return emit(name(modeDebug), data)
	}
	return nil
}

// lifecycle sends a lifecycle event, "lifecycle|" and the subgraph's
// namespace: {"event", "namespace", "tool_call_id"?, "error"?}, the error
// named as a run's error event names it.
func (e *encoder) lifecycle(ev graph.Event, emit func(name string, data []byte) error) error {
	le, ok := ev.Lifecycle()
	if !ok || len(ev.Namespace) == 0 {
		return nil
	}
	out := struct {
		Event      graph.LifecycleKind `json:"event"`
		Namespace  []string            `json:"namespace"`
		ToolCallID string              `json:"tool_call_id,omitempty"`
		Error      json.RawMessage     `json:"error,omitempty"`
	}{Event: le.Kind, Namespace: ev.Namespace, ToolCallID: le.ToolCallID}
	if le.Err != nil {
		out.Error = errorEvent(le.Err)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return emit(modeLifecycle+"|"+strings.Join(ev.Namespace, "|"), data)
}

// finalValues returns the JSON of the last values: what a wait or join of
// the run answers. It is nil when the run made no step.
func (e *encoder) finalValues() ([]byte, error) {
	if e.lastValuesJSON != nil || e.lastValues == nil {
		return e.lastValuesJSON, nil
	}
	var err error
	e.lastValuesJSON, err = e.lastValues.MarshalJSON() // as json.Marshal gives it
	return e.lastValuesJSON, err
}

// messageTuple is a messages-tuple event: [message, metadata].
func (e *encoder) messageTuple(me graph.MessageEvent) ([]byte, error) {
	b := make([]byte, 0, 512+len(e.meta))
	b = append(b, '[')
	var err error
	if b, err = appendMessage(b, me.Message); err != nil {
		return nil, err
	}
	b = append(b, ',')
	b = e.appendMeta(b, me)
	return append(b, ']'), nil
}

// appendMeta appends the metadata of a messages event: the run's, and
// the task's that made the message.
func (e *encoder) appendMeta(b []byte, me graph.MessageEvent) []byte {
	b = append(b, e.meta...)
	b = append(b, `,"langgraph_step":`...)
	b = strconv.AppendInt(b, int64(me.Step), 10)
	b = append(b, `,"langgraph_node":`...)
	b = jsonx.AppendString(b, me.Node, true)
	b = append(b, `,"langgraph_triggers":[`...)
	for i, t := range me.Triggers {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, t, true)
	}
	b = append(b, `],"langgraph_path":`...)
	b = appendPath(b, me.Path)
	b = append(b, `,"langgraph_checkpoint_ns":`...)
	b = jsonx.AppendString(b, me.Namespace, true)
	b = append(b, `,"checkpoint_ns":`...)
	b = jsonx.AppendString(b, me.Namespace, true)
	return append(b, '}')
}

// appendPath appends a task's path as json.Marshal encodes it (a nil path
// as []): its strings and ints directly, anything else through Marshal.
func appendPath(b []byte, path []any) []byte {
	if path == nil {
		return append(b, "[]"...)
	}
	mark := len(b)
	b = append(b, '[')
	for i, p := range path {
		if i > 0 {
			b = append(b, ',')
		}
		switch p := p.(type) {
		case string:
			b = jsonx.AppendString(b, p, true)
		case int:
			b = strconv.AppendInt(b, int64(p), 10)
		default:
			data, _ := json.Marshal(path)
			return append(b[:mark], data...)
		}
	}
	return append(b, ']')
}

// appendMessage appends a streamed message as the API sends it: a model's
// chunk as LangChain's AI message chunk (type "ai"), a message in
// LangChain's form, anything else as its JSON.
func appendMessage(b []byte, m any) ([]byte, error) {
	switch m := m.(type) {
	case llm.Chunk:
		return appendChunk(b, m)
	case llm.Message:
		return m.AppendJSON(b)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

// appendChunk writes a chunk as the reference server streams one: an AI
// message with its pieces of tool calls, the calls whose arguments are
// already whole, and the id all chunks of the reply share.
func appendChunk(b []byte, c llm.Chunk) ([]byte, error) {
	b = append(b, `{"content":`...)
	b = jsonx.AppendString(b, c.Content, true)
	b = append(b, `,"additional_kwargs":{},"response_metadata":`...)
	if len(c.ResponseMetadata) == 0 {
		b = append(b, "{}"...)
	} else {
		md, err := json.Marshal(c.ResponseMetadata)
		if err != nil {
			return nil, err
		}
		b = append(b, md...)
	}
	if len(c.ToolCallChunks) == 0 && c.Usage == nil {
		// What the Marshal below gives without calls or usage.
		b = append(b, `,"tool_call_chunks":[],"tool_calls":[],"invalid_tool_calls":[],"id":`...)
		b = jsonx.AppendString(b, c.ID, true)
		return append(b, `,"type":"ai"}`...), nil
	}
	type callChunk struct {
		Name  *string `json:"name"`
		Args  *string `json:"args"`
		ID    *string `json:"id"`
		Index int     `json:"index"`
		Type  string  `json:"type"`
	}
	type call struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
		ID   string          `json:"id"`
		Type string          `json:"type"`
	}
	ptr := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	chunks := make([]callChunk, 0, len(c.ToolCallChunks))
	calls := []call{}
	for _, tc := range c.ToolCallChunks {
		chunks = append(chunks, callChunk{ptr(tc.Name), ptr(tc.Args), ptr(tc.ID), tc.Index, "tool_call_chunk"})
		if tc.Name != "" {
			if args, err := llm.ParseArgs(tc.Args); err == nil {
				calls = append(calls, call{tc.Name, args, tc.ID, "tool_call"})
			}
		}
	}
	extra, err := json.Marshal(struct {
		ToolCallChunks   []callChunk `json:"tool_call_chunks"`
		ToolCalls        []call      `json:"tool_calls"`
		InvalidToolCalls []any       `json:"invalid_tool_calls"`
		Usage            *llm.Usage  `json:"usage_metadata,omitempty"`
	}{chunks, calls, []any{}, c.Usage})
	if err != nil {
		return nil, err
	}
	b = append(b, ',')
	b = append(b, extra[1:len(extra)-1]...)
	b = append(b, `,"id":`...)
	b = jsonx.AppendString(b, c.ID, true)
	return append(b, `,"type":"ai"}`...), nil
}

// partialMessage sends a chunk in the legacy messages mode: the message's
// metadata the first time, then the chunks so far merged.
func (e *encoder) partialMessage(me graph.MessageEvent, emit func(string, []byte) error) error {
	c, ok := me.Message.(llm.Chunk)
	if !ok || c.ID == "" {
		return nil
	}
	prev, seen := e.partial[c.ID]
	if !seen {
		b := []byte(`{`)
		b = jsonx.AppendString(b, c.ID, true)
		b = append(b, `:{"metadata":`...)
		b = e.appendMeta(b, me)
		b = append(b, "}}"...)
		if err := emit("messages/metadata", b); err != nil {
			return err
		}
		e.partial[c.ID] = c
	} else {
		e.partial[c.ID] = llm.Merge(prev, c)
	}
	b, err := appendChunk([]byte{'['}, e.partial[c.ID])
	if err != nil {
		return err
	}
	return emit("messages/partial", append(b, ']'))
}

// completeMessages sends, in the legacy messages mode, the messages of a
// values event that were not sent whole before.
func (e *encoder) completeMessages(values []byte, emit func(string, []byte) error) error {
	var state struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(values, &state) != nil {
		return nil
	}
	var fresh [][]byte
	for _, m := range state.Messages {
		var id struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(m, &id) != nil || id.ID == "" || e.completed[id.ID] {
			continue
		}
		e.completed[id.ID] = true
		fresh = append(fresh, m)
	}
	if len(fresh) == 0 {
		return nil
	}
	return emit("messages/complete", append(append([]byte{'['}, bytes.Join(fresh, []byte{','})...), ']'))
}

// taskEventOut is a tasks event: a task's start or its result.
func taskEventOut(v any) any {
	switch t := v.(type) {
	case graph.TaskStart:
		return map[string]any{"id": t.ID, "name": t.Name, "input": t.Input, "triggers": t.Triggers, "interrupts": []any{}}
	case graph.TaskResult:
		var errv any
		if t.Error != "" {
			errv = t.Error
		}
		its := t.Interrupts
		if its == nil {
			its = []graph.Interruption{}
		}
		return map[string]any{"id": t.ID, "name": t.Name, "result": t.Result, "interrupts": its, "error": errv}
	}
	return v
}

type configJSON struct {
	Configurable map[string]string `json:"configurable"`
}

func configOut(c *checkpoint.Config) *configJSON {
	if c == nil || c.ThreadID == "" {
		return nil
	}
	return &configJSON{Configurable: map[string]string{"thread_id": c.ThreadID, "checkpoint_ns": c.Namespace, "checkpoint_id": c.CheckpointID}}
}

// checkpointEventOut is a checkpoints event: a checkpoint as it is made.
func checkpointEventOut(snap graph.StateSnapshot) any {
	tasks := make([]map[string]any, 0, len(snap.Tasks))
	for _, t := range snap.Tasks {
		its := t.Interrupts
		if its == nil {
			its = []graph.Interruption{}
		}
		task := map[string]any{"id": t.ID, "name": t.Name, "path": []any{"__pregel_pull", t.Name}, "interrupts": its}
		if t.Error != "" {
			task["error"] = t.Error
		}
		if t.Result != nil {
			task["result"] = t.Result
		}
		tasks = append(tasks, task)
	}
	next := snap.Next
	if next == nil {
		next = []string{}
	}
	return map[string]any{
		"config":            configOut(&snap.Config),
		"parent_config":     configOut(snap.Parent),
		"values":            snap.Values,
		"metadata":          metadataOut(snap.Metadata),
		"next":              next,
		"tasks":             tasks,
		"checkpoint":        checkpointOut(&snap.Config),
		"parent_checkpoint": checkpointOut(snap.Parent),
	}
}

// errorEvent is the data of a stream's error event: {"error": a name for
// the kind of failure, as LangGraph's error class names go, "message"}.
func errorEvent(err error) []byte {
	name := "Error"
	var ie *graph.InputError
	switch {
	case errors.As(err, &ie):
		name = "InvalidInputError"
	case errors.Is(err, graph.ErrRecursionLimit):
		name = "GraphRecursionError"
	case errors.Is(err, graph.ErrInvalidUpdate):
		name = "InvalidUpdateError"
	case errors.Is(err, graph.ErrInvalidInput):
		name = "InvalidInputError"
	case errors.Is(err, graph.ErrNodeTimeout), errors.Is(err, graph.ErrCheckpointerTimeout):
		name = "TimeoutError"
	case errors.Is(err, checkpoint.ErrLeaseLost):
		name = "LeaseLostError"
	case errors.Is(err, checkpoint.ErrCancelRequested), errors.Is(err, errCancelled):
		name = "CancelledError"
	}
	data, _ := json.Marshal(map[string]string{"error": name, "message": err.Error()})
	return data
}

// metadataEvent is the first event of a run's stream.
func metadataEvent(runID string, attempt int) []byte {
	b := make([]byte, 0, 32+len(runID))
	b = append(b, `{"run_id":`...)
	b = jsonx.AppendString(b, runID, true)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(attempt), 10)
	return append(b, '}')
}

// runMeta is the JSON of the metadata messages events carry (the run's
// metadata and where it runs), without its closing brace.
func runMeta(runMetadata json.RawMessage, threadID, runID string, attempt int) []byte {
	if b, ok := runMetaCanonical(runMetadata, threadID, runID, attempt); ok {
		return b
	}
	return runMetaDecoded(runMetadata, threadID, runID, attempt)
}

// runMetaDecoded is runMeta for any metadata: decoded, merged with the
// server's members and encoded again.
func runMetaDecoded(runMetadata json.RawMessage, threadID, runID string, attempt int) []byte {
	var m map[string]any
	_ = json.Unmarshal(runMetadata, &m)
	if m == nil {
		m = map[string]any{}
	}
	m["run_attempt"] = attempt
	m["langgraph_version"] = "weft"
	m["langgraph_plan"] = "developer"
	m["langgraph_host"] = "self-hosted"
	m["thread_id"] = threadID
	m["run_id"] = runID
	rest, _ := json.Marshal(m)
	b := []byte(`{"tags":[]`)
	if len(rest) > 2 {
		b = append(b, ',')
		b = append(b, rest[1:len(rest)-1]...)
	}
	return b
}

// keepAliveEvery is how often a wait request writes a newline while its
// run goes on, so proxies keep the connection.
const keepAliveEvery = time.Second

// runMetaCanonical is runMeta for run metadata that is none, or an object
// in the form json.Marshal gives it (jsonx.Canonical, as the records keep
// it): its members, already sorted, merged with the server's, without
// decoding and encoding them again. ok is false for other metadata.
func runMetaCanonical(md json.RawMessage, threadID, runID string, attempt int) (b []byte, ok bool) {
	if len(md) == 0 || string(md) == "null" {
		md = json.RawMessage("{}")
	} else if md[0] != '{' || !jsonx.Canonical(md) {
		return nil, false
	}
	// The server's members, in the order of their keys, as Marshal sorts
	// a map's.
	own := [...]struct {
		key, value string
		number     bool
	}{
		{"langgraph_host", "self-hosted", false},
		{"langgraph_plan", "developer", false},
		{"langgraph_version", "weft", false},
		{"run_attempt", strconv.Itoa(attempt), true},
		{"run_id", runID, false},
		{"thread_id", threadID, false},
	}
	b = make([]byte, 0, len(md)+160+len(threadID)+len(runID))
	b = append(b, `{"tags":[]`...)
	next := 0 // the next of own to write
	writeOwn := func() {
		o := own[next]
		b = append(b, ',', '"')
		b = append(b, o.key...)
		b = append(b, '"', ':')
		if o.number {
			b = append(b, o.value...)
		} else {
			b = jsonx.AppendString(b, o.value, true)
		}
		next++
	}
	for i := 1; md[i] != '}'; {
		// A canonical key has no escapes: it ends at the next quote.
		end := i + 1 + bytes.IndexByte(md[i+1:], '"')
		key := string(md[i+1 : end])
		vEnd := jsonx.ValueEnd(md, end+2)
		for next < len(own) && own[next].key < key {
			writeOwn()
		}
		if next < len(own) && own[next].key == key {
			writeOwn() // the server's value replaces the metadata's
		} else {
			b = append(b, ',')
			b = append(b, md[i:vEnd]...)
		}
		i = vEnd
		if md[i] == ',' {
			i++
		}
	}
	for next < len(own) {
		writeOwn()
	}
	return b, true
}
