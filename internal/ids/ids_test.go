package ids_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/internal/ids"
)

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		r, o := ids.Random(), ids.TimeOrdered()
		for _, id := range []string{r, o} {
			if seen[id] {
				t.Fatalf("id %s made twice", id)
			}
			seen[id] = true
		}
		if u, err := uuid.Parse(r); err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("Random() = %s (%v), want a version 4 UUID", r, err)
		}
		if u, err := uuid.Parse(o); err != nil || u.Version() != 7 {
			t.Fatalf("TimeOrdered() = %s (%v), want a version 7 UUID", o, err)
		}
		if o <= prev {
			t.Fatalf("TimeOrdered() = %s after %s: not increasing", o, prev)
		}
		prev = o
	}
}
