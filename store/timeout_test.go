package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/store"
)

// stalled is a backend whose calls block until their context ends, as on
// a database that stopped answering; it records the deadline each got.
type stalled struct {
	store.Backend
	deadlines chan time.Time
}

func (b *stalled) wait(ctx context.Context) error {
	dl, _ := ctx.Deadline()
	b.deadlines <- dl
	<-ctx.Done()
	return ctx.Err()
}

func (b *stalled) Get(ctx context.Context, ns []string, key string, now time.Time, refresh bool) (*store.Record, error) {
	return nil, b.wait(ctx)
}

func (b *stalled) Put(ctx context.Context, writes []store.Write) error { return b.wait(ctx) }

func (b *stalled) Search(ctx context.Context, q *store.Query) ([]store.Record, error) {
	return nil, b.wait(ctx)
}

// Every operation is bounded, whatever the caller's context allows: on a
// stalled backend it fails with ErrTimeout naming the bound, by default
// after DefaultTimeout.
func TestOperationsAreBounded(t *testing.T) {
	ctx := context.Background()
	b := &stalled{Backend: store.NewMemoryBackend(), deadlines: make(chan time.Time, 10)}
	s, err := store.New(b, store.Config{Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ns := []string{"u"}
	for _, op := range []struct {
		name string
		fn   func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, ns, "k", store.GetOptions{}); return err }},
		{"Put", func() error { return s.Put(ctx, ns, "k", map[string]any{"text": "x"}, store.PutOptions{}) }},
		{"Search", func() error { _, err := s.Search(ctx, ns, store.SearchOptions{}); return err }},
	} {
		err := op.fn()
		if !errors.Is(err, store.ErrTimeout) || !strings.Contains(err.Error(), "Config.Timeout") {
			t.Errorf("%s on a stalled backend = %v; want ErrTimeout naming Config.Timeout", op.name, err)
		}
	}
	// The default bound: the caller's context has no deadline, the call
	// gets one.
	for len(b.deadlines) > 0 {
		<-b.deadlines
	}
	d, err := store.New(b, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	got := make(chan time.Time, 1)
	go func() {
		got <- <-b.deadlines
		cancel() // rather than wait for the bound
	}()
	start := time.Now()
	d.Get(cctx, ns, "k", store.GetOptions{})
	if dl := <-got; dl.IsZero() || dl.Sub(start) > store.DefaultTimeout+time.Minute {
		t.Errorf("a call of a store with the default bound had deadline %v; want about %v after the call", dl, store.DefaultTimeout)
	}
	if _, err := store.New(b, store.Config{Timeout: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a negative Timeout = %v; want ErrInvalid", err)
	}
}
