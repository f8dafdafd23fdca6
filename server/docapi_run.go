package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// MaxAgentRunWait is how long POST /agent/run waits for its run (document
// 003's 300 s); a request may ask for less.
const MaxAgentRunWait = 300 * time.Second

// agentRunRequest is the body of POST /agent/run, /agent/run-async and
// /agent/stream.
type agentRunRequest struct {
	// UserInput is the user's message; it becomes a human message of
	// the agent's messages. Input is the agent's input as a state
	// object instead, for agents that take no messages.
	UserInput *string         `json:"user_input"`
	Input     json.RawMessage `json:"input"`
	// SessionID continues a session; none starts a new one.
	SessionID string `json:"session_id"`
	// AssistantID names the agent: a graph id or an assistant id. None
	// takes the session's agent, or the one agent the server serves.
	AssistantID string          `json:"assistant_id"`
	Metadata    json.RawMessage `json:"metadata"`
	// Timeout bounds, in seconds, how long POST /agent/run waits (at
	// most 300, the default).
	Timeout *float64 `json:"timeout"`
}

// decodeAgentRun reads and checks an agent run request, naming the field
// at fault.
func decodeAgentRun(body []byte) (agentRunRequest, error) {
	var req agentRunRequest
	if len(strings.TrimSpace(string(body))) == 0 {
		return req, invalidField("user_input", "required: the request body is empty")
	}
	if err := api.Decode(body, &req); err != nil {
		return req, err
	}
	if err := refuseUnknown(body, &req); err != nil {
		return req, err
	}
	hasInput := len(req.Input) > 0 && string(req.Input) != "null"
	switch {
	case req.UserInput == nil && !hasInput:
		return req, invalidField("user_input", "required: the user's message (or \"input\", the agent's input as an object)")
	case req.UserInput != nil && hasInput:
		return req, invalidField("input", "give user_input or input, not both")
	case req.UserInput != nil && strings.TrimSpace(*req.UserInput) == "":
		return req, invalidField("user_input", "must not be empty")
	case hasInput && req.Input[0] != '{':
		return req, invalidField("input", "want an object of the agent's state keys, got %s", kindOf(req.Input))
	}
	if req.SessionID != "" {
		if _, err := uuid.Parse(req.SessionID); err != nil || len(req.SessionID) != 36 {
			return req, invalidField("session_id", "want a UUID, got %q", req.SessionID)
		}
	}
	if err := jsonObject(req.Metadata, "metadata"); err != nil {
		return req, err
	}
	if req.Timeout != nil && (math.IsNaN(*req.Timeout) || *req.Timeout <= 0 || *req.Timeout > MaxAgentRunWait.Seconds()) {
		return req, invalidField("timeout", "want seconds above 0 and at most %g, got %g", MaxAgentRunWait.Seconds(), *req.Timeout)
	}
	return req, nil
}

// refuseUnknown names a key of body's object that the request type dst
// (a pointer to a struct) does not take: a misspelt "sesion_id" would
// otherwise start a new session silently. The document API is weft's own,
// so it is strict where the LangGraph API follows its lenient reference.
func refuseUnknown(body []byte, dst any) error {
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) != nil {
		return nil // not an object: the decoder said what was wrong
	}
	t := reflect.TypeOf(dst).Elem()
	known := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			known = append(known, name)
		}
	}
	var unknown []string
	for k := range keys {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	slices.Sort(known)
	field := unknown[0]
	if field == "" {
		field = `""`
	}
	return invalidField(field, "unknown field; this request takes %s", strings.Join(known, ", "))
}

// readBody reads a request body within the server's bound.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var raw json.RawMessage
	if err := api.DecodeBody(w, r, 0, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// docRun is a run the document API asks for.
type docRun struct {
	sessionID string // "" starts a new session
	assistant string // "" takes the session's agent, or the only one
	input     json.RawMessage
	resume    json.RawMessage
	metadata  json.RawMessage
}

// startDocRun creates a run of the document API on the request user's
// session, not yet launched: the same run as the LangGraph API's, with
// the stream modes the documents' events are read from, its events kept
// after it ends (resumable) for clients that follow it late.
func (s *Server) startDocRun(r *http.Request, spec docRun) (*liveRun, error) {
	var sessionGraph *servedGraph
	var sessionAssistant string
	if spec.sessionID != "" {
		t, err := s.ownSession(r, spec.sessionID)
		if err != nil {
			return nil, err
		}
		if sessionGraph, err = s.threadGraph(t); err != nil {
			return nil, err
		}
		var meta struct {
			AssistantID string `json:"assistant_id"`
		}
		_ = json.Unmarshal(t.Metadata, &meta)
		sessionAssistant = meta.AssistantID
	}
	ref := spec.assistant
	switch {
	case ref != "":
	case sessionAssistant != "":
		ref = sessionAssistant
	case sessionGraph != nil:
		ref = sessionGraph.id
	case len(s.graphs) == 1:
		for id := range s.graphs {
			ref = id
		}
	default:
		ids := make([]string, 0, len(s.graphs))
		for id := range s.graphs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return nil, invalidField("assistant_id", "required: this server serves %d agents (%s)", len(ids), strings.Join(ids, ", "))
	}
	a, err := s.lookupAssistant(r, ref)
	if err != nil {
		return nil, &docError{code: codeAgentNotFound, field: "assistant_id", message: fmt.Sprintf("no agent %q is served here", ref), err: errNoSuchAssistant}
	}
	g, err := s.servedGraphOf(a)
	if err != nil {
		return nil, err
	}
	if sessionGraph != nil && sessionGraph != g {
		return nil, &docError{code: codeSessionOtherAgent, field: "assistant_id", message: fmt.Sprintf("session %s belongs to agent %q, not %q: start a new session for it", spec.sessionID, sessionGraph.id, g.id), err: records.ErrOtherGraph}
	}
	if len(spec.input) > 0 {
		if _, err := g.g.DecodeInput(spec.input); err != nil {
			return nil, inputError(err, g.id)
		}
	}
	id := spec.sessionID
	req := runRequest{
		AssistantID:     &a.ID,
		Input:           spec.input,
		Metadata:        spec.metadata,
		StreamMode:      json.RawMessage(`["updates","custom"]`),
		StreamResumable: true,
	}
	if len(spec.resume) > 0 {
		req.Command = &commandJSON{Resume: spec.resume}
	}
	if id == "" {
		id = newThreadID()
		req.IfNotExists = "create"
	}
	return s.newRun(r, &req, id)
}

// refuseClosing refuses a new run once the server shuts down.
func (s *Server) refuseClosing() error {
	if s.runs.isClosing() {
		return &docError{code: codeShuttingDown, message: "the server is shutting down and takes no new runs", err: errShuttingDown}
	}
	return nil
}

// inputError is a 400 (code 1004) for an input the agent cannot take,
// naming its key.
func inputError(err error, graphID string) error {
	de := &docError{code: codeInvalidInput, field: "input", err: err,
		message: fmt.Sprintf("agent %q cannot take this input: %v", graphID, err)}
	var ie *graph.InputError
	if errors.As(err, &ie) && ie.Key != "" {
		de.field = "input." + ie.Key
	}
	return de
}

// userInput is the agent input of a user's message: a human message on
// its messages.
func userInput(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"messages": []any{map[string]string{"role": "user", "content": text}}})
	return b
}

// agentRunSpec turns an agent run request into the run to start; for a
// user_input, it checks the agent takes messages.
func (s *Server) agentRunSpec(req agentRunRequest) docRun {
	spec := docRun{sessionID: req.SessionID, assistant: req.AssistantID, input: req.Input, metadata: req.Metadata}
	if req.UserInput != nil {
		spec.input = userInput(*req.UserInput)
	}
	return spec
}

// startAgentRun reads an agent run request and creates its run, not yet
// launched.
func (s *Server) startAgentRun(w http.ResponseWriter, r *http.Request) (*liveRun, agentRunRequest, error) {
	if err := s.refuseClosing(); err != nil {
		return nil, agentRunRequest{}, err
	}
	body, err := readBody(w, r)
	if err != nil {
		return nil, agentRunRequest{}, err
	}
	req, err := decodeAgentRun(body)
	if err != nil {
		return nil, req, err
	}
	lr, err := s.startDocRun(r, s.agentRunSpec(req))
	if err != nil && req.UserInput != nil {
		var de *docError
		if errors.As(err, &de) && de.code == codeInvalidInput {
			// The message did not fit the agent's input: say so of the
			// field the client gave.
			de.field = "user_input"
			de.message = fmt.Sprintf("%s; an agent without messages takes its input in \"input\"", de.message)
		}
	}
	return lr, req, err
}

// agentRunJSON is the answer of POST /agent/run: how the run ended, and
// the response (document 003's ResponseOutput: format, text,
// attachments, next_actions) or the request for a person it stopped at.
type agentRunJSON struct {
	SessionID    string          `json:"session_id"`
	RunID        string          `json:"run_id"`
	Status       string          `json:"status"`
	Response     json.RawMessage `json:"response,omitempty"`
	HITLRequests []hitlJSON      `json:"hitl_requests,omitempty"`
	Values       json.RawMessage `json:"values,omitempty"`
	WebSocketURL string          `json:"websocket_url"`
}

func (s *Server) agentRun(w http.ResponseWriter, r *http.Request) error {
	lr, req, err := s.startAgentRun(w, r)
	if err != nil {
		return err
	}
	wait := MaxAgentRunWait
	if req.Timeout != nil {
		wait = time.Duration(*req.Timeout * float64(time.Second))
	}
	ctx := r.Context()
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	f := followed{rec: lr.rec, lr: lr, tr: s.newTranslator(lr.rec, lr.graph.id, lr.kw)}
	f.events, _ = s.runs.broker.Subscribe(tctx, lr.rec.ID, -1)
	s.runs.launch(lr)
	var complete json.RawMessage
	var hitl []hitlJSON
	o, err := s.followDoc(tctx, f, func(de docEvent) error {
		switch de.name {
		case events.NameComplete:
			complete = de.data
		case events.NameHITLRequest:
			var h hitlJSON
			if json.Unmarshal(de.data, &h) == nil {
				h.Event = ""
				hitl = append(hitl, h)
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil // the client went away; the run goes on
		}
		if tctx.Err() != nil {
			return &runError{sessionID: lr.rec.ThreadID, runID: lr.rec.ID, err: &docError{code: codeRunTimeout, err: errRunTimeout,
				message: fmt.Sprintf("the run did not end within %s; it goes on: follow it at /ws/%s or read GET /sessions/%s", wait, lr.rec.ThreadID, lr.rec.ThreadID)}}
		}
		return err
	}
	if fail := o.failure(); fail != nil {
		return &runError{sessionID: lr.rec.ThreadID, runID: lr.rec.ID, err: fail}
	}
	out := agentRunJSON{SessionID: lr.rec.ThreadID, RunID: lr.rec.ID, Status: o.kind(), Values: o.values, WebSocketURL: socketURL(r, lr.rec.ThreadID)}
	if o.kind() == outcomeCompleted {
		out.Response = complete
	} else {
		out.HITLRequests = hitl
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) agentRunAsync(w http.ResponseWriter, r *http.Request) error {
	lr, _, err := s.startAgentRun(w, r)
	if err != nil {
		return err
	}
	s.runs.launch(lr)
	api.WriteJSON(w, http.StatusAccepted, map[string]string{
		"session_id":    lr.rec.ThreadID,
		"run_id":        lr.rec.ID,
		"status":        records.RunPending,
		"websocket_url": socketURL(r, lr.rec.ThreadID),
	})
	return nil
}

// agentStream runs the agent and streams document 001's events (START,
// STATUS, TOKEN, HUMAN_INPUT_REQUIRED, END) as server-sent events.
func (s *Server) agentStream(w http.ResponseWriter, r *http.Request) error {
	lr, _, err := s.startAgentRun(w, r)
	if err != nil {
		return err
	}
	s.streamDocEvents(w, r, lr)
	return nil
}

// streamDocEvents launches lr and streams its document 001 events until
// it ends or the client goes (the run goes on).
func (s *Server) streamDocEvents(w http.ResponseWriter, r *http.Request, lr *liveRun) {
	ctx := r.Context()
	f := followed{rec: lr.rec, lr: lr, tr: s.newTranslator(lr.rec, lr.graph.id, lr.kw)}
	f.events, _ = s.runs.broker.Subscribe(ctx, lr.rec.ID, -1)
	s.runs.launch(lr)
	w.Header().Set("Content-Location", "/sessions/"+lr.rec.ThreadID)
	out := startSSE(w)
	n := 0
	_, _ = s.followDoc(ctx, f, func(de docEvent) error {
		if !only(sseEvents, de) {
			return nil
		}
		ev := Event{ID: n, Name: strings.ToUpper(de.name), Data: de.data}
		n++
		return out.write([]Event{ev})
	})
}

// ---------------------------------------------------------------- approve

// approveRequest is the body of POST /approve/{chat_id}, as document 001
// updates the state with it: the user's action and what they edited.
type approveRequest struct {
	UserAction *string `json:"user_action"`
	// EditedContent is what an edit gives: the edited plan (an object,
	// or the list of todos), a step's parameters, a pause's changed
	// todos or ids to delete.
	EditedContent json.RawMessage `json:"edited_content"`
	// ClarificationResponse answers a clarification (clarify).
	ClarificationResponse *string `json:"clarification_response"`
	// PastID names the past clarification to reuse (reuse_past).
	PastID string `json:"past_id"`
	Reason string `json:"reason"`
	// InterruptID answers this interrupt, when several wait.
	InterruptID string `json:"interrupt_id"`
	// Resume, instead of the fields above, is the resume value as it is,
	// for an agent whose interrupts take another shape.
	Resume json.RawMessage `json:"resume"`
}

// decodeApprove reads an approval, naming the field at fault.
func decodeApprove(body []byte) (approveRequest, error) {
	var req approveRequest
	if len(strings.TrimSpace(string(body))) == 0 {
		return req, invalidField("user_action", "required: the request body is empty")
	}
	if err := api.Decode(body, &req); err != nil {
		return req, err
	}
	if err := refuseUnknown(body, &req); err != nil {
		return req, err
	}
	hasResume := len(req.Resume) > 0 && string(req.Resume) != "null"
	switch {
	case hasResume && req.UserAction != nil:
		return req, invalidField("resume", "give user_action or resume, not both")
	case !hasResume && (req.UserAction == nil || *req.UserAction == ""):
		return req, invalidField("user_action", "required: the action that answers the approval (accept, edit, reject...)")
	}
	return req, nil
}

// orchestratorKinds are the approval points of agent/orchestrator, whose
// decisions take the fields document 001's approval maps to.
var orchestratorKinds = []string{"clarification", "plan", "step", "error", "pause"}

// pendingFor returns the pending request an answer goes to: the one named
// by interruptID, or the first.
func pendingFor(pending []hitlJSON, interruptID, field string) (hitlJSON, error) {
	if len(pending) == 0 {
		return hitlJSON{}, &docError{code: codeNothingPending, message: "the session waits for no approval", err: errNothingPending}
	}
	if interruptID == "" {
		return pending[0], nil
	}
	for _, p := range pending {
		if p.InterruptID == interruptID {
			return p, nil
		}
	}
	ids := make([]string, len(pending))
	for i, p := range pending {
		ids[i] = p.InterruptID
	}
	return hitlJSON{}, &docError{code: codeInterruptNotFound, field: field, message: fmt.Sprintf("%s: interrupt %q is not pending (pending: %s)", field, interruptID, strings.Join(ids, ", ")),
		extra: map[string]any{"pending": ids}, err: errNoSuchInterrupt}
}

// checkAction refuses an action the pending request does not take.
func checkAction(p hitlJSON, action, field string) error {
	if len(p.Actions) == 0 || slices.Contains(p.Actions, action) {
		return nil
	}
	return &docError{code: codeActionNotOffered, field: field, err: errActionNotOffered,
		message: fmt.Sprintf("%s: the pending %s approval takes %s, not %q", field, p.Kind, strings.Join(p.Actions, ", "), action),
		extra:   map[string]any{"actions": p.Actions}}
}

// byID makes a resume value answer interrupt id alone (a resume by id).
func byID(id string, v json.RawMessage) json.RawMessage {
	if id == "" {
		return v
	}
	b, _ := json.Marshal(map[string]json.RawMessage{id: v})
	return b
}

// approvalResume turns document 001's approval into the resume value of
// the pending request: for the orchestrator's points, its decision
// ({"action", "plan" | "params" | "todos" | "delete" | "answer" |
// "past_id", "reason"}).
func approvalResume(p hitlJSON, req approveRequest, several bool) (json.RawMessage, error) {
	id := ""
	if several || req.InterruptID != "" {
		id = p.InterruptID
	}
	if len(req.Resume) > 0 && string(req.Resume) != "null" {
		var d struct {
			Action *string `json:"action"`
		}
		if json.Unmarshal(req.Resume, &d) == nil && d.Action != nil {
			if err := checkAction(p, *d.Action, "resume.action"); err != nil {
				return nil, err
			}
		}
		return byID(id, req.Resume), nil
	}
	action := *req.UserAction
	if err := checkAction(p, action, "user_action"); err != nil {
		return nil, err
	}
	d := map[string]any{"action": action}
	if req.Reason != "" {
		d["reason"] = req.Reason
	}
	content := req.EditedContent
	has := len(content) > 0 && string(content) != "null"
	need := func(what string) error {
		if !has {
			return invalidField("edited_content", "required to %s %s", action, what)
		}
		return nil
	}
	if !slices.Contains(orchestratorKinds, p.Kind) {
		if has {
			d["edited_content"] = content
		}
	} else {
		switch {
		case p.Kind == "plan" && action == "edit":
			if err := need("the plan: the edited plan ({\"todos\": [...]}) or its list of todos"); err != nil {
				return nil, err
			}
			if content[0] == '[' {
				d["plan"] = map[string]json.RawMessage{"todos": content}
			} else {
				d["plan"] = content
			}
		case p.Kind == "step" && action == "edit":
			if err := need("the step: the tool's parameters as an object"); err != nil {
				return nil, err
			}
			d["params"] = content
		case p.Kind == "pause" && action == "modify":
			if err := need("the todos: the changed todos"); err != nil {
				return nil, err
			}
			d["todos"] = content
		case p.Kind == "pause" && action == "delete":
			if err := need("todos: the ids of the todos to delete"); err != nil {
				return nil, err
			}
			d["delete"] = content
		case p.Kind == "clarification" && action == "clarify":
			answer := ""
			switch {
			case req.ClarificationResponse != nil:
				answer = *req.ClarificationResponse
			case has && json.Unmarshal(content, &answer) == nil:
			}
			if strings.TrimSpace(answer) == "" {
				return nil, invalidField("clarification_response", "required to clarify: the answer to the question")
			}
			d["answer"] = answer
		case p.Kind == "clarification" && action == "reuse_past":
			past := req.PastID
			if past == "" && has {
				_ = json.Unmarshal(content, &past)
			}
			if past != "" {
				d["past_id"] = past
			}
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return byID(id, b), nil
}

// pendingApproval returns what the request user's session waits for: 409
// while a run goes, or when it waits for nothing.
func (s *Server) pendingApproval(r *http.Request, id string) ([]hitlJSON, error) {
	t, err := s.ownSession(r, id)
	if err != nil {
		return nil, err
	}
	switch t.Status {
	case records.ThreadBusy:
		return nil, &docError{code: codeSessionBusy, message: "session " + id + " has a run going: answer once it stops for approval", err: records.ErrBusy}
	case records.ThreadInterrupted:
		if p := pendingRequests(t.Interrupts); len(p) > 0 {
			return p, nil
		}
	}
	return nil, &docError{code: codeNothingPending, message: "session " + id + " waits for no approval (it is " + t.Status + ")", err: errNothingPending}
}

// approve answers a pending approval of document 001 and resumes the
// run; with Accept: text/event-stream the resumed run's events are
// streamed back.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r, "chat_id")
	if err != nil {
		return err
	}
	if err := s.refuseClosing(); err != nil {
		return err
	}
	pending, err := s.pendingApproval(r, id)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	req, err := decodeApprove(body)
	if err != nil {
		return err
	}
	p, err := pendingFor(pending, req.InterruptID, "interrupt_id")
	if err != nil {
		return err
	}
	resume, err := approvalResume(p, req, len(pending) > 1)
	if err != nil {
		return err
	}
	lr, err := s.startDocRun(r, docRun{sessionID: id, resume: resume})
	if err != nil {
		return err
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.streamDocEvents(w, r, lr)
		return nil
	}
	s.runs.launch(lr)
	api.WriteJSON(w, http.StatusAccepted, map[string]string{
		"chat_id":       id,
		"run_id":        lr.rec.ID,
		"status":        "resumed",
		"websocket_url": socketURL(r, id),
	})
	return nil
}
