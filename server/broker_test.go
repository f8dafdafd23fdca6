package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func collect(t *testing.T, b Broker, run string, after int) ([]int, error) {
	t.Helper()
	evs, ok := b.Subscribe(context.Background(), run, after)
	if !ok {
		t.Fatalf("no stream for %s", run)
	}
	var ids []int
	for batch, err := range evs {
		if err != nil {
			return ids, err
		}
		for _, e := range batch {
			ids = append(ids, e.ID)
		}
	}
	return ids, nil
}

func TestMemoryBroker(t *testing.T) {
	b := newMemoryBroker()
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }
	if err := b.Open("r"); err != nil {
		t.Fatal(err)
	}
	if err := b.Open("r"); err == nil {
		t.Error("a stream opened twice")
	}
	live, _ := b.Subscribe(context.Background(), "r", FromNow)
	for range 3 {
		if err := b.Publish("r", Event{Name: "values", Data: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan []int)
	go func() {
		var ids []int
		for batch, err := range live {
			if err != nil {
				break
			}
			for _, e := range batch {
				ids = append(ids, e.ID)
			}
		}
		got <- ids
	}()
	_ = b.Publish("r", Event{Name: "values", Data: []byte("{}")})
	if err := b.Close("r", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ids := <-got; len(ids) != 4 || ids[0] != 0 {
		t.Errorf("a reader from before the first event got %v", ids)
	}
	if ids, err := collect(t, b, "r", 1); err != nil || len(ids) != 2 || ids[0] != 2 {
		t.Errorf("after 1: %v %v", ids, err)
	}
	if err := b.Publish("r", Event{}); err == nil {
		t.Error("published to a closed stream")
	}
	// The retention runs out: the stream goes at the next change.
	now = now.Add(2 * time.Minute)
	_ = b.Open("other")
	if _, ok := b.Subscribe(context.Background(), "r", -1); ok {
		t.Error("the stream outlived its retention")
	}
	// Without retention a stream goes at once when closed.
	_ = b.Close("other", 0)
	if _, ok := b.Subscribe(context.Background(), "other", -1); ok {
		t.Error("a stream without retention stayed")
	}
}

func TestMemoryBrokerTrims(t *testing.T) {
	b := newMemoryBroker()
	_ = b.Open("r")
	big := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	for range 20 {
		_ = b.Publish("r", Event{Name: "custom", Data: big})
	}
	_ = b.Close("r", time.Minute)
	if ids, err := collect(t, b, "r", 0); !errors.Is(err, ErrStreamTrimmed) {
		t.Errorf("a reader behind the kept events: %v %v, want ErrStreamTrimmed", ids, err)
	}
	ids, err := collect(t, b, "r", -1)
	if err != nil || len(ids) == 0 || len(ids) >= 20 || ids[len(ids)-1] != 19 {
		t.Errorf("from the first kept: %v %v", ids, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = b.Open("slow")
	evs, _ := b.Subscribe(ctx, "slow", -1)
	cancel()
	for _, err := range evs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a reader whose context ended: %v", err)
		}
	}
}
