package rag

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/weftlabs/weft/store"
)

// SearchOptions tune one search. The zero value is a hybrid search for
// DefaultK chunks in any language from any source.
type SearchOptions struct {
	// K is how many chunks to return (default DefaultK, at most MaxK).
	K int
	// Mode chooses the retrievers (default Hybrid).
	Mode Mode
	// Language keeps only chunks in this language ("ko", "en").
	Language string
	// Source keeps only chunks from this source file (as Chunk.Source).
	Source string
	// Depth is how many candidates each retriever ranks before fusion
	// (default max(DefaultDepth, 4K)).
	Depth int
	// Fusion, when set, replaces Config.Fusion for this search.
	Fusion *Fusion
}

// Hit is one search result.
type Hit struct {
	Chunk Chunk `json:"chunk"`
	// Score orders the hits: the fused score for Hybrid, BM25 for Lexical,
	// cosine similarity for Vector.
	Score float64 `json:"score"`
	// LexicalRank and VectorRank are the chunk's 1-based ranks in each
	// retriever's candidates, 0 where it was not among them.
	LexicalRank int `json:"lexical_rank,omitempty"`
	VectorRank  int `json:"vector_rank,omitempty"`
}

type filter struct{ language, source string }

// Search returns the chunks that best answer query, best first. A blank
// query is an error wrapping ErrInvalidConfig; a query that matches nothing
// gives no hits and no error.
func (ix *Index) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", ErrInvalidConfig)
	}
	if opts.K < 0 || opts.Depth < 0 {
		return nil, fmt.Errorf("%w: k and depth must not be negative (got %d, %d)", ErrInvalidConfig, opts.K, opts.Depth)
	}
	if opts.K == 0 {
		opts.K = DefaultK
	}
	if opts.K > MaxK {
		return nil, fmt.Errorf("%w: k %d is above the maximum %d", ErrInvalidConfig, opts.K, MaxK)
	}
	if opts.Depth == 0 {
		opts.Depth = max(DefaultDepth, 4*opts.K)
	}
	opts.Depth = max(opts.Depth, opts.K)
	switch opts.Mode {
	case "":
		opts.Mode = Hybrid
	case Hybrid, Lexical, Vector:
	default:
		return nil, fmt.Errorf("%w: mode %q (expected %q, %q or %q)", ErrInvalidConfig, opts.Mode, Hybrid, Lexical, Vector)
	}
	fusion := ix.cfg.Fusion
	if opts.Fusion != nil {
		var err error
		if fusion, err = opts.Fusion.withDefaults(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ix.cfg.Timeout)
	defer cancel()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, ErrClosed
	}
	f := filter{language: opts.Language, source: opts.Source}

	var lex, vec []ranked
	var err error
	if opts.Mode != Vector {
		if lex, err = ix.lex.search(ctx, query, f, opts.Depth); err != nil {
			return nil, err
		}
	}
	if opts.Mode != Lexical {
		if vec, err = ix.vectorSearch(ctx, query, f, opts.Depth); err != nil {
			return nil, err
		}
	}
	var fused []ranked
	switch opts.Mode {
	case Lexical:
		fused = lex
	case Vector:
		fused = vec
	default:
		fused = fuse(fusion, lex, vec)
	}
	lexRank, vecRank := rankOf(lex), rankOf(vec)
	hits := make([]Hit, 0, opts.K)
	for _, r := range fused {
		if len(hits) == opts.K {
			break
		}
		c, ok := ix.chunks[r.id]
		if !ok {
			continue // stored by an earlier process, not added in this one
		}
		hits = append(hits, Hit{Chunk: c, Score: r.score, LexicalRank: lexRank[r.id], VectorRank: vecRank[r.id]})
	}
	return hits, nil
}

func rankOf(rs []ranked) map[string]int {
	m := make(map[string]int, len(rs))
	for i, r := range rs {
		m[r.id] = i + 1
	}
	return m
}

func (ix *Index) vectorSearch(ctx context.Context, query string, f filter, n int) ([]ranked, error) {
	var flt map[string]any
	if f.language != "" || f.source != "" {
		flt = map[string]any{}
		if f.language != "" {
			flt["language"] = f.language
		}
		if f.source != "" {
			flt["source"] = f.source
		}
	}
	items, err := ix.st.Search(ctx, ix.cfg.Namespace, store.SearchOptions{
		Query: query, Filter: flt, Limit: n, RefreshTTL: store.RefreshOff,
	})
	if err != nil {
		return nil, fmt.Errorf("rag: vector search: %w", err)
	}
	out := make([]ranked, 0, len(items))
	for _, it := range items {
		// Only the namespace itself holds chunks; deeper namespaces are
		// someone else's.
		if !slices.Equal(it.Namespace, ix.cfg.Namespace) || it.Score == nil {
			continue
		}
		// A chunk pointing away from the query (or orthogonal to it:
		// nothing shared, for the lexical embedder) is no candidate.
		if *it.Score <= 0 || *it.Score < ix.cfg.MinVectorScore {
			break
		}
		out = append(out, ranked{id: it.Key, score: *it.Score})
	}
	return out, nil
}

// fuse combines the two rankings as f says; ties keep the lexical order,
// then the vector order, so results are deterministic.
func fuse(f Fusion, lex, vec []ranked) []ranked {
	scores := map[string]float64{}
	var order []string
	add := func(rs []ranked, w float64) {
		var lo, hi float64
		if len(rs) > 0 {
			hi, lo = rs[0].score, rs[len(rs)-1].score
		}
		for i, r := range rs {
			if _, seen := scores[r.id]; !seen {
				order = append(order, r.id)
			}
			switch f.Method {
			case ScoreFusion:
				// Min-max scaling over the candidates: the best gets
				// w, the last 0; a list of equal scores gets w each.
				if hi > lo {
					scores[r.id] += w * (r.score - lo) / (hi - lo)
				} else {
					scores[r.id] += w
				}
			default:
				scores[r.id] += w / (f.K + float64(i+1))
			}
		}
	}
	add(lex, f.LexicalWeight)
	add(vec, f.VectorWeight)
	out := make([]ranked, len(order))
	for i, id := range order {
		out[i] = ranked{id: id, score: scores[id]}
	}
	slices.SortStableFunc(out, func(a, b ranked) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	return out
}
