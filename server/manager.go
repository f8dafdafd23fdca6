package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/server/internal/records"
	"github.com/weftlabs/weft/telemetry"
)

// manager executes the runs this process accepted or took over: a bounded
// pool of workers, one goroutine per executing run, runs of one thread one
// at a time and in order.
type manager struct {
	s      *Server
	worker string
	broker Broker
	sem    chan struct{}

	leaseTTL, workerTTL, retain time.Duration
	durability                  graph.Durability

	// base is the context of the heartbeat loop; stop cancels it.
	base     context.Context
	stop     context.CancelFunc
	loopDone chan struct{}
	// relayDone closes when the listener of relayed cancels stopped (nil
	// without one).
	relayDone chan struct{}
	// threads tells this process's thread streams of their runs and
	// state updates; threadsDone closes when the listener of the notes
	// other processes relay stopped (nil without one).
	threads     *threadHub
	threadsDone chan struct{}

	// admitted holds a token per run created here and not yet ended,
	// when Options.MaxRuns bounds them; nil otherwise.
	admitted chan struct{}
	// userRuns counts the runs each user holds here, created and not yet
	// ended, when Options.MaxRunsPerUser bounds them. Under userMu.
	userRuns map[string]int
	userMu   sync.Mutex

	mu      sync.Mutex
	runs    map[string]*liveRun    // the runs this process holds, by id
	lines   map[string]*threadLine // per thread: the run executing and those waiting
	closing bool
	wg      sync.WaitGroup // goroutines executing runs
	// ended holds the stateless resumable runs that ended here while
	// their events are kept (see keepEnded), by id; endedOrder the same
	// runs, oldest end first, to drop them as they expire.
	ended      map[string]endedRun
	endedOrder []string
}

// endedRun is a stateless resumable run that ended, whose record went
// with its temporary thread: a reconnect to its stream (GET
// /runs/{run_id}/stream) still replays its kept events until then.
type endedRun struct {
	rec   records.Run
	until time.Time
}

// threadLine is a thread's runs in this process: at most one executing,
// the others waiting their turn in creation order.
type threadLine struct {
	active *liveRun
	queue  []*liveRun
}

// liveRun is a run this process holds.
type liveRun struct {
	rec   records.Run
	kw    runKwargs
	graph *servedGraph
	// recovered marks a run taken over from a process that died: it
	// continues from its last checkpoint when it got that far.
	recovered bool

	ctx    context.Context
	cancel context.CancelCauseFunc
	// launched is set once the run may start (its creator subscribed to
	// its stream); executing once it left the queue. Both under
	// manager.mu.
	launched, executing bool

	// admitted says the run holds a place among Options.MaxRuns.
	admitted bool
	// lease is its thread's lease when it was taken in the write that
	// created the run (records.NewRun.Lease), until the run executes
	// with it or ends without starting, which give it up; nil otherwise.
	// Under manager.mu.
	lease *checkpoint.Lease
	// tel is the run's telemetry once it executes (nil without).
	tel *telemetry.Run
	// parent is the trace context of the request that created the run
	// (telemetry.RunInfo.Parent); set before it is launched.
	parent trace.SpanContext
	// start is where the run started, when a rollback cannot tell that
	// from its checkpoints alone (see startOf); set before it executes,
	// read at its end on its own goroutine.
	start *runStart

	// done closes when the run ended; status and result are set before.
	done      chan struct{}
	closeOnce sync.Once
	status    string
	// result is what a wait or a join answers: the last values, or
	// {"__error__": ...}.
	result json.RawMessage
	// err is why the run failed or stopped, typed (nil when it
	// succeeded): the document API's error codes are read from it.
	err error
}

// cancelCause is why a run was stopped: a client's cancel (action
// interrupt or rollback) or the server's shutdown.
type cancelCause struct{ action string }

func (c *cancelCause) Error() string { return "server: run cancelled (" + c.action + ")" }

// Is makes errors.Is(err, errCancelled) true.
func (c *cancelCause) Is(target error) bool { return target == errCancelled }

var errCancelled = errors.New("server: run cancelled")

const actionShutdown = "shutdown"

func newManager(s *Server) *manager {
	o := s.opts
	m := &manager{
		s:          s,
		worker:     ids.TimeOrdered(),
		broker:     o.Broker,
		leaseTTL:   o.LeaseTTL,
		workerTTL:  o.WorkerTTL,
		retain:     o.StreamRetention,
		durability: o.Durability,
		runs:       map[string]*liveRun{},
		lines:      map[string]*threadLine{},
		ended:      map[string]endedRun{},
	}
	if m.broker == nil {
		m.broker = newMemoryBroker()
	}
	m.threads = newThreadHub(m.broker)
	if m.workerTTL <= 0 {
		m.workerTTL = DefaultWorkerTTL
	}
	if m.retain <= 0 {
		m.retain = DefaultStreamRetention
	}
	if m.durability == "" {
		m.durability = graph.DurabilityAsync
	}
	workers := o.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	m.sem = make(chan struct{}, workers)
	if o.MaxRuns > 0 {
		m.admitted = make(chan struct{}, o.MaxRuns)
	}
	m.base, m.stop = context.WithCancel(context.Background())
	return m
}

// admit takes a place for a new run, when Options.MaxRuns bounds them;
// false means there is none.
func (m *manager) admit() bool {
	if m.admitted == nil {
		return true
	}
	select {
	case m.admitted <- struct{}{}:
		return true
	default:
		return false
	}
}

// unadmit gives back a place admit took.
func (m *manager) unadmit() {
	if m.admitted != nil {
		<-m.admitted
	}
}

// admitUser takes a place among the runs user holds here, when
// Options.MaxRunsPerUser bounds them; false means there is none.
func (m *manager) admitUser(user string) bool {
	bound := m.s.opts.MaxRunsPerUser
	if bound <= 0 {
		return true
	}
	m.userMu.Lock()
	defer m.userMu.Unlock()
	if m.userRuns[user] >= bound {
		return false
	}
	if m.userRuns == nil {
		m.userRuns = map[string]int{}
	}
	m.userRuns[user]++
	return true
}

// unadmitUser gives back a place admitUser took.
func (m *manager) unadmitUser(user string) {
	if m.s.opts.MaxRunsPerUser <= 0 {
		return
	}
	m.userMu.Lock()
	defer m.userMu.Unlock()
	if m.userRuns[user]--; m.userRuns[user] <= 0 {
		delete(m.userRuns, user)
	}
}

// start records this process as alive, takes over the runs of processes
// that died, and keeps doing both in the background.
func (m *manager) start(ctx context.Context) error {
	if err := m.s.rec.Heartbeat(ctx, m.worker); err != nil {
		return fmt.Errorf("server: recording this process: %w", err)
	}
	m.recover(ctx)
	m.loopDone = make(chan struct{})
	go m.loop()
	if relay, ok := m.broker.(cancelRelay); ok {
		m.relayDone = make(chan struct{})
		go func() {
			defer close(m.relayDone)
			relay.ListenCancels(m.base, m.stopRelayed)
		}()
	}
	if relay, ok := m.broker.(threadRelay); ok {
		// Listening before the server serves: a thread's stream joined
		// here follows the runs other processes create from the start.
		m.threadsDone = make(chan struct{})
		listening := make(chan struct{})
		go func() {
			defer close(m.threadsDone)
			relay.ListenThreadNotes(m.base, func() { close(listening) }, m.relayed)
		}()
		select {
		case <-listening:
		case <-m.threadsDone:
		}
	}
	return nil
}

// stopRelayed cancels a run executing here that another process was asked
// to cancel; the one asked records or rolls it back, as when the cancel
// comes through the thread's lease.
func (m *manager) stopRelayed(runID string) {
	m.mu.Lock()
	lr := m.runs[runID]
	executing := lr != nil && lr.executing
	m.mu.Unlock()
	if executing {
		lr.cancel(&cancelCause{action: records.MultitaskInterrupt})
	}
}

func (m *manager) loop() {
	defer close(m.loopDone)
	t := time.NewTicker(m.workerTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-m.base.Done():
			return
		case <-t.C:
		}
		if err := m.s.rec.Heartbeat(m.base, m.worker); err != nil && m.base.Err() == nil {
			m.s.log.Warn("server: heartbeat failed; other processes may take over this one's runs", "err", err)
		}
		m.recover(m.base)
	}
}

// recover takes over the runs of processes without a heartbeat.
func (m *manager) recover(ctx context.Context) {
	if m.isClosing() {
		return
	}
	for {
		runs, err := m.s.rec.ClaimOrphans(ctx, m.worker, m.workerTTL, 100)
		if err != nil {
			if ctx.Err() == nil {
				m.s.log.Warn("server: taking over runs of stopped processes", "err", err)
			}
			return
		}
		for _, rec := range runs {
			m.s.log.Info("server: taking over a run", "run_id", rec.ID, "thread_id", rec.ThreadID, "status", rec.Status, "attempt", rec.Attempt)
			lr, err := m.adopt(rec)
			if err != nil {
				m.s.log.Error("server: a run taken over cannot run", "run_id", rec.ID, "err", err)
				m.failStored(rec, err)
				continue
			}
			m.launch(lr)
		}
		if len(runs) < 100 {
			return
		}
	}
}

// adopt makes a live run of a stored one taken over.
func (m *manager) adopt(rec records.Run) (*liveRun, error) {
	kw, err := decodeKwargs(rec.Kwargs)
	if err != nil {
		return nil, err
	}
	a, err := m.s.rec.GetAssistant(m.base, rec.Owner, rec.AssistantID)
	if err != nil {
		return nil, fmt.Errorf("assistant %s: %w", rec.AssistantID, err)
	}
	g, ok := m.s.graphs[a.GraphID]
	if !ok {
		return nil, fmt.Errorf("graph %q is not served by this process", a.GraphID)
	}
	lr := m.newLive(rec, kw, g)
	lr.recovered = true
	if err := m.open(lr); err != nil {
		return nil, err
	}
	m.enqueue(lr)
	m.s.doc.runQueued(rec.ThreadID)
	return lr, nil
}

// failStored records the failure of a stored run this process cannot
// execute.
func (m *manager) failStored(rec records.Run, cause error) {
	ctx := context.WithoutCancel(m.base)
	m.record(rec.ID, "recording a run's failure", func() error {
		_, err := m.s.rec.FinishRun(ctx, records.Finish{RunID: rec.ID, ThreadID: rec.ThreadID, Worker: m.worker, Status: records.RunError, ThreadStatus: records.ThreadError})
		return err
	}, "cause", cause)
}

func (m *manager) isClosing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
}

func (m *manager) newLive(rec records.Run, kw runKwargs, g *servedGraph) *liveRun {
	lr := &liveRun{rec: rec, kw: kw, graph: g, done: make(chan struct{})}
	// Not a child of a context every run shares: thousands of runs would
	// take turns at its lock. Shutdown cancels the runs one by one.
	lr.ctx, lr.cancel = context.WithCancelCause(context.Background())
	return lr
}

// open opens a run's stream and publishes its first event, metadata
// (the run and its attempt), at once: a client learns the run's id while
// the run waits its turn (its thread's line, a worker), as the LangGraph
// server tells it.
func (m *manager) open(lr *liveRun) error {
	if err := m.broker.Open(lr.rec.ID); err != nil {
		return err
	}
	// The thread's streams here subscribe before the first event; those
	// of other processes are told through the broker.
	m.threads.runOpened(lr.rec.ThreadID, lr.rec.ID, true)
	_ = m.publish(lr, "metadata", metadataEvent(lr.rec.ID, lr.rec.Attempt))
	m.relayNote(relayedNote{ThreadID: lr.rec.ThreadID, RunID: lr.rec.ID})
	return nil
}

// enqueue puts a run in its thread's line, not yet launched.
func (m *manager) enqueue(lr *liveRun) {
	m.mu.Lock()
	var drop *checkpoint.Lease
	if m.closing {
		// Created while the server began to shut down: it will not
		// start, and shutdown gave up the leases of the runs it found
		// waiting before this one came.
		drop, lr.lease = lr.lease, nil
	}
	defer func() {
		m.mu.Unlock()
		m.release(durable(lr.ctx), drop)
	}()
	m.runs[lr.rec.ID] = lr
	line := m.lines[lr.rec.ThreadID]
	if line == nil {
		line = &threadLine{}
		m.lines[lr.rec.ThreadID] = line
	}
	if lr.lease != nil && (line.active != nil || len(line.queue) > 0) {
		// Another run of the thread got into the line first (runs
		// created together: this one took the lease in its write, the
		// other found the thread taken and holds none). That run would
		// wait for the lease this one holds while this one waits behind
		// it: give the lease up, and take it again in turn, as a run
		// that never held it does.
		drop, lr.lease = lr.lease, nil
	}
	line.queue = append(line.queue, lr)
}

// launch lets a run start when its turn comes, after its delay.
func (m *manager) launch(lr *liveRun) {
	if d := time.Duration(lr.kw.AfterSeconds * float64(time.Second)); d > 0 && !lr.recovered {
		time.AfterFunc(d, func() { m.launchNow(lr) })
		return
	}
	m.launchNow(lr)
}

func (m *manager) launchNow(lr *liveRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lr.launched = true
	m.pumpLocked(lr.rec.ThreadID)
}

// pumpLocked starts the next run of a thread when none executes.
func (m *manager) pumpLocked(threadID string) {
	line := m.lines[threadID]
	if line == nil || line.active != nil {
		return
	}
	if len(line.queue) == 0 {
		delete(m.lines, threadID)
		return
	}
	head := line.queue[0]
	if !head.launched || m.closing {
		return
	}
	line.queue = line.queue[1:]
	line.active = head
	head.executing = true
	m.wg.Add(1)
	go m.execute(head)
}

// execute runs lr to its end, then lets its thread's next run start.
func (m *manager) execute(lr *liveRun) {
	defer m.wg.Done()
	func() {
		// A bug of the manager's own must not take the server down with
		// it: the run fails, saying why.
		defer func() {
			if v := recover(); v != nil {
				m.s.log.Error("server: run panicked", "run_id", lr.rec.ID, "panic", v, "stack", string(debug.Stack()))
				m.dropLease(lr)
				m.end(lr, nil, fmt.Errorf("server: run panicked: %v", v), nil)
			}
		}()
		m.run(lr)
	}()
	m.mu.Lock()
	if line := m.lines[lr.rec.ThreadID]; line != nil && line.active == lr {
		line.active = nil
		m.pumpLocked(lr.rec.ThreadID)
	}
	// Who waits holds the run already; a resumable run's events stay in
	// the broker, and a later join reads the thread.
	delete(m.runs, lr.rec.ID)
	m.mu.Unlock()
}

// recordRetry bounds how long the write of a run's end is tried again.
const recordRetry = 2 * time.Minute

// record makes the write of a run's end, trying again while the database
// is overloaded or unreachable (each try is bounded by the records' own
// timeout): a run whose end is not recorded stays pending or running, its
// thread busy, and would be taken over and run again once this process
// stops. A refusal (the run or thread is gone) is final.
func (m *manager) record(runID, what string, write func() error, logArgs ...any) {
	deadline := time.Now().Add(recordRetry)
	wait := 50 * time.Millisecond
	for try := 1; ; try++ {
		err := write()
		if err == nil {
			if try > 1 {
				m.s.log.Info("server: "+what+": done", append([]any{"run_id", runID, "tries", try}, logArgs...)...)
			}
			return
		}
		if !transient(err) || time.Now().After(deadline) {
			m.s.log.Error("server: "+what, append([]any{"run_id", runID, "err", err}, logArgs...)...)
			return
		}
		if try == 1 {
			m.s.log.Warn("server: "+what+": trying again", append([]any{"run_id", runID, "err", err}, logArgs...)...)
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// transient reports whether a records error may go away when tried again:
// the database's, not the records' own refusals.
func transient(err error) bool {
	for _, final := range []error{records.ErrNotFound, records.ErrConflict, records.ErrBusy, records.ErrOtherGraph, records.ErrCorrupt, records.ErrClosed, records.ErrStaleAssistant} {
		if errors.Is(err, final) {
			return false
		}
	}
	return true
}

// durable is a context for the writes that record a run's end: they must
// happen even when the run was cancelled (records bounds each call).
func durable(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

func (m *manager) publish(lr *liveRun, name string, data []byte) error {
	return m.broker.Publish(lr.rec.ID, Event{Name: name, Data: data})
}

func (m *manager) info(lr *liveRun) RunInfo {
	return RunInfo{RunID: lr.rec.ID, ThreadID: lr.rec.ThreadID, AssistantID: lr.rec.AssistantID, GraphID: lr.graph.id, User: lr.rec.Owner, Attempt: lr.rec.Attempt}
}

// run executes lr: a worker, the thread's lease, the graph; then records
// how it ended.
func (m *manager) run(lr *liveRun) {
	ctx := lr.ctx
	threadID := lr.rec.ThreadID
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		m.endBeforeStart(lr)
		return
	}
	defer func() { <-m.sem }()
	lease, err := m.threadLease(ctx, lr)
	if err != nil {
		if ctx.Err() != nil {
			m.endBeforeStart(lr)
			return
		}
		m.end(lr, nil, fmt.Errorf("taking thread %s: %w", threadID, err), nil)
		return
	}
	// end releases the lease before it wakes who waits, so what they do
	// next with the thread does not find it busy; this is for the paths
	// that leave before.
	defer m.release(durable(ctx), lease)
	if m.isClosing() {
		m.endBeforeStart(lr)
		return
	}
	// A run is recorded running only once it has run a while: a short run
	// goes from pending to its end in one write.
	marker := time.AfterFunc(markRunningAfter, func() { m.markRunning(lr) })
	defer marker.Stop()
	if h := m.s.opts.Hooks.OnStart; h != nil {
		h(ctx, m.info(lr))
	}
	ctx, lr.tel = m.s.opts.Telemetry.StartRun(ctx, telemetry.RunInfo{
		RunID: lr.rec.ID, ThreadID: threadID, AssistantID: lr.rec.AssistantID,
		GraphID: lr.graph.id, User: lr.rec.Owner, Attempt: lr.rec.Attempt, Parent: lr.parent,
	})
	enc := newEncoder(lr.kw.StreamMode, lr.kw.Subgraphs, runMeta(lr.rec.Metadata, threadID, lr.rec.ID, lr.rec.Attempt))
	runErr := m.stream(ctx, lr, lease, enc)
	m.end(lr, enc, runErr, lease)
}

// threadLease takes lr's thread for its execution: the lease taken with
// the run's record when it has one, else Saver.Acquire's, waiting while
// another run holds the thread.
func (m *manager) threadLease(ctx context.Context, lr *liveRun) (*checkpoint.Lease, error) {
	if l := m.takeLease(lr); l != nil {
		if ctx.Err() != nil {
			// Cancelled as it was about to start: it ends as one that
			// never started, as when Acquire is stopped.
			m.release(durable(ctx), l)
			return nil, context.Cause(ctx)
		}
		if !errors.Is(l.Err(), checkpoint.ErrLeaseLost) {
			return l, nil
		}
		// Lost while the run waited its turn (renewals failed until it
		// expired): the run takes its thread again as any other does.
		m.release(durable(ctx), l)
	}
	return m.s.saver.Acquire(ctx, lr.rec.ThreadID, checkpoint.LeaseOptions{TTL: m.leaseTTL, Wait: true, RunID: lr.rec.ID})
}

// leaseAtCreate reports whether a new run of threadID asks for its
// thread's lease in the write that creates it (records.NewRun.Lease),
// which saves the lease a write of its own: where the records share the
// checkpoints' database, and when the run is to start at once, with no
// run of the thread in this process before it and no delay. CreateRun
// takes it only if, besides, the thread has no run pending or running
// in any process and its lease is free.
func (m *manager) leaseAtCreate(threadID string, kw runKwargs) bool {
	if !m.s.sharedLeases || kw.AfterSeconds > 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lines[threadID] == nil && !m.closing
}

// leaseRequest is the lease a new run asks for in the write that creates
// it, with the TTL Acquire would give it.
func (m *manager) leaseRequest(runID string) *records.LeaseRequest {
	ttl := m.leaseTTL
	if ttl <= 0 {
		ttl = checkpoint.DefaultLeaseTTL
	}
	return &records.LeaseRequest{Owner: ids.Random(), RunID: runID, TTL: ttl}
}

// takeLease takes the lease lr holds since its creation, if any, from it.
func (m *manager) takeLease(lr *liveRun) *checkpoint.Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := lr.lease
	lr.lease = nil
	return l
}

// dropLeasesWait bounds how long a shutdown waits for the leases of the
// runs it leaves unstarted to be given up: a database that does not
// answer would hold each release up for as long as the lease lasts, and
// those leases free themselves when they expire.
const dropLeasesWait = 5 * time.Second

// dropLeases gives up the leases lrs hold since their creation, all at
// once, waiting dropLeasesWait at most (the releases left go on).
func (m *manager) dropLeases(lrs []*liveRun) {
	if len(lrs) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, lr := range lrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.dropLease(lr)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(dropLeasesWait):
		m.s.log.Warn("server: some threads were not given up in time; they free themselves when their leases expire")
	}
}

// dropLease gives up the lease lr holds since its creation, if any: a
// run that ends without starting leaves its thread free at once rather
// than when the lease expires.
func (m *manager) dropLease(lr *liveRun) {
	m.release(durable(lr.ctx), m.takeLease(lr))
}

// markRunningAfter is how long a run executes before it is recorded
// running.
const markRunningAfter = 100 * time.Millisecond

// markRunning records that a run is executing. A run whose record says
// otherwise (cancelled from another process, or taken over) stops.
func (m *manager) markRunning(lr *liveRun) {
	ok, err := m.s.rec.MarkRunning(lr.ctx, lr.rec.ThreadID, lr.rec.ID, m.worker)
	switch {
	case err != nil && lr.ctx.Err() == nil:
		m.s.log.Warn("server: recording a run as running", "run_id", lr.rec.ID, "err", err)
	case err == nil && !ok:
		// Cancelled while recorded pending, by a process that did not
		// know this one executes it: a cancel marked it interrupted, a
		// rollback deleted it (records.CancelPending), which this run then
		// carries out, since here it knows where it started.
		action := records.MultitaskInterrupt
		if _, gerr := m.s.rec.GetRun(lr.ctx, lr.rec.Owner, lr.rec.ThreadID, lr.rec.ID); errors.Is(gerr, records.ErrNotFound) {
			action = records.MultitaskRollback
		}
		select {
		case <-lr.done:
		default:
			lr.cancel(&cancelCause{action: action})
		}
	}
}

// stream runs the graph and publishes its events.
func (m *manager) stream(ctx context.Context, lr *liveRun, lease *checkpoint.Lease, enc *encoder) error {
	g := lr.graph.g
	in, err := m.input(ctx, lr)
	if err != nil {
		return err
	}
	if lr.start, err = m.startOf(ctx, lr); err != nil {
		return err
	}
	opts := &graph.RunOptions{
		ThreadID:    lr.rec.ThreadID,
		Lease:       lease,
		StreamModes: m.graphModes(lr, enc),
		// The events mode nests the runs of subgraphs whether or not the
		// client asked for stream_subgraphs (astream_events sees them
		// all): the encoder drops the other modes' subgraph events then.
		Subgraphs:       lr.kw.Subgraphs || enc.want[modeEvents],
		CheckpointID:    lr.kw.CheckpointID,
		InterruptBefore: lr.kw.InterruptBefore,
		InterruptAfter:  lr.kw.InterruptAfter,
		Metadata:        m.checkpointMeta(lr),
		Durability:      m.durability,
		// The run acts for the user who created it, as its record keeps
		// it: a resume, or a run taken over after a restart, too.
		User:         lr.rec.Owner,
		Configurable: runConfigurable(lr.kw, m.info(lr)),
	}
	if lr.kw.Durability != "" {
		opts.Durability = graph.Durability(lr.kw.Durability)
	}
	if cfg, ok := lr.kw.recursionConfig(); ok && cfg.RecursionLimit > 0 {
		opts.RecursionLimit = cfg.RecursionLimit
	}
	emit := func(name string, data []byte) error {
		// A shared broker that fails cuts the streams of other processes'
		// readers (it logs that); the run goes on and saves its
		// checkpoints.
		if err := m.publish(lr, name, data); err != nil && !errors.Is(err, ErrBrokerUnavailable) {
			return err
		}
		return nil
	}
	if err := enc.startEvents(g, lr.rec.ID, lr.kw.Input, emit); err != nil {
		return err
	}
	for ev, err := range g.Stream(ctx, in, opts) {
		if err != nil {
			return err
		}
		if len(ev.Namespace) == 0 || lr.kw.Subgraphs {
			// Subgraph tasks make spans with stream_subgraphs only, as
			// before the events mode asked for them.
			lr.tel.Observe(ev)
		}
		if err := enc.encode(ev, emit); err != nil {
			return fmt.Errorf("encoding a %s event: %w", ev.Mode, err)
		}
	}
	return enc.endEvents(emit)
}

// graphModes are the stream modes a run asks of its graph: its client's,
// and those its telemetry reads (the encoder drops what the client did
// not ask for).
func (m *manager) graphModes(lr *liveRun, enc *encoder) []graph.StreamMode {
	modes := enc.graphModes()
	if lr.tel == nil {
		return modes
	}
	for _, t := range telemetry.StreamModes {
		if !slices.Contains(modes, t) {
			modes = append(modes, t)
		}
	}
	return modes
}

// input is what the graph runs with: the run's input or command, or, for
// a run taken over that had got as far as its first checkpoint, nothing:
// it continues from its thread's last checkpoint.
func (m *manager) input(ctx context.Context, lr *liveRun) (graph.Update, error) {
	g := lr.graph.g
	if lr.recovered {
		tctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
		t, err := m.s.saver.Get(tctx, checkpoint.Config{ThreadID: lr.rec.ThreadID})
		cancel()
		if err != nil {
			return graph.Update{}, err
		}
		if t != nil && t.Metadata.Extra["run_id"] == lr.rec.ID {
			return graph.Update{}, nil
		}
	}
	if lr.kw.Command != nil {
		return commandUpdate(g, lr.kw.Command)
	}
	return g.DecodeInput(lr.kw.Input)
}

// runStart is what a rollback puts back: the thread's newest checkpoint
// (in any namespace) when the run started, since every later one is the
// run's, and, for a run that continued a checkpoint, the pending writes of
// the checkpoints it continued as they were before the run added its own:
// the root's, and the newest of each subgraph that was in the middle of
// the root's step (a subgraph interrupted there resumes from its own
// checkpoint, and writes its resume value to it).
type runStart struct {
	cut     string
	restore []startWrites
}

type startWrites struct {
	cfg    checkpoint.Config
	writes []checkpoint.PendingWrite
}

// startOf reads where lr starts, for a run whose rollback needs more than
// its own checkpoints tell (nil for the others, which need nothing read):
// a run that continues a checkpoint (a command, such as a resume, or no
// input) writes to that checkpoint, which a rollback keeps, so its
// writes are kept to be restored; a run from a checkpoint_id other than
// the latest makes checkpoints whose parent is not the latest, so the
// newest is kept to rewind to. A run taken over after a restart started
// in another process: its start is not known here.
func (m *manager) startOf(ctx context.Context, lr *liveRun) (*runStart, error) {
	continues := lr.kw.Command != nil || isNullJSON(lr.kw.Input)
	if lr.recovered || (!continues && lr.kw.CheckpointID == "") {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	thread := lr.rec.ThreadID
	latest, err := m.s.saver.Get(ctx, checkpoint.Config{ThreadID: thread})
	if err != nil || latest == nil {
		return &runStart{}, err // no checkpoint: a rollback deletes them all
	}
	st := &runStart{cut: latest.Config.CheckpointID}
	// The checkpoints newer than the root's latest, newest first: those
	// of the subgraphs that ran in its step.
	seen := map[string]bool{}
	for tp, err := range m.s.saver.List(ctx, thread, checkpoint.ListOptions{}) {
		if err != nil {
			return nil, err
		}
		id := tp.Config.CheckpointID
		if id <= latest.Config.CheckpointID {
			break
		}
		if id > st.cut {
			st.cut = id
		}
		if ns := tp.Config.Namespace; continues && ns != "" && !seen[ns] {
			seen[ns] = true
			st.restore = append(st.restore, startWrites{tp.Config, tp.PendingWrites})
		}
	}
	from := latest
	if lr.kw.CheckpointID != "" && continues {
		if from, err = m.s.saver.Get(ctx, checkpoint.Config{ThreadID: thread, Namespace: lr.kw.CheckpointNS, CheckpointID: lr.kw.CheckpointID}); err != nil {
			return nil, err
		}
	}
	if continues && from != nil {
		st.restore = append(st.restore, startWrites{from.Config, from.PendingWrites})
	}
	return st, nil
}

// isNullJSON reports whether a request's JSON value is absent or null.
func isNullJSON(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// checkpointMeta is saved with each checkpoint of the run: its metadata
// and which run made it (a run taken over finds its own checkpoints by
// it).
func (m *manager) checkpointMeta(lr *liveRun) map[string]any {
	// Metadata in Marshal's form (as the records keep it) decodes
	// without encoding/json's reflection, to the same values.
	meta, ok := map[string]any(nil), false
	if md := lr.rec.Metadata; len(md) > 0 && md[0] == '{' {
		if v, canonical := jsonx.DecodeCanonical(md); canonical {
			meta, ok = v.(map[string]any)
		}
	}
	if !ok {
		meta = map[string]any{}
		_ = json.Unmarshal(lr.rec.Metadata, &meta)
	}
	meta["run_id"] = lr.rec.ID
	meta["thread_id"] = lr.rec.ThreadID
	meta["assistant_id"] = lr.rec.AssistantID
	meta["graph_id"] = lr.graph.id
	meta["run_attempt"] = lr.rec.Attempt
	return meta
}

// cause is why lr's context ended, when it was cancelled.
func cause(lr *liveRun) *cancelCause {
	var c *cancelCause
	if errors.As(context.Cause(lr.ctx), &c) {
		return c
	}
	return nil
}

// end records how a run that started ended, publishes its last event,
// and wakes who waits for it.
func (m *manager) end(lr *liveRun, enc *encoder, runErr error, lease *checkpoint.Lease) {
	ctx := durable(lr.ctx)
	c := cause(lr)
	if runErr != nil && c != nil && c.action == actionShutdown {
		// Left for another process, or this one's next start, to resume.
		m.record(lr.rec.ID, "leaving a run to resume", func() error {
			return m.s.rec.ReleaseRuns(ctx, m.worker, []string{lr.rec.ID})
		})
		m.release(ctx, lease)
		m.closeRun(lr, records.RunPending, nil, runErr)
		return
	}
	// result is the last values event (with the pending interrupts, if
	// any): what a wait answers; values the state the thread keeps.
	var result, values json.RawMessage
	if enc != nil {
		v, err := enc.finalValues()
		if err != nil && runErr == nil {
			runErr = err
		}
		result, values = v, v
	}
	status, threadStatus := records.RunSuccess, records.ThreadIdle
	interrupts := json.RawMessage("{}")
	cancelled := runErr != nil && (c != nil || errors.Is(runErr, checkpoint.ErrCancelRequested))
	switch {
	case runErr == nil && enc != nil && enc.interrupted:
		threadStatus = records.ThreadInterrupted
		if v, its, err := m.threadState(ctx, lr); err == nil {
			values, interrupts = v, its
		} else {
			m.s.log.Warn("server: reading an interrupted thread's state", "thread_id", lr.rec.ThreadID, "err", err)
		}
	case cancelled:
		status = records.RunInterrupted
	case runErr != nil:
		status, threadStatus = records.RunError, records.ThreadError
		interrupts = nil
	}
	rollback := cancelled && c != nil && c.action == records.MultitaskRollback
	if !rollback {
		fin := records.Finish{
			RunID: lr.rec.ID, ThreadID: lr.rec.ThreadID, Worker: m.worker,
			Status: status, ThreadStatus: threadStatus, Values: values, Interrupts: interrupts,
		}
		recordEnd := func() error {
			var err error
			m.record(lr.rec.ID, "recording a run's end", func() error {
				_, err = m.s.rec.FinishRun(ctx, fin)
				return err
			})
			return err
		}
		if lease != nil && m.s.sharedLeases && !lr.kw.Temporary {
			// Where the records share the checkpoints' database, the
			// thread is given up in the write that records the run's end
			// (one transaction instead of two); a temporary thread's
			// lease is still needed below, to delete it.
			fin.LeaseOwner = lease.Owner()
			if err := lease.ReleaseWith(ctx, func(context.Context) error { return recordEnd() }); err != nil {
				m.s.log.Warn("server: releasing a thread; it frees itself when its lease expires", "thread_id", lease.ThreadID(), "err", err)
			}
		} else {
			recordEnd()
		}
	}
	if runErr != nil && !cancelled {
		_ = m.publish(lr, "error", errorEvent(runErr))
		m.s.log.Warn("server: run failed", "run_id", lr.rec.ID, "thread_id", lr.rec.ThreadID, "err", runErr)
	}
	if rollback {
		m.rollback(ctx, lr, lease)
	}
	if lr.kw.Temporary {
		if lr.kw.Resumable {
			m.keepEnded(lr.rec, status)
		}
		m.dropTemporary(ctx, lr.rec, lease)
	}
	m.release(ctx, lease)
	m.closeRun(lr, status, result, runErr)
}

// keepEnded keeps a stateless resumable run that ended, whose record goes
// with its temporary thread, for as long as its events are kept: the SDK
// reconnects to its stream's Location when the stream breaks off, and
// the run may have ended by then. Runs kept longer are dropped.
func (m *manager) keepEnded(rec records.Run, status string) {
	rec.Status = status
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropEndedLocked(now)
	m.ended[rec.ID] = endedRun{rec: rec, until: now.Add(m.retain)}
	m.endedOrder = append(m.endedOrder, rec.ID)
}

// dropEndedLocked drops the ended runs whose events are no longer kept.
func (m *manager) dropEndedLocked(now time.Time) {
	n := 0
	for _, id := range m.endedOrder {
		if e, ok := m.ended[id]; ok && now.Before(e.until) {
			break
		}
		delete(m.ended, id)
		n++
	}
	m.endedOrder = m.endedOrder[n:]
}

// endedStateless returns owner's stateless resumable run runID that ended
// here and whose events are still kept (keepEnded).
func (m *manager) endedStateless(owner, runID string) (records.Run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropEndedLocked(time.Now())
	e, ok := m.ended[runID]
	if !ok || e.rec.Owner != owner {
		return records.Run{}, false
	}
	return e.rec, true
}

// release gives a run's thread up (a nil lease is none).
func (m *manager) release(ctx context.Context, lease *checkpoint.Lease) {
	if lease == nil {
		return
	}
	if err := lease.Release(ctx); err != nil {
		m.s.log.Warn("server: releasing a thread; it frees itself when its lease expires", "thread_id", lease.ThreadID(), "err", err)
	}
}

// threadState reads a thread's values and pending interrupts by task.
func (m *manager) threadState(ctx context.Context, lr *liveRun) (values, interrupts json.RawMessage, err error) {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	snap, err := lr.graph.g.GetState(ctx, checkpoint.Config{ThreadID: lr.rec.ThreadID}, nil)
	if err != nil {
		return nil, nil, err
	}
	if values, err = json.Marshal(snap.Values); err != nil {
		return nil, nil, err
	}
	interrupts, err = json.Marshal(interruptsByTask(snap))
	return values, interrupts, err
}

// closeRun ends a run's stream and wakes who waits for it, once.
func (m *manager) closeRun(lr *liveRun, status string, values json.RawMessage, runErr error) {
	lr.closeOnce.Do(func() { m.closeRunOnce(lr, status, values, runErr) })
}

func (m *manager) closeRunOnce(lr *liveRun, status string, values json.RawMessage, runErr error) {
	retain := time.Duration(0)
	if lr.kw.Resumable {
		retain = m.retain
	}
	switch {
	case runErr != nil && status == records.RunError:
		var e map[string]string
		_ = json.Unmarshal(errorEvent(runErr), &e)
		lr.result, _ = json.Marshal(map[string]any{"__error__": e})
	default:
		lr.result = values
	}
	lr.status, lr.err = status, runErr
	// The run's places and its metrics go before its stream ends: a
	// client that saw the end may start its next run at once, and find
	// this one counted.
	if lr.admitted {
		m.unadmit()
		m.unadmitUser(lr.rec.Owner)
	}
	// lr.tel is set on the run's goroutine, which is the one that closes
	// an executing run; it is nil for a run that never executed.
	lr.tel.End(status, runErr)
	var err error
	if rk, ok := m.broker.(resultKeeper); ok {
		err = rk.CloseWithResult(lr.rec.ID, retain, lr.result)
	} else {
		err = m.broker.Close(lr.rec.ID, retain)
	}
	if err != nil {
		m.s.log.Warn("server: closing a run's stream", "run_id", lr.rec.ID, "err", err)
	}
	if h := m.s.opts.Hooks.OnEnd; h != nil && status != records.RunPending {
		h(lr.ctx, m.info(lr), status, runErr)
	}
	if lr.kw.Webhook != "" && status != records.RunPending {
		m.s.webhooks.send(lr, status, values, runErr)
	}
	close(lr.done)
}

// endBeforeStart ends a run stopped before it started: cancelled, or left
// pending by a shutdown.
func (m *manager) endBeforeStart(lr *liveRun) {
	ctx := durable(lr.ctx)
	m.dropLease(lr)
	c := cause(lr)
	if c == nil || c.action == actionShutdown {
		m.closeRun(lr, records.RunPending, nil, nil)
		return
	}
	m.record(lr.rec.ID, "recording a cancelled run", func() error {
		_, err := m.s.rec.CancelPending(ctx, lr.rec.Owner, lr.rec.ThreadID, []string{lr.rec.ID}, c.action == records.MultitaskRollback)
		return err
	})
	m.closeRun(lr, records.RunInterrupted, nil, nil)
}

// dropTemporary deletes the thread of a stateless run.
func (m *manager) dropTemporary(ctx context.Context, rec records.Run, lease *checkpoint.Lease) {
	if lease != nil {
		ctx = checkpoint.WithLease(ctx, lease)
	}
	if err := m.s.rec.DeleteThread(ctx, rec.Owner, rec.ThreadID); err != nil && !errors.Is(err, records.ErrNotFound) {
		m.s.log.Warn("server: deleting a stateless run's thread", "thread_id", rec.ThreadID, "err", err)
	}
	if err := m.s.deleteCheckpoints(ctx, rec.ThreadID); err != nil {
		m.s.log.Warn("server: deleting a stateless run's checkpoints", "thread_id", rec.ThreadID, "err", err)
	}
	m.s.removeThreadFiles(rec.ThreadID)
}

// rollback deletes a cancelled run and what it wrote: its record, and the
// checkpoints it made (the thread goes back to the checkpoint it started
// from), under the lease it held. The thread's record follows.
func (m *manager) rollback(ctx context.Context, lr *liveRun, lease *checkpoint.Lease) {
	rec := lr.rec
	m.record(rec.ID, "deleting a rolled back run", func() error {
		return m.s.rec.RemoveRun(ctx, rec.ThreadID, rec.ID)
	})
	values, interrupts := json.RawMessage(nil), json.RawMessage(nil)
	if err := m.rewind(ctx, lr, lease); err != nil {
		m.s.log.Error("server: rewinding a rolled back run's checkpoints; the thread keeps them", "run_id", rec.ID, "thread_id", rec.ThreadID, "err", err)
	} else if v, its, err := m.threadState(ctx, lr); err == nil {
		values, interrupts = v, its
	}
	m.record(rec.ID, "recording a rolled back run's thread", func() error {
		_, err := m.s.rec.FinishRun(ctx, records.Finish{RunID: rec.ID, ThreadID: rec.ThreadID, Worker: m.worker, Status: records.RunInterrupted, ThreadStatus: records.ThreadIdle, Values: values, Interrupts: interrupts})
		return err
	})
}

// rewind deletes what a run wrote to its thread's checkpoints: every
// checkpoint after the thread's latest when it started (all of the
// thread's, when the run was its first), and, when it continued a
// checkpoint (a resume), the pending writes it added to that one, whose
// writes are restored to what they were (runStart). Without a known start
// (a run taken over after a restart, or rolled back by another process
// than the one that executed it) the latest is the newest checkpoint the
// run did not make, and a checkpoint it continued keeps its writes.
func (m *manager) rewind(ctx context.Context, lr *liveRun, lease *checkpoint.Lease) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	rec := lr.rec
	if lease != nil {
		ctx = checkpoint.WithLease(ctx, lease)
	}
	if st := lr.start; st != nil {
		// The writes first: if that fails, nothing has changed and the
		// thread keeps the run's checkpoints, as the caller logs; if the
		// rewind then fails, the restored writes belong to checkpoints the
		// thread's latest follows, where they were before the run.
		for _, r := range st.restore {
			if err := m.s.saver.RestoreWrites(ctx, r.cfg, r.writes); err != nil {
				return err
			}
		}
		_, err := m.s.saver.Rewind(ctx, rec.ThreadID, st.cut)
		return err
	}
	// The run's checkpoints are the newest (it held the thread): the
	// latest when it started is the newest one after them that it did
	// not make. That is not the parent of its first checkpoint for a run
	// from an earlier checkpoint_id, whose later checkpoints are other
	// runs'.
	root := ""
	found := false
	to := "" // the run was the thread's first: delete every checkpoint
	for t, err := range m.s.saver.List(ctx, rec.ThreadID, checkpoint.ListOptions{Namespace: &root}) {
		if err != nil {
			return err
		}
		if t.Metadata.Extra["run_id"] != rec.ID {
			to = t.Config.CheckpointID
			break
		}
		found = true
	}
	if !found {
		return nil
	}
	_, err := m.s.saver.Rewind(ctx, rec.ThreadID, to)
	return err
}

// ---------------------------------------------------------------- cancel

// cancel stops runs of a thread: those waiting are marked interrupted (or
// deleted, for rollback) at once, those executing here are cancelled, and
// those executing in another process are asked to stop through their
// thread's lease. With wait it returns once they all ended.
func (m *manager) cancel(ctx context.Context, owner, threadID string, runIDs []string, action string, wait bool) error {
	var waits []<-chan struct{}
	var remote []string
	for _, id := range runIDs {
		m.mu.Lock()
		lr := m.runs[id]
		if lr == nil || lr.rec.ThreadID != threadID || lr.rec.Owner != owner {
			m.mu.Unlock()
			remote = append(remote, id)
			continue
		}
		waits = append(waits, lr.done)
		if !lr.executing {
			m.dequeueLocked(lr)
			m.mu.Unlock()
			lr.cancel(&cancelCause{action: action})
			m.endBeforeStart(lr)
			continue
		}
		m.mu.Unlock()
		lr.cancel(&cancelCause{action: action})
	}
	if len(remote) > 0 {
		done, err := m.s.rec.CancelPending(ctx, owner, threadID, remote, action == records.MultitaskRollback)
		if err != nil {
			return err
		}
		if len(done) < len(remote) {
			// Some run is executing in another process: ask it to stop,
			// through the broker when it relays cancels, and through the
			// holder of the thread's lease.
			if relay, ok := m.broker.(cancelRelay); ok {
				for _, id := range remote {
					if slices.Contains(done, id) {
						continue
					}
					if err := relay.RelayCancel(ctx, id); err != nil {
						m.s.log.Warn("server: relaying a cancel; the run stops at its lease's next renewal", "run_id", id, "err", err)
					}
				}
			}
			rctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
			_, err := m.s.saver.RequestCancel(rctx, threadID)
			cancel()
			if err != nil {
				return err
			}
			if action == records.MultitaskRollback {
				// That process records the run interrupted; this one then
				// rolls it back.
				running := remote
				rb := func(ctx context.Context) {
					for _, id := range running {
						if !slices.Contains(done, id) {
							m.rollbackStored(ctx, owner, threadID, id)
						}
					}
				}
				if wait {
					defer rb(ctx)
				} else {
					go func() {
						ctx, cancel := context.WithTimeout(context.Background(), m.workerTTL+time.Minute)
						defer cancel()
						rb(ctx)
					}()
				}
			}
		}
	}
	if !wait {
		return nil
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, id := range remote {
		if err := m.waitStored(ctx, owner, threadID, id); err != nil && !errors.Is(err, records.ErrNotFound) {
			return err
		}
	}
	return nil
}

// rollbackStored rolls back a run another process executed, once it
// ended: it takes the thread's lease, rewinds the run's checkpoints and
// deletes its record.
func (m *manager) rollbackStored(ctx context.Context, owner, threadID, runID string) {
	if err := m.waitStored(ctx, owner, threadID, runID); err != nil {
		m.s.log.Warn("server: waiting for a run to roll back", "run_id", runID, "err", err)
		return
	}
	rec, err := m.s.rec.GetRun(ctx, owner, threadID, runID)
	if err != nil {
		return
	}
	a, err := m.s.rec.GetAssistant(ctx, owner, rec.AssistantID)
	if err != nil {
		m.s.log.Warn("server: rolling back a run", "run_id", runID, "err", err)
		return
	}
	g, ok := m.s.graphs[a.GraphID]
	if !ok {
		m.s.log.Warn("server: rolling back a run of a graph not served here", "run_id", runID, "graph_id", a.GraphID)
		return
	}
	lease, err := m.s.saver.Acquire(ctx, threadID, checkpoint.LeaseOptions{TTL: m.leaseTTL, Wait: true, RunID: runID})
	if err != nil {
		m.s.log.Warn("server: taking a thread to roll a run back", "run_id", runID, "err", err)
		return
	}
	defer lease.Release(durable(ctx))
	m.rollback(durable(ctx), &liveRun{rec: rec, graph: g, ctx: ctx}, lease)
}

// dequeueLocked removes a run that did not start from its thread's line.
func (m *manager) dequeueLocked(lr *liveRun) {
	delete(m.runs, lr.rec.ID)
	line := m.lines[lr.rec.ThreadID]
	if line == nil {
		return
	}
	for i, q := range line.queue {
		if q == lr {
			line.queue = append(line.queue[:i], line.queue[i+1:]...)
			break
		}
	}
	m.pumpLocked(lr.rec.ThreadID)
}

// waitStored waits for a run another process holds to end, reading its
// record with backoff.
func (m *manager) waitStored(ctx context.Context, owner, threadID, runID string) error {
	delay := 10 * time.Millisecond
	for {
		rec, err := m.s.rec.GetRun(ctx, owner, threadID, runID)
		if err != nil {
			return err
		}
		if rec.Status != records.RunPending && rec.Status != records.RunRunning {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

// stopThread cancels every run of a thread and waits for them: before the
// thread is deleted.
func (m *manager) stopThread(ctx context.Context, threadID string) error {
	active, err := m.s.rec.ActiveRuns(ctx, threadID)
	if err != nil {
		return err
	}
	if len(active) == 0 {
		return nil
	}
	ids := make([]string, len(active))
	for i, r := range active {
		ids[i] = r.ID
	}
	return m.cancel(ctx, active[0].Owner, threadID, ids, records.MultitaskInterrupt, true)
}

// ---------------------------------------------------------------- wait

// live returns the run this process holds, if it is owner's on threadID.
func (m *manager) live(owner, threadID, runID string) *liveRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	lr := m.runs[runID]
	if lr == nil || lr.rec.Owner != owner || (threadID != "" && lr.rec.ThreadID != threadID) {
		return nil
	}
	return lr
}

// ---------------------------------------------------------------- shutdown

// shutdown stops taking runs, waits for the runs executing until ctx ends,
// then stops those left and leaves them pending for a later start.
func (m *manager) shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	finished := make(chan struct{})
	go func() { m.wg.Wait(); close(finished) }()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = ctx.Err()
		m.mu.Lock()
		var waiting []*liveRun
		for _, lr := range m.runs {
			lr.cancel(&cancelCause{action: actionShutdown})
			if !lr.executing {
				waiting = append(waiting, lr)
			}
		}
		m.mu.Unlock()
		m.dropLeases(waiting)
		for _, lr := range waiting {
			// Never started: still pending in the database, for the next
			// start; those waiting for it are told it ended here.
			m.closeRun(lr, records.RunPending, nil, nil)
		}
		// A node that ignores its context could hold on forever: give
		// the runs a moment to save, then go; their leases expire.
		select {
		case <-finished:
		case <-time.After(5 * time.Second):
			m.s.log.Warn("server: some runs did not stop when asked; another process takes them over once their leases expire")
		}
	}
	// Runs left waiting (queued behind a run that finished, or not yet
	// launched) never start here: the threads they took with their
	// records are free at once for the process that takes them over.
	m.mu.Lock()
	var held []*liveRun
	for _, lr := range m.runs {
		if !lr.executing && lr.lease != nil {
			held = append(held, lr)
		}
	}
	m.mu.Unlock()
	m.dropLeases(held)
	// The runs are over: the threads' streams end.
	m.threads.close()
	m.stop()
	if m.loopDone != nil {
		<-m.loopDone
	}
	if m.relayDone != nil {
		<-m.relayDone
	}
	if m.threadsDone != nil {
		<-m.threadsDone
	}
	// Forget this process at once, so that another may take over the
	// runs it leaves without waiting for its heartbeat to grow old.
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rerr := m.s.rec.RemoveWorker(rctx, m.worker); rerr != nil {
		m.s.log.Warn("server: forgetting this process; its runs are taken over once its heartbeat is old", "err", rerr)
	}
	return err
}
