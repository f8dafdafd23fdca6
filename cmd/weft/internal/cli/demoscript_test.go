package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// A served demo script plays from its top in every conversation: a new
// thread hears the script's first reply, not the one that was next for
// another thread, and a thread goes on where it left off.
func TestDemoScriptPerThread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.yaml")
	script := "responses:\n  - content: one\n  - content: two\n  - content: three\n"
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	model, err := loopingScript(path)
	if err != nil {
		t.Fatal(err)
	}
	model = model.BindTools([]llm.ToolSpec{{Name: "noop"}})
	reply := graph.Value[string]("reply")
	g, err := graph.New(reply).AddNode("ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
		var text string
		for c, err := range model.Stream(ctx, []llm.Message{llm.Human("hi")}) {
			if err != nil {
				return graph.Update{}, err
			}
			text += c.Content
		}
		return reply.Write(text), nil
	}, nil).AddEdge(graph.START, "ask").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, step := range []struct{ thread, want string }{
		{"a", "one"}, {"a", "two"}, {"b", "one"}, {"a", "three"}, {"b", "two"}, {"a", "one"},
	} {
		out, err := g.Invoke(ctx, reply.Write(""), &graph.RunOptions{ThreadID: step.thread})
		if err != nil {
			t.Fatalf("run %d on %s: %v", i, step.thread, err)
		}
		if got := reply.Get(out); got != step.want {
			t.Errorf("run %d on thread %s replied %q, want %q", i, step.thread, got, step.want)
		}
	}
}

// A script that cannot be parsed is refused when it is loaded, naming the
// file.
func TestDemoScriptRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("responses:\n  - contnet: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loopingScript(path); err == nil {
		t.Fatal("a script with an unknown key was accepted")
	}
}
