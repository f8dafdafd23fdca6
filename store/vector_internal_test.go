package store

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomSnapshot(items, rowsPer, dims int, seed uint64) *snapshot {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &snapshot{dims: dims}
	for i := range items {
		s.ids = append(s.ids, int64(i+1))
		s.start = append(s.start, int32(s.rows))
		for range rowsPer {
			v := make([]float32, dims)
			for j := range v {
				v[j] = float32(rng.NormFloat64())
			}
			s.add(v)
		}
	}
	s.start = append(s.start, int32(s.rows))
	return s
}

// The parallel heap scan must agree with sorting every score.
func TestTopKMatchesSort(t *testing.T) {
	for _, c := range []struct{ items, rows, k int }{{1, 1, 10}, {50, 1, 10}, {3000, 2, 25}, {1000, 3, 1000}, {20000, 1, 7}, {9000, 1, 3}} {
		s := randomSnapshot(c.items, c.rows, 16, uint64(c.items))
		q := randomSnapshot(1, 1, 16, 99).row(0)
		allowed := map[int64]struct{}{}
		for i := 1; i <= c.items; i += 3 {
			allowed[int64(i)] = struct{}{}
		}
		for _, al := range []map[int64]struct{}{nil, allowed} {
			var all []candidate
			for i, id := range s.ids {
				if al != nil {
					if _, ok := al[id]; !ok {
						continue
					}
				}
				best := float32(-2)
				for r := s.start[i]; r < s.start[i+1]; r++ {
					best = max(best, dot(q, s.row(int(r))))
				}
				all = append(all, candidate{id, best})
			}
			slices.SortFunc(all, func(a, b candidate) int {
				if worse(a, b) {
					return 1
				}
				if worse(b, a) {
					return -1
				}
				return 0
			})
			want := all[:min(c.k, len(all))]
			got := s.topK(q, c.k, al)
			if len(got) != len(want) {
				t.Fatalf("%+v: got %d candidates, want %d", c, len(got), len(want))
			}
			for i := range got {
				if d := got[i].score - want[i].score; got[i].id != want[i].id || d > 1e-6 || d < -1e-6 {
					t.Fatalf("%+v: rank %d = %+v, want %+v", c, i, got[i], want[i])
				}
			}
		}
	}
}

func TestDot(t *testing.T) {
	for n := range 40 {
		a, b := make([]float32, n), make([]float32, n)
		var want float32
		for i := range n {
			a[i], b[i] = float32(i+1), float32(2*i-3)
			want += a[i] * b[i]
		}
		if got := dot(a, b); got != want {
			t.Errorf("dot of length %d = %v, want %v", n, got, want)
		}
	}
}

func BenchmarkTopK100k(b *testing.B) {
	s := randomSnapshot(100_000, 1, 384, 1)
	q := randomSnapshot(1, 1, 384, 2).row(0)
	for b.Loop() {
		s.topK(q, 12, nil)
	}
}

func BenchmarkDot384(b *testing.B) {
	s := randomSnapshot(2, 1, 384, 1)
	x, y := s.row(0), s.row(1)
	var sink float32
	for b.Loop() {
		sink += dot(x, y)
	}
	_ = sink
}

type fakeSource struct {
	gens map[string]int64
	vecs map[string][][]float32
}

func (f *fakeSource) Generation(_ context.Context, prefix []string) (int64, error) {
	return f.gens[JoinNamespace(prefix)], nil
}

func (f *fakeSource) Vectors(_ context.Context, prefix []string, dims int, fn func(int64, []float32) error) error {
	for i, v := range f.vecs[JoinNamespace(prefix)] {
		if err := fn(int64(i+1), v); err != nil {
			return err
		}
	}
	return nil
}

// The cache reloads on a new generation and evicts the least recently used
// prefix to stay under its byte budget.
func TestVectorCache(t *testing.T) {
	ctx := context.Background()
	src := &fakeSource{gens: map[string]int64{"a": 1, "b": 1}, vecs: map[string][][]float32{
		"a": {{1, 0}}, "b": {{0, 1}, {1, 1}},
	}}
	one := int64(chunkRows*2*4 + 2*12) // a snapshot of up to one chunk of 2-dim rows
	c := newVectorCache(one + one/2)
	sa, err := c.get(ctx, src, []string{"a"}, 2)
	if err != nil || len(sa.ids) != 1 {
		t.Fatalf("get a = %+v, %v", sa, err)
	}
	if again, _ := c.get(ctx, src, []string{"a"}, 2); again != sa {
		t.Error("same generation reloaded")
	}
	src.vecs["a"] = append(src.vecs["a"], []float32{2, 2})
	src.gens["a"] = 2
	if again, _ := c.get(ctx, src, []string{"a"}, 2); again == sa || len(again.ids) != 2 {
		t.Errorf("new generation not reloaded: %+v", again)
	}
	if _, err := c.get(ctx, src, []string{"b"}, 2); err != nil {
		t.Fatal(err)
	}
	if c.size > c.max {
		t.Errorf("cache holds %d bytes, over its budget of %d", c.size, c.max)
	}
	if _, ok := c.entries["2|a"]; ok {
		t.Error("least recently used prefix a was not evicted")
	}
}
