package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of RedisBrokerOptions.
const (
	// DefaultBrokerPrefix starts every key the Redis broker writes.
	DefaultBrokerPrefix = "weft:broker:"
	// DefaultBrokerTimeout bounds one call to Redis (a blocking read is
	// bounded by its block time plus this).
	DefaultBrokerTimeout = 2 * time.Second
	// DefaultBrokerBlock is how long one blocking read waits for new
	// events before the reader checks its context and the stream again.
	DefaultBrokerBlock = 2 * time.Second
	// DefaultBrokerActiveTTL is how long a run's stream is kept without a
	// new event while the run goes: a stream whose process died and whose
	// run nobody took over goes after it.
	DefaultBrokerActiveTTL = 24 * time.Hour
)

// publishCooldown is how long publishes skip Redis after one failed:
// a Redis that hangs then costs a run one timeout in that time, not one
// per event.
const publishCooldown = 5 * time.Second

// skipWhileDown is the error of a write (doing names it) skipped since
// Redis failed less than publishCooldown before now; nil otherwise.
func (b *redisBroker) skipWhileDown(now time.Time, doing string) error {
	b.mu.Lock()
	down := now.Before(b.downUntil)
	b.mu.Unlock()
	if down {
		return unavailable(doing, errors.New("skipped: Redis failed less than 5 s ago"))
	}
	return nil
}

// failed makes writes skip Redis for publishCooldown: one just failed.
func (b *redisBroker) failed() {
	b.mu.Lock()
	b.downUntil = time.Now().Add(publishCooldown)
	b.mu.Unlock()
}

// closeGrace is how long the events of a run that is not resumable stay
// after it ends, for the readers that are still behind.
const closeGrace = time.Minute

// readCount bounds the events one read takes.
const readCount = 512

// ErrBrokerUnavailable means the shared broker (Redis) could not be read
// or written: the stream of the run is cut, the run goes on.
var ErrBrokerUnavailable = errors.New("server: the run's event stream is unavailable")

// RedisBrokerOptions configure a Redis broker.
type RedisBrokerOptions struct {
	// Prefix starts every key the broker writes (default
	// DefaultBrokerPrefix); the servers that share streams share a
	// prefix.
	Prefix string
	// Timeout bounds each call to Redis (default DefaultBrokerTimeout).
	Timeout time.Duration
	// Block is how long a reader waits in one blocking read (default
	// DefaultBrokerBlock).
	Block time.Duration
	// ActiveTTL is how long a run's stream lives without new events while
	// the run goes (default DefaultBrokerActiveTTL).
	ActiveTTL time.Duration
	// MaxStreamBytes bounds the events kept for one run: past it the
	// oldest are trimmed (default 16 MiB, as in process).
	MaxStreamBytes int
	// MaxRetainedBytes bounds the events kept, over every process sharing
	// the prefix, for runs that ended: past it the streams that ended
	// first go before their retention is over (default 128 MiB).
	MaxRetainedBytes int
	// Logger is told when Redis fails; nil means slog.Default().
	Logger *slog.Logger
}

// redisBroker is a Broker whose streams are Redis streams, so that any
// process sharing the Redis (and the prefix) serves the stream of a run
// another executes.
//
// A run's events are the entries of the stream at Prefix+"run:"+id, each
// with the Redis id "N-1" for the event id N clients see: a reader
// resuming after event N reads the entries after "N-1", in any process.
// The process executing the run numbers its events; an entry with the
// field "end" closes the stream (and takes a number of its own, never
// sent). A run taken over by another process continues the numbering
// after the stream's last entry. Prefix+"open:"+id says the stream
// exists before its first event.
type redisBroker struct {
	c    redis.UniversalClient
	opts RedisBrokerOptions
	log  *slog.Logger

	mu        sync.Mutex
	streams   map[string]*redisStream
	downUntil time.Time // publishes skip Redis until then
}

// redisStream is what the executing process knows of a run's stream.
type redisStream struct {
	mu         sync.Mutex
	next       int   // id of the next event
	first      int   // id of the oldest event kept
	sizes      []int // sizes of the events kept, from first
	bytes      int
	expiresAt  time.Time // when the key's expiry was last pushed back past
	failedOnce bool
}

// NewRedisBroker returns a Broker that keeps runs' events in Redis
// streams, so that several server processes sharing a database and c
// serve the streams of each other's runs: a client can join a run's
// stream, or resume it with Last-Event-ID, through any of them. nil opts
// means the defaults. Every call to Redis is bounded by opts.Timeout; c
// should be made with ContextTimeoutEnabled so that a reader whose client
// went away stops at once.
func NewRedisBroker(c redis.UniversalClient, opts *RedisBrokerOptions) Broker {
	o := RedisBrokerOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultBrokerPrefix
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultBrokerTimeout
	}
	if o.Block <= 0 {
		o.Block = DefaultBrokerBlock
	}
	if o.ActiveTTL <= 0 {
		o.ActiveTTL = DefaultBrokerActiveTTL
	}
	if o.MaxStreamBytes <= 0 {
		o.MaxStreamBytes = maxStreamBytes
	}
	if o.MaxRetainedBytes <= 0 {
		o.MaxRetainedBytes = maxRetainedBytes
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return &redisBroker{c: c, opts: o, log: log, streams: map[string]*redisStream{}}
}

func (b *redisBroker) streamKey(runID string) string { return b.opts.Prefix + "run:" + runID }
func (b *redisBroker) openKey(runID string) string   { return b.opts.Prefix + "open:" + runID }

// entryID is the Redis id of event id n.
func entryID(n int) string { return strconv.Itoa(n) + "-1" }

// eventID reads the event id of a Redis entry id.
func eventID(id string) (int, error) {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok || seq != "1" {
		return 0, fmt.Errorf("entry id %q: want N-1", id)
	}
	n, err := strconv.Atoi(ms)
	if err != nil || n < 0 || strconv.Itoa(n) != ms {
		return 0, fmt.Errorf("entry id %q: want N-1 with N a non-negative integer", id)
	}
	return n, nil
}

// decodeEntry reads an event from a stream entry; end reports the entry
// that closes the stream.
func decodeEntry(m redis.XMessage) (ev Event, end bool, err error) {
	n, err := eventID(m.ID)
	if err != nil {
		return Event{}, false, err
	}
	if _, ok := m.Values["end"]; ok {
		return Event{ID: n}, true, nil
	}
	name, ok := m.Values["n"].(string)
	if !ok || name == "" {
		return Event{}, false, fmt.Errorf("entry %s: field n (the event name) is missing", m.ID)
	}
	data, ok := m.Values["d"].(string)
	if !ok {
		return Event{}, false, fmt.Errorf("entry %s: field d (the event data) is missing", m.ID)
	}
	return Event{ID: n, Name: name, Data: []byte(data)}, false, nil
}

func (b *redisBroker) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.opts.Timeout)
}

func unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, what, err)
}

func (b *redisBroker) Open(runID string) error {
	b.mu.Lock()
	if _, ok := b.streams[runID]; ok {
		b.mu.Unlock()
		return fmt.Errorf("server: the stream of run %s is open already", runID)
	}
	st := &redisStream{}
	b.streams[runID] = st
	b.mu.Unlock()
	ctx, cancel := b.call(context.Background())
	defer cancel()
	pipe := b.c.Pipeline()
	pipe.Set(ctx, b.openKey(runID), "1", b.opts.ActiveTTL)
	last := pipe.XRevRangeN(ctx, b.streamKey(runID), "+", "-", 1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		// The run goes on; its stream is told unavailable to readers.
		b.log.Warn("server: opening a run's stream in Redis", "run_id", runID, "err", err)
		return nil
	}
	if msgs := last.Val(); len(msgs) > 0 {
		// A run taken over: its events go on after the last one kept.
		if n, err := eventID(msgs[0].ID); err == nil {
			st.mu.Lock()
			st.next, st.first = n+1, n+1
			st.mu.Unlock()
		}
	}
	return nil
}

func (b *redisBroker) stream(runID string) *redisStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[runID]
}

func (b *redisBroker) Publish(runID string, ev Event) error {
	st := b.stream(runID)
	if st == nil {
		return fmt.Errorf("server: no open stream for run %s", runID)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ev.ID = st.next
	st.next++
	size := len(ev.Data) + len(ev.Name)
	st.sizes = append(st.sizes, size)
	st.bytes += size
	trim := false
	for st.bytes > b.opts.MaxStreamBytes && len(st.sizes) > 1 {
		st.bytes -= st.sizes[0]
		st.sizes = st.sizes[1:]
		st.first++
		trim = true
	}
	args := &redis.XAddArgs{
		Stream: b.streamKey(runID),
		ID:     entryID(ev.ID),
		Values: []any{"n", ev.Name, "d", []byte(ev.Data)},
	}
	if trim {
		// Approximate: Redis drops whole nodes of entries, so a run keeps
		// a little more than the bound rather than paying for exactness.
		args.MinID, args.Approx = entryID(st.first), true
	}
	now := time.Now()
	if err := b.skipWhileDown(now, "writing an event"); err != nil {
		return err
	}
	ctx, cancel := b.call(context.Background())
	defer cancel()
	var err error
	if now.Add(b.opts.ActiveTTL / 2).After(st.expiresAt) {
		pipe := b.c.Pipeline()
		pipe.XAdd(ctx, args)
		pipe.PExpire(ctx, args.Stream, b.opts.ActiveTTL)
		pipe.PExpire(ctx, b.openKey(runID), b.opts.ActiveTTL)
		_, err = pipe.Exec(ctx)
		if err == nil {
			st.expiresAt = now.Add(b.opts.ActiveTTL)
		}
	} else {
		err = b.c.XAdd(ctx, args).Err()
	}
	if err != nil {
		b.failed()
		// The event's number is taken all the same: a reader finds the
		// gap and is told it missed events.
		if !st.failedOnce {
			st.failedOnce = true
			b.log.Warn("server: writing a run's event to Redis; readers in other processes miss events", "run_id", runID, "err", err)
		}
		return unavailable("writing an event", err)
	}
	return nil
}

// closeScript closes a run's stream and bounds the streams kept. KEYS:
// the stream, its open key, the sorted set of ended streams (by expiry),
// the hash of their sizes, the total of their sizes. ARGV: the end
// entry's id, the run id, its size, its retention in ms, the bound of the
// total, the prefix of streams, the prefix of open keys, the open key's
// new value ("=" and what a join answers for the run, or "1"). Streams whose
// retention is over leave the accounts (Redis expires them itself);
// while the total is over the bound, the streams that end first go.
var closeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retain = tonumber(ARGV[4])
redis.call('XADD', KEYS[1], ARGV[1], 'end', '1')
redis.call('PEXPIRE', KEYS[1], retain)
redis.call('SET', KEYS[2], ARGV[8], 'PX', retain)
local old = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
redis.call('ZADD', KEYS[3], now + retain, ARGV[2])
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
local total = redis.call('INCRBY', KEYS[5], tonumber(ARGV[3]) - old)
local function drop(id, del)
  local size = tonumber(redis.call('HGET', KEYS[4], id) or '0')
  redis.call('HDEL', KEYS[4], id)
  redis.call('ZREM', KEYS[3], id)
  total = redis.call('DECRBY', KEYS[5], size)
  if del then
    redis.call('DEL', ARGV[6] .. id, ARGV[7] .. id)
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  drop(id, false)
end
while total > tonumber(ARGV[5]) do
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)
  if #first == 0 then break end
  drop(first[1], true)
end
return total
`)

func (b *redisBroker) Close(runID string, retain time.Duration) error {
	return b.CloseWithResult(runID, retain, nil)
}

// CloseWithResult closes a run's stream, keeping result in its open key
// as long as the stream.
func (b *redisBroker) CloseWithResult(runID string, retain time.Duration, result []byte) error {
	b.mu.Lock()
	st := b.streams[runID]
	delete(b.streams, runID)
	b.mu.Unlock()
	if st == nil {
		return nil
	}
	if retain <= 0 {
		retain = closeGrace
	}
	st.mu.Lock()
	end, size := st.next, st.bytes+len(result)
	st.next++
	st.mu.Unlock()
	ctx, cancel := b.call(context.Background())
	defer cancel()
	keys := []string{b.streamKey(runID), b.openKey(runID), b.opts.Prefix + "ended", b.opts.Prefix + "ended-bytes", b.opts.Prefix + "ended-total"}
	kept := "1"
	if len(result) > 0 {
		kept = "=" + string(result)
	}
	err := closeScript.Run(ctx, b.c, keys, entryID(end), runID, size, retain.Milliseconds(), b.opts.MaxRetainedBytes, b.opts.Prefix+"run:", b.opts.Prefix+"open:", kept).Err()
	if err != nil {
		return unavailable("closing the stream", err)
	}
	return nil
}

func (b *redisBroker) Subscribe(ctx context.Context, runID string, after int) (iter.Seq2[[]Event, error], bool) {
	key := b.streamKey(runID)
	cctx, cancel := b.call(ctx)
	n, err := b.c.Exists(cctx, key, b.openKey(runID)).Result()
	cancel()
	if err != nil {
		b.log.Warn("server: reading a run's stream from Redis", "run_id", runID, "err", err)
		return func(yield func([]Event, error) bool) { yield(nil, unavailable("finding the stream", err)) }, true
	}
	if n == 0 {
		return nil, false
	}
	if after < -1 {
		// From now: the stream's last entry, read now rather than when
		// the reader starts reading.
		cctx, cancel := b.call(ctx)
		last, err := b.c.XRevRangeN(cctx, key, "+", "-", 1).Result()
		cancel()
		if err != nil {
			b.log.Warn("server: reading a run's stream from Redis", "run_id", runID, "err", err)
			return func(yield func([]Event, error) bool) { yield(nil, unavailable("reading the stream's end", err)) }, true
		}
		after = -1
		if len(last) > 0 {
			if after, err = eventID(last[0].ID); err != nil {
				return func(yield func([]Event, error) bool) { yield(nil, unavailable("reading the stream's end", err)) }, true
			}
		}
	}
	return func(yield func([]Event, error) bool) {
		fail := func(what string, err error) {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			b.log.Warn("server: reading a run's stream from Redis", "run_id", runID, "err", err)
			yield(nil, unavailable(what, err))
		}
		from := "0-0"
		want, strict := 0, false // the id expected next, and whether a gap is a loss
		if after >= 0 {
			from, want, strict = entryID(after), after+1, true
		}
		for {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			cctx, cancel := context.WithTimeout(ctx, b.opts.Block+b.opts.Timeout)
			res, err := b.c.XRead(cctx, &redis.XReadArgs{Streams: []string{key, from}, Count: readCount, Block: b.opts.Block}).Result()
			cancel()
			if errors.Is(err, redis.Nil) {
				// Nothing new: go on while the stream exists and has not
				// ended before the reader's place (a Last-Event-ID past
				// its end).
				ended, err := b.endedBefore(ctx, runID, want)
				if err != nil {
					fail("reading the stream", err)
					return
				}
				if ended {
					return
				}
				continue
			}
			if err != nil {
				fail("reading the stream", err)
				return
			}
			var msgs []redis.XMessage
			if len(res) > 0 {
				msgs = res[0].Messages
			}
			batch := make([]Event, 0, len(msgs))
			ended := false
			for i, m := range msgs {
				ev, end, err := decodeEntry(m)
				if err != nil {
					fail("decoding the stream", err)
					return
				}
				if ev.ID != want && strict {
					if len(batch) > 0 {
						yield(batch, nil)
					}
					yield(nil, ErrStreamTrimmed)
					return
				}
				want, strict, from = ev.ID+1, true, m.ID
				if end {
					// A run taken over goes on after its first process's
					// end: the end is the stream's only when nothing
					// follows it.
					ended = i == len(msgs)-1
					continue
				}
				batch = append(batch, ev)
			}
			if len(batch) > 0 && !yield(batch, nil) {
				return
			}
			if ended {
				cctx, cancel := b.call(ctx)
				more, err := b.c.XRangeN(cctx, key, "("+from, "+", 1).Result()
				cancel()
				if err != nil {
					fail("reading the stream", err)
					return
				}
				if len(more) == 0 {
					return
				}
			}
		}
	}, true
}

// endedBefore reports whether a run's stream is gone, or ended with an
// end entry before event id want.
func (b *redisBroker) endedBefore(ctx context.Context, runID string, want int) (bool, error) {
	ctx, cancel := b.call(ctx)
	defer cancel()
	pipe := b.c.Pipeline()
	n := pipe.Exists(ctx, b.streamKey(runID), b.openKey(runID))
	last := pipe.XRevRangeN(ctx, b.streamKey(runID), "+", "-", 1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if n.Val() == 0 {
		return true, nil
	}
	if msgs := last.Val(); len(msgs) > 0 {
		ev, end, err := decodeEntry(msgs[0])
		if err != nil {
			return false, err
		}
		return end && ev.ID < want, nil
	}
	return false, nil
}

// Result reads the result a run's process kept when it closed the
// stream.
func (b *redisBroker) Result(ctx context.Context, runID string) ([]byte, bool, error) {
	ctx, cancel := b.call(ctx)
	defer cancel()
	v, err := b.c.Get(ctx, b.openKey(runID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable("reading the run's result", err)
	}
	result, ok := strings.CutPrefix(v, "=")
	if !ok || result == "" {
		return nil, false, nil
	}
	return []byte(result), true, nil
}

// cancelChannel is the Redis channel cancels are relayed on.
func (b *redisBroker) cancelChannel() string { return b.opts.Prefix + "cancel" }

// RelayCancel publishes a cancel of runID to every process sharing the
// prefix.
func (b *redisBroker) RelayCancel(ctx context.Context, runID string) error {
	ctx, cancel := b.call(ctx)
	defer cancel()
	if err := b.c.Publish(ctx, b.cancelChannel(), runID).Err(); err != nil {
		return unavailable("relaying a cancel", err)
	}
	return nil
}

// ListenCancels calls stop with the run id of each cancel relayed, until
// ctx ends. The subscription comes back by itself after Redis fails (the
// cancels relayed meanwhile still reach the run through its lease).
func (b *redisBroker) ListenCancels(ctx context.Context, stop func(runID string)) {
	ps := b.c.Subscribe(ctx, b.cancelChannel())
	defer ps.Close()
	deliver(ctx, ps, stop)
}

// deliver calls f with the payload of each message of ps, until ctx ends
// or ps closes.
func deliver(ctx context.Context, ps *redis.PubSub, f func(payload string)) {
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			f(msg.Payload)
		}
	}
}

// Kept implements keptReader: the entries after after, read with XRANGE
// (a page of readCount at a time), and Subscribe after the last of them.
// The stream of a run that ended is kept at least closeGrace, so the rest
// is read from where Kept stopped.
func (b *redisBroker) Kept(ctx context.Context, runID string, after int) ([]Event, bool, iter.Seq2[[]Event, error], bool, error) {
	key := b.streamKey(runID)
	cctx, cancel := b.call(ctx)
	n, err := b.c.Exists(cctx, key, b.openKey(runID)).Result()
	cancel()
	if err != nil {
		return nil, false, nil, true, unavailable("finding the stream", err)
	}
	if n == 0 {
		return nil, false, nil, false, nil
	}
	from := "-"
	want, strict := 0, false
	if after >= 0 {
		from, want, strict = "("+entryID(after), after+1, true
	}
	var kept []Event
	last, ended := after, false
	for {
		cctx, cancel := b.call(ctx)
		msgs, err := b.c.XRangeN(cctx, key, from, "+", readCount).Result()
		cancel()
		if err != nil {
			return nil, false, nil, true, unavailable("reading the stream", err)
		}
		for _, m := range msgs {
			ev, end, err := decodeEntry(m)
			if err != nil {
				return nil, false, nil, true, unavailable("decoding the stream", err)
			}
			if ev.ID != want && strict {
				return nil, false, nil, true, ErrStreamTrimmed
			}
			want, strict, from, last = ev.ID+1, true, "("+m.ID, ev.ID
			// An end followed by more entries is a run taken over: the
			// stream ends at its last end only.
			ended = end
			if !end {
				kept = append(kept, ev)
			}
		}
		if len(msgs) < readCount {
			break
		}
	}
	if ended {
		return kept, true, nil, true, nil
	}
	rest, ok := b.Subscribe(ctx, runID, last)
	if !ok {
		// Gone since: it ended, and nothing more is to be read.
		return kept, true, nil, true, nil
	}
	return kept, false, rest, true, nil
}

// threadChannel is the Redis channel notes of threads' runs and state
// updates are relayed on.
func (b *redisBroker) threadChannel() string { return b.opts.Prefix + "threads" }

// RelayThreadNote publishes a note about a thread (a run opened on it, its
// state updated) to every process sharing the prefix. Like a publish, it
// skips Redis for a while after Redis failed: a run's creation then costs
// no timeout for its note.
func (b *redisBroker) RelayThreadNote(ctx context.Context, note []byte) error {
	if err := b.skipWhileDown(time.Now(), "relaying a thread's note"); err != nil {
		return err
	}
	ctx, cancel := b.call(ctx)
	defer cancel()
	if err := b.c.Publish(ctx, b.threadChannel(), note).Err(); err != nil {
		b.failed()
		return unavailable("relaying a thread's note", err)
	}
	return nil
}

// ListenThreadNotes calls note with each note relayed, until ctx ends,
// and subscribed once Redis confirmed the subscription (or failed to
// within the broker's timeout). The subscription comes back by itself
// after Redis fails; notes relayed meanwhile are lost.
func (b *redisBroker) ListenThreadNotes(ctx context.Context, subscribed func(), note func([]byte)) {
	ps := b.c.Subscribe(ctx, b.threadChannel())
	defer ps.Close()
	cctx, cancel := b.call(ctx)
	if _, err := ps.Receive(cctx); err != nil && ctx.Err() == nil {
		b.log.Warn("server: subscribing to threads' notes in Redis; thread streams miss other processes' runs until it answers", "err", err)
	}
	cancel()
	subscribed()
	deliver(ctx, ps, func(payload string) { note([]byte(payload)) })
}
