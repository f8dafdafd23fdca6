package records

import (
	"context"
	"errors"
	"strconv"
	"testing"
)

// A write after Close fails with ErrClosed: it never waits for a
// committer that has stopped (a second server Shutdown writes so).
func TestWriteAfterClose(t *testing.T) {
	s, closeDB, err := OpenMemory(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDB() })
	s.Close()
	// The queue has room: each write races the closed store's stop, so
	// try enough of them to take both sides.
	for i := range 200 {
		_, err := s.CreateThread(context.Background(), Thread{ID: "t" + strconv.Itoa(i)}, false)
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("write %d after Close: %v, want ErrClosed", i, err)
		}
	}
}
