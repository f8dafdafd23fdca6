package memory_test

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/memory"
)

// Inside a run, the memory tools and the reflection node act for the
// run's user (graph.RunOptions.User) unless WithUser names another.
func TestUserFromRun(t *testing.T) {
	got := graph.Value[string]("got")
	g, err := graph.New(got).AddNode("n", func(ctx context.Context, s graph.State) (graph.Update, error) {
		return got.Write(memory.UserFrom(ctx)), nil
	}, nil).AddEdge(graph.START, "n").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		ctx        context.Context
		user, want string
	}{
		{ctx, "alice", "alice"},
		{memory.WithUser(ctx, "bob"), "alice", "bob"},
		{ctx, "", ""},
	} {
		st, err := g.Invoke(tt.ctx, graph.Input(), &graph.RunOptions{User: tt.user})
		if err != nil {
			t.Fatal(err)
		}
		if got.Get(st) != tt.want {
			t.Errorf("run user %q, context user %q: UserFrom = %q, want %q", tt.user, memory.UserFrom(tt.ctx), got.Get(st), tt.want)
		}
	}
	if u := memory.UserFrom(ctx); u != "" {
		t.Errorf("outside a run UserFrom = %q", u)
	}
}
