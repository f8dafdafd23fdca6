package auth

import (
	"context"
	"testing"
)

func TestUser(t *testing.T) {
	ctx := context.Background()
	if got := User(ctx); got != "" {
		t.Errorf("User of a bare context = %q, want \"\"", got)
	}
	ctx = WithUser(ctx, "alice")
	if got := User(ctx); got != "alice" {
		t.Errorf("User = %q, want alice", got)
	}
	if got := User(WithUser(ctx, "bob")); got != "bob" {
		t.Errorf("inner WithUser = %q, want bob", got)
	}
}
