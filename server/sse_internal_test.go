package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// flushCounter is a ResponseWriter that records what was written before
// each flush, and calls onWrite after each write.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes []string // the body written since the previous flush, for each flush
	pending bytes.Buffer
	onWrite func()
	onFlush func()
}

func (f *flushCounter) Write(p []byte) (int, error) {
	f.pending.Write(p)
	n, err := f.ResponseRecorder.Write(p)
	if f.onWrite != nil {
		f.onWrite()
	}
	return n, err
}

func (f *flushCounter) Flush() {
	f.flushes = append(f.flushes, f.pending.String())
	f.pending.Reset()
	f.ResponseRecorder.Flush()
	if f.onFlush != nil {
		f.onFlush()
	}
}

// A stream over the in-process broker writes every event published while
// it writes before it flushes, and flushes once, when it has nothing left
// to write and is about to wait; its headers are not flushed alone but go
// with its first events. Here each write of the stream publishes one more
// event (as a run's superstep publishes a burst while the stream writes
// the first ones): the ten events go in one flush, the first one.
func TestSSECoalescesPendingEvents(t *testing.T) {
	b := newMemoryBroker()
	s := &Server{runs: &manager{broker: b}}
	const run, total = "r", 10
	if err := b.Open(run); err != nil {
		t.Fatal(err)
	}
	publish := func(i int) {
		if err := b.Publish(run, Event{Name: "values", Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	publish(0)
	published := 1
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	w.onWrite = func() {
		// An event's last write ends with a blank line.
		if published < total && bytes.HasSuffix(w.pending.Bytes(), []byte("\n\n")) {
			publish(published)
			published++
		}
	}
	w.onFlush = func() {
		if len(w.flushes) == 1 {
			// Waiting now: the run ends.
			if err := b.Close(run, 0); err != nil {
				t.Error(err)
			}
		}
	}
	out := &sse{}
	events, ok := s.subscribe(context.Background(), run, -1, out)
	if !ok {
		t.Fatal("no stream")
	}
	out.start(w)
	if len(w.flushes) != 0 {
		t.Fatalf("the headers were flushed alone (%d flushes before any event)", len(w.flushes))
	}
	if !s.follow(out, events) {
		t.Fatal("follow says the client went away")
	}
	if len(w.flushes) != 1 {
		t.Fatalf("%d flushes for %d events written back to back, want 1: %q", len(w.flushes), total, w.flushes)
	}
	var want strings.Builder
	for i := range total {
		fmt.Fprintf(&want, "event: values\ndata: {\"n\":%d}\nid: %d\n\n", i, i)
	}
	if w.flushes[0] != want.String() {
		t.Errorf("flushed %q, want %q", w.flushes[0], want.String())
	}
	if got := w.Body.String(); got != want.String() {
		t.Errorf("body = %q, want %q", got, want.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
}

// A held stream that ends before it waits (a join replaying an ended
// run's events) still flushes, once, so that its response is chunked as
// every stream's is; a stream over another broker flushes its headers at
// once and each batch.
func TestSSEFlushesAStreamThatNeverWaited(t *testing.T) {
	b := newMemoryBroker()
	s := &Server{runs: &manager{broker: b}}
	if err := b.Open("r"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := b.Publish("r", Event{Name: "values", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close("r", time.Minute); err != nil {
		t.Fatal(err)
	}
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	out := &sse{}
	events, ok := s.subscribe(context.Background(), "r", -1, out)
	if !ok {
		t.Fatal("no stream")
	}
	out.start(w)
	s.follow(out, events)
	if len(w.flushes) != 1 || strings.Count(w.flushes[0], "event: values") != 3 {
		t.Errorf("flushes = %q, want one with the 3 events", w.flushes)
	}

	// Another broker: the in-process one seen through an interface the
	// server does not know, so that it cannot hold the flushes.
	other := struct{ Broker }{b}
	s = &Server{runs: &manager{broker: other}}
	w = &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	out = &sse{}
	events, ok = s.subscribe(context.Background(), "r", -1, out)
	if !ok {
		t.Fatal("no stream")
	}
	out.start(w)
	if len(w.flushes) != 1 || w.flushes[0] != "" {
		t.Fatalf("flushes after start = %q, want the headers' alone", w.flushes)
	}
	s.follow(out, events)
	if len(w.flushes) != 2 || strings.Count(w.flushes[1], "event: values") != 3 {
		t.Errorf("flushes = %q, want the headers', then the batch's", w.flushes)
	}
}

var _ http.Flusher = (*flushCounter)(nil)
