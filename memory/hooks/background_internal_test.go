package hooks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
)

func newBackground(t *testing.T, opts BackgroundOptions) *Background {
	t.Helper()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exp, err := memory.NewExperience(st, memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b, err := NewBackground(exp, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return b
}

// counter is an op that fails its first fails calls.
type counter struct {
	mu           sync.Mutex
	calls, fails int
}

func (c *counter) op(what string) op {
	return op{what, func(context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.calls++
		if c.calls <= c.fails {
			return errors.New("the store is down")
		}
		return nil
	}}
}

// A write that fails is tried again, alone: the job's other writes are
// not made twice. One that fails every attempt is told with what it was.
func TestBackgroundRetries(t *testing.T) {
	var mu sync.Mutex
	var told []string
	b := newBackground(t, BackgroundOptions{Attempts: 3, Backoff: time.Millisecond, OnDone: func(j Job, err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, j.Kind+" "+j.User+": "+errString(err))
	}})
	ok, flaky, broken := &counter{}, &counter{fails: 2}, &counter{fails: 10}
	if err := b.enqueue(&job{Job: Job{User: "alice", Kind: "task"}, ops: []op{ok.op("the plan"), flaky.op("the workflow")}}); err != nil {
		t.Fatal(err)
	}
	if err := b.enqueue(&job{Job: Job{User: "bob", Kind: "clarification"}, ops: []op{broken.op("the clarification")}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok.calls != 1 || flaky.calls != 3 || broken.calls != 3 {
		t.Errorf("calls: ok %d, flaky %d, broken %d; want 1, 3, 3", ok.calls, flaky.calls, broken.calls)
	}
	want := []string{"task alice: ", "clarification bob: the clarification: the store is down"}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(told, "|") != strings.Join(want, "|") {
		t.Errorf("told %q, want %q", told, want)
	}
	if s := b.Stats(); s.Queued != 2 || s.Recorded != 1 || s.Failed != 1 || s.Retries != 4 {
		t.Errorf("stats %+v", s)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A full queue refuses at once; a closed one too; Close that gives up
// drops what waits, says how much and tells each.
func TestBackgroundCloseAndFull(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var dropped int
	b := newBackground(t, BackgroundOptions{Queue: 1, OnDone: func(j Job, err error) {
		mu.Lock()
		defer mu.Unlock()
		if errors.Is(err, ErrClosed) {
			dropped++
		}
	}})
	started := make(chan struct{})
	block := op{"the plan", func(ctx context.Context) error {
		close(started)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	if err := b.enqueue(&job{Job: Job{User: "alice", Kind: "task"}, ops: []op{block}}); err != nil {
		t.Fatal(err)
	}
	<-started
	c := &counter{}
	if err := b.enqueue(&job{Job: Job{User: "alice", Kind: "task"}, ops: []op{c.op("x")}}); err != nil {
		t.Fatal(err)
	}
	if err := b.enqueue(&job{Job: Job{User: "bob", Kind: "task"}, ops: []op{c.op("y")}}); !errors.Is(err, ErrQueueFull) {
		t.Errorf("a third write with a queue of 1: %v", err)
	}
	// Alice's reads wait for her writes; bob's do not.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.settle(ctx, "alice"); err == nil || !strings.Contains(err.Error(), "waiting for what alice's last task taught to be recorded") {
		t.Errorf("alice's read while her writes wait: %v", err)
	}
	if err := b.settle(ctx, "bob"); err != nil {
		t.Errorf("bob's read: %v", err)
	}
	err := b.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 queued writes dropped") {
		t.Errorf("Close = %v", err)
	}
	if err := b.enqueue(&job{Job: Job{User: "bob", Kind: "task"}, ops: []op{c.op("z")}}); !errors.Is(err, ErrClosed) {
		t.Errorf("a write after Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dropped != 2 || c.calls != 0 {
		t.Errorf("%d dropped jobs told, %d writes made; want 2 and 0", dropped, c.calls)
	}
	if s := b.Stats(); s.Dropped != 4 || s.Recorded != 0 {
		t.Errorf("stats %+v", s)
	}
	close(release)
}
