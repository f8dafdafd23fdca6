package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
)

// TestReplayKeepsWhatFailsAgain replays kept conversations while the
// model still fails: each one fails again and is kept again under the
// same key (its thread), and must still be kept once Replay and the
// reflection are done, whichever of Replay's removal and the new keep
// comes first.
func TestReplayKeepsWhatFailsAgain(t *testing.T) {
	ctx := context.Background()
	kept := memStore(t)
	x := &extractor{fail: -1}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}, Attempts: 1, Backoff: time.Millisecond, Failed: kept})
	conv := []llm.Message{llm.Human("remember that I am vegetarian"), llm.AI("Noted.")}
	if err := r.Submit("alice", "t1", conv); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 300 {
		if n, err := r.Replay(ctx); err != nil || n != 1 {
			t.Fatalf("round %d: Replay = %d, %v; want 1", round, n, err)
		}
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		items, err := kept.Search(ctx, []string{memory.FailedRoot}, store.SearchOptions{})
		if err != nil || len(items) != 1 {
			t.Fatalf("round %d: %d conversations kept (%v), want the one that failed again", round, len(items), err)
		}
	}
}

// TestReplayRefusedStaysKept replays into a closed Reflector: the
// submission is refused and the conversation stays kept, as it was.
func TestReplayRefusedStaysKept(t *testing.T) {
	ctx := context.Background()
	kept := memStore(t)
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{&extractor{fail: -1}}, Attempts: 1, Backoff: time.Millisecond, Failed: kept})
	if err := r.Submit("alice", "t1", []llm.Message{llm.Human("hi"), llm.AI("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := kept.Search(ctx, []string{memory.FailedRoot}, store.SearchOptions{})
	if err != nil || len(before) != 1 {
		t.Fatalf("kept before: %d, %v", len(before), err)
	}
	if n, err := r.Replay(ctx); !errors.Is(err, memory.ErrClosed) || n != 0 {
		t.Errorf("Replay after Close = %d, %v; want 0, ErrClosed", n, err)
	}
	after, err := kept.Search(ctx, []string{memory.FailedRoot}, store.SearchOptions{})
	if err != nil || len(after) != 1 || after[0].Key != before[0].Key || string(after[0].Value) != string(before[0].Value) {
		t.Errorf("kept after a refused replay: %d items (%v), want the same record", len(after), err)
	}
}
