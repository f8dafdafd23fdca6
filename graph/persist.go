package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// DefaultCheckpointerTimeout bounds each call a run makes to its
// checkpointer unless CompileOptions.CheckpointerTimeout says otherwise.
const DefaultCheckpointerTimeout = 10 * time.Second

// maxCancelGrace is the longest the checkpointer writes still due when a
// run's caller cancels it may take, together: long enough for a loaded
// store (a PostgreSQL checkpoint write took up to 2 s on a machine with a
// load average of 17), short enough that a cancelled run returns soon
// when the store hangs. A write it cuts short records work the run did;
// the run's last stored checkpoint stays consistent, and a later run does
// that work again.
const maxCancelGrace = 2 * time.Second

// cancelGrace is how long the writes still due get after the caller
// cancels a run: maxCancelGrace, or the checkpointer timeout if shorter.
func cancelGrace(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultCheckpointerTimeout
	}
	return min(timeout, maxCancelGrace)
}

// ErrCheckpointerTimeout means a call to the checkpointer did not finish
// within CompileOptions.CheckpointerTimeout: the store is stalled or
// unreachable.
var ErrCheckpointerTimeout = errors.New("graph: checkpointer call timed out")

// boundSaverCall runs one read of the checkpointer: it follows the caller's
// context (nothing is lost when a read is abandoned) and is bounded by the
// graph's CheckpointerTimeout.
func (g *Graph) boundSaverCall(ctx context.Context, op string, f func(context.Context) error) error {
	return boundedCall(ctx, op, g.saverTimeout, f)
}

// boundedCall runs f with a context that ends after d, and names the bound
// in the error when that is why f failed.
func boundedCall(ctx context.Context, op string, d time.Duration, f func(context.Context) error) error {
	// The message is built only on failure: this runs for every save.
	cctx, cancel := context.WithTimeoutCause(ctx, d, ErrCheckpointerTimeout)
	defer cancel()
	return boundErr(cctx, op, d, f(cctx))
}

// boundErr names the bound in err, the error of a call bounded by d with
// cctx, when that is why the call failed.
func boundErr(cctx context.Context, op string, d time.Duration, err error) error {
	if err != nil && !errors.Is(err, ErrCheckpointerTimeout) {
		switch c := context.Cause(cctx); {
		case c == ErrCheckpointerTimeout:
			return fmt.Errorf("%w: %s took longer than CompileOptions.CheckpointerTimeout (%v): %w", ErrCheckpointerTimeout, op, d, err)
		case errors.Is(c, ErrCheckpointerTimeout):
			return fmt.Errorf("%w (%s: %w)", c, op, err)
		}
	}
	return err
}

// serialBound bounds calls made one after another, as boundedCall does,
// with one context and one timer for all of them instead of a
// context.WithTimeoutCause each (four allocations, and a timer set up and
// torn down, for every checkpoint write of every run). Before each call
// the timer is set to end the shared context after d; after it, the timer
// is stopped. Once the timer has fired, or the parent has ended, the
// context is done: a timer that fired makes the next call start a new
// context, and a parent that ended fails the next call at once, as a
// context derived from it would. It is not safe for concurrent use: the
// persister's background goroutine alone uses it.
type serialBound struct {
	parent context.Context
	d      time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

// deadlineCtx reports the deadline of one call bounded by a serialBound,
// whose shared context ends at (or just after) it, so the store sees how
// long the call has, as with context.WithTimeout. Its other methods are
// the shared context's.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

// Deadline returns the end of the call's bound.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// call runs f bounded by b.d, and names the bound in the error when that
// is why f failed.
func (b *serialBound) call(op string, f func(context.Context) error) error {
	deadline := time.Now().Add(b.d)
	if b.ctx == nil {
		ctx, cancel := context.WithCancelCause(b.parent)
		b.ctx, b.cancel = ctx, cancel
		b.timer = time.AfterFunc(b.d, func() { cancel(ErrCheckpointerTimeout) })
	} else {
		b.timer.Reset(b.d)
	}
	ctx := b.ctx
	err := f(&deadlineCtx{Context: ctx, deadline: deadline})
	if !b.timer.Stop() {
		// The bound ended: what f left watching ctx ends with it, and the
		// next call gets a context of its own.
		b.cancel(ErrCheckpointerTimeout)
		b.ctx, b.cancel, b.timer = nil, nil, nil
	}
	return boundErr(ctx, op, b.d, err)
}

// close ends the shared context, if there is one.
func (b *serialBound) close() {
	if b.ctx != nil {
		b.timer.Stop()
		b.cancel(context.Canceled)
		b.ctx, b.cancel, b.timer = nil, nil, nil
	}
}

// boundedList bounds a listing from the checkpointer: the driver gets d to
// produce each item; the consumer's time between items is not counted.
func boundedList[T any](ctx context.Context, op string, d time.Duration, list func(context.Context) iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		lctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		timer := time.AfterFunc(d, func() { cancel(ErrCheckpointerTimeout) })
		defer timer.Stop()
		for v, err := range list(lctx) {
			timer.Stop()
			if err != nil && context.Cause(lctx) == ErrCheckpointerTimeout {
				err = fmt.Errorf("%w: %s took longer than CompileOptions.CheckpointerTimeout (%v) for one item: %w", ErrCheckpointerTimeout, op, d, err)
			}
			if !yield(v, err) {
				return
			}
			timer.Reset(d)
		}
	}
}

// maxBatch bounds the writes the persister makes in one transaction.
const maxBatch = 32

// persister makes a run's checkpointer writes in order, in the background
// for async durability, and keeps the first error; after one write failed,
// later ones are skipped, as they would build on what was not stored.
//
// Writes record work that has happened (a node's side effects), so they are
// not abandoned the moment the caller cancels the run. Each is bounded by
// the checkpointer timeout, and once the caller's context is done the
// writes still to come share one grace window (cancelGrace), which each
// one's context carries as its deadline: a cancelled run returns within
// it even when the store hangs.
//
// With batch set (async durability over a saver that can batch,
// checkpoint.Saver.CanBatch), the background goroutine makes the writes
// queued together in one transaction of the store: when it takes a write,
// the writes queued behind it, and those queued while the transaction
// runs, up to maxBatch and the next flush, go in the same transaction.
// A batch is bounded as one write is: by the checkpointer timeout, and
// after a cancel by the grace window. When it fails (nothing of it is
// stored), its writes are made again one at a time, so that those before
// the first failing one are stored and that one's error is recorded, as
// without batching. That holds for a batch cut short by its bound too
// (its writes may each take less than the bound and only together
// outlast it), except in its first write: then that write alone did not
// finish within its bound, and the bound's error is recorded.
type persister struct {
	async   bool
	timeout time.Duration
	ch      chan persistCall
	done    chan struct{}
	// batch, when set, runs fn's writes in one transaction of the store.
	batch func(ctx context.Context, fn func(context.Context) error) error

	// wctx is the caller's context without its cancellation; it ends
	// one grace window after the caller's context does.
	wctx context.Context
	// stopAfter stops the AfterFunc that opens the grace window; window
	// (under graceMu) is the timer that ends it, once opened.
	stopAfter func() bool
	window    *time.Timer
	cancel    context.CancelCauseFunc
	// caller is the caller's context; once it is done, the writes still
	// due share a window of grace that ends at graceEnd (under graceMu),
	// set by whichever notices first: a write, or the AfterFunc that
	// cuts the writes off at its end.
	caller   context.Context
	grace    time.Duration
	graceMu  sync.Mutex
	graceEnd time.Time

	// sendMu guards closed against sends that race with close: a subgraph
	// a node's timeout abandoned may still try to save.
	sendMu sync.RWMutex
	closed bool

	errMu sync.Mutex
	err   error

	// serial bounds the writes of the background goroutine (async
	// durability, async set), which alone calls bounded then.
	serial serialBound
}

type persistCall struct {
	op string
	f  func(context.Context) error
	// flushed, when set, marks a call that only reports that every write
	// queued before it has been made.
	flushed chan struct{}
}

// newPersister returns a run's persister. batch, for async durability
// only, makes writes queued together in one transaction (see persister);
// nil makes each write on its own.
func newPersister(ctx context.Context, async bool, timeout time.Duration, batch func(context.Context, func(context.Context) error) error) *persister {
	if timeout <= 0 {
		timeout = DefaultCheckpointerTimeout
	}
	p := &persister{async: async, timeout: timeout, caller: ctx, grace: cancelGrace(timeout)}
	if async {
		p.batch = batch
	}
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	p.wctx, p.cancel = wctx, cancel
	if ctx.Done() != nil {
		p.stopAfter = context.AfterFunc(ctx, func() {
			cause := fmt.Errorf("%w: the run was cancelled (%v) and its remaining checkpoint writes took longer than the %v they get after a cancel", ErrCheckpointerTimeout, context.Cause(ctx), p.grace)
			end := p.graceDeadline()
			p.graceMu.Lock()
			p.window = time.AfterFunc(time.Until(end), func() { cancel(cause) })
			p.graceMu.Unlock()
		})
	}
	if async {
		p.ch = make(chan persistCall, 64)
		p.done = make(chan struct{})
		p.serial = serialBound{parent: wctx, d: timeout}
		go func() {
			defer close(p.done)
			defer p.serial.close()
			for c := range p.ch {
				if c.flushed != nil {
					close(c.flushed)
					continue
				}
				if p.failed() != nil {
					continue
				}
				if p.batch == nil {
					p.record(p.call(c))
					continue
				}
				if flushed := p.callBatch(c); flushed != nil {
					close(flushed)
				}
			}
		}()
	}
	return p
}

// graceDeadline returns when the writes' grace ends, or the zero time
// while the caller's context is not done.
func (p *persister) graceDeadline() time.Time {
	if p.caller.Err() == nil {
		return time.Time{}
	}
	p.graceMu.Lock()
	defer p.graceMu.Unlock()
	if p.graceEnd.IsZero() {
		p.graceEnd = time.Now().Add(p.grace)
	}
	return p.graceEnd
}

func (p *persister) call(c persistCall) error {
	return p.bounded(c.op, c.f)
}

// bounded runs f under a write's bounds: the checkpointer timeout, and
// after a cancel the grace window.
func (p *persister) bounded(op string, f func(context.Context) error) error {
	ctx := p.wctx
	if end := p.graceDeadline(); !end.IsZero() {
		// After a cancel: the window's end is this call's deadline too,
		// so the store sees how long it has.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	} else if p.async {
		// Async durability: only the background goroutine makes writes.
		return p.serial.call(op, f)
	}
	return boundedCall(ctx, op, p.timeout, f)
}

// callBatch makes first, and the writes queued behind it, in one
// transaction (see persister), and records the first failure. It returns
// the flush request that ended the batch, if one did, for the caller to
// answer once the batch is stored.
func (p *persister) callBatch(first persistCall) (flushed chan struct{}) {
	calls := []persistCall{first}
	// more takes the next queued write without waiting for one.
	more := func() bool {
		if flushed != nil || len(calls) >= maxBatch {
			return false
		}
		select {
		case c, ok := <-p.ch:
			switch {
			case !ok:
				return false
			case c.flushed != nil:
				flushed = c.flushed
				return false
			}
			calls = append(calls, c)
			return true
		default:
			return false
		}
	}
	bounded := false
	// made counts the writes of the batch that returned; the next ones
	// are taken only after the last one did.
	made := 0
	err := p.bounded("checkpoint writes", func(ctx context.Context) error {
		err := p.batch(ctx, func(bctx context.Context) error {
			for i := 0; i < len(calls) || more(); i++ {
				if err := calls[i].f(bctx); err != nil {
					return err
				}
				made++
			}
			return nil
		})
		bounded = err != nil && ctx.Err() != nil
		return err
	})
	if err == nil {
		return flushed
	}
	if bounded && made == 0 {
		// Cut short by its bound in its first write, the batch's only
		// one: that write did not finish within its bound, as alone;
		// asking again would only wait again.
		p.record(fmt.Errorf("%w (in a batch of %d checkpoint writes, the first: %s)", err, len(calls), calls[0].op))
		return flushed
	}
	// Nothing of the batch is stored: make its writes one at a time, to
	// store those before the failing one and record that one's error.
	// A batch cut short by its bound after its first write is made
	// again too: its writes may each take less than the bound, which
	// bounds each write, and only together outlast it; one at a time,
	// each has the bound it has alone, and a store that stopped
	// answering fails the first of them.
	for _, c := range calls {
		if err := p.call(c); err != nil {
			p.record(err)
			break
		}
	}
	return flushed
}

func (p *persister) record(err error) {
	if err == nil {
		return
	}
	p.errMu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.errMu.Unlock()
}

// do makes a write: at once for sync durability, returning its error, or
// queued for async, returning the first failure known so far. After close,
// or after a write failed, it does nothing.
func (p *persister) do(op string, f func(context.Context) error) error {
	if err := p.failed(); err != nil {
		return err
	}
	if p.async {
		p.sendMu.RLock()
		defer p.sendMu.RUnlock()
		if !p.closed {
			p.ch <- persistCall{op: op, f: f}
		}
		return nil
	}
	p.sendMu.RLock()
	closed := p.closed
	p.sendMu.RUnlock()
	if closed {
		return nil
	}
	err := p.call(persistCall{op: op, f: f})
	p.record(err)
	return err
}

// flush waits until every write queued so far has been made, and returns
// the first failure. Sync durability has nothing queued.
func (p *persister) flush() error {
	if p.async {
		done := make(chan struct{})
		p.sendMu.RLock()
		closed := p.closed
		if !closed {
			p.ch <- persistCall{flushed: done}
		}
		p.sendMu.RUnlock()
		if !closed {
			<-done
		}
	}
	return p.failed()
}

// close waits for queued writes and returns the first error. It may be
// called more than once.
func (p *persister) close() error {
	p.sendMu.Lock()
	was := p.closed
	p.closed = true
	p.sendMu.Unlock()
	if !was {
		if p.async {
			close(p.ch)
			<-p.done
		}
		if p.stopAfter != nil {
			p.stopAfter()
			p.graceMu.Lock()
			if p.window != nil {
				p.window.Stop()
			}
			p.graceMu.Unlock()
		}
		p.cancel(context.Canceled)
	}
	return p.failed()
}

func (p *persister) failed() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}
