package mcp_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
	wmcp "github.com/weftlabs/weft/tool/mcp"
	"github.com/weftlabs/weft/tool/retrieve"
)

// A tool-retrieval index synced in OnChange follows a server's tools: one
// the server adds while the manager runs is found by search, one it
// removes is no longer found (the pattern docs/tools.md shows).
func TestOnChangeSyncsARetrievalIndex(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	idx, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(nil)
	opts.Registry = reg
	opts.OnChange = func(tool.Change) {
		if _, err := idx.SyncRegistry(ctx, reg); err != nil {
			t.Errorf("SyncRegistry: %v", err)
		}
	}
	srv := newServer(nil)
	m, err := wmcp.Start(ctx, &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"h": {URL: serveHTTP(t, srv)}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if idx.Len() != len(reg.Names()) {
		t.Fatalf("after the first listing the index holds %d tools, the registry %d", idx.Len(), len(reg.Names()))
	}
	found := func(query, name string) bool {
		hits, err := idx.Search(ctx, query, 3)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(hits, func(h retrieve.Hit) bool { return h.Spec.Name == name })
	}
	const query = "translate korean text into english"
	if found(query, "h__translate") {
		t.Fatal("found before the server had it")
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "translate", Description: "Translate Korean text into English."}, func(context.Context, *mcp.CallToolRequest, struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
	})
	eventually(t, "the new tool in the index", func() bool { return found(query, "h__translate") })
	srv.RemoveTools("translate")
	eventually(t, "the tool's removal from the index", func() bool { return !found(query, "h__translate") })
	if _, ok := reg.Get("h__translate"); ok {
		t.Error("the index dropped a tool the registry still has")
	}
}
