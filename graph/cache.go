package graph

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Cache stores node results for nodes with a CachePolicy.
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// CacheError is a failure of the node cache: computing a node's key (Op
// "key"), reading (Op "get") or writing (Op "set") an entry, or decoding
// one read back (Op "decode").
//
// A key error fails the node's task: the node asked for caching and its
// key cannot be made. The others do not fail the run, since the node can
// always run instead: each is logged as a warning on CompileOptions.Logger
// and, when the run streams StreamDebug, sent as a DebugEvent of type
// "cache_error" whose Payload is the *CacheError.
type CacheError struct {
	Op   string
	Node string
	Err  error
}

// Error names the operation and the node.
func (e *CacheError) Error() string {
	return fmt.Sprintf("graph: node cache: %s for node %q: %v", e.Op, e.Node, e.Err)
}

// Unwrap returns the underlying error.
func (e *CacheError) Unwrap() error { return e.Err }

// DefaultMemoryCacheEntries is how many entries NewMemoryCache keeps.
const DefaultMemoryCacheEntries = 10_000

// MemoryCacheOptions configures NewMemoryCacheWith.
type MemoryCacheOptions struct {
	// MaxEntries caps the entries kept (0: DefaultMemoryCacheEntries).
	// When full, expired entries are dropped first, then the least
	// recently used.
	MaxEntries int
}

// MemoryCache is an in-process Cache with a bounded number of entries,
// evicting the least recently used. Entries past their TTL are never
// served; they are dropped when read, and swept whenever as many entries
// were set as the cache holds, so they do not pile up unread.
type MemoryCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]*list.Element
	lru   *list.List // of *cacheEntry, most recently used first
	sets  int        // since the last sweep
	clock func() time.Time
}

type cacheEntry struct {
	key     string
	v       []byte
	expires time.Time
}

// NewMemoryCache returns an empty in-process cache of at most
// DefaultMemoryCacheEntries entries.
func NewMemoryCache() *MemoryCache { return NewMemoryCacheWith(MemoryCacheOptions{}) }

// NewMemoryCacheWith returns an empty in-process cache configured by o.
func NewMemoryCacheWith(o MemoryCacheOptions) *MemoryCache {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMemoryCacheEntries
	}
	return &MemoryCache{max: o.MaxEntries, m: map[string]*list.Element{}, lru: list.New(), clock: time.Now}
}

// Len returns the number of entries held, expired ones not yet dropped
// included.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Get implements Cache.
func (c *MemoryCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return nil, false, nil
	}
	e := el.Value.(*cacheEntry)
	if c.expired(e, c.clock()) {
		c.remove(el)
		return nil, false, nil
	}
	c.lru.MoveToFront(el)
	return e.v, true, nil
}

// Set implements Cache. A ttl of 0 keeps the entry until it is evicted.
func (c *MemoryCache) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	e := &cacheEntry{key: key, v: value}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	if el, ok := c.m[key]; ok {
		el.Value = e
		c.lru.MoveToFront(el)
	} else {
		c.m[key] = c.lru.PushFront(e)
	}
	c.sets++
	if c.sets >= c.max {
		c.sweep(now)
	}
	for len(c.m) > c.max {
		c.remove(c.lru.Back())
	}
	return nil
}

func (c *MemoryCache) expired(e *cacheEntry, now time.Time) bool {
	return !e.expires.IsZero() && now.After(e.expires)
}

// sweep drops every expired entry; it runs once per max sets, so its cost
// is constant per Set on average.
func (c *MemoryCache) sweep(now time.Time) {
	c.sets = 0
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if c.expired(el.Value.(*cacheEntry), now) {
			c.remove(el)
		}
		el = next
	}
}

func (c *MemoryCache) remove(el *list.Element) {
	delete(c.m, el.Value.(*cacheEntry).key)
	c.lru.Remove(el)
}

// stableNamespace is a namespace without its task ids ("outer:id1|inner:id2"
// gives "outer|inner"): the node's place in the graph, the same in every
// run, which a cache key needs.
func stableNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	parts := strings.Split(ns, "|")
	for i, p := range parts {
		if j := strings.LastIndexByte(p, ':'); j >= 0 {
			parts[i] = p[:j]
		}
	}
	return strings.Join(parts, "|")
}

// cacheKey computes the task's cache key; ok is false when the node is not
// cached. An error is the key function's (or the input's encoding's).
func (r *run) cacheKey(t *task) (key string, ok bool, err error) {
	p := t.node.opts.Cache
	if p == nil || r.g.cache == nil {
		return "", false, nil
	}
	if p.Key != nil {
		k, err := p.Key(t.input)
		if err != nil {
			return "", false, &CacheError{Op: "key", Node: t.name, Err: err}
		}
		key = k
	} else {
		b, err := json.Marshal(t.input)
		if err != nil {
			return "", false, &CacheError{Op: "key", Node: t.name, Err: fmt.Errorf("the node's input cannot be encoded as JSON (give CachePolicy.Key): %w", err)}
		}
		key = string(b)
	}
	sum := sha256.Sum256([]byte(key))
	return r.g.name + "|" + stableNamespace(r.ns) + "|" + t.name + "|" + hex.EncodeToString(sum[:16]), true, nil
}

// cacheHit serves the task from the cache when it can. A key error fails
// the task; a cache that fails to answer is reported and the node runs.
func (r *run) cacheHit(ctx context.Context, t *task) bool {
	key, ok, err := r.cacheKey(t)
	if err != nil {
		t.err = &NodeError{Node: t.name, TaskID: t.id, Err: err}
		return true
	}
	if !ok {
		return false
	}
	data, ok, err := r.g.cache.Get(ctx, key)
	if err != nil {
		r.cacheFailed(ctx, t, "get", err)
		return false
	}
	if !ok {
		return false
	}
	var ews []encodedWrite
	if err := json.Unmarshal(data, &ews); err != nil {
		r.cacheFailed(ctx, t, "decode", err)
		return false
	}
	ws, err := r.g.decodeWrites(t.name, ews)
	if err != nil {
		r.cacheFailed(ctx, t, "decode", err)
		return false
	}
	t.writes = ws
	t.update = Update{writes: stateWrites(r.g, ws)}
	t.cached = true
	return true
}

func (r *run) cacheStore(ctx context.Context, t *task) {
	key, ok, err := r.cacheKey(t)
	if err != nil || !ok {
		// A key error already failed the task before it ran.
		return
	}
	ews, err := encodeWrites(t.writes)
	if err != nil {
		r.cacheFailed(ctx, t, "set", err)
		return
	}
	data, err := json.Marshal(ews)
	if err != nil {
		r.cacheFailed(ctx, t, "set", err)
		return
	}
	if err := r.g.cache.Set(ctx, key, data, t.node.opts.Cache.TTL); err != nil {
		r.cacheFailed(ctx, t, "set", err)
	}
}

// cacheFailed reports a cache failure that does not fail the run: as a
// warning in the log and, in a debug stream, as a "cache_error" event.
func (r *run) cacheFailed(ctx context.Context, t *task, op string, err error) {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return
	}
	ce := &CacheError{Op: op, Node: t.name, Err: err}
	r.g.logger().WarnContext(ctx, ce.Error(), "node", t.name, "op", op, "thread", r.opts.ThreadID)
	if r.modes.has(StreamDebug) && t.emit != nil {
		t.emit(Event{Mode: StreamDebug, Namespace: r.path, Data: DebugEvent{Type: "cache_error", Step: r.step, Timestamp: time.Now().UTC(), Payload: ce}})
	}
}
