package wire

import (
	"context"
	"iter"
	"net/http"
	"time"

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
}

// NewCall returns a provider's Call, its bounds t with llm's defaults (see
// Bounds for shorthand), and the HTTP client it sends with: client, or when
// that is nil one whose connections are bounded by the connect bound.
func NewCall(provider string, t llm.Timeouts, shorthand time.Duration, retry llm.RetryPolicy, client *http.Client, explain func(provider string, att *Attempt, err error) error) (Call, *http.Client) {
	bounds := Bounds(t, shorthand)
	if client == nil {
		client = HTTPClient(bounds)
	}
	return Call{Provider: provider, Bounds: bounds, Retry: retry, Explain: explain}, client
}

func (c *Call) explain(att *Attempt, err error) error {
	if c.Explain != nil {
		return c.Explain(c.Provider, att, err)
	}
	return att.Err(c.Provider, err)
}

// Generate makes a call that is not streamed, under the retry policy, each
// attempt bounded by c.Bounds: send sends the request under the attempt's
// context, and reply converts the SDK's reply.
func Generate[R any](ctx context.Context, c *Call, send func(ctx context.Context) (R, error), reply func(R) (llm.Message, error)) (llm.Message, error) {
	var out llm.Message
	err := c.Retry.Do(ctx, func(ctx context.Context) error {
		att := Start(ctx, c.Bounds)
		defer att.End()
		r, err := send(att.Context())
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

// Stream makes a streamed call. The request is retried under the policy
// until its first event arrives; after that the reply has been partly
// delivered, and a retry would repeat it. open sends the request under the
// attempt's context; chunk converts the events of one stream (false skips
// an event), and is made afresh for each run of the iterator, so that it
// may keep what an event says for later ones (a message id).
func Stream[E any](ctx context.Context, c *Call, open func(ctx context.Context) Events[E], chunk func() func(E) (llm.Chunk, bool)) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		var (
			events Events[E]
			att    *Attempt
		)
		err := c.Retry.Do(ctx, func(ctx context.Context) error {
			att = Start(ctx, c.Bounds)
			s := open(att.Context())
			if s.Next() {
				events = s
				return nil
			}
			err := c.explain(att, s.Err())
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
		convert := chunk()
		for first := true; first || events.Next(); first = false {
			att.Progress()
			if c, ok := convert(events.Current()); ok && !yield(c, nil) {
				return
			}
		}
		if err := events.Err(); err != nil {
			yield(llm.Chunk{}, c.explain(att, err))
		}
	}
}

// Failed is a stream that fails at once with err: a request that could not
// be built.
func Failed(err error) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, err) }
}
