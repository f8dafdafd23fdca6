package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
	"github.com/weftlabs/weft/telemetry"
)

// busyText is the API's answer to a run on a busy thread with the reject
// strategy.
const busyText = "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."

// create makes a run of lr's kind, not yet launched.
func (m *manager) create(ctx context.Context, nr records.NewRun, kw runKwargs, g *servedGraph) (*liveRun, error) {
	if m.isClosing() {
		return nil, &api.StatusError{Status: http.StatusServiceUnavailable, Message: "The server is shutting down and takes no new runs", Err: errShuttingDown}
	}
	// A place among the runs this process holds (Options.MaxRuns), given
	// back when the run ends, or here if it is not made.
	if !m.admit() {
		m.s.opts.Telemetry.Rejected(telemetry.RejectTooManyRuns)
		return nil, errTooManyRuns(cap(m.admitted))
	}
	made := false
	defer func() {
		if !made {
			m.unadmit()
		}
	}()
	// And a place among the runs its user holds here
	// (Options.MaxRunsPerUser), likewise.
	owner := nr.Run.Owner
	if !m.admitUser(owner) {
		m.s.opts.Telemetry.Rejected(telemetry.RejectTooManyUserRuns)
		return nil, errTooManyUserRuns(m.s.opts.MaxRunsPerUser)
	}
	defer func() {
		if !made {
			m.unadmitUser(owner)
		}
	}()
	// The thread's lease goes in the run's write when the run is to
	// start at once (manager.leaseAtCreate): the run then adopts it
	// instead of taking it in a write of its own. acquired is before
	// that write, so that this process counts the lease expired no later
	// than the store does.
	var lease *records.LeaseRequest
	acquired := time.Now()
	if m.leaseAtCreate(nr.Run.ThreadID, kw) {
		lease = m.leaseRequest(nr.Run.ID)
		nr.Lease = lease
	}
	rec, inflight, err := m.s.rec.CreateRun(ctx, nr)
	switch {
	case errors.Is(err, records.ErrBusy):
		return nil, api.Conflict(busyText).Because(err)
	case errors.Is(err, records.ErrNotFound):
		return nil, threadNotFound(nr.Run.ThreadID)
	case errors.Is(err, records.ErrOtherGraph):
		// Its checkpoints hold another graph's channels, which this
		// graph cannot read.
		return nil, api.Conflict("%s; start a new thread for this assistant", strings.TrimPrefix(err.Error(), "records: ")).Because(err)
	case err != nil:
		return nil, err
	}
	lr := m.newLive(rec, kw, g)
	if lease != nil && lease.Taken {
		// Cannot fail: the thread id, owner and TTL are set.
		if lr.lease, err = m.s.saver.AdoptLease(rec.ThreadID, checkpoint.LeaseOptions{TTL: lease.TTL, Owner: lease.Owner, RunID: rec.ID}, acquired); err != nil {
			return nil, err
		}
	}
	if err := m.open(lr); err != nil {
		m.dropLease(lr)
		return nil, err
	}
	lr.admitted, made = true, true
	noteRun(ctx, rec.ID)
	m.enqueue(lr)
	m.s.doc.runQueued(rec.ThreadID)
	if s := rec.MultitaskStrategy; (s == records.MultitaskInterrupt || s == records.MultitaskRollback) && len(inflight) > 0 {
		if err := m.cancel(ctx, rec.Owner, rec.ThreadID, inflight, s, false); err != nil {
			m.s.log.Warn("server: cancelling the runs a new run replaces", "thread_id", rec.ThreadID, "err", err)
		}
	}
	return lr, nil
}

// staleAssistantTries bounds how many times a run is tried again when
// its assistant changed while it was being created.
const staleAssistantTries = 3

// noAssistant answers a lookup of assistant ref that failed: 404 when
// there is none, the store's error (a passing one, say) as it is.
func noAssistant(ref string, err error) error {
	if !errors.Is(err, errNoSuchAssistant) {
		return err
	}
	return api.NotFound("No assistant found for %q. Make sure the assistant ID is for a valid assistant or a valid graph ID.", ref).Because(errNoSuchAssistant)
}

// checkRun checks a request to create a run, on a thread of its own when
// stateless, as newRun does before it writes anything: its fields, its
// webhook, its assistant and graph, and what the run would be given. It
// returns the assistant, its graph, and the run's kwargs and thread
// config.
func (s *Server) checkRun(r *http.Request, req *runRequest, stateless bool) (records.Assistant, *servedGraph, runKwargs, json.RawMessage, error) {
	fail := func(err error) (records.Assistant, *servedGraph, runKwargs, json.RawMessage, error) {
		return records.Assistant{}, nil, runKwargs{}, nil, err
	}
	if err := req.validate(); err != nil {
		return fail(err)
	}
	if err := s.webhooks.check(req.Webhook); err != nil {
		return fail(err)
	}
	a, err := s.runAssistant(r, *req.AssistantID, false)
	if err != nil {
		return fail(noAssistant(*req.AssistantID, err))
	}
	g, err := s.servedGraphOf(a)
	if err != nil {
		return fail(err)
	}
	kw, threadConfig, err := req.kwargs(r, stateless && req.OnCompletion != "keep")
	if err != nil {
		return fail(err)
	}
	return a, g, kw, threadConfig, nil
}

// newRun creates a run from a request on threadID ("" for a stateless
// run on a thread of its own), not yet launched.
func (s *Server) newRun(r *http.Request, req *runRequest, threadID string) (*liveRun, error) {
	stateless := threadID == ""
	a, g, kw, threadConfig, err := s.checkRun(r, req, stateless)
	if err != nil {
		return nil, err
	}
	kwJSON, err := json.Marshal(kw)
	if err != nil {
		return nil, err
	}
	strategy := req.MultitaskStrategy
	if strategy == "" {
		strategy = records.MultitaskReject
	}
	nr := records.NewRun{
		Run: records.Run{
			ID: newRunID(), ThreadID: threadID, Owner: user(r), Metadata: req.Metadata,
			Kwargs: kwJSON, MultitaskStrategy: strategy, Worker: s.runs.worker,
		},
		ThreadConfig: threadConfig,
		CreateThread: stateless || req.IfNotExists == "create",
		CronTick:     req.cronTick,
	}
	if stateless {
		nr.Run.ThreadID = newThreadID()
	}
	for try := 1; ; try++ {
		nr.Run.AssistantID, nr.GraphID, nr.AssistantMetadata, nr.Assistant = a.ID, a.GraphID, a.Metadata, a.Stamp()
		lr, err := s.runs.create(r.Context(), nr, kw, g)
		if err == nil {
			// Not launched yet: nothing reads it before launch.
			lr.parent = telemetry.ParentFromHeader(r.Header)
		}
		if !errors.Is(err, records.ErrStaleAssistant) {
			return lr, err
		}
		// Changed since it was kept (by another process, say): read it
		// again.
		s.assistants.forget(a.ID)
		if try == staleAssistantTries {
			return nil, api.Conflict("Assistant %s changed while the run was being created; try again", a.ID).Because(err)
		}
		if a, err = s.runAssistant(r, *req.AssistantID, true); err != nil {
			return nil, noAssistant(*req.AssistantID, err)
		}
		if g, err = s.servedGraphOf(a); err != nil {
			return nil, err
		}
	}
}

// runLocation is where a created run lives, for the Content-Location
// header the SDK reads.
func runLocation(lr *liveRun, stateless bool) string {
	if stateless {
		return "/runs/" + lr.rec.ID
	}
	return "/threads/" + lr.rec.ThreadID + "/runs/" + lr.rec.ID
}

// streamLocation is where a resumable run's stream is joined again: the
// Location header of its streams, to which the SDK reconnects with
// Last-Event-ID when a stream breaks off before the run ends. A run whose
// events are not kept gets none: a reconnect could not replay what the
// client missed.
func streamLocation(rec records.Run, stateless bool) string {
	if stateless {
		return "/runs/" + rec.ID + "/stream"
	}
	return "/threads/" + rec.ThreadID + "/runs/" + rec.ID + "/stream"
}

// runThread reads the thread of a run request from the path; "" for the
// stateless endpoints.
func runThread(r *http.Request) (string, error) {
	if r.PathValue("thread_id") == "" {
		return "", nil
	}
	return pathUUID(r, "thread_id")
}

// requestedRun creates the run a request to a run endpoint asks for, not
// yet launched, with the request and the thread id ("" for a stateless
// run).
func (s *Server) requestedRun(w http.ResponseWriter, r *http.Request) (*liveRun, *runRequest, string, error) {
	threadID, err := runThread(r)
	if err != nil {
		return nil, nil, "", err
	}
	var req runRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return nil, nil, "", err
	}
	lr, err := s.newRun(r, &req, threadID)
	return lr, &req, threadID, err
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) error {
	lr, _, threadID, err := s.requestedRun(w, r)
	if err != nil {
		return err
	}
	created := runOut(lr.rec)
	s.runs.launch(lr)
	w.Header().Set("Content-Location", runLocation(lr, threadID == ""))
	api.WriteJSON(w, http.StatusOK, created)
	return nil
}

func (s *Server) batchRuns(w http.ResponseWriter, r *http.Request) error {
	var reqs []runRequest
	if err := api.DecodeBody(w, r, 0, &reqs); err != nil {
		return err
	}
	if len(reqs) == 0 {
		return api.Invalid(api.Field("Array must contain at least 1 element(s)"))
	}
	out := make([]runJSON, 0, len(reqs))
	for i := range reqs {
		lr, err := s.newRun(r, &reqs[i], "")
		if err != nil {
			return err
		}
		out = append(out, runOut(lr.rec))
		s.runs.launch(lr)
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// sse writes a run's events as server-sent events.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	b  []byte
	// held says that write does not flush: the run's stream flushes
	// before it waits for more events (Server.subscribe). A held stream's
	// headers are not flushed alone either: they go with its first events.
	held bool
	// flushed says that something (the headers at least) was flushed.
	flushed bool
}

func startSSE(w http.ResponseWriter) *sse {
	out := &sse{}
	out.start(w)
	return out
}

// start writes the response's headers, and flushes them unless s is
// held: a held stream flushes before it waits for events, so its headers
// go with the events it found at once (a run's metadata at least) in one
// write rather than in one of their own.
// The headers of a stream's answer, shared as those in http.go are.
var (
	eventStreamHeader = []string{"text/event-stream"}
	noStoreHeader     = []string{"no-store"}
	noHeader          = []string{"no"}
)

func (s *sse) start(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = eventStreamHeader
	h["Cache-Control"] = noStoreHeader
	h["X-Accel-Buffering"] = noHeader
	w.WriteHeader(http.StatusOK)
	s.w, s.rc = w, http.NewResponseController(w)
	// A stream lasts as long as its run: no write deadline.
	_ = s.rc.SetWriteDeadline(time.Time{})
	if !s.held {
		_ = s.flush()
	}
}

// write sends a batch of events at once. Each event's data goes to the
// response writer as it is, which buffers it (net/http's buffer of the
// response): s.b holds only the short lines around it, so a stream keeps
// no buffer as large as its largest batch (values events hold the whole
// state). It flushes, unless held.
func (s *sse) write(evs []Event) error {
	for _, ev := range evs {
		s.b = append(s.b[:0], "event: "...)
		s.b = append(s.b, ev.Name...)
		s.b = append(s.b, "\ndata: "...)
		if _, err := s.w.Write(s.b); err != nil {
			return err
		}
		if _, err := s.w.Write(ev.Data); err != nil {
			return err
		}
		s.b = append(s.b[:0], "\nid: "...)
		s.b = strconv.AppendInt(s.b, int64(ev.ID), 10)
		s.b = append(s.b, "\n\n"...)
		if _, err := s.w.Write(s.b); err != nil {
			return err
		}
	}
	if s.held {
		return nil
	}
	return s.flush()
}

// flush sends what was written to the client.
func (s *sse) flush() error {
	s.flushed = true
	return s.rc.Flush()
}

// endWithError writes the error event {"error": name, "message"} that
// ends a stream cut short, and flushes it, held or not.
func (s *sse) endWithError(name string, err error) {
	data, _ := json.Marshal(map[string]string{"error": name, "message": err.Error()})
	if s.write([]Event{{Name: "error", Data: data}}) == nil {
		_ = s.flush()
	}
}

// end flushes a stream that never flushed (a held one that ended before
// it waited: a join replaying an ended run's events), so that its
// response is chunked as every stream's is, rather than one net/http
// would give a Content-Length once the handler returns.
func (s *sse) end() {
	if !s.flushed {
		_ = s.flush()
	}
}

// subscribe subscribes to a run's events for out (started or not yet).
// With the in-process broker, out does not flush each batch it writes:
// the stream flushes it once before it waits for the next events, so
// that the events a run publishes one after the other while the reader
// writes go to the client in one write (one syscall, one TCP segment)
// rather than one each. Other brokers' batches are flushed one by one.
func (s *Server) subscribe(ctx context.Context, runID string, after int, out *sse) (iter.Seq2[[]Event, error], bool) {
	if b, ok := s.runs.broker.(*memoryBroker); ok {
		events, ok := b.subscribe(ctx, runID, after, out.flush)
		// Without a stream here (a join of a run another process
		// executes), nothing flushes before waiting: the headers go at
		// once.
		out.held = ok
		return events, ok
	}
	return s.runs.broker.Subscribe(ctx, runID, after)
}

// follow writes a run's events to the client until the run's stream ends
// or the client goes. It reports whether the stream ended (rather than the
// client going away).
func (s *Server) follow(out *sse, events iter.Seq2[[]Event, error]) bool {
	defer out.end()
	for batch, err := range events {
		if err != nil {
			if errors.Is(err, ErrStreamTrimmed) {
				out.endWithError("StreamTrimmedError", err)
				return true
			}
			if errors.Is(err, ErrBrokerUnavailable) {
				// The run goes on; the client may join its stream again
				// with Last-Event-ID once the broker answers.
				s.log.Warn("server: a run's stream is cut", "err", err)
				out.endWithError("StreamUnavailableError", err)
				return true
			}
			return false
		}
		if err := out.write(batch); err != nil {
			return false
		}
	}
	return true
}

func (s *Server) streamRun(w http.ResponseWriter, r *http.Request) error {
	lr, req, threadID, err := s.requestedRun(w, r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Location", runLocation(lr, threadID == ""))
	if req.StreamResumable {
		w.Header().Set("Location", streamLocation(lr.rec, threadID == ""))
	}
	ctx := r.Context()
	out := &sse{}
	events, ok := s.subscribe(ctx, lr.rec.ID, -1, out)
	s.runs.launch(lr)
	if !ok {
		return fmt.Errorf("the broker has no stream for run %s", lr.rec.ID)
	}
	out.start(w)
	if !s.follow(out, events) && req.OnDisconnect == "cancel" {
		s.cancelOnDisconnect(lr)
	}
	return nil
}

// cancelOnDisconnect cancels a run whose client went away, when it asked
// for that (on_disconnect, cancel_on_disconnect).
func (s *Server) cancelOnDisconnect(lr *liveRun) {
	select {
	case <-lr.done:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.runs.cancel(ctx, lr.rec.Owner, lr.rec.ThreadID, []string{lr.rec.ID}, records.MultitaskInterrupt, false); err != nil {
		s.log.Warn("server: cancelling a run whose client went away", "run_id", lr.rec.ID, "err", err)
	}
}

// cancelElsewhereOnDisconnect cancels a run another process executes,
// whose stream this one served (a shared broker), when its client went
// away and asked for that.
func (s *Server) cancelElsewhereOnDisconnect(run records.Run) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := s.rec.GetRun(ctx, run.Owner, run.ThreadID, run.ID)
	if err != nil || (rec.Status != records.RunPending && rec.Status != records.RunRunning) {
		return
	}
	if err := s.runs.cancel(ctx, run.Owner, run.ThreadID, []string{run.ID}, records.MultitaskInterrupt, false); err != nil {
		s.log.Warn("server: cancelling a run whose client went away", "run_id", run.ID, "err", err)
	}
}

func (s *Server) waitRun(w http.ResponseWriter, r *http.Request) error {
	lr, req, threadID, err := s.requestedRun(w, r)
	if err != nil {
		return err
	}
	s.runs.launch(lr)
	w.Header().Set("Content-Location", runLocation(lr, threadID == ""))
	// The answer is written when the run ends; until then a newline every
	// second keeps proxies from closing the connection.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case <-lr.done:
			body, err := s.runResult(r.Context(), lr)
			if err != nil {
				s.log.Warn("server: reading a run's result", "run_id", lr.rec.ID, "err", err)
				body = []byte("null")
			}
			_, _ = w.Write(body)
			return nil
		case <-tick.C:
			if _, err := w.Write([]byte("\n")); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-r.Context().Done():
			if req.OnDisconnect == "cancel" {
				s.cancelOnDisconnect(lr)
			}
			return nil
		}
	}
}

// runResult is what a wait or join answers for a run that ended: its last
// values (or its error), else its thread's values.
func (s *Server) runResult(ctx context.Context, lr *liveRun) ([]byte, error) {
	if lr.result != nil {
		return lr.result, nil
	}
	if lr.kw.Temporary {
		return []byte("null"), nil
	}
	return s.threadValues(ctx, lr.rec.Owner, lr.rec.ThreadID)
}

func (s *Server) threadValues(ctx context.Context, owner, threadID string) ([]byte, error) {
	t, err := s.rec.GetThread(ctx, owner, threadID)
	if errors.Is(err, records.ErrNotFound) {
		return []byte("null"), nil
	}
	if err != nil {
		return nil, err
	}
	if t.Values == nil {
		return []byte("null"), nil
	}
	return t.Values, nil
}

func runNotFound() error { return api.NotFound("Run not found").Because(errNoSuchRun) }

// storedRun returns the run the path names, if the request's user owns
// it.
func (s *Server) storedRun(r *http.Request) (records.Run, error) {
	threadID, err := pathUUID(r, "thread_id")
	if err != nil {
		return records.Run{}, err
	}
	runID, err := pathUUID(r, "run_id")
	if err != nil {
		return records.Run{}, err
	}
	run, err := s.rec.GetRun(r.Context(), user(r), threadID, runID)
	return run, recordErr(err, runNotFound())
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.storedRun(r)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, runOut(run))
	return nil
}

var runStatuses = []string{records.RunPending, records.RunRunning, records.RunError, records.RunSuccess, records.RunTimeout, records.RunInterrupted}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	threadID, err := pathUUID(r, "thread_id")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	intParam := func(name string, dflt, least int) (int, error) {
		v := q.Get(name)
		if v == "" {
			return dflt, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, api.Invalid(api.TypeIssue("number", "string", name))
		}
		if n < least {
			return 0, api.Invalid(api.Field("Number must be greater than or equal to "+strconv.Itoa(least), name))
		}
		return n, nil
	}
	limit, err := intParam("limit", 10, 1)
	if err != nil {
		return err
	}
	offset, err := intParam("offset", 0, 0)
	if err != nil {
		return err
	}
	status := q.Get("status")
	if status != "" && !slices.Contains(runStatuses, status) {
		return enumIssue("status", status, runStatuses...)
	}
	runs, err := s.rec.ListRuns(r.Context(), records.RunQuery{Owner: user(r), ThreadID: threadID, Status: status, Limit: limit, Offset: offset})
	if err != nil {
		return recordErr(err, threadNotFound(threadID))
	}
	out := make([]runJSON, len(runs))
	for i, run := range runs {
		out[i] = runOut(run)
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.storedRun(r)
	if err != nil {
		return err
	}
	err = s.rec.DeleteRun(r.Context(), user(r), run.ThreadID, run.ID)
	if errors.Is(err, records.ErrBusy) {
		return api.Conflict("Run %s is %s: cancel it before deleting it", run.ID, run.Status)
	}
	if err != nil {
		return recordErr(err, runNotFound())
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) joinRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.storedRun(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if lr := s.runs.live(run.Owner, run.ThreadID, run.ID); lr != nil {
		select {
		case <-lr.done:
		case <-ctx.Done():
			if queryBool(r, "cancel_on_disconnect") {
				s.cancelOnDisconnect(lr)
			}
			return nil
		}
		body, err := s.runResult(ctx, lr)
		if err != nil {
			return err
		}
		writeRawJSON(w, body)
		return nil
	}
	if err := s.runs.waitStored(ctx, run.Owner, run.ThreadID, run.ID); err != nil && !errors.Is(err, records.ErrNotFound) {
		return err
	}
	if body, ok := s.keptResult(ctx, run.ID); ok {
		writeRawJSON(w, body)
		return nil
	}
	body, err := s.threadValues(ctx, run.Owner, run.ThreadID)
	if err != nil {
		return err
	}
	writeRawJSON(w, body)
	return nil
}

// keptResultWait bounds how long a join waits for the stream of a run
// recorded ended to close, with its result.
const keptResultWait = 10 * time.Second

// keptResult is what the process that executed a run answers for it, as
// a shared broker keeps it; false when there is none. The run's end is
// recorded before its stream closes with the result: this waits for that.
func (s *Server) keptResult(ctx context.Context, runID string) ([]byte, bool) {
	rk, ok := s.runs.broker.(resultKeeper)
	if !ok {
		return nil, false
	}
	body, ok, err := rk.Result(ctx, runID)
	if err == nil && !ok {
		wctx, cancel := context.WithTimeout(ctx, keptResultWait)
		defer cancel()
		if events, found := s.runs.broker.Subscribe(wctx, runID, FromNow); found {
			for range events {
			}
			body, ok, err = rk.Result(ctx, runID)
		}
	}
	if err != nil {
		s.log.Warn("server: reading a run's result from the broker; answering its thread's values", "run_id", runID, "err", err)
		return nil, false
	}
	return body, ok
}

func writeRawJSON(w http.ResponseWriter, body []byte) {
	w.Header()["Content-Type"] = api.JSONType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (s *Server) joinStream(w http.ResponseWriter, r *http.Request) error {
	run, err := s.storedRun(r)
	if err != nil {
		return err
	}
	return s.joinRunStream(w, r, run, false)
}

// joinStreamByID joins a run's stream named by the run's id alone (GET
// /runs/{run_id}/stream): a stateless run's, whose thread the client does
// not know, or any run of the user's. A stateless run's record goes with
// its thread when it ends (unless on_completion is "keep"); after that
// its stream is a 404 too, as any run that is not the user's, but for a
// resumable one that ended in this process, whose kept events a
// reconnect replays while they are kept.
func (s *Server) joinStreamByID(w http.ResponseWriter, r *http.Request) error {
	runID, err := pathUUID(r, "run_id")
	if err != nil {
		return err
	}
	run, err := s.rec.FindRun(r.Context(), user(r), runID)
	if errors.Is(err, records.ErrNotFound) {
		if ended, ok := s.runs.endedStateless(user(r), runID); ok {
			run, err = ended, nil
		}
	}
	if err != nil {
		return recordErr(err, runNotFound())
	}
	return s.joinRunStream(w, r, run, true)
}

// joinRunStream follows run's stream for a join; byID says it was named
// by its id alone, for the Location a resumable run's stream carries.
func (s *Server) joinRunStream(w http.ResponseWriter, r *http.Request, run records.Run, byID bool) error {
	after := -1
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			return api.Invalid(api.Field("Last-Event-ID must be an event id (an integer, -1 for the first)", "Last-Event-ID"))
		}
		after = n
	}
	ctx := r.Context()
	lr := s.runs.live(run.Owner, run.ThreadID, run.ID)
	if runResumable(lr, run) {
		w.Header().Set("Location", streamLocation(run, byID))
	}
	out := &sse{}
	events, ok := s.subscribe(ctx, run.ID, after, out)
	out.start(w)
	if ok {
		if !s.follow(out, events) && queryBool(r, "cancel_on_disconnect") {
			if lr != nil {
				s.cancelOnDisconnect(lr)
			} else {
				s.cancelElsewhereOnDisconnect(run)
			}
		}
		return nil
	}
	// The run executes in another process, or ended and its events are
	// gone: the stream ends when the run does.
	if run.Status == records.RunPending || run.Status == records.RunRunning {
		_ = s.runs.waitStored(ctx, run.Owner, run.ThreadID, run.ID)
	}
	return nil
}

// runResumable reports whether a run's events are kept for clients that
// come back (stream_resumable): from the live run when this process
// executes it, else from its stored kwargs (unreadable ones: not).
func runResumable(lr *liveRun, run records.Run) bool {
	if lr != nil {
		return lr.kw.Resumable
	}
	kw, err := decodeKwargs(run.Kwargs)
	return err == nil && kw.Resumable
}

func cancelAction(r *http.Request) (string, error) {
	action := r.URL.Query().Get("action")
	switch action {
	case "":
		return records.MultitaskInterrupt, nil
	case records.MultitaskInterrupt, records.MultitaskRollback:
		return action, nil
	}
	return "", enumIssue("action", action, records.MultitaskInterrupt, records.MultitaskRollback)
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	action, err := cancelAction(r)
	if err != nil {
		return err
	}
	run, err := s.storedRun(r)
	if err != nil {
		return err
	}
	wait := queryBool(r, "wait")
	if err := s.runs.cancel(r.Context(), run.Owner, run.ThreadID, []string{run.ID}, action, wait); err != nil {
		return err
	}
	if wait {
		w.WriteHeader(http.StatusNoContent)
	} else {
		w.WriteHeader(http.StatusAccepted)
	}
	return nil
}

func (s *Server) cancelRuns(w http.ResponseWriter, r *http.Request) error {
	action, err := cancelAction(r)
	if err != nil {
		return err
	}
	var req struct {
		ThreadID string   `json:"thread_id"`
		RunIDs   []string `json:"run_ids"`
		Status   string   `json:"status"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	switch req.Status {
	case "", "pending", "running", "all":
	default:
		return enumIssue("status", req.Status, "pending", "running", "all")
	}
	if req.ThreadID == "" {
		return api.Invalid(api.TypeIssue("string", "undefined", "thread_id"))
	}
	if _, err := uuid.Parse(req.ThreadID); err != nil {
		return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"thread_id"}, Message: "Invalid uuid"})
	}
	if _, err := s.rec.GetThread(r.Context(), user(r), req.ThreadID); err != nil {
		return recordErr(err, threadNotFound(req.ThreadID))
	}
	ids := req.RunIDs
	if len(ids) == 0 {
		active, err := s.rec.ActiveRuns(r.Context(), req.ThreadID)
		if err != nil {
			return err
		}
		for _, run := range active {
			if req.Status == "" || req.Status == "all" || req.Status == run.Status {
				ids = append(ids, run.ID)
			}
		}
	}
	if err := s.runs.cancel(r.Context(), user(r), req.ThreadID, ids, action, false); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
