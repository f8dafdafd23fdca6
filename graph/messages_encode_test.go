package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// blobRecorder keeps the blobs every Put is given.
type blobRecorder struct {
	*checkpoint.MemoryDriver
	mu    sync.Mutex
	blobs []checkpoint.Blob
}

func (d *blobRecorder) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs []checkpoint.Blob) (checkpoint.Config, error) {
	d.mu.Lock()
	for _, b := range blobs {
		b.Value = bytes.Clone(b.Value)
		d.blobs = append(d.blobs, b)
	}
	d.mu.Unlock()
	return d.MemoryDriver.Put(ctx, cfg, cp, meta, blobs)
}

// A message list saved whole is encoded straight into one buffer sized by
// llm.Message.JSONSizeHint, and its messages' cached encodings are slices
// of it. What is saved must be exactly encoding/json's output, even when
// escaping makes the JSON longer than the estimate, and the appended items
// of later checkpoints must be exactly each new message's JSON.
func TestMessagesSavedWholeThenAppended(t *testing.T) {
	msgs := graph.Messages[llm.Message]("messages")
	escaped := strings.Repeat("\"\\\n\x01<>&\u2028", 3000) // far longer as JSON than as text
	first := []llm.Message{
		llm.Human("hi?"),
		llm.AI("", llm.ToolCall{ID: "c1", Name: "look", Args: json.RawMessage(`{"q":"` + strings.Repeat("x", 5000) + `"}`)}),
		llm.ToolResult("c1", "look", escaped),
		llm.AI("plain answer"),
	}
	later := []llm.Message{llm.Human(escaped), llm.AI("again")}
	for i := range first {
		first[i].ID = "m" + string(rune('a'+i))
	}
	for i := range later {
		later[i].ID = "n" + string(rune('a'+i))
	}
	step := 0
	rec := &blobRecorder{MemoryDriver: checkpoint.NewMemoryDriver()}
	g, err := graph.New(msgs).AddNode(
		"n", func(context.Context, graph.State) (graph.Update, error) {
			step++
			if step == 1 {
				return msgs.Write(first[1:]...), nil
			}
			return msgs.Write(later[1:]...), nil
		}, nil).
		AddEdge(graph.START, "n").Compile(&graph.CompileOptions{Checkpointer: checkpoint.New(rec)})

	if err != nil {
		t.Fatal(err)
	}
	cfg := graph.RunOptions{ThreadID: "t", Durability: graph.DurabilityExit}
	if _, err := g.Invoke(context.Background(), msgs.Write(first[0]), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), msgs.Write(later[0]), &cfg); err != nil {
		t.Fatal(err)
	}
	var whole, appended []checkpoint.Blob
	for _, b := range rec.blobs {
		if b.Channel != "messages" {
			continue
		}
		if b.Appended != nil {
			appended = append(appended, b)
		} else {
			whole = append(whole, b)
		}
	}
	if len(whole) == 0 {
		t.Fatal("no whole value of messages was saved")
	}
	want, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	if got := whole[0].Value; !bytes.Equal(got, want) {
		t.Errorf("saved value differs from json.Marshal (%d vs %d bytes)", len(got), len(want))
	}
	var items []json.RawMessage
	for _, b := range appended {
		items = append(items, b.Appended...)
	}
	if len(whole) != 1 {
		t.Errorf("%d whole values of messages saved, want 1 (then appended items)", len(whole))
	}
	if len(appended) == 0 {
		t.Error("the second run saved no appended items")
	} else {
		if len(items) != len(later) {
			t.Fatalf("appended %d items, want %d", len(items), len(later))
		}
		for i, it := range items {
			w, _ := json.Marshal(later[i])
			if !bytes.Equal(it, w) {
				t.Errorf("appended item %d differs from json.Marshal", i)
			}
		}
	}
	// And the thread reads back as written.
	snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := msgs.Get(snap.Values)
	if len(got) != len(first)+len(later) || got[2].Content != escaped || got[4].Content != escaped {
		t.Errorf("state read back has %d messages; want %d with the escaped texts intact", len(got), len(first)+len(later))
	}
}
