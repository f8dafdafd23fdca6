package graph

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
)

// ToolEventKind says what a tools event reports about a tool call; the
// values are LangGraph's names for them.
type ToolEventKind string

// The kinds of tools events.
const (
	// ToolStarted: the call starts; ToolEvent.Input holds its arguments.
	ToolStarted ToolEventKind = "on_tool_start"
	// ToolProgress: the tool reported progress while it runs;
	// ToolEvent.Data holds what it reported.
	ToolProgress ToolEventKind = "on_tool_event"
	// ToolEnded: the call succeeded; ToolEvent.Output holds its result.
	ToolEnded ToolEventKind = "on_tool_end"
	// ToolFailed: the call failed; ToolEvent.Error says how.
	ToolFailed ToolEventKind = "on_tool_error"
)

// ToolEvent is a tools event: one step of a tool call made inside a node.
// The tool package sends them for the calls it runs (see StreamTool); its
// JSON is LangGraph's: {"event", "toolCallId", "name"} and, by kind,
// "input", "data", "output" or "error".
type ToolEvent struct {
	Kind ToolEventKind
	// ToolCallID is the model's id of the call; "" for a call no model
	// made (omitted from the JSON).
	ToolCallID string
	// Name is the tool's name.
	Name string
	// Input (ToolStarted), Data (ToolProgress) and Output (ToolEnded) are
	// the call's arguments, its progress report and its result.
	Input, Data, Output any
	// Error describes a failed call (ToolFailed).
	Error *ErrorInfo
	// RunID tells one call's events apart from another's: the same in all
	// of a call's events and different for each call. The tool package
	// sets it to a fresh UUID per call; "" when the sender gave none. It
	// is not part of the JSON (the server's events mode uses it as the
	// call's run_id).
	RunID string
	// Task is the task whose node made the call, as the node's messages
	// events name it (Message nil): StreamTool sets it, whatever the
	// sender gave. It is not part of the JSON.
	Task MessageEvent
}

// ErrorInfo describes a failure in a stream event as LangGraph does:
// {"error": the kind of failure, "message": what went wrong}.
type ErrorInfo struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// MarshalJSON renders the event as LangGraph's tools stream does.
func (e ToolEvent) MarshalJSON() ([]byte, error) {
	type base struct {
		Event      ToolEventKind `json:"event"`
		ToolCallID string        `json:"toolCallId,omitempty"`
		Name       string        `json:"name"`
	}
	b := base{e.Kind, e.ToolCallID, e.Name}
	switch e.Kind {
	case ToolStarted:
		return json.Marshal(struct {
			base
			Input any `json:"input"`
		}{b, e.Input})
	case ToolProgress:
		return json.Marshal(struct {
			base
			Data any `json:"data"`
		}{b, e.Data})
	case ToolEnded:
		return json.Marshal(struct {
			base
			Output any `json:"output"`
		}{b, e.Output})
	case ToolFailed:
		return json.Marshal(struct {
			base
			Error *ErrorInfo `json:"error"`
		}{b, e.Error})
	}
	return json.Marshal(b)
}

// StreamTool sends a tools event for the node whose context ctx is (or a
// goroutine it started, until it returns), tagged with its graph's
// namespace and with the task it runs in (ToolEvent.Task). Outside a
// node, or when the run does not stream tools events, it does nothing. The tool package calls it for every call it
// runs inside a node; code that runs tools of its own may call it too.
func StreamTool(ctx context.Context, ev ToolEvent) {
	tc := taskFrom(ctx)
	if !tc.streamsTools() || !tc.live() {
		return
	}
	ev.Task = tc.t.messageEvent(nil, tc.step)
	tc.emit(Event{Mode: StreamTools, Namespace: tc.r.path, Data: ev})
}

// StreamsTools reports whether ctx is a node's whose run streams tools
// events: whether StreamTool would send anything.
func StreamsTools(ctx context.Context) bool { return taskFrom(ctx).streamsTools() }

// streamsTools reports whether tc (nil outside a node) sends tools events.
func (tc *taskCtx) streamsTools() bool {
	return tc != nil && tc.r.modes.has(StreamTools) && tc.emit != nil
}

// LifecycleKind says what a lifecycle event reports about a subgraph.
type LifecycleKind string

// The kinds of lifecycle events.
const (
	// LifecycleStarted: a subgraph starts (again, for each attempt of its
	// node and each resume).
	LifecycleStarted LifecycleKind = "started"
	// LifecycleCompleted: it ran to its end, or handed its result to its
	// parent graph (ToParent).
	LifecycleCompleted LifecycleKind = "completed"
	// LifecycleFailed: it failed; LifecycleEvent.Err says why.
	LifecycleFailed LifecycleKind = "failed"
	// LifecycleInterrupted: it stopped to ask a human.
	LifecycleInterrupted LifecycleKind = "interrupted"
)

// LifecycleEvent is a lifecycle event: a subgraph started or ended. The
// Event carrying it has the subgraph's namespace. Its JSON is
// {"event", "namespace", "tool_call_id"?, "error"?: {"error", "message"}}.
type LifecycleEvent struct {
	Kind LifecycleKind
	// Namespace is the subgraph's ("node:taskid", ... from the root).
	Namespace []string
	// ToolCallID is the id of the model's tool call that started the
	// subgraph: set when the subgraph's task was sent (Send) with a
	// value that names a tool call (ToolCallRef) on one of its channels.
	ToolCallID string
	// Err is why the subgraph failed (LifecycleFailed).
	Err error
}

// MarshalJSON renders the event as the LangGraph SDK reads it.
func (e LifecycleEvent) MarshalJSON() ([]byte, error) {
	ns := e.Namespace
	if ns == nil {
		ns = []string{}
	}
	var ei *ErrorInfo
	if e.Err != nil {
		ei = &ErrorInfo{Error: errorKind(e.Err), Message: e.Err.Error()}
	}
	return json.Marshal(struct {
		Event      LifecycleKind `json:"event"`
		Namespace  []string      `json:"namespace"`
		ToolCallID string        `json:"tool_call_id,omitempty"`
		Error      *ErrorInfo    `json:"error,omitempty"`
	}{e.Kind, ns, e.ToolCallID, ei})
}

// errorKind names the kind of a run's error as LangGraph's error classes
// go: "Error" for any not named otherwise.
func errorKind(err error) string {
	var ie *InputError
	switch {
	case errors.As(err, &ie), errors.Is(err, ErrInvalidInput):
		return "InvalidInputError"
	case errors.Is(err, ErrRecursionLimit):
		return "GraphRecursionError"
	case errors.Is(err, ErrInvalidUpdate):
		return "InvalidUpdateError"
	case errors.Is(err, ErrNodeTimeout):
		return "TimeoutError"
	case errors.Is(err, context.Canceled):
		return "CancelledError"
	}
	return "Error"
}

// ToolCallRef is implemented by a value that stands for a model's tool
// call (llm.ToolCall does): a subgraph whose task was sent with one on a
// channel was started by that call, and its lifecycle events say so.
type ToolCallRef interface {
	// ToolCallRef returns the call's id.
	ToolCallRef() string
}

// toolCallOf returns the id of the tool call a subgraph task was sent
// with: the first channel value of its input, in channel order, that is a
// ToolCallRef with an id. Pull tasks have none.
func toolCallOf(t *task) string {
	if t.kind != pushTask {
		return ""
	}
	for _, k := range sortedKeys(t.input.values) {
		v := t.input.values[k]
		ref, ok := v.(ToolCallRef)
		if !ok {
			continue
		}
		// A nil *llm.ToolCall is a ToolCallRef whose method would panic.
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			continue
		}
		if id := ref.ToolCallRef(); id != "" {
			return id
		}
	}
	return ""
}
