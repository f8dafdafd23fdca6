// Package providertest holds the tests every HTTP model provider must
// pass, whatever its wire format: a reply that is not one, a body without
// end, a stream that stalls or closes before its end, a slow consumer, a
// consumer that stops early, and fuzzing of what a 200 may hold. Each
// provider's tests run them over its own fixtures (OpenAI, Anthropic);
// agents' tests open models of both through them.
package providertest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/anthropic"
	"github.com/weftlabs/weft/llm/openai"
)

// Settings are the options of a model under test that the tests set.
type Settings struct {
	Timeouts         llm.Timeouts
	Retry            llm.RetryPolicy
	MaxResponseBytes int64
	HTTPClient       *http.Client
}

// Provider is a provider under test, with fixtures in its wire format.
type Provider struct {
	// Name is the provider's name, as its errors say it.
	Name string
	// Open opens a model of the provider served at url.
	Open func(url string, s Settings) (llm.ChatModel, error)
	// CutShort is a stream that closes before its reply's end, after
	// CutShortChunks chunks whose text is "Hello"; with Finish after it,
	// it is a whole reply.
	CutShort       []wiretest.Event
	CutShortChunks int
	Finish         []wiretest.Event
	// NoReply is a stream of well-formed events that end without a
	// reply, after NoReplyChunks chunks.
	NoReply       []wiretest.Event
	NoReplyChunks int
	// Endless begins a stream event that never ends.
	Endless string
	// Replies and Streams are bodies of success responses, to seed
	// fuzzing: replies of Generate, streams of Stream.
	Replies, Streams []string
}

// OpenAI is the OpenAI-compatible provider (llm/openai).
func OpenAI() Provider {
	chunk := func(rest string) wiretest.Event {
		return wiretest.Event{Data: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",` + rest}
	}
	head := []wiretest.Event{
		chunk(`"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`),
	}
	finish := []wiretest.Event{
		chunk(`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
		chunk(`"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`),
		{Data: "[DONE]"},
	}
	calls := []wiretest.Event{
		chunk(`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}]}`),
		chunk(`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}`),
	}
	full := append(append(append([]wiretest.Event{}, head...), calls...), finish...)
	return Provider{
		Name: "openai",
		Open: func(url string, s Settings) (llm.ChatModel, error) {
			return openai.New(openai.Options{Model: "gpt-4o-mini", APIKey: "k", BaseURL: url + "/v1/",
				Timeouts: s.Timeouts, Retry: s.Retry, MaxResponseBytes: s.MaxResponseBytes, HTTPClient: s.HTTPClient})
		},
		CutShort:       head,
		CutShortChunks: 1,
		Finish:         finish,
		NoReply:        []wiretest.Event{{Data: "{}"}, {Data: "[DONE]"}},
		Endless:        `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`,
		Replies: []string{
			`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`,
			`{"choices":[{"message":null}]}`, `{"choices":5}`,
		},
		Streams: []string{sse(full), sse(head), sse([]wiretest.Event{{Data: `{"choices":5}`}})},
	}
}

// Anthropic is the Anthropic provider (llm/anthropic).
func Anthropic() Provider {
	ev := func(name, data string) wiretest.Event { return wiretest.Event{Name: name, Data: data} }
	full := []wiretest.Event{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("ping", `{"type":"ping"}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3}}`),
		ev("message_stop", `{"type":"message_stop"}`),
	}
	return Provider{
		Name: "anthropic",
		Open: func(url string, s Settings) (llm.ChatModel, error) {
			return anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: url,
				Timeouts: s.Timeouts, Retry: s.Retry, MaxResponseBytes: s.MaxResponseBytes, HTTPClient: s.HTTPClient})
		},
		// message_start (its usage), then the text "Hello".
		CutShort:       full[:4],
		CutShortChunks: 2,
		Finish:         full[9:],
		NoReply:        full[:1],
		NoReplyChunks:  1,
		Endless:        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
		Replies: []string{
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"toolu_a","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`,
			`{"content":null}`, `{"content":5}`,
		},
		Streams: []string{sse(full), sse(full[:4]), sse([]wiretest.Event{ev("message_start", `{"type":"message_start","message":5}`)})},
	}
}

func sse(events []wiretest.Event) string {
	var b strings.Builder
	for _, e := range events {
		if e.Name != "" {
			b.WriteString("event: " + e.Name + "\n")
		}
		b.WriteString("data: " + e.Data + "\n\n")
	}
	return b.String()
}

// Model opens a model of p served by s, failing the test if it cannot.
func (p Provider) Model(t testing.TB, s *wiretest.Server, settings Settings) llm.ChatModel {
	t.Helper()
	m, err := p.Open(s.URL, settings)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var hi = []llm.Message{llm.Human("hi")}

// collect streams a reply to "hi", returning the chunks that came before
// the stream ended, and its error.
func collect(m llm.ChatModel) (llm.Message, []llm.Chunk, error) {
	var chunks []llm.Chunk
	for c, err := range m.Stream(context.Background(), hi) {
		if err != nil {
			return llm.Merge(chunks...).Message(), chunks, err
		}
		chunks = append(chunks, c)
	}
	return llm.Merge(chunks...).Message(), chunks, nil
}

// InvalidSuccessBody: a success status whose body is not a reply is an
// error naming the provider and matching llm.ErrInvalidResponse, never an
// empty answer nor a panic, whether the call streams or not (issue 7 §4).
func InvalidSuccessBody(t *testing.T, p Provider) {
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
			m := p.Model(t, wiretest.New(t, wiretest.JSON(200, tc.body)), Settings{})
			got, err := m.Generate(context.Background(), hi)
			if !errors.Is(err, llm.ErrInvalidResponse) || !strings.Contains(err.Error(), p.Name) {
				t.Errorf("Generate: err = %v (message %+v), want ErrInvalidResponse naming %s", err, got, p.Name)
			}
			got, _, err = collect(m)
			if !errors.Is(err, llm.ErrInvalidResponse) || !strings.Contains(err.Error(), p.Name) {
				t.Errorf("Stream: err = %v (message %+v), want ErrInvalidResponse naming %s", err, got, p.Name)
			}
		})
	}
}

// StreamStalls: a stream that stalls after its first chunks fails with the
// idle bound's error, and is not retried: part of the reply was delivered
// (issue 7 §3).
func StreamStalls(t *testing.T, p Provider) {
	s := wiretest.New(t, wiretest.SSE(true, p.CutShort...))
	var sleeps wiretest.Sleeps
	m := p.Model(t, s, Settings{Timeouts: llm.Timeouts{StreamIdle: 50 * time.Millisecond}, Retry: llm.RetryPolicy{Sleep: sleeps.Sleep}})
	got, chunks, err := collect(m)
	if !errors.Is(err, llm.ErrStreamIdleTimeout) || !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrStreamIdleTimeout", err)
	}
	if len(chunks) != p.CutShortChunks || got.Content != "Hello" {
		t.Errorf("chunks before the stall = %+v", chunks)
	}
	if n := len(s.Requests()); n != 1 || len(sleeps.Waits()) != 0 {
		t.Errorf("%d requests, waits %v: a stream that produced output must not be retried", n, sleeps.Waits())
	}
}

// FirstByteBound: nothing received after the request is the first-byte
// bound's error, whether the call streams or not.
func FirstByteBound(t *testing.T, p Provider) {
	m := p.Model(t, wiretest.New(t, wiretest.Hang()), Settings{Timeouts: llm.Timeouts{FirstByte: 20 * time.Millisecond}, Retry: llm.RetryPolicy{MaxRetries: -1}})
	if _, err := m.Generate(context.Background(), hi); !errors.Is(err, llm.ErrFirstByteTimeout) {
		t.Errorf("Generate: err = %v, want ErrFirstByteTimeout", err)
	}
	if _, _, err := collect(m); !errors.Is(err, llm.ErrFirstByteTimeout) {
		t.Errorf("Stream: err = %v, want ErrFirstByteTimeout", err)
	}
}

// NothingListening: the error names the provider and the address.
func NothingListening(t *testing.T, p Provider) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var sleeps wiretest.Sleeps
	m, err := p.Open("http://"+addr, Settings{Retry: llm.RetryPolicy{Sleep: sleeps.Sleep, QuietRetries: true}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), hi)
	if err == nil || !strings.Contains(err.Error(), p.Name) || !strings.Contains(err.Error(), addr) {
		t.Errorf("err = %v, want one naming %s and %s", err, p.Name, addr)
	}
}

// EndlessBody: a server that sends without end is cut off at
// MaxResponseBytes with an error matching llm.ErrInvalidResponse: a body
// that is one endless JSON object, or a stream that is one endless line.
// (The default bound is llm/internal/wire's test.)
func EndlessBody(t *testing.T, p Provider) {
	for _, tc := range []struct {
		name  string
		limit int64
	}{
		{"1 MiB", 1 << 20},
		{"1 byte", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := p.Model(t, wiretest.New(t, wiretest.Endless("application/json", `{"id": "`)), Settings{MaxResponseBytes: tc.limit})
			if _, err := m.Generate(context.Background(), hi); !errors.Is(err, llm.ErrInvalidResponse) {
				t.Errorf("Generate: err = %v, want ErrInvalidResponse", err)
			}
			m = p.Model(t, wiretest.New(t, wiretest.Endless("text/event-stream", p.Endless)), Settings{MaxResponseBytes: tc.limit})
			if _, _, err := collect(m); !errors.Is(err, llm.ErrInvalidResponse) {
				t.Errorf("Stream: err = %v, want ErrInvalidResponse", err)
			}
		})
	}
}

// StreamCutShort: a stream that closes before the reply's end (a dropped
// proxy connection that closes cleanly) is an error matching
// llm.ErrInvalidResponse, after the chunks that did arrive: never a
// cut-short reply taken as whole.
func StreamCutShort(t *testing.T, p Provider) {
	for _, tc := range []struct {
		name   string
		events []wiretest.Event
		chunks int
	}{
		{"mid-reply", p.CutShort, p.CutShortChunks},
		{"no reply", p.NoReply, p.NoReplyChunks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := p.Model(t, wiretest.New(t, wiretest.SSE(false, tc.events...)), Settings{})
			got, chunks, err := collect(m)
			if !errors.Is(err, llm.ErrInvalidResponse) || !strings.Contains(err.Error(), p.Name) {
				t.Errorf("err = %v (message %+v), want ErrInvalidResponse naming %s", err, got, p.Name)
			}
			if len(chunks) != tc.chunks {
				t.Errorf("%d chunks before the error, want %d", len(chunks), tc.chunks)
			}
		})
	}
}

// StreamIdleIgnoresSlowConsumer: the idle bound counts the provider's
// silence, not the consumer's time with a chunk: a consumer slower than
// the bound (a client behind a slow link) does not fail a stream whose
// events came on time.
func StreamIdleIgnoresSlowConsumer(t *testing.T, p Provider) {
	release := make(chan struct{})
	// The first event, then the rest once the consumer holds a chunk.
	events := append(append([]wiretest.Event{}, p.CutShort...), p.Finish...)
	s := wiretest.New(t, wiretest.SSEGated(release, 1, events...))
	m := p.Model(t, s, Settings{Timeouts: llm.Timeouts{StreamIdle: 30 * time.Millisecond}})
	n := 0
	var text strings.Builder
	for c, err := range m.Stream(context.Background(), hi) {
		if err != nil {
			t.Fatalf("after %q: %v", text.String(), err)
		}
		text.WriteString(c.Content)
		if n++; n == 1 {
			close(release)
			time.Sleep(100 * time.Millisecond) // the consumer takes its time
		}
	}
	if text.String() != "Hello" {
		t.Errorf("text %q, want Hello", text.String())
	}
}

// StreamStoppedEarly: a consumer that stops early releases the
// connection: the server sees the client go, though it would have held
// the stream open.
func StreamStoppedEarly(t *testing.T, p Provider) {
	gone := make(chan struct{})
	s := wiretest.New(t, func(w http.ResponseWriter, r *http.Request) {
		wiretest.SSE(true, p.CutShort...)(w, r)
		close(gone)
	})
	m := p.Model(t, s, Settings{})
	for _, err := range m.Stream(context.Background(), hi) {
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

// told reports whether err is one a caller can act on: a provider's
// error, or a reply that is not one (llm.ErrInvalidResponse).
func told(err error) bool {
	var ae *llm.APIError
	return err == nil || errors.Is(err, llm.ErrInvalidResponse) || errors.As(err, &ae)
}

// fuzzModel is a model of p whose every call is answered, without a
// network, with status 200, the content type and body.
func (p Provider) fuzzModel(t *testing.T, contentType string, body []byte) llm.ChatModel {
	m, err := p.Open("http://model.test", Settings{
		HTTPClient: &http.Client{Transport: wiretest.Answer{ContentType: contentType, Body: body}},
		Retry:      llm.RetryPolicy{MaxRetries: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzGenerateBody: whatever a success body holds, Generate neither panics
// nor fails with an error that is neither an API error nor an invalid
// response.
func FuzzGenerateBody(f *testing.F, p Provider) {
	for _, s := range append([]string{"", "null", "{}"}, p.Replies...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := p.fuzzModel(t, "application/json", body).Generate(context.Background(), hi)
		if !told(err) {
			t.Fatalf("err = %v", err)
		}
		if err == nil && got.Type != llm.TypeAI {
			t.Fatalf("reply of type %q", got.Type)
		}
	})
}

// FuzzStreamBody: whatever a stream holds, Stream neither panics nor
// fails with an error that is neither an API error nor an invalid
// response, and what it streamed merges into an AI message.
func FuzzStreamBody(f *testing.F, p Provider) {
	for _, s := range p.Streams {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := llm.Collect(p.fuzzModel(t, "text/event-stream", body).Stream(context.Background(), hi))
		if !told(err) {
			t.Fatalf("err = %v", err)
		}
		if got.Type != llm.TypeAI {
			t.Fatalf("message of type %q", got.Type)
		}
	})
}
