// Package wire holds what the HTTP providers share: the retry loops of a
// call and of a stream (Generate, Stream), per-attempt timeouts, the checks
// of a success response's body, and the mapping of error responses to
// *llm.APIError.
package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
)

// The causes an attempt's context is cancelled with when a bound passes.
var (
	errFirstByte = errors.New("first-byte bound passed")
	errIdle      = errors.New("stream idle bound passed")
)

// Attempt is the context of one attempt of a call. It is cancelled when
// nothing arrives within the first-byte bound after the request is sent,
// or, once something arrived, within the idle bound of the wait for the
// next event of a stream (Waiting to Arrived): the time the consumer
// spends with an event is not the provider's silence.
type Attempt struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	bounds llm.Timeouts
	mu     sync.Mutex
	timer  *time.Timer
	// started is set by the first Arrived: the idle bound applies.
	started bool
	// ended is set by End: no timer starts again.
	ended bool
}

// Start starts an attempt under parent with bounds (already defaulted:
// zero fields mean no bound).
func Start(parent context.Context, bounds llm.Timeouts) *Attempt {
	ctx, cancel := context.WithCancelCause(parent)
	a := &Attempt{parent: parent, ctx: ctx, cancel: cancel, bounds: bounds}
	if bounds.FirstByte > 0 {
		a.timer = time.AfterFunc(bounds.FirstByte, func() { cancel(errFirstByte) })
	}
	return a
}

// Context returns the attempt's context.
func (a *Attempt) Context() context.Context { return a.ctx }

// Arrived tells that an event arrived: the wait it ended is over.
func (a *Attempt) Arrived() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
	}
	if !a.started {
		a.started = true
		a.timer = nil // the first-byte timer, whose cause is another
	}
}

// Waiting tells that the next event of the stream is awaited: the idle
// bound runs until it arrives.
func (a *Attempt) Waiting() {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !a.started || a.ended || a.bounds.StreamIdle <= 0:
	case a.timer == nil:
		a.timer = time.AfterFunc(a.bounds.StreamIdle, func() { a.cancel(errIdle) })
	default:
		a.timer.Reset(a.bounds.StreamIdle)
	}
}

// End stops the timer and cancels the context.
func (a *Attempt) End() {
	a.mu.Lock()
	a.ended = true
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.mu.Unlock()
	a.cancel(context.Canceled)
}

// Err explains err, an error of the attempt: a timeout of the attempt
// becomes an error matching llm.ErrTimeout, and a cancelled parent context
// an error matching the context's error.
func (a *Attempt) Err(provider string, err error) error {
	if err == nil {
		return nil
	}
	if perr := a.parent.Err(); perr != nil {
		if errors.Is(err, perr) {
			return fmt.Errorf("%s: %w", provider, err)
		}
		return fmt.Errorf("%s: %w (%w)", provider, perr, err)
	}
	switch context.Cause(a.ctx) {
	case errFirstByte:
		return fmt.Errorf("%w: %s: nothing received within %s of sending the request", llm.ErrFirstByteTimeout, provider, a.bounds.FirstByte)
	case errIdle:
		return fmt.Errorf("%w: %s: the stream sent nothing for %s", llm.ErrStreamIdleTimeout, provider, a.bounds.StreamIdle)
	}
	var ae *llm.APIError
	if errors.As(err, &ae) || errors.Is(err, llm.ErrInvalidResponse) {
		return err
	}
	if errors.Is(err, bufio.ErrTooLong) {
		// The SDKs' bound on a line of a stream (32 MiB).
		return fmt.Errorf("%w: %s: a line of the stream is too long: %w", llm.ErrInvalidResponse, provider, err)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && op.Timeout() {
		return fmt.Errorf("%w: %s: no connection to %v within %s: %w", llm.ErrConnectTimeout, provider, op.Addr, a.bounds.Connect, err)
	}
	return fmt.Errorf("%s: %w", provider, err)
}

// Bounds is a provider's bounds: t with llm's defaults, where a positive
// shorthand (a provider's Options.Timeout) stands for the first-byte and
// stream-idle bounds that t leaves zero.
func Bounds(t llm.Timeouts, shorthand time.Duration) llm.Timeouts {
	if shorthand > 0 {
		if t.FirstByte == 0 {
			t.FirstByte = shorthand
		}
		if t.StreamIdle == 0 {
			t.StreamIdle = shorthand
		}
	}
	return t.WithDefaults()
}

// HTTPClient returns a client whose connections are bounded by
// bounds.Connect (dial and TLS handshake); the other bounds are the
// Attempt's. It is used when the caller gives no client of its own.
func HTTPClient(bounds llm.Timeouts) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if bounds.Connect > 0 {
		tr.DialContext = (&net.Dialer{Timeout: bounds.Connect, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = bounds.Connect
	}
	return &http.Client{Transport: tr}
}

// EmptyStream is the error of a stream that ended without a single event:
// a success status with a body that is not a stream (garbage, or nothing).
func EmptyStream(provider string) error {
	return fmt.Errorf("%w: %s: the response stream ended without any event (the body is empty or not server-sent events)", llm.ErrInvalidResponse, provider)
}

// APIError builds the *llm.APIError of an error response. status is the
// HTTP status, or a success status for an error event inside a stream;
// body is the response's JSON, whose error.type, error.code and
// error.message are read (OpenAI's and Anthropic's shape alike).
func APIError(provider string, status int, header http.Header, body string, requestID string, err error) *llm.APIError {
	e := &llm.APIError{Provider: provider, StatusCode: status, RequestID: requestID, Err: err}
	if status < 400 {
		e.StatusCode = 0
	}
	type errorBody struct {
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	var parsed struct {
		Error json.RawMessage `json:"error"`
		errorBody
	}
	if json.Unmarshal([]byte(body), &parsed) == nil {
		eb := parsed.errorBody
		var inner errorBody
		switch {
		case json.Unmarshal(parsed.Error, &inner) == nil:
			eb = inner
		case len(parsed.Error) > 0:
			// Some OpenAI-compatible servers send "error" as a string.
			_ = json.Unmarshal(parsed.Error, &eb.Message)
		}
		e.Type, e.Message = eb.Type, eb.Message
		if code, ok := eb.Code.(string); ok && code != "" {
			e.Type = code
		}
	} else if len(body) > 0 {
		e.Message = clip([]byte(body))
	}
	if header != nil {
		if d, ok := llm.ParseRetryAfter(header, time.Now()); ok {
			e.RetryAfter = d
		}
		if e.RequestID == "" {
			e.RequestID = header.Get("X-Request-Id")
		}
	}
	return e
}

// CheckResponse turns an error response into an *llm.APIError, closing its
// body; it returns nil for any other response. Providers call it from an
// SDK middleware so that every error status, whatever its body (a proxy's
// HTML page included), becomes the same typed error.
func CheckResponse(provider string, res *http.Response) error {
	if res == nil || res.StatusCode < 400 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	requestID := res.Header.Get("X-Request-Id")
	if requestID == "" {
		requestID = res.Header.Get("Request-Id")
	}
	return APIError(provider, res.StatusCode, res.Header, strings.TrimSpace(string(body)), requestID, nil)
}

// CheckMiddleware is an SDK middleware (both SDKs' option.Middleware) that
// turns every error status into CheckResponse's typed error.
func CheckMiddleware(provider string) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if err != nil {
			return res, err
		}
		if err := CheckResponse(provider, res); err != nil {
			return nil, err
		}
		return res, nil
	}
}
