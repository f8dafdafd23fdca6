package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftlabs/weft/checkpoint"
)

// ownThread makes the run the owner of its thread for its length: it takes
// the thread's lease (or uses RunOptions.Lease, or the lease of ctx
// (checkpoint.WithLease) when it is for the run's saver and thread), attaches it to the
// returned context so that every checkpoint write of the run is fenced by
// it, and cancels that context when the lease is lost or its holder is
// asked to stop. The returned function ends ownership and turns the run's
// error into one that says why, when the lease was the cause; it may be
// called more than once, and only the first call counts. Graphs without a
// checkpointer own nothing.
func (g *Graph) ownThread(ctx context.Context, o RunOptions) (context.Context, func(error) error, error) {
	if g.saver == nil {
		return ctx, func(err error) error { return err }, nil
	}
	caller := ctx
	l := o.Lease
	if l == nil {
		// A caller that owns the thread for longer than one run (read,
		// think, then write) attaches its lease to ctx.
		if cl := checkpoint.LeaseFromContext(ctx); cl != nil && cl.Saver() == g.saver && cl.ThreadID() == o.ThreadID {
			l = cl
		}
	}
	held := l != nil
	if held {
		if l.Saver() != g.saver || l.ThreadID() != o.ThreadID {
			return nil, nil, fmt.Errorf("%w: RunOptions.Lease is for thread %q of another or the same checkpointer; the run is on thread %q of the graph's checkpointer", ErrInvalidInput, l.ThreadID(), o.ThreadID)
		}
		if err := l.Err(); err != nil {
			return nil, nil, fmt.Errorf("graph: RunOptions.Lease: %w", err)
		}
	} else {
		var err error
		l, err = g.saver.Acquire(ctx, o.ThreadID, checkpoint.LeaseOptions{TTL: o.LeaseTTL, Wait: o.Busy == BusyWait, OnWait: o.OnBusy})
		if err != nil {
			return nil, nil, fmt.Errorf("graph: %w", err)
		}
	}
	ctx, cancel := context.WithCancelCause(checkpoint.WithLease(ctx, l))
	stop := context.AfterFunc(l.Context(), func() { cancel(l.Err()) })
	ended := false
	return ctx, func(err error) error {
		if ended {
			return err
		}
		ended = true
		stop()
		cancel(nil)
		lerr := l.Err()
		if !held {
			// A failed release leaves the lease to expire: nothing is lost.
			// Release bounds its own wait; a cancelled run waits at most
			// the grace its writes had.
			rctx := context.WithoutCancel(caller)
			if caller.Err() != nil {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, cancelGrace(g.saverTimeout))
				defer cancel()
			}
			_ = l.Release(rctx)
		}
		// A run that lost its thread reports it even when it got to the end:
		// some of its writes may have been refused. A cancel request that
		// came after the run finished changes nothing.
		if lerr != nil && (err != nil || errors.Is(lerr, checkpoint.ErrLeaseLost)) {
			return fmt.Errorf("graph: run on thread %q stopped: %w", o.ThreadID, lerr)
		}
		return err
	}, nil
}
