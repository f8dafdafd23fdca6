package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/internal/redistest"
	"github.com/weftlabs/weft/server"
)

// sseConn reads a stream of server-sent events as they come.
type sseConn struct {
	t      *testing.T
	res    *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// openSSE sends a request answered with server-sent events and returns
// the stream, read as it comes; it is closed when the test ends.
func (s *testServer) openSSE(method, path string, body any, headers ...string) *sseConn {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var rd *strings.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = strings.NewReader(string(data))
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, s.ts.URL+path, rd)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, s.ts.URL+path, nil)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := s.ts.Client().Do(req)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		cancel()
		s.t.Fatalf("%s %s: status %d", method, path, res.StatusCode)
	}
	c := &sseConn{t: s.t, res: res, sc: bufio.NewScanner(res.Body), cancel: cancel}
	c.sc.Buffer(make([]byte, 1<<20), 16<<20)
	s.t.Cleanup(c.close)
	return c
}

// next reads the next event; false at the stream's end.
func (c *sseConn) next() (sseEvent, bool) {
	c.t.Helper()
	var ev sseEvent
	var data []string
	for c.sc.Scan() {
		line := c.sc.Text()
		switch {
		case line == "":
			if ev.Event != "" || len(data) > 0 {
				ev.Data = json.RawMessage(strings.Join(data, "\n"))
				return ev, true
			}
		case strings.HasPrefix(line, "event: "):
			ev.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		}
	}
	return sseEvent{}, false
}

// take reads n events, failing the test if the stream ends before.
func (c *sseConn) take(n int) []sseEvent {
	c.t.Helper()
	var out []sseEvent
	for len(out) < n {
		ev, ok := c.next()
		if !ok {
			c.t.Fatalf("the stream ended after %v; want %d events", names(out), n)
		}
		out = append(out, ev)
	}
	return out
}

// rest reads the stream to its end.
func (c *sseConn) rest() []sseEvent {
	var out []sseEvent
	for {
		ev, ok := c.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func (c *sseConn) close() {
	c.cancel()
	c.res.Body.Close()
}

// twoRedisServers starts two servers on one PostgreSQL database (two
// pools) and one Redis, under one prefix: two processes of one
// deployment.
func twoRedisServers(t *testing.T) (a, b *testServer) {
	db := backends[1].open(t)
	rc, prefix := redistest.New(t)
	return redisServer(t, db, rc, prefix), redisServer(t, reopen(t, db), rc, prefix)
}

// redisServer starts a server on db whose broker is Redis through c,
// under prefix.
func redisServer(t *testing.T, db *dburl.DB, c redis.UniversalClient, prefix string) *testServer {
	t.Helper()
	return newServer(t, server.Options{DB: db, LeaseTTL: 900 * time.Millisecond, Broker: newRedisBroker(t, c, prefix, nil)})
}

func sameEvents(t *testing.T, what string, want, got []sseEvent) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// Two servers on one PostgreSQL database and one Redis behave as one for
// streams: a run executing on one is streamed, resumed, cancelled and
// joined through the other.
func TestRedisBrokerTwoServers(t *testing.T) {
	a, b := twoRedisServers(t)
	tid := a.newThread()
	slow := func(tag string, delayMS int) map[string]any {
		return slowRun(tag, delayMS, "on_disconnect", "continue")
	}

	// A run on A that waits until it is cancelled: joined on B, left and
	// resumed there with Last-Event-ID.
	rid := a.must(200, "POST", "/threads/"+tid+"/runs", slow("a", 600000)).obj(t)["run_id"].(string)
	path := "/threads/" + tid + "/runs/" + rid + "/stream"
	first := b.openSSE("GET", path, nil)
	seen := first.take(2)
	first.close()
	if diff := cmp.Diff([]string{"metadata", "values"}, names(seen)); diff != "" {
		t.Fatalf("joined on B (-want +got):\n%s", diff)
	}
	if seen[0].ID != "0" || seen[1].ID != "1" {
		t.Errorf("event ids %q %q; want 0 1", seen[0].ID, seen[1].ID)
	}
	again := b.openSSE("GET", path, nil, "Last-Event-ID", seen[0].ID)
	sameEvents(t, "resumed on B after event 0", seen[1:], again.take(1))
	again.close()

	// Cancelled through B, the run stops on A; the streams end.
	b.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
	if run := a.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); run["status"] != "interrupted" {
		t.Errorf("run cancelled through B is %v on A", run["status"])
	}
	_, after := b.stream("GET", path, nil, "Last-Event-ID", seen[1].ID)
	if len(after) != 0 {
		t.Errorf("after the last event of a cancelled run, B sent %v", names(after))
	}
	_, all := a.stream("GET", path, nil)
	sameEvents(t, "the run's stream on A and on B", seen, all)

	// A run streamed on A and joined on B: the same events in order; its
	// result through B's join.
	onA := a.openSSE("POST", "/threads/"+tid+"/runs/stream", slow("c", 300))
	loc := onA.res.Header.Get("Content-Location")
	rid2 := loc[strings.LastIndex(loc, "/")+1:]
	onB := b.openSSE("GET", "/threads/"+tid+"/runs/"+rid2+"/stream", nil)
	fromB := onB.rest()
	fromA := onA.rest()
	sameEvents(t, "a run streamed on A, joined on B", fromA, fromB)
	if diff := cmp.Diff([]string{"metadata", "values", "updates", "values"}, names(fromA)); diff != "" {
		t.Errorf("streamed on A (-want +got):\n%s", diff)
	}
	joined := b.must(200, "GET", "/threads/"+tid+"/runs/"+rid2+"/join", nil).obj(t)
	if diff := cmp.Diff([]any{"c"}, joined["log"]); diff != "" {
		t.Errorf("joined through B (-want +got):\n%s", diff)
	}

	// A run that fails on A: B's join answers its error, as A's does.
	rid3 := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"nope": 1}}).obj(t)["run_id"].(string)
	failed := b.must(200, "GET", "/threads/"+tid+"/runs/"+rid3+"/join", nil).obj(t)
	if e, ok := failed["__error__"].(map[string]any); !ok || !strings.Contains(e["message"].(string), "nope") {
		t.Errorf("join through B of a run that failed on A = %v; want its __error__", failed)
	}
	if diff := cmp.Diff(failed, a.must(200, "GET", "/threads/"+tid+"/runs/"+rid3+"/join", nil).obj(t)); diff != "" {
		t.Errorf("joins through A and B differ (-B +A):\n%s", diff)
	}
}

// Redis going away: a client streaming through a process that lost Redis
// gets an error event rather than a hang, and the run goes on; a process
// without Redis still executes runs and saves their checkpoints.
func TestRedisBrokerDownServers(t *testing.T) {
	db := backends[1].open(t)
	rc, prefix := redistest.New(t)
	a := redisServer(t, db, rc, prefix)
	p := newRedisProxy(t)
	b := redisServer(t, reopen(t, db), p.client(t), prefix)
	tid := a.newThread()
	rid := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{
		"assistant_id": "slow", "input": map[string]any{"delay_ms": 600000, "tag": "a"}, "stream_resumable": true,
	}).obj(t)["run_id"].(string)
	onB := b.openSSE("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil)
	onB.take(1)
	p.Cut()
	rest := onB.rest()
	if len(rest) == 0 || rest[len(rest)-1].Event != "error" || !strings.Contains(string(rest[len(rest)-1].Data), "StreamUnavailableError") {
		t.Fatalf("streaming through B when Redis went: %v; want an error event last", rest)
	}
	if run := a.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); run["status"] != "running" && run["status"] != "pending" {
		t.Errorf("the run is %v once B lost Redis; want it going on", run["status"])
	}
	a.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)

	// B, without Redis, runs: a stream tells the failure, the run ends
	// and its thread keeps what it did.
	t2 := b.newThread()
	_, evs := b.stream("POST", "/threads/"+t2+"/runs/stream", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}})
	if len(evs) != 1 || evs[0].Event != "error" || !strings.Contains(string(evs[0].Data), "StreamUnavailableError") {
		t.Errorf("streaming a run on B without Redis: %v; want one error event", evs)
	}
	b.must(200, "POST", "/threads/"+t2+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "c"}, "multitask_strategy": "enqueue"})
	var st struct {
		Values map[string]any `json:"values"`
	}
	b.must(200, "GET", "/threads/"+t2+"/state", nil).json(t, &st)
	if diff := cmp.Diff([]any{"b", "c"}, st.Values["log"]); diff != "" {
		t.Errorf("the thread of runs without Redis (-want +got):\n%s", diff)
	}
}

// A cancel through another process reaches the run through Redis, not
// only at its lease's next renewal: with leases renewed every 200 s, the
// run stops well before.
func TestRedisBrokerCancelRelay(t *testing.T) {
	db := backends[1].open(t)
	rc, prefix := redistest.New(t)
	opts := func(db *dburl.DB) server.Options {
		return server.Options{DB: db, LeaseTTL: 10 * time.Minute, Broker: newRedisBroker(t, rc, prefix, nil)}
	}
	a := newServer(t, opts(db))
	b := newServer(t, opts(reopen(t, db)))
	tid := a.newThread()
	rid := a.startSlow(tid, "a", 600000)
	for _, action := range []string{"interrupt", "rollback"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, err := http.NewRequestWithContext(ctx, "POST", b.ts.URL+"/threads/"+tid+"/runs/"+rid+"/cancel?wait=1&action="+action, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.ts.Client().Do(req)
		cancel()
		if err != nil {
			t.Fatalf("cancel (%s) through B: %v; want the run stopped within a minute", action, err)
		}
		res.Body.Close()
		if res.StatusCode != 204 {
			t.Fatalf("cancel (%s) through B: %d", action, res.StatusCode)
		}
		if action == "interrupt" {
			if run := a.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); run["status"] != "interrupted" {
				t.Errorf("run cancelled through B is %v on A", run["status"])
			}
			rid = a.startSlow(tid, "b", 600000)
		} else {
			a.must(404, "GET", "/threads/"+tid+"/runs/"+rid, nil)
		}
	}

	// A client that joined through B with cancel_on_disconnect goes: the
	// run on A stops.
	rid = a.startSlow(tid, "c", 600000)
	joined := b.openSSE("GET", "/threads/"+tid+"/runs/"+rid+"/stream?cancel_on_disconnect=true", nil)
	joined.take(1)
	joined.close()
	if run := a.waitRun(tid, rid); run["status"] != "interrupted" {
		t.Errorf("run whose client went away from B is %v; want interrupted", run["status"])
	}
}
