// Package store is weft's long-term store: JSON documents under hierarchical
// namespaces, with filtered search, vector search over configured fields,
// per-item TTL and a sweeper. It follows LangGraph's BaseStore.
//
// [Store] is the concrete type callers use; a [Backend] holds the data. This
// package has the in-memory backend ([NewMemory]); store/sqlite and
// store/postgres have the durable ones. All three pass the same conformance
// suite, store/storetest.
//
//	s, _ := store.NewMemory(store.Config{
//		Index: &store.IndexConfig{Embedder: embed.NewLexical(512), Fields: []string{"text"}},
//	})
//	s.Put(ctx, []string{"users", "u1", "memories"}, "m1", map[string]any{"text": "likes window seats"}, store.PutOptions{})
//	items, _ := s.Search(ctx, []string{"users", "u1"}, store.SearchOptions{Query: "seat preference"})
//
// A missing item is not an error: Get returns (nil, nil) and Delete of a
// missing item succeeds, as in LangGraph. Bad input (namespace, filter,
// value, options) is rejected with an error wrapping [ErrInvalid] before
// anything is written.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/weftlabs/weft/embed"
)

// Defaults applied to zero options.
const (
	DefaultSearchLimit         = 10
	DefaultListNamespacesLimit = 100
	// DefaultVectorCacheBytes bounds the memory used for cached vectors.
	DefaultVectorCacheBytes = 1 << 30
	// DefaultTimeout bounds each operation unless Config.Timeout says
	// otherwise.
	DefaultTimeout = 30 * time.Second
)

// NoTTL as PutOptions.TTL stores an item that never expires, whatever
// TTLConfig.Default says.
const NoTTL time.Duration = -1

// Item is a stored document.
type Item struct {
	Namespace []string
	Key       string
	// Value is the item's JSON object; see Decode.
	Value     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is when the item expires, or zero if it does not.
	ExpiresAt time.Time
	// Score is the cosine similarity of the best-matching indexed field to
	// the query, set only by a Search with a Query.
	Score *float64
}

// Decode unmarshals the item's value into v.
func (it *Item) Decode(v any) error {
	if err := json.Unmarshal(it.Value, v); err != nil {
		return fmt.Errorf("store: decode item %s/%s: %w", JoinNamespace(it.Namespace), it.Key, err)
	}
	return nil
}

// DecodeValue returns the item's value decoded as a T.
func DecodeValue[T any](it *Item) (T, error) {
	var v T
	err := it.Decode(&v)
	return v, err
}

// Config configures a Store.
type Config struct {
	// Index enables vector search; nil stores no vectors, and a Search with
	// a Query fails with ErrNoIndex.
	Index *IndexConfig
	// TTL sets default expiry, refresh on read and the background sweeper.
	TTL TTLConfig
	// Clock returns the current time (default time.Now). Tests set it to
	// make expiry deterministic.
	Clock func() time.Time
	// VectorCacheBytes bounds the vectors the Store keeps in memory for
	// exact ranking (default DefaultVectorCacheBytes). A prefix whose vectors
	// exceed it is still searched, by loading them for each search.
	VectorCacheBytes int64
	// Logger receives errors of the background sweeper (default: none).
	Logger *slog.Logger
	// Timeout bounds each operation (Put, Get, Search...), its calls to
	// the backend and the embedder together, whatever the caller's
	// context allows, so that a stalled database or embedding server
	// fails the operation with ErrTimeout instead of blocking it
	// (default DefaultTimeout).
	Timeout time.Duration
}

// IndexConfig says how items are embedded for vector search.
type IndexConfig struct {
	// Embedder turns text into vectors. Required.
	Embedder embed.Embedder
	// Dims is the vector length (default Embedder.Dims()).
	Dims int
	// Fields are the index field paths embedded for each item (default
	// ["$"], the whole value); see FieldPath for the syntax. Each text
	// found is embedded separately and an item scores as its best text.
	Fields []string
}

// TTLConfig configures expiry.
type TTLConfig struct {
	// Default is the TTL of items put without one (0: no expiry).
	Default time.Duration
	// NoRefreshOnRead turns off the default of moving an item's expiry to
	// now+TTL whenever Get or Search returns it.
	NoRefreshOnRead bool
	// SweepInterval, when positive, starts a goroutine that deletes expired
	// items at this interval until Close. Expired items are never returned
	// either way; sweeping reclaims their space.
	SweepInterval time.Duration
}

// Refresh chooses whether a read moves an item's expiry.
type Refresh int8

// Refresh values.
const (
	// RefreshDefault follows TTLConfig.NoRefreshOnRead.
	RefreshDefault Refresh = iota
	// RefreshOn moves the expiry of items read to now+TTL.
	RefreshOn
	// RefreshOff leaves expiry alone.
	RefreshOff
)

// PutOptions are the options of Put.
type PutOptions struct {
	// Index overrides IndexConfig.Fields for this item.
	Index []string
	// NoIndex stores the item without vectors: it is found by filters but
	// never by a query (LangGraph's index=False).
	NoIndex bool
	// TTL is the item's time to live: 0 for TTLConfig.Default, NoTTL (or
	// any negative value) for none.
	TTL time.Duration
}

// GetOptions are the options of Get.
type GetOptions struct {
	RefreshTTL Refresh
}

// SearchOptions are the options of Search.
type SearchOptions struct {
	// Query, when set, ranks items by the cosine similarity of their
	// indexed fields to the embedded query; items without vectors are not
	// returned. Without a Query items come newest-updated first.
	Query string
	// Filter restricts results; see ParseFilter for the syntax.
	Filter map[string]any
	// Limit caps the results (default DefaultSearchLimit); Offset skips the
	// first results of the ranking.
	Limit, Offset int
	// RefreshTTL chooses whether returned items' expiry moves.
	RefreshTTL Refresh
}

// ListNamespacesOptions are the options of ListNamespaces.
type ListNamespacesOptions struct {
	// Prefix and Suffix restrict to namespaces starting or ending with these
	// labels; the label "*" matches any one label.
	Prefix, Suffix []string
	// MaxDepth, when positive, truncates namespaces to this many labels
	// (duplicates removed).
	MaxDepth int
	// Limit caps the result (default DefaultListNamespacesLimit); Offset
	// skips the first namespaces in sorted order.
	Limit, Offset int
}

// PutRequest is one item for PutMany.
type PutRequest struct {
	Namespace []string
	Key       string
	// Value is anything that marshals to a JSON object: a map, a struct,
	// json.RawMessage or []byte holding an object.
	Value   any
	Options PutOptions
}

// Store is the long-term store. It is safe for concurrent use.
type Store struct {
	b      Backend
	vs     VectorSource
	native VectorSearcher
	cfg    Config
	fields []FieldPath
	dims   int
	cache  *vectorCache

	mu        sync.RWMutex // held for reading by operations, for writing by Close
	closed    bool
	stopSweep context.CancelFunc
	sweepCtx  context.Context
	sweeping  sync.WaitGroup
}

// New returns a Store over b; it owns b and closes it on Close.
func New(b Backend, cfg Config) (*Store, error) {
	s := &Store{b: b, cfg: cfg}
	s.sweepCtx, s.stopSweep = context.WithCancel(context.Background())
	if s.cfg.Clock == nil {
		s.cfg.Clock = time.Now
	}
	if s.cfg.VectorCacheBytes <= 0 {
		s.cfg.VectorCacheBytes = DefaultVectorCacheBytes
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Config.Timeout must be 0 (the default, %v) or positive, got %v", ErrInvalidValue, DefaultTimeout, cfg.Timeout)
	}
	if s.cfg.Timeout == 0 {
		s.cfg.Timeout = DefaultTimeout
	}
	if ix := cfg.Index; ix != nil {
		if ix.Embedder == nil {
			return nil, fmt.Errorf("%w: IndexConfig.Embedder is required", ErrInvalidValue)
		}
		s.dims = ix.Dims
		if s.dims == 0 {
			s.dims = ix.Embedder.Dims()
		}
		if s.dims <= 0 {
			return nil, fmt.Errorf("%w: IndexConfig.Dims must be positive, got %d", ErrInvalidValue, s.dims)
		}
		fields := ix.Fields
		if len(fields) == 0 {
			fields = []string{"$"}
		}
		var err error
		if s.fields, err = parseFields(fields); err != nil {
			return nil, err
		}
		if vs, ok := b.(VectorSearcher); ok && vs.NativeVectorSearch(s.dims) {
			s.native = vs
		} else if src, ok := b.(VectorSource); ok {
			s.vs = src
			s.cache = newVectorCache(s.cfg.VectorCacheBytes)
		} else {
			return nil, fmt.Errorf("%w: backend %T cannot search vectors", ErrInvalidValue, b)
		}
	}
	if cfg.TTL.SweepInterval > 0 {
		s.sweeping.Add(1)
		go s.sweepLoop(cfg.TTL.SweepInterval)
	}
	return s, nil
}

// NewMemory returns a Store over a new in-memory backend.
func NewMemory(cfg Config) (*Store, error) { return New(NewMemoryBackend(), cfg) }

// Backend returns the store's backend.
func (s *Store) Backend() Backend { return s.b }

func parseFields(fields []string) ([]FieldPath, error) {
	out := make([]FieldPath, len(fields))
	for i, f := range fields {
		p, err := ParseFieldPath(f)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func (s *Store) now() time.Time { return s.cfg.Clock().UTC().Truncate(time.Microsecond) }

// enter starts an operation: it fails once the store is closed, and
// bounds ctx by Config.Timeout. The operation calls leave with its error,
// which leave names the bound in when it was crossed.
func (s *Store) enter(ctx context.Context, op string) (context.Context, func(error) error, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, nil, ErrClosed
	}
	bctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, ErrTimeout)
	return bctx, func(err error) error {
		if err != nil && context.Cause(bctx) == ErrTimeout && !errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("%w: %s took longer than Config.Timeout (%v): %w", ErrTimeout, op, s.cfg.Timeout, err)
		}
		cancel()
		s.mu.RUnlock()
		return err
	}, nil
}

// Close stops the sweeper and closes the backend. Operations after Close
// fail with ErrClosed; Close waits for operations under way.
func (s *Store) Close() error {
	s.stopSweep() // abandon a sweep under way rather than wait for it
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.sweeping.Wait()
	return s.b.Close()
}

func (s *Store) refresh(r Refresh) bool {
	switch r {
	case RefreshOn:
		return true
	case RefreshOff:
		return false
	}
	return !s.cfg.TTL.NoRefreshOnRead
}

// Put stores value at namespace and key, replacing any item there. value
// must marshal to a JSON object. With an index configured the value's
// fields are embedded first; an embedding error stores nothing.
func (s *Store) Put(ctx context.Context, namespace []string, key string, value any, opts PutOptions) error {
	return s.PutMany(ctx, []PutRequest{{Namespace: namespace, Key: key, Value: value, Options: opts}})
}

// PutMany stores several items in one transaction: all or none. Texts of
// all items are embedded in one EmbedDocuments call.
func (s *Store) PutMany(ctx context.Context, reqs []PutRequest) (err error) {
	ctx, leave, err := s.enter(ctx, "put")
	if err != nil {
		return err
	}
	defer func() { err = leave(err) }()
	now := s.now()
	writes := make([]Write, len(reqs))
	type pending struct {
		write int
		field string
	}
	var texts []string
	var owners []pending
	for i, r := range reqs {
		if err := ValidateNamespace(r.Namespace); err != nil {
			return err
		}
		if r.Key == "" {
			return fmt.Errorf("%w: key must be non-empty (namespace %s)", ErrInvalidValue, JoinNamespace(r.Namespace))
		}
		raw, decoded, err := encodeValue(r.Value)
		if err != nil {
			return fmt.Errorf("%w (namespace %s, key %q)", err, JoinNamespace(r.Namespace), r.Key)
		}
		ttl := r.Options.TTL
		switch {
		case ttl == 0:
			ttl = s.cfg.TTL.Default
		case ttl < 0:
			ttl = 0
		}
		writes[i] = Write{Namespace: slices.Clone(r.Namespace), Key: r.Key, Value: raw, Now: now, TTL: ttl}
		if s.cfg.Index == nil || r.Options.NoIndex {
			continue
		}
		fields := s.fields
		if r.Options.Index != nil {
			if fields, err = parseFields(r.Options.Index); err != nil {
				return err
			}
		}
		for _, f := range fields {
			for _, t := range f.Texts(decoded) {
				texts = append(texts, t)
				owners = append(owners, pending{i, f.String()})
			}
		}
	}
	if len(texts) > 0 {
		vecs, err := s.cfg.Index.Embedder.EmbedDocuments(ctx, texts)
		if err != nil {
			return fmt.Errorf("store: embed %d texts: %w", len(texts), err)
		}
		if err := embed.CheckDims(vecs, len(texts), s.dims); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		for j, o := range owners {
			writes[o.write].Vectors = append(writes[o.write].Vectors, Vector{Field: o.field, Embedding: vecs[j]})
		}
	}
	return s.b.Put(ctx, writes)
}

// encodeValue returns value as compact JSON and decoded, checking that it is
// an object.
func encodeValue(value any) (json.RawMessage, any, error) {
	var raw []byte
	switch v := value.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		var err error
		if raw, err = json.Marshal(value); err != nil {
			return nil, nil, fmt.Errorf("%w: value does not marshal to JSON: %v", ErrInvalidValue, err)
		}
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, nil, fmt.Errorf("%w: value is not valid JSON: %v", ErrInvalidValue, err)
	}
	if _, ok := decoded.(map[string]any); !ok {
		return nil, nil, fmt.Errorf("%w: value must be a JSON object, got %s", ErrInvalidValue, jsonKind(decoded))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidValue, err)
	}
	return buf.Bytes(), decoded, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return jsonTypeName(v)
}

// Get returns the item at namespace and key, or (nil, nil) if there is none
// or it has expired.
func (s *Store) Get(ctx context.Context, namespace []string, key string, opts GetOptions) (_ *Item, err error) {
	ctx, leave, err := s.enter(ctx, "get")
	if err != nil {
		return nil, err
	}
	defer func() { err = leave(err) }()
	if err := ValidateNamespace(namespace); err != nil {
		return nil, err
	}
	r, err := s.b.Get(ctx, namespace, key, s.now(), s.refresh(opts.RefreshTTL))
	if err != nil || r == nil {
		return nil, err
	}
	return r.item(), nil
}

func (r *Record) item() *Item {
	return &Item{
		Namespace: r.Namespace,
		Key:       r.Key,
		Value:     r.Value,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
		ExpiresAt: r.ExpiresAt,
		Score:     r.Score,
	}
}

// Delete removes the item at namespace and key; deleting a missing item
// succeeds.
func (s *Store) Delete(ctx context.Context, namespace []string, key string) (err error) {
	ctx, leave, err := s.enter(ctx, "delete")
	if err != nil {
		return err
	}
	defer func() { err = leave(err) }()
	if err := ValidateNamespace(namespace); err != nil {
		return err
	}
	return s.b.Delete(ctx, namespace, key)
}

// Search returns items at or under prefix (all items when prefix is
// empty) matching opts.Filter: ranked by similarity to opts.Query when it is
// set, else newest-updated first.
func (s *Store) Search(ctx context.Context, prefix []string, opts SearchOptions) (_ []Item, err error) {
	ctx, leave, err := s.enter(ctx, "search")
	if err != nil {
		return nil, err
	}
	defer func() { err = leave(err) }()
	if err := validatePrefix(prefix, false); err != nil {
		return nil, err
	}
	if opts.Limit < 0 || opts.Offset < 0 {
		return nil, fmt.Errorf("%w: limit and offset must not be negative (got %d, %d)", ErrInvalidValue, opts.Limit, opts.Offset)
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultSearchLimit
	}
	filter, err := ParseFilter(opts.Filter)
	if err != nil {
		return nil, err
	}
	q := &Query{Prefix: prefix, Filter: filter, Now: s.now(), Limit: opts.Limit, Offset: opts.Offset}
	var recs []Record
	if opts.Query == "" {
		recs, err = s.b.Search(ctx, q)
	} else {
		recs, err = s.searchQuery(ctx, q, opts.Query)
	}
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(recs))
	var ids []int64
	for i := range recs {
		items[i] = *recs[i].item()
		if recs[i].TTL > 0 {
			ids = append(ids, recs[i].ID)
		}
	}
	if len(ids) > 0 && s.refresh(opts.RefreshTTL) {
		if err := s.b.Refresh(ctx, ids, q.Now); err != nil {
			return nil, err
		}
		for i := range items {
			if recs[i].TTL > 0 {
				items[i].ExpiresAt = q.Now.Add(recs[i].TTL)
			}
		}
	}
	return items, nil
}

func (s *Store) searchQuery(ctx context.Context, q *Query, query string) ([]Record, error) {
	if s.cfg.Index == nil {
		return nil, ErrNoIndex
	}
	qv, err := s.cfg.Index.Embedder.EmbedQuery(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: embed query: %w", err)
	}
	if len(qv) != s.dims {
		return nil, fmt.Errorf("store: query %w: got %d, expected %d", embed.ErrDimensions, len(qv), s.dims)
	}
	if s.native != nil {
		return s.native.SearchVectors(ctx, q, qv)
	}
	return s.searchExact(ctx, q, qv)
}

// prefilterAfter is the candidate count past which a filtered query search
// stops widening its ranking and asks the backend for the full set of items
// the filter admits instead.
const prefilterAfter = 4096

// searchExact ranks every cached vector under the prefix and reads the best
// live items from the backend. With a filter it first asks the backend
// which of the best candidates the filter admits (IDs only), starting from a
// wide candidate list so one scan usually suffices. When too few survive
// (items expired or deleted since the cache was filled, or a selective
// filter) the ranking is widened; past prefilterAfter candidates the filter
// is applied before ranking instead, by the set of IDs it admits.
func (s *Store) searchExact(ctx context.Context, q *Query, qv []float32) ([]Record, error) {
	snap, err := s.cache.get(ctx, s.vs, q.Prefix, s.dims)
	if err != nil {
		return nil, err
	}
	var allowed map[int64]struct{}
	need := q.Limit + q.Offset
	filtered := len(q.Filter) > 0
	k := need + need/4 + 4
	if filtered {
		k = min(max(16*need+64, k), max(prefilterAfter, k))
	}
	for {
		cands := snap.topK(qv, k, allowed)
		ids := make([]int64, len(cands))
		for i, c := range cands {
			ids[i] = c.id
		}
		if filtered {
			// Keep the candidates the filter admits, in rank order.
			ok, err := s.b.Search(ctx, &Query{Prefix: q.Prefix, Filter: q.Filter, Now: q.Now, Limit: -1, IDs: ids, IDsOnly: true})
			if err != nil {
				return nil, err
			}
			admitted := make(map[int64]bool, len(ok))
			for _, r := range ok {
				admitted[r.ID] = true
			}
			kept := cands[:0:0]
			for _, c := range cands {
				if admitted[c.id] {
					kept = append(kept, c)
					if len(kept) == need {
						break
					}
				}
			}
			exhausted := len(cands) < k
			cands = kept
			ids = ids[:0]
			for _, c := range cands {
				ids = append(ids, c.id)
			}
			if len(cands) < need && !exhausted {
				k = s.widen(k, need, len(cands), q, &allowed)
				if allowed == nil && k >= prefilterAfter {
					if allowed, err = s.admitted(ctx, q); err != nil {
						return nil, err
					}
				}
				continue
			}
		}
		recs, err := s.b.Search(ctx, &Query{Prefix: q.Prefix, Filter: q.Filter, Now: q.Now, Limit: -1, IDs: ids})
		if err != nil {
			return nil, err
		}
		byID := make(map[int64]*Record, len(recs))
		for i := range recs {
			byID[recs[i].ID] = &recs[i]
		}
		out := make([]Record, 0, need)
		for _, c := range cands {
			r, ok := byID[c.id]
			if !ok {
				continue
			}
			score := float64(c.score)
			r.Score = &score
			out = append(out, *r)
			if len(out) == need {
				break
			}
		}
		if len(out) == need || len(cands) < k {
			if q.Offset >= len(out) {
				return nil, nil
			}
			return out[q.Offset:], nil
		}
		k = s.widen(k, need, len(out), q, &allowed)
	}
}

// widen returns the next candidate count: at least double, more in
// proportion to how many candidates were lost.
func (s *Store) widen(k, need, got int, q *Query, allowed *map[int64]struct{}) int {
	next := max(2*k, k*need/max(got, 1))
	if *allowed == nil && len(q.Filter) > 0 {
		next = min(next, max(prefilterAfter, k+1))
	}
	return next
}

// admitted returns the IDs of the live items under q.Prefix that q.Filter
// admits.
func (s *Store) admitted(ctx context.Context, q *Query) (map[int64]struct{}, error) {
	matches, err := s.b.Search(ctx, &Query{Prefix: q.Prefix, Filter: q.Filter, Now: q.Now, Limit: -1, IDsOnly: true})
	if err != nil {
		return nil, err
	}
	allowed := make(map[int64]struct{}, len(matches))
	for _, r := range matches {
		allowed[r.ID] = struct{}{}
	}
	return allowed, nil
}

// ListNamespaces returns the distinct namespaces holding live items,
// sorted label by label, filtered and truncated by opts.
func (s *Store) ListNamespaces(ctx context.Context, opts ListNamespacesOptions) (_ [][]string, err error) {
	ctx, leave, err := s.enter(ctx, "list namespaces")
	if err != nil {
		return nil, err
	}
	defer func() { err = leave(err) }()
	if err := validatePrefix(opts.Prefix, true); err != nil {
		return nil, err
	}
	if err := validatePrefix(opts.Suffix, true); err != nil {
		return nil, err
	}
	if opts.Limit < 0 || opts.Offset < 0 || opts.MaxDepth < 0 {
		return nil, fmt.Errorf("%w: limit, offset and max depth must not be negative", ErrInvalidValue)
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultListNamespacesLimit
	}
	all, err := s.b.Namespaces(ctx, literalPrefix(opts.Prefix), s.now())
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out [][]string
	for _, ns := range all {
		if !matchNamespace(ns, opts.Prefix, opts.Suffix) {
			continue
		}
		if opts.MaxDepth > 0 && len(ns) > opts.MaxDepth {
			ns = ns[:opts.MaxDepth]
		}
		j := JoinNamespace(ns)
		if seen[j] {
			continue
		}
		seen[j] = true
		out = append(out, ns)
	}
	slices.SortFunc(out, compareNamespaces)
	if opts.Offset >= len(out) {
		return nil, nil
	}
	out = out[opts.Offset:]
	if len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// Sweep deletes expired items now and returns how many it deleted.
func (s *Store) Sweep(ctx context.Context) (_ int64, err error) {
	ctx, leave, err := s.enter(ctx, "sweep")
	if err != nil {
		return 0, err
	}
	defer func() { err = leave(err) }()
	return s.b.Sweep(ctx, s.now())
}

func (s *Store) sweepLoop(every time.Duration) {
	defer s.sweeping.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.sweepCtx.Done():
			return
		case <-t.C:
			_, err := s.Sweep(s.sweepCtx)
			if err != nil && s.sweepCtx.Err() == nil && !errors.Is(err, ErrClosed) && s.cfg.Logger != nil {
				s.cfg.Logger.Error("store: sweep failed", "err", err)
			}
		}
	}
}
