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
	err := f(cctx)
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
type persister struct {
	async   bool
	timeout time.Duration
	ch      chan persistCall
	done    chan struct{}

	// wctx is the caller's context without its cancellation; it ends
	// one grace window after the caller's context does.
	wctx      context.Context
	stopAfter func() bool
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
}

type persistCall struct {
	op string
	f  func(context.Context) error
	// flushed, when set, marks a call that only reports that every write
	// queued before it has been made.
	flushed chan struct{}
}

func newPersister(ctx context.Context, async bool, timeout time.Duration) *persister {
	if timeout <= 0 {
		timeout = DefaultCheckpointerTimeout
	}
	p := &persister{async: async, timeout: timeout, caller: ctx, grace: cancelGrace(timeout)}
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	p.wctx, p.cancel = wctx, cancel
	if ctx.Done() != nil {
		var window *time.Timer
		stop := context.AfterFunc(ctx, func() {
			cause := fmt.Errorf("%w: the run was cancelled (%v) and its remaining checkpoint writes took longer than the %v they get after a cancel", ErrCheckpointerTimeout, context.Cause(ctx), p.grace)
			end := p.graceDeadline()
			p.graceMu.Lock()
			window = time.AfterFunc(time.Until(end), func() { cancel(cause) })
			p.graceMu.Unlock()
		})
		p.stopAfter = func() bool {
			stop()
			p.graceMu.Lock()
			if window != nil {
				window.Stop()
			}
			p.graceMu.Unlock()
			return true
		}
	}
	if async {
		p.ch = make(chan persistCall, 64)
		p.done = make(chan struct{})
		go func() {
			defer close(p.done)
			for c := range p.ch {
				if c.flushed != nil {
					close(c.flushed)
					continue
				}
				if p.failed() != nil {
					continue
				}
				p.record(p.call(c))
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
	ctx := p.wctx
	if end := p.graceDeadline(); !end.IsZero() {
		// After a cancel: the window's end is this call's deadline too,
		// so the store sees how long it has.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	}
	return boundedCall(ctx, c.op, p.timeout, c.f)
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
