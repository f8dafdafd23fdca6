package llm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
)

// sleeps records the waits a policy asks for, without waiting.
type sleeps []time.Duration

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	*s = append(*s, d)
	return ctx.Err()
}

func failing(errs ...error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func TestRetryPolicy(t *testing.T) {
	rateLimited := &llm.APIError{Provider: "p", StatusCode: 429, RetryAfter: 7 * time.Second}
	server := &llm.APIError{Provider: "p", StatusCode: 503}
	bad := &llm.APIError{Provider: "p", StatusCode: 400}
	timeout := fmt.Errorf("%w: p: no response within 1s", llm.ErrTimeout)
	netErr := &net.OpError{Op: "dial", Err: errors.New("connection refused")}

	for _, tc := range []struct {
		name      string
		policy    llm.RetryPolicy
		errs      []error
		wantCalls int
		wantErr   error
		check     func(t *testing.T, s sleeps)
	}{
		{name: "success", wantCalls: 1},
		{name: "retry-after honoured", errs: []error{rateLimited}, wantCalls: 2, check: func(t *testing.T, s sleeps) {
			if len(s) != 1 || s[0] != 7*time.Second {
				t.Errorf("waits = %v, want [7s]", s)
			}
		}},
		{name: "backoff doubles with jitter", errs: []error{server, server}, wantCalls: 3,
			policy: llm.RetryPolicy{InitialBackoff: 100 * time.Millisecond},
			check: func(t *testing.T, s sleeps) {
				if len(s) != 2 || s[0] < 50*time.Millisecond || s[0] > 100*time.Millisecond || s[1] < 100*time.Millisecond || s[1] > 200*time.Millisecond {
					t.Errorf("waits = %v, want one in [50ms,100ms] then one in [100ms,200ms]", s)
				}
			}},
		{name: "backoff capped", errs: []error{server, server, server, server}, wantCalls: 5,
			policy: llm.RetryPolicy{MaxRetries: 4, InitialBackoff: time.Second, MaxBackoff: 2 * time.Second},
			check: func(t *testing.T, s sleeps) {
				for _, d := range s {
					if d > 2*time.Second {
						t.Errorf("wait %v exceeds MaxBackoff", d)
					}
				}
			}},
		{name: "timeout retried", errs: []error{timeout}, wantCalls: 2},
		{name: "network error retried", errs: []error{netErr}, wantCalls: 2},
		{name: "bad request not retried", errs: []error{bad}, wantCalls: 1, wantErr: llm.ErrBadRequest},
		{name: "gives up", errs: []error{server, server, server, server}, wantCalls: 3, wantErr: llm.ErrServer},
		{name: "no retries", policy: llm.RetryPolicy{MaxRetries: -1}, errs: []error{server}, wantCalls: 1, wantErr: llm.ErrServer},
		{name: "retry-after too long", policy: llm.RetryPolicy{MaxRetryAfter: 5 * time.Second}, errs: []error{rateLimited}, wantCalls: 1, wantErr: llm.ErrRateLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sleeps
			p := tc.policy
			p.Sleep = s.sleep
			attempt, calls := failing(tc.errs...)
			err := p.Do(context.Background(), attempt)
			if *calls != tc.wantCalls {
				t.Errorf("attempts = %d, want %d", *calls, tc.wantCalls)
			}
			if tc.wantErr == nil && err != nil {
				t.Errorf("err = %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestRetryGivesUpNamesAttempts(t *testing.T) {
	var s sleeps
	attempt, _ := failing(&llm.APIError{Provider: "p", StatusCode: 500}, &llm.APIError{Provider: "p", StatusCode: 500}, &llm.APIError{Provider: "p", StatusCode: 500})
	err := llm.RetryPolicy{Sleep: s.sleep}.Do(context.Background(), attempt)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("err = %v", err)
	}
}

func TestRetryStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	attempt, calls := failing(&llm.APIError{StatusCode: 500}, &llm.APIError{StatusCode: 500})
	p := llm.RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}
	err := p.Do(ctx, attempt)
	if !errors.Is(err, context.Canceled) || *calls != 1 {
		t.Errorf("err = %v after %d attempts, want context.Canceled after 1", err, *calls)
	}
	if !errors.Is(err, llm.ErrServer) {
		t.Errorf("err = %v should still tell the last failure", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-30 * time.Second).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{}, 0, false},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, ok := llm.ParseRetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%v) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAPIErrorSentinels(t *testing.T) {
	for status, want := range map[int]error{
		400: llm.ErrBadRequest, 422: llm.ErrBadRequest, 401: llm.ErrAuthentication, 403: llm.ErrPermission,
		404: llm.ErrNotFound, 408: llm.ErrTimeout, 429: llm.ErrRateLimit, 500: llm.ErrServer, 529: llm.ErrServer,
	} {
		err := fmt.Errorf("wrapped: %w", &llm.APIError{Provider: "openai", StatusCode: status, Type: "t", Message: "m"})
		if !errors.Is(err, want) {
			t.Errorf("status %d does not match %v", status, want)
		}
		if errors.Is(err, llm.ErrNotFound) != (status == 404) {
			t.Errorf("status %d matches ErrNotFound wrongly", status)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", status)) {
			t.Errorf("error %q does not name the status", err)
		}
	}
}

// An error event inside a stream has no HTTP status of its own (the
// stream's was 200); its type says what the status would have been, so it
// matches the same sentinel and is retried alike.
func TestAPIErrorEventSentinels(t *testing.T) {
	for _, tc := range []struct {
		typ       string
		want      error
		retryable bool
	}{
		{"overloaded_error", llm.ErrServer, true},
		{"api_error", llm.ErrServer, true},
		{"server_error", llm.ErrServer, true},
		{"rate_limit_error", llm.ErrRateLimit, true},
		{"rate_limit_exceeded", llm.ErrRateLimit, true},
		{"invalid_request_error", llm.ErrBadRequest, false},
		{"authentication_error", llm.ErrAuthentication, false},
		{"permission_error", llm.ErrPermission, false},
		{"not_found_error", llm.ErrNotFound, false},
		{"something_new", nil, false},
	} {
		err := fmt.Errorf("wrapped: %w", &llm.APIError{Provider: "anthropic", Type: tc.typ, Message: "m"})
		for _, sentinel := range []error{llm.ErrServer, llm.ErrRateLimit, llm.ErrBadRequest, llm.ErrAuthentication, llm.ErrPermission, llm.ErrNotFound, llm.ErrTimeout} {
			if errors.Is(err, sentinel) != (sentinel == tc.want) {
				t.Errorf("event of type %s: matches %v: %v, want %v", tc.typ, sentinel, errors.Is(err, sentinel), sentinel == tc.want)
			}
		}
		if llm.Retryable(err) != tc.retryable {
			t.Errorf("event of type %s: retryable %v, want %v", tc.typ, !tc.retryable, tc.retryable)
		}
	}
}

// Every retry is told before its wait, with the failed attempt's error, so
// a slow failing provider is never retried in silence; by default the
// warning goes to slog.
func TestRetryIsTold(t *testing.T) {
	var s sleeps
	fail := &llm.APIError{Provider: "openai", StatusCode: 500, Message: "boom"}
	attempt, _ := failing(fail, fail, fail)
	var told []llm.Retry
	p := llm.RetryPolicy{Sleep: s.sleep, OnRetry: func(_ context.Context, r llm.Retry) { told = append(told, r) }}
	if err := p.Do(context.Background(), attempt); err == nil {
		t.Fatal("Do succeeded, want the third failure")
	}
	if len(told) != 2 {
		t.Fatalf("told %d retries, want 2", len(told))
	}
	for i, r := range told {
		var ae *llm.APIError
		if r.Attempt != i+1 || r.MaxAttempts != 3 || r.Wait <= 0 || !errors.As(r.Err, &ae) || ae.StatusCode != 500 {
			t.Errorf("retry %d = %+v", i, r)
		}
	}

	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	attempt, _ = failing(fail, fail, fail)
	_ = llm.RetryPolicy{Sleep: s.sleep}.Do(context.Background(), attempt)
	if got := strings.Count(buf.String(), "retrying"); got != 2 || !strings.Contains(buf.String(), "boom") {
		t.Errorf("default policy logged %d retries, want 2 naming the cause:\n%s", got, buf.String())
	}
	buf.Reset()
	attempt, _ = failing(fail, fail, fail)
	_ = llm.RetryPolicy{Sleep: s.sleep, QuietRetries: true}.Do(context.Background(), attempt)
	if buf.Len() != 0 {
		t.Errorf("QuietRetries logged:\n%s", buf.String())
	}
}
