package sqlstore

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/weftlabs/weft/store"
)

func TestVectorRoundTrip(t *testing.T) {
	v := []float32{0, -1.5, 3.25, float32(math.Inf(1)), math.SmallestNonzeroFloat32}
	got, err := DecodeVector(nil, EncodeVector(v))
	if err != nil || !slices.Equal(got, v) {
		t.Errorf("round trip = %v, %v; want %v", got, err, v)
	}
	if _, err := DecodeVector(nil, []byte{1, 2, 3}); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("decoding 3 bytes = %v, want ErrCorrupt", err)
	}
}

func TestPrefixes(t *testing.T) {
	got := Prefixes([][]string{{"b", "x"}, {"a", "b", "c"}, {"a", "b"}})
	want := []Prefix{{"a", 1}, {"a.b", 2}, {"a.b.c", 3}, {"b", 1}, {"b.x", 2}}
	if !slices.Equal(got, want) {
		t.Errorf("Prefixes = %v, want %v", got, want)
	}
}
