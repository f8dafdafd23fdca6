package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/weftlabs/weft/internal/promtest"
	"github.com/weftlabs/weft/internal/redistest"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/server/apikey"
	"github.com/weftlabs/weft/server/ratelimit"
	"github.com/weftlabs/weft/telemetry"
)

const (
	aliceKey = "alice-key-0123456789abcdef"
	bobKey   = "bob-key-0123456789abcdef"
)

// newRawServer serves a server over HTTP as weft serve does, with no
// test stand-in for authentication: requests act for the user their API
// key names.
func newRawServer(t *testing.T, opts server.Options) *testServer {
	t.Helper()
	srv := startServer(t, opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return &testServer{t: t, srv: srv, ts: ts}
}

func keys(t *testing.T) *apikey.Set {
	t.Helper()
	s, err := apikey.New(apikey.Key{User: "alice", SHA256: apikey.Hash(aliceKey)}, apikey.Key{User: "bob", Key: bobKey})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A real API key maps to its user end to end: a user's threads, runs and
// store items are found with the user's key, whichever header carries
// it, and with no other.
func TestAPIKeysAreUsers(t *testing.T) {
	s := newRawServer(t, server.Options{Auth: keys(t)})
	alice := []string{"x-api-key", aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}

	tid := s.must(200, "POST", "/threads", map[string]any{}, alice...).obj(t)["thread_id"].(string)
	w := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")}, alice...).obj(t)
	if msgs, _ := w["messages"].([]any); len(msgs) != 2 {
		t.Fatalf("alice's run answered %v", w)
	}
	s.must(200, "GET", "/threads/"+tid, nil, "Authorization", "bearer "+aliceKey)
	s.must(404, "GET", "/threads/"+tid, nil, bob...)
	s.must(404, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("mine now")}, bob...)
	if r := s.must(200, "POST", "/threads/search", map[string]any{}, bob...); strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("bob's search finds %s", r.body)
	}
	if r := s.must(200, "POST", "/threads/search", map[string]any{}, alice...); !strings.Contains(string(r.body), tid) {
		t.Errorf("alice's search misses her thread: %s", r.body)
	}
	s.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"notes"}, "key": "k", "value": map[string]any{"v": "alice's"}}, alice...)
	if r := s.must(200, "GET", "/store/items?namespace=notes&key=k", nil, bob...); strings.TrimSpace(string(r.body)) != "null" {
		t.Errorf("bob reads alice's item: %s", r.body)
	}
	if r := s.must(200, "GET", "/store/items?namespace=notes&key=k", nil, alice...); !strings.Contains(string(r.body), "alice's") {
		t.Errorf("alice misses her item: %s", r.body)
	}
}

// Without a valid key a request is refused with 401 and a body that says
// what to send; the health and metadata endpoints and CORS preflights
// need no key.
func TestUnauthenticated(t *testing.T) {
	s := newRawServer(t, server.Options{Auth: keys(t)})
	for _, tt := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"no key", nil, "send it in the x-api-key header or as Authorization: Bearer"},
		{"unknown key", []string{"x-api-key", "mallory-0123456789abcdef"}, "the API key is not valid"},
		{"a key's hash", []string{"x-api-key", apikey.Hash(aliceKey)}, "the API key is not valid"},
		{"basic auth", []string{"Authorization", "Basic YWxpY2U6cHc="}, "send it in the x-api-key header"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, ep := range [][2]string{{"POST", "/threads"}, {"POST", "/threads/search"}, {"GET", "/store/items?namespace=a&key=b"}, {"POST", "/runs/wait"}} {
				r := s.do(ep[0], ep[1], map[string]any{}, tt.headers...)
				if r.status != 401 || !strings.Contains(string(r.body), tt.want) {
					t.Errorf("%s %s: %d %s; want 401 saying %q", ep[0], ep[1], r.status, r.body, tt.want)
				}
				if r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: a 401 without WWW-Authenticate", ep[0], ep[1])
				}
			}
		})
	}
	s.must(200, "GET", "/ok", nil)
	s.must(200, "GET", "/info", nil)
	r := s.must(204, "OPTIONS", "/threads/search", nil,
		"Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,x-api-key")
	if r.header.Get("Access-Control-Allow-Origin") == "" {
		t.Error("the preflight is not answered with CORS headers")
	}
	// A browser reads a 401 too.
	if r := s.do("POST", "/threads", map[string]any{}, "Origin", "http://localhost:3000"); r.status != 401 || r.header.Get("Access-Control-Allow-Origin") == "" {
		t.Errorf("a cross-origin 401: %d, allow-origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
}

func memoryLimiter(t *testing.T, burst int) ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.NewMemory(ratelimit.Limit{Rate: 0.001, Burst: burst})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Each user has a bucket of their own; a request beyond it is 429 with
// Retry-After; /ok is not limited. Without auth, each client address
// has one.
func TestRateLimit(t *testing.T) {
	s := newRawServer(t, server.Options{Auth: keys(t), RateLimit: memoryLimiter(t, 2)})
	alice := []string{"x-api-key", aliceKey}
	s.must(200, "POST", "/threads/search", map[string]any{}, alice...)
	s.must(200, "POST", "/threads/search", map[string]any{}, alice...)
	r := s.must(429, "POST", "/threads/search", map[string]any{}, alice...)
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 1000 {
		t.Errorf("Retry-After = %q; want whole seconds within the 1000 s interval", r.header.Get("Retry-After"))
	}
	if !strings.Contains(string(r.body), "rate limit") {
		t.Errorf("429 body %q", r.body)
	}
	s.must(200, "POST", "/threads/search", map[string]any{}, "x-api-key", bobKey)
	for range 3 {
		s.must(200, "GET", "/ok", nil)
	}
	// A refused key is not charged for a missing one: 401 comes first.
	s.must(401, "POST", "/threads/search", map[string]any{})

	open := newRawServer(t, server.Options{RateLimit: memoryLimiter(t, 1)})
	open.must(200, "POST", "/threads/search", map[string]any{})
	open.must(429, "POST", "/threads/search", map[string]any{})
}

// Two server processes sharing a Redis share each user's limit.
func TestRateLimitSharedThroughRedis(t *testing.T) {
	c, prefix := redistest.New(t)
	lim := func() ratelimit.Limiter {
		l, err := ratelimit.NewRedis(c, ratelimit.Limit{Rate: 0.001, Burst: 3}, ratelimit.RedisOptions{Prefix: prefix, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := newRawServer(t, server.Options{Auth: keys(t), RateLimit: lim()})
	b := newRawServer(t, server.Options{Auth: keys(t), RateLimit: lim()})
	alice := []string{"x-api-key", aliceKey}
	a.must(200, "POST", "/threads/search", map[string]any{}, alice...)
	b.must(200, "POST", "/threads/search", map[string]any{}, alice...)
	a.must(200, "POST", "/threads/search", map[string]any{}, alice...)
	b.must(429, "POST", "/threads/search", map[string]any{}, alice...)
	a.must(429, "POST", "/threads/search", map[string]any{}, alice...)
}

func TestMaxBodyBytes(t *testing.T) {
	s := newRawServer(t, server.Options{MaxBodyBytes: 1024})
	s.must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"note": strings.Repeat("x", 500)}})
	r := s.must(413, "POST", "/threads", map[string]any{"metadata": map[string]any{"note": strings.Repeat("x", 2000)}})
	if !strings.Contains(string(r.body), "1024") {
		t.Errorf("413 body %q; want the limit named", r.body)
	}
}

// Beyond MaxRuns a new run is refused with 503 and Retry-After, and
// accepted again once a run ended.
func TestMaxRuns(t *testing.T) {
	s := newRawServer(t, server.Options{MaxRuns: 1})
	tid := s.newThread()
	run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 60000}}).obj(t)
	other := s.newThread()
	for _, path := range []string{"/threads/" + other + "/runs", "/threads/" + other + "/runs/wait", "/runs/wait"} {
		r := s.must(503, "POST", path, map[string]any{"assistant_id": "echo", "input": human("hi")})
		if r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "(1, waiting or running)") {
			t.Errorf("POST %s: 503 with Retry-After %q, body %q", path, r.header.Get("Retry-After"), r.body)
		}
	}
	s.must(204, "POST", "/threads/"+tid+"/runs/"+run["run_id"].(string)+"/cancel?wait=1", nil)
	s.must(200, "POST", "/threads/"+other+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hi")})
}

// Beyond MaxRunsPerUser a user's new run is refused with 429 and
// Retry-After, while other users' runs go on; the place comes back when
// one of the user's runs ends.
func TestMaxRunsPerUser(t *testing.T) {
	s := newServer(t, server.Options{MaxRunsPerUser: 1})
	alice, bob := s.as("alice"), s.as("bob")
	tid := alice.newThread()
	run := alice.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 60000}}).obj(t)
	other := alice.newThread()
	for _, path := range []string{"/threads/" + other + "/runs", "/threads/" + other + "/runs/stream", "/runs/wait"} {
		r := alice.do("POST", path, map[string]any{"assistant_id": "echo", "input": human("hi")})
		if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "as one user may (1,") {
			t.Errorf("alice POST %s: %d, Retry-After %q, body %q; want 429 naming the bound", path, r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	bob.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": human("bob's")})
	// A refused run took no place: once alice's run ends she runs again.
	alice.must(204, "POST", "/threads/"+tid+"/runs/"+run["run_id"].(string)+"/cancel?wait=1", nil)
	alice.must(200, "POST", "/threads/"+other+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hi")})
	alice.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": human("and again")})
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func scrapeMetrics(t *testing.T, s *testServer) map[string]float64 {
	t.Helper()
	return promtest.Parse(t, s.must(200, "GET", "/metrics", nil).body)
}

// After real runs /metrics counts the runs, their nodes, the requests by
// route and the streams; each request is logged with its route, status,
// user and run, never its key; a run is a trace of its nodes.
func TestObservability(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{
		Registry: prometheus.NewRegistry(), TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s := newRawServer(t, server.Options{
		Auth: keys(t), Telemetry: tel, LogRequests: true, RateLimit: memoryLimiter(t, 100),
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	alice := []string{"x-api-key", aliceKey}
	tid := s.must(200, "POST", "/threads", map[string]any{}, alice...).obj(t)["thread_id"].(string)
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("one")}, alice...)
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("two"), "stream_mode": []string{"values"}}, alice...)
	for _, e := range evs {
		if strings.HasPrefix(e.Event, "tasks") {
			t.Errorf("the client gets the tasks events it did not ask for: %s", e.Data)
		}
	}
	s.must(401, "POST", "/threads/search", map[string]any{})

	m := scrapeMetrics(t, s)
	promtest.Expect(t, m, map[string]float64{
		`weft_runs_total{graph="echo",status="success"}`: 2,
		`weft_runs_active`: 0,
		`weft_http_requests_total{method="POST",route="POST /threads/{thread_id}/runs/wait",status="200"}`:   1,
		`weft_http_requests_total{method="POST",route="POST /threads/{thread_id}/runs/stream",status="200"}`: 1,
		`weft_http_requests_total{method="POST",route="POST /threads/search",status="401"}`:                  1,
		`weft_requests_rejected_total{reason="unauthenticated"}`:                                             1,
		`weft_http_streams_active`: 0,
	})
	nodes := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, `weft_node_duration_seconds_count{graph="echo"`) {
			nodes += v
		}
	}
	if nodes == 0 {
		t.Error("no node of echo was timed")
	}

	log := logs.String()
	if strings.Contains(log, aliceKey) {
		t.Error("the log holds an API key")
	}
	var waitLine string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "msg=\"http request\"") && strings.Contains(line, "runs/wait") {
			waitLine = line
		}
	}
	for _, want := range []string{`route="POST /threads/{thread_id}/runs/wait"`, "status=200", "user=alice", "thread_id=" + tid, "run_id=", "duration="} {
		if !strings.Contains(waitLine, want) {
			t.Errorf("the request's log line %q lacks %s", waitLine, want)
		}
	}

	var roots, nodeSpans int
	for _, sp := range exp.GetSpans() {
		switch {
		case sp.Name == "invoke_agent echo":
			roots++
			for _, kv := range sp.Attributes {
				if kv.Key == "user.id" && kv.Value != attribute.StringValue("alice") {
					t.Errorf("run span user %v", kv.Value)
				}
			}
		case sp.Parent.IsValid():
			nodeSpans++
		}
	}
	if roots != 2 || nodeSpans == 0 {
		t.Errorf("%d run spans and %d node spans; want 2 and some", roots, nodeSpans)
	}
}

// A run created by a request that carries a W3C traceparent is a child of
// the request's trace: the front end's trace goes on through the run and
// its nodes. A request without one, or with a malformed one, starts a
// trace of its own.
func TestRunTraceFollowsTheRequest(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{
		Registry: prometheus.NewRegistry(), TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, server.Options{Telemetry: tel})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tid := s.newThread()
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("traced")}, "traceparent", "00-"+traceID+"-"+parentID+"-01")
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("own")})
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("bad")}, "traceparent", "00-not-a-trace")
	var runs []tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "invoke_agent echo" {
			runs = append(runs, sp)
		}
	}
	if len(runs) != 3 {
		t.Fatalf("%d run spans, want 3", len(runs))
	}
	traced := runs[0]
	if got := traced.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("the traced run's trace id = %s, want the request's %s", got, traceID)
	}
	if got := traced.Parent.SpanID().String(); got != parentID || !traced.Parent.IsRemote() {
		t.Errorf("the traced run's parent = %s (remote %v), want the request's span %s", got, traced.Parent.IsRemote(), parentID)
	}
	nodes := 0
	for _, sp := range exp.GetSpans() {
		if sp.Parent.SpanID() == traced.SpanContext.SpanID() {
			nodes++
			if sp.SpanContext.TraceID().String() != traceID {
				t.Errorf("node span %s is in trace %s, want %s", sp.Name, sp.SpanContext.TraceID(), traceID)
			}
		}
	}
	if nodes == 0 {
		t.Error("the traced run's nodes have no spans under it")
	}
	for i, sp := range runs[1:] {
		if sp.Parent.IsValid() || sp.SpanContext.TraceID().String() == traceID {
			t.Errorf("run %d (no or a malformed traceparent) has parent %v in trace %s; want a trace of its own", i+2, sp.Parent.SpanID(), sp.SpanContext.TraceID())
		}
	}
}
