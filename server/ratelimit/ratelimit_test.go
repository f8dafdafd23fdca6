package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/internal/redistest"
)

func TestLimitCheck(t *testing.T) {
	for _, l := range []Limit{{Rate: 0, Burst: 1}, {Rate: -1, Burst: 1}, {Rate: 1, Burst: 0}} {
		if _, err := NewMemory(l); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("NewMemory(%+v) = %v; want ErrInvalidLimit", l, err)
		}
		if _, err := NewRedis(nil, l, RedisOptions{}); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("NewRedis(%+v) = %v; want ErrInvalidLimit", l, err)
		}
	}
}

// A key gets its burst at once, then one request per interval; keys do
// not share buckets.
func TestMemoryBucket(t *testing.T) {
	m, err := NewMemory(Limit{Rate: 10, Burst: 3})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if d := m.allowAt("alice", t0); !d.Allowed {
			t.Fatalf("request %d of the burst refused: %+v", i, d)
		}
	}
	d := m.allowAt("alice", t0)
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 100*time.Millisecond {
		t.Fatalf("request past the burst = %+v; want refused, retry within the 100ms interval", d)
	}
	// Refused requests do not push the next turn further away.
	for range 5 {
		m.allowAt("alice", t0)
	}
	if d := m.allowAt("alice", t0.Add(100*time.Millisecond)); !d.Allowed {
		t.Errorf("a request one interval later = %+v; want allowed", d)
	}
	if d := m.allowAt("bob", t0); !d.Allowed {
		t.Errorf("another key = %+v; want allowed", d)
	}
}

// Buckets idle long enough to be full again are forgotten.
func TestMemoryForgetsIdleKeys(t *testing.T) {
	m, err := NewMemory(Limit{Rate: 1, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	m.allowAt("a", t0)
	m.allowAt("b", t0)
	m.lastSweep = t0
	m.allowAt("c", t0.Add(sweepEvery))
	if n := m.keys(); n != 1 {
		t.Errorf("after a sweep %d buckets are held; want 1 (the key just seen)", n)
	}
}

func redisLimiter(t *testing.T, c redis.Cmdable, prefix string, l Limit) *Redis {
	t.Helper()
	r, err := NewRedis(c, l, RedisOptions{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two server processes sharing a Redis share each key's limit.
func TestRedisSharedBucket(t *testing.T) {
	c, prefix := redistest.New(t)
	ctx := context.Background()
	l := Limit{Rate: 0.001, Burst: 3} // one request per 1000 s after the burst
	a := redisLimiter(t, c, prefix, l)
	b := redisLimiter(t, c, prefix, l)
	var got []bool
	for _, lim := range []*Redis{a, b, a, b} {
		d, err := lim.Allow(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Allowed)
		if !d.Allowed && (d.RetryAfter <= 0 || d.RetryAfter > 1000*time.Second) {
			t.Errorf("refused with RetryAfter %v; want within the 1000s interval", d.RetryAfter)
		}
	}
	if want := []bool{true, true, true, false}; !slices.Equal(got, want) {
		t.Errorf("allowed = %v; want %v (a burst of 3 across both processes)", got, want)
	}
	if d, _ := b.Allow(ctx, "bob"); !d.Allowed {
		t.Errorf("another key is refused: %+v", d)
	}
	ttl, err := c.PTTL(ctx, prefix+"alice").Result()
	if err != nil || ttl <= 0 {
		t.Errorf("the key's expiry = %v, %v; want a positive TTL so idle keys go away", ttl, err)
	}
}

// The check and the update are one step: concurrent requests never get
// more than the burst.
func TestRedisAtomic(t *testing.T) {
	c, prefix := redistest.New(t)
	lim := redisLimiter(t, c, prefix, Limit{Rate: 0.001, Burst: 20})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			d, err := lim.Allow(context.Background(), "k")
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 20 {
		t.Errorf("%d of 60 concurrent requests allowed; want exactly the burst, 20", n)
	}
}

// A Redis that refuses connections, or accepts them and never answers,
// neither fails nor hangs requests: they are limited in this process, and
// the outage is logged once.
func TestRedisOutageFallsBackToProcess(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn) // accepted, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	for name, addr := range map[string]string{"refused": closedAddr, "silent": silent.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
			defer c.Close()
			var logs bytes.Buffer
			var fallbacks atomic.Int64
			lim, err := NewRedis(c, Limit{Rate: 0.001, Burst: 2}, RedisOptions{
				Timeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				OnFallback: func() { fallbacks.Add(1) },
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []bool
			for range 3 {
				d, err := lim.Allow(context.Background(), "alice")
				if err != nil {
					t.Fatalf("Allow = %v; want the request decided in process", err)
				}
				got = append(got, d.Allowed)
			}
			if want := []bool{true, true, false}; !slices.Equal(got, want) {
				t.Errorf("allowed = %v; want %v (the limit still holds, in process)", got, want)
			}
			if n := fallbacks.Load(); n != 3 {
				t.Errorf("OnFallback called %d times; want 3", n)
			}
			if n := strings.Count(logs.String(), "ratelimit: Redis failed"); n != 1 {
				t.Errorf("the outage is logged %d times; want once:\n%s", n, logs.String())
			}
		})
	}
}

// A Redis that answers again is used again, and the recovery logged.
func TestRedisRecovers(t *testing.T) {
	c, prefix := redistest.New(t)
	var logs bytes.Buffer
	lim, err := NewRedis(c, Limit{Rate: 0.001, Burst: 5}, RedisOptions{Prefix: prefix, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	lim.failed(errors.New("simulated outage"))
	lim.mu.Lock()
	lim.downUntil = time.Time{} // the cooldown is over
	lim.mu.Unlock()
	if d, err := lim.Allow(context.Background(), "k"); err != nil || !d.Allowed {
		t.Fatalf("Allow = %+v, %v", d, err)
	}
	if n, err := c.Exists(context.Background(), prefix+"k").Result(); err != nil || n != 1 {
		t.Errorf("the request was not counted in Redis (exists = %d, %v)", n, err)
	}
	if !strings.Contains(logs.String(), "Redis answers again") {
		t.Errorf("the recovery is not logged:\n%s", logs.String())
	}
}
