package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryBackend keeps items in memory: for tests, demos and single-process
// use where nothing must survive a restart. It implements Backend and
// VectorSource.
type MemoryBackend struct {
	mu     sync.RWMutex
	items  map[memKey]*memItem
	byID   map[int64]*memItem
	nextID int64
	gen    int64 // bumped by every change; serves as the generation of every prefix
}

type memKey struct{ ns, key string }

type memItem struct {
	rec     Record
	decoded any
	vectors []Vector
}

var (
	_ Backend      = (*MemoryBackend)(nil)
	_ VectorSource = (*MemoryBackend)(nil)
)

// NewMemoryBackend returns an empty in-memory backend.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{items: map[memKey]*memItem{}, byID: map[int64]*memItem{}}
}

func live(r *Record, now time.Time) bool {
	return r.ExpiresAt.IsZero() || r.ExpiresAt.After(now)
}

func cloneRecord(r *Record) Record {
	c := *r
	c.Namespace = slices.Clone(r.Namespace)
	c.Value = slices.Clone(r.Value)
	return c
}

// Put implements Backend.
func (m *MemoryBackend) Put(ctx context.Context, writes []Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	prepared := make([]*memItem, len(writes))
	for i, w := range writes {
		var decoded any
		if err := json.Unmarshal(w.Value, &decoded); err != nil {
			return err
		}
		vecs := make([]Vector, len(w.Vectors))
		for j, v := range w.Vectors {
			vecs[j] = Vector{Field: v.Field, Embedding: slices.Clone(v.Embedding)}
		}
		rec := Record{Namespace: slices.Clone(w.Namespace), Key: w.Key, Value: slices.Clone(w.Value), CreatedAt: w.Now, UpdatedAt: w.Now}
		if w.TTL > 0 {
			rec.TTL = w.TTL
			rec.ExpiresAt = w.Now.Add(w.TTL)
		}
		prepared[i] = &memItem{rec: rec, decoded: decoded, vectors: vecs}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range prepared {
		k := memKey{JoinNamespace(it.rec.Namespace), it.rec.Key}
		if old := m.items[k]; old != nil {
			it.rec.ID = old.rec.ID
			if live(&old.rec, it.rec.UpdatedAt) {
				it.rec.CreatedAt = old.rec.CreatedAt
			}
		} else {
			m.nextID++
			it.rec.ID = m.nextID
		}
		m.items[k] = it
		m.byID[it.rec.ID] = it
	}
	m.gen++
	return nil
}

// Get implements Backend.
func (m *MemoryBackend) Get(ctx context.Context, ns []string, key string, now time.Time, refresh bool) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := memKey{JoinNamespace(ns), key}
	if refresh {
		m.mu.Lock()
		defer m.mu.Unlock()
	} else {
		m.mu.RLock()
		defer m.mu.RUnlock()
	}
	it := m.items[k]
	if it == nil || !live(&it.rec, now) {
		return nil, nil
	}
	if refresh && it.rec.TTL > 0 {
		it.rec.ExpiresAt = now.Add(it.rec.TTL)
	}
	r := cloneRecord(&it.rec)
	return &r, nil
}

// Delete implements Backend.
func (m *MemoryBackend) Delete(ctx context.Context, ns []string, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{JoinNamespace(ns), key}
	if it := m.items[k]; it != nil {
		delete(m.items, k)
		delete(m.byID, it.rec.ID)
		m.gen++
	}
	return nil
}

// Search implements Backend.
func (m *MemoryBackend) Search(ctx context.Context, q *Query) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var hits []*memItem
	consider := func(it *memItem) {
		if live(&it.rec, q.Now) && HasPrefix(it.rec.Namespace, q.Prefix) && q.Filter.Match(it.decoded) {
			hits = append(hits, it)
		}
	}
	if q.IDs != nil {
		for _, id := range q.IDs {
			if it := m.byID[id]; it != nil {
				consider(it)
			}
		}
	} else {
		for _, it := range m.items {
			consider(it)
		}
	}
	slices.SortFunc(hits, func(a, b *memItem) int {
		if c := b.rec.UpdatedAt.Compare(a.rec.UpdatedAt); c != 0 {
			return c
		}
		if c := strings.Compare(JoinNamespace(a.rec.Namespace), JoinNamespace(b.rec.Namespace)); c != 0 {
			return c
		}
		return strings.Compare(a.rec.Key, b.rec.Key)
	})
	if q.Offset >= len(hits) {
		return nil, nil
	}
	hits = hits[q.Offset:]
	if q.Limit >= 0 && len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	out := make([]Record, len(hits))
	for i, it := range hits {
		if q.IDsOnly {
			out[i] = Record{ID: it.rec.ID}
		} else {
			out[i] = cloneRecord(&it.rec)
		}
	}
	return out, nil
}

// Refresh implements Backend.
func (m *MemoryBackend) Refresh(ctx context.Context, ids []int64, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if it := m.byID[id]; it != nil && it.rec.TTL > 0 && live(&it.rec, now) {
			it.rec.ExpiresAt = now.Add(it.rec.TTL)
		}
	}
	return nil
}

// Namespaces implements Backend.
func (m *MemoryBackend) Namespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	seen := map[string]bool{}
	var out [][]string
	for k, it := range m.items {
		if seen[k.ns] || !live(&it.rec, now) || !HasPrefix(it.rec.Namespace, prefix) {
			continue
		}
		seen[k.ns] = true
		out = append(out, slices.Clone(it.rec.Namespace))
	}
	return out, nil
}

// Sweep implements Backend.
func (m *MemoryBackend) Sweep(ctx context.Context, now time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, it := range m.items {
		if !live(&it.rec, now) {
			delete(m.items, k)
			delete(m.byID, it.rec.ID)
			n++
		}
	}
	if n > 0 {
		m.gen++
	}
	return n, nil
}

// Close implements Backend; the data is dropped.
func (m *MemoryBackend) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items = map[memKey]*memItem{}
	m.byID = map[int64]*memItem{}
	m.gen++
	return nil
}

// Generation implements VectorSource: one counter serves every prefix.
func (m *MemoryBackend) Generation(ctx context.Context, prefix []string) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.gen, nil
}

// Vectors implements VectorSource.
func (m *MemoryBackend) Vectors(ctx context.Context, prefix []string, dims int, fn func(id int64, vec []float32) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, it := range m.items {
		if !HasPrefix(it.rec.Namespace, prefix) {
			continue
		}
		for _, v := range it.vectors {
			if len(v.Embedding) != dims {
				continue
			}
			if err := fn(it.rec.ID, v.Embedding); err != nil {
				return err
			}
		}
	}
	return nil
}
