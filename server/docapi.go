package server

// The design documents' own API (documents 001 and 003), a second face of
// the same threads and runs as the LangGraph Server API: a session is a
// thread, an agent run is a run, an approval resumes a run as
// command.resume does. docs/server.md describes the endpoints.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// docAPI holds what the document API keeps beyond the runs: who waits for
// a session's next run, the WebSockets open, and which graphs emit the
// documents' events themselves.
type docAPI struct {
	mu sync.Mutex
	// watchers are woken when a run is queued on their thread, or the
	// thread is deleted.
	watchers map[string]*watcher
	// goAway closes when the server shuts down: every WebSocket is then
	// closed with 1001 (going away).
	goAway  chan struct{}
	closing bool
	sockets sync.WaitGroup
	// emitters holds the graph ids seen emitting agent/events events, so
	// that no event is derived for them that they send themselves.
	emitters sync.Map
}

// watcher is the wake-up of a thread's watchers, and how many there are.
type watcher struct {
	ch chan struct{}
	n  int
}

func newDocAPI() *docAPI {
	return &docAPI{watchers: map[string]*watcher{}, goAway: make(chan struct{})}
}

// watch returns a channel closed when the next run is queued on threadID
// (in this process) or the thread is deleted, and a release to call when
// the caller stops waiting.
func (d *docAPI) watch(threadID string) (<-chan struct{}, func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.watchers[threadID]
	if w == nil {
		w = &watcher{ch: make(chan struct{})}
		d.watchers[threadID] = w
	}
	w.n++
	released := false
	return w.ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if released {
			return
		}
		released = true
		w.n--
		if w.n == 0 && d.watchers[threadID] == w {
			delete(d.watchers, threadID)
		}
	}
}

// runQueued wakes who watches threadID.
func (d *docAPI) runQueued(threadID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.watchers[threadID]; w != nil {
		close(w.ch)
		delete(d.watchers, threadID)
	}
}

// openSocket counts a WebSocket open; false once the server shuts down.
func (d *docAPI) openSocket() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return false
	}
	d.sockets.Add(1)
	return true
}

// socketBound is how long a shutdown waits for the WebSockets to close
// beyond its own deadline: the close handshake of each.
const socketBound = 5 * time.Second

// shutdown tells every WebSocket to close and waits for them, until ctx
// ends and socketBound more.
func (d *docAPI) shutdown(ctx context.Context) {
	d.mu.Lock()
	if !d.closing {
		d.closing = true
		close(d.goAway)
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.sockets.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(socketBound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func (d *docAPI) emits(graphID string) bool {
	_, ok := d.emitters.Load(graphID)
	return ok
}

// docWrap adapts a handler of the document API: its errors are answered
// with the document's error codes.
func (s *Server) docWrap(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		noteRoute(r)
		if i := reqInfoFrom(r.Context()); i != nil {
			if id := r.PathValue("session_id"); id != "" {
				i.threadID = id
			} else if id := r.PathValue("chat_id"); id != "" {
				i.threadID = id
			}
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("server: handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeErrorBody(w, http.StatusInternalServerError, errorJSON{Code: codePanic.Code, Name: codePanic.Name, Category: codePanic.cat(), Message: "internal error"})
			}
		}()
		if err := h(w, r); err != nil {
			s.writeDocError(w, r, err)
		}
	}
}

func (s *Server) docRoutes(mux *http.ServeMux) {
	handle := func(pattern string, h handlerFunc) { mux.Handle(pattern, s.docWrap(h)) }
	handle("GET /health", s.health)

	handle("POST /sessions", s.createSession)
	handle("GET /sessions", s.listSessions)
	handle("GET /sessions/{session_id}", s.getSession)
	handle("DELETE /sessions/{session_id}", s.deleteSession)

	handle("POST /agent/run", s.agentRun)
	handle("POST /agent/run-async", s.agentRunAsync)
	handle("POST /agent/stream", s.agentStream)
	handle("POST /approve/{chat_id}", s.approve)
	handle("GET /ws/{session_id}", s.sessionSocket)

	// What no route above takes, under the API's paths, is answered in
	// its shape too: 405 for a method a path does not take, else 404.
	for _, p := range []string{"/health", "/sessions", "/sessions/", "/agent/", "/ws/", "/approve/"} {
		handle(p, s.docNoRoute(mux, p))
	}
}

// The codes of requests no route of the document API takes.
var (
	codeNoSuchEndpoint   = errorCode{1006, "no_such_endpoint", http.StatusNotFound}
	codeMethodNotAllowed = errorCode{1007, "method_not_allowed", http.StatusMethodNotAllowed}
)

// docNoRoute answers a request that reached the catch-all pattern: the
// methods the path takes (Allow), or that there is no such endpoint.
func (s *Server) docNoRoute(mux *http.ServeMux, pattern string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			probe := *r
			probe.Method = m
			if _, p := mux.Handler(&probe); p != pattern && p != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			return &docError{code: codeNoSuchEndpoint, message: "no endpoint " + r.URL.Path}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &docError{code: codeMethodNotAllowed, message: r.URL.Path + " takes " + strings.Join(allow, ", ") + ", not " + r.Method}
	}
}

// healthTimeout bounds the health check's database query.
const healthTimeout = 2 * time.Second

// health answers whether the server can serve: its database answers
// within healthTimeout and it is not shutting down.
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	if s.runs.isClosing() {
		out := errorOut(&docError{code: codeShuttingDown, message: "the server is shutting down", err: errShuttingDown})
		writeErrorBody(w, codeShuttingDown.Status, out)
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	start := time.Now()
	err := s.rec.Ping(ctx)
	took := time.Since(start)
	db := map[string]any{"status": "ok", "latency_ms": float64(took.Microseconds()) / 1000}
	if err != nil {
		db["status"] = "unavailable"
		db["error"] = err.Error()
	}
	checks := map[string]any{"database": db}
	if err != nil {
		out := errorOut(&docError{code: codeDatabase, message: "the database did not answer within " + healthTimeout.String() + ": " + err.Error(), err: errDatabase})
		out.Details = checks
		writeErrorBody(w, codeDatabase.Status, out)
		return nil
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": stringsOr(s.opts.Version, "weft"), "checks": checks})
	return nil
}

// ---------------------------------------------------------------- sessions

// sessionJSON is a session: a thread as the document API shows it.
type sessionJSON struct {
	SessionID   string          `json:"session_id"`
	Status      string          `json:"status"`
	AssistantID string          `json:"assistant_id,omitempty"`
	GraphID     string          `json:"graph_id,omitempty"`
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   apiTime         `json:"created_at"`
	UpdatedAt   apiTime         `json:"updated_at"`
	// WebSocketURL is where the session's progress is followed.
	WebSocketURL string `json:"websocket_url"`
	// Values is the state after the last run; HITLRequests what the
	// session waits for (GET /sessions/{id} only).
	Values       json.RawMessage `json:"values,omitempty"`
	HITLRequests []hitlJSON      `json:"hitl_requests,omitempty"`
}

func (s *Server) sessionOut(r *http.Request, t records.Thread, full bool) sessionJSON {
	var meta struct {
		GraphID     string `json:"graph_id"`
		AssistantID string `json:"assistant_id"`
	}
	_ = json.Unmarshal(t.Metadata, &meta)
	out := sessionJSON{
		SessionID: t.ID, Status: t.Status, AssistantID: meta.AssistantID, GraphID: meta.GraphID, Metadata: t.Metadata,
		CreatedAt: apiTime(t.CreatedAt), UpdatedAt: apiTime(t.UpdatedAt), WebSocketURL: socketURL(r, t.ID),
	}
	if full {
		out.Values = t.Values
		if t.Status == records.ThreadInterrupted {
			out.HITLRequests = pendingRequests(t.Interrupts)
		}
	}
	return out
}

// socketURL is the WebSocket URL of a session, on the host the request
// came to.
func socketURL(r *http.Request, sessionID string) string {
	scheme := "ws"
	if r.TLS != nil {
		scheme = "wss"
	}
	return scheme + "://" + r.Host + "/ws/" + sessionID
}

// sessionID reads the session id of the path (name is session_id or
// chat_id): a UUID, or a 400 naming it.
func sessionID(r *http.Request, name string) (string, error) {
	v := r.PathValue(name)
	if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
		return "", invalidField(name, "want a UUID, got %q", v)
	}
	return v, nil
}

// ownSession returns the request user's session id: another user's is
// not found, as a missing one.
func (s *Server) ownSession(r *http.Request, id string) (records.Thread, error) {
	t, err := s.rec.GetThread(r.Context(), user(r), id)
	if errors.Is(err, records.ErrNotFound) {
		return records.Thread{}, &docError{code: codeSessionNotFound, field: "session_id", message: "session " + id + " not found", err: errNoSuchThread}
	}
	return t, err
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		SessionID   string          `json:"session_id"`
		AssistantID string          `json:"assistant_id"`
		Metadata    json.RawMessage `json:"metadata"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if err := jsonObject(req.Metadata, "metadata"); err != nil {
		return err
	}
	id := req.SessionID
	if id == "" {
		id = newThreadID()
	} else if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return invalidField("session_id", "want a UUID, got %q", id)
	}
	meta := map[string]json.RawMessage{}
	if len(req.Metadata) > 0 && string(req.Metadata) != "null" {
		if err := json.Unmarshal(req.Metadata, &meta); err != nil {
			return invalidField("metadata", "want an object")
		}
	}
	if req.AssistantID != "" {
		// The session belongs to that agent: a run of another is refused,
		// as on a thread that ran one.
		a, err := s.lookupAssistant(r, req.AssistantID)
		if err != nil {
			return &docError{code: codeAgentNotFound, field: "assistant_id", message: "no agent " + strconv.Quote(req.AssistantID) + " is served here", err: errNoSuchAssistant}
		}
		if _, err := s.servedGraphOf(a); err != nil {
			return err
		}
		meta["graph_id"], _ = json.Marshal(a.GraphID)
		meta["assistant_id"], _ = json.Marshal(a.ID)
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	t, err := s.rec.CreateThread(r.Context(), records.Thread{ID: id, Owner: user(r), Metadata: metaJSON}, false)
	if errors.Is(err, records.ErrConflict) {
		return &docError{code: codeSessionExists, field: "session_id", message: "session " + id + " already exists", err: err}
	}
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusCreated, s.sessionOut(r, t, true))
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r, "session_id")
	if err != nil {
		return err
	}
	t, err := s.ownSession(r, id)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, s.sessionOut(r, t, true))
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	num := func(name string, dflt, least, most int) (int, error) {
		v := q.Get(name)
		if v == "" {
			return dflt, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < least || n > most {
			return 0, invalidField(name, "want a whole number from %d to %d, got %q", least, most, v)
		}
		return n, nil
	}
	limit, err := num("limit", 20, 1, 1000)
	if err != nil {
		return err
	}
	offset, err := num("offset", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	status := q.Get("status")
	switch status {
	case "", records.ThreadIdle, records.ThreadBusy, records.ThreadInterrupted, records.ThreadError:
	default:
		return invalidField("status", "want idle, busy, interrupted or error, got %q", status)
	}
	list, total, err := s.rec.SearchThreads(r.Context(), records.ThreadQuery{Owner: user(r), Status: status, SortBy: "updated_at", Desc: true, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := make([]sessionJSON, len(list))
	for i, t := range list {
		out[i] = s.sessionOut(r, t, false)
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"sessions": out, "total": total, "limit": limit, "offset": offset})
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r, "session_id")
	if err != nil {
		return err
	}
	if _, err := s.ownSession(r, id); err != nil {
		return err
	}
	if err := s.removeThread(r.Context(), user(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
