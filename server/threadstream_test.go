package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/server"
)

// slowRun is a resumable run of slow that sleeps delayMS and logs tag,
// streaming values and updates.
func slowRun(tag string, delayMS int, extra ...any) map[string]any {
	body := map[string]any{
		"assistant_id": "slow", "input": map[string]any{"delay_ms": delayMS, "tag": tag},
		"stream_mode": []string{"values", "updates"}, "stream_resumable": true,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	return body
}

// startRun creates a run in the background and returns its id.
func (s *testServer) startRun(tid string, body map[string]any) string {
	s.t.Helper()
	return s.must(200, "POST", "/threads/"+tid+"/runs", body).obj(s.t)["run_id"].(string)
}

// updateState updates a thread's state.
func (s *testServer) updateState(tid string, body map[string]any) {
	s.t.Helper()
	s.must(200, "POST", "/threads/"+tid+"/state", body)
}

// runDone is the event a thread's stream sends when run rid ended.
func runDone(rid string) sseEvent {
	return sseEvent{Event: "metadata", ID: rid + ":done", Data: json.RawMessage(`{"status":"run_done","run_id":"` + rid + `"}`)}
}

// ownEvents is a resumable run's whole stream as a thread's stream sends
// it: its events with ids RUN:N, then its run_done.
func (s *testServer) ownEvents(tid, rid string) []sseEvent {
	s.t.Helper()
	_, evs := s.stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, "Last-Event-ID", "-1")
	out := make([]sseEvent, 0, len(evs)+1)
	for _, ev := range evs {
		ev.ID = rid + ":" + ev.ID
		out = append(out, ev)
	}
	return append(out, runDone(rid))
}

// byRun splits a thread's events by run (the id's prefix), in order.
func byRun(t *testing.T, evs []sseEvent) map[string][]sseEvent {
	t.Helper()
	out := map[string][]sseEvent{}
	for _, ev := range evs {
		rid, _, ok := strings.Cut(ev.ID, ":")
		if !ok {
			t.Fatalf("event %s has id %q; want RUN:N", ev.Event, ev.ID)
		}
		out[rid] = append(out[rid], ev)
	}
	return out
}

// runOf is the run of a thread stream's event.
func runOf(ev sseEvent) string { rid, _, _ := strings.Cut(ev.ID, ":"); return rid }

func TestThreadStreamRunModes(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	c := s.openSSE("GET", "/threads/"+tid+"/stream", nil)
	if ct := c.res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	// Two runs one after the other, then one going and one enqueued
	// behind it.
	r1 := s.startRun(tid, slowRun("a", 0))
	s.waitRun(tid, r1)
	r2 := s.startRun(tid, slowRun("b", 0))
	s.waitRun(tid, r2)
	r3 := s.startRun(tid, slowRun("c", 300))
	r4 := s.startRun(tid, slowRun("d", 0, "multitask_strategy", "enqueue"))
	s.waitRun(tid, r4)

	got := c.take(4 * 5) // metadata, values, updates, values, run_done each
	runs := byRun(t, got)
	for _, rid := range []string{r1, r2, r3, r4} {
		want := s.ownEvents(tid, rid)
		if diff := cmp.Diff(want, runs[rid]); diff != "" {
			t.Errorf("run %s on the thread's stream (-its own stream +thread's):\n%s", rid, diff)
		}
	}
	// The runs that ran one after the other come in that order.
	order := []string{}
	for _, ev := range got {
		if rid := runOf(ev); len(order) == 0 || order[len(order)-1] != rid {
			order = append(order, rid)
		}
	}
	if len(order) < 3 || order[0] != r1 || order[1] != r2 {
		t.Errorf("runs in the order %v; want %s, %s, then %s and %s", order, r1, r2, r3, r4)
	}
	for _, ev := range got[10:] {
		if r := runOf(ev); r != r3 && r != r4 {
			t.Errorf("event %s of run %s after the first two runs", ev.Event, r)
		}
	}
	// The enqueued run's metadata may come while the run before it goes;
	// its other events come after that run's run_done.
	r3done := slices.IndexFunc(got, func(ev sseEvent) bool { return ev.ID == r3+":done" })
	for i, ev := range got {
		if runOf(ev) == r4 && ev.ID != r4+":0" && i < r3done {
			t.Errorf("run %s's event %s (%s) came before the run_done of %s", r4, ev.ID, ev.Event, r3)
		}
	}
	// A state update is not a run_modes event: the next is the next run's.
	s.updateState(tid, map[string]any{"values": map[string]any{"tag": "manual"}, "as_node": "sleep"})
	r5 := s.startRun(tid, slowRun("e", 0))
	if ev := c.take(1)[0]; ev.Event != "metadata" || ev.ID != r5+":0" {
		t.Errorf("after a state update, the stream sent %s %s %s; want run %s's metadata", ev.Event, ev.ID, ev.Data, r5)
	}
}

func TestThreadStreamLifecycle(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	c := s.openSSE("GET", "/threads/"+tid+"/stream?stream_mode=lifecycle", nil)
	r1 := s.startRun(tid, slowRun("a", 0))
	s.waitRun(tid, r1)
	s.updateState(tid, map[string]any{"values": map[string]any{"tag": "manual"}, "as_node": "sleep"})
	r2 := s.startRun(tid, slowRun("b", 0))
	s.waitRun(tid, r2)
	meta := func(rid string) sseEvent {
		return sseEvent{Event: "metadata", ID: rid + ":0", Data: json.RawMessage(`{"run_id":"` + rid + `","attempt":1}`)}
	}
	sameEvents(t, "lifecycle events", []sseEvent{meta(r1), runDone(r1), meta(r2), runDone(r2)}, c.take(4))
}

func TestThreadStreamStateUpdate(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	s.waitRun(tid, s.startRun(tid, slowRun("a", 0)))
	c := s.openSSE("GET", "/threads/"+tid+"/stream?stream_mode=state_update", nil)
	// A run sends nothing on this mode; the update after it does.
	s.waitRun(tid, s.startRun(tid, slowRun("b", 0)))
	s.updateState(tid, map[string]any{"values": map[string]any{"tag": "manual"}, "as_node": "sleep"})
	ev := c.take(1)[0]
	if ev.Event != "state_update" || ev.ID != "" {
		t.Fatalf("got %s (id %q) %s; want a state_update without id", ev.Event, ev.ID, ev.Data)
	}
	var data struct {
		State    json.RawMessage `json:"state"`
		ThreadID string          `json:"thread_id"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	state := s.must(200, "GET", "/threads/"+tid+"/state", nil)
	if string(data.State) != strings.TrimSpace(string(state.body)) || data.ThreadID != tid {
		t.Errorf("state_update = %s\nwant state %s and thread_id %s", ev.Data, state.body, tid)
	}
	if !strings.Contains(string(data.State), `"manual"`) {
		t.Errorf("state_update's state does not hold the update: %s", data.State)
	}
}

func TestThreadStreamSeveralModes(t *testing.T) {
	s := newServer(t, server.Options{})
	for _, query := range []string{"stream_mode=lifecycle&stream_modes=state_update", "stream_mode=lifecycle,state_update", "stream_modes=lifecycle&stream_modes=state_update"} {
		tid := s.newThread()
		c := s.openSSE("GET", "/threads/"+tid+"/stream?"+query, nil)
		rid := s.startRun(tid, slowRun("a", 0))
		s.waitRun(tid, rid)
		s.updateState(tid, map[string]any{"values": map[string]any{"tag": "manual"}, "as_node": "sleep"})
		got := c.take(3)
		if diff := cmp.Diff([]string{"metadata", "metadata", "state_update"}, names(got)); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", query, diff)
		}
		if got[0].ID != rid+":0" || !cmp.Equal(got[1], runDone(rid)) {
			t.Errorf("%s: %v", query, got[:2])
		}
		c.close()
	}
	// run_modes with state_update: every event of the run, and the update.
	tid := s.newThread()
	c := s.openSSE("GET", "/threads/"+tid+"/stream?stream_mode=run_modes&stream_mode=state_update", nil)
	rid := s.startRun(tid, slowRun("a", 0))
	s.waitRun(tid, rid)
	s.updateState(tid, map[string]any{"values": map[string]any{"tag": "manual"}, "as_node": "sleep"})
	got := c.take(6)
	sameEvents(t, "run_modes and state_update", s.ownEvents(tid, rid), got[:5])
	if got[5].Event != "state_update" {
		t.Errorf("then %s; want state_update", got[5].Event)
	}
}

func TestThreadStreamLastEventID(t *testing.T) {
	s := newServer(t, server.Options{})
	for _, c := range []struct {
		last string
		from func(e1, e2 []sseEvent) []sseEvent
	}{
		{"-", func(e1, e2 []sseEvent) []sseEvent { return append(e1, e2...) }},
		{"-1", func(e1, e2 []sseEvent) []sseEvent { return append(e1, e2...) }},
		{"R1:1", func(e1, e2 []sseEvent) []sseEvent { return append(e1[2:], e2...) }},
		{"R1:done", func(e1, e2 []sseEvent) []sseEvent { return e2 }},
		{"R2:3", func(e1, e2 []sseEvent) []sseEvent { return e2[4:] }},
	} {
		tid := s.newThread()
		r1 := s.startRun(tid, slowRun("a", 0))
		s.waitRun(tid, r1)
		r2 := s.startRun(tid, slowRun("b", 0))
		s.waitRun(tid, r2)
		want := c.from(s.ownEvents(tid, r1), s.ownEvents(tid, r2))
		last := strings.NewReplacer("R1", r1, "R2", r2).Replace(c.last)
		conn := s.openSSE("GET", "/threads/"+tid+"/stream", nil, "Last-Event-ID", last)
		sameEvents(t, "replayed after "+c.last, want, conn.take(len(want)))
		// Then live: a new run's events follow.
		r := s.startRun(tid, slowRun("live", 0))
		s.waitRun(tid, r)
		sameEvents(t, "live after the replay from "+c.last, s.ownEvents(tid, r), conn.take(5))
		conn.close()
	}
	tid := s.newThread()
	// A run going when a client resumes: its kept events, then the rest.
	r3 := s.startRun(tid, slowRun("c", 400))
	conn := s.openSSE("GET", "/threads/"+tid+"/stream", nil, "Last-Event-ID", r3+":0")
	s.waitRun(tid, r3)
	sameEvents(t, "a run going, resumed after its metadata", s.ownEvents(tid, r3)[1:], conn.take(4))

	// Live only without Last-Event-ID: nothing of the runs that ended.
	live := s.openSSE("GET", "/threads/"+tid+"/stream?stream_mode=lifecycle", nil)
	r4 := s.startRun(tid, slowRun("d", 0))
	if ev := live.take(1)[0]; ev.ID != r4+":0" {
		t.Errorf("joined without Last-Event-ID, first event %s %s; want run %s's metadata", ev.Event, ev.ID, r4)
	}
}

func TestThreadStreamBadRequests(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	for _, c := range []struct{ query, name string }{
		{"stream_mode=values", "stream_mode"},
		{"stream_modes=lifecycle,events", "stream_modes"},
	} {
		r := s.must(422, "GET", "/threads/"+tid+"/stream?"+c.query, nil)
		for _, part := range []string{c.name, "run_modes", "lifecycle", "state_update"} {
			if !strings.Contains(string(r.body), part) {
				t.Errorf("%s: %s; want it to name %s", c.query, r.body, part)
			}
		}
	}
	for _, id := range []string{"7", "abc:1", "0190a0b4-7e1c-7c3e-9f0a-1234567890ab:x", "0190a0b4-7e1c-7c3e-9f0a-1234567890ab:-1", "0190A0B4-7E1C-7C3E-9F0A-1234567890AB:1"} {
		r := s.must(422, "GET", "/threads/"+tid+"/stream", nil, "Last-Event-ID", id)
		if !strings.Contains(string(r.body), "Last-Event-ID") || !strings.Contains(string(r.body), "RUN_ID:N") {
			t.Errorf("Last-Event-ID %s: %s; want it to name the header and the form", id, r.body)
		}
	}
	s.must(404, "GET", "/threads/0190a0b4-7e1c-7c3e-9f0a-1234567890ab/stream", nil)
	alice, bob := s.as("alice"), s.as("bob")
	mine := alice.newThread()
	bob.must(404, "GET", "/threads/"+mine+"/stream", nil)
	s.must(404, "GET", "/threads/"+mine+"/stream", nil)
}

// waitFor waits until cond holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client that goes away ends its stream and its followers, while a run
// it followed goes on; a shutdown ends the streams still open.
func TestThreadStreamEnds(t *testing.T) {
	srv := startServer(t, server.Options{})
	s := wrap(t, srv)
	tid := s.newThread()
	rid := s.startRun(tid, slowRun("a", 600000))
	c := s.openSSE("GET", "/threads/"+tid+"/stream", nil)
	other := s.openSSE("GET", "/threads/"+tid+"/stream?stream_mode=lifecycle", nil, "Last-Event-ID", "-")
	if ev := other.take(1)[0]; ev.ID != rid+":0" {
		t.Fatalf("replayed %s %s", ev.Event, ev.ID)
	}
	waitFor(t, "two streams open", func() bool { return server.ThreadStreamsOpen(srv) == 2 })
	c.close()
	waitFor(t, "one stream open once a client left", func() bool { return server.ThreadStreamsOpen(srv) == 1 })
	if run := s.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); run["status"] != "running" && run["status"] != "pending" {
		t.Errorf("the run followed is %v once its follower left", run["status"])
	}
	s.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
	if ev := other.take(1)[0]; !cmp.Equal(ev, runDone(rid)) {
		t.Errorf("after the cancel: %v; want run_done", ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if rest := other.rest(); len(rest) != 0 {
		t.Errorf("at shutdown the stream sent %v", names(rest))
	}
	if n := server.ThreadStreamsOpen(srv); n != 0 {
		t.Errorf("%d thread streams open after shutdown", n)
	}
}

// With the Redis broker, a thread's stream on one process follows the runs
// another creates on the thread, and its state updates.
func TestThreadStreamTwoServers(t *testing.T) {
	a, b := twoRedisServers(t)
	tid := a.newThread()
	onA := a.openSSE("GET", "/threads/"+tid+"/stream?stream_mode=run_modes,state_update", nil)
	r1 := b.startRun(tid, slowRun("b", 0))
	b.waitRun(tid, r1)
	sameEvents(t, "run on B, thread streamed on A", b.ownEvents(tid, r1), onA.take(5))
	b.updateState(tid, map[string]any{"values": map[string]any{"tag": "manual"}, "as_node": "sleep"})
	ev := onA.take(1)[0]
	state := a.must(200, "GET", "/threads/"+tid+"/state", nil)
	if want := `{"state":` + strings.TrimSpace(string(state.body)) + `,"thread_id":"` + tid + `"}`; ev.Event != "state_update" || string(ev.Data) != want {
		t.Errorf("state update on B, on A's stream: %s %s\nwant %s", ev.Event, ev.Data, want)
	}
	// A run created on A while B streams the thread, resumed on B.
	onB := b.openSSE("GET", "/threads/"+tid+"/stream", nil)
	r2 := a.startRun(tid, slowRun("a", 0))
	a.waitRun(tid, r2)
	own := a.ownEvents(tid, r2)
	sameEvents(t, "run on A, thread streamed on B", own, onB.take(5))
	again := b.openSSE("GET", "/threads/"+tid+"/stream", nil, "Last-Event-ID", r2+":1")
	sameEvents(t, "resumed on B", own[2:], again.take(3))
}
