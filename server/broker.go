package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// Event is one event of a run's stream, as the API sends it over SSE.
type Event struct {
	// ID numbers a run's events from 0.
	ID int
	// Name is the SSE event name: "metadata" first, then the stream mode
	// ("values", "updates", "messages" for messages-tuple...), named
	// "mode|namespace" for a subgraph's events, and "error" for a failure.
	Name string
	// Data is the event's JSON.
	Data json.RawMessage
}

// Broker carries runs' events from the goroutine executing a run to the
// requests streaming it. The in-process broker (the default) serves the
// requests of the process executing the run; a broker shared by several
// processes lets a client stream a run from any of them.
type Broker interface {
	// Open starts the stream of a run, before anything is published.
	Open(runID string) error
	// Publish appends ev to a run's stream; ev.ID is set by the broker.
	Publish(runID string, ev Event) error
	// Close ends a run's stream: readers get the events left, then the
	// end. The events are kept for late readers for retain (0: the stream
	// goes once its current readers are done).
	Close(runID string, retain time.Duration) error
	// Subscribe yields the run's events after event id after (-1: from
	// the first one kept; FromNow: only those published from now on), in
	// batches of those available at once, then those published later,
	// until the stream ends or ctx does. ok is false when the broker has
	// no stream for the run.
	Subscribe(ctx context.Context, runID string, after int) (events iter.Seq2[[]Event, error], ok bool)
}

// cancelRelay is a Broker that also carries cancels between processes
// (the Redis one): a cancel of a run another process executes reaches it
// at once, rather than at its lease's next renewal.
type cancelRelay interface {
	// RelayCancel asks the process executing runID to stop it.
	RelayCancel(ctx context.Context, runID string) error
	// ListenCancels calls stop for each cancel relayed, until ctx ends.
	ListenCancels(ctx context.Context, stop func(runID string))
}

// resultKeeper is a Broker that also keeps, with a run's stream, what a
// join or a wait answers for it (the Redis one): a join through another
// process answers what one through the run's process does.
type resultKeeper interface {
	// CloseWithResult is Close, keeping result (nil: none) as long as the
	// stream.
	CloseWithResult(runID string, retain time.Duration, result []byte) error
	// Result is the result kept for a run; ok is false when none is.
	Result(ctx context.Context, runID string) (result []byte, ok bool, err error)
}

// keptReader is a Broker that also reads the events a run's stream keeps
// without waiting for more (both of the package's brokers): a thread's
// stream replays its runs' kept events run after run, in order, before it
// follows those still going.
type keptReader interface {
	// Kept returns the events of runID's stream after event id after (-1:
	// from the first one kept), whether the stream ended after them, and,
	// when it did not, the stream's events after them as Subscribe yields
	// them. ok is false when the broker has no stream for the run; err is
	// ErrStreamTrimmed when events after after were dropped.
	Kept(ctx context.Context, runID string, after int) (kept []Event, ended bool, rest iter.Seq2[[]Event, error], ok bool, err error)
}

// FromNow, as Subscribe's after, reads only the events published from
// now on.
const FromNow = -2

// ErrStreamTrimmed means a reader fell so far behind a run's stream that
// the events it had not read were dropped to bound memory.
var ErrStreamTrimmed = errors.New("server: the run's stream dropped events this reader had not read yet")

// Bounds of the in-process broker.
const (
	// maxStreamBytes bounds the events kept for one run: past it the
	// oldest are dropped.
	maxStreamBytes = 16 << 20
	// maxRetainedBytes bounds the events kept for ended runs: past it the
	// oldest ended streams go before their retention is over.
	maxRetainedBytes = 128 << 20
)

// memoryBroker is the in-process Broker.
type memoryBroker struct {
	mu       sync.Mutex
	streams  map[string]*memStream
	retained []*memStream // ended streams kept, oldest first
	retBytes int
	now      func() time.Time
}

// NewMemoryBroker returns the in-process Broker a Server uses by default:
// a run's events are kept in memory, bounded, while the run goes and, for
// a resumable run, for its retention after it ends.
func NewMemoryBroker() Broker { return newMemoryBroker() }

func newMemoryBroker() *memoryBroker {
	return &memoryBroker{streams: map[string]*memStream{}, now: time.Now}
}

type memStream struct {
	id     string
	mu     sync.Mutex
	events []Event
	first  int // id of events[0]
	next   int // id of the next event
	bytes  int
	closed bool
	// wake closes when events are published or the stream closes, if a
	// reader took it to wait on (waited): events published while no
	// reader waits (a burst, while the reader writes the first ones)
	// make no new channel each.
	wake     chan struct{}
	waited   bool
	expireAt time.Time
}

func (b *memoryBroker) Open(runID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pruneLocked()
	if _, ok := b.streams[runID]; ok {
		return fmt.Errorf("server: the stream of run %s is open already", runID)
	}
	// Room for a short run's events at once, instead of growing the
	// list through five sizes for the usual dozen.
	b.streams[runID] = &memStream{id: runID, wake: make(chan struct{}), events: make([]Event, 0, 16)}
	return nil
}

func (b *memoryBroker) stream(runID string) *memStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[runID]
}

func (b *memoryBroker) Publish(runID string, ev Event) error {
	st := b.stream(runID)
	if st == nil {
		return fmt.Errorf("server: no open stream for run %s", runID)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return fmt.Errorf("server: the stream of run %s is closed", runID)
	}
	ev.ID = st.next
	st.next++
	st.events = append(st.events, ev)
	st.bytes += len(ev.Data) + len(ev.Name)
	for st.bytes > maxStreamBytes && len(st.events) > 1 {
		st.bytes -= len(st.events[0].Data) + len(st.events[0].Name)
		st.events[0] = Event{}
		st.events = st.events[1:]
		st.first++
	}
	if st.waited {
		close(st.wake)
		st.wake, st.waited = make(chan struct{}), false
	}
	return nil
}

func (b *memoryBroker) Close(runID string, retain time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.streams[runID]
	if st == nil {
		return nil
	}
	st.mu.Lock()
	st.closed = true
	close(st.wake)
	st.wake, st.waited = make(chan struct{}), false
	size := st.bytes
	st.mu.Unlock()
	if retain <= 0 {
		delete(b.streams, runID)
	} else {
		st.expireAt = b.now().Add(retain)
		b.retained = append(b.retained, st)
		b.retBytes += size
	}
	b.pruneLocked()
	return nil
}

// pruneLocked drops ended streams whose retention is over, and the oldest
// while they hold too much.
func (b *memoryBroker) pruneLocked() {
	now := b.now()
	for len(b.retained) > 0 {
		st := b.retained[0]
		if !now.After(st.expireAt) && b.retBytes <= maxRetainedBytes {
			break
		}
		b.retained[0] = nil
		b.retained = b.retained[1:]
		b.retBytes -= st.bytes
		if b.streams[st.id] == st {
			delete(b.streams, st.id)
		}
	}
}

func (b *memoryBroker) Subscribe(ctx context.Context, runID string, after int) (iter.Seq2[[]Event, error], bool) {
	return b.subscribe(ctx, runID, after, nil)
}

// subscribe is Subscribe, calling idle (when not nil) each time the
// stream is about to wait for events: the reader has had every event
// published so far. An error from idle ends the stream with that error.
func (b *memoryBroker) subscribe(ctx context.Context, runID string, after int, idle func() error) (iter.Seq2[[]Event, error], bool) {
	st := b.stream(runID)
	if st == nil {
		return nil, false
	}
	return b.read(ctx, st, after, idle), true
}

// read is subscribe on a stream found.
func (b *memoryBroker) read(ctx context.Context, st *memStream, after int, idle func() error) iter.Seq2[[]Event, error] {
	next := after + 1
	if after < -1 {
		st.mu.Lock()
		next = st.next
		st.mu.Unlock()
	}
	return func(yield func([]Event, error) bool) {
		for {
			st.mu.Lock()
			batch, from, ok := st.keptLocked(next, after)
			if !ok {
				st.mu.Unlock()
				yield(nil, ErrStreamTrimmed)
				return
			}
			next = from
			closed, wake := st.closed, st.wake
			if len(batch) == 0 && !closed {
				st.waited = true // it waits on wake below
			}
			st.mu.Unlock()
			if len(batch) > 0 {
				next = batch[len(batch)-1].ID + 1
				if !yield(batch, nil) {
					return
				}
				continue
			}
			if closed {
				return
			}
			if idle != nil {
				if err := idle(); err != nil {
					yield(nil, err)
					return
				}
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
}

// keptLocked returns a copy of the events st keeps from event id next on
// (st.mu held), and next itself, moved up to the first event kept when a
// reader from the first one (after -1) finds the earliest trimmed; ok is
// false when events a reader after after wants were trimmed.
func (st *memStream) keptLocked(next, after int) (events []Event, from int, ok bool) {
	if next < st.first {
		if after != -1 || next > 0 {
			return nil, next, false
		}
		next = st.first
	}
	if i := next - st.first; i < len(st.events) {
		events = append([]Event(nil), st.events[i:]...)
	}
	return events, next, true
}

// Kept implements keptReader.
func (b *memoryBroker) Kept(ctx context.Context, runID string, after int) ([]Event, bool, iter.Seq2[[]Event, error], bool, error) {
	st := b.stream(runID)
	if st == nil {
		return nil, false, nil, false, nil
	}
	st.mu.Lock()
	kept, _, ok := st.keptLocked(after+1, after)
	if !ok {
		st.mu.Unlock()
		return nil, false, nil, true, ErrStreamTrimmed
	}
	last, ended := st.next-1, st.closed
	st.mu.Unlock()
	if ended {
		return kept, true, nil, true, nil
	}
	// The rest from the same stream: a run that ends now is read to its
	// end, even once its stream left the broker's map.
	return kept, false, b.read(ctx, st, max(last, after), nil), true, nil
}
