package anthropic_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/anthropic"
)

// A success status whose body is not a reply is an error naming the
// provider and matching llm.ErrInvalidResponse, never an empty answer nor
// a panic, whether the call streams or not (issue 7 §4).
func TestInvalidSuccessBody(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"garbage", "{not json at all"},
		{"empty", ""},
		{"null", "null"},
		{"array", "[1, 2]"},
		{"string", `"hello"`},
		{"empty object", "{}"},
		{"html", "<html><body>Bad gateway</body></html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wiretest.New(t, wiretest.JSON(200, tc.body))
			m := newModel(t, s, nil)
			got, err := m.Generate(ctx, []llm.Message{llm.Human("hi")})
			if !errors.Is(err, llm.ErrInvalidResponse) || !strings.Contains(err.Error(), "anthropic") {
				t.Errorf("Generate: err = %v (message %+v), want ErrInvalidResponse naming anthropic", err, got)
			}
			got, _, err = collect(m, []llm.Message{llm.Human("hi")})
			if !errors.Is(err, llm.ErrInvalidResponse) || !strings.Contains(err.Error(), "anthropic") {
				t.Errorf("Stream: err = %v (message %+v), want ErrInvalidResponse naming anthropic", err, got)
			}
		})
	}
}

// A stream that stalls after its first events fails with the idle bound's
// error and is not retried (issue 7 §3).
func TestStreamStallsAfterFirstChunk(t *testing.T) {
	s := wiretest.New(t, wiretest.SSE(true, toolsStream[:4]...))
	var sleeps wiretest.Sleeps
	m := newModel(t, s, &sleeps, func(o *anthropic.Options) { o.Timeouts.StreamIdle = 50 * time.Millisecond })
	got, _, err := collect(m, []llm.Message{llm.Human("hi")})
	if !errors.Is(err, llm.ErrStreamIdleTimeout) {
		t.Fatalf("err = %v, want ErrStreamIdleTimeout", err)
	}
	if got.Content != "두 가지를" {
		t.Errorf("text before the stall = %q", got.Content)
	}
	if n := len(s.Requests()); n != 1 || len(sleeps.Waits()) != 0 {
		t.Errorf("%d requests, waits %v: a stream that produced output must not be retried", n, sleeps.Waits())
	}
}

// A server that sends without end is cut off at MaxResponseBytes with an
// error matching llm.ErrInvalidResponse: a body that is one endless JSON
// object, or a stream that is one endless line. (The default bound is
// llm/internal/wire's test.)
func TestEndlessBody(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64
	}{
		{"1 MiB", 1 << 20},
		{"1 byte", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wiretest.New(t, wiretest.Endless("application/json", `{"id": "`))
			m := newModel(t, s, nil, func(o *anthropic.Options) { o.MaxResponseBytes = tc.limit })
			if _, err := m.Generate(ctx, []llm.Message{llm.Human("hi")}); !errors.Is(err, llm.ErrInvalidResponse) {
				t.Errorf("Generate: err = %v, want ErrInvalidResponse", err)
			}
			s = wiretest.New(t, wiretest.Endless("text/event-stream", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""))
			m = newModel(t, s, nil, func(o *anthropic.Options) { o.MaxResponseBytes = tc.limit })
			if _, _, err := collect(m, []llm.Message{llm.Human("hi")}); !errors.Is(err, llm.ErrInvalidResponse) {
				t.Errorf("Stream: err = %v, want ErrInvalidResponse", err)
			}
		})
	}
}

// A stream that closes before the reply's end (a dropped proxy connection
// that closes cleanly) is an error matching llm.ErrInvalidResponse, after
// the chunks that did arrive: never a cut-short reply taken as whole.
func TestStreamCutShort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []wiretest.Event
		chunks int
	}{
		{"mid-reply", textStream[:4], 3},
		// The reply's start and nothing after it.
		{"only the start", textStream[:1], 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wiretest.New(t, wiretest.SSE(false, tc.events...))
			m := newModel(t, s, nil)
			got, chunks, err := collect(m, []llm.Message{llm.Human("hi")})
			if !errors.Is(err, llm.ErrInvalidResponse) || !strings.Contains(err.Error(), "anthropic") {
				t.Errorf("err = %v (message %+v), want ErrInvalidResponse naming anthropic", err, got)
			}
			if len(chunks) != tc.chunks {
				t.Errorf("%d chunks before the error, want %d", len(chunks), tc.chunks)
			}
		})
	}
}

// The idle bound counts the provider's silence, not the consumer's time
// with a chunk: a consumer slower than the bound (a client behind a slow
// link) does not fail a stream whose events came on time.
func TestStreamIdleIgnoresSlowConsumer(t *testing.T) {
	release := make(chan struct{})
	// Two events, then the rest once the consumer holds a chunk.
	s := wiretest.New(t, wiretest.SSEGated(release, 2, textStream...))
	m := newModel(t, s, nil, func(o *anthropic.Options) { o.Timeouts.StreamIdle = 30 * time.Millisecond })
	var text strings.Builder
	n := 0
	for c, err := range m.Stream(ctx, []llm.Message{llm.Human("hi")}) {
		if err != nil {
			t.Fatalf("after %q: %v", text.String(), err)
		}
		text.WriteString(c.Content)
		if n++; n == 1 {
			close(release)
			time.Sleep(100 * time.Millisecond) // the consumer takes its time
		}
	}
	if text.Len() == 0 {
		t.Error("no text streamed")
	}
}

// A consumer that stops early releases the connection: the server sees the
// client go, though it would have held the stream open.
func TestStreamStoppedEarlyReleasesConnection(t *testing.T) {
	gone := make(chan struct{})
	s := wiretest.New(t, func(w http.ResponseWriter, r *http.Request) {
		wiretest.SSE(true, textStream[:3]...)(w, r)
		close(gone)
	})
	m := newModel(t, s, nil)
	for _, err := range m.Stream(ctx, []llm.Message{llm.Human("hi")}) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	select {
	case <-gone:
	case <-time.After(30 * time.Second): // a guard against a hung test, not a measure
		s.CloseClientConnections()
		t.Fatal("the server still holds the stream: the response body was not closed")
	}
}
