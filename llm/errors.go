package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors. Test for them with errors.Is; an *APIError matches the
// sentinel of its HTTP status.
var (
	// ErrInvalidMessage: a message (or its JSON) is malformed.
	ErrInvalidMessage = errors.New("llm: invalid message")
	// ErrBadRequest: the provider rejected the request (HTTP 400, 422).
	ErrBadRequest = errors.New("llm: bad request")
	// ErrAuthentication: the API key is missing, wrong or expired (401).
	ErrAuthentication = errors.New("llm: authentication failed")
	// ErrPermission: the key may not use this model or endpoint (403).
	ErrPermission = errors.New("llm: permission denied")
	// ErrNotFound: no such model or endpoint (404).
	ErrNotFound = errors.New("llm: not found")
	// ErrRateLimit: the provider asks to slow down (429).
	ErrRateLimit = errors.New("llm: rate limited")
	// ErrServer: the provider failed or is overloaded (5xx).
	ErrServer = errors.New("llm: provider server error")
	// ErrTimeout: no response in time (an attempt's timeout, or HTTP 408).
	// The bound that was crossed is told by ErrConnectTimeout,
	// ErrFirstByteTimeout or ErrStreamIdleTimeout, which all match it.
	ErrTimeout = errors.New("llm: timeout")
	// ErrConnectTimeout: the connection to the provider was not made
	// within the connect bound (Timeouts.Connect).
	ErrConnectTimeout = fmt.Errorf("%w connecting (Timeouts.Connect)", ErrTimeout)
	// ErrFirstByteTimeout: the provider sent nothing within the
	// first-byte bound (Timeouts.FirstByte) after the request was sent.
	ErrFirstByteTimeout = fmt.Errorf("%w waiting for the first byte (Timeouts.FirstByte)", ErrTimeout)
	// ErrStreamIdleTimeout: a stream that had started sent nothing more
	// within the idle bound (Timeouts.StreamIdle).
	ErrStreamIdleTimeout = fmt.Errorf("%w between stream events (Timeouts.StreamIdle)", ErrTimeout)
	// ErrInvalidResponse: the provider answered with success but its body
	// is not a reply: not a JSON object, empty, larger than the provider's
	// MaxResponseBytes, a stream without any event, a stream event that
	// does not decode, or a stream that closed before its reply's end.
	ErrInvalidResponse = errors.New("llm: invalid response")
	// ErrMissingConfig: a provider lacks an API key or an endpoint; see
	// *ConfigError.
	ErrMissingConfig = errors.New("llm: missing provider configuration")
	// ErrUnknownProvider: a model name names no registered provider.
	ErrUnknownProvider = errors.New("llm: unknown provider")
	// ErrUnsupported: the model cannot do what the call asks.
	ErrUnsupported = errors.New("llm: unsupported")
	// ErrInvalidOutput: structured output did not match its schema, even
	// after a repair attempt; see *StructuredOutputError.
	ErrInvalidOutput = errors.New("llm: invalid structured output")
)

// APIError is an error response from a provider's API.
type APIError struct {
	// Provider is the provider's name: "openai", "anthropic", "ollama".
	Provider string
	// StatusCode is the HTTP status; zero for an error event in a stream.
	StatusCode int
	// Type is the provider's error type or code ("rate_limit_error").
	Type string
	// Message is the provider's explanation.
	Message string
	// RequestID is the provider's request id, for support requests.
	RequestID string
	// RetryAfter is how long the provider asked to wait (Retry-After).
	RetryAfter time.Duration
	// Err is the SDK's error.
	Err error
}

// Error says which provider failed, with what status, type and message.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	} else {
		b.WriteString(": error event in stream")
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's status.
func (e *APIError) Is(target error) bool {
	status := e.status()
	switch target {
	case ErrBadRequest:
		return status == http.StatusBadRequest || status == http.StatusUnprocessableEntity
	case ErrAuthentication:
		return status == http.StatusUnauthorized
	case ErrPermission:
		return status == http.StatusForbidden
	case ErrNotFound:
		return status == http.StatusNotFound
	case ErrRateLimit:
		return status == http.StatusTooManyRequests
	case ErrServer:
		return status >= 500
	case ErrTimeout:
		return status == http.StatusRequestTimeout
	}
	return false
}

// Retryable reports whether the same request may succeed later: a timeout,
// a conflict, a rate limit or a server error.
func (e *APIError) Retryable() bool {
	status := e.status()
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// eventStatus is the HTTP status each error type stands for in an error
// event of a stream, which has none of its own (Anthropic's types, and
// OpenAI's for the server and rate limits).
var eventStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"rate_limit_error":      http.StatusTooManyRequests,
	"rate_limit_exceeded":   http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"server_error":          http.StatusInternalServerError,
	"overloaded_error":      529,
}

// status is e's HTTP status, or for an error event the status its type
// stands for (zero if unknown).
func (e *APIError) status() int {
	if e.StatusCode != 0 {
		return e.StatusCode
	}
	return eventStatus[e.Type]
}

// ConfigError reports a provider that lacks a setting (an API key, an
// endpoint), naming the environment variable that supplies it.
type ConfigError struct {
	Provider string
	// Setting is what is missing: "API key", "endpoint".
	Setting string
	// EnvVar is the variable to set ("OPENAI_API_KEY").
	EnvVar string
}

// Error names the variable to set.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("llm: %s: no %s: set %s", e.Provider, e.Setting, e.EnvVar)
}

// Is makes a *ConfigError match ErrMissingConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrMissingConfig }

// Timeouts bound the phases of a provider call. Zero fields take the
// defaults (DefaultConnectTimeout and so on); a negative field means no bound but the
// context's. Crossing a bound is an error matching its sentinel
// (ErrConnectTimeout, ErrFirstByteTimeout, ErrStreamIdleTimeout), and
// ErrTimeout.
type Timeouts struct {
	// Connect bounds opening the connection (dial and TLS handshake).
	Connect time.Duration
	// FirstByte bounds the wait, after the request is sent, for the
	// response: the whole body of a Generate call, the first event of a
	// stream. A timed-out attempt is retried under the retry policy.
	FirstByte time.Duration
	// StreamIdle bounds the gap between two events of a stream: the wait
	// for the next event, not the time the caller spends with the last
	// chunk. A stream that goes quiet after it produced output is not
	// retried: its caller has seen part of the reply.
	StreamIdle time.Duration
}

// The bounds used for zero Timeouts fields.
const (
	DefaultConnectTimeout    = 10 * time.Second
	DefaultFirstByteTimeout  = 60 * time.Second
	DefaultStreamIdleTimeout = 60 * time.Second
)

// WithDefaults fills zero fields with the defaults and turns negative
// ones into zero (no bound).
func (t Timeouts) WithDefaults() Timeouts {
	fill := func(d, def time.Duration) time.Duration {
		switch {
		case d < 0:
			return 0
		case d == 0:
			return def
		}
		return d
	}
	return Timeouts{
		Connect:    fill(t.Connect, DefaultConnectTimeout),
		FirstByte:  fill(t.FirstByte, DefaultFirstByteTimeout),
		StreamIdle: fill(t.StreamIdle, DefaultStreamIdleTimeout),
	}
}
