package store

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/weftlabs/weft/embed"
)

// vectorCache keeps, per (prefix, dims), every vector under the prefix in one
// contiguous float32 slab, tagged with the backend's generation for the
// prefix. A search re-reads the generation (one cheap query) and reloads the
// slab only when it changed, so read-mostly stores rank from memory while
// writes from any process are seen by the next search.
type vectorCache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	tick    uint64
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	load sync.Mutex // one reload at a time
	snap atomic.Pointer[snapshot]
	used uint64 // guarded by vectorCache.mu
}

func newVectorCache(max int64) *vectorCache {
	return &vectorCache{max: max, entries: map[string]*cacheEntry{}}
}

// snapshot is an immutable set of unit-length vectors ("rows"): item i owns
// rows start[i]..start[i+1]-1. Rows live in fixed-size chunks, so loading
// never copies a growing slab and a scan reads each row contiguously.
type snapshot struct {
	gen    int64
	dims   int
	ids    []int64
	start  []int32
	chunks [][]float32 // chunkRows rows of dims each (the last may be shorter)
	rows   int
	bytes  int64
}

// chunkRows is the number of rows per chunk: a power of two so a row's
// chunk and offset are a shift and a mask.
const (
	chunkShift = 12
	chunkRows  = 1 << chunkShift
)

func (s *snapshot) row(r int) []float32 {
	c := s.chunks[r>>chunkShift]
	off := (r & (chunkRows - 1)) * s.dims
	return c[off : off+s.dims : off+s.dims]
}

// add appends vec, scaled to unit length (a zero vector stays zero, and
// scores 0 against everything).
func (s *snapshot) add(vec []float32) {
	if s.rows&(chunkRows-1) == 0 {
		s.chunks = append(s.chunks, make([]float32, 0, chunkRows*s.dims))
	}
	last := len(s.chunks) - 1
	c := s.chunks[last]
	off := len(c)
	c = append(c, vec...)
	s.chunks[last] = c
	embed.Normalize(c[off:])
	s.rows++
}

func (c *vectorCache) get(ctx context.Context, vs VectorSource, prefix []string, dims int) (*snapshot, error) {
	gen, err := vs.Generation(ctx, prefix)
	if err != nil {
		return nil, err
	}
	key := strconv.Itoa(dims) + "|" + JoinNamespace(prefix)
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	c.tick++
	e.used = c.tick
	c.mu.Unlock()
	// Generations only grow, so a snapshot at least as new as gen is fresh.
	if s := e.snap.Load(); s != nil && s.gen >= gen {
		return s, nil
	}
	e.load.Lock()
	defer e.load.Unlock()
	if s := e.snap.Load(); s != nil && s.gen >= gen {
		return s, nil
	}
	s, err := loadSnapshot(ctx, vs, prefix, dims, gen)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := e.snap.Load(); old != nil {
		c.size -= old.bytes
		e.snap.Store(nil)
	}
	if s.bytes > c.max || c.entries[key] != e {
		return s, nil // too big to keep, or evicted meanwhile: used for this search only
	}
	e.snap.Store(s)
	c.size += s.bytes
	for c.size > c.max {
		var victim *cacheEntry
		var victimKey string
		for k, o := range c.entries {
			if o != e && o.snap.Load() != nil && (victim == nil || o.used < victim.used) {
				victim, victimKey = o, k
			}
		}
		if victim == nil {
			break
		}
		c.size -= victim.snap.Load().bytes
		victim.snap.Store(nil)
		delete(c.entries, victimKey)
	}
	// Entries that never kept a snapshot (all too big) would pile up.
	if len(c.entries) > 4096 {
		for k, o := range c.entries {
			if o != e && o.snap.Load() == nil {
				delete(c.entries, k)
			}
		}
	}
	return s, nil
}

func loadSnapshot(ctx context.Context, vs VectorSource, prefix []string, dims int, gen int64) (*snapshot, error) {
	s := &snapshot{gen: gen, dims: dims}
	last := int64(math.MinInt64)
	err := vs.Vectors(ctx, prefix, dims, func(id int64, vec []float32) error {
		if len(vec) != dims {
			return fmt.Errorf("%w: vector of item %d has %d dimensions, expected %d", ErrCorrupt, id, len(vec), dims)
		}
		if id != last {
			s.ids = append(s.ids, id)
			s.start = append(s.start, int32(s.rows))
			last = id
		}
		s.add(vec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.start = append(s.start, int32(s.rows))
	s.bytes = int64(len(s.chunks))*chunkRows*int64(dims)*4 + int64(len(s.ids))*12
	return s, nil
}

type candidate struct {
	id    int64
	score float32
}

// worse reports whether a ranks below b: lower score, or equal score and
// larger id (so ties break deterministically by id).
func worse(a, b candidate) bool {
	return a.score < b.score || (a.score == b.score && a.id > b.id)
}

// topK returns the k best items by cosine similarity to q (an item scores
// as its best row; rows and q are unit length, so cosine is a dot product), best first, considering only ids in allowed when it is
// non-nil. The scan is split across GOMAXPROCS goroutines.
func (s *snapshot) topK(q []float32, k int, allowed map[int64]struct{}) []candidate {
	if k <= 0 || len(s.ids) == 0 {
		return nil
	}
	// A unit-length copy of the query (not a snapshot: that allocates a
	// whole chunk of rows).
	q = slices.Clone(q)
	embed.Normalize(q)
	workers := runtime.GOMAXPROCS(0)
	if work := s.rows * s.dims; work < 1<<18 || workers < 1 {
		workers = 1
	}
	workers = min(workers, len(s.ids))
	heaps := make([][]candidate, workers)
	var wg sync.WaitGroup
	per := (len(s.ids) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(s.ids))
		wg.Go(func() { heaps[w] = s.scan(q, lo, hi, k, allowed) })
	}
	wg.Wait()
	var all []candidate
	for _, h := range heaps {
		all = append(all, h...)
	}
	slices.SortFunc(all, func(a, b candidate) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	if len(all) > k {
		all = all[:k]
	}
	return all
}

func (s *snapshot) scan(q []float32, lo, hi, k int, allowed map[int64]struct{}) []candidate {
	h := make([]candidate, 0, min(k, hi-lo))
	for i := lo; i < hi; i++ {
		id := s.ids[i]
		if allowed != nil {
			if _, ok := allowed[id]; !ok {
				continue
			}
		}
		best := float32(math.Inf(-1))
		for r := s.start[i]; r < s.start[i+1]; r++ {
			if sc := dot(q, s.row(int(r))); sc > best {
				best = sc
			}
		}
		c := candidate{id: id, score: best}
		if len(h) < k {
			h = append(h, c)
			siftUp(h, len(h)-1)
		} else if worse(h[0], c) {
			h[0] = c
			siftDown(h, 0)
		}
	}
	return h
}

// The heap keeps the worst kept candidate at index 0.
func siftUp(h []candidate, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown(h []candidate, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// dot returns the dot product of a and b (len(b) >= len(a)), in float32
// with eight independent accumulators so the loop pipelines well.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		a8, b8 := a[:8:8], b[:8:8]
		s0 += a8[0] * b8[0]
		s1 += a8[1] * b8[1]
		s2 += a8[2] * b8[2]
		s3 += a8[3] * b8[3]
		s4 += a8[4] * b8[4]
		s5 += a8[5] * b8[5]
		s6 += a8[6] * b8[6]
		s7 += a8[7] * b8[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}
