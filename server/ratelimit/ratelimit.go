// Package ratelimit limits how fast each client may call the server: a
// token bucket per key (an API key's user, or a client address), in this
// process (Memory) or in Redis (Redis), where several server processes
// share one limit per key.
//
// A Limit of 10 per second with a burst of 20 lets a client send 20
// requests at once, then one every 100 ms; a refused request learns how
// long to wait (Decision.RetryAfter), which the server answers as a 429
// with a Retry-After header.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a rate of requests per key: Rate a second on average, in
// bursts of at most Burst.
type Limit struct {
	// Rate is the requests a second a key may make on average.
	Rate float64
	// Burst is the most requests a key may make at once (at least 1).
	Burst int
}

// ErrInvalidLimit means a Limit cannot limit anything: a rate that is not
// positive, or a burst below 1.
var ErrInvalidLimit = errors.New("ratelimit: invalid limit")

// Check reports whether l can be enforced.
func (l Limit) Check() error {
	if !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
		return fmt.Errorf("%w: rate %v; expected a positive number of requests a second", ErrInvalidLimit, l.Rate)
	}
	if l.Burst < 1 {
		return fmt.Errorf("%w: burst %d; expected at least 1", ErrInvalidLimit, l.Burst)
	}
	return nil
}

// interval is the time one request's token takes to come back.
func (l Limit) interval() time.Duration {
	return time.Duration(float64(time.Second) / l.Rate)
}

// Decision is a limiter's answer to one request.
type Decision struct {
	// Allowed is whether the request may go on.
	Allowed bool
	// RetryAfter is, for a refused request, how long until the key may
	// make one again.
	RetryAfter time.Duration
}

// Limiter decides whether the next request of a key may go on.
type Limiter interface {
	// Allow takes one request from key's bucket, if it has one. An error
	// means the limiter could not decide; its Decision then allows the
	// request.
	Allow(ctx context.Context, key string) (Decision, error)
}

// Memory is a Limiter that keeps its buckets in this process: each server
// process limits its own requests.
type Memory struct {
	limit Limit
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// sweepEvery is how often Memory forgets the buckets of keys that have
// been idle long enough to be full again, so that a stream of one-off
// clients does not grow the map without bound.
const sweepEvery = time.Minute

// NewMemory returns a limiter that keeps its buckets in this process.
func NewMemory(l Limit) (*Memory, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	return &Memory{limit: l, now: time.Now, buckets: map[string]*rate.Limiter{}}, nil
}

// Allow implements Limiter; it never fails.
func (m *Memory) Allow(_ context.Context, key string) (Decision, error) {
	return m.allowAt(key, m.now()), nil
}

func (m *Memory) allowAt(key string, now time.Time) Decision {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.lastSweep) >= sweepEvery {
		m.sweep(now)
	}
	b := m.buckets[key]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(m.limit.Rate), m.limit.Burst)
		m.buckets[key] = b
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		// Refused: give the token back, so that a client hammering a full
		// bucket does not push its own next turn further away.
		r.CancelAt(now)
		return Decision{RetryAfter: d}
	}
	return Decision{Allowed: true}
}

// sweep drops the buckets that are full again: forgetting them changes
// nothing, a new bucket starts full.
func (m *Memory) sweep(now time.Time) {
	m.lastSweep = now
	for k, b := range m.buckets {
		if b.TokensAt(now) >= float64(m.limit.Burst) {
			delete(m.buckets, k)
		}
	}
}

// keys is the number of buckets held, for tests.
func (m *Memory) keys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}
