// Package ids makes the unique ids weft assigns: random UUIDs for messages
// without one (as LangChain's add_messages does) and time-ordered UUIDs for
// checkpoints.
package ids

import (
	"math/rand/v2"

	"github.com/google/uuid"
)

// Random returns a new random (version 4) UUID string.
func Random() string { return uuid.Must(uuid.NewRandomFromReader(fastRand{})).String() }

// TimeOrdered returns a new time-ordered (version 7) UUID string: ids made
// later compare greater as strings.
func TimeOrdered() string { return uuid.Must(uuid.NewV7FromReader(fastRand{})).String() }

// fastRand fills ids' random bits from math/rand/v2's per-thread ChaCha8
// source, seeded by the runtime from the system's randomness: ids must be
// unique, not secret, and a run makes one per message and per step, which
// crypto/rand would answer with a system call each.
type fastRand struct{}

func (fastRand) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := rand.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return len(p), nil
}
