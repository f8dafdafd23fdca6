// Package ids makes the unique ids weft assigns: random UUIDs for messages
// without one (as LangChain's add_messages does) and time-ordered UUIDs for
// checkpoints.
package ids

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The UUIDs are made here, in a value on the stack, rather than by
// uuid.NewRandomFromReader and uuid.NewV7FromReader, whose reads through
// an io.Reader put each UUID on the heap: a run makes several ids (its
// own, one per checkpoint and per message), and the string is the only
// allocation each needs.

// Random returns a new random (version 4) UUID string.
func Random() string {
	var u uuid.UUID
	fill(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
	return u.String()
}

// TimeOrdered returns a new time-ordered (version 7) UUID string: ids made
// later compare greater as strings.
func TimeOrdered() string {
	var u uuid.UUID
	fill(u[8:])
	milli, seq := v7Time()
	binary.BigEndian.PutUint64(u[:8], uint64(milli)<<16|0x7000|uint64(seq)) // 48-bit time, version 7, 12-bit sequence
	u[8] = u[8]&0x3f | 0x80                                                 // variant RFC 4122
	return u.String()
}

// v7 holds the last time and sequence TimeOrdered used.
var v7 struct {
	mu   sync.Mutex
	last int64
}

// v7Time returns the time in milliseconds and, as the 12-bit sequence
// within it, its fraction of a millisecond in steps of 256 ns; milli<<12
// + seq is greater than any it returned before, as uuid.NewV7 makes it.
func v7Time() (milli, seq int64) {
	nano := time.Now().UnixNano()
	milli = nano / 1e6
	now := milli<<12 + (nano-milli*1e6)>>8
	v7.mu.Lock()
	if now <= v7.last {
		now = v7.last + 1
	}
	v7.last = now
	v7.mu.Unlock()
	return now >> 12, now & 0xfff
}

// fill fills p with random bits from math/rand/v2's per-thread ChaCha8
// source, seeded by the runtime from the system's randomness: ids must be
// unique, not secret, and a run makes one per message and per step, which
// crypto/rand would answer with a system call each.
func fill(p []byte) {
	for i := 0; i < len(p); i += 8 {
		v := rand.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
}
