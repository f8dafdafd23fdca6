package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

func runTool(t *testing.T, ctx context.Context, tl *tool.Tool, args string) tool.Result[any] {
	t.Helper()
	if err := tl.Err(); err != nil {
		t.Fatal(err)
	}
	res, _ := tl.Run(ctx, json.RawMessage(args), 0)
	return res
}

func TestMemoryTools(t *testing.T) {
	m, err := memory.NewManager[memory.Fact](scripted.New(), memStore(t), memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write := memory.ManageTool(m, memory.ToolOptions{Name: "write_memory"})
	read := memory.SearchTool(m, memory.ToolOptions{Name: "read_memory"})
	if write.Name() != "write_memory" || read.Name() != "read_memory" {
		t.Fatalf("names %s, %s", write.Name(), read.Name())
	}
	alice := memory.WithUser(context.Background(), "alice")
	bob := memory.WithUser(context.Background(), "bob")
	result := func(res tool.Result[any]) memory.ManageResult {
		t.Helper()
		if !res.Success {
			t.Fatalf("call failed: %+v", res)
		}
		return res.Data.(memory.ManageResult)
	}

	created := result(runTool(t, alice, write, `{"content":{"category":"preference","content":"Likes concise answers"}}`))
	if created.Action != "created" || created.ID == "" {
		t.Fatalf("create: %+v", created)
	}
	id := created.ID
	if got := result(runTool(t, alice, write, `{"content":{"category":"preference","content":"likes  concise answers"}}`)); got != (memory.ManageResult{Action: "unchanged", ID: id}) {
		t.Errorf("a repeated create: %+v; want the stored id, unchanged", got)
	}
	if got := result(runTool(t, alice, write, `{"id":"`+id+`","content":{"category":"preference","content":"Likes concise answers with examples"}}`)); got != (memory.ManageResult{Action: "updated", ID: id}) {
		t.Errorf("update: %+v", got)
	}

	res := runTool(t, alice, read, `{"query":"how long should answers be"}`)
	found := res.Data.([]memory.Memory[memory.Fact])
	if !res.Success || len(found) != 1 || found[0].Content.Content != "Likes concise answers with examples" || found[0].ID != id {
		t.Errorf("alice's search: %+v", res)
	}
	if res = runTool(t, bob, read, `{"query":"how long should answers be"}`); !res.Success || len(res.Data.([]memory.Memory[memory.Fact])) != 0 {
		t.Errorf("bob's search found alice's memory: %+v", res)
	}
	// Bob can neither update nor delete alice's memory by its id.
	for _, args := range []string{
		`{"id":"` + id + `","delete":true,"content":{"category":"x","content":"x"}}`,
		`{"id":"` + id + `","content":{"category":"fact","content":"hijacked"}}`,
	} {
		if res = runTool(t, bob, write, args); res.Success || res.ErrorCode != memory.CodeNotFound {
			t.Errorf("bob: %s: %+v", args, res)
		}
	}
	// A blank memory is outside the schema.
	if res = runTool(t, alice, write, `{"content":{"category":"fact","content":"  "}}`); res.Success || res.ErrorCode != tool.CodeInvalidArgs {
		t.Errorf("blank content: %+v", res)
	}
	// Forgetting by content, then by id.
	second := result(runTool(t, alice, write, `{"content":{"category":"fact","content":"Has a cat"}}`))
	if got := result(runTool(t, alice, write, `{"delete":true,"content":{"category":"fact","content":"has a CAT"}}`)); got != (memory.ManageResult{Action: "deleted", ID: second.ID}) {
		t.Errorf("delete by content: %+v", got)
	}
	if got := result(runTool(t, alice, write, `{"id":"`+id+`","delete":true,"content":{"category":"x","content":"x"}}`)); got.Action != "deleted" {
		t.Errorf("delete by id: %+v", got)
	}
	if mems, _ := m.List(context.Background(), "alice", 10); len(mems) != 0 {
		t.Errorf("left: %+v", mems)
	}
	// Without a user in the context the tool says so.
	_, err = read.Run(context.Background(), json.RawMessage(`{"query":"x"}`), 0)
	if !errors.Is(err, memory.ErrNoUser) {
		t.Errorf("no user: %v, want ErrNoUser", err)
	}
}

// Every argument set the schemas admit is accepted (or is a memory that
// does not exist).
func TestMemoryToolsAcceptTheirSchemas(t *testing.T) {
	opts := memory.ToolOptions{User: func(context.Context) string { return "u1" }}
	st := memStore(t)
	for _, tools := range [][]*tool.Tool{
		factTools(t, st, opts),
		{memory.ManageTool(mustManager[memory.Episode](t, st), opts), memory.SearchTool(mustManager[memory.Episode](t, st), opts)},
		{memory.ManageTool(mustManager[memory.Procedure](t, st), opts)},
	} {
		tooltest.CheckAccepts(t, tools, memory.CodeNotFound)
	}
}

func factTools(t *testing.T, st *store.Store, opts memory.ToolOptions) []*tool.Tool {
	m := mustManager[memory.Fact](t, st)
	return []*tool.Tool{memory.ManageTool(m, opts), memory.SearchTool(m, opts)}
}

func mustManager[T memory.Content](t *testing.T, st *store.Store) *memory.Manager[T] {
	t.Helper()
	m, err := memory.NewManager[T](scripted.New(), st, memory.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
