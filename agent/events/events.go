// Package events defines the progress events of the orchestrator agent
// (agent/orchestrator): the five of design document 001 (START, STATUS,
// TOKEN, HUMAN_INPUT_REQUIRED, END) and the WebSocket messages of design
// document 003 (session_state, layer_start, todo_progress, hitl_request,
// complete).
//
// The orchestrator sends them to a run's custom stream (graph.Emit), so a
// program reads them typed from graph.Stream with graph.CustomAs, and a
// server forwards them as JSON. Each event's JSON is an object whose
// "event" field names it in lower case,
//
//	{"event":"todo_progress","todo_id":"t3","status":"running",...}
//
// so that a client (a server, a web page) can dispatch on that field
// without importing this package; Decode reads one back. The package
// depends on nothing but the standard library, so a server or a front end
// can rely on it without importing the orchestrator.
package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one progress event. Name is the value of its JSON "event" field.
type Event interface {
	Name() string
}

// The event names: the value of the "event" field of each event's JSON.
const (
	NameStart              = "start"
	NameStatus             = "status"
	NameToken              = "token"
	NameHumanInputRequired = "human_input_required"
	NameEnd                = "end"
	NameSessionState       = "session_state"
	NameLayerStart         = "layer_start"
	NameTodoProgress       = "todo_progress"
	NameHITLRequest        = "hitl_request"
	NameComplete           = "complete"
)

// Layers of document 003, the values of LayerStart.Layer.
const (
	LayerCognitive = "cognitive"
	LayerPlanning  = "planning"
	LayerExecution = "execution"
	LayerResponse  = "response"
)

// Start (document 001's START) opens a task: the request the orchestrator
// works on.
type Start struct {
	// Thread is the run's thread (document 003's session id).
	Thread string `json:"thread_id"`
	// Task counts the thread's tasks from 1.
	Task int `json:"task"`
	// Request is the user's request.
	Request string    `json:"request"`
	Time    time.Time `json:"time"`
}

// Status (document 001's STATUS) says what the orchestrator is doing, in
// words, with the execution's progress when it has started.
type Status struct {
	Message string `json:"message"`
	// Node is the graph node that sent it.
	Node string `json:"node,omitempty"`
	// Done counts the todos that ended (done, failed or skipped) out of
	// Total; both are zero before execution starts.
	Done  int `json:"done,omitempty"`
	Total int `json:"total,omitempty"`
}

// Token (document 001's TOKEN) is a piece of the answer as the model
// writes it.
type Token struct {
	Text string `json:"text"`
}

// HumanInputRequired (document 001's HUMAN_INPUT_REQUIRED) says the run
// stopped for a person: Kind is the approval point, Actions the answers it
// takes. hitl_request carries the same stop with its whole payload.
type HumanInputRequired struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	Actions []string `json:"actions"`
}

// End (document 001's END) closes a task. Status is "done" (an answer was
// given), "rejected" (the plan was rejected), "aborted" (execution was
// aborted) or "failed" (the run failed: Error says why).
type End struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// End statuses.
const (
	EndDone     = "done"
	EndRejected = "rejected"
	EndAborted  = "aborted"
	EndFailed   = "failed"
)

// Error describes a failure: Code is a stable identifier of its kind
// ("invalid_plan", "model_error", ...), Message is for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SessionState (document 003's session_state) is the task's state at a
// layer boundary: where it is and every todo's status.
type SessionState struct {
	Thread string      `json:"thread_id"`
	Task   int         `json:"task"`
	Layer  string      `json:"layer"`
	Todos  []TodoState `json:"todos"`
}

// TodoState is one todo in a SessionState.
type TodoState struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Executor  string   `json:"executor"`
	Tool      string   `json:"tool,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	Status    string   `json:"status"`
	Version   int      `json:"version"`
}

// LayerStart (document 003's layer_start) says a layer began: Layer is
// one of the Layer constants, Node the graph node.
type LayerStart struct {
	Layer string `json:"layer"`
	Node  string `json:"node"`
}

// TodoProgress (document 003's todo_progress) is a todo's change of
// status: pending (planned), running, done, failed or skipped.
type TodoProgress struct {
	TodoID   string `json:"todo_id"`
	Title    string `json:"title"`
	Executor string `json:"executor"`
	Tool     string `json:"tool,omitempty"`
	Status   string `json:"status"`
	// Version is the todo's version after the change.
	Version int `json:"version"`
	// Attempt counts the todo's runs from 1 (a retry is a new attempt).
	Attempt int `json:"attempt,omitempty"`
	// Method is how it ran: "tool" (the recommended tool and
	// parameters), "react" (the fallback sub-agent) or "executor" (the
	// executor's own Run); empty until it ran.
	Method string `json:"method,omitempty"`
	// Reason says why it failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// Time is when the change happened: for running, when the todo
	// started; for done and failed, when it ended.
	Time time.Time `json:"time"`
}

// HITLRequest (document 003's hitl_request) says the run stopped for a
// person. Request is the interrupt's whole payload, the value the run's
// interrupt carries (its shape per Kind is in docs/orchestrator.md); a
// client answers by resuming the run with a decision.
type HITLRequest struct {
	Kind    string          `json:"kind"`
	Message string          `json:"message"`
	Actions []string        `json:"actions"`
	Request json.RawMessage `json:"request"`
}

// Complete (document 003's complete) is the task's response.
type Complete struct {
	// Format is "text" or "markdown" ("mixed" when attachments come
	// with it).
	Format      string       `json:"format"`
	Text        string       `json:"text"`
	Attachments []Attachment `json:"attachments,omitempty"`
	NextActions []string     `json:"next_actions,omitempty"`
	// Report is the path of the task's Markdown report, when saved.
	Report string `json:"report,omitempty"`
	// Succeeded, Failed and Skipped count the task's todos by outcome.
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// Attachment is a file that comes with a response: a chart, a report.
type Attachment struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	// Path is where the file was saved.
	Path string `json:"path"`
	// Description says what it shows.
	Description string `json:"description,omitempty"`
}

// Name implements Event.
func (Start) Name() string { return NameStart }

// Name implements Event.
func (Status) Name() string { return NameStatus }

// Name implements Event.
func (Token) Name() string { return NameToken }

// Name implements Event.
func (HumanInputRequired) Name() string { return NameHumanInputRequired }

// Name implements Event.
func (End) Name() string { return NameEnd }

// Name implements Event.
func (SessionState) Name() string { return NameSessionState }

// Name implements Event.
func (LayerStart) Name() string { return NameLayerStart }

// Name implements Event.
func (TodoProgress) Name() string { return NameTodoProgress }

// Name implements Event.
func (HITLRequest) Name() string { return NameHITLRequest }

// Name implements Event.
func (Complete) Name() string { return NameComplete }

// The MarshalJSON methods put the "event" field first; the plain type
// inside each keeps encoding/json from calling the method again.

// MarshalJSON encodes the event with its "event" field.
func (e Start) MarshalJSON() ([]byte, error) { type plain Start; return tagged(NameStart, plain(e)) }

// MarshalJSON encodes the event with its "event" field.
func (e Status) MarshalJSON() ([]byte, error) { type plain Status; return tagged(NameStatus, plain(e)) }

// MarshalJSON encodes the event with its "event" field.
func (e Token) MarshalJSON() ([]byte, error) { type plain Token; return tagged(NameToken, plain(e)) }

// MarshalJSON encodes the event with its "event" field.
func (e HumanInputRequired) MarshalJSON() ([]byte, error) {
	type plain HumanInputRequired
	return tagged(NameHumanInputRequired, plain(e))
}

// MarshalJSON encodes the event with its "event" field.
func (e End) MarshalJSON() ([]byte, error) { type plain End; return tagged(NameEnd, plain(e)) }

// MarshalJSON encodes the event with its "event" field.
func (e SessionState) MarshalJSON() ([]byte, error) {
	type plain SessionState
	return tagged(NameSessionState, plain(e))
}

// MarshalJSON encodes the event with its "event" field.
func (e LayerStart) MarshalJSON() ([]byte, error) {
	type plain LayerStart
	return tagged(NameLayerStart, plain(e))
}

// MarshalJSON encodes the event with its "event" field.
func (e TodoProgress) MarshalJSON() ([]byte, error) {
	type plain TodoProgress
	return tagged(NameTodoProgress, plain(e))
}

// MarshalJSON encodes the event with its "event" field.
func (e HITLRequest) MarshalJSON() ([]byte, error) {
	type plain HITLRequest
	return tagged(NameHITLRequest, plain(e))
}

// MarshalJSON encodes the event with its "event" field.
func (e Complete) MarshalJSON() ([]byte, error) {
	type plain Complete
	return tagged(NameComplete, plain(e))
}

// tagged encodes v, an object, with "event": name as its first field.
func tagged(name string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(name)
	out := make([]byte, 0, len(body)+len(head)+12)
	out = append(out, `{"event":`...)
	out = append(out, head...)
	if rest := body[1:]; len(rest) > 1 { // body is {...}; rest is ...}
		out = append(out, ',')
		out = append(out, rest...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// ErrUnknownEvent means an event's "event" field names no event of this
// package.
var ErrUnknownEvent = errors.New("events: unknown event")

// ErrInvalidEvent means the bytes are not an event's JSON.
var ErrInvalidEvent = errors.New("events: invalid event")

// Decode reads an event's JSON back into its type (a value, such as
// events.TodoProgress). It fails with ErrInvalidEvent for bytes that are
// not a JSON object with a string "event" field, and with ErrUnknownEvent
// for a name it does not know.
func Decode(data []byte) (Event, error) {
	var head struct {
		Event *string `json:"event"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if head.Event == nil {
		return nil, fmt.Errorf(`%w: no "event" field naming the event`, ErrInvalidEvent)
	}
	var (
		ev  Event
		err error
	)
	switch *head.Event {
	case NameStart:
		ev, err = decodeAs[Start](data)
	case NameStatus:
		ev, err = decodeAs[Status](data)
	case NameToken:
		ev, err = decodeAs[Token](data)
	case NameHumanInputRequired:
		ev, err = decodeAs[HumanInputRequired](data)
	case NameEnd:
		ev, err = decodeAs[End](data)
	case NameSessionState:
		ev, err = decodeAs[SessionState](data)
	case NameLayerStart:
		ev, err = decodeAs[LayerStart](data)
	case NameTodoProgress:
		ev, err = decodeAs[TodoProgress](data)
	case NameHITLRequest:
		ev, err = decodeAs[HITLRequest](data)
	case NameComplete:
		ev, err = decodeAs[Complete](data)
	default:
		return nil, fmt.Errorf("%w %q (known: %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", ErrUnknownEvent, *head.Event,
			NameStart, NameStatus, NameToken, NameHumanInputRequired, NameEnd,
			NameSessionState, NameLayerStart, NameTodoProgress, NameHITLRequest, NameComplete)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, *head.Event, err)
	}
	return ev, nil
}

// decodeAs decodes data into a T, ignoring the "event" field (which the
// plain type does not have).
func decodeAs[T any](data []byte) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&v)
	return v, err
}
