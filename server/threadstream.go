package server

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// GET /threads/{thread_id}/stream (the SDK's threads.joinStream) follows
// every run of a thread, those going when the client joins and those
// created later, until the client goes away or the server shuts down.
//
// Its events are the runs' own (as their streams send them), each run's
// followed by metadata {"status":"run_done","run_id"} once it ended, and
// state_update {"state", "thread_id"} when the thread's state is updated
// through the API. A run event's id is "RUN_ID:N", the run's id (a
// time-ordered UUID, so the thread's runs sort by it in creation order)
// and the event's id on the run's own stream; a run_done's is
// "RUN_ID:done". A state_update has no id: it is not kept, and a client
// that resumes after it resumes after the run event before it.

// The modes of a thread's stream.
const (
	threadModeRuns      = "run_modes"
	threadModeLifecycle = "lifecycle"
	threadModeState     = "state_update"
)

// maxReplayRuns bounds the runs (the thread's newest) whose kept events a
// thread stream joined with Last-Event-ID replays.
const maxReplayRuns = 100

// threadModes is what a thread's stream sends.
type threadModes struct{ runs, lifecycle, state bool }

// parseThreadModes reads the modes from the query: stream_mode (as the
// SDK sends it) or stream_modes (as the API reference names it), each
// repeated or a comma-separated list; run_modes when none is given.
func parseThreadModes(r *http.Request) (threadModes, error) {
	var m threadModes
	given := false
	q := r.URL.Query()
	for _, param := range []string{"stream_mode", "stream_modes"} {
		for _, v := range q[param] {
			for part := range strings.SplitSeq(v, ",") {
				switch strings.TrimSpace(part) {
				case "":
					continue
				case threadModeRuns:
					m.runs = true
				case threadModeLifecycle:
					m.lifecycle = true
				case threadModeState:
					m.state = true
				default:
					return m, api.Unprocessable("%s: %q is not a thread stream mode; want run_modes, lifecycle or state_update (repeated, or separated by commas)", param, strings.TrimSpace(part))
				}
				given = true
			}
		}
	}
	if !given {
		m.runs = true
	}
	return m, nil
}

// threadPos is where a thread's stream resumes: after event after of run
// runID ("" for the thread's first run), or after its run_done (done).
type threadPos struct {
	runID string
	after int
	done  bool
}

// threadEventID is the id of event n of runID on its thread's stream.
func threadEventID(runID string, n int) string { return runID + ":" + strconv.Itoa(n) }

// threadDoneID is the id of runID's run_done event.
func threadDoneID(runID string) string { return runID + ":done" }

// parseThreadLastEventID reads a thread stream's Last-Event-ID: nil for
// none (the stream starts live).
func parseThreadLastEventID(v string) (*threadPos, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return nil, nil
	case "-", "-1":
		return &threadPos{after: -1}, nil
	}
	bad := func() error {
		return api.Unprocessable("Last-Event-ID %q is not an event id of a thread's stream: want RUN_ID:N (a run's id and its event's number) or RUN_ID:done, or - (or -1) to replay from the first event kept", v)
	}
	runID, n, ok := strings.Cut(v, ":")
	if !ok {
		return nil, bad()
	}
	if u, err := uuid.Parse(runID); err != nil || u.String() != runID {
		return nil, bad()
	}
	if n == "done" {
		return &threadPos{runID: runID, done: true}, nil
	}
	after, err := strconv.Atoi(n)
	if err != nil || after < 0 || strconv.Itoa(after) != n {
		return nil, bad()
	}
	return &threadPos{runID: runID, after: after}, nil
}

// threadRelay is a Broker that also relays threads' notes between
// processes (the Redis one): a thread's stream in one process follows the
// runs another creates on the thread, and the state updates it makes.
type threadRelay interface {
	// RelayThreadNote sends note to every process.
	RelayThreadNote(ctx context.Context, note []byte) error
	// ListenThreadNotes calls note with each note relayed until ctx ends,
	// and subscribed once it listens.
	ListenThreadNotes(ctx context.Context, subscribed func(), note func([]byte))
}

// relayedNote is a thread's note as it is relayed.
type relayedNote struct {
	// Worker is the process that relayed it, which has it already.
	Worker   string          `json:"w"`
	ThreadID string          `json:"t"`
	RunID    string          `json:"r,omitempty"`
	State    json.RawMessage `json:"s,omitempty"`
}

// threadNote tells a thread's stream of a run opened on the thread, or of
// a state update.
type threadNote struct {
	runID string
	// events is the run's stream, subscribed from its start when the run
	// opened (in process, with the in-process broker, whose stream of a
	// plain run goes as soon as it ends); nil: subscribe on receipt.
	events iter.Seq2[[]Event, error]
	// state is a state_update's data.
	state json.RawMessage
}

// threadSub is one thread stream's registration with the hub.
type threadSub struct {
	threadID string
	ctx      context.Context
	mu       sync.Mutex
	notes    []threadNote
	wake     chan struct{} // one token: notes are waiting
}

func (s *threadSub) push(n threadNote) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *threadSub) take() []threadNote {
	s.mu.Lock()
	defer s.mu.Unlock()
	notes := s.notes
	s.notes = nil
	return notes
}

// threadHub tells the thread streams of this process of their threads'
// new runs and state updates.
type threadHub struct {
	// presubscribe, when set (the in-process broker), subscribes a stream
	// to a run as the run opens.
	presubscribe func(ctx context.Context, runID string) iter.Seq2[[]Event, error]

	mu     sync.Mutex
	subs   map[string]map[*threadSub]struct{}
	done   chan struct{} // closed when the server shuts down
	closed bool
}

func newThreadHub(b Broker) *threadHub {
	h := &threadHub{subs: map[string]map[*threadSub]struct{}{}, done: make(chan struct{})}
	if mb, ok := b.(*memoryBroker); ok {
		h.presubscribe = func(ctx context.Context, runID string) iter.Seq2[[]Event, error] {
			events, _ := mb.subscribe(ctx, runID, -1, nil)
			return events
		}
	}
	return h
}

// add registers a stream of threadID; nil once the server shuts down.
func (h *threadHub) add(ctx context.Context, threadID string) *threadSub {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	sub := &threadSub{threadID: threadID, ctx: ctx, wake: make(chan struct{}, 1)}
	set := h.subs[threadID]
	if set == nil {
		set = map[*threadSub]struct{}{}
		h.subs[threadID] = set
	}
	set[sub] = struct{}{}
	return sub
}

func (h *threadHub) remove(sub *threadSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := h.subs[sub.threadID]; set != nil {
		delete(set, sub)
		if len(set) == 0 {
			delete(h.subs, sub.threadID)
		}
	}
}

// open counts the thread streams registered.
func (h *threadHub) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.subs {
		n += len(set)
	}
	return n
}

// watched reports whether a stream of threadID is registered.
func (h *threadHub) watched(threadID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[threadID]) > 0
}

// runOpened tells threadID's streams of a run opened on it; local says
// this process opened it (before its first event).
func (h *threadHub) runOpened(threadID, runID string, local bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs[threadID] {
		n := threadNote{runID: runID}
		if local && h.presubscribe != nil {
			n.events = h.presubscribe(sub.ctx, runID)
		}
		sub.push(n)
	}
}

// stateUpdated tells threadID's streams of a state update.
func (h *threadHub) stateUpdated(threadID string, data json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs[threadID] {
		sub.push(threadNote{state: data})
	}
}

// close ends every thread stream: the server shuts down.
func (h *threadHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// relayNote sends a thread's note to the other processes, when the broker
// relays them.
func (m *manager) relayNote(n relayedNote) {
	relay, ok := m.broker.(threadRelay)
	if !ok {
		return
	}
	n.Worker = m.worker
	data, err := json.Marshal(n)
	if err != nil {
		return
	}
	if err := relay.RelayThreadNote(m.base, data); err != nil {
		m.s.log.Warn("server: relaying a thread's note; thread streams in other processes miss it", "thread_id", n.ThreadID, "err", err)
	}
}

// relayed hands a note another process relayed to this one's streams.
func (m *manager) relayed(data []byte) {
	var n relayedNote
	if err := json.Unmarshal(data, &n); err != nil || n.Worker == m.worker || n.ThreadID == "" {
		return
	}
	switch {
	case n.RunID != "":
		m.threads.runOpened(n.ThreadID, n.RunID, false)
	case n.State != nil:
		m.threads.stateUpdated(n.ThreadID, n.State)
	}
}

// stateUpdated tells the streams of threadID, here and (through the
// broker) elsewhere, that its state was updated through the API: snap is
// the latest state the update read and recorded, sent as GET
// /threads/{id}/state answers it (read once for both).
func (s *Server) stateUpdated(threadID string, snap graph.StateSnapshot) {
	_, relays := s.runs.broker.(threadRelay)
	if !relays && !s.runs.threads.watched(threadID) {
		return
	}
	data, err := json.Marshal(map[string]any{"state": stateJSON(snap), "thread_id": threadID})
	if err != nil {
		return
	}
	s.runs.threads.stateUpdated(threadID, data)
	s.runs.relayNote(relayedNote{ThreadID: threadID, State: data})
}

// threadItem is what a run's follower hands a thread's stream.
type threadItem struct {
	runID string
	batch []Event
	err   error
	done  bool
}

// threadStream is one client's stream of a thread.
type threadStream struct {
	s        *Server
	ctx      context.Context
	modes    threadModes
	out      *sse
	items    chan threadItem
	wg       sync.WaitGroup
	followed map[string]bool
	// going holds the runs followed that the runs after them wait for:
	// a run leaves it at its run_done, or once the runs after it waited
	// orderWait in vain. followed keeps every run followed, so that a
	// run is followed once.
	going map[string]bool
	// held keeps, by run, the items of a run that came while a run
	// created before it is followed and not yet ended (see mustWait),
	// until that run ends or orderWait passed; holdTimer runs meanwhile.
	held      map[string][]threadItem
	holdTimer *time.Timer
	b         []byte
}

// orderWait bounds how long a run's events wait for the end of a run
// created before it (see threadStream.mustWait): a stream of a run whose
// process died, recorded failed by another without its stream's end,
// does not hold the next run's events longer.
const orderWait = 2 * time.Second

func (s *Server) streamThread(w http.ResponseWriter, r *http.Request) error {
	modes, err := parseThreadModes(r)
	if err != nil {
		return err
	}
	pos, err := parseThreadLastEventID(r.Header.Get("Last-Event-ID"))
	if err != nil {
		return err
	}
	t, err := s.ownThread(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	ts := &threadStream{s: s, ctx: ctx, modes: modes, out: &sse{}, items: make(chan threadItem), followed: map[string]bool{}, going: map[string]bool{}, held: map[string][]threadItem{}}
	// Registered before the runs are read: a run created meanwhile is
	// both read and told, and followed once.
	sub := s.runs.threads.add(ctx, t.ID)
	if sub == nil {
		cancel()
		return &api.StatusError{Status: http.StatusServiceUnavailable, Message: "The server is shutting down", Err: errShuttingDown}
	}
	defer func() {
		// The followers stop, then the stream leaves the hub.
		cancel()
		ts.wg.Wait()
		s.runs.threads.remove(sub)
	}()

	if pos == nil {
		// Live: the runs going now, from now on.
		going, err := s.rec.ActiveRuns(ctx, t.ID) // oldest first
		if err != nil {
			return err
		}
		ts.out.start(w)
		for _, run := range going {
			if events, ok := s.runs.broker.Subscribe(ctx, run.ID, FromNow); ok {
				ts.follow(run.ID, events)
			}
		}
	} else {
		runs, err := s.rec.ListRuns(ctx, records.RunQuery{Owner: t.Owner, ThreadID: t.ID, Limit: maxReplayRuns})
		if err != nil {
			return recordErr(err, threadNotFound(t.ID))
		}
		slices.Reverse(runs)
		ts.out.start(w)
		if !ts.replay(runs, pos) {
			return nil
		}
	}
	ts.loop(sub)
	return nil
}

// replay writes the kept events of runs (oldest first) after pos, run
// after run, then follows those still going. It reports whether the
// stream goes on.
func (ts *threadStream) replay(runs []records.Run, pos *threadPos) bool {
	kr, ordered := ts.s.runs.broker.(keptReader)
	for _, run := range runs {
		after := -1
		switch {
		case pos.runID == "" || run.ID > pos.runID:
		case run.ID == pos.runID && !pos.done:
			after = pos.after
		default:
			continue
		}
		if !ordered {
			if events, ok := ts.s.runs.broker.Subscribe(ts.ctx, run.ID, after); ok {
				ts.follow(run.ID, events)
			}
			continue
		}
		kept, ended, rest, ok, err := kr.Kept(ts.ctx, run.ID, after)
		if !ok {
			continue
		}
		if err != nil {
			ts.fail(err)
			return false
		}
		ts.followed[run.ID], ts.going[run.ID] = true, true
		if !ts.write(run.ID, kept) {
			return false
		}
		if ended {
			if !ts.done(run.ID) {
				return false
			}
			continue
		}
		ts.start(run.ID, rest)
	}
	return true
}

// follow follows a run's events from events, unless it is followed
// already.
func (ts *threadStream) follow(runID string, events iter.Seq2[[]Event, error]) {
	if ts.followed[runID] {
		return
	}
	ts.followed[runID], ts.going[runID] = true, true
	ts.start(runID, events)
}

// start hands a run's events to the stream from a goroutine of their own
// until the run's stream ends or the thread's does. A reader that writes
// slowly holds its follower here, never the run: the broker keeps the
// events it has not read (trimmed past its bound, which the follower is
// then told).
func (ts *threadStream) start(runID string, events iter.Seq2[[]Event, error]) {
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		send := func(it threadItem) bool {
			select {
			case ts.items <- it:
				return true
			case <-ts.ctx.Done():
				return false
			}
		}
		for batch, err := range events {
			if err != nil {
				send(threadItem{runID: runID, err: err})
				return
			}
			if !send(threadItem{runID: runID, batch: batch}) {
				return
			}
		}
		send(threadItem{runID: runID, done: true})
	}()
}

// loop writes the followers' events and the notes until the client goes
// away, the server shuts down, or a run's stream fails.
func (ts *threadStream) loop(sub *threadSub) {
	defer ts.out.end()
	defer func() {
		if ts.holdTimer != nil {
			ts.holdTimer.Stop()
		}
	}()
	done := ts.s.runs.threads.done
	for {
		select {
		case <-ts.ctx.Done():
			return
		case <-done:
			return
		case <-sub.wake:
			for _, n := range sub.take() {
				if n.state != nil {
					if ts.modes.state && !ts.writeOne("state_update", n.state, "") {
						return
					}
					continue
				}
				if ts.followed[n.runID] {
					continue
				}
				events, ok := n.events, n.events != nil
				if !ok {
					events, ok = ts.s.runs.broker.Subscribe(ts.ctx, n.runID, -1)
				}
				if ok {
					ts.follow(n.runID, events)
				}
			}
		case it := <-ts.items:
			if !ts.handle(it) {
				return
			}
		case <-ts.holdC():
			ts.holdTimer = nil
			if !ts.giveUpWaiting() {
				return
			}
		}
	}
}

// handle writes a follower's item, or holds it while a run created
// before its run has not ended. It reports whether the stream goes on.
func (ts *threadStream) handle(it threadItem) bool {
	if len(ts.held[it.runID]) > 0 || ts.mustWait(it) {
		ts.held[it.runID] = append(ts.held[it.runID], it)
		if ts.holdTimer == nil {
			ts.holdTimer = time.NewTimer(orderWait)
		}
		return true
	}
	if !ts.apply(it) {
		return false
	}
	if it.done && len(ts.held) > 0 {
		return ts.release(false)
	}
	return true
}

// mustWait reports whether an item must wait for the end of a run
// created before its own. A thread's runs execute one at a time in the
// order they were created, so a run's events (but its first metadata,
// which an enqueued run sends at once) come after the end of every run
// before it: each run has a reader of its own, and this keeps the one
// that ended first from being passed by the next run's events.
func (ts *threadStream) mustWait(it threadItem) bool {
	if it.err != nil {
		return false
	}
	if !it.done && !slices.ContainsFunc(it.batch, func(ev Event) bool { return ev.Name != "metadata" || !isRunStart(ev.Data) }) {
		return false
	}
	return ts.waitsFor(it.runID)
}

// waitsFor reports whether runID's events wait for a run created before
// it (one in going).
func (ts *threadStream) waitsFor(runID string) bool {
	for id := range ts.going {
		if id < runID {
			return true
		}
	}
	return false
}

// release writes the items held that need wait no more (all: every
// one), run after run in creation order.
func (ts *threadStream) release(all bool) bool {
	for len(ts.held) > 0 {
		runs := slices.Sorted(maps.Keys(ts.held))
		i := 0
		for i < len(runs) && !all && ts.waitsFor(runs[i]) {
			i++
		}
		if i == len(runs) {
			break
		}
		items := ts.held[runs[i]]
		delete(ts.held, runs[i])
		for _, it := range items {
			if !ts.apply(it) {
				return false
			}
		}
	}
	if len(ts.held) == 0 && ts.holdTimer != nil {
		ts.holdTimer.Stop()
		ts.holdTimer = nil
	}
	return true
}

// giveUpWaiting writes the items held once they waited orderWait: the
// runs they waited for are not waited for any more.
func (ts *threadStream) giveUpWaiting() bool {
	if len(ts.held) == 0 {
		return true
	}
	last := slices.Max(slices.Collect(maps.Keys(ts.held)))
	for id := range ts.going {
		if id < last {
			delete(ts.going, id)
		}
	}
	return ts.release(true)
}

// holdC is the channel of the timer bounding the items held; nil when
// none are.
func (ts *threadStream) holdC() <-chan time.Time {
	if ts.holdTimer == nil {
		return nil
	}
	return ts.holdTimer.C
}

// apply writes a follower's item. It reports whether the stream goes on.
func (ts *threadStream) apply(it threadItem) bool {
	switch {
	case it.err != nil:
		ts.fail(it.err)
		return false
	case it.done:
		return ts.done(it.runID)
	default:
		return ts.write(it.runID, it.batch)
	}
}

// fail ends the stream on a run's stream's failure, as a run's own
// stream ends (an error event), unless the client went away.
func (ts *threadStream) fail(err error) {
	switch {
	case errors.Is(err, ErrStreamTrimmed):
		ts.out.endWithError("StreamTrimmedError", err)
	case errors.Is(err, ErrBrokerUnavailable):
		ts.s.log.Warn("server: a thread's stream is cut", "err", err)
		ts.out.endWithError("StreamUnavailableError", err)
	}
}

// isRunStart reports whether a metadata event's data is a run's first
// event, {"run_id", "attempt"}.
func isRunStart(data []byte) bool {
	var m struct {
		RunID   *string          `json:"run_id"`
		Attempt *json.RawMessage `json:"attempt"`
	}
	return json.Unmarshal(data, &m) == nil && m.RunID != nil && m.Attempt != nil
}

// write writes the events of a run its modes pass, and flushes them.
func (ts *threadStream) write(runID string, evs []Event) bool {
	wrote := false
	for _, ev := range evs {
		if !ts.modes.runs && !(ts.modes.lifecycle && ev.Name == "metadata" && isRunStart(ev.Data)) {
			continue
		}
		if !ts.put(ev.Name, ev.Data, threadEventID(runID, ev.ID)) {
			return false
		}
		wrote = true
	}
	return !wrote || ts.out.flush() == nil
}

// done writes a run's run_done event, when the modes pass it.
func (ts *threadStream) done(runID string) bool {
	delete(ts.going, runID)
	if !ts.modes.runs && !ts.modes.lifecycle {
		return true
	}
	data := make([]byte, 0, 64)
	data = append(data, `{"status":"run_done","run_id":`...)
	data = jsonx.AppendString(data, runID, true)
	data = append(data, '}')
	return ts.writeOne("metadata", data, threadDoneID(runID))
}

// writeOne writes one event and flushes it.
func (ts *threadStream) writeOne(name string, data []byte, id string) bool {
	return ts.put(name, data, id) && ts.out.flush() == nil
}

// put writes an event with id ("" for none) without flushing it.
func (ts *threadStream) put(name string, data []byte, id string) bool {
	w := ts.out.w
	ts.b = append(ts.b[:0], "event: "...)
	ts.b = append(ts.b, name...)
	ts.b = append(ts.b, "\ndata: "...)
	if _, err := w.Write(ts.b); err != nil {
		return false
	}
	if _, err := w.Write(data); err != nil {
		return false
	}
	ts.b = append(ts.b[:0], '\n')
	if id != "" {
		ts.b = append(ts.b, "id: "...)
		ts.b = append(ts.b, id...)
		ts.b = append(ts.b, '\n')
	}
	ts.b = append(ts.b, '\n')
	_, err := w.Write(ts.b)
	return err == nil
}
