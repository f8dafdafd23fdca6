package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy retries a call that failed for a reason that may pass: a rate
// limit (429), a server error (5xx), a timeout (408, or no response in
// time), or a dropped connection. It waits with exponential backoff and
// jitter between attempts, or exactly as long as the provider's Retry-After
// header says. The zero value is the default policy.
type RetryPolicy struct {
	// MaxRetries is how many times a call is retried after its first
	// attempt: zero means 2, a negative number none.
	MaxRetries int
	// InitialBackoff is the wait before the first retry (zero: 500ms); each
	// further retry doubles it, up to MaxBackoff (zero: 8s). The actual wait
	// is drawn between half of it and all of it.
	InitialBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After honoured (zero: 60s); a
	// provider asking for a longer wait fails the call at once, with the
	// wait in APIError.RetryAfter.
	MaxRetryAfter time.Duration
	// Sleep waits for d or until ctx is done. Nil uses a timer; tests
	// replace it to observe waits without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry is told of every failed attempt that will be retried, before
	// the wait: a retry is never silent. Nil logs a warning with
	// slog.Default naming the error, the attempt and the wait; set
	// QuietRetries to say nothing.
	OnRetry func(ctx context.Context, r Retry)
	// QuietRetries turns off the default warning when OnRetry is nil.
	QuietRetries bool
}

// Retry describes one failed attempt that is about to be retried.
type Retry struct {
	// Err is the attempt's error: an *APIError names provider and status.
	Err error
	// Attempt is the number of the attempt that failed, from 1.
	Attempt int
	// MaxAttempts is the number of attempts the policy allows in all.
	MaxAttempts int
	// Wait is how long the policy waits before the next attempt.
	Wait time.Duration
}

func (p RetryPolicy) told(ctx context.Context, r Retry) {
	switch {
	case p.OnRetry != nil:
		p.OnRetry(ctx, r)
	case !p.QuietRetries:
		slog.Default().WarnContext(ctx, "model call failed; retrying",
			"error", r.Err.Error(), "attempt", r.Attempt, "max_attempts", r.MaxAttempts,
			"wait", r.Wait.Round(time.Millisecond).String())
	}
}

func (p RetryPolicy) maxRetries() int {
	switch {
	case p.MaxRetries < 0:
		return 0
	case p.MaxRetries == 0:
		return 2
	}
	return p.MaxRetries
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Do calls attempt until it succeeds, fails for good, retries run out, or
// ctx is done. The error of the last attempt is returned, noting the number
// of attempts when there was more than one.
func (p RetryPolicy) Do(ctx context.Context, attempt func(ctx context.Context) error) error {
	for n := 0; ; n++ {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		wait, ok := p.Delay(err, n)
		if !ok || n >= p.maxRetries() {
			if n > 0 {
				return fmt.Errorf("%w (gave up after %d attempts)", err, n+1)
			}
			return err
		}
		p.told(ctx, Retry{Err: err, Attempt: n + 1, MaxAttempts: p.maxRetries() + 1, Wait: wait})
		sleep := p.Sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if serr := sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w (while waiting %s to retry after: %w)", serr, wait, err)
		}
	}
}

// Delay reports whether err is worth retrying and how long to wait before
// retry number n+1 (n counts from zero).
func (p RetryPolicy) Delay(err error, n int) (time.Duration, bool) {
	if !Retryable(err) {
		return 0, false
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		if ae.RetryAfter > orDefault(p.MaxRetryAfter, time.Minute) {
			return 0, false
		}
		return ae.RetryAfter, true
	}
	d := orDefault(p.InitialBackoff, 500*time.Millisecond)
	maxD := orDefault(p.MaxBackoff, 8*time.Second)
	for range n {
		if d >= maxD {
			break
		}
		d *= 2
	}
	d = min(d, maxD)
	return d/2 + rand.N(d/2+1), true
}

// Retryable reports whether err may pass on a later attempt: an *APIError
// with a retryable status, a timeout, or a network error.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTimeout) {
		return true
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Retryable()
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ParseRetryAfter reads how long a response asks the client to wait:
// "Retry-After-Ms" (milliseconds, sent by OpenAI), or "Retry-After" in
// seconds or as an HTTP date relative to now.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
