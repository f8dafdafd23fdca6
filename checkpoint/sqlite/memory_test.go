package sqlite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/sqlite"
)

// A database in memory is one database per connection, so its pool has
// one connection, which the driver keeps for its writers: its first
// statement prepared on the pool, or its first read, would wait for a
// second connection for ever, whatever its context. Open refuses such a
// database at once.
func TestOpenInMemoryRefused(t *testing.T) {
	for _, path := range []string{":memory:", "file::memory:"} {
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			d, err := sqlite.Open(ctx, path)
			if err == nil {
				d.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, checkpoint.ErrInvalid) {
				t.Errorf("Open(%q) = %v, want ErrInvalid", path, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Open(%q) still waits a minute after its context ended", path)
		}
	}
}
