package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
)

// Extractor learns from a conversation; *Manager implements it.
type Extractor interface {
	Extract(ctx context.Context, user string, msgs []llm.Message) (Result, error)
}

// FailedRoot is the first label of the namespaces where a Reflector keeps
// the conversations it could not learn from, by user, for Replay.
const FailedRoot = "reflection_failed"

// Errors of Submit.
var (
	// ErrQueueFull: the Reflector holds ReflectorOptions.Queue
	// conversations already; this one was not taken.
	ErrQueueFull = errors.New("memory: reflection queue full")
	// ErrClosed: the Reflector was closed.
	ErrClosed = errors.New("memory: reflector closed")
)

// ReflectorOptions configure a Reflector.
type ReflectorOptions struct {
	// Extractors learn from each conversation, in order. Required.
	Extractors []Extractor
	// Queue is the most conversations waiting at once (default 256);
	// Submit refuses more with ErrQueueFull rather than wait.
	Queue int
	// Debounce is how long a conversation waits before it is processed;
	// a newer submission for the same user and thread replaces it and
	// waits again, so a chatty thread is reflected on once it settles
	// (LangMem's after_seconds). Default 0: at once.
	Debounce time.Duration
	// Workers is how many conversations are processed at once (default
	// 1). Conversations of one user never run at the same time.
	Workers int
	// Attempts is how many times an extractor is tried on a conversation
	// (default 3), waiting Backoff, then twice as long, between tries
	// (default 1s).
	Attempts int
	Backoff  time.Duration
	// Timeout bounds one attempt at one conversation (default 5 minutes).
	Timeout time.Duration
	// Failed, when set, keeps the conversations whose extraction failed
	// every attempt, under [FailedRoot, user], so that Replay can try them
	// again; without it they are only logged and counted.
	Failed *store.Store
	// Logger receives failures (default slog.Default()).
	Logger *slog.Logger
}

// ReflectorStats counts what a Reflector did.
type ReflectorStats struct {
	// Submitted counts conversations taken; Superseded those replaced by
	// a newer submission of their thread before they ran.
	Submitted, Superseded int64
	// Processed counts conversations every extractor learned from;
	// Failed those where one failed every attempt; Retries the attempts
	// after a first failure.
	Processed, Failed, Retries int64
	// Dropped counts submissions refused (queue full, closed) and
	// conversations still waiting when Close gave up.
	Dropped int64
	// Kept counts failed or dropped conversations written to
	// ReflectorOptions.Failed.
	Kept int64
}

// Reflector learns from finished conversations in the background (document
// 004's reflection step, LangMem's ReflectionExecutor): Submit queues a
// conversation and returns at once, and workers run the extractors on it.
// A failing extraction is retried, then logged, counted and (with
// ReflectorOptions.Failed) kept for Replay; it never reaches the caller of
// Submit and never touches the conversation itself.
type Reflector struct {
	opts ReflectorOptions

	mu       sync.Mutex
	pending  map[string]*job // by user and thread (or a unique key without a thread)
	busy     map[string]bool // users being processed
	running  int
	flushing int  // Flush calls waiting: everything pending is due now
	closed   bool // no more submissions
	stopped  bool // workers exit once nothing is due
	wake     chan struct{}
	idle     chan struct{} // closed and replaced whenever work drains

	ctx    context.Context // cancelled by Close when it gives up
	cancel context.CancelFunc
	wg     sync.WaitGroup

	submitted, superseded, processed, failed, retries, dropped, kept atomic.Int64
}

type job struct {
	key, user, thread string
	msgs              []llm.Message
	due               time.Time
	// done marks the extractors that succeeded, so a retry runs only
	// the others.
	done []bool
}

// NewReflector starts a Reflector's workers; Close stops them.
func NewReflector(opts ReflectorOptions) (*Reflector, error) {
	if len(opts.Extractors) == 0 || slices.Contains(opts.Extractors, nil) {
		return nil, fmt.Errorf("%w: a Reflector needs extractors", ErrInvalid)
	}
	if opts.Queue < 0 || opts.Debounce < 0 || opts.Workers < 0 || opts.Attempts < 0 || opts.Backoff < 0 || opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: ReflectorOptions must not be negative", ErrInvalid)
	}
	opts.Queue = cmp.Or(opts.Queue, 256)
	opts.Workers = cmp.Or(opts.Workers, 1)
	opts.Attempts = cmp.Or(opts.Attempts, 3)
	opts.Backoff = cmp.Or(opts.Backoff, time.Second)
	opts.Timeout = cmp.Or(opts.Timeout, 5*time.Minute)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Reflector{opts: opts, pending: map[string]*job{}, busy: map[string]bool{}, wake: make(chan struct{}), idle: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for range opts.Workers {
		r.wg.Go(r.work)
	}
	return r, nil
}

// Submit queues user's conversation msgs of thread (empty when there is
// none) for reflection and returns at once. A conversation of the same user
// and thread still waiting is replaced by this one, which holds it (the
// thread's messages so far). It fails only when the queue is full
// (ErrQueueFull) or the Reflector is closed (ErrClosed); either is
// counted as dropped.
func (r *Reflector) Submit(user, thread string, msgs []llm.Message) error {
	if _, err := userLabel(user); err != nil {
		return err
	}
	// Thread ids are the caller's: two users may use the same one, and
	// neither's conversation may replace the other's.
	key := "thread:" + user + "\x00" + thread
	if thread == "" {
		key = "job:" + ids.Random()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.dropped.Add(1)
		return ErrClosed
	}
	if _, ok := r.pending[key]; ok {
		r.superseded.Add(1)
	} else if len(r.pending) >= r.opts.Queue {
		r.dropped.Add(1)
		return fmt.Errorf("%w (%d conversations waiting)", ErrQueueFull, len(r.pending))
	}
	r.pending[key] = &job{key: key, user: user, thread: thread, msgs: slices.Clone(msgs), due: time.Now().Add(r.opts.Debounce), done: make([]bool, len(r.opts.Extractors))}
	r.submitted.Add(1)
	r.signal()
	return nil
}

// signal wakes every waiting worker; r.mu is held.
func (r *Reflector) signal() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// Flush processes every waiting conversation now, debounce or not, and
// returns when nothing is waiting or running, or when ctx ends.
func (r *Reflector) Flush(ctx context.Context) error {
	r.mu.Lock()
	r.flushing++
	r.signal()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.flushing--
		r.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		if len(r.pending) == 0 && r.running == 0 {
			r.mu.Unlock()
			return nil
		}
		idle := r.idle
		r.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops taking conversations, processes those waiting (as Flush),
// and stops the workers. If ctx ends first, the attempts under way are
// cancelled and the conversations not yet learned from are counted as
// dropped and kept in ReflectorOptions.Failed when it is set.
func (r *Reflector) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	err := r.Flush(ctx)
	r.mu.Lock()
	r.stopped = true
	left := make([]*job, 0, len(r.pending))
	for _, j := range r.pending {
		left = append(left, j)
	}
	clear(r.pending)
	r.signal()
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	for _, j := range left {
		r.dropped.Add(1)
		r.keep(j, fmt.Errorf("reflector closed before the conversation was processed: %w", err))
	}
	return err
}

// Stats returns the counts so far.
func (r *Reflector) Stats() ReflectorStats {
	return ReflectorStats{
		Submitted: r.submitted.Load(), Superseded: r.superseded.Load(),
		Processed: r.processed.Load(), Failed: r.failed.Load(), Retries: r.retries.Load(),
		Dropped: r.dropped.Load(), Kept: r.kept.Load(),
	}
}

func (r *Reflector) work() {
	for {
		j := r.next()
		if j == nil {
			return
		}
		r.run(j)
		r.mu.Lock()
		r.running--
		delete(r.busy, j.user)
		if len(r.pending) == 0 && r.running == 0 {
			close(r.idle)
			r.idle = make(chan struct{})
		}
		r.signal() // a job of this user may now run
		r.mu.Unlock()
	}
}

// next waits for a due conversation whose user is not being processed,
// or returns nil once the Reflector has stopped.
func (r *Reflector) next() *job {
	for {
		r.mu.Lock()
		now := time.Now()
		var pick *job
		var soonest time.Time
		for _, j := range r.pending {
			if r.busy[j.user] {
				continue
			}
			if !j.due.After(now) || r.flushing > 0 {
				if pick == nil || j.due.Before(pick.due) {
					pick = j
				}
			} else if soonest.IsZero() || j.due.Before(soonest) {
				soonest = j.due
			}
		}
		if pick != nil {
			delete(r.pending, pick.key)
			r.busy[pick.user] = true
			r.running++
			r.mu.Unlock()
			return pick
		}
		if r.stopped {
			r.mu.Unlock()
			return nil
		}
		wake := r.wake
		r.mu.Unlock()
		var timer *time.Timer
		var fire <-chan time.Time
		if !soonest.IsZero() {
			timer = time.NewTimer(time.Until(soonest))
			fire = timer.C
		}
		select {
		case <-wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// run tries the extractors that have not yet succeeded on j, up to
// Attempts times each round.
func (r *Reflector) run(j *job) {
	var err error
	wait := r.opts.Backoff
	for attempt := 1; attempt <= r.opts.Attempts; attempt++ {
		if attempt > 1 {
			r.retries.Add(1)
			select {
			case <-time.After(wait):
			case <-r.ctx.Done():
			}
			wait *= 2
		}
		if err = r.attempt(j); err == nil {
			r.processed.Add(1)
			return
		}
		if r.ctx.Err() != nil {
			break
		}
	}
	r.failed.Add(1)
	r.opts.Logger.Error("memory: reflection failed; the conversation was not learned from",
		"user", j.user, "thread", j.thread, "messages", len(j.msgs), "error", err)
	r.keep(j, err)
}

func (r *Reflector) attempt(j *job) error {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	var errs []error
	for i, x := range r.opts.Extractors {
		if j.done[i] {
			continue
		}
		if _, err := x.Extract(ctx, j.user, j.msgs); err != nil {
			errs = append(errs, err)
			continue
		}
		j.done[i] = true
	}
	return errors.Join(errs...)
}

// failedRecord is a kept conversation.
type failedRecord struct {
	User     string        `json:"user"`
	Thread   string        `json:"thread,omitempty"`
	Messages []llm.Message `json:"messages"`
	Error    string        `json:"error"`
	FailedAt time.Time     `json:"failed_at"`
}

// keep writes j to the Failed store, if there is one.
func (r *Reflector) keep(j *job, cause error) {
	if r.opts.Failed == nil {
		return
	}
	u, _ := userLabel(j.user)
	key := j.thread
	if key == "" {
		key = ids.Random()
	}
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	rec := failedRecord{User: j.user, Thread: j.thread, Messages: j.msgs, Error: msg, FailedAt: time.Now().UTC()}
	// A fresh context: keeping a conversation is what must still happen
	// when the reflector's own context was cancelled.
	err := bounded(context.Background(), DefaultTimeout, func(ctx context.Context) error {
		return r.opts.Failed.Put(ctx, []string{FailedRoot, u}, key, rec, store.PutOptions{NoIndex: true, TTL: store.NoTTL})
	})
	if err != nil {
		r.opts.Logger.Error("memory: could not keep a conversation that failed reflection; it is lost to memory",
			"user", j.user, "thread", j.thread, "error", err)
		return
	}
	r.kept.Add(1)
}

// Replay submits again the conversations kept in ReflectorOptions.Failed
// and removes each one it submitted; it returns how many. Submissions the
// queue refuses stay kept.
func (r *Reflector) Replay(ctx context.Context) (int, error) {
	if r.opts.Failed == nil {
		return 0, fmt.Errorf("%w: the Reflector has no Failed store to replay from", ErrInvalid)
	}
	n := 0
	for {
		var items []store.Item
		err := bounded(ctx, DefaultTimeout, func(ctx context.Context) (err error) {
			items, err = r.opts.Failed.Search(ctx, []string{FailedRoot}, store.SearchOptions{Limit: 100, Offset: 0})
			return err
		})
		if err != nil {
			return n, fmt.Errorf("memory: read kept conversations: %w", err)
		}
		progressed := false
		for _, it := range items {
			var rec failedRecord
			if err := it.Decode(&rec); err != nil {
				return n, fmt.Errorf("%w: kept conversation %s: %v", store.ErrCorrupt, it.Key, err)
			}
			// Removed before it is submitted again: a reflection that
			// fails again keeps the conversation anew under the same key
			// (its thread), which a removal after the submission could
			// delete, and the conversation would be lost.
			if err := bounded(ctx, DefaultTimeout, func(ctx context.Context) error { return r.opts.Failed.Delete(ctx, it.Namespace, it.Key) }); err != nil {
				return n, err
			}
			if err := r.Submit(rec.User, rec.Thread, rec.Messages); err != nil {
				// Refused (a full queue, a closed Reflector): kept again as
				// it was, even when ctx has ended.
				if perr := bounded(context.Background(), DefaultTimeout, func(pctx context.Context) error {
					return r.opts.Failed.Put(pctx, it.Namespace, it.Key, rec, store.PutOptions{NoIndex: true, TTL: store.NoTTL})
				}); perr != nil {
					r.opts.Logger.Error("memory: could not keep again a conversation the reflector refused; it is lost to memory",
						"user", rec.User, "thread", rec.Thread, "error", perr)
					return n, errors.Join(err, fmt.Errorf("memory: keeping conversation %s again: %w", it.Key, perr))
				}
				return n, err
			}
			n++
			progressed = true
		}
		if len(items) < 100 || !progressed {
			return n, nil
		}
	}
}

// ReflectionNode returns document 004's reflection_node: a graph node that
// hands the conversation in msgs to r and returns at once, writing nothing.
// The user comes from user (nil: UserFrom), the thread from the run. A
// conversation that cannot be submitted (no user, a full queue) is logged,
// not failed: reflection must never fail or delay an answer.
func ReflectionNode(r *Reflector, msgs *graph.MessagesChannel[llm.Message], user func(ctx context.Context) string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		u := UserFrom(ctx)
		if user != nil {
			u = user(ctx)
		}
		var thread string
		if t, ok := graph.CurrentTask(ctx); ok {
			thread = t.ThreadID
		}
		if u == "" {
			r.opts.Logger.WarnContext(ctx, "memory: reflection skipped: the run names no user (memory.WithUser)", "thread", thread)
			return graph.Update{}, nil
		}
		if err := r.Submit(u, thread, msgs.Get(s)); err != nil {
			r.opts.Logger.WarnContext(ctx, "memory: reflection not queued", "user", u, "thread", thread, "error", err)
		}
		return graph.Update{}, nil
	}
}
