package sqlstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/weftlabs/weft/store"
)

// EncodeVector returns v as little-endian float32s, the layout of the
// embedding columns.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector decodes b into dst (resized to fit) and returns it.
func DecodeVector(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: embedding of %d bytes is not a whole number of float32s", store.ErrCorrupt, len(b))
	}
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst, nil
}

// Prefix is one generation row: a joined namespace prefix and its depth.
type Prefix struct {
	Joined string
	Depth  int
}

// Prefixes returns every non-empty prefix of the namespaces (each namespace
// included), deduplicated and sorted by joined form, so concurrent writers
// lock generation rows in one order and cannot deadlock.
func Prefixes(namespaces [][]string) []Prefix {
	seen := map[string]bool{}
	var out []Prefix
	for _, ns := range namespaces {
		for d := 1; d <= len(ns); d++ {
			j := store.JoinNamespace(ns[:d])
			if !seen[j] {
				seen[j] = true
				out = append(out, Prefix{j, d})
			}
		}
	}
	slices.SortFunc(out, func(a, b Prefix) int {
		switch {
		case a.Joined < b.Joined:
			return -1
		case a.Joined > b.Joined:
			return 1
		}
		return 0
	})
	return out
}

// CompareSQL is the SQL operator of an ordered filter operator ($gt, $gte,
// $lt, $lte), and "" for any other.
func CompareSQL(op store.Op) string {
	switch op {
	case store.OpGt:
		return ">"
	case store.OpGte:
		return ">="
	case store.OpLt:
		return "<"
	case store.OpLte:
		return "<="
	}
	return ""
}
