package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// startSlow starts a slow run on a thread and waits until it runs (or,
// if it is short, ran): a run is recorded running once it has run a
// while.
func (s *testServer) startSlow(tid, tag string, delayMS int) string {
	s.t.Helper()
	run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": delayMS, "tag": tag}}).obj(s.t)
	id := run["run_id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for s.must(200, "GET", "/threads/"+tid+"/runs/"+id, nil).obj(s.t)["status"] == "pending" {
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s did not start", id)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return id
}

func TestMultitaskReject(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	first := s.startSlow(tid, "a", 600000)
	r := s.must(409, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}, "multitask_strategy": "reject"})
	if string(r.body) != "Thread is already running a task. Wait for it to finish or choose a different multitask strategy." {
		t.Errorf("reject body = %q", r.body)
	}
	// The default strategy is reject too.
	s.must(409, "POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "b"}})
	s.must(204, "POST", "/threads/"+tid+"/runs/"+first+"/cancel?wait=1", nil)
}

func TestMultitaskEnqueue(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	first := s.startSlow(tid, "a", 200)
	second := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "b"}, "multitask_strategy": "enqueue"}).obj(t)
	third := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "c"}, "multitask_strategy": "enqueue"}).obj(t)
	if second["status"] != "pending" {
		t.Errorf("enqueued run = %v", second["status"])
	}
	joined := s.must(200, "GET", "/threads/"+tid+"/runs/"+third["run_id"].(string)+"/join", nil).obj(t)
	if diff := cmp.Diff([]any{"a", "b", "c"}, joined["log"]); diff != "" {
		t.Errorf("log: the runs completed out of order (-want +got):\n%s", diff)
	}
	for _, id := range []string{first, second["run_id"].(string)} {
		if run := s.waitRun(tid, id); run["status"] != "success" {
			t.Errorf("run %s = %v", id, run["status"])
		}
	}
	if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
		t.Errorf("thread = %v", th["status"])
	}
}

func TestMultitaskInterruptAndRollback(t *testing.T) {
	for _, strategy := range []string{"interrupt", "rollback"} {
		t.Run(strategy, func(t *testing.T) {
			s := newServer(t, server.Options{})
			tid := s.newThread()
			first := s.startSlow(tid, "a", 600000)
			second := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "b"}, "multitask_strategy": strategy}).obj(t)
			joined := s.must(200, "GET", "/threads/"+tid+"/runs/"+second["run_id"].(string)+"/join", nil).obj(t)
			if diff := cmp.Diff([]any{"b"}, joined["log"]); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if strategy == "interrupt" {
				if run := s.waitRun(tid, first); run["status"] != "interrupted" {
					t.Errorf("the interrupted run = %v", run["status"])
				}
			} else {
				s.must(404, "GET", "/threads/"+tid+"/runs/"+first, nil)
				// Its checkpoints are gone with it.
				var hist []map[string]any
				s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &hist)
				for _, h := range hist {
					if h["metadata"].(map[string]any)["run_id"] == first {
						t.Errorf("a checkpoint of the rolled back run is left: %v", h["metadata"])
					}
				}
			}
			if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
				t.Errorf("thread = %v", th["status"])
			}
		})
	}
}

func TestCancel(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	id := s.startSlow(tid, "never", 600000)
	s.must(204, "POST", "/threads/"+tid+"/runs/"+id+"/cancel?wait=1&action=interrupt", nil)
	run := s.must(200, "GET", "/threads/"+tid+"/runs/"+id, nil).obj(t)
	if run["status"] != "interrupted" {
		t.Errorf("cancelled run = %v", run["status"])
	}
	if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
		t.Errorf("thread after cancel = %v", th["status"])
	}
	// Without wait the answer comes at once, 202.
	id2 := s.startSlow(tid, "never2", 600000)
	s.must(202, "POST", "/threads/"+tid+"/runs/"+id2+"/cancel?wait=0", nil)
	if run := s.waitRun(tid, id2); run["status"] != "interrupted" {
		t.Errorf("cancelled run = %v", run["status"])
	}
	// Cancelling a run that ended is a no-op.
	s.must(204, "POST", "/threads/"+tid+"/runs/"+id2+"/cancel?wait=1", nil)
	s.must(400, "POST", "/threads/"+tid+"/runs/"+id2+"/cancel?action=explode", nil)
	s.must(404, "POST", "/threads/"+tid+"/runs/00000000-0000-4000-8000-000000000000/cancel", nil)
	// A pending run is cancelled before it starts.
	id3 := s.startSlow(tid, "x", 600000)
	queued := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "q"}, "multitask_strategy": "enqueue"}).obj(t)
	qid := queued["run_id"].(string)
	s.must(204, "POST", "/threads/"+tid+"/runs/"+qid+"/cancel?wait=1", nil)
	if run := s.must(200, "GET", "/threads/"+tid+"/runs/"+qid, nil).obj(t); run["status"] != "interrupted" {
		t.Errorf("cancelled pending run = %v", run["status"])
	}
	s.must(204, "POST", "/runs/cancel?action=interrupt", map[string]any{"thread_id": tid, "status": "running"})
	if run := s.waitRun(tid, id3); run["status"] != "interrupted" {
		t.Errorf("bulk-cancelled run = %v", run["status"])
	}
	s.must(400, "POST", "/runs/cancel", map[string]any{"status": "running"})
	// Deleting a thread stops its run.
	id4 := s.startSlow(tid, "y", 600000)
	s.must(204, "DELETE", "/threads/"+tid, nil)
	s.must(404, "GET", "/threads/"+tid+"/runs/"+id4, nil)
}

// A resumable stream is replayed from any event for a client that comes
// back; a plain one is followed from where it is.
func TestJoinStream(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 100, "tag": "js"}, "stream_mode": []string{"values", "updates"}, "stream_resumable": true}).obj(t)
	rid := run["run_id"].(string)
	_, evs := s.stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, "Last-Event-ID", "-1")
	if diff := cmp.Diff([]string{"metadata", "values", "updates", "values"}, names(evs)); diff != "" {
		t.Fatalf("joined stream (-want +got):\n%s", diff)
	}
	for i, e := range evs {
		if e.ID != strconv.Itoa(i) {
			t.Errorf("event %d id %q", i, e.ID)
		}
	}
	// The run ended; its events are kept for clients that reconnect.
	_, again := s.stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, "Last-Event-ID", "1")
	if diff := cmp.Diff([]string{"updates", "values"}, names(again)); diff != "" {
		t.Errorf("after event 1 (-want +got):\n%s", diff)
	}
	if again[0].ID != "2" {
		t.Errorf("first replayed id = %q", again[0].ID)
	}
	// A plain run's stream is followed while it runs.
	plain := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 100, "tag": "plain"}, "stream_mode": []string{"values"}}).obj(t)
	_, evs = s.stream("GET", "/threads/"+tid+"/runs/"+plain["run_id"].(string)+"/stream", nil)
	if len(evs) == 0 || evs[len(evs)-1].Event != "values" {
		t.Errorf("plain join = %v", names(evs))
	}
	// Once it ended and its events are gone the stream is empty.
	_, evs = s.stream("GET", "/threads/"+tid+"/runs/"+plain["run_id"].(string)+"/stream", nil)
	if len(evs) != 0 {
		t.Errorf("join of an ended plain run = %v", names(evs))
	}
	s.must(404, "GET", "/threads/"+tid+"/runs/00000000-0000-4000-8000-000000000000/stream", nil)
	s.must(400, "GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, "Last-Event-ID", "x")
}

// A resumable run's streams carry a Location, where the SDK reconnects
// with Last-Event-ID when a stream breaks off; a plain run's do not (a
// reconnect could not replay what was missed). A run's stream is joined
// by its id alone too: a stateless run's while it goes, and after its end
// (its record gone with its thread) while its events are kept, and a
// thread's run's.
func TestStreamLocationAndJoinByID(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	r, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("a b"), "stream_mode": "values", "stream_resumable": true})
	rid := evs[0].obj(t)["run_id"].(string)
	want := "/threads/" + tid + "/runs/" + rid + "/stream"
	if got := r.header.Get("Location"); got != want {
		t.Errorf("resumable stream's Location = %q, want %q", got, want)
	}
	// The Location is a join that replays the run from Last-Event-ID.
	j, again := s.stream("GET", want, nil, "Last-Event-ID", "0")
	if diff := cmp.Diff(names(evs[1:]), names(again)); diff != "" {
		t.Errorf("join at the Location after event 0 (-want +got):\n%s", diff)
	}
	if got := j.header.Get("Location"); got != want {
		t.Errorf("join's Location = %q, want %q", got, want)
	}
	// By the run's id alone, with its own path as the Location.
	byID, all := s.stream("GET", "/runs/"+rid+"/stream", nil, "Last-Event-ID", "-1")
	if diff := cmp.Diff(names(evs), names(all)); diff != "" {
		t.Errorf("join by run id (-want +got):\n%s", diff)
	}
	if got := byID.header.Get("Location"); got != "/runs/"+rid+"/stream" {
		t.Errorf("join by id's Location = %q", got)
	}
	plain, _ := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": human("c"), "stream_mode": "values"})
	if got := plain.header.Get("Location"); got != "" {
		t.Errorf("a plain stream's Location = %q, want none", got)
	}

	// A stateless resumable run, joined by id while it goes.
	sr, sevs := s.stream("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": human("d"), "stream_mode": "values", "stream_resumable": true})
	srid := sevs[0].obj(t)["run_id"].(string)
	if got := sr.header.Get("Location"); got != "/runs/"+srid+"/stream" {
		t.Errorf("stateless stream's Location = %q, want /runs/%s/stream", got, srid)
	}
	bg := s.must(200, "POST", "/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 300, "tag": "st"}, "stream_mode": []string{"values", "updates"}, "stream_resumable": true}).obj(t)
	bgid := bg["run_id"].(string)
	_, joined := s.stream("GET", "/runs/"+bgid+"/stream", nil, "Last-Event-ID", "-1")
	if diff := cmp.Diff([]string{"metadata", "values", "updates", "values"}, names(joined)); diff != "" {
		t.Errorf("stateless run joined by id (-want +got):\n%s", diff)
	}
	// Its record went with its temporary thread as it ended; its events
	// are kept, and a join by id still replays them.
	_, rejoined := s.stream("GET", "/runs/"+bgid+"/stream", nil, "Last-Event-ID", "-1")
	if diff := cmp.Diff(names(joined), names(rejoined)); diff != "" {
		t.Errorf("ended stateless run joined by id (-want +got):\n%s", diff)
	}
	s.must(404, "GET", "/runs/00000000-0000-4000-8000-000000000000/stream", nil)
	if r := s.do("GET", "/runs/not-a-uuid/stream", nil); r.status != 400 && r.status != 422 {
		t.Errorf("a run id that is not a UUID: %d %s", r.status, r.body)
	}
	s.must(400, "GET", "/runs/"+rid+"/stream", nil, "Last-Event-ID", "x")
}

// on_disconnect cancel stops the run when the client goes; continue (the
// default) lets it run to its end.
func TestOnDisconnect(t *testing.T) {
	s := newServer(t, server.Options{})
	for _, mode := range []string{"cancel", "continue"} {
		tid := s.newThread()
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"assistant_id":"slow","input":{"delay_ms":300,"tag":"d"},"on_disconnect":"` + mode + `"}`
		req, _ := http.NewRequestWithContext(ctx, "POST", s.ts.URL+"/threads/"+tid+"/runs/stream", stringsReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := s.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		loc := res.Header.Get("Content-Location")
		buf := make([]byte, 1)
		_, _ = res.Body.Read(buf) // the stream has begun
		cancel()
		res.Body.Close()
		rid := loc[len(loc)-36:]
		run := s.waitRun(tid, rid)
		want := map[string]string{"cancel": "interrupted", "continue": "success"}[mode]
		if run["status"] != want {
			t.Errorf("on_disconnect %s: run %v, want %s", mode, run["status"], want)
		}
	}
}

// A rollback of a thread's later run takes the thread back to where that
// run started: the runs before it keep their checkpoints, as a cancel
// with action=rollback does.
func TestRollbackKeepsEarlierRuns(t *testing.T) {
	for _, how := range []string{"strategy", "cancel"} {
		t.Run(how, func(t *testing.T) {
			s := newServer(t, server.Options{})
			tid := s.newThread()
			first := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "a"}}).obj(t)
			if diff := cmp.Diff([]any{"a"}, first["log"]); diff != "" {
				t.Fatalf("first run's log (-want +got):\n%s", diff)
			}
			var before []map[string]any
			s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &before)
			second := s.startSlow(tid, "b", 600000)
			if how == "strategy" {
				third := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "c"}, "multitask_strategy": "rollback"}).obj(t)
				joined := s.must(200, "GET", "/threads/"+tid+"/runs/"+third["run_id"].(string)+"/join", nil).obj(t)
				if diff := cmp.Diff([]any{"a", "c"}, joined["log"]); diff != "" {
					t.Errorf("log (-want +got):\n%s", diff)
				}
			} else {
				s.must(204, "POST", "/threads/"+tid+"/runs/"+second+"/cancel?wait=1&action=rollback", nil)
				var after []map[string]any
				s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &after)
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("history after the rollback (-before +after):\n%s", diff)
				}
				st := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
				if diff := cmp.Diff(map[string]any{"delay_ms": 1.0, "tag": "a", "log": []any{"a"}}, st["values"]); diff != "" {
					t.Errorf("state after the rollback (-want +got):\n%s", diff)
				}
			}
			s.must(404, "GET", "/threads/"+tid+"/runs/"+second, nil)
			var hist []map[string]any
			s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &hist)
			ids := map[any]bool{}
			for _, h := range hist {
				if h["metadata"].(map[string]any)["run_id"] == second {
					t.Errorf("a checkpoint of the rolled back run is left: %v", h["metadata"])
				}
				ids[h["checkpoint"].(map[string]any)["checkpoint_id"]] = true
			}
			if len(before) == 0 {
				t.Fatal("the first run left no checkpoints")
			}
			for _, h := range before {
				if id := h["checkpoint"].(map[string]any)["checkpoint_id"]; !ids[id] {
					t.Errorf("the first run's checkpoint %v is gone", id)
				}
			}
			if th := s.must(200, "GET", "/threads/"+tid, nil).obj(t); th["status"] != "idle" {
				t.Errorf("thread = %v", th["status"])
			}
		})
	}
}

// The events of a run that goes on reach its streams at once: the
// in-process broker's streams write events without flushing each batch
// and flush before they wait, so a run that waits (here for ten minutes)
// has sent what it published before, to its own stream and to a join.
func TestStreamFlushesWhileRunWaits(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	c := s.openSSE("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "slow", "input": map[string]any{"delay_ms": 600000, "tag": "w"}, "stream_mode": []string{"values", "updates"},
	})
	loc := c.res.Header.Get("Content-Location")
	rid := loc[len(loc)-36:]
	if got := names(c.take(2)); got[0] != "metadata" || got[1] != "values" {
		t.Fatalf("first events = %v, want metadata, values", got)
	}
	j := s.openSSE("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, "Last-Event-ID", "0")
	if ev := j.take(1)[0]; ev.Event != "values" || ev.ID != "1" {
		t.Errorf("join after event 0 = %s %s, want values 1", ev.Event, ev.ID)
	}
	s.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
	c.rest()
}

// A run queued behind another (multitask enqueue) tells its stream at
// once which run it is: its first event, metadata, comes while it waits,
// as the LangGraph server sends it, not only when it starts.
func TestQueuedRunMetadataAtOnce(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	first := s.openSSE("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "slow", "input": map[string]any{"delay_ms": 600000, "tag": "a"}, "stream_mode": []string{"values"},
	})
	if got := names(first.take(2)); got[0] != "metadata" || got[1] != "values" {
		t.Fatalf("first run's events = %v, want metadata, values", got)
	}
	floc := first.res.Header.Get("Content-Location")
	firstID := floc[len(floc)-36:]
	queued := s.openSSE("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "b"}, "stream_mode": []string{"values"},
		"multitask_strategy": "enqueue",
	})
	loc := queued.res.Header.Get("Content-Location")
	rid := loc[len(loc)-36:]
	ev := queued.take(1)[0]
	var meta map[string]any
	if err := json.Unmarshal(ev.Data, &meta); err != nil {
		t.Fatalf("metadata event %s: %v", ev.Data, err)
	}
	if ev.Event != "metadata" || meta["run_id"] != rid || meta["attempt"] != float64(1) {
		t.Fatalf("queued run's first event = %s %s, want metadata {run_id: %s, attempt: 1}", ev.Event, ev.Data, rid)
	}
	if r := s.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t); r["status"] != "pending" {
		t.Fatalf("queued run = %v while the first holds the thread, want pending", r["status"])
	}
	// Once the first run is cancelled, the queued one runs to its end on
	// the same stream, without a second metadata event.
	s.must(204, "POST", "/threads/"+tid+"/runs/"+firstID+"/cancel?wait=1", nil)
	rest := names(queued.rest())
	if len(rest) == 0 || slices.Contains(rest, "metadata") || !slices.Contains(rest, "values") {
		t.Fatalf("queued run's later events = %v, want values and no second metadata", rest)
	}
}

// The rollback tests' graphs ask for an answer, then work: their state is
// the answer and a log of what ran.
var (
	gateAnswer = graph.Value[string]("answer")
	gateLog    = graph.Reduce("log", func(cur, upd []string) []string { return append(append([]string(nil), cur...), upd...) })
)

// gateWork is the node after the answer: it logs the answer, or, answered
// "slow", says so on working and waits until the run is cancelled.
func gateWork(working chan<- struct{}) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		if gateAnswer.Get(s) == "slow" {
			working <- struct{}{}
			<-ctx.Done()
			return graph.Update{}, context.Cause(ctx)
		}
		return gateLog.Write([]string{"work:" + gateAnswer.Get(s)}), nil
	}
}

// A run that resumed an interrupt and is rolled back leaves the thread
// where it was before it: waiting at the interrupt, with none of the
// resumed run's writes to the interrupted checkpoint (its resume value,
// the writes of the node it finished). The next resume answers anew.
func TestRollbackOfAResumedRun(t *testing.T) {
	answer, log := gateAnswer, gateLog
	working := make(chan struct{}, 4)
	gate := func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		ask := func(ctx context.Context, s graph.State) (graph.Update, error) {
			a := graph.Ask[string](ctx, "approve?")
			return answer.Write(a).And(log.Write([]string{"ask:" + a})), nil
		}
		work := gateWork(working)
		return graph.New(answer, log).
			AddNode("ask", ask, nil).
			AddNode("work", work, nil).
			AddEdge(graph.START, "ask").
			AddEdge("ask", "work").
			AddEdge("work", graph.END).
			Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	type variant struct {
		how, backend string
		open         func(t *testing.T) *dburl.DB
	}
	variants := []variant{{"cancel", "memory", nil}, {"strategy", "memory", nil}}
	for _, b := range backends {
		variants = append(variants, variant{"cancel", b.name, b.open})
	}
	for _, v := range variants {
		how := v.how
		t.Run(how+"/"+v.backend, func(t *testing.T) {
			opts := server.Options{Graphs: map[string]server.GraphFunc{"gate": gate}}
			if v.open != nil {
				opts.DB = v.open(t)
			}
			s := newServer(t, opts)
			tid := s.newThread()
			s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "gate", "input": map[string]any{}})
			before := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
			if diff := cmp.Diff([]any{"ask"}, before["next"]); diff != "" {
				t.Fatalf("before the resume, next (-want +got):\n%s", diff)
			}
			run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gate", "command": map[string]any{"resume": "slow"}}).obj(t)
			<-working
			if how == "cancel" {
				s.must(204, "POST", "/threads/"+tid+"/runs/"+run["run_id"].(string)+"/cancel?wait=1&action=rollback", nil)
				after := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("state after the rollback (-before +after):\n%s", diff)
				}
				got := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "gate", "command": map[string]any{"resume": "no"}}).obj(t)
				if diff := cmp.Diff([]any{"ask:no", "work:no"}, got["log"]); diff != "" {
					t.Errorf("the resume after the rollback: log (-want +got):\n%s", diff)
				}
				return
			}
			got := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "gate", "command": map[string]any{"resume": "no"}, "multitask_strategy": "rollback"}).obj(t)
			if diff := cmp.Diff([]any{"ask:no", "work:no"}, got["log"]); diff != "" {
				t.Errorf("the resume that rolled the other back: log (-want +got):\n%s", diff)
			}
		})
	}
}

// A rolled back run that started from an earlier checkpoint (checkpoint_id)
// takes only its own checkpoints with it: the runs after that checkpoint
// keep theirs, and the thread is back at its latest. So too when another
// server executes the run and the cancel is sent here: this server does
// not know where the run started, and rewinds to the newest checkpoint
// the run did not make.
func TestRollbackOfARunFromAnEarlierCheckpoint(t *testing.T) {
	for _, where := range []string{"here", "elsewhere"} {
		t.Run(where, func(t *testing.T) {
			db := backends[0].open(t)
			a := newServer(t, server.Options{DB: db, LeaseTTL: 500 * time.Millisecond})
			canceller := a
			if where == "elsewhere" {
				canceller = newServer(t, server.Options{DB: reopen(t, db), LeaseTTL: 500 * time.Millisecond})
			}
			tid := a.newThread()
			a.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "a"}})
			first := a.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)["checkpoint"].(map[string]any)["checkpoint_id"].(string)
			a.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "b"}})
			var before []map[string]any
			a.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &before)
			stateBefore := a.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
			rid := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "checkpoint_id": first, "input": map[string]any{"delay_ms": 600000, "tag": "c"}}).obj(t)["run_id"].(string)
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				var hist []map[string]any
				a.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &hist)
				// Elsewhere, the cancel reaches the run through its record:
				// wait until it is recorded running.
				run := canceller.must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).obj(t)
				if len(hist) > len(before) && (where == "here" || run["status"] == "running") {
					break // the run has made its first checkpoint
				}
				if time.Now().After(deadline) {
					t.Fatal("the run from an earlier checkpoint made no checkpoint (or was not recorded running) in 30 s")
				}
			}
			canceller.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1&action=rollback", nil)
			var after []map[string]any
			a.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &after)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("history after the rollback (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(stateBefore, a.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)); diff != "" {
				t.Errorf("state after the rollback (-before +after):\n%s", diff)
			}
		})
	}
}

// A stateless resumable run's stream carries a Location the SDK reconnects
// to when the stream breaks off; a reconnect that comes after the run
// ended (its temporary thread and record gone) still replays what the
// client missed while the events are kept, for the run's user alone. A
// plain stateless run's events are not kept: 404.
func TestJoinEndedStatelessRunByID(t *testing.T) {
	s := newServer(t, server.Options{})
	alice, bob := s.as("alice"), s.as("bob")
	r, evs := alice.stream("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": human("a b"), "stream_mode": "values", "stream_resumable": true})
	rid := evs[0].obj(t)["run_id"].(string)
	loc := r.header.Get("Location")
	if loc != "/runs/"+rid+"/stream" {
		t.Fatalf("stateless resumable stream's Location = %q", loc)
	}
	// The stream ended when the run did, after its thread was deleted.
	again, rest := alice.stream("GET", loc, nil, "Last-Event-ID", "0")
	if again.status != 200 {
		t.Fatalf("reconnect to an ended stateless run: %d %s", again.status, again.body)
	}
	if diff := cmp.Diff(names(evs[1:]), names(rest)); diff != "" {
		t.Errorf("reconnect after event 0 (-want +got):\n%s", diff)
	}
	if got := again.header.Get("Location"); got != loc {
		t.Errorf("the reconnect's Location = %q, want %q", got, loc)
	}
	bob.must(404, "GET", loc, nil, "Last-Event-ID", "0")

	_, pevs := alice.stream("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": human("c"), "stream_mode": "values"})
	pid := pevs[0].obj(t)["run_id"].(string)
	alice.must(404, "GET", "/runs/"+pid+"/stream", nil)
}

// The rollback of a run that resumed an interrupt inside a subgraph keeps
// the subgraph's checkpoints made before the run, and restores the
// writes the run added to them: the next resume goes on from the
// interrupted node, and the subgraph's earlier nodes do not run again.
func TestRollbackOfAResumedSubgraphRun(t *testing.T) {
	answer, log := gateAnswer, gateLog
	var firstRuns atomic.Int32
	working := make(chan struct{}, 4)
	gate := func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		child, err := graph.New(answer, log).
			AddNode("c1", func(ctx context.Context, s graph.State) (graph.Update, error) {
				firstRuns.Add(1)
				return log.Write([]string{"c1"}), nil
			}, nil).
			AddNode("c2", func(ctx context.Context, s graph.State) (graph.Update, error) {
				a := graph.Ask[string](ctx, "approve?")
				return answer.Write(a).And(log.Write([]string{"c2:" + a})), nil
			}, nil).
			AddEdge(graph.START, "c1").AddEdge("c1", "c2").AddEdge("c2", graph.END).
			Compile(nil)
		if err != nil {
			return nil, err
		}
		work := gateWork(working)
		return graph.New(answer, log).
			AddSubgraph("sub", child, nil).
			AddNode("work", work, nil).
			AddEdge(graph.START, "sub").AddEdge("sub", "work").AddEdge("work", graph.END).
			Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	open := map[string]func(t *testing.T) *dburl.DB{"memory": nil}
	for _, b := range backends {
		open[b.name] = b.open
	}
	for name, o := range open {
		t.Run(name, func(t *testing.T) {
			opts := server.Options{Graphs: map[string]server.GraphFunc{"gate": gate}}
			if o != nil {
				opts.DB = o(t)
			}
			s := newServer(t, opts)
			firstRuns.Store(0)
			tid := s.newThread()
			s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "gate", "input": map[string]any{}})
			before := s.must(200, "GET", "/threads/"+tid+"/state?subgraphs=true", nil).obj(t)
			run := s.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gate", "command": map[string]any{"resume": "slow"}}).obj(t)
			<-working
			s.must(204, "POST", "/threads/"+tid+"/runs/"+run["run_id"].(string)+"/cancel?wait=1&action=rollback", nil)
			if diff := cmp.Diff(before, s.must(200, "GET", "/threads/"+tid+"/state?subgraphs=true", nil).obj(t)); diff != "" {
				t.Errorf("state after the rollback (-before +after):\n%s", diff)
			}
			got := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "gate", "command": map[string]any{"resume": "no"}}).obj(t)
			if diff := cmp.Diff([]any{"c1", "c2:no", "work:no"}, got["log"]); diff != "" {
				t.Errorf("log after the rollback and a resume (-want +got):\n%s", diff)
			}
			if n := firstRuns.Load(); n != 1 {
				t.Errorf("the subgraph's first node ran %d times, want once", n)
			}
		})
	}
}

// A rollback sent to another server for a run this one has only just
// started (still recorded pending: it is recorded running after 100 ms)
// deletes its record there; the run notices when it would be recorded
// running, stops, and rolls back what it wrote, as it knows where it
// started. (Sent later, the cancel reaches it through its lease, the
// case above.)
func TestRollbackElsewhereOfARunJustStarted(t *testing.T) {
	db := backends[0].open(t)
	a := newServer(t, server.Options{DB: db, LeaseTTL: 500 * time.Millisecond})
	b := newServer(t, server.Options{DB: reopen(t, db), LeaseTTL: 500 * time.Millisecond})
	tid := a.newThread()
	a.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "a"}})
	var before []map[string]any
	a.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &before)
	rid := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 600000, "tag": "b"}}).obj(t)["run_id"].(string)
	b.must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1&action=rollback", nil)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var hist []map[string]any
		a.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &hist)
		th := a.must(200, "GET", "/threads/"+tid, nil).obj(t)
		if cmp.Equal(before, hist) && th["status"] == "idle" && a.do("GET", "/threads/"+tid+"/runs/"+rid, nil).status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the rollback: thread %v, history of %d checkpoints (before: %d), run %d",
				th["status"], len(hist), len(before), a.do("GET", "/threads/"+tid+"/runs/"+rid, nil).status)
		}
	}
	// The thread runs on from where it was.
	got := a.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1, "tag": "c"}}).obj(t)
	if diff := cmp.Diff([]any{"a", "c"}, got["log"]); diff != "" {
		t.Errorf("log after the rollback (-want +got):\n%s", diff)
	}
}
