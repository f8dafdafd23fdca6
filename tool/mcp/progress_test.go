package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
	wmcp "github.com/weftlabs/weft/tool/mcp"
)

// In a run that streams tools events, a call asks the server for progress
// and its notifications become the call's on_tool_event; otherwise the
// call asks for none.
func TestProgressNotifications(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "weft-test", Version: "1.0.0"}, nil)
	seen := make(chan struct{}) // closed when the stream showed the progress
	var mu sync.Mutex
	var asked []bool
	mcp.AddTool(srv, &mcp.Tool{Name: "work", Description: "Works in two halves."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		mu.Lock()
		asked = append(asked, tok != nil)
		mu.Unlock()
		if tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"}); err != nil {
				return nil, nil, err
			}
			// Finish only once the progress was streamed: notifications
			// are handled apart from the call's answer.
			select {
			case <-seen:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"p": {URL: serveHTTP(t, srv)}}}, testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	eventually(t, "the tool to be listed", func() bool { _, ok := m.Registry().Get("p__work"); return ok })

	msgs := graph.Messages[llm.Message]("messages")
	g, err := graph.New(msgs).AddNode("tools", tool.Node(m.Registry(), msgs, tool.NodeOptions{}), nil).
		AddEdge(graph.START, "tools").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := msgs.Write(llm.Human("go"), llm.AI("", llm.ToolCall{ID: "c1", Name: "p__work", Args: json.RawMessage(`{}`)}))
	var kinds []graph.ToolEventKind
	var progress []string
	for ev, err := range g.Stream(context.Background(), in, &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamTools}}) {
		if err != nil {
			t.Fatal(err)
		}
		te, _ := ev.Tool()
		kinds = append(kinds, te.Kind)
		if te.Kind == graph.ToolProgress {
			b, _ := json.Marshal(te)
			progress = append(progress, string(b))
			close(seen)
		}
	}
	if diff := cmp.Diff([]graph.ToolEventKind{graph.ToolStarted, graph.ToolProgress, graph.ToolEnded}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`{"event":"on_tool_event","toolCallId":"c1","name":"p__work","data":{"message":"half","progress":1,"total":2}}`}, progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}

	// Not streamed: no progress asked for.
	if _, err := g.Invoke(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]bool{true, false}, asked); diff != "" {
		t.Errorf("calls that asked for progress (-want +got):\n%s", diff)
	}
}
