package llm_test

import (
	"encoding/json"
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/llm"
)

func TestMergeToolCallFragments(t *testing.T) {
	// Two parallel calls whose argument fragments interleave, as OpenAI
	// streams them; only the first fragment of each has id and name.
	chunks := []llm.Chunk{
		{ID: "chatcmpl-1", Content: "Checking"},
		{ID: "chatcmpl-1", Content: " both."},
		{ID: "chatcmpl-1", ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "call_a", Name: "search_jobs", Args: ""}}},
		{ID: "chatcmpl-1", ToolCallChunks: []llm.ToolCallChunk{{Index: 0, Args: `{"query":`}}},
		{ID: "chatcmpl-1", ToolCallChunks: []llm.ToolCallChunk{{Index: 1, ID: "call_b", Name: "search_mentors", Args: `{"field"`}}},
		{ID: "chatcmpl-1", ToolCallChunks: []llm.ToolCallChunk{{Index: 0, Args: ` "UX 디자이너"}`}}},
		{ID: "chatcmpl-1", ToolCallChunks: []llm.ToolCallChunk{{Index: 1, Args: `:"ux"}`}}},
		{ID: "chatcmpl-1", Usage: &llm.Usage{InputTokens: 10, TotalTokens: 10}, ResponseMetadata: llm.ResponseMetadata{"model_name": "m"}},
		{ID: "chatcmpl-1", Usage: &llm.Usage{OutputTokens: 5, TotalTokens: 5, OutputTokenDetails: map[string]int64{"reasoning": 2}}, ResponseMetadata: llm.ResponseMetadata{"finish_reason": "tool_calls"}},
	}
	want := llm.Message{
		Type:    llm.TypeAI,
		ID:      "chatcmpl-1",
		Content: "Checking both.",
		ToolCalls: []llm.ToolCall{
			{ID: "call_a", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX 디자이너"}`)},
			{ID: "call_b", Name: "search_mentors", Args: json.RawMessage(`{"field":"ux"}`)},
		},
		Usage:            &llm.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, OutputTokenDetails: map[string]int64{"reasoning": 2}},
		ResponseMetadata: llm.ResponseMetadata{"model_name": "m", "finish_reason": "tool_calls"},
	}
	if d := cmp.Diff(want, llm.Merge(chunks...).Message()); d != "" {
		t.Errorf("Merge(...).Message() (-want +got):\n%s", d)
	}
	got, err := llm.Collect(seqOf(chunks, nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Collect (-want +got):\n%s", d)
	}
	// Merging is associative: merging merged halves gives the same.
	halves := llm.Merge(llm.Merge(chunks[:4]...), llm.Merge(chunks[4:]...))
	if d := cmp.Diff(want, halves.Message()); d != "" {
		t.Errorf("merge of halves (-want +got):\n%s", d)
	}
}

func TestMergeSameIndexDifferentIDs(t *testing.T) {
	// Some OpenAI-compatible servers send every parallel call with index 0.
	got := llm.Merge(
		llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "a", Name: "f", Args: `{"x":1}`}}},
		llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "b", Name: "g", Args: `{"y":2}`}}},
		// A repeated id continues the same call.
		llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "b", Name: "g", Args: ``}}},
	).Message()
	want := []llm.ToolCall{
		{ID: "a", Name: "f", Args: json.RawMessage(`{"x":1}`)},
		{ID: "b", Name: "g", Args: json.RawMessage(`{"y":2}`)},
	}
	if d := cmp.Diff(want, got.ToolCalls); d != "" {
		t.Errorf("tool calls (-want +got):\n%s", d)
	}
}

func TestChunkMessageInvalidArgs(t *testing.T) {
	got := llm.Merge(
		llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "a", Name: "f", Args: `{"x":`}}},
		llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{{Index: 1, ID: "b", Name: "g"}}},
	).Message()
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].ID != "b" || string(got.ToolCalls[0].Args) != "{}" {
		t.Errorf("tool calls = %+v, want only b with {}", got.ToolCalls)
	}
	if len(got.InvalidToolCalls) != 1 || got.InvalidToolCalls[0].Args != `{"x":` || got.InvalidToolCalls[0].Error == "" {
		t.Errorf("invalid tool calls = %+v", got.InvalidToolCalls)
	}
}

func TestCollectError(t *testing.T) {
	boom := errors.New("boom")
	got, err := llm.Collect(seqOf([]llm.Chunk{{Content: "partial "}, {Content: "text"}}, boom))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if got.Text() != "partial text" {
		t.Errorf("partial message = %q", got.Text())
	}
}

func TestChunkJSON(t *testing.T) {
	c := llm.Chunk{
		ID:             "run-1",
		Content:        "Hel",
		ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "call_1", Name: "f", Args: `{"a"`}, {Index: 0, Args: `:1}`}},
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"AIMessageChunk","id":"run-1","content":"Hel","tool_call_chunks":[` +
		`{"name":"f","args":"{\"a\"","id":"call_1","index":0,"type":"tool_call_chunk"},` +
		`{"name":null,"args":":1}","id":null,"index":0,"type":"tool_call_chunk"}]}`
	if string(b) != want {
		t.Errorf("encoding:\n got %s\nwant %s", b, want)
	}
	var back llm.Chunk
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, back); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if err := json.Unmarshal([]byte(`{"type":"human","content":"x"}`), &back); !errors.Is(err, llm.ErrInvalidMessage) {
		t.Errorf("decoding a human message as a chunk: %v", err)
	}
}

func seqOf(chunks []llm.Chunk, end error) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if end != nil {
			yield(llm.Chunk{}, end)
		}
	}
}
