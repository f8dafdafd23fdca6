package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// outcome is how a run ended when it did not fail.
type outcome struct {
	state       State
	interrupts  []Interruption
	interrupted bool
}

// execute runs the graph from its input to the end, an interrupt or an
// error, and saves what durability asks for.
func (r *run) execute(ctx context.Context, in Update) (outcome, error) {
	if r.persist == nil {
		async := r.opts.Durability == DurabilityAsync && r.saver != nil
		var batch func(context.Context, func(context.Context) error) error
		if async && r.saver.CanBatch() {
			// Every write of the run is to its thread, on its saver.
			saver, thread := r.saver, r.opts.ThreadID
			batch = func(ctx context.Context, fn func(context.Context) error) error {
				return saver.Batch(ctx, thread, fn)
			}
		}
		p := newPersister(ctx, async, r.g.saverTimeout, batch)
		r.persist = p
		defer func() {
			// Wait for queued saves on every way out, a panic included;
			// on the normal way out close already ran and this is a no-op.
			_ = p.close()
		}()
		out, err := r.executeOwned(ctx, in)
		// Every save must have been made, or its failure reported, before
		// the run says it succeeded.
		if perr := p.close(); perr != nil && err == nil {
			err = fmt.Errorf("graph: saving checkpoint: %w", perr)
		}
		return out, err
	}
	return r.executeOwned(ctx, in)
}

// executeOwned is execute once the run has its persister.
func (r *run) executeOwned(ctx context.Context, in Update) (outcome, error) {
	tp, err := r.load(ctx, r.opts.CheckpointID)
	if err != nil {
		return outcome{}, err
	}
	if r.sub && tp != nil && (!r.g.keepState || r.stoppedMidRun()) {
		// The parent task runs again (a resume or a retry): continue the
		// subgraph where it stopped instead of starting it anew. A
		// subgraph that keeps its state and finished its last call takes
		// this call's input on top of that state.
		in = Update{}
	}
	if err := r.start(ctx, in); err != nil {
		return outcome{}, err
	}
	out, lastTasks, err := r.loop(ctx)
	// Save at exit what durability "exit" held back; a subgraph that
	// finished needs nothing saved, as its parent's checkpoint covers it.
	if r.saver != nil && r.opts.Durability == DurabilityExit && !(r.sub && !r.g.keepState && err == nil && !out.interrupted) {
		if !r.cpSaved {
			if serr := r.save(); serr != nil && err == nil {
				err = serr
			}
		}
		if err != nil || out.interrupted {
			for _, t := range lastTasks {
				if t.done && !t.cached {
					continue
				}
				if pws, perr := taskPendingWrites(t); perr == nil && (t.err != nil || len(t.interrupts) > 0 || t.writes != nil || len(t.resumes) > 0) {
					r.putWrites(t.id, pws)
				}
			}
		}
	}
	if perr := r.persist.failed(); perr != nil && err == nil {
		err = fmt.Errorf("graph: saving checkpoint: %w", perr)
	}
	return out, err
}

// onlyStart reports whether a step runs nothing but START's input task,
// which has no side effects of its own.
func onlyStart(tasks []*task) bool {
	for _, t := range tasks {
		if t.name != START {
			return false
		}
	}
	return true
}

// stoppedMidRun reports whether the loaded checkpoint has tasks left to run:
// the last run on it stopped at an interrupt or an error.
func (r *run) stoppedMidRun() bool {
	return len(r.prepare()) > 0
}

// loop runs supersteps until none is left. It returns the tasks of the last
// step when the run stopped inside it.
func (r *run) loop(ctx context.Context) (outcome, []*task, error) {
	for {
		if err := ctx.Err(); err != nil {
			return outcome{}, nil, err
		}
		if r.stopped {
			return outcome{state: r.output(nil)}, nil, nil
		}
		// A save that failed stops the run before another step builds on
		// what was not stored (sync: the save just made; async: as soon as
		// the failure is known).
		if perr := r.persist.failed(); perr != nil {
			return outcome{}, nil, fmt.Errorf("graph: saving checkpoint: %w", perr)
		}
		if r.step > r.stop {
			return outcome{}, nil, &RecursionError{Limit: r.opts.RecursionLimit}
		}
		tasks := r.prepare()
		if err := r.matchPending(tasks); err != nil {
			return outcome{}, nil, err
		}
		if r.saver != nil && (r.modes.has(StreamCheckpoints) || r.modes.has(StreamDebug)) {
			r.emitCheckpoint(tasks)
		}
		if len(tasks) == 0 {
			return outcome{state: r.output(nil)}, nil, nil
		}
		if r.shouldInterrupt(r.before, tasks) {
			r.emitStaticInterrupt()
			return outcome{state: r.output(nil), interrupted: true}, nil, nil
		}
		// The first step of a root run waits for the checkpoints queued so
		// far (its input): a store that cannot be written fails the run
		// before any node acts (a tool that books, say), not after.
		if !r.sub && !r.inputFlushed && !onlyStart(tasks) {
			r.inputFlushed = true
			if perr := r.persist.flush(); perr != nil {
				return outcome{}, nil, fmt.Errorf("graph: saving checkpoint: %w", perr)
			}
		}
		r.emitTaskStarts(tasks)
		if err := r.runTasks(ctx, tasks); err != nil {
			return outcome{}, finishedTasks(tasks), err
		}
		var interrupts []Interruption
		interrupted := false
		for _, t := range tasks {
			var ps *parentCommand
			if errors.As(t.err, &ps) {
				return outcome{}, tasks, ps
			}
		}
		for _, t := range tasks {
			if t.err != nil && !isInterrupt(t.err) {
				return outcome{}, tasks, stepError(tasks)
			}
			if isInterrupt(t.err) {
				interrupted = true
				interrupts = append(interrupts, t.interrupts...)
			}
		}
		if interrupted {
			return outcome{state: r.interruptedState(tasks, interrupts), interrupts: interrupts, interrupted: true}, tasks, nil
		}
		if err := r.apply(tasks, true); err != nil {
			return outcome{}, tasks, err
		}
		if err := r.newCheckpoint("loop"); err != nil {
			return outcome{}, nil, err
		}
		r.step++
		if r.outputUpdated() {
			r.emitValues(nil)
		}
		if r.shouldInterrupt(r.after, tasks) {
			r.emitStaticInterrupt()
			return outcome{state: r.output(nil), interrupted: true}, nil, nil
		}
	}
}

// interruptedState is the state a run that stopped at an interrupt returns:
// as LangGraph does, the writes of the step's tasks that did finish are
// shown applied (in memory only: they are saved as pending writes, and the
// step is applied when the run resumes), and a last values event carries
// them.
func (r *run) interruptedState(tasks []*task, interrupts []Interruption) State {
	var ws []write
	for _, t := range tasks {
		if t.err == nil {
			ws = append(ws, t.writes...)
		}
	}
	// Writes that break a channel's rule fail the step when it is applied
	// on resume; until then the state is shown without them.
	st, applied := r.outputWith(ws, interrupts)
	if !applied {
		return st
	}
	if r.modes.has(StreamValues) {
		r.send(Event{Mode: StreamValues, Namespace: r.path, Data: st})
	}
	return st
}

// outputWith is the output state with writes applied on top, in memory
// only; applied is false, and the state the current one, when they change
// no state channel or break a channel's rule.
func (r *run) outputWith(ws []write, interrupts []Interruption) (st State, applied bool) {
	if len(stateWrites(r.g, ws)) > 0 {
		if local, err := r.localState(ws); err == nil {
			return State{values: pick(local.values, r.g.outputKeys), interrupts: interrupts}, true
		}
	}
	return r.output(interrupts), false
}

func (r *run) outputUpdated() bool {
	for _, ch := range r.updated {
		if slices.Contains(r.g.outputKeys, ch) {
			return true
		}
	}
	return false
}

// emitStaticInterrupt reports a static breakpoint. A subgraph reports
// none of its own: its parent's task stops with it and reports it, so a
// stream with subgraph events shows one "__interrupt__", the root's, as in
// LangGraph.
func (r *run) emitStaticInterrupt() {
	if !r.sub {
		r.emitUpdate("__interrupt__", Update{}, nil, false)
	}
}

// shouldInterrupt reports whether a static interrupt stops before (or after)
// these tasks: one of them is named, and something changed since the run
// last passed a static interrupt.
func (r *run) shouldInterrupt(names map[string]bool, tasks []*task) bool {
	if len(names) == 0 {
		return false
	}
	named := false
	for _, t := range tasks {
		if !t.node.hidden && (names[t.name] || names[All]) {
			named = true
			break
		}
	}
	if !named {
		return false
	}
	seen := r.seen[interruptKey]
	for ch, v := range r.versions {
		if v > seen[ch] {
			return true
		}
	}
	return false
}

// runTasks runs the step's tasks that have no saved writes: one inline, more
// concurrently (runConcurrent or runClaiming).
func (r *run) runTasks(ctx context.Context, tasks []*task) error {
	var todo []*task
	for _, t := range tasks {
		if t.done {
			if !t.node.hidden {
				r.emitUpdate(t.name, Update{writes: stateWrites(r.g, t.writes)}, t, true)
			}
			continue
		}
		todo = append(todo, t)
	}
	switch {
	case len(todo) == 0:
		return nil
	case len(todo) == 1:
		t := todo[0]
		t.emit = r.emit
		r.execTask(ctx, t)
		r.commit(t)
		return nil
	case r.tasksCanRunInline():
		return r.runClaiming(ctx, todo)
	default:
		return r.runConcurrent(ctx, todo)
	}
}

// tasksCanRunInline reports whether a step's short tasks may run on the
// loop goroutine (runClaiming). Only when nothing needs that goroutine
// while they run: a node's last run time does not bound its next, and a
// task on the loop goroutine holds up the commit of every sibling that
// finishes meanwhile. So not when each task's writes are saved as it
// finishes (async and sync durability: a crash in the middle of the step
// must not lose a finished task's writes, or it runs again on resume, as
// LangGraph promises it does not), nor when the stream carries events per
// task (updates, tasks, debug) or events sent while a task runs
// (messages, custom, subgraphs), which must reach the consumer as they
// happen.
func (r *run) tasksCanRunInline() bool {
	if r.saver != nil && r.opts.Durability != DurabilityExit {
		return false
	}
	if r.emit == nil {
		return true
	}
	if r.opts.Subgraphs {
		return false
	}
	for _, m := range []StreamMode{StreamMessages, StreamCustom, StreamUpdates, StreamTasks, StreamDebug} {
		if r.modes.has(m) {
			return false
		}
	}
	return true
}

// runConcurrent runs each task on a goroutine of its own while the loop
// goroutine passes their events to the stream.
func (r *run) runConcurrent(ctx context.Context, todo []*task) error {
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan Event)
	done := make(chan *task, len(todo))
	sem := r.semaphore()
	for _, t := range todo {
		t.emit = func(ev Event) bool {
			select {
			case events <- ev:
				return true
			case <-stepCtx.Done():
				return false
			}
		}
		go r.runStepTask(stepCtx, t, sem, cancel, false, done)
	}
	for remaining := len(todo); remaining > 0; {
		select {
		case ev := <-events:
			if !r.emit(ev) {
				r.stopped = true
				cancel()
			}
		case t := <-done:
			remaining--
			r.commit(t)
		case <-ctx.Done():
			// Return promptly; tasks still running see the cancelled
			// context and their results are dropped (their goroutines
			// still own them, so they are left alone: see finishedTasks).
			return ctx.Err()
		}
	}
	return nil
}

// inlineBelow is how short a node's last run must have been for runClaiming
// to run it on the loop goroutine: below the cost of handing a task to
// another thread and back (waking a sleeping thread, then the loop
// goroutine, which resumes on the other core with its data in the first
// core's cache), which is tens of microseconds on a virtual machine.
const inlineBelow = 50 * time.Microsecond

// runClaiming runs a step whose tasks send no events while they run. A
// task whose node ran for less than inlineBelow last time runs on the loop
// goroutine; the others run on goroutines of their own, as do, ready to
// claim their task if the loop goroutine has not yet, the short ones after
// the first. Tasks that wait (a model, a tool) thus run in parallel as
// before, a short task that waits this time holds up no other, and a
// step of short tasks runs through without a hand-off to another thread.
// Only the updates of tasks on goroutines may reach the stream later, by
// at most the time the loop goroutine's tasks take.
func (r *run) runClaiming(ctx context.Context, todo []*task) error {
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan *task, len(todo))
	sem := r.semaphore()
	first := true
	for _, t := range todo {
		// No task of this step sends events (tasksCanRunInline).
		t.emit = nil
		t.inline = t.node.short()
		if t.inline && first {
			// The loop goroutine starts with this one.
			first = false
			continue
		}
		go r.runStepTask(stepCtx, t, sem, cancel, true, done)
	}
	waiting := 0
	for _, t := range todo {
		if !t.inline || !t.claimed.CompareAndSwap(false, true) {
			waiting++
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r.runStepTask(stepCtx, t, sem, cancel, false, nil)
		r.commit(t)
		if r.stopped {
			cancel()
		}
	}
	for ; waiting > 0; waiting-- {
		select {
		case t := <-done:
			r.commit(t)
			if r.stopped {
				cancel()
			}
		case <-ctx.Done():
			// As in runConcurrent: tasks still running are left alone.
			return ctx.Err()
		}
	}
	return nil
}

// semaphore bounds the tasks of a step that run at once, when
// RunOptions.MaxConcurrency asks for it.
func (r *run) semaphore() chan struct{} {
	if r.opts.MaxConcurrency > 0 {
		return make(chan struct{}, r.opts.MaxConcurrency)
	}
	return nil
}

// runStepTask runs one of several tasks of a step, and times it for
// runClaiming. With claim it runs t only if no other goroutine claimed it
// first; when it ran t, it sends t on done, if not nil. A task that fails
// cancels the step: its siblings still run (and what they write is kept as
// pending writes, as in LangGraph), but with their context cancelled. It
// is a goroutine's function itself, not called from a closure, so that a
// task's goroutine is no deeper than it must be (a deeper stack grows, and
// copies, sooner).
func (r *run) runStepTask(stepCtx context.Context, t *task, sem chan struct{}, cancel context.CancelFunc, claim bool, done chan<- *task) {
	if claim && !t.claimed.CompareAndSwap(false, true) {
		return
	}
	if done != nil {
		defer func() { done <- t }()
	}
	if sem != nil {
		select {
		case sem <- struct{}{}:
		case <-stepCtx.Done():
			t.err = stepCtx.Err()
			return
		}
	}
	start := time.Now()
	r.execTask(stepCtx, t)
	t.node.lastRun.Store(int64(max(time.Since(start), 1)))
	if sem != nil {
		// Not deferred: execTask recovers what its node raises.
		<-sem
	}
	if t.err != nil && !isInterrupt(t.err) {
		// A failed task stops its siblings; those that finish anyway are
		// still committed.
		cancel()
	}
}

// commit records a finished task: its pending writes and its events.
func (r *run) commit(t *task) {
	t.committed = true
	// isParent's target escapes to the heap: asked only of a failed task.
	if t.err != nil && isParent(t.err) {
		return
	}
	if r.saver != nil && r.opts.Durability != DurabilityExit {
		if pws, err := taskPendingWrites(t); err == nil {
			r.putWrites(t.id, pws)
		}
	}
	if t.node.hidden {
		return
	}
	switch {
	case isInterrupt(t.err):
		r.emitUpdate("__interrupt__", Update{}, t, false)
		// As in LangGraph, the state so far, with the interrupts (a
		// static interrupt in a subgraph has none, and emits no state).
		if len(t.interrupts) > 0 {
			r.emitValues(t.interrupts)
		}
	case t.err == nil:
		// The node's new messages stream as it ends, before its update.
		r.emitWrittenMessages(t)
		r.emitUpdate(t.name, t.update, t, false)
	}
	r.emitTaskResult(t)
}

// stepError picks the error that failed a step: the first failed task's in
// task order, preferring a real failure over the cancellation that failure
// caused in the tasks running beside it.
func stepError(tasks []*task) error {
	var first error
	for _, t := range tasks {
		if t.err == nil || isInterrupt(t.err) {
			continue
		}
		if !errors.Is(t.err, context.Canceled) {
			return t.err
		}
		if first == nil {
			first = t.err
		}
	}
	return first
}

// finishedTasks keeps the tasks that finished. When a run is cancelled in
// the middle of a step, the others are still running on their own
// goroutines and must not be read or written.
func finishedTasks(tasks []*task) []*task {
	var out []*task
	for _, t := range tasks {
		if t.committed || t.done {
			out = append(out, t)
		}
	}
	return out
}

func isInterrupt(err error) bool {
	if err == nil {
		return false
	}
	_, ok := errors.AsType[*interruptSignal](err)
	return ok
}

// stateWrites keeps the writes to state channels.
func stateWrites(g *Graph, ws []write) []write {
	var out []write
	for _, w := range ws {
		if slices.Contains(g.stateKeys, w.ch) {
			out = append(out, w)
		}
	}
	return out
}

// ---------------------------------------------------------------- tasks

type taskCtxKey struct{}

// taskCtx is what a node's context carries about its task: one per attempt,
// so an attempt its timeout abandoned (its goroutine may still run) never
// shares state with the next one. The node reads and writes this attempt's
// scratch; the task takes it over when the attempt ends, and from then on
// (dead) late calls change nothing and emit nothing.
type taskCtx struct {
	r       *run
	t       *task
	attempt int
	step    int
	// emit is this attempt's way to the stream.
	emit func(Event) bool

	mu         sync.Mutex
	dead       bool
	count      int
	resumes    []json.RawMessage
	interrupts []Interruption
	streamed   map[string]bool
	// askedOff is set when the node called Ask on a goroutine of its own:
	// the attempt fails, whatever the node returns.
	askedOff atomic.Bool
}

func (r *run) newAttempt(t *task, attempt int) *taskCtx {
	// Clipped, so that an append by the attempt never writes into the
	// task's array.
	return &taskCtx{r: r, t: t, attempt: attempt, step: r.step, emit: t.emit, resumes: slices.Clip(t.resumes)}
}

// end hands the attempt's scratch to the task and closes the attempt. An
// abandoned attempt's interrupts are dropped; the resume values it took are
// kept, so the next attempt gets them again.
func (tc *taskCtx) end(abandoned bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.dead = true
	t := tc.t
	t.resumes = tc.resumes
	if !abandoned {
		t.interrupts = tc.interrupts
	}
	for id := range tc.streamed {
		if t.streamed == nil {
			t.streamed = make(map[string]bool, len(tc.streamed))
		}
		t.streamed[id] = true
	}
}

// live reports whether the attempt still runs as far as the run knows.
func (tc *taskCtx) live() bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return !tc.dead
}

func taskFrom(ctx context.Context) *taskCtx {
	tc, _ := ctx.Value(taskCtxKey{}).(*taskCtx)
	return tc
}

// execTask runs a task's node with its retry policy, timeout and error
// handler, and computes its writes.
func (r *run) execTask(ctx context.Context, t *task) {
	if t.name == START {
		u := Update{writes: t.writes}
		t.writes = nil
		t.err = r.routeWrites(ctx, t, u)
		return
	}
	if r.cacheHit(ctx, t) {
		return
	}
	var policy RetryPolicy
	if t.node.opts.Retry != nil {
		policy = t.node.opts.Retry.withDefaults()
	}
	attempt := 1
	for ; ; attempt++ {
		t.writes, t.interrupts = nil, nil
		u, err := r.callNode(ctx, t, attempt)
		if err == nil {
			err = r.routeWrites(ctx, t, u)
			if err == nil {
				t.update = u
				t.err = nil
				r.cacheStore(ctx, t)
				return
			}
		}
		t.err = err
		if isInterrupt(err) || isParent(err) || t.node.opts.Retry == nil ||
			attempt >= policy.MaxAttempts || !policy.RetryOn(err) || ctx.Err() != nil {
			break
		}
		wait := backoff(policy, attempt)
		if wait <= 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			t.err = ctx.Err()
			return
		}
	}
	if t.err != nil && !isInterrupt(t.err) && !isParent(t.err) && t.node.opts.OnError != nil {
		tc := r.newAttempt(t, attempt)
		u, herr := r.callHandler(context.WithValue(ctx, taskCtxKey{}, tc), tc)
		tc.end(false)
		if isInterrupt(herr) {
			// The handler asks a human (Ask, Interrupt): the task stops
			// for the answer, and handles its error again on resume.
			t.err = herr
			return
		}
		if herr == nil {
			// The handler stands in for the node, not for its routing: its
			// writes and Gotos apply, the failed node's edges do not fire.
			t.handled = true
			if herr = r.routeWrites(ctx, t, u); herr == nil {
				t.update, t.err = u, nil
				return
			}
		}
		t.err = &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("error handler failed: %w (handling: %v)", herr, t.err)}
	}
}

func isParent(err error) bool {
	var pc *parentCommand
	return errors.As(err, &pc)
}

func backoff(p RetryPolicy, attempt int) time.Duration {
	if p.InitialInterval < 0 {
		// Retry without waiting, as the policy asked.
		return 0
	}
	d := float64(p.InitialInterval)
	for i := 1; i < attempt; i++ {
		d *= p.BackoffFactor
	}
	d = min(d, float64(p.MaxInterval))
	if !p.NoJitter {
		d += rand.Float64() * d / 4
	}
	return time.Duration(d)
}

// DefaultRetryOn retries every error except programming errors: panics,
// invalid updates or graphs, bad input, and cancellation.
func DefaultRetryOn(err error) bool {
	var pe *PanicError
	switch {
	case errors.As(err, &pe),
		errors.Is(err, ErrInvalidUpdate),
		errors.Is(err, ErrInvalidGraph),
		errors.Is(err, ErrInvalidInput),
		errors.Is(err, ErrNoCheckpointer),
		errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// callNode runs one attempt of a node, turning panics into errors and
// enforcing its timeout.
func (r *run) callNode(ctx context.Context, t *task, attempt int) (Update, error) {
	tc := r.newAttempt(t, attempt)
	timeout := t.node.opts.Timeout
	if timeout <= 0 {
		u, err := r.callSafely(context.WithValue(ctx, taskCtxKey{}, tc), tc)
		tc.end(false)
		return u, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrNodeTimeout)
	defer cancel()
	// The node runs on its own goroutine; its events come back here, so
	// that the stream's consumer is only ever called on the run's own
	// goroutine, and an abandoned attempt's events go nowhere.
	var events chan Event
	outer := tc.emit
	if outer != nil {
		events = make(chan Event)
		tc.emit = func(ev Event) bool {
			select {
			case events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
	}
	type result struct {
		u   Update
		err error
	}
	ch := make(chan result, 1)
	actx := context.WithValue(ctx, taskCtxKey{}, tc)
	go func() {
		u, err := r.callSafely(actx, tc)
		ch <- result{u, err}
	}()
	for {
		select {
		case ev := <-events:
			outer(ev)
		case res := <-ch:
			tc.end(false)
			if res.err != nil && errors.Is(context.Cause(ctx), ErrNodeTimeout) {
				return Update{}, &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("%w after %v: %w", ErrNodeTimeout, timeout, res.err)}
			}
			return res.u, res.err
		case <-ctx.Done():
			// The attempt is abandoned: whatever it does from now on is
			// ignored.
			tc.end(true)
			if errors.Is(context.Cause(ctx), ErrNodeTimeout) {
				return Update{}, &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("%w after %v", ErrNodeTimeout, timeout)}
			}
			return Update{}, ctx.Err()
		}
	}
}

// callSafely calls the node of tc's task: ctx carries tc.
func (r *run) callSafely(ctx context.Context, tc *taskCtx) (u Update, err error) {
	t := tc.t
	defer recoverAttempt(tc, &u, &err)
	if t.node.sub != nil {
		u, err = r.runSubgraph(ctx, t)
	} else {
		u, err = t.node.fn(ctx, t.input)
	}
	if err != nil && !isInterrupt(err) && !isParent(err) {
		var ne *NodeError
		if !errors.As(err, &ne) || ne.TaskID != t.id {
			err = &NodeError{Node: t.name, TaskID: t.id, Err: err}
		}
	}
	return u, err
}

// callHandler calls the error handler of tc's task (NodeOptions.OnError),
// guarded as callSafely guards the node.
func (r *run) callHandler(ctx context.Context, tc *taskCtx) (u Update, err error) {
	defer recoverAttempt(tc, &u, &err)
	t := tc.t
	return t.node.opts.OnError(ctx, t.input, t.err)
}

// recoverAttempt, deferred by callSafely and callHandler, ends an attempt
// of a node or its handler: a panic becomes the node's PanicError, Ask's
// stop its interrupt or error, and an Ask made on a goroutine the code
// started fails the attempt. It is deferred directly, not wrapped, so that
// recover sees the panic, and so that a node's goroutine keeps the stack
// depth it had (a deeper stack grows, and copies, sooner).
func recoverAttempt(tc *taskCtx, u *Update, err *error) {
	t := tc.t
	if p := recover(); p != nil {
		if cp, ok := p.(*consumerPanic); ok {
			// The stream's consumer panicked in an event this node sent:
			// not the node's failure. Raised again at once, in this
			// deferred call, so its stack is still the one it panicked
			// with.
			panic(cp)
		}
		if ap, ok := p.(askPanic); ok {
			// Ask stopped the node: its error is the node's result.
			*u, *err = Update{}, ap.err
			return
		}
		*u, *err = Update{}, &NodeError{Node: t.name, TaskID: t.id, Err: &PanicError{Value: p, Stack: debug.Stack()}}
	}
	if tc.askedOff.Load() {
		*u, *err = Update{}, &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("%w: graph.Ask can stop a node only on the goroutine the runtime called the node on, not on one the node started; there, call graph.Interrupt and return its error from the node", ErrAskOffNodeGoroutine)}
	}
}

// routeWrites turns a node's update into channel writes: its state writes,
// gotos and Sends, then its edges and the choices of its conditional edges.
func (r *run) routeWrites(ctx context.Context, t *task, u Update) error {
	if u.parent != nil {
		return &parentCommand{u: *u.parent}
	}
	n := t.node
	nodeName := t.name
	ws := make([]write, 0, len(u.writes)+len(u.gotos)+len(u.sends)+1)
	for _, w := range u.writes {
		if n == nil || !n.hidden {
			if !slices.Contains(r.g.stateKeys, w.ch) {
				return &NodeError{Node: nodeName, TaskID: t.id, Err: fmt.Errorf("%w: wrote to channel %q, which the graph does not have (its channels: %s)", ErrInvalidUpdate, w.ch, strings.Join(r.g.stateKeys, ", "))}
			}
		}
		ws = append(ws, w)
	}
	for _, to := range u.gotos {
		if to == END {
			continue
		}
		n := r.g.nodes[to]
		if n == nil || to == START {
			return &NodeError{Node: nodeName, TaskID: t.id, Err: fmt.Errorf("%w: Goto names unknown node %q", ErrInvalidUpdate, to)}
		}
		ws = append(ws, write{n.trigger, true})
	}
	for _, sd := range u.sends {
		if err := r.checkSend(sd); err != nil {
			return &NodeError{Node: nodeName, TaskID: t.id, Err: err}
		}
		ws = append(ws, write{checkpoint.TasksChannel, sd})
	}
	if n != nil && !t.handled {
		ws = append(ws, n.edges...)
		if len(n.branches) > 0 {
			local, err := r.localState(ws)
			if err != nil {
				return &NodeError{Node: nodeName, TaskID: t.id, Err: err}
			}
			for _, br := range n.branches {
				route, err := br.router(ctx, local)
				if err != nil {
					return &NodeError{Node: nodeName, TaskID: t.id, Err: fmt.Errorf("conditional edge: %w", err)}
				}
				bw, err := r.branchWrites(br, route)
				if err != nil {
					return &NodeError{Node: nodeName, TaskID: t.id, Err: err}
				}
				ws = append(ws, bw...)
			}
		}
	}
	t.writes = ws
	return nil
}

func (r *run) checkSend(sd Send) error {
	if sd.Node == END {
		return fmt.Errorf("%w: cannot Send to END", ErrInvalidUpdate)
	}
	if r.g.nodes[sd.Node] == nil || sd.Node == START {
		return fmt.Errorf("%w: Send names unknown node %q", ErrInvalidUpdate, sd.Node)
	}
	return nil
}

func (r *run) branchWrites(br *branchSpec, route Route) ([]write, error) {
	var ws []write
	for _, name := range route.nodes {
		dest := name
		if br.pathMap != nil {
			d, ok := br.pathMap[name]
			if !ok {
				return nil, fmt.Errorf("%w: the router of conditional edges from %q returned %q, which is not a key of its path map (keys: %s)", ErrInvalidUpdate, br.from, name, strings.Join(sortedKeys(br.pathMap), ", "))
			}
			dest = d
		}
		if dest == END {
			continue
		}
		n := r.g.nodes[dest]
		if n == nil || dest == START {
			return nil, fmt.Errorf("%w: the router of conditional edges from %q returned unknown node %q", ErrInvalidUpdate, br.from, dest)
		}
		ws = append(ws, write{n.trigger, true})
	}
	for _, sd := range route.sends {
		if err := r.checkSend(sd); err != nil {
			return nil, err
		}
		ws = append(ws, write{checkpoint.TasksChannel, sd})
	}
	return ws, nil
}

// localState is the step's state with only these writes applied, which is
// what a conditional edge sees.
func (r *run) localState(ws []write) (State, error) {
	base := r.state()
	var order []string
	byCh := map[string][]any{}
	for _, w := range ws {
		if !slices.Contains(r.g.stateKeys, w.ch) {
			continue
		}
		if _, ok := byCh[w.ch]; !ok {
			order = append(order, w.ch)
		}
		byCh[w.ch] = append(byCh[w.ch], w.v)
	}
	if len(order) == 0 {
		return base, nil
	}
	m := make(map[string]any, len(base.values)+len(order))
	for k, v := range base.values {
		m[k] = v
	}
	for _, ch := range order {
		s := r.slots[ch].clone()
		if _, err := s.update(ch, byCh[ch]); err != nil {
			return State{}, err
		}
		if v, ok := s.get(); ok {
			m[ch] = v
		} else {
			delete(m, ch)
		}
	}
	return State{values: m}, nil
}

// runSubgraph runs a subgraph node: the parent's state for the channels they
// share goes in, the subgraph's output channels come back as writes.
func (r *run) runSubgraph(ctx context.Context, t *task) (Update, error) {
	tc := taskFrom(ctx)
	sub := t.node.sub
	in := Update{input: true}
	for _, k := range sub.inputKeys {
		if v, ok := t.input.values[k]; ok {
			in.writes = append(in.writes, write{k, v})
		}
	}
	opts := r.opts
	opts.CheckpointID = ""
	opts.InterruptBefore, opts.InterruptAfter = nil, nil
	child := &run{
		runScope: runScope{
			g:      sub,
			opts:   opts,
			saver:  sub.saver,
			ns:     t.ns,
			path:   append(slices.Clip(r.path), t.ns[strings.LastIndexByte(t.ns, '|')+1:]),
			sub:    true,
			before: sub.before,
			after:  sub.after,
		},
		stepLoop:         stepLoop{resume: r.resume},
		checkpointCursor: checkpointCursor{persist: r.persist},
		streamSink:       streamSink{modes: r.modes},
	}
	if child.saver == nil {
		child.saver = r.saver
	}
	parentAlive := r.alive
	child.alive = func() bool { return tc.live() && (parentAlive == nil || parentAlive()) }
	if child.saver != r.saver || sub.keepState {
		// Its own persister, flushed when the call returns: a subgraph
		// that keeps its state reads its saves back at its next call.
		child.persist = nil
	}
	child.parents = make(map[string]string, len(r.parents)+1)
	for k, v := range r.parents {
		child.parents[k] = v
	}
	child.parents[r.ns] = r.cpID
	emit := tc.emit
	subgraphs := r.opts.Subgraphs
	child.emit = func(ev Event) bool {
		// As in LangGraph, a subgraph's events (its messages too) reach
		// the stream only when RunOptions.Subgraphs asks for them; its
		// own subgraphs' lifecycle events always do.
		if !subgraphs && ev.Mode != StreamLifecycle {
			return true
		}
		if emit == nil {
			return true
		}
		return emit(ev)
	}
	lifecycle := LifecycleEvent{Namespace: child.path}
	if r.modes.has(StreamLifecycle) {
		lifecycle.ToolCallID = toolCallOf(t)
		lifecycle.Kind = LifecycleStarted
		tc.emitLifecycle(lifecycle)
	}
	out, err := child.execute(ctx, in)
	if r.modes.has(StreamLifecycle) {
		switch {
		case err != nil && !isParent(err):
			lifecycle.Kind, lifecycle.Err = LifecycleFailed, err
		case err == nil && out.interrupted:
			lifecycle.Kind = LifecycleInterrupted
		default:
			lifecycle.Kind = LifecycleCompleted
		}
		tc.emitLifecycle(lifecycle)
	}
	var pc *parentCommand
	if errors.As(err, &pc) {
		// A node of the subgraph addressed this graph (ToParent): as in
		// LangGraph, its writes and gotos are this node's result, so they
		// apply here and this node's edges fire too.
		return pc.u, nil
	}
	if err != nil {
		return Update{}, err
	}
	if out.interrupted {
		// The subgraph's interrupts are this task's: they are saved with
		// it, streamed, and answered when the parent resumes.
		tc.mu.Lock()
		tc.interrupts = out.interrupts
		tc.mu.Unlock()
		return Update{}, &interruptSignal{interrupts: out.interrupts}
	}
	u := Update{input: true}
	for _, k := range sub.outputKeys {
		if v, ok := out.state.values[k]; ok && slices.Contains(r.g.stateKeys, k) {
			u.writes = append(u.writes, write{k, v})
		}
	}
	return u, nil
}

// emitLifecycle sends a lifecycle event about a subgraph the attempt runs,
// unless the attempt was abandoned.
func (tc *taskCtx) emitLifecycle(le LifecycleEvent) {
	if tc.emit == nil || !tc.live() {
		return
	}
	tc.emit(Event{Mode: StreamLifecycle, Namespace: le.Namespace, Data: le})
}

// ---------------------------------------------------------------- node API

// Interrupt stops the node to ask a human: the run ends, surfacing value,
// and the node returns the error Interrupt gives it. When the run is resumed
// with graph.Resume, the node runs again from its top, and this call (the
// k-th Interrupt call of the node) returns the k-th resume value, decoded
// into T. It needs a checkpointer. Ask does the same in one line.
func Interrupt[T any](ctx context.Context, value any) (T, error) {
	var zero T
	tc := taskFrom(ctx)
	if tc == nil {
		return zero, fmt.Errorf("%w: graph.Interrupt was called outside a running node", ErrInvalidInput)
	}
	r, t := tc.r, tc.t
	if r.saver == nil {
		return zero, &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("%w: graph.Interrupt needs a checkpointer to save the run while it waits: compile the graph with CompileOptions.Checkpointer (checkpoint.NewMemory() for tests)", ErrNoCheckpointer)}
	}
	tc.mu.Lock()
	if tc.dead {
		// An attempt that already ended (abandoned at its timeout) must
		// neither take a resume value nor stop the run.
		tc.mu.Unlock()
		return zero, &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("%w: graph.Interrupt was called after this attempt of the node ended", ErrInvalidInput)}
	}
	k := tc.count
	tc.count++
	var raw json.RawMessage
	switch {
	case k < len(tc.resumes):
		raw = tc.resumes[k]
	default:
		id := interruptID(t.ns)
		v, ok := r.resume.take(id)
		if !ok {
			tc.interrupts = []Interruption{{ID: id, Value: value}}
			sig := &interruptSignal{interrupts: tc.interrupts}
			tc.mu.Unlock()
			return zero, sig
		}
		tc.resumes = append(tc.resumes, v)
		raw = v
	}
	tc.mu.Unlock()
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return zero, &NodeError{Node: t.name, TaskID: t.id, Err: fmt.Errorf("%w: resume value %s does not decode into %T: %v", ErrInvalidInput, raw, out, err)}
	}
	return out, nil
}

// Ask is Interrupt for the common case, in one line:
//
//	decision := graph.Ask[Decision](ctx, question)
//
// It returns the resume value, decoded into T. When the node must stop for
// a human instead (or Interrupt fails: no checkpointer, a resume value that
// does not decode into T), Ask panics with a value the runtime recovers:
// the node's task ends exactly as if it had returned Interrupt's error, so
// the code after Ask does not run and the node's deferred calls do. This is
// LangGraph's shape (interrupt raises); Interrupt stays for nodes that must
// clean up or decide themselves.
//
// Call Ask only on the goroutine the runtime called the node on. On a
// goroutine the node started (a tool run in parallel, say) no recover of
// the runtime's is there to catch its stop, so Ask does not ask: it ends
// that goroutine (runtime.Goexit, which runs its deferred calls) and the
// node fails with ErrAskOffNodeGoroutine once it returns. Call Interrupt
// there and pass its error back to the node. A recover in the node's own
// code between Ask and the runtime must re-panic what it does not own.
func Ask[T any](ctx context.Context, question any) T {
	if tc := taskFrom(ctx); tc != nil && !onNodeGoroutine() {
		tc.askedOff.Store(true)
		runtime.Goexit()
	}
	v, err := Interrupt[T](ctx, question)
	if err != nil {
		panic(askPanic{err})
	}
	return v
}

// Names of functions in a stack: every goroutine that runs a node, or its
// error handler, has callSafely or callHandler below it; the goroutine
// running a run's step loop (the one ranging over Stream) has loop.
var (
	callSafelyName  = reflect.TypeFor[run]().PkgPath() + ".(*run).callSafely"
	callHandlerName = reflect.TypeFor[run]().PkgPath() + ".(*run).callHandler"
	loopName        = reflect.TypeFor[run]().PkgPath() + ".(*run).loop"
)

// onNodeGoroutine reports whether the caller runs on a goroutine the
// runtime runs a node on, where recoverAttempt recovers Ask's stop. It
// walks the stack, so only Ask calls it.
func onNodeGoroutine() bool { return onStack(callSafelyName, callHandlerName) }

// onLoopGoroutine reports whether the caller runs on a goroutine that runs
// a step loop: for a Stream's consumer, the goroutine ranging over it. It
// walks the stack, so only a consumer's panic calls it.
func onLoopGoroutine() bool { return onStack(loopName) }

// onStack reports whether a function of one of these names is on the
// caller's stack.
func onStack(names ...string) bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if slices.Contains(names, f.Function) {
			return true
		}
		if !more {
			return false
		}
	}
}

// askPanic carries Interrupt's error out of a node that called Ask.
type askPanic struct{ err error }

// Error makes the crash readable when Ask was misused: a panic whose value
// is an error prints its message.
func (p askPanic) Error() string {
	return "graph.Ask panicked outside the runtime (not on a node's own goroutine?): " + p.err.Error()
}

// RemainingSteps returns how many supersteps the run may still take,
// counting the current one (LangGraph's RemainingSteps).
func RemainingSteps(ctx context.Context) int {
	tc := taskFrom(ctx)
	if tc == nil {
		return 0
	}
	return tc.r.stop - tc.step
}

// IsLastStep reports whether the current superstep is the last the
// recursion limit allows (LangGraph's IsLastStep).
func IsLastStep(ctx context.Context) bool {
	tc := taskFrom(ctx)
	return tc != nil && tc.step == tc.r.stop-1
}

// TaskInfo describes the running task to its node.
type TaskInfo struct {
	Node      string
	TaskID    string
	Step      int
	Attempt   int
	Namespace string
	ThreadID  string
	// User is who the run acts for (RunOptions.User); "" when the run
	// names nobody.
	User string
}

// CurrentTask returns what the running node's context says about its task;
// ok is false outside a node.
func CurrentTask(ctx context.Context) (TaskInfo, bool) {
	tc := taskFrom(ctx)
	if tc == nil {
		return TaskInfo{}, false
	}
	return TaskInfo{
		Node: tc.t.name, TaskID: tc.t.id, Step: tc.step, Attempt: tc.attempt,
		Namespace: tc.t.ns, ThreadID: tc.r.opts.ThreadID, User: tc.r.opts.User,
	}, true
}

// Configurable returns the value of key among the running node's run's
// configurable values (RunOptions.Configurable, LangGraph's
// config["configurable"]), and whether it is set; outside a node nothing
// is. Values that came over the server's API are JSON values: strings,
// float64s, bools, []any and map[string]any. Treat them as read-only:
// every node of the run sees the same values.
func Configurable(ctx context.Context, key string) (any, bool) {
	tc := taskFrom(ctx)
	if tc == nil {
		return nil, false
	}
	v, ok := tc.r.opts.Configurable[key]
	return v, ok
}
