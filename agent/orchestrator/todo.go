package orchestrator

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Status is a todo's state.
type Status string

// The todo statuses. A todo starts pending, runs, and ends done, failed
// or skipped; a retried todo is pending again.
const (
	StatusPending Status = "pending"
	StatusRunning Status = "running"
	StatusDone    Status = "done"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
)

// Ended reports whether a todo in this status will not run again unless a
// person retries it.
func (s Status) Ended() bool {
	return s == StatusDone || s == StatusFailed || s == StatusSkipped
}

// Todo is one unit of a plan: what to do, which executor and tool do it,
// with which parameters, after which other todos.
//
// A Todo is a value and is never changed in place: a change is a new
// version (With), and the todos channel keeps, per id, the highest version
// written (document 003's immutable TodoItem).
type Todo struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Executor is the domain executor that runs it ("data", "insight",
	// "content", "operations" in document 003).
	Executor string `json:"executor"`
	// Tool is the recommended tool, one of the executor's.
	Tool string `json:"tool,omitempty"`
	// Params are the tool's arguments, a JSON object.
	Params    json.RawMessage `json:"params,omitempty"`
	DependsOn []string        `json:"depends_on,omitempty"`
	Status    Status          `json:"status"`
	// Version counts the todo's changes from 1.
	Version int `json:"version"`
	// Attempt counts the todo's runs: 0 before the first.
	Attempt int `json:"attempt,omitempty"`
	// Reason says why it failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// Decided is set on a failed todo once a person (or the error policy)
	// decided about it, so it is asked about once.
	Decided bool `json:"decided,omitempty"`
}

// With returns the next version of t, changed by fn.
func (t Todo) With(fn func(*Todo)) Todo {
	n := t
	n.DependsOn = slices.Clone(t.DependsOn)
	n.Params = slices.Clone(t.Params)
	fn(&n)
	n.Version = t.Version + 1
	return n
}

// MergeTodos is the todos channel's reducer (document 003's todo_reducer):
// todos merge by id, and of two versions of one todo the higher wins;
// a new id is added after the others. Neither list is modified.
func MergeTodos(current, update []Todo) []Todo {
	if len(update) == 0 {
		return current
	}
	out := slices.Clone(current)
	at := make(map[string]int, len(out))
	for i, t := range out {
		at[t.ID] = i
	}
	for _, u := range update {
		i, ok := at[u.ID]
		switch {
		case !ok:
			at[u.ID] = len(out)
			out = append(out, u)
		case u.Version > out[i].Version:
			out[i] = u
		}
	}
	return out
}

// Result is what running a todo produced.
type Result struct {
	TodoID string `json:"todo_id"`
	Status Status `json:"status"`
	// Tool is the tool whose result this is; Method is how it ran:
	// "tool" (the recommended tool and parameters), "react" (the ReAct
	// fallback), "executor" (the executor's own Run) or "" when skipped.
	Tool   string          `json:"tool,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// Data is the tool's data, as JSON.
	Data json.RawMessage `json:"data,omitempty"`
	// Text is a summary in words (the ReAct sub-agent's answer).
	Text      string         `json:"text,omitempty"`
	ErrorCode string         `json:"error_code,omitempty"`
	Error     string         `json:"error,omitempty"`
	Meta      map[string]any `json:"meta,omitempty"`
	// ToolsUsed names every tool called, the fallback's too.
	ToolsUsed []string  `json:"tools_used,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	// Files are the result's saved copies (JSON, Markdown).
	Files []string `json:"files,omitempty"`
}

// MergeResults is the results channel's reducer (document 003's
// results_reducer): results merge by todo id, the later write winning.
// Neither map is modified.
func MergeResults(current, update map[string]Result) map[string]Result {
	if len(update) == 0 {
		return current
	}
	out := make(map[string]Result, len(current)+len(update))
	maps.Copy(out, current)
	maps.Copy(out, update)
	return out
}

// TraceEntry is one line of the task's trace: what happened, where, when.
type TraceEntry struct {
	Task   int    `json:"task"`
	Layer  string `json:"layer"`
	Node   string `json:"node"`
	TodoID string `json:"todo_id,omitempty"`
	Event  string `json:"event"`
	Detail string `json:"detail,omitempty"`
	// Tool, Method and Attempt say, for a todo's run (node execute_todo,
	// event done or failed), which tool ran it, how ("tool", "react",
	// "executor") and which attempt it was: every attempt of a task stays
	// in the trace, where results keep only the last.
	Tool    string    `json:"tool,omitempty"`
	Method  string    `json:"method,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Time    time.Time `json:"time"`
}

// AppendTrace is the trace channel's reducer: append only.
func AppendTrace(current, update []TraceEntry) []TraceEntry {
	if len(update) == 0 {
		return current
	}
	out := make([]TraceEntry, 0, len(current)+len(update))
	return append(append(out, current...), update...)
}
