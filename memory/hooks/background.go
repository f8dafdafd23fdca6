package hooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/memory"
)

// Errors of the background hooks' writes, told to the agent (which says
// so in a status event) when a write cannot even be queued.
var (
	// ErrQueueFull: BackgroundOptions.Queue writes wait already; this one
	// was not taken (never waited for).
	ErrQueueFull = errors.New("hooks: the memory queue is full")
	// ErrClosed: the Background was closed.
	ErrClosed = errors.New("hooks: the memory queue is closed")
)

// BackgroundOptions configure a Background. The zero value is usable.
type BackgroundOptions struct {
	// Queue is the most writes waiting at once (default 256); more are
	// refused with ErrQueueFull rather than waited for.
	Queue int
	// Attempts is how many times a write is tried (default 3), waiting
	// Backoff, then twice as long, between tries (default 500ms). A retry
	// makes only the writes of a job that failed: nothing is counted twice.
	Attempts int
	Backoff  time.Duration
	// Timeout bounds one attempt at one job (default 1 minute).
	Timeout time.Duration
	// Logger receives the writes that failed every attempt, at error
	// level (default slog.Default()).
	Logger *slog.Logger
	// OnDone, if set, is told of each job once it ended: err is nil when
	// everything was written, else what was not (every attempt failed,
	// or Close gave up). It is called for one job at a time, on the
	// Background's goroutine (or Close's): keep it quick.
	OnDone func(j Job, err error)
}

// Job is what one background job writes: what a finished task taught
// (Kind "task": its tool outcomes, the user's approval answers, the plan
// and the workflow), or a clarification (Kind "clarification").
type Job struct {
	User, Thread string
	// Task is the thread's task number (0 for a clarification).
	Task int
	Kind string
}

// BackgroundStats counts what a Background did.
type BackgroundStats struct {
	// Queued counts jobs taken; Recorded those written whole; Failed
	// those with a write that failed every attempt; Retries the attempts
	// after a first failure; Dropped the jobs refused (queue full,
	// closed) or given up by Close.
	Queued, Recorded, Failed, Retries, Dropped int64
}

// Background is New's hooks with memory's writes taken off the run's
// path: what a finished task taught (TaskRecorder) and the user's
// clarifications are queued and written by a goroutine of its own, so
// recording never delays an answer, and a write that fails is tried again,
// then logged and told (BackgroundOptions.OnDone), never failing the run
// nor touching its thread. Reads (past clarifications, acceptance
// prediction, tool advice) first wait until the writes queued for their
// user are done, within the hook's time bound: a user's next task sees
// what the last one taught, even when it starts at once. Writes of one
// process are made one at a time, in order. Close (or Flush) before the
// program ends, or queued writes are lost.
type Background struct {
	hooks orchestrator.Memory // New(exp): the writes, made in the background
	opts  BackgroundOptions

	mu      sync.Mutex
	queue   []*job
	pending map[string]int // by user: jobs queued or running
	running *job
	changed chan struct{} // closed and replaced whenever a job ends
	closed  bool
	wake    chan struct{}
	done    chan struct{} // closed when the worker exits

	ctx    context.Context // cancelled when Close gives up
	cancel context.CancelFunc
	tell   sync.Mutex // OnDone is called one job at a time

	queued, recorded, failed, retries, dropped atomic.Int64
}

type job struct {
	Job
	ops  []op
	done []bool // the ops written
}

// NewBackground starts the background writer of exp's hooks; Close stops
// it. opts may be nil.
func NewBackground(exp *memory.Experience, opts *BackgroundOptions) (*Background, error) {
	if exp == nil {
		return nil, fmt.Errorf("%w: NewBackground needs an Experience", memory.ErrInvalid)
	}
	var o BackgroundOptions
	if opts != nil {
		o = *opts
	}
	if o.Queue < 0 || o.Attempts < 0 || o.Backoff < 0 || o.Timeout < 0 {
		return nil, fmt.Errorf("%w: BackgroundOptions must not be negative", memory.ErrInvalid)
	}
	o.Queue = cmp.Or(o.Queue, 256)
	o.Attempts = cmp.Or(o.Attempts, 3)
	o.Backoff = cmp.Or(o.Backoff, 500*time.Millisecond)
	o.Timeout = cmp.Or(o.Timeout, time.Minute)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &Background{hooks: New(exp), opts: o, pending: map[string]int{}, changed: make(chan struct{}),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	go b.work()
	return b, nil
}

// Hooks returns the orchestrator's memory hooks: New's, with the writes
// queued and the reads waiting for their user's queued writes.
func (b *Background) Hooks() orchestrator.Memory {
	return orchestrator.Memory{
		Clarifications: bgClarifications{b},
		Acceptance:     bgAcceptance{b},
		Tools:          bgTools{b},
		Recorder:       bgRecorder{b},
	}
}

// Stats returns the counts so far.
func (b *Background) Stats() BackgroundStats {
	return BackgroundStats{Queued: b.queued.Load(), Recorded: b.recorded.Load(), Failed: b.failed.Load(),
		Retries: b.retries.Load(), Dropped: b.dropped.Load()}
}

// enqueue takes a job; it never waits.
func (b *Background) enqueue(j *job) error {
	if len(j.ops) == 0 {
		return nil
	}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		b.dropped.Add(1)
		return ErrClosed
	case len(b.queue) >= b.opts.Queue:
		b.mu.Unlock()
		b.dropped.Add(1)
		return fmt.Errorf("%w (%d writes wait): what this %s taught is not recorded", ErrQueueFull, b.opts.Queue, j.Kind)
	}
	j.done = make([]bool, len(j.ops))
	b.queue = append(b.queue, j)
	b.pending[j.User]++
	b.mu.Unlock()
	b.queued.Add(1)
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

func (b *Background) work() {
	defer close(b.done)
	for {
		b.mu.Lock()
		for len(b.queue) == 0 && !b.closed {
			b.mu.Unlock()
			<-b.wake
			b.mu.Lock()
		}
		if len(b.queue) == 0 {
			b.mu.Unlock()
			return
		}
		j := b.queue[0]
		b.queue = b.queue[1:]
		b.running = j
		b.mu.Unlock()
		b.finish(j, b.process(j))
	}
}

// process makes a job's writes, retrying those that fail.
func (b *Background) process(j *job) error {
	wait := b.opts.Backoff
	var errs []error
	for attempt := 1; ; attempt++ {
		errs = errs[:0]
		ctx, cancel := context.WithTimeout(b.ctx, b.opts.Timeout)
		for i, o := range j.ops {
			if j.done[i] {
				continue
			}
			if err := o.do(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", o.what, err))
				continue
			}
			j.done[i] = true
		}
		cancel()
		switch {
		case len(errs) == 0:
			return nil
		case b.ctx.Err() != nil:
			return fmt.Errorf("%w before this was written: %w", ErrClosed, errors.Join(errs...))
		case attempt >= b.opts.Attempts:
			return errors.Join(errs...)
		}
		b.retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-b.ctx.Done():
			t.Stop()
		}
		wait *= 2
	}
}

// finish ends a job: counts it, tells its failure, and wakes the readers
// waiting for its user.
func (b *Background) finish(j *job, err error) {
	switch {
	case err == nil:
		b.recorded.Add(1)
	case errors.Is(err, ErrClosed):
		b.dropped.Add(1)
	default:
		b.failed.Add(1)
	}
	if err != nil {
		b.opts.Logger.Error("memory: what a task taught was not recorded", "user", j.User, "thread", j.Thread, "task", j.Task, "kind", j.Kind, "err", err)
	}
	if b.opts.OnDone != nil {
		b.tell.Lock()
		b.opts.OnDone(j.Job, err)
		b.tell.Unlock()
	}
	b.mu.Lock()
	if b.running == j {
		b.running = nil
	}
	if b.pending[j.User]--; b.pending[j.User] <= 0 {
		delete(b.pending, j.User)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// waitFor waits until done() holds, checked whenever a job ends.
func (b *Background) waitFor(ctx context.Context, done func() bool) error {
	for {
		b.mu.Lock()
		ok, ch := done(), b.changed
		b.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settle waits until the writes queued for user are done.
func (b *Background) settle(ctx context.Context, user string) error {
	if err := b.waitFor(ctx, func() bool { return b.pending[user] == 0 }); err != nil {
		return fmt.Errorf("waiting for what %s's last task taught to be recorded: %w", user, err)
	}
	return nil
}

// Flush waits until every write queued now is done (or failed), or ctx
// ends.
func (b *Background) Flush(ctx context.Context) error {
	return b.waitFor(ctx, func() bool { return len(b.queue) == 0 && b.running == nil })
}

// Close stops taking writes and waits for those queued. If ctx ends
// first, the attempt under way is cancelled and the writes not made are
// dropped, told (OnDone, the log) and counted; the error says how many.
// Closing again returns at once.
func (b *Background) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
	}
	// Take what waits before cancelling the write in progress: once it
	// stops, the worker would take the next queued one.
	b.mu.Lock()
	left := b.queue
	b.queue = nil
	b.mu.Unlock()
	b.cancel()
	for _, j := range left {
		b.finish(j, fmt.Errorf("%w before this was written: %w", ErrClosed, ctx.Err()))
	}
	<-b.done
	return fmt.Errorf("hooks: closing the memory queue: %d queued writes dropped: %w", len(left), ctx.Err())
}

// ---------------------------------------------------------------- the hooks

type bgClarifications struct{ b *Background }

func (c bgClarifications) PastClarifications(ctx context.Context, user, request string) ([]orchestrator.PastClarification, error) {
	if err := c.b.settle(ctx, user); err != nil {
		return nil, err
	}
	return c.b.hooks.Clarifications.PastClarifications(ctx, user, request)
}

func (c bgClarifications) RecordClarification(_ context.Context, user string, rec orchestrator.ClarificationRecord) error {
	o, err := c.b.hooks.Clarifications.(Clarifications).op(user, rec)
	if err != nil || o.do == nil {
		return err
	}
	return c.b.enqueue(&job{Job: Job{User: user, Thread: rec.Thread, Kind: "clarification"}, ops: []op{o}})
}

type bgAcceptance struct{ b *Background }

func (a bgAcceptance) PredictAcceptance(ctx context.Context, user string, st orchestrator.Step) (float64, bool, error) {
	if err := a.b.settle(ctx, user); err != nil {
		return 0, false, err
	}
	return a.b.hooks.Acceptance.PredictAcceptance(ctx, user, st)
}

type bgTools struct{ b *Background }

func (t bgTools) ToolAdvice(ctx context.Context, user, step string) (orchestrator.ToolAdvice, error) {
	if err := t.b.settle(ctx, user); err != nil {
		return orchestrator.ToolAdvice{}, err
	}
	return t.b.hooks.Tools.ToolAdvice(ctx, user, step)
}

type bgRecorder struct{ b *Background }

func (r bgRecorder) RecordTask(_ context.Context, rec orchestrator.TaskRecord) error {
	ops := r.b.hooks.Recorder.(Recorder).ops(rec)
	return r.b.enqueue(&job{Job: Job{User: rec.User, Thread: rec.Thread, Task: rec.Task, Kind: "task"}, ops: ops})
}
