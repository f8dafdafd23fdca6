package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server/internal/records"
)

// The events of the document API come from a run's stream: the
// agent/events events a graph emits to its custom stream (the
// orchestrator does) are passed on as they are; for what a graph does not
// emit, the server derives an honest equivalent from the run, marked
// derived:
//
//   - session_state (document 003) when a run starts and ends, with the
//     session's status and the todos of its state (if it has any);
//   - hitl_request (003) and HUMAN_INPUT_REQUIRED (001) from the run's
//     interrupts;
//   - complete (003), TOKEN and END (001) from the run's end: its last AI
//     message as the answer;
//   - START (001) when a run on a new input starts, STATUS (001) as each
//     node ends.
//
// layer_start and todo_progress are never derived: a graph without the
// orchestrator's layers and todos has none to tell.

// errorEventName names, among docEvents, a run's failure (the WebSocket's
// "error" message).
const errorEventName = "error"

// docEvent is one event of the documents' vocabularies.
type docEvent struct {
	// name is an agent/events name (events.NameTodoProgress...) or
	// errorEventName.
	name string
	// data is the event's JSON, as agent/events encodes it (with
	// "derived": true when the server made it).
	data    json.RawMessage
	derived bool
	// err describes a failure (name errorEventName).
	err *errorJSON
}

// The events of each transport.
var (
	socketEvents = []string{events.NameSessionState, events.NameLayerStart, events.NameTodoProgress, events.NameHITLRequest, events.NameComplete, errorEventName}
	sseEvents    = []string{events.NameStart, events.NameStatus, events.NameToken, events.NameHumanInputRequired, events.NameEnd}
)

// runOutcome is how a run ended.
type runOutcome struct {
	// status is the run's (records.Run*).
	status string
	// values is the state after the run, without its interrupts.
	values     json.RawMessage
	interrupts []graph.Interruption
	// err is why it failed or stopped (typed when this process ran it).
	err error
}

// The kinds of outcome.
const (
	outcomeCompleted   = "completed"
	outcomeInterrupted = "interrupted"
	outcomeFailed      = "failed"
	outcomeCancelled   = "cancelled"
	outcomePending     = "pending"
)

func (o runOutcome) kind() string {
	switch o.status {
	case records.RunSuccess:
		if len(o.interrupts) > 0 {
			return outcomeInterrupted
		}
		return outcomeCompleted
	case records.RunError, records.RunTimeout:
		return outcomeFailed
	case records.RunInterrupted:
		return outcomeCancelled
	}
	return outcomePending
}

// sessionStatus is the status the run leaves its session in.
func (o runOutcome) sessionStatus() string {
	switch o.kind() {
	case outcomeCompleted, outcomeCancelled:
		return records.ThreadIdle
	case outcomeInterrupted:
		return records.ThreadInterrupted
	case outcomeFailed:
		return records.ThreadError
	}
	return records.ThreadBusy
}

// failure is the error a run that did not complete is told with.
func (o runOutcome) failure() error {
	switch o.kind() {
	case outcomeFailed:
		if o.err != nil {
			return o.err
		}
		return &docError{code: codeRunFailed, message: "the run failed (it ran in another process, or before this one started: its error is not known here)"}
	case outcomeCancelled:
		return &docError{code: codeRunCancelled, message: "the run was cancelled", err: errCancelled}
	case outcomePending:
		return &docError{code: codeShuttingDown, message: "the server stopped before the run ended; it resumes from its last checkpoint when a server starts again", err: errShuttingDown}
	}
	return nil
}

// splitInterrupts separates a run's last values from the interrupts a
// wait answers with them (__interrupt__).
func splitInterrupts(result json.RawMessage) (values json.RawMessage, its []graph.Interruption) {
	if len(result) == 0 || result[0] != '{' {
		return result, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return result, nil
	}
	raw, ok := m["__interrupt__"]
	if !ok {
		return result, nil
	}
	_ = json.Unmarshal(raw, &its)
	delete(m, "__interrupt__")
	values, _ = json.Marshal(m)
	return values, its
}

// liveOutcome is how a run this process held ended; it waits for the
// run's end.
func liveOutcome(ctx context.Context, lr *liveRun) (runOutcome, error) {
	select {
	case <-lr.done:
	case <-ctx.Done():
		return runOutcome{}, ctx.Err()
	}
	o := runOutcome{status: lr.status, err: lr.err}
	if lr.status != records.RunError {
		o.values, o.interrupts = splitInterrupts(lr.result)
	}
	return o, nil
}

// storedOutcome is how a run ended, read from the records: for a run
// another process ran, or that ended before it was followed. The session
// tells the state and interrupts it left.
func (s *Server) storedOutcome(ctx context.Context, run records.Run) (runOutcome, error) {
	if run.Status == records.RunPending || run.Status == records.RunRunning {
		if err := s.runs.waitStored(ctx, run.Owner, run.ThreadID, run.ID); err != nil {
			return runOutcome{}, err
		}
		var err error
		if run, err = s.rec.GetRun(ctx, run.Owner, run.ThreadID, run.ID); err != nil {
			return runOutcome{}, err
		}
	}
	t, err := s.rec.GetThread(ctx, run.Owner, run.ThreadID)
	if err != nil {
		return runOutcome{}, err
	}
	o := runOutcome{status: run.Status, values: t.Values}
	if t.Status == records.ThreadInterrupted {
		o.interrupts = pendingInterrupts(t.Interrupts)
	}
	return o, nil
}

// pendingInterrupts reads a thread's interrupts by task, in task order.
func pendingInterrupts(raw json.RawMessage) []graph.Interruption {
	var byTask map[string][]graph.Interruption
	if json.Unmarshal(raw, &byTask) != nil {
		return nil
	}
	tasks := make([]string, 0, len(byTask))
	for id := range byTask {
		tasks = append(tasks, id)
	}
	sort.Strings(tasks)
	var out []graph.Interruption
	for _, id := range tasks {
		out = append(out, byTask[id]...)
	}
	return out
}

// hitlJSON is a request for a person: document 003's hitl_request, as
// agent/events encodes it, with the interrupt's id when the server
// derived it.
type hitlJSON struct {
	Event       string          `json:"event,omitempty"`
	Kind        string          `json:"kind"`
	Message     string          `json:"message"`
	Actions     []string        `json:"actions"`
	Request     json.RawMessage `json:"request"`
	InterruptID string          `json:"interrupt_id,omitempty"`
	Derived     bool            `json:"derived,omitempty"`
}

// hitlOf reads what an interrupt asks: its value's kind, message and
// actions when it is an object that has them (the orchestrator's
// requests do), its text when it is a string.
func hitlOf(it graph.Interruption) hitlJSON {
	raw, err := json.Marshal(it.Value)
	if err != nil {
		raw = []byte("null")
	}
	h := hitlJSON{Kind: "interrupt", Actions: []string{}, Request: raw, InterruptID: it.ID}
	switch v := it.Value.(type) {
	case string:
		h.Message = v
	case map[string]any:
		if k, ok := v["kind"].(string); ok && k != "" {
			h.Kind = k
		}
		if m, ok := v["message"].(string); ok {
			h.Message = m
		} else if q, ok := v["question"].(string); ok {
			h.Message = q
		}
		if as, ok := v["actions"].([]any); ok {
			for _, a := range as {
				if s, ok := a.(string); ok {
					h.Actions = append(h.Actions, s)
				}
			}
		}
	default:
		// A value made in this process (a Go struct): read its JSON.
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil && m != nil {
			return hitlOf(graph.Interruption{ID: it.ID, Value: m})
		}
	}
	return h
}

// pendingRequests are what a session's interrupts ask.
func pendingRequests(raw json.RawMessage) []hitlJSON {
	its := pendingInterrupts(raw)
	out := make([]hitlJSON, len(its))
	for i, it := range its {
		out[i] = hitlOf(it)
	}
	return out
}

// lastAnswer is the text of the last AI message of a state's messages:
// a run's answer, for graphs that do not send one.
func lastAnswer(values json.RawMessage) string {
	var st struct {
		Messages []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(values, &st) != nil {
		return ""
	}
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := st.Messages[i]
		if m.Type != "ai" && m.Role != "assistant" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			return text
		}
		// Content parts: the text ones, joined.
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			var b bytes.Buffer
			for _, p := range parts {
				if p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			return b.String()
		}
		return ""
	}
	return ""
}

// sessionStateJSON is a session_state the server derives: the fields of
// agent/events' SessionState, read from the session's state where it has
// them (task, todos), and the session's status.
type sessionStateJSON struct {
	Event     string             `json:"event"`
	Thread    string             `json:"thread_id"`
	Task      int                `json:"task"`
	Layer     string             `json:"layer"`
	Todos     []events.TodoState `json:"todos"`
	Status    string             `json:"status"`
	RunID     string             `json:"run_id,omitempty"`
	RunStatus string             `json:"run_status,omitempty"`
	Derived   bool               `json:"derived"`
}

func derivedSessionState(sessionID, status, runID, runStatus string, values json.RawMessage) sessionStateJSON {
	st := sessionStateJSON{Event: events.NameSessionState, Thread: sessionID, Todos: []events.TodoState{},
		Status: status, RunID: runID, RunStatus: runStatus, Derived: true}
	var v struct {
		Task  json.RawMessage `json:"task"`
		Todos json.RawMessage `json:"todos"`
	}
	if json.Unmarshal(values, &v) == nil {
		_ = json.Unmarshal(v.Task, &st.Task)
		var todos []events.TodoState
		if json.Unmarshal(v.Todos, &todos) == nil && todos != nil {
			st.Todos = todos
		}
	}
	return st
}

// withDerived marks an agent/events event's JSON as made by the server.
func withDerived(ev events.Event) json.RawMessage {
	b, err := json.Marshal(ev)
	if err != nil || len(b) < 2 {
		return b
	}
	return append(b[:len(b)-1], `,"derived":true}`...)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// translator turns one run's stream into the documents' events.
type translator struct {
	d                         *docAPI
	sessionID, runID, graphID string
	// newTask is set for a run on a new input (not a resume): its start
	// is document 001's START.
	newTask bool
	request string
	now     func() time.Time

	// seen holds the agent/events names the run emitted itself.
	seen    map[string]bool
	emitter bool
	started bool
	// failed is the run's error event ({"error", "message"}), for a run
	// whose typed error is not at hand.
	failed *struct{ Error, Message string }
	// held are the agent's requests for a person (hitl_request,
	// human_input_required), sent once the run has stopped, so that an
	// answer sent on them finds the session waiting for it.
	held []docEvent
}

func (s *Server) newTranslator(run records.Run, graphID string, kw runKwargs) *translator {
	t := &translator{d: s.doc, sessionID: run.ThreadID, runID: run.ID, graphID: graphID, now: time.Now, seen: map[string]bool{}}
	t.emitter = s.doc.emits(graphID)
	if kw.Command == nil && len(kw.Input) > 0 && string(kw.Input) != "null" {
		t.newTask = true
		t.request = requestText(kw.Input)
	}
	return t
}

// requestText is the text of the last human message of a run's input:
// the request START names.
func requestText(input json.RawMessage) string {
	var in struct {
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	var text string
	if json.Unmarshal(in.Messages, &text) == nil {
		return text
	}
	var list []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(in.Messages, &list) != nil {
		var one struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(in.Messages, &one) == nil && json.Unmarshal(one.Content, &text) == nil {
			return text
		}
		return ""
	}
	for i := len(list) - 1; i >= 0; i-- {
		m := list[i]
		if m.Type == "human" || m.Role == "user" || m.Role == "human" {
			if json.Unmarshal(m.Content, &text) == nil {
				return text
			}
		}
	}
	return ""
}

// start returns START, derived, if the run is a new task whose start was
// not told yet and ev (nil at the run's end) is not the agent's own.
func (t *translator) start(ev events.Event) []docEvent {
	if t.started || !t.newTask {
		return nil
	}
	t.started = true
	if ev != nil && ev.Name() == events.NameStart {
		return nil
	}
	st := events.Start{Thread: t.sessionID, Request: t.request, Time: t.now().UTC()}
	return []docEvent{{name: events.NameStart, data: withDerived(st), derived: true}}
}

// batch translates a batch of the run's stream events.
func (t *translator) batch(evs []Event) []docEvent {
	var out []docEvent
	for _, e := range evs {
		switch e.Name {
		case "metadata":
			st := derivedSessionState(t.sessionID, records.ThreadBusy, t.runID, records.RunRunning, nil)
			out = append(out, docEvent{name: events.NameSessionState, data: mustJSON(st), derived: true})
		case "error":
			var f struct{ Error, Message string }
			if json.Unmarshal(e.Data, &f) == nil {
				t.failed = &f
			}
		case modeCustom:
			ev, err := events.Decode(e.Data)
			if err != nil {
				continue // not an agent/events event
			}
			if !t.emitter {
				t.emitter = true
				t.d.emitters.Store(t.graphID, true)
			}
			out = append(out, t.start(ev)...)
			t.seen[ev.Name()] = true
			de := docEvent{name: ev.Name(), data: e.Data}
			if n := ev.Name(); n == events.NameHITLRequest || n == events.NameHumanInputRequired {
				t.held = append(t.held, de)
				continue
			}
			out = append(out, de)
		case modeUpdates:
			out = append(out, t.start(nil)...)
			if t.emitter {
				continue
			}
			var u map[string]json.RawMessage
			if json.Unmarshal(e.Data, &u) != nil {
				continue
			}
			nodes := make([]string, 0, len(u))
			for n := range u {
				if n != "__interrupt__" {
					nodes = append(nodes, n)
				}
			}
			sort.Strings(nodes)
			for _, n := range nodes {
				st := events.Status{Message: fmt.Sprintf("%s done", n), Node: n}
				out = append(out, docEvent{name: events.NameStatus, data: withDerived(st), derived: true})
			}
		}
	}
	return out
}

// finish translates a run's end: what the agent did not send of its
// answer, its requests for a person, its failure, and the session's state.
func (t *translator) finish(o runOutcome) []docEvent {
	out := t.start(nil)
	derive := func(ev events.Event) {
		if !t.seen[ev.Name()] {
			out = append(out, docEvent{name: ev.Name(), data: withDerived(ev), derived: true})
		}
	}
	switch kind := o.kind(); kind {
	case outcomeCompleted:
		text := lastAnswer(o.values)
		if text != "" {
			derive(events.Token{Text: text})
		}
		derive(events.Complete{Format: "text", Text: text})
		derive(events.End{Status: events.EndDone})
	case outcomeInterrupted:
		out = append(out, t.held...)
		if !t.seen[events.NameHITLRequest] {
			for _, it := range o.interrupts {
				h := hitlOf(it)
				h.Event, h.Derived = events.NameHITLRequest, true
				out = append(out, docEvent{name: events.NameHITLRequest, data: mustJSON(h), derived: true})
			}
		}
		if !t.seen[events.NameHumanInputRequired] {
			for _, it := range o.interrupts {
				h := hitlOf(it)
				out = append(out, docEvent{name: events.NameHumanInputRequired, data: withDerived(events.HumanInputRequired{Kind: h.Kind, Message: h.Message, Actions: h.Actions}), derived: true})
			}
		}
	default:
		fail := o.failure()
		if kind == outcomeFailed && o.err == nil && t.failed != nil {
			fail = &docError{code: errorEventCode(t.failed.Error), message: t.failed.Message}
		}
		e := errorOut(fail)
		e.SessionID, e.RunID = t.sessionID, t.runID
		out = append(out, docEvent{name: errorEventName, err: &e})
		switch kind {
		case outcomeFailed:
			derive(events.End{Status: events.EndFailed, Message: e.Message, Error: &events.Error{Code: e.Name, Message: e.Message}})
		case outcomeCancelled:
			derive(events.End{Status: events.EndAborted, Message: e.Message})
		case outcomePending:
			st := events.Status{Message: e.Message}
			out = append(out, docEvent{name: events.NameStatus, data: withDerived(st), derived: true})
		}
	}
	st := derivedSessionState(t.sessionID, o.sessionStatus(), t.runID, o.status, o.values)
	out = append(out, docEvent{name: events.NameSessionState, data: mustJSON(st), derived: true})
	return out
}

// errorEventCode is the code of a run's failure told by its stream's
// error event only (the run ended before it was followed here): the event
// names the failure's kind as errorEvent made it from the typed error.
func errorEventCode(name string) errorCode {
	switch name {
	case "InvalidInputError":
		return codeInvalidInput
	case "GraphRecursionError":
		return codeRecursionLimit
	case "InvalidUpdateError":
		return codeInvalidUpdate
	case "TimeoutError":
		return codeNodeTimeout
	case "LeaseLostError":
		return codeLeaseLost
	case "CancelledError":
		return codeRunCancelled
	}
	return codeRunFailed
}

// followed is a run to translate: its record, the live run when this
// process holds it, and its stream when the broker has one.
type followed struct {
	rec    records.Run
	lr     *liveRun
	events iter.Seq2[[]Event, error]
	tr     *translator
}

// followDoc sends a run's documents' events to emit, those of its stream
// then those of its end, and returns how it ended. It returns early, with
// ctx's error, when ctx ends, or with emit's.
func (s *Server) followDoc(ctx context.Context, f followed, emit func(docEvent) error) (runOutcome, error) {
	if f.events != nil {
		for batch, err := range f.events {
			if err != nil {
				if errors.Is(err, ErrStreamTrimmed) {
					e := errorOut(err)
					e.SessionID, e.RunID = f.rec.ThreadID, f.rec.ID
					if err := emit(docEvent{name: errorEventName, err: &e}); err != nil {
						return runOutcome{}, err
					}
					break
				}
				return runOutcome{}, err
			}
			for _, de := range f.tr.batch(batch) {
				if err := emit(de); err != nil {
					return runOutcome{}, err
				}
			}
		}
	}
	var o runOutcome
	var err error
	if f.lr != nil {
		o, err = liveOutcome(ctx, f.lr)
	} else {
		o, err = s.storedOutcome(ctx, f.rec)
	}
	if err != nil {
		return runOutcome{}, err
	}
	for _, de := range f.tr.finish(o) {
		if err := emit(de); err != nil {
			return o, err
		}
	}
	return o, nil
}

// followRun prepares a run of the session to follow: the live run when
// this process holds it, and its stream from its first event kept.
func (s *Server) followRun(ctx context.Context, run records.Run) followed {
	f := followed{rec: run, lr: s.runs.live(run.Owner, run.ThreadID, run.ID)}
	kw, _ := decodeKwargs(run.Kwargs)
	graphID := ""
	if f.lr != nil {
		graphID = f.lr.graph.id
	} else if a, err := s.rec.GetAssistant(ctx, run.Owner, run.AssistantID); err == nil {
		graphID = a.GraphID
	}
	f.tr = s.newTranslator(run, graphID, kw)
	if evs, ok := s.runs.broker.Subscribe(ctx, run.ID, -1); ok {
		f.events = evs
	}
	return f
}

// only keeps the events a transport sends.
func only(names []string, de docEvent) bool { return slices.Contains(names, de.name) }
