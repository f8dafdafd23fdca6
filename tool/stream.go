package tool

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
)

// callStream reports one tool call to the run's tools stream (graph's
// StreamTools mode): its start, the progress the tool reports, and its
// end. A nil *callStream reports nothing: the call does not run inside a
// node whose run streams tools events.
type callStream struct {
	name, id string
	// runID is the call's own id, in each of its events
	// (graph.ToolEvent.RunID).
	runID string
	mu    sync.Mutex
	// ended is set once the call's end was reported: progress a tool
	// reports later (from a goroutine that outlived it, or an Isolate
	// call abandoned at its timeout) is dropped.
	ended bool
}

type callStreamKey struct{}

// startCall reports that call c starts with args (canonical says they are
// in canonical JSON form already) and returns the context the call runs
// with, which Progress reads, and the call's stream. When ctx's run does
// not stream tools events it returns ctx and nil.
func startCall(ctx context.Context, c CallInfo, args json.RawMessage, canonical bool) (context.Context, *callStream) {
	if !graph.StreamsTools(ctx) {
		return ctx, nil
	}
	cs := &callStream{name: c.Name, id: c.ID, runID: ids.Random()}
	graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolStarted, ToolCallID: c.ID, Name: c.Name, Input: argsValue(args, canonical), RunID: cs.runID})
	return context.WithValue(ctx, callStreamKey{}, cs), cs
}

// argsValue is a call's arguments as a tools event carries them: their
// JSON as it is, {} for none, and arguments that are not JSON as a string.
// Canonical arguments are JSON: only the others need json.Valid.
func argsValue(args json.RawMessage, canonical bool) any {
	switch {
	case len(args) == 0:
		return json.RawMessage("{}")
	case canonical || json.Valid(args):
		return args
	}
	return string(args)
}

// end reports the call's success with its output.
func (cs *callStream) end(ctx context.Context, output any) {
	if cs.close() {
		graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolEnded, ToolCallID: cs.id, Name: cs.name, Output: output, RunID: cs.runID})
	}
}

// snapshot is v's JSON, taken now: the stream encodes events on another
// goroutine, after the tool may have changed v, and a value that cannot
// be encoded must not fail the run's stream. Such a value is null.
func snapshot(v any) json.RawMessage {
	b, err := encodeNoHTML(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// fail reports the call's failure: the envelope's error code (the kind of
// failure) and message.
func (cs *callStream) fail(ctx context.Context, code, message string) {
	if cs.close() {
		graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolFailed, ToolCallID: cs.id, Name: cs.name, Error: &graph.ErrorInfo{Error: code, Message: message}, RunID: cs.runID})
	}
}

// close marks the call ended; false means it was already (or cs is nil).
func (cs *callStream) close() bool {
	if cs == nil {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.ended {
		return false
	}
	cs.ended = true
	return true
}

// finish reports how env and err ended the call: its success with output,
// or its failure.
func (cs *callStream) finish(ctx context.Context, env Result[any], err error, output any) {
	if cs == nil {
		return
	}
	if err != nil {
		cs.fail(ctx, env.ErrorCode, env.Error)
		return
	}
	cs.end(ctx, output)
}

// Progress reports the progress of the tool call ctx belongs to: the run's
// tools stream gets an on_tool_event with data v's JSON, taken at once
// (null when v does not encode), which the LangGraph SDK shows as the
// call's state "running" with v as its data. A tool calls it with the context it was given, from
// its own goroutine or one it started, until it returns. It does nothing
// outside a tool call run by the tool node or Tool.Run inside a graph
// node, when the run does not stream tools events, and after the call
// ended. Progress is not a result: the model never sees it.
func Progress(ctx context.Context, v any) {
	cs, _ := ctx.Value(callStreamKey{}).(*callStream)
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	// Sent under the lock, so that no progress follows the call's end.
	if cs.ended {
		return
	}
	graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolProgress, ToolCallID: cs.id, Name: cs.name, Data: snapshot(v), RunID: cs.runID})
}

// ReportsProgress reports whether Progress with ctx would reach a stream:
// ctx is a tool call's, inside a run that streams tools events, and the
// call has not ended. Code that must ask for progress to get it (an MCP
// server's progress notifications) asks only then.
func ReportsProgress(ctx context.Context) bool {
	cs, _ := ctx.Value(callStreamKey{}).(*callStream)
	if cs == nil {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return !cs.ended
}
