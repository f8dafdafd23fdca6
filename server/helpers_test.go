package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/server/internal/auth"
)

// testServer is a Server over HTTP, with a client that can act for a
// user.
type testServer struct {
	t   *testing.T
	srv *server.Server
	ts  *httptest.Server
	// user is the user requests act for ("" without authentication).
	user string
}

// testLog writes the server's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// userHeader carries the acting user to the test's auth middleware.
const userHeader = "X-Test-User"

func apitestGraphs() map[string]server.GraphFunc {
	out := map[string]server.GraphFunc{}
	for id, b := range apitest.All() {
		out[id] = b
	}
	return out
}

// newServer starts a server over the apitest graphs; opts.Graphs and
// opts.DB default to those graphs and memory. It is shut down when the
// test ends.
func newServer(t *testing.T, opts server.Options) *testServer {
	t.Helper()
	return wrap(t, startServer(t, opts))
}

// startServer builds a server over the apitest graphs (opts.Graphs and
// opts.DB default to those graphs and memory), shut down when the test
// ends.
func startServer(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	if opts.Graphs == nil {
		opts.Graphs = apitestGraphs()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	srv, err := server.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownServer(t, srv) })
	return srv
}

// shutdownServer shuts srv down, waiting at most 10 s; its error fails
// the test.
func shutdownServer(t *testing.T, srv *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// testLogger writes a server's log to the test's.
func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(testLog{t}, nil)) }

// wrap serves srv over HTTP until the test ends.
func wrap(t *testing.T, srv *server.Server) *testServer {
	// Tests act for users by a header, standing in for the API key
	// middleware that maps a key to a user.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get(userHeader); u != "" {
			r = r.WithContext(auth.WithUser(r.Context(), u))
		}
		srv.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return &testServer{t: t, srv: srv, ts: ts}
}

// pgURLs maps the databases the tests made to their URLs.
var pgURLs = map[string]string{}

// backends opens a database for each durable backend.
var backends = []struct {
	name string
	open func(t *testing.T) *dburl.DB
}{
	{"sqlite", func(t *testing.T) *dburl.DB {
		db, err := dburl.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), dburl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}},
	{"postgres", func(t *testing.T) *dburl.DB {
		url := pgtest.NewDatabase(t, "weft_server_")
		db, err := dburl.Open(context.Background(), url, dburl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pgURLs[db.Target] = url
		t.Cleanup(func() { db.Close() })
		return db
	}},
}

// as returns a client acting for user.
func (s *testServer) as(user string) *testServer {
	c := *s
	c.user = user
	return &c
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %d is not the JSON expected: %v\n%s", r.status, err, r.body)
	}
}

// obj decodes the body as a JSON object.
func (r response) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.json(t, &m)
	return m
}

func (s *testServer) do(method, path string, body any, headers ...string) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.ts.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.user != "" {
		req.Header.Set(userHeader, s.user)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := s.ts.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// must does a request and fails the test unless it answers want.
func (s *testServer) must(want int, method, path string, body any, headers ...string) response {
	s.t.Helper()
	r := s.do(method, path, body, headers...)
	if r.status != want {
		s.t.Fatalf("%s %s: status %d, want %d\n%s", method, path, r.status, want, r.body)
	}
	return r
}

// newThread creates a thread and returns its id.
func (s *testServer) newThread() string {
	s.t.Helper()
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	s.must(200, "POST", "/threads", map[string]any{}).json(s.t, &th)
	return th.ThreadID
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Event string
	ID    string
	Data  json.RawMessage
}

func (e sseEvent) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("%s event data is not an object: %s", e.Event, e.Data)
	}
	return m
}

func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" || len(data) > 0 {
				cur.Data = json.RawMessage(strings.Join(data, "\n"))
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, "event: "):
			cur.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, ":"):
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// stream does a request answered with server-sent events.
func (s *testServer) stream(method, path string, body any, headers ...string) (response, []sseEvent) {
	s.t.Helper()
	r := s.must(200, method, path, body, headers...)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		s.t.Fatalf("%s %s: content type %q, want text/event-stream", method, path, ct)
	}
	return r, parseSSE(s.t, r.body)
}

func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

func human(text string) map[string]any {
	return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
}

// waitStatus polls a run until its status is final.
func (s *testServer) waitRun(threadID, runID string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		run := s.must(200, "GET", "/threads/"+threadID+"/runs/"+runID, nil).obj(s.t)
		switch run["status"] {
		case "pending", "running":
		default:
			return run
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s still %v after 30s", runID, run["status"])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func wrapBench(srv *server.Server) *httptest.Server { return httptest.NewServer(srv) }

func benchDB(b *testing.B) *dburl.DB {
	db, err := dburl.Open(context.Background(), filepath.Join(b.TempDir(), "weft.db"), dburl.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
