package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/postgres"
	"github.com/weftlabs/weft/store/sqlite"
)

func storeConfig() store.Config {
	return store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}}
}

func memStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.NewMemory(storeConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// ops is the model's answer: a call of the memory_operations tool.
func ops(args string) scripted.Response {
	return scripted.Response{Message: llm.AI("", llm.ToolCall{Name: "memory_operations", Args: json.RawMessage(args)})}
}

func facts(t *testing.T, m *memory.Manager[memory.Fact], user string) []string {
	t.Helper()
	mems, err := m.List(context.Background(), user, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mem := range mems {
		out = append(out, mem.Content.Content)
	}
	return out
}

var conversation = []llm.Message{
	llm.System("You are a travel assistant."),
	llm.Human("Book me a flight to Jeju. I always want a window seat."),
	llm.AI("", llm.ToolCall{Name: "book_flight", Args: json.RawMessage(`{"to":"CJU"}`)}),
	llm.ToolResult("call_1", "book_flight", "booked KE1201"),
	llm.AI("Booked KE1201 with a window seat."),
}

func TestConsolidation(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	steps := []struct {
		name     string
		answer   scripted.Response
		want     []string // stored facts after the step, sorted
		result   func(memory.Result) bool
		skipped  int
		inPrompt string
	}{
		{
			name:     "insert into an empty memory",
			answer:   ops(`{"operations":[{"op":"insert","content":{"category":"preference","content":"Wants a window seat on flights"}}]}`),
			want:     []string{"Wants a window seat on flights"},
			result:   func(r memory.Result) bool { return len(r.Inserted) == 1 },
			inPrompt: "(none)",
		},
		{
			name:     "a repeated insert is skipped",
			answer:   ops(`{"operations":[{"op":"insert","content":{"category":"preference","content":"wants a  WINDOW seat on flights"}}]}`),
			want:     []string{"Wants a window seat on flights"},
			result:   func(r memory.Result) bool { return !r.Changed() },
			skipped:  1,
			inPrompt: `[m1] {"category":"preference","content":"Wants a window seat on flights"}`,
		},
		{
			name:   "update refines the shown memory in place",
			answer: ops(`{"operations":[{"op":"update","id":"m1","content":{"category":"preference","content":"Wants a window seat, except on night flights"}}]}`),
			want:   []string{"Wants a window seat, except on night flights"},
			result: func(r memory.Result) bool { return len(r.Updated) == 1 && len(r.Inserted) == 0 },
		},
		{
			name:    "an unknown id is skipped, a delete applied",
			answer:  ops(`{"operations":[{"op":"update","id":"m9","content":{"category":"fact","content":"x"}},{"op":"delete","id":"m1"}]}`),
			want:    nil,
			result:  func(r memory.Result) bool { return len(r.Deleted) == 1 },
			skipped: 1,
		},
	}
	model := scripted.NewScript(scripted.Options{}, func() []scripted.Response {
		var rs []scripted.Response
		for _, s := range steps {
			rs = append(rs, s.answer)
		}
		return rs
	}()...)
	m, err := memory.NewManager[memory.Fact](model, st, memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var firstID string
	for i, s := range steps {
		res, err := m.Extract(ctx, "u1", conversation)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !s.result(res) || len(res.Skipped) != s.skipped {
			t.Errorf("%s: result %+v", s.name, res)
		}
		if i == 0 {
			firstID = res.Inserted[0]
		}
		if i == 2 && res.Updated[0] != firstID {
			t.Errorf("update wrote %s, want the memory's own id %s", res.Updated[0], firstID)
		}
		if diff := cmp.Diff(s.want, facts(t, m, "u1"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: stored (-want +got):\n%s", s.name, diff)
		}
		prompt := model.Requests()[i].Messages[1].Text()
		if s.inPrompt != "" && !strings.Contains(prompt, s.inPrompt) {
			t.Errorf("%s: the prompt does not show %q:\n%s", s.name, s.inPrompt, prompt)
		}
		if !strings.Contains(prompt, "user: Book me a flight to Jeju.") || strings.Contains(prompt, "You are a travel assistant") {
			t.Errorf("%s: the conversation is not rendered as expected:\n%s", s.name, prompt)
		}
	}
}

func TestUsersAreIsolated(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	model := scripted.NewScript(scripted.Options{},
		ops(`{"operations":[{"op":"insert","content":{"category":"fact","content":"Works at Acme on the data team"}}]}`),
		// For another user the model tries to delete and update "m1": it
		// was shown nothing, so there is nothing to touch.
		ops(`{"operations":[{"op":"delete","id":"m1"},{"op":"update","id":"m1","content":{"category":"fact","content":"hijacked"}}]}`),
	)
	m, err := memory.NewManager[memory.Fact](model, st, memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := "alice@example.com", "alice@example%2Ecom" // escaping keeps them apart
	if _, err := m.Extract(ctx, alice, conversation); err != nil {
		t.Fatal(err)
	}
	res, err := m.Extract(ctx, bob, conversation)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() || len(res.Skipped) != 2 {
		t.Errorf("bob's extraction touched memories: %+v", res)
	}
	if !strings.Contains(model.Requests()[1].Messages[1].Text(), "(none)") {
		t.Errorf("bob was shown alice's memories:\n%s", model.Requests()[1].Messages[1].Text())
	}
	if diff := cmp.Diff([]string{"Works at Acme on the data team"}, facts(t, m, alice)); diff != "" {
		t.Errorf("alice's memories (-want +got):\n%s", diff)
	}
	if got := facts(t, m, bob); len(got) != 0 {
		t.Errorf("bob sees %v", got)
	}
	if got, err := m.Search(ctx, bob, "Acme data team", 5); err != nil || len(got) != 0 {
		t.Errorf("bob's search found %v, %v", got, err)
	}
	if _, err := m.Get(ctx, bob, mustFirst(t, m, alice)); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("bob reading alice's memory by id: %v, want ErrNotFound", err)
	}
}

func mustFirst(t *testing.T, m *memory.Manager[memory.Fact], user string) string {
	t.Helper()
	mems, err := m.List(context.Background(), user, 1)
	if err != nil || len(mems) == 0 {
		t.Fatalf("no memory for %s: %v", user, err)
	}
	return mems[0].ID
}

func TestFailingExtractionWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	for name, answers := range map[string][]scripted.Response{
		"model error":       {{Err: errors.New("overloaded")}},
		"invalid, twice":    {ops(`{"operations":[{"op":"explode"}]}`), ops(`{"operations":"no"}`)},
		"not a tool answer": {{Message: llm.AI("I think you like windows.")}, {Message: llm.AI("Still prose.")}},
	} {
		m, err := memory.NewManager[memory.Fact](scripted.NewScript(scripted.Options{}, answers...), st, memory.ManagerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Extract(ctx, "u1", conversation)
		if !errors.Is(err, memory.ErrExtraction) {
			t.Errorf("%s: err = %v, want ErrExtraction", name, err)
		}
		if got := facts(t, m, "u1"); len(got) != 0 {
			t.Errorf("%s: stored %v", name, got)
		}
	}
}

// Memories survive a restart on both durable backends.
func TestMemoriesSurviveReopen(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) func() (*store.Store, error){
		"sqlite": func(t *testing.T) func() (*store.Store, error) {
			path := filepath.Join(t.TempDir(), "memory.db")
			return func() (*store.Store, error) { return sqlite.Open(context.Background(), path, storeConfig()) }
		},
		"postgres": func(t *testing.T) func() (*store.Store, error) {
			url := pgtest.NewDatabase(t, "weft_memory_test_")
			return func() (*store.Store, error) { return postgres.Open(context.Background(), url, storeConfig()) }
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			reopen := open(t)
			st, err := reopen()
			if err != nil {
				t.Fatal(err)
			}
			model := scripted.New(llm.AI("", llm.ToolCall{Name: "memory_operations", Args: json.RawMessage(`{"operations":[{"op":"insert","content":{"category":"preference","content":"Answers should be in Korean"}}]}`)}))
			m, err := memory.NewManager[memory.Fact](model, st, memory.ManagerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Extract(ctx, "u1", conversation); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}

			st, err = reopen()
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			m, err = memory.NewManager[memory.Fact](scripted.New(), st, memory.ManagerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Search(ctx, "u1", "which language should answers be in", 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Content.Content != "Answers should be in Korean" || got[0].Score <= 0 {
				t.Errorf("after reopen: %+v", got)
			}
			if other, err := m.Search(ctx, "u2", "which language should answers be in", 3); err != nil || len(other) != 0 {
				t.Errorf("another user after reopen: %+v, %v", other, err)
			}
		})
	}
}

func TestEpisodesAndProcedures(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	model := scripted.NewScript(scripted.Options{},
		ops(`{"operations":[{"op":"insert","content":{"observation":"User asked for a Jeju flight","thoughts":"window seat preference known","action":"booked KE1201 window seat","result":"user was satisfied"}}]}`),
		ops(`{"operations":[{"op":"insert","content":{"when":"booking anything that costs money","instruction":"Ask for confirmation first"}}]}`),
	)
	ep, err := memory.NewManager[memory.Episode](model, st, memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := memory.NewManager[memory.Procedure](model, st, memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ep.Extract(ctx, "u1", conversation); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Extract(ctx, "u1", conversation); err != nil {
		t.Fatal(err)
	}
	eps, err := ep.List(ctx, "u1", 10)
	if err != nil || len(eps) != 1 || eps[0].Kind != memory.Episodic || eps[0].Content.Action != "booked KE1201 window seat" {
		t.Errorf("episodes: %+v, %v", eps, err)
	}
	prs, err := pr.List(ctx, "u1", 10)
	if err != nil || len(prs) != 1 || prs[0].Kind != memory.Procedural {
		t.Errorf("procedures: %+v, %v", prs, err)
	}
	// Each kind has its own namespace.
	ns, _ := memory.Namespace("u1", memory.Procedural)
	items, err := st.Search(ctx, ns, store.SearchOptions{})
	if err != nil || len(items) != 1 {
		t.Errorf("procedural namespace holds %d items, %v", len(items), err)
	}
	// A type of one's own needs a kind.
	if _, err := memory.NewManager[custom](model, st, memory.ManagerOptions{}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("custom type without a kind: %v", err)
	}
	if _, err := memory.NewManager[custom](model, st, memory.ManagerOptions{Kind: "notes"}); err != nil {
		t.Errorf("custom type with a kind: %v", err)
	}
}

type custom struct {
	Note string `json:"note"`
}

func (c custom) Text() string { return c.Note }

func TestPutGetDelete(t *testing.T) {
	ctx := context.Background()
	m, err := memory.NewManager[memory.Fact](scripted.New(), memStore(t), memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, created, err := m.Put(ctx, "u1", "", memory.Fact{Category: "fact", Content: "Has a dog named Bori"})
	if err != nil || !created {
		t.Fatalf("Put: %v, %v", created, err)
	}
	again, created, err := m.Put(ctx, "u1", "", memory.Fact{Category: "fact", Content: "has a dog named bori"})
	if err != nil || created || again != id {
		t.Errorf("a repeated Put: id %s created %v err %v; want the stored id %s", again, created, err, id)
	}
	if _, _, err := m.Put(ctx, "u1", "no-such-id", memory.Fact{Content: "x"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Put to a missing id: %v", err)
	}
	if _, _, err := m.Put(ctx, "", "", memory.Fact{Content: "x"}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("Put without a user: %v", err)
	}
	if err := m.Delete(ctx, "u1", id); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "u1", id); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}
