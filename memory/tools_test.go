package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tool"
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

	res := runTool(t, alice, write, `{"action":"create","content":{"category":"preference","content":"Likes concise answers"}}`)
	if !res.Success {
		t.Fatalf("create: %+v", res)
	}
	id := res.Data.(memory.ManageResult).ID

	res = runTool(t, alice, write, `{"action":"create","content":{"category":"preference","content":"likes concise answers"}}`)
	if got := res.Data.(memory.ManageResult); !res.Success || got.ID != id || got.Note == "" {
		t.Errorf("a repeated create: %+v; want the stored id and a note", res)
	}
	res = runTool(t, alice, write, `{"action":"update","id":"`+id+`","content":{"category":"preference","content":"Likes concise answers with examples"}}`)
	if !res.Success {
		t.Errorf("update: %+v", res)
	}

	res = runTool(t, alice, read, `{"query":"how long should answers be"}`)
	found := res.Data.([]memory.Memory[memory.Fact])
	if !res.Success || len(found) != 1 || found[0].Content.Content != "Likes concise answers with examples" || found[0].ID != id {
		t.Errorf("alice's search: %+v", res)
	}
	if res = runTool(t, bob, read, `{"query":"how long should answers be"}`); !res.Success || len(res.Data.([]memory.Memory[memory.Fact])) != 0 {
		t.Errorf("bob's search found alice's memory: %+v", res)
	}
	// Bob cannot delete alice's memory by its id.
	if res = runTool(t, bob, write, `{"action":"delete","id":"`+id+`"}`); res.Success || res.ErrorCode != "NOT_FOUND" {
		t.Errorf("bob deleting alice's memory: %+v", res)
	}
	for name, args := range map[string]string{
		"update without id": `{"action":"update","content":{"category":"fact","content":"x"}}`,
		"create with id":    `{"action":"create","id":"x","content":{"category":"fact","content":"x"}}`,
		"create no content": `{"action":"create"}`,
		"unknown action":    `{"action":"forget"}`,
		"delete without id": `{"action":"delete"}`,
	} {
		if res := runTool(t, alice, write, args); res.Success || res.ErrorCode != tool.CodeInvalidArgs {
			t.Errorf("%s: %+v, want %s", name, res, tool.CodeInvalidArgs)
		}
	}
	if res = runTool(t, alice, write, `{"action":"delete","id":"`+id+`"}`); !res.Success {
		t.Errorf("delete: %+v", res)
	}
	// Without a user in the context the tool says so.
	_, err = read.Run(context.Background(), json.RawMessage(`{"query":"x"}`), 0)
	if !errors.Is(err, memory.ErrNoUser) {
		t.Errorf("no user: %v, want ErrNoUser", err)
	}
}
