package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// whoami is a graph whose node records who its run acts for: the run's
// user, and the configurable values langgraph_auth_user_id and user_id.
// It sleeps delay_ms first, and asks a question when ask is set.
func whoami(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
	seen := graph.Reduce("seen", func(cur, upd []string) []string { return append(append([]string{}, cur...), upd...) })
	delay := graph.Value[int]("delay_ms")
	ask := graph.Value[bool]("ask")
	node := func(ctx context.Context, s graph.State) (graph.Update, error) {
		if d := delay.Get(s); d > 0 {
			select {
			case <-time.After(time.Duration(d) * time.Millisecond):
			case <-ctx.Done():
				return graph.Update{}, ctx.Err()
			}
		}
		if ask.Get(s) {
			graph.Ask[string](ctx, "go on?")
		}
		ti, _ := graph.CurrentTask(ctx)
		auth, _ := graph.Configurable(ctx, "langgraph_auth_user_id")
		user, _ := graph.Configurable(ctx, "user_id")
		tid, _ := graph.Configurable(ctx, "thread_id")
		return seen.Write([]string{fmt.Sprintf("%s|%v|%v|%v", ti.User, auth, user, tid == ti.ThreadID)}), nil
	}
	return graph.New(seen, delay, ask).AddNode("who", node, nil).AddEdge(graph.START, "who").
		Compile(&graph.CompileOptions{Checkpointer: saver})
}

func whoGraphs() map[string]server.GraphFunc { return map[string]server.GraphFunc{"whoami": whoami} }

// seenBy reads the seen list of a run's values.
func seenBy(t *testing.T, r response) []any {
	t.Helper()
	seen, _ := r.obj(t)["seen"].([]any)
	return seen
}

// Each run acts for the user of the API key that created it, whatever
// the client puts in config.configurable; a resumed run too.
func TestRunActsForItsUser(t *testing.T) {
	s := newRawServer(t, server.Options{Auth: keys(t), Graphs: whoGraphs()})
	alice := []string{"x-api-key", aliceKey}
	bob := []string{"Authorization", "Bearer " + bobKey}

	r := s.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "whoami", "input": map[string]any{}}, alice...)
	if diff := cmp.Diff([]any{"alice|alice|alice|true"}, seenBy(t, r)); diff != "" {
		t.Errorf("alice's run (-want +got):\n%s", diff)
	}
	// Bob cannot pass for alice through the run's config.
	r = s.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "whoami", "input": map[string]any{},
		"config": map[string]any{"configurable": map[string]any{"user_id": "alice", "langgraph_auth_user_id": "alice"}}}, bob...)
	if diff := cmp.Diff([]any{"bob|bob|bob|true"}, seenBy(t, r)); diff != "" {
		t.Errorf("bob's run (-want +got):\n%s", diff)
	}
	// A run resumed after an interrupt acts for its user again.
	tid := s.must(200, "POST", "/threads", map[string]any{}, bob...).obj(t)["thread_id"].(string)
	r = s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "whoami", "input": map[string]any{"ask": true}}, bob...)
	if r.obj(t)["__interrupt__"] == nil {
		t.Fatalf("the run did not stop: %s", r.body)
	}
	r = s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "whoami", "command": map[string]any{"resume": "yes"}}, bob...)
	if diff := cmp.Diff([]any{"bob|bob|bob|true"}, seenBy(t, r)); diff != "" {
		t.Errorf("bob's resumed run (-want +got):\n%s", diff)
	}
}

// Without authentication a run's user is "": langgraph_auth_user_id is
// absent (a client cannot set it), and user_id is what the client sent.
func TestRunUserWithoutAuth(t *testing.T) {
	s := newRawServer(t, server.Options{Graphs: whoGraphs()})
	r := s.must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "whoami", "input": map[string]any{},
		"config": map[string]any{"configurable": map[string]any{"user_id": "carol", "langgraph_auth_user_id": "mallory"}}})
	if diff := cmp.Diff([]any{"|<nil>|carol|true"}, seenBy(t, r)); diff != "" {
		t.Errorf("run without auth (-want +got):\n%s", diff)
	}
}

// Runs left pending by a shutdown (one executing, one enqueued behind it,
// for each of two users) are taken over by the next server on the
// database, and each acts for the user who created it.
func TestRunUserAfterRestart(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			srv, err := server.New(context.Background(), server.Options{Graphs: whoGraphs(), Auth: keys(t), DB: db, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			a := &testServer{t: t, srv: srv, ts: ts}
			type pending struct{ key, thread, first, second string }
			var runs []pending
			for _, key := range []string{aliceKey, bobKey} {
				h := []string{"x-api-key", key}
				tid := a.must(200, "POST", "/threads", map[string]any{}, h...).obj(t)["thread_id"].(string)
				// Long enough to be going still when Shutdown gives up,
				// even on a loaded machine.
				first := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "whoami", "input": map[string]any{"delay_ms": 2000}}, h...).obj(t)["run_id"].(string)
				second := a.must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "whoami", "input": map[string]any{}, "multitask_strategy": "enqueue"}, h...).obj(t)["run_id"].(string)
				runs = append(runs, pending{key, tid, first, second})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := srv.Shutdown(ctx); err == nil {
				t.Fatal("Shutdown with runs still sleeping returned no error")
			}
			ts.Close()

			s := newRawServer(t, server.Options{Graphs: whoGraphs(), Auth: keys(t), DB: reopen(t, db)})
			for i, p := range runs {
				user := []string{"alice", "bob"}[i]
				h := []string{"x-api-key", p.key}
				joined := s.must(200, "GET", "/threads/"+p.thread+"/runs/"+p.second+"/join", nil, h...)
				mine := user + "|" + user + "|" + user + "|true"
				if diff := cmp.Diff([]any{mine, mine}, seenBy(t, joined)); diff != "" {
					t.Errorf("%s's runs after the takeover (-want +got):\n%s", user, diff)
				}
				run := s.waitRunAs(p.thread, p.first, h)
				if run["status"] != "success" {
					t.Errorf("%s's first run after the takeover = %v", user, run["status"])
				}
			}
		})
	}
}

// waitRunAs is waitRun with a user's headers.
func (s *testServer) waitRunAs(threadID, runID string, headers []string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		run := s.must(200, "GET", "/threads/"+threadID+"/runs/"+runID, nil, headers...).obj(s.t)
		switch run["status"] {
		case "pending", "running":
		default:
			return run
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s still %v after 30s", runID, run["status"])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
