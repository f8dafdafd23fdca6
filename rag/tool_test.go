package rag

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

func TestRetrieveDocsTool(t *testing.T) {
	ix := newIndex(t, Config{}, testDocs...)
	tl := ix.Tool(ToolOptions{})
	if tl.Name() != "retrieve_docs" || tl.Err() != nil {
		t.Fatalf("tool %q: %v", tl.Name(), tl.Err())
	}
	r, err := tl.Run(context.Background(), json.RawMessage(`{"query": "계획을 승인하려면", "k": 1, "language": "ko"}`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The data travels as JSON in the tool message; read it back typed.
	b, err := json.Marshal(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	var got Retrieved
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Passages) != 1 {
		t.Fatalf("%d passages, want 1", len(got.Passages))
	}
	p := got.Passages[0]
	p.Score = 0
	want := Passage{
		ID: "approval-ko#0", DocID: "approval-ko", Title: "계획 승인", Text: testDocs[1].Text,
		Citation: "kb/tools.json › approval-ko", Source: "kb/tools.json", Language: "ko",
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("passage (-want +got):\n%s", diff)
	}
	if r.Meta["hits"] != 1 {
		t.Errorf("meta %v, want hits 1", r.Meta)
	}
}

func TestRetrieveDocsToolRejectsBadArguments(t *testing.T) {
	tl := newIndex(t, Config{}, testDocs...).Tool(ToolOptions{})
	for _, args := range []string{
		`{}`, `{"query": "   "}`, `{"query": "x", "k": 0.5}`, `{"query": "x", "k": 21}`, `{"query": "x", "language": "fr"}`,
	} {
		if _, err := tl.Run(context.Background(), json.RawMessage(args), time.Minute); !errors.Is(err, tool.ErrInvalidArgs) {
			t.Errorf("%s: err = %v, want ErrInvalidArgs", args, err)
		}
	}
}

// TestRetrieveDocsSchema: every argument set the schema admits is accepted,
// so the model never meets a rule it could not read.
func TestRetrieveDocsSchema(t *testing.T) {
	tooltest.CheckAccepts(t, []*tool.Tool{newIndex(t, Config{}, testDocs...).Tool(ToolOptions{})})
}
