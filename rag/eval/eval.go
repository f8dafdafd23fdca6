// Package eval measures retrieval quality on a labelled query set: recall@k,
// nDCG@k and MRR over an rag.Index, per search mode. It is what the
// knowledge base's quality test and bench/rag share.
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/weftlabs/weft/rag"
)

// Query is one labelled query.
type Query struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Query    string `json:"query"`
	// Relevant are the IDs of the documents that answer the query.
	Relevant []string `json:"relevant"`
	// CrossLingual marks a query whose answer is only in the other
	// language.
	CrossLingual bool `json:"cross_lingual,omitempty"`
}

// Set is a query set file: {"queries": [...]}.
type Set struct {
	Queries []Query `json:"queries"`
}

// ErrInvalidSet means a query set is malformed.
var ErrInvalidSet = errors.New("eval: invalid query set")

// Load reads a query set and checks that every query has an id, a text and
// at least one relevant document, and that ids are unique.
func Load(r io.Reader) ([]Query, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var s Set
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSet, err)
	}
	seen := map[string]bool{}
	for i, q := range s.Queries {
		if q.ID == "" || strings.TrimSpace(q.Query) == "" || len(q.Relevant) == 0 {
			return nil, fmt.Errorf("%w: query %d needs id, query and relevant", ErrInvalidSet, i)
		}
		if seen[q.ID] {
			return nil, fmt.Errorf("%w: query id %q is used twice", ErrInvalidSet, q.ID)
		}
		seen[q.ID] = true
	}
	return s.Queries, nil
}

// Result is the quality of one mode on a query set. Rankings are judged
// by document: a chunk's hit counts for its document, and later chunks of
// a document already ranked are skipped, so k is k distinct documents.
type Result struct {
	Mode    rag.Mode `json:"mode"`
	Queries int      `json:"queries"`
	K       int      `json:"k"`
	// Recall is the mean over queries of the share of relevant documents
	// in the top K.
	Recall float64 `json:"recall"`
	// NDCG is the mean normalised discounted cumulative gain at K, with
	// binary relevance.
	NDCG float64 `json:"ndcg"`
	// MRR is the mean reciprocal rank of the first relevant document
	// within the top K (0 when none).
	MRR float64 `json:"mrr"`
	// Missed lists the queries with no relevant document in the top K.
	Missed []string `json:"missed,omitempty"`
}

// Run searches every query with opts (its K replaced) and scores the
// rankings at k.
func Run(ctx context.Context, ix *rag.Index, qs []Query, opts rag.SearchOptions, k int) (Result, error) {
	res := Result{Mode: opts.Mode, Queries: len(qs), K: k}
	// Fetch extra chunks so that k distinct documents remain after
	// dropping repeated chunks of one document.
	opts.K = min(rag.MaxK, 4*k)
	for _, q := range qs {
		hits, err := ix.Search(ctx, q.Query, opts)
		if err != nil {
			return res, fmt.Errorf("eval: query %s: %w", q.ID, err)
		}
		var docs []string
		seen := map[string]bool{}
		for _, h := range hits {
			if len(docs) == k {
				break
			}
			if !seen[h.Chunk.DocID] {
				seen[h.Chunk.DocID] = true
				docs = append(docs, h.Chunk.DocID)
			}
		}
		r, n, rr := Score(docs, q.Relevant, k)
		res.Recall += r
		res.NDCG += n
		res.MRR += rr
		if r == 0 {
			res.Missed = append(res.Missed, q.ID)
		}
	}
	if len(qs) > 0 {
		res.Recall /= float64(len(qs))
		res.NDCG /= float64(len(qs))
		res.MRR /= float64(len(qs))
	}
	return res, nil
}

// Score returns recall@k, nDCG@k (binary gains) and the reciprocal rank of
// the first relevant item for one ranking.
func Score(ranking, relevant []string, k int) (recall, ndcg, rr float64) {
	rel := map[string]bool{}
	for _, r := range relevant {
		rel[r] = true
	}
	var found int
	var dcg float64
	for i, id := range ranking {
		if i == k {
			break
		}
		if rel[id] {
			found++
			dcg += 1 / math.Log2(float64(i+2))
			if rr == 0 {
				rr = 1 / float64(i+1)
			}
		}
	}
	var idcg float64
	for i := range min(len(rel), k) {
		idcg += 1 / math.Log2(float64(i+2))
	}
	if len(rel) == 0 {
		return 0, 0, 0
	}
	return float64(found) / float64(len(rel)), dcg / idcg, rr
}
