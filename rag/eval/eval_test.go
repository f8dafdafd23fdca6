package eval

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestScore(t *testing.T) {
	tests := []struct {
		ranking, relevant []string
		recall, ndcg, rr  float64
	}{
		{[]string{"a", "b"}, []string{"a"}, 1, 1, 1},
		{[]string{"x", "a"}, []string{"a"}, 1, 1 / math.Log2(3), 0.5},
		{[]string{"x", "y"}, []string{"a"}, 0, 0, 0},
		{[]string{"a", "b"}, []string{"a", "b"}, 1, 1, 1},
		{[]string{"a", "x", "b"}, []string{"a", "b"}, 0.5, 1 / (1 + 1/math.Log2(3)), 1},
		// Beyond k does not count.
		{[]string{"x", "y", "a"}, []string{"a"}, 0, 0, 0},
	}
	for _, tt := range tests {
		r, n, rr := Score(tt.ranking, tt.relevant, 2)
		if math.Abs(r-tt.recall) > 1e-9 || math.Abs(n-tt.ndcg) > 1e-9 || math.Abs(rr-tt.rr) > 1e-9 {
			t.Errorf("Score(%v, %v) = %v %v %v, want %v %v %v", tt.ranking, tt.relevant, r, n, rr, tt.recall, tt.ndcg, tt.rr)
		}
	}
}

func TestLoadRejectsBadSets(t *testing.T) {
	for _, src := range []string{
		`{"queries": [{"id": "a", "query": "x"}]}`,
		`{"queries": [{"id": "a", "query": "x", "relevant": ["d"]}, {"id": "a", "query": "y", "relevant": ["d"]}]}`,
		`{"queries": [{"id": "a", "query": "x", "relevant": ["d"], "extra": 1}]}`,
	} {
		if _, err := Load(strings.NewReader(src)); !errors.Is(err, ErrInvalidSet) {
			t.Errorf("%s: err = %v, want ErrInvalidSet", src, err)
		}
	}
}
