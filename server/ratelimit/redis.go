package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of RedisOptions.
const (
	// DefaultPrefix starts every key the limiter writes.
	DefaultPrefix = "weft:ratelimit:"
	// DefaultRedisTimeout bounds one call to Redis.
	DefaultRedisTimeout = 250 * time.Millisecond
	// DefaultCooldown is how long the limiter leaves Redis alone after a
	// failed call, deciding in this process meanwhile.
	DefaultCooldown = 5 * time.Second
)

// RedisOptions configure a Redis limiter.
type RedisOptions struct {
	// Prefix starts every key the limiter writes (default DefaultPrefix);
	// the servers that share a limit share a prefix.
	Prefix string
	// Timeout bounds each call to Redis (default DefaultRedisTimeout).
	Timeout time.Duration
	// Cooldown is how long the limiter decides in this process after a
	// call to Redis failed, before it tries Redis again (default
	// DefaultCooldown).
	Cooldown time.Duration
	// Logger is told when Redis fails and when it answers again; nil means
	// slog.Default().
	Logger *slog.Logger
	// OnFallback, if set, is called for every request decided in this
	// process because Redis could not be asked (for a metric).
	OnFallback func()
}

// Redis is a Limiter whose buckets live in Redis, so that every server
// process sharing the Redis (and the prefix) enforces one limit per key.
//
// It runs the generic cell rate algorithm (GCRA) in one Lua script, on
// Redis's clock: a key holds the time at which its bucket is full again,
// and one request moves it forward by the interval of the rate, so the
// check and the update are one atomic step whatever the number of
// processes.
//
// A Redis that fails or does not answer within Timeout does not hold up
// or refuse requests: they are decided by an in-process limiter with the
// same Limit (each process then enforces the limit on its own share of the
// traffic), Redis is left alone for Cooldown, and the failure is logged
// once, as is the recovery.
type Redis struct {
	c        redis.Cmdable
	limit    Limit
	opts     RedisOptions
	log      *slog.Logger
	interval int64 // microseconds
	capacity int64 // microseconds: interval × burst
	local    *Memory

	mu        sync.Mutex
	downUntil time.Time
	down      bool
}

// NewRedis returns a limiter that keeps its buckets in c.
func NewRedis(c redis.Cmdable, l Limit, opts RedisOptions) (*Redis, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	local, err := NewMemory(l)
	if err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRedisTimeout
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = DefaultCooldown
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	iv := max(l.interval().Microseconds(), 1)
	return &Redis{c: c, limit: l, opts: opts, log: log, interval: iv, capacity: iv * int64(l.Burst), local: local}, nil
}

// gcra takes one request from the bucket at KEYS[1], whose value is the
// time (in microseconds on Redis's clock) at which the bucket is full
// again. ARGV[1] is the interval of the rate, ARGV[2] the interval times
// the burst. It returns {1, 0} when the request is allowed, {0, wait} with
// the microseconds to wait when it is not. A refused request changes
// nothing. The key expires when the bucket is full again, so idle clients
// cost nothing.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end
local next_tat = tat + interval
local allowed_at = next_tat - capacity
if now < allowed_at then
  return {0, allowed_at - now}
end
redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX', math.ceil((next_tat - now) / 1000))
return {1, 0}
`)

// Allow implements Limiter. It returns no error: when Redis cannot be
// asked, the request is decided in this process.
func (r *Redis) Allow(ctx context.Context, key string) (Decision, error) {
	if r.skipRedis() {
		return r.fallback(ctx, key)
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	res, err := gcra.Run(cctx, r.c, []string{r.opts.Prefix + key}, r.interval, r.capacity).Int64Slice()
	cancel()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("the rate limit script answered %v; expected two numbers", res)
	}
	if err != nil {
		if ctx.Err() != nil {
			// The client went away; that says nothing about Redis.
			return Decision{Allowed: true}, nil
		}
		r.failed(err)
		return r.fallback(ctx, key)
	}
	r.recovered()
	if res[0] == 1 {
		return Decision{Allowed: true}, nil
	}
	return Decision{RetryAfter: time.Duration(res[1]) * time.Microsecond}, nil
}

func (r *Redis) fallback(ctx context.Context, key string) (Decision, error) {
	if r.opts.OnFallback != nil {
		r.opts.OnFallback()
	}
	return r.local.Allow(ctx, key)
}

// skipRedis reports whether Redis failed less than Cooldown ago.
func (r *Redis) skipRedis() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down && time.Now().Before(r.downUntil)
}

func (r *Redis) failed(err error) {
	r.mu.Lock()
	wasDown := r.down
	r.down = true
	r.downUntil = time.Now().Add(r.opts.Cooldown)
	r.mu.Unlock()
	if !wasDown {
		r.log.Warn("ratelimit: Redis failed; each server process limits requests on its own until it answers again",
			"err", err, "retry_in", r.opts.Cooldown)
	}
}

func (r *Redis) recovered() {
	r.mu.Lock()
	wasDown := r.down
	r.down = false
	r.mu.Unlock()
	if wasDown {
		r.log.Info("ratelimit: Redis answers again; the limits are shared again")
	}
}
