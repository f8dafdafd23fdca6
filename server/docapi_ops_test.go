package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/weftlabs/weft/server"
)

// dialWith opens a WebSocket with the given headers, as a client of a
// server with real API keys.
func (s *testServer) dialWith(path string, headers ...string) (*socketClient, *http.Response, error) {
	s.t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.ts.URL, "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, res, err
	}
	s.t.Cleanup(func() { c.CloseNow() })
	return &socketClient{t: s.t, c: c}, res, nil
}

// With API keys each key is a user of the document API too: a request
// without one is a 401 with code 2001 (the WebSocket's upgrade too), the
// health check needs none, and one user's session is another's 404.
func TestDocAPIKeys(t *testing.T) {
	s := newRawServer(t, server.Options{Auth: keys(t)})
	alice := []string{"x-api-key", aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}
	for _, ep := range [][2]string{{"POST", "/agent/run"}, {"POST", "/agent/run-async"}, {"POST", "/agent/stream"}, {"GET", "/sessions"}, {"POST", "/sessions"}, {"POST", "/approve/5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2"}, {"GET", "/ws/5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2"}} {
		r := s.do(ep[0], ep[1], map[string]any{"user_input": "hi"}, "x-api-key", "mallory-0123456789abcdef")
		var e docErr
		if json.Unmarshal(r.body, &e) != nil || r.status != 401 || e.Error.Code != 2001 || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s without a valid key: %d %s", ep[0], ep[1], r.status, r.body)
		}
	}
	s.must(200, "GET", "/health", nil)

	out := agentRun{}
	s.must(200, "POST", "/agent/run", map[string]any{"user_input": "alice's secret", "assistant_id": "echo"}, alice...).json(t, &out)
	if out.Response.Text != "alice's secret" {
		t.Fatalf("alice's run = %+v", out)
	}
	s.mustErr(404, 3001, "GET", "/sessions/"+out.SessionID, nil, bob...)
	s.mustErr(404, 3001, "POST", "/agent/run", map[string]any{"user_input": "x", "session_id": out.SessionID}, bob...)
	if _, res, err := s.dialWith("/ws/"+out.SessionID, bob...); err == nil || res == nil || res.StatusCode != 404 {
		t.Errorf("bob's socket on alice's session: %v", err)
	}
	if _, res, err := s.dialWith("/ws/" + out.SessionID); err == nil || res == nil || res.StatusCode != 401 {
		t.Errorf("a socket without a key: %v", err)
	}
	c, _, err := s.dialWith("/ws/"+out.SessionID, alice...)
	if err != nil {
		t.Fatal(err)
	}
	ms := c.until(endedAs("idle"))
	if count(ms, "complete") != 1 {
		t.Errorf("alice's socket: %v", types(ms))
	}

	// A browser, which cannot set headers on a WebSocket, offers its key
	// as a subprotocol beside "weft", which the server chooses.
	browser := func(key string) (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.ts.URL, "http")+"/ws/"+out.SessionID,
			&websocket.DialOptions{Subprotocols: []string{"weft", "weft.api-key." + key}})
	}
	bc, _, err := browser(aliceKey)
	if err != nil {
		t.Fatalf("a browser's socket with its key: %v", err)
	}
	defer bc.CloseNow()
	if bc.Subprotocol() != "weft" {
		t.Errorf("subprotocol %q", bc.Subprotocol())
	}
	sc := &socketClient{t: t, c: bc}
	if m := sc.read(); m.Type != "session_state" {
		t.Errorf("first message = %+v", m)
	}
	if _, res, err := browser("mallory-0123456789abcdef"); err == nil || res == nil || res.StatusCode != 401 {
		t.Errorf("a browser's socket with a wrong key: %v", err)
	}
	if _, res, err := browser(bobKey); err == nil || res == nil || res.StatusCode != 404 {
		t.Errorf("bob's browser on alice's session: %v", err)
	}
}

// The rate limit counts the document API's requests, and each message a
// WebSocket takes; MaxRuns bounds its runs; MaxBodyBytes its bodies and
// messages.
func TestDocAPILimits(t *testing.T) {
	s := newRawServer(t, server.Options{Auth: keys(t), RateLimit: memoryLimiter(t, 3)})
	alice := []string{"x-api-key", aliceKey}
	sid := s.must(201, "POST", "/sessions", map[string]any{"assistant_id": "echo"}, alice...).obj(t)["session_id"].(string)
	c, _, err := s.dialWith("/ws/"+sid, alice...)
	if err != nil {
		t.Fatal(err)
	}
	c.read()
	c.send(map[string]any{"type": "ping"})
	if m := c.read(); m.Type != "pong" {
		t.Fatalf("ping = %+v", m)
	}
	s.must(200, "GET", "/sessions", nil, alice...)
	// The bucket of 3 is spent: a hitl_response is refused on the
	// socket, a request with 429.
	c.send(map[string]any{"type": "hitl_response", "data": map[string]any{"action": "accept"}})
	if m := c.read(); m.Type != "error" || m.Error == nil || m.Error.Code != 2002 {
		t.Fatalf("a hitl_response beyond the limit: %+v", m)
	}
	r := s.do("GET", "/sessions", nil, alice...)
	var e docErr
	if json.Unmarshal(r.body, &e) != nil || r.status != 429 || e.Error.Code != 2002 || r.header.Get("Retry-After") == "" {
		t.Errorf("beyond the limit: %d %s", r.status, r.body)
	}
	s.must(200, "GET", "/health", nil)

	runs := newServer(t, server.Options{MaxRuns: 1, MaxBodyBytes: 1024})
	first := runs.must(202, "POST", "/agent/run-async", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 300}}).obj(t)
	if e := runs.mustErr(503, 4007, "POST", "/agent/run-async", map[string]any{"assistant_id": "echo", "user_input": "one more"}); e.Error.Message == "" {
		t.Error("no message")
	}
	runs.must(200, "GET", "/threads/"+first["session_id"].(string)+"/runs/"+first["run_id"].(string)+"/join", nil)
	// A message beyond MaxBodyBytes closes the socket with 1009.
	big := runs.mustDial("/ws/" + first["session_id"].(string))
	big.read()
	big.send(map[string]any{"type": "hitl_response", "data": strings.Repeat("x", 2048)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for err == nil {
		_, _, err = big.c.Read(ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("a message too big: %v", err)
	}
}
