package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/weftlabs/weft/internal/ids"
)

// Thread ownership.
//
// A run owns its thread while it runs: it holds the thread's lease, a row
// (or map entry) naming an owner token and an expiry. The holder renews the
// lease in the background; a holder that dies stops renewing, and once the
// lease has expired another run may take it. Every Put and PutWrites made
// with a lease in its context is fenced: the driver checks, in the same
// transaction as the write, that the lease still names this owner, and
// otherwise stores nothing and returns ErrLeaseLost. So a run that lost its
// thread, however late it notices, never writes over the new owner's state.

// Lease errors.
var (
	// ErrThreadBusy means another run holds the thread. The error is a
	// *BusyError naming the thread and the holder.
	ErrThreadBusy = errors.New("checkpoint: thread is busy")
	// ErrLeaseLost means the run no longer owns its thread: its lease
	// expired and another run took it, or it was released. Nothing was
	// written by the call that returned it.
	ErrLeaseLost = errors.New("checkpoint: thread lease lost")
	// ErrCancelRequested means another caller asked the lease's holder to
	// stop (Saver.RequestCancel). The holder still owns the thread until
	// it releases the lease.
	ErrCancelRequested = errors.New("checkpoint: cancel requested for the thread's run")
)

// DefaultLeaseTTL is how long a lease lasts without renewal unless
// LeaseOptions.TTL says otherwise: the longest a crashed holder blocks its
// thread.
const DefaultLeaseTTL = 20 * time.Second

// BusyError reports a thread another run holds. errors.Is(err,
// ErrThreadBusy) is true for it.
type BusyError struct {
	ThreadID string
	// Owner is the holder's owner token and RunID the run id it gave.
	Owner, RunID string
	// ExpiresAt is when the holder's lease expires unless it renews it,
	// by the clock of the store (the database server for PostgreSQL).
	ExpiresAt time.Time
}

func (e *BusyError) Error() string {
	holder := "another run"
	if e.RunID != "" {
		holder = fmt.Sprintf("run %q", e.RunID)
	}
	return fmt.Sprintf("checkpoint: thread %q is busy: %s owns it (lease expires %s unless renewed)", e.ThreadID, holder, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrThreadBusy) true.
func (e *BusyError) Unwrap() error { return ErrThreadBusy }

// LeaseRequest is what a driver needs to take a lease.
type LeaseRequest struct {
	// Owner is a token unique to the holder; RunID is informational.
	Owner, RunID string
	// TTL is how long the lease lasts from now without renewal.
	TTL time.Duration
}

// LeaseState is a driver's answer to a renewal.
type LeaseState struct {
	// CancelRequested is set once Saver.RequestCancel asked the holder to
	// stop.
	CancelRequested bool
}

// LeaseDriver is the part of Driver that keeps thread leases. Times are
// the store's own clock: the server's for PostgreSQL, so that processes on
// machines with skewed clocks agree on expiry.
type LeaseDriver interface {
	// AcquireLease takes thread's lease for req.Owner when it is free,
	// expired or already req.Owner's, in one atomic step. When another
	// owner holds it, it returns a *BusyError.
	AcquireLease(ctx context.Context, threadID string, req LeaseRequest) error
	// RenewLease extends owner's lease by ttl from now. It returns
	// ErrLeaseLost when the lease is no longer owner's.
	RenewLease(ctx context.Context, threadID, owner string, ttl time.Duration) (LeaseState, error)
	// ReleaseLease gives up owner's lease; releasing a lease one does not
	// hold does nothing.
	ReleaseLease(ctx context.Context, threadID, owner string) error
	// RequestLeaseCancel marks the thread's unexpired lease as asked to
	// stop, and reports whether there was one.
	RequestLeaseCancel(ctx context.Context, threadID string) (bool, error)
}

// leaseKey is the context key of the leases that fence writes: a
// *leaseList, newest first.
type leaseKey struct{}

type leaseList struct {
	l    *Lease
	next *leaseList
}

// fenceKey is the context key of the owners a Saver call is fenced by (a
// fenceSet), set by the Saver for its driver.
type fenceKey struct{}

// fenceSet maps a thread id to the owner token its writes are fenced with.
type fenceSet map[string]string

// fenceOne is the context of a Saver call on one thread (Put, PutWrites,
// Batch) and the fence of its driver, in one allocation: those calls are
// made for every step of every run, and a fenceSet in a context.WithValue
// took four. Its Value answers fenceKey with itself and defers every other
// key to its parent, as context.WithValue's context does, so contexts
// derived from it find their parent's cancellation as usual.
type fenceOne struct {
	context.Context
	thread, owner string
	// fenced is false when the saver holds no lease of thread in the
	// caller's context: the write is not fenced.
	fenced bool
}

// Value returns the fence for fenceKey and the parent's value otherwise.
func (c *fenceOne) Value(key any) any {
	if key == (fenceKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// String names the context for debugging, as context.WithValue's does.
func (c *fenceOne) String() string {
	return fmt.Sprintf("%v.WithFence(%q)", c.Context, c.thread)
}

// fenceThread is fence for the one thread a write is made to, with the
// lease it is fenced by, or nil.
func (s *Saver) fenceThread(ctx context.Context, threadID string) (context.Context, *Lease, error) {
	l := s.leaseFor(ctx, threadID)
	if l == nil {
		return &fenceOne{Context: ctx, thread: threadID}, nil, nil
	}
	if err := l.lost(); err != nil {
		return ctx, nil, err
	}
	return &fenceOne{Context: ctx, thread: threadID, owner: l.owner, fenced: true}, l, nil
}

// WithLease returns a context whose writes on l's saver and thread are
// fenced by l: Put, PutWrites and the whole-thread operations (CopyThread,
// DeleteThread, Prune, Rewind) store nothing and fail with ErrLeaseLost
// once l is no longer held. The graph runtime does this for its runs;
// callers writing through the Saver directly may too. Leases of several
// threads may be attached in turn; for a thread, the last one attached
// counts. A nil l detaches every lease.
func WithLease(ctx context.Context, l *Lease) context.Context {
	if l == nil {
		return context.WithValue(ctx, leaseKey{}, (*leaseList)(nil))
	}
	next, _ := ctx.Value(leaseKey{}).(*leaseList)
	return context.WithValue(ctx, leaseKey{}, &leaseList{l: l, next: next})
}

// LeaseFromContext returns the lease WithLease attached last, or nil.
func LeaseFromContext(ctx context.Context) *Lease {
	if ll, _ := ctx.Value(leaseKey{}).(*leaseList); ll != nil {
		return ll.l
	}
	return nil
}

// leaseFor returns the lease of ctx for s and threadID, or nil.
func (s *Saver) leaseFor(ctx context.Context, threadID string) *Lease {
	for ll, _ := ctx.Value(leaseKey{}).(*leaseList); ll != nil; ll = ll.next {
		if ll.l.s == s && ll.l.thread == threadID {
			return ll.l
		}
	}
	return nil
}

// FenceOwner returns the owner token writes to threadID must be fenced
// with: that of the context's lease for this thread. Drivers call it in
// every write (Put, PutWrites and the whole-thread operations) and, when
// ok, check inside the write's transaction that the lease still names
// owner.
func FenceOwner(ctx context.Context, threadID string) (owner string, ok bool) {
	switch fs := ctx.Value(fenceKey{}).(type) {
	case *fenceOne:
		if fs.fenced && fs.thread == threadID {
			return fs.owner, true
		}
		return "", false
	case fenceSet:
		owner, ok = fs[threadID]
		return owner, ok
	}
	// A driver called directly, not through a Saver.
	for ll, _ := ctx.Value(leaseKey{}).(*leaseList); ll != nil; ll = ll.next {
		if ll.l.thread == threadID {
			return ll.l.owner, true
		}
	}
	return "", false
}

// fence prepares a write to the given threads: the driver sees only the
// leases of this saver for them (FenceOwner), and the write is refused at
// once when one of them is known to be lost. It returns those leases.
func (s *Saver) fence(ctx context.Context, threadIDs ...string) (context.Context, []*Lease, error) {
	var ls []*Lease
	fs := fenceSet{}
	for _, th := range threadIDs {
		l := s.leaseFor(ctx, th)
		if l == nil {
			continue
		}
		if err := l.lost(); err != nil {
			return ctx, nil, err
		}
		ls = append(ls, l)
		fs[th] = l.owner
	}
	return context.WithValue(ctx, fenceKey{}, fs), ls, nil
}

// noteLostOne is noteLost for the lease of a write to one thread, or nil.
func noteLostOne(l *Lease, err error) {
	if l != nil && errors.Is(err, ErrLeaseLost) {
		l.markLost(err)
	}
}

// noteLost marks the leases lost when err says a fenced write found one
// gone.
func noteLost(ls []*Lease, err error) {
	if !errors.Is(err, ErrLeaseLost) {
		return
	}
	for _, l := range ls {
		l.markLost(err)
	}
}

// own makes a whole-thread operation the owner of its threads while it
// runs: a thread whose lease ctx carries (WithLease) is fenced by it;
// any other is taken for the operation at once, failing with a
// *BusyError when another run holds it, and given back by done. done
// also marks the leases lost when the operation's error says so, and
// returns err.
func (s *Saver) own(ctx context.Context, op string, threadIDs ...string) (context.Context, func(error) error, error) {
	var taken []*Lease
	release := func() {
		for _, l := range taken {
			// A failed release leaves the lease to expire; Release
			// bounds its own wait.
			_ = l.Release(context.WithoutCancel(ctx))
		}
	}
	for _, th := range threadIDs {
		if s.leaseFor(ctx, th) != nil {
			continue
		}
		l, err := s.Acquire(ctx, th, LeaseOptions{RunID: op})
		if err != nil {
			release()
			return nil, nil, err
		}
		taken = append(taken, l)
		ctx = WithLease(ctx, l)
	}
	ctx, ls, err := s.fence(ctx, threadIDs...)
	if err != nil {
		release()
		return nil, nil, err
	}
	return ctx, func(err error) error {
		noteLost(ls, err)
		release()
		return err
	}, nil
}

// LeaseOptions configures Saver.Acquire.
type LeaseOptions struct {
	// TTL is how long the lease lasts without renewal; it is renewed every
	// TTL/3 while held. 0 means DefaultLeaseTTL.
	TTL time.Duration
	// Wait makes Acquire wait, polling with backoff, until the thread is
	// free or ctx ends. Without it a busy thread fails at once with a
	// *BusyError.
	Wait bool
	// OnWait, if set, is called once when Acquire starts waiting, with the
	// current holder.
	OnWait func(*BusyError)
	// Owner is the holder's token; empty means a new random one. Two
	// acquisitions with the same token share the lease.
	Owner string
	// RunID is recorded with the lease and shown to runs that find the
	// thread busy.
	RunID string
}

// maxLeasePoll caps the wait between two attempts of a waiting Acquire.
const maxLeasePoll = 100 * time.Millisecond

// Acquire takes threadID's lease, waiting for it when opts.Wait is set.
// The returned lease renews itself until Release; its Done channel closes
// when it is lost or its holder is asked to cancel.
func (s *Saver) Acquire(ctx context.Context, threadID string, opts LeaseOptions) (*Lease, error) {
	if err := needThread("acquire", threadID); err != nil {
		return nil, err
	}
	if opts.TTL < 0 {
		return nil, fmt.Errorf("%w: lease TTL must be 0 (default %s) or positive, got %s", ErrInvalid, DefaultLeaseTTL, opts.TTL)
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultLeaseTTL
	}
	if opts.Owner == "" {
		opts.Owner = ids.Random()
	}
	req := LeaseRequest{Owner: opts.Owner, RunID: opts.RunID, TTL: opts.TTL}
	attempt := func() (*Lease, error) {
		start := time.Now()
		// Each attempt is bounded by the TTL: a store that does not answer
		// within it could not keep the lease anyway.
		actx, cancel := context.WithTimeout(ctx, opts.TTL)
		defer cancel()
		if err := s.d.AcquireLease(actx, threadID, req); err != nil {
			return nil, err
		}
		return s.newLease(threadID, opts, start), nil
	}
	l, err := attempt()
	var be *BusyError
	if err == nil || !opts.Wait || !errors.As(err, &be) {
		return l, err
	}
	if opts.OnWait != nil {
		opts.OnWait(be)
	}
	stopped := func() error { return fmt.Errorf("%w (stopped waiting: %w)", be, context.Cause(ctx)) }
	// This process's waiters for the thread take turns polling the store,
	// so a crowd of them costs the store one poller, not one each.
	tw := s.waiters.join(threadID)
	defer s.waiters.leave(threadID)
	select {
	case tw.turn <- struct{}{}:
		defer func() { <-tw.turn }()
	case <-ctx.Done():
		return nil, stopped()
	}
	poll := 2 * time.Millisecond
	for {
		// Taken before the attempt, so a release between the attempt and
		// the wait is not missed.
		rel := s.waiters.releasedCh(tw)
		l, err := attempt()
		if err == nil {
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, stopped()
		}
		if !errors.As(err, &be) {
			return nil, err
		}
		// A release in this process ends the wait at once; other
		// processes' releases are seen at the next poll. Jitter keeps
		// processes from polling in lockstep.
		t := time.NewTimer(poll/2 + rand.N(poll/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, stopped()
		case <-t.C:
			poll = min(poll*2, maxLeasePoll)
		case <-rel:
			t.Stop()
			poll = 2 * time.Millisecond
		}
	}
}

// AdoptLease returns the lease of threadID that opts.Owner already holds
// because the caller took it in a transaction of its own, with the same
// conditional upsert as Acquire on the store's lease table (a server takes
// its run's thread in the write that creates the run). It writes nothing:
// the lease renews itself from now on, as one Acquire returns does, and is
// given up with Release or ReleaseWith. acquired is when the caller's
// write began, by this process's clock: the lease counts itself expired
// one TTL after it unless renewed. opts.Owner is required; opts.TTL must
// be the TTL the caller wrote (0 means DefaultLeaseTTL); Wait and OnWait
// do not apply. A caller that adopts a lease it does not hold gets a lease
// that is lost at its first renewal or fenced write, never a thread it
// does not own.
func (s *Saver) AdoptLease(threadID string, opts LeaseOptions, acquired time.Time) (*Lease, error) {
	if err := needThread("adopt lease", threadID); err != nil {
		return nil, err
	}
	if opts.Owner == "" {
		return nil, fmt.Errorf("%w: adopting the lease of thread %q needs the owner token it was taken with", ErrInvalid, threadID)
	}
	if opts.TTL < 0 {
		return nil, fmt.Errorf("%w: lease TTL must be 0 (default %s) or positive, got %s", ErrInvalid, DefaultLeaseTTL, opts.TTL)
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultLeaseTTL
	}
	return s.newLease(threadID, opts, acquired), nil
}

// RequestCancel asks the run holding threadID's lease to stop: the
// holder's lease sees the request at its next renewal and its Done channel
// closes with ErrCancelRequested. It reports whether a run held the
// thread. A server's "interrupt" and "rollback" strategies call it, then
// wait for the lease.
func (s *Saver) RequestCancel(ctx context.Context, threadID string) (bool, error) {
	if err := needThread("request cancel", threadID); err != nil {
		return false, err
	}
	return s.d.RequestLeaseCancel(ctx, threadID)
}

// Lease is a held thread lease. It renews itself in the background until
// Release. Methods are safe for concurrent use.
type Lease struct {
	s      *Saver
	thread string
	owner  string
	runID  string
	ttl    time.Duration
	every  time.Duration

	// ctx is cancelled, with err as its cause, when the lease ends.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu  sync.Mutex
	err error // why ctx ended
	// lostErr is set when the lease is known lost; writes are then
	// refused without asking the store.
	lostErr  error
	released bool
	// timer fires the next renewal; deadline is when the lease expires
	// unless renewed, by this process's clock.
	timer    *time.Timer
	deadline time.Time
}

func (s *Saver) newLease(thread string, opts LeaseOptions, acquired time.Time) *Lease {
	l := &Lease{s: s, thread: thread, owner: opts.Owner, runID: opts.RunID, ttl: opts.TTL, every: max(opts.TTL/3, time.Millisecond)}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	l.mu.Lock()
	l.deadline = acquired.Add(l.ttl)
	// A timer, not a goroutine: a lease that lives shorter than a third
	// of its TTL (most runs) costs no goroutine at all.
	l.timer = time.AfterFunc(l.every, l.renew)
	l.mu.Unlock()
	return l
}

// ThreadID returns the thread the lease is for.
func (l *Lease) ThreadID() string { return l.thread }

// Owner returns the lease's owner token.
func (l *Lease) Owner() string { return l.owner }

// Saver returns the saver the lease was taken from.
func (l *Lease) Saver() *Saver { return l.s }

// Done is closed when the lease ends: it was lost (Err wraps
// ErrLeaseLost), its holder was asked to stop (Err wraps
// ErrCancelRequested), or it was released.
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Context returns a context that is cancelled when Done closes, with Err
// as its cause: to stop work that must not outlive the lease
// (context.AfterFunc).
func (l *Lease) Context() context.Context { return l.ctx }

// Err returns why Done closed, or nil while it is open.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Lease) lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// signal ends the lease's context with err; a loss replaces a cancel
// request as the reason. l.mu must be held.
func (l *Lease) signalLocked(err error, lost bool) {
	if lost && l.lostErr == nil {
		l.lostErr = err
	}
	if l.err == nil || (lost && !errors.Is(l.err, ErrLeaseLost)) {
		l.err = err
		l.cancel(err)
	}
}

// markLost records that a fenced write was refused with err, which wraps
// ErrLeaseLost.
func (l *Lease) markLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.signalLocked(err, true)
}

// renew runs on the timer, every TTL/3. A renewal that fails for a reason
// other than loss is retried; once the lease's expiry passes without a
// successful renewal, it is counted lost.
func (l *Lease) renew() {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return
	}
	deadline := l.deadline
	l.mu.Unlock()
	start := time.Now()
	// A renewal may take until the lease would expire; past that it is
	// lost anyway.
	ctx, cancel := context.WithTimeout(context.Background(), max(l.every, time.Until(deadline)))
	st, err := l.s.d.RenewLease(ctx, l.thread, l.owner, l.ttl)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return
	}
	switch {
	case err == nil:
		l.deadline = start.Add(l.ttl)
		if st.CancelRequested {
			l.signalLocked(fmt.Errorf("%w: thread %q", ErrCancelRequested, l.thread), false)
		}
	case errors.Is(err, ErrLeaseLost):
		l.signalLocked(err, true)
		return
	case time.Now().After(deadline):
		l.signalLocked(fmt.Errorf("%w: thread %q: the lease expired while it could not be renewed: %w", ErrLeaseLost, l.thread, err), true)
		return
	}
	l.timer.Reset(l.every)
}

// Release stops renewing and gives the thread up, waiting at most the
// lease's TTL for the store (an unreleased lease expires by then). It is
// safe to call more than once; afterwards Err wraps ErrLeaseLost and
// writes fenced by the lease fail with it.
func (l *Lease) Release(ctx context.Context) error {
	if !l.stop() {
		return nil
	}
	err := l.releaseInStore(ctx)
	l.s.waiters.wake(l.thread)
	return err
}

// ReleaseWith gives the thread up in a write of the caller's: release
// must delete the lease's row (ThreadID, Owner) of the store's lease
// table in a transaction of its own writes, so that both commit or
// neither does (a server records a run's end and gives its thread up at
// once). The lease stops renewing first, as with Release. If release
// fails, the lease is released as Release does, and the error returned
// is that release's (release's own error is its caller's to tell).
// release is bounded by ctx only. It does nothing after Release or
// ReleaseWith.
func (l *Lease) ReleaseWith(ctx context.Context, release func(ctx context.Context) error) error {
	if !l.stop() {
		return nil
	}
	var err error
	if release(ctx) != nil {
		err = l.releaseInStore(ctx)
	}
	l.s.waiters.wake(l.thread)
	return err
}

// stop stops renewing the lease and ends its context, once; it reports
// whether this call did.
func (l *Lease) stop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return false
	}
	l.released = true
	l.timer.Stop()
	l.signalLocked(fmt.Errorf("%w: thread %q: the lease was released", ErrLeaseLost, l.thread), true)
	return true
}

// releaseInStore deletes the lease from the store, bounded by the TTL:
// past it the lease is gone anyway.
func (l *Lease) releaseInStore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.ttl)
	defer cancel()
	return l.s.d.ReleaseLease(ctx, l.thread, l.owner)
}

// leaseWaiters coordinates this process's waiting Acquires, per thread:
// one polls the store at a time, and a release here wakes it at once.
type leaseWaiters struct {
	mu sync.Mutex
	m  map[string]*threadWaiters
}

type threadWaiters struct {
	// turn is held by the waiter that polls.
	turn chan struct{}
	// rel is closed at the next release of the thread's lease here.
	rel  chan struct{}
	refs int
}

func (w *leaseWaiters) join(threadID string) *threadWaiters {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[string]*threadWaiters)
	}
	tw := w.m[threadID]
	if tw == nil {
		tw = &threadWaiters{turn: make(chan struct{}, 1), rel: make(chan struct{})}
		w.m[threadID] = tw
	}
	tw.refs++
	return tw
}

func (w *leaseWaiters) leave(threadID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tw := w.m[threadID]; tw != nil {
		if tw.refs--; tw.refs == 0 {
			delete(w.m, threadID)
		}
	}
}

func (w *leaseWaiters) releasedCh(tw *threadWaiters) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return tw.rel
}

// wake tells the thread's waiters here that its lease was released.
func (w *leaseWaiters) wake(threadID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tw := w.m[threadID]; tw != nil {
		close(tw.rel)
		tw.rel = make(chan struct{})
	}
}
