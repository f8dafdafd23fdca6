package graph

import (
	"testing"
	"time"
)

// A negative InitialInterval says "retry without waiting": no backoff, no
// jitter, at every attempt (issue 7 §8).
func TestRetryPolicyNegativeIntervalMeansNoWait(t *testing.T) {
	for _, jitter := range []bool{false, true} {
		p := RetryPolicy{InitialInterval: -1, NoJitter: !jitter, MaxAttempts: 5}.withDefaults()
		for attempt := 1; attempt < 5; attempt++ {
			if d := backoff(p, attempt); d != 0 {
				t.Fatalf("jitter %v, attempt %d: backoff = %v, want 0", jitter, attempt, d)
			}
		}
	}
	// The zero value still gets the defaults.
	if p := (RetryPolicy{}).withDefaults(); p.InitialInterval != 500*time.Millisecond || p.MaxAttempts != 3 || p.BackoffFactor != 2 {
		t.Fatalf("zero RetryPolicy defaults = %+v", p)
	}
}
