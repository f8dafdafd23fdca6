package auth

import (
	"context"
	"strings"
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

func TestNamespace(t *testing.T) {
	if got := Namespace("", []string{"a"}); len(got) != 1 || got[0] != "a" {
		t.Errorf("without a user: %v", got)
	}
	got := Namespace("a.b@x", []string{"mem"})
	if len(got) != 2 || got[1] != "mem" || strings.Contains(got[0], ".") {
		t.Errorf("Namespace = %v", got)
	}
	if back := StripNamespace("a.b@x", got); len(back) != 1 || back[0] != "mem" {
		t.Errorf("StripNamespace = %v", back)
	}
	if other := Namespace("bob", []string{"mem"}); other[0] == got[0] {
		t.Error("two users share a namespace")
	}
}
