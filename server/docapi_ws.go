package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// The WebSocket of a session (document 003's /ws/{session_id}) follows
// the session's runs: the last one when it connects (its events from its
// first, while the server keeps them), then each new one, whoever starts
// it (hitl_response on the socket, POST /approve, the LangGraph API).

// Bounds of a session's WebSocket.
const (
	// socketWriteTimeout bounds a message's write: a client that does not
	// read is let go.
	socketWriteTimeout = 10 * time.Second
	// socketPingEvery is how often the server pings the client, to find a
	// connection that died without closing.
	socketPingEvery = 30 * time.Second
)

// The messages a client sends.
const (
	msgHITLResponse = "hitl_response"
	msgPing         = "ping"
)

// The messages the server sends beyond the documents' events.
const (
	msgPong         = "pong"
	msgHITLAccepted = "hitl_accepted"
)

// clientMessage is a message a client sends over a session's WebSocket.
type clientMessage struct {
	// Type is "hitl_response" (answer what the session waits for) or
	// "ping" (answered "pong").
	Type string `json:"type"`
	// Data is a hitl_response's answer: the resume value, for the
	// orchestrator its decision ({"action": "accept"}).
	Data json.RawMessage `json:"data"`
	// InterruptID names the interrupt answered, when several wait.
	InterruptID string `json:"interrupt_id"`
}

// decodeClientMessage reads a client's message, naming the field at
// fault.
func decodeClientMessage(b []byte) (clientMessage, error) {
	var m clientMessage
	if err := api.Decode(b, &m); err != nil {
		return m, err
	}
	if len(b) > 0 && strings.TrimSpace(string(b))[0] != '{' {
		return m, invalidField("type", "a message is a JSON object with a \"type\"")
	}
	switch m.Type {
	case msgPing:
	case msgHITLResponse:
		if len(m.Data) == 0 || string(m.Data) == "null" {
			return m, invalidField("data", "required: the answer, e.g. {\"action\": \"accept\"}")
		}
		if m.InterruptID != "" && !graph.IsInterruptID(m.InterruptID) {
			return m, invalidField("interrupt_id", "want an interrupt id (32 hex digits), got %q", m.InterruptID)
		}
	case "":
		return m, invalidField("type", "required: %s or %s", msgHITLResponse, msgPing)
	default:
		return m, invalidField("type", "want %s or %s, got %q", msgHITLResponse, msgPing, m.Type)
	}
	return m, nil
}

// socketMessage is a message the server sends over a session's
// WebSocket: a document 003 event (type session_state, layer_start,
// todo_progress, hitl_request, complete) whose data is its agent/events
// JSON, an error, or an answer to the client (pong, hitl_accepted).
type socketMessage struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id,omitempty"`
	// Seq numbers the socket's messages from 0.
	Seq int `json:"seq"`
	// Derived marks an event the server made from the run, which the
	// agent did not send.
	Derived bool            `json:"derived,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   *errorJSON      `json:"error,omitempty"`
}

// codeNotWebSocket answers a request to /ws/ that is not a WebSocket
// upgrade.
var codeNotWebSocket = errorCode{1005, "websocket_upgrade_required", http.StatusUpgradeRequired}

// codeOriginRefused answers a WebSocket from an origin CORS does not
// allow.
var codeOriginRefused = errorCode{2003, "origin_not_allowed", http.StatusForbidden}

// checkUpgrade refuses a request that is not a WebSocket upgrade, in the
// document API's error shape (Accept would answer in text).
func checkUpgrade(r *http.Request) error {
	tokens := func(h string) []string {
		var out []string
		for _, v := range r.Header.Values(h) {
			for _, t := range strings.Split(v, ",") {
				out = append(out, strings.ToLower(strings.TrimSpace(t)))
			}
		}
		return out
	}
	has := func(list []string, t string) bool {
		for _, x := range list {
			if x == t {
				return true
			}
		}
		return false
	}
	switch {
	case !has(tokens("Connection"), "upgrade") || !has(tokens("Upgrade"), "websocket"):
		return &docError{code: codeNotWebSocket, field: "Upgrade", message: "this endpoint is a WebSocket: connect with Connection: Upgrade and Upgrade: websocket"}
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return &docError{code: codeNotWebSocket, field: "Sec-WebSocket-Version", message: "want WebSocket version 13"}
	case r.Header.Get("Sec-WebSocket-Key") == "":
		return &docError{code: codeNotWebSocket, field: "Sec-WebSocket-Key", message: "the WebSocket handshake lacks its key"}
	}
	return nil
}

// checkOrigin lets a browser's WebSocket in from the origins CORS allows
// (any, by default), and from the server's own host.
func (s *Server) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	o := s.opts.CORS
	if origin == "" || o == nil || len(o.AllowOrigins) == 0 || (len(o.AllowOrigins) == 1 && o.AllowOrigins[0] == "*") {
		return nil
	}
	for _, a := range o.AllowOrigins {
		if strings.EqualFold(a, origin) {
			return nil
		}
	}
	if u, err := url.Parse(origin); err == nil && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return &docError{code: codeOriginRefused, field: "Origin", message: "origin " + origin + " may not open this WebSocket (see the server's CORS origins)"}
}

// socketProtocol is the WebSocket subprotocol of the document API, and
// socketKeyProtocol the prefix of the one that carries an API key, for
// browsers, which cannot set a header on a WebSocket:
//
//	new WebSocket(url, ["weft", "weft.api-key." + key])
const (
	socketProtocol    = "weft"
	socketKeyProtocol = "weft.api-key."
)

// socketKey returns r, or for a WebSocket handshake to /ws/ that carries
// its API key as a subprotocol and in no header, a copy of r with the key
// in x-api-key, for the Authenticator.
func socketKey(r *http.Request) *http.Request {
	if !strings.HasPrefix(r.URL.Path, "/ws/") || r.Header.Get("X-Api-Key") != "" || r.Header.Get("Authorization") != "" {
		return r
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if key, ok := strings.CutPrefix(strings.TrimSpace(p), socketKeyProtocol); ok && key != "" {
				c := *r
				c.Header = r.Header.Clone()
				c.Header.Set("X-Api-Key", key)
				return &c
			}
		}
	}
	return r
}

// sessionSocket is GET /ws/{session_id}.
func (s *Server) sessionSocket(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r, "session_id")
	if err != nil {
		return err
	}
	t, err := s.ownSession(r, id)
	if err != nil {
		return err
	}
	if err := checkUpgrade(r); err != nil {
		return err
	}
	if err := s.checkOrigin(r); err != nil {
		return err
	}
	if !s.doc.openSocket() {
		return &docError{code: codeShuttingDown, message: "the server is shutting down", err: errShuttingDown}
	}
	defer s.doc.sockets.Done()
	// The origin is checked above. A browser that offered subprotocols
	// (its key among them) needs one chosen: "weft".
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{socketProtocol}})
	if err != nil {
		return nil // Accept answered
	}
	// The request's context is not to be used once the connection is
	// hijacked; its values (the user) are.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	conn.SetReadLimit(api.BodyLimit(ctx))
	k := &socket{s: s, conn: conn, ctx: ctx, cancel: cancel, r: r.WithContext(ctx), sessionID: id}
	k.serve(t)
	return nil
}

// socket is one client's WebSocket on a session.
type socket struct {
	s         *Server
	conn      *websocket.Conn
	ctx       context.Context
	cancel    context.CancelFunc
	r         *http.Request
	sessionID string
	// lastRun is the id of the last run followed; runs ids grow with
	// time.
	lastRun string
	seq     int
	// incoming carries the client's messages from the reader.
	incoming chan []byte
}

func (k *socket) serve(t records.Thread) {
	k.incoming = make(chan []byte)
	go k.read()
	go k.ping()
	defer k.conn.CloseNow()

	if !k.send(socketMessage{Type: events.NameSessionState, Derived: true,
		Data: mustJSON(derivedSessionState(k.sessionID, t.Status, "", "", t.Values))}) {
		return
	}
	// The session's last run: its events from the first kept, or how it
	// ended.
	runs, err := k.s.rec.ListRuns(k.ctx, records.RunQuery{Owner: t.Owner, ThreadID: k.sessionID, Limit: 1})
	if err != nil {
		k.fail(err)
		return
	}
	if len(runs) == 1 && !k.follow(runs[0]) {
		return
	}
	for {
		wake, release := k.s.doc.watch(k.sessionID)
		run, found, err := k.nextRun(t.Owner)
		if err != nil {
			release()
			k.fail(err)
			return
		}
		if found {
			release()
			if !k.follow(run) {
				return
			}
			continue
		}
		select {
		case <-wake:
		case b, ok := <-k.incoming:
			if !ok {
				release()
				return
			}
			k.handle(b)
		case <-k.s.doc.goAway:
			release()
			k.goAway()
			return
		case <-k.ctx.Done():
			release()
			return
		}
		release()
	}
}

// nextRun returns the session's oldest run after the last one followed.
func (k *socket) nextRun(owner string) (records.Run, bool, error) {
	runs, err := k.s.rec.ListRuns(k.ctx, records.RunQuery{Owner: owner, ThreadID: k.sessionID, Limit: 20})
	if err != nil {
		return records.Run{}, false, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].ID > k.lastRun {
			return runs[i], true, nil
		}
	}
	return records.Run{}, false, nil
}

// follow sends a run's events until it ends; false when the socket is
// done.
func (k *socket) follow(run records.Run) bool {
	k.lastRun = run.ID
	fctx, cancel := context.WithCancel(k.ctx)
	defer cancel()
	f := k.s.followRun(fctx, run)
	out := make(chan docEvent, 16)
	go func() {
		defer close(out)
		_, _ = k.s.followDoc(fctx, f, func(de docEvent) error {
			select {
			case out <- de:
				return nil
			case <-fctx.Done():
				return fctx.Err()
			}
		})
	}()
	for {
		select {
		case de, ok := <-out:
			if !ok {
				return true
			}
			if !k.sendEvent(run.ID, de) {
				return false
			}
		case b, ok := <-k.incoming:
			if !ok {
				return false
			}
			k.handle(b)
		case <-k.s.doc.goAway:
			// The runs of this process ended or were left to resume
			// before the sockets are told: send what is left of this one
			// first (a run of another process is not waited for).
			k.drain(run.ID, out)
			k.goAway()
			return false
		case <-k.ctx.Done():
			return false
		}
	}
}

// drainBound bounds how long a shutdown waits for the last events of a
// run a socket follows.
const drainBound = 2 * time.Second

// drain sends the events left of a run, until they end or drainBound.
func (k *socket) drain(runID string, out <-chan docEvent) {
	t := time.NewTimer(drainBound)
	defer t.Stop()
	for {
		select {
		case de, ok := <-out:
			if !ok || !k.sendEvent(runID, de) {
				return
			}
		case <-t.C:
			return
		}
	}
}

func (k *socket) sendEvent(runID string, de docEvent) bool {
	if !only(socketEvents, de) {
		return true
	}
	return k.send(socketMessage{Type: de.name, RunID: runID, Derived: de.derived, Data: de.data, Error: de.err})
}

// send writes a message; false when the connection failed.
func (k *socket) send(m socketMessage) bool {
	m.SessionID, m.Seq = k.sessionID, k.seq
	k.seq++
	b, err := json.Marshal(m)
	if err != nil {
		k.s.log.Error("server: encoding a WebSocket message", "session_id", k.sessionID, "err", err)
		return true
	}
	ctx, cancel := context.WithTimeout(k.ctx, socketWriteTimeout)
	defer cancel()
	if err := k.conn.Write(ctx, websocket.MessageText, b); err != nil {
		k.cancel()
		return false
	}
	return true
}

// sendError tells the client of a failure, with its code.
func (k *socket) sendError(runID string, err error) bool {
	e := errorOut(err)
	var re *runError
	if errors.As(err, &re) {
		e.SessionID, e.RunID = re.sessionID, re.runID
	}
	return k.send(socketMessage{Type: errorEventName, RunID: runID, Error: &e})
}

// fail ends the socket on a failure of the session's: deleted (1000), or
// the server's (1011).
func (k *socket) fail(err error) {
	if errors.Is(err, records.ErrNotFound) {
		k.sendError("", &docError{code: codeSessionNotFound, message: "session " + k.sessionID + " was deleted", err: errNoSuchThread})
		_ = k.conn.Close(websocket.StatusNormalClosure, "session deleted")
		return
	}
	if k.ctx.Err() != nil {
		return
	}
	k.s.log.Error("server: a session's WebSocket failed", "session_id", k.sessionID, "err", err)
	k.sendError("", err)
	_ = k.conn.Close(websocket.StatusInternalError, "server error")
}

// goAway closes the socket as the server shuts down.
func (k *socket) goAway() {
	_ = k.conn.Close(websocket.StatusGoingAway, "server shutting down")
}

// read passes the client's messages on until the connection ends.
func (k *socket) read() {
	defer close(k.incoming)
	for {
		typ, b, err := k.conn.Read(k.ctx)
		if err != nil {
			k.cancel()
			return
		}
		if typ != websocket.MessageText {
			b = nil // answered as not JSON
		}
		select {
		case k.incoming <- b:
		case <-k.ctx.Done():
			return
		}
	}
}

// ping finds a connection that died without closing.
func (k *socket) ping() {
	t := time.NewTicker(socketPingEvery)
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(k.ctx, socketWriteTimeout)
		err := k.conn.Ping(ctx)
		cancel()
		if err != nil {
			k.cancel()
			return
		}
	}
}

// handle answers a client's message.
func (k *socket) handle(b []byte) {
	if b == nil {
		k.sendError("", invalidField("type", "messages are JSON text"))
		return
	}
	m, err := decodeClientMessage(b)
	if err != nil {
		k.sendError("", err)
		return
	}
	switch m.Type {
	case msgPing:
		k.send(socketMessage{Type: msgPong})
	case msgHITLResponse:
		if secs, limited := k.s.rateLimited(k.ctx, k.r, user(k.r)); limited {
			k.sendError("", &docError{code: codeRateLimited, message: "too many requests: this client's rate limit is spent; retry after " + secs + " s", extra: map[string]any{"retry_after": secs}})
			return
		}
		lr, err := k.resume(m)
		if err != nil {
			k.sendError("", err)
			return
		}
		k.send(socketMessage{Type: msgHITLAccepted, RunID: lr.rec.ID, Data: m.Data})
	}
}

// resume answers the session's pending request with a hitl_response and
// starts the run that resumes it; the socket follows it as the session's
// next run.
func (k *socket) resume(m clientMessage) (*liveRun, error) {
	pending, err := k.s.pendingApproval(k.r, k.sessionID)
	if err != nil {
		return nil, err
	}
	p, err := pendingFor(pending, m.InterruptID, "interrupt_id")
	if err != nil {
		return nil, err
	}
	var d struct {
		Action *string `json:"action"`
	}
	if json.Unmarshal(m.Data, &d) == nil && d.Action != nil {
		if err := checkAction(p, *d.Action, "data.action"); err != nil {
			return nil, err
		}
	}
	id := ""
	if len(pending) > 1 || m.InterruptID != "" {
		id = p.InterruptID
	}
	lr, err := k.s.startDocRun(k.r, docRun{sessionID: k.sessionID, resume: byID(id, m.Data)})
	if err != nil {
		return nil, err
	}
	k.s.runs.launch(lr)
	return lr, nil
}
