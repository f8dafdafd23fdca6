package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

func TestPassingFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"at MaxRuns", errTooManyRuns(1), true},
		{"at MaxRunsPerUser", errTooManyUserRuns(1), true},
		{"shutting down", &api.StatusError{Status: 503, Message: "shutting down", Err: errShuttingDown}, true},
		{"the scheduler stopping", fmt.Errorf("creating the run: %w", context.Canceled), true},
		{"the database's error", errors.New("connection refused"), true},
		{"an assistant changed meanwhile", api.Conflict("changed").Because(records.ErrStaleAssistant), true},
		{"a busy thread under reject", api.Conflict(busyText).Because(records.ErrBusy), false},
		{"a deleted thread", threadNotFound("t"), false},
		{"a deleted assistant", api.NotFound("No assistant found").Because(errNoSuchAssistant), false},
		{"an invalid payload", fmt.Errorf("its payload is not a run request: %w", api.Invalid(api.Field("bad", "input"))), false},
		{"a payload not JSON", fmt.Errorf("its payload is not a run request: %w", api.ErrMalformed), false},
		{"a thread of another graph", api.Conflict("other graph").Because(records.ErrOtherGraph), false},
	} {
		if got := passingFailure(c.err); got != c.want {
			t.Errorf("passingFailure(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestCronRetryDelay(t *testing.T) {
	c := &cronScheduler{interval: time.Second}
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: 512 * time.Second, 11: cronRetryMaxDelay, 1000: cronRetryMaxDelay} {
		if got := c.retryDelay(attempts); got != want {
			t.Errorf("retryDelay(%d) at an interval of 1s = %v, want %v", attempts, got, want)
		}
	}
	c.interval = time.Hour
	if got := c.retryDelay(3); got != time.Hour {
		t.Errorf("retryDelay(3) at an interval of 1h = %v, want 1h", got)
	}
}

// failed gives a tick back only for a failure that may pass, within
// Options.CronRetries, and before the cron's next tick.
func TestCronFailedBounds(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Options{CronInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	c := &cronScheduler{s: s, interval: time.Minute, retries: 2}
	tick := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
	n := 0
	// claimed makes a cron due at tick and claims it, moving its next
	// tick to next, as the scheduler's look would.
	claimed := func(next time.Time) records.Cron {
		t.Helper()
		n++
		cr, err := s.rec.CreateCron(ctx, records.Cron{ID: fmt.Sprintf("c%d", n), AssistantID: "a", Schedule: "* * * * *", Timezone: "UTC",
			Enabled: true, NextRunDate: &tick, OnRunCompleted: "keep"})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.rec.ClaimCronTick(ctx, cr.ID, tick, &next); err != nil || !ok {
			t.Fatalf("claiming %s's tick: %v, %v", cr.ID, ok, err)
		}
		return cr
	}
	after := func(cr records.Cron) records.Cron {
		t.Helper()
		got, err := s.rec.GetCron(ctx, "", cr.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	far := tick.Add(time.Hour)
	for _, k := range []struct {
		name     string
		next     time.Time
		attempts int
		err      error
		retried  bool
	}{
		{"refused at MaxRuns", far, 0, errTooManyRuns(1), true},
		{"refused at MaxRuns, tried again once", far, 1, errTooManyRuns(1), true},
		{"refused at MaxRuns, tried again twice (CronRetries)", far, 2, errTooManyRuns(1), false},
		{"its next tick before the retry", tick.Add(30 * time.Second), 0, errTooManyRuns(1), false},
		{"its assistant deleted", far, 0, api.NotFound("No assistant found").Because(errNoSuchAssistant), false},
	} {
		cr := claimed(k.next)
		if k.attempts > 0 {
			// Given back before, and claimed again.
			if ok, err := s.rec.RetryCronTick(ctx, cr.ID, &k.next, tick, tick, k.attempts); err != nil || !ok {
				t.Fatal(ok, err)
			}
			if ok, err := s.rec.ClaimCronTick(ctx, cr.ID, tick, &k.next); err != nil || !ok {
				t.Fatal(ok, err)
			}
			cr.RetryTick, cr.RetryAttempts = &tick, k.attempts
		}
		before := time.Now()
		c.failed(ctx, cr, &k.next, k.err)
		got := after(cr)
		switch {
		case k.retried && (got.RetryTick == nil || !got.RetryTick.Equal(tick) || got.RetryAttempts != k.attempts+1 ||
			got.NextRunDate.Before(before.Add(c.retryDelay(k.attempts+1))) || !got.NextRunDate.Before(k.next)):
			t.Errorf("%s: the cron = next %v, retrying %v (%d failures); want it tried again after %v, retrying %v (%d)",
				k.name, got.NextRunDate, got.RetryTick, got.RetryAttempts, c.retryDelay(k.attempts+1), tick, k.attempts+1)
		case !k.retried && (got.RetryTick != nil || got.RetryAttempts != 0 || !got.NextRunDate.Equal(k.next)):
			t.Errorf("%s: the cron = next %v, retrying %v (%d failures); want its next tick %v, not tried again",
				k.name, got.NextRunDate, got.RetryTick, got.RetryAttempts, k.next)
		}
	}
	// Stopping, the scheduler still gives a tick back.
	cr := claimed(far)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	c.failed(stopped, cr, &far, stopped.Err())
	if got := after(cr); got.RetryTick == nil || got.RetryAttempts != 1 {
		t.Errorf("a tick that failed as the scheduler stopped: retrying %v (%d failures); want it tried again", got.RetryTick, got.RetryAttempts)
	}
}
