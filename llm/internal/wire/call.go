package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
)

// Call is what a provider's calls share besides the request itself: its
// name, its bounds and its retry policy, and how its SDK's errors read.
type Call struct {
	// Provider names the provider in errors.
	Provider string
	// Bounds are the attempts' bounds, with defaults applied (Bounds).
	Bounds llm.Timeouts
	// Retry is the retry policy.
	Retry llm.RetryPolicy
	// Explain maps an SDK error of an attempt to weft's, naming provider:
	// API errors and error events; nil leaves every error to Attempt.Err.
	Explain func(provider string, att *Attempt, err error) error
	// MaxBytes bounds the bytes read of one response, a stream's whole
	// body included; zero means no bound.
	MaxBytes int64
}

// DefaultMaxResponseBytes is the bound on the bytes read of one response
// when a provider's options set none: far above any reply (a stream of
// 128k tokens is some 32 MiB of events), far below what would exhaust a
// server's memory.
const DefaultMaxResponseBytes = 64 << 20

// Middleware is an SDK middleware, both SDKs' option.Middleware.
type Middleware = func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error)

// NewCall returns a provider's Call, its bounds t with llm's defaults (see
// Bounds for shorthand), and the HTTP client it sends with: client, or when
// that is nil one whose connections are bounded by the connect bound.
// maxBytes is the provider's MaxResponseBytes: zero means
// DefaultMaxResponseBytes, a negative number no bound.
func NewCall(provider string, t llm.Timeouts, shorthand time.Duration, retry llm.RetryPolicy, client *http.Client, maxBytes int64, explain func(provider string, att *Attempt, err error) error) (Call, *http.Client) {
	bounds := Bounds(t, shorthand)
	if client == nil {
		client = HTTPClient(bounds)
	}
	switch {
	case maxBytes == 0:
		maxBytes = DefaultMaxResponseBytes
	case maxBytes < 0:
		maxBytes = 0
	}
	return Call{Provider: provider, Bounds: bounds, Retry: retry, Explain: explain, MaxBytes: maxBytes}, client
}

func (c *Call) explain(att *Attempt, err error) error {
	if c.Explain != nil {
		return c.Explain(c.Provider, att, err)
	}
	return att.Err(c.Provider, err)
}

// Generate makes a call that is not streamed, under the retry policy, each
// attempt bounded by c.Bounds: send sends the request under the attempt's
// context with check among the call's middleware, and reply converts the
// SDK's reply. check reads the body of a success response, at most
// c.MaxBytes of it, and fails with llm.ErrInvalidResponse unless it is a
// JSON object: the SDKs would take an empty body, or "null", as a reply.
func Generate[R any](ctx context.Context, c *Call, send func(ctx context.Context, check Middleware) (R, error), reply func(R) (llm.Message, error)) (llm.Message, error) {
	var out llm.Message
	err := c.Retry.Do(ctx, func(ctx context.Context) error {
		att := Start(ctx, c.Bounds)
		defer att.End()
		r, err := send(att.Context(), c.checkReply)
		if err != nil {
			return c.explain(att, err)
		}
		out, err = reply(r)
		return err
	})
	return out, err
}

// Events is an SDK's stream of decoded server-sent events.
type Events[E any] interface {
	Next() bool
	Current() E
	Err() error
	Close() error
}

// Decoder converts the events of one stream into chunks; it may keep what
// an event says for later ones (a message id).
type Decoder[E any] interface {
	// Chunk converts an event; ok false skips it.
	Chunk(ev E) (c llm.Chunk, ok bool)
	// Ended reports whether the events so far hold the reply's end (a
	// finish reason, a stop event). A stream that closes before it was
	// cut short, and its reply is not whole.
	Ended() bool
}

// Stream makes a streamed call. The request is retried under the policy
// until its first event arrives; after that the reply has been partly
// delivered, and a retry would repeat it. open sends the request under the
// attempt's context with check among the call's middleware, which bounds
// the bytes read of the stream by c.MaxBytes. newDecoder returns the
// decoder of one stream, afresh for each run of the iterator. A stream
// that closes before its reply's end fails with llm.ErrInvalidResponse.
func Stream[E any](ctx context.Context, c *Call, open func(ctx context.Context, check Middleware) Events[E], newDecoder func() Decoder[E]) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		var (
			events Events[E]
			att    *Attempt
			b      *body
		)
		err := c.Retry.Do(ctx, func(ctx context.Context) error {
			att, b = Start(ctx, c.Bounds), nil
			s := open(att.Context(), func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
				res, err := next(req)
				if err == nil && res.StatusCode < 300 {
					b = c.body(res.Body)
					res.Body = b
				}
				return res, err
			})
			if s.Next() {
				events = s
				return nil
			}
			err := c.streamErr(att, b, s.Err())
			if err == nil {
				err = EmptyStream(c.Provider)
			}
			_ = s.Close()
			att.End()
			return err
		})
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		defer att.End()
		defer events.Close()
		dec := newDecoder()
		for first := true; first || events.Next(); first = false {
			att.Arrived()
			if c, ok := dec.Chunk(events.Current()); ok && !yield(c, nil) {
				return
			}
			att.Waiting()
		}
		switch err := events.Err(); {
		case err != nil:
			yield(llm.Chunk{}, c.streamErr(att, b, err))
		case !dec.Ended():
			yield(llm.Chunk{}, fmt.Errorf("%w: %s: the stream closed before the reply's end (no finish reason or stop event): the reply is cut short", llm.ErrInvalidResponse, c.Provider))
		}
	}
}

// Failed is a stream that fails at once with err: a request that could not
// be built.
func Failed(err error) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, err) }
}

// streamErr explains err, an error of a stream whose body is b (nil when
// the response was an error): an error that is neither the body's, nor
// the attempt's end, nor an error the provider sent is an event that did
// not decode, which is an invalid response.
func (c *Call) streamErr(att *Attempt, b *body, err error) error {
	if err == nil {
		return nil
	}
	e := c.explain(att, err)
	var ae *llm.APIError
	if b == nil || b.failed.Load() || att.Context().Err() != nil || errors.As(e, &ae) || errors.Is(e, llm.ErrInvalidResponse) {
		return e
	}
	return fmt.Errorf("%w: %s: an event of the stream does not decode: %w", llm.ErrInvalidResponse, c.Provider, err)
}

// checkReply is Generate's middleware: see there.
func (c *Call) checkReply(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode >= 300 {
		// Error statuses are CheckMiddleware's.
		return res, err
	}
	data, err := io.ReadAll(c.body(res.Body))
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		what := "empty"
		if len(t) > 0 {
			what = "not a JSON object: " + clip(t)
		}
		return nil, fmt.Errorf("%w: %s: the body of a success response (HTTP %d) is %s", llm.ErrInvalidResponse, c.Provider, res.StatusCode, what)
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	return res, nil
}

// body returns rc bounded by c.MaxBytes.
func (c *Call) body(rc io.ReadCloser) *body {
	return &body{ReadCloser: rc, max: c.MaxBytes, provider: c.Provider}
}

// body is a response body whose reads are bounded by max (zero: none),
// past which they fail with llm.ErrInvalidResponse, and which remembers a
// failed read, so that an error of the SDK's decoding after it tells a
// body that broke from one that did not decode.
type body struct {
	io.ReadCloser
	read, max int64
	provider  string
	failed    atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.max > 0 {
		if b.read >= b.max {
			// One byte more tells a body of exactly max bytes from a
			// longer one.
			var one [1]byte
			if n, err := b.ReadCloser.Read(one[:]); n == 0 {
				return 0, b.note(err)
			}
			return 0, fmt.Errorf("%w: %s: the response is larger than %d bytes (the provider's MaxResponseBytes)", llm.ErrInvalidResponse, b.provider, b.max)
		}
		if int64(len(p)) > b.max-b.read {
			p = p[:b.max-b.read]
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, b.note(err)
}

func (b *body) note(err error) error {
	if err != nil && err != io.EOF {
		b.failed.Store(true)
	}
	return err
}

// clip shortens a body for an error message.
func clip(b []byte) string {
	const n = 200
	if len(b) <= n {
		return string(b)
	}
	i := n
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return string(b[:i]) + "..."
}
