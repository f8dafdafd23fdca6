package llm

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"strings"
)

// Chunk is a piece of a streamed AI message (LangChain's AIMessageChunk).
// Merging every chunk of a stream gives the message the same call would
// have returned without streaming.
type Chunk struct {
	// ID is the message's ID; providers repeat it on every chunk.
	ID string
	// Content is a piece of the text.
	Content string
	// ToolCallChunks are pieces of tool calls; pieces with the same Index
	// belong to the same call.
	ToolCallChunks []ToolCallChunk
	// Usage is token usage reported with this chunk; merging adds usages.
	Usage *Usage
	// ResponseMetadata is metadata reported with this chunk; merging keeps
	// the latest value of each key.
	ResponseMetadata ResponseMetadata
}

// MessageID returns the ID of the message the chunk is a piece of. A graph
// run's messages stream (graph.StreamMessage) reads it, so that a message
// streamed in chunks is not streamed again whole when the node saves it.
func (c Chunk) MessageID() string { return c.ID }

// ToolCallChunk is a piece of a tool call. The first piece of a call
// usually carries its ID and Name, later ones fragments of Args.
type ToolCallChunk struct {
	// Index tells which call of the message the piece belongs to.
	Index int
	ID    string
	Name  string
	// Args is a fragment of the arguments' JSON text.
	Args string
}

// Merge concatenates chunks in order into one chunk (LangChain's "+" on
// AIMessageChunk): text is joined, tool-call pieces are joined by index
// (one ToolCallChunk per call in the result), usages are added, and
// metadata keys take their latest value.
//
// Pieces with the same index but different non-empty IDs are kept as
// separate calls, since some OpenAI-compatible servers send every parallel
// call with index 0.
func Merge(chunks ...Chunk) Chunk {
	var b chunkBuilder
	for _, c := range chunks {
		b.add(c)
	}
	return b.chunk()
}

// Message returns the AI message the chunk stands for. Tool-call arguments
// that are not a JSON object become InvalidToolCalls.
func (c Chunk) Message() Message {
	c = Merge(c)
	m := Message{
		Type:             TypeAI,
		ID:               c.ID,
		Content:          c.Content,
		Usage:            c.Usage,
		ResponseMetadata: c.ResponseMetadata,
	}
	for _, tc := range c.ToolCallChunks {
		args, err := ParseArgs(tc.Args)
		if err != nil {
			m.InvalidToolCalls = append(m.InvalidToolCalls, InvalidToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args, Error: err.Error()})
			continue
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Name, Args: args})
	}
	return m
}

// Collect drains a stream and returns the merged message. On an error it
// returns the message merged so far with the error.
func Collect(stream iter.Seq2[Chunk, error]) (Message, error) {
	var b chunkBuilder
	for c, err := range stream {
		if err != nil {
			return b.chunk().Message(), err
		}
		b.add(c)
	}
	return b.chunk().Message(), nil
}

// chunkBuilder merges chunks in time linear in their total size.
type chunkBuilder struct {
	id      string
	content strings.Builder
	calls   []*callBuilder
	byIndex map[int]int // latest call with each index
	usage   *Usage
	meta    ResponseMetadata
}

type callBuilder struct {
	index    int
	id, name string
	args     strings.Builder
}

func (b *chunkBuilder) add(c Chunk) {
	if b.id == "" {
		b.id = c.ID
	}
	b.content.WriteString(c.Content)
	for _, tc := range c.ToolCallChunks {
		b.addCall(tc)
	}
	if c.Usage != nil {
		b.usage = b.usage.Add(c.Usage)
	}
	if len(c.ResponseMetadata) > 0 {
		if b.meta == nil {
			b.meta = ResponseMetadata{}
		}
		maps.Copy(b.meta, c.ResponseMetadata)
	}
}

func (b *chunkBuilder) addCall(tc ToolCallChunk) {
	if b.byIndex == nil {
		b.byIndex = map[int]int{}
	}
	i, ok := b.byIndex[tc.Index]
	if !ok || (tc.ID != "" && b.calls[i].id != "" && tc.ID != b.calls[i].id) {
		i = len(b.calls)
		b.calls = append(b.calls, &callBuilder{index: tc.Index})
		b.byIndex[tc.Index] = i
	}
	call := b.calls[i]
	if call.id == "" {
		call.id = tc.ID
	}
	switch {
	case call.name == "":
		call.name = tc.Name
	case tc.Name != "" && tc.Name != call.name:
		call.name += tc.Name // a name streamed in pieces
	}
	call.args.WriteString(tc.Args)
}

func (b *chunkBuilder) chunk() Chunk {
	c := Chunk{ID: b.id, Content: b.content.String(), Usage: b.usage, ResponseMetadata: b.meta}
	for _, call := range b.calls {
		c.ToolCallChunks = append(c.ToolCallChunks, ToolCallChunk{Index: call.index, ID: call.id, Name: call.name, Args: call.args.String()})
	}
	return c
}

type chunkJSON struct {
	Type             string            `json:"type"`
	ID               string            `json:"id,omitempty"`
	Content          string            `json:"content"`
	ToolCallChunks   []toolCallChunkJS `json:"tool_call_chunks"`
	UsageMetadata    *Usage            `json:"usage_metadata,omitempty"`
	ResponseMetadata ResponseMetadata  `json:"response_metadata,omitempty"`
}

type toolCallChunkJS struct {
	Name  *string `json:"name"`
	Args  *string `json:"args"`
	ID    *string `json:"id"`
	Index int     `json:"index"`
	Type  string  `json:"type"`
}

// MarshalJSON encodes the chunk as LangChain's AIMessageChunk, the form the
// LangGraph Server API streams in "messages" mode.
func (c Chunk) MarshalJSON() ([]byte, error) {
	out := chunkJSON{
		Type:             "AIMessageChunk",
		ID:               c.ID,
		Content:          c.Content,
		ToolCallChunks:   make([]toolCallChunkJS, len(c.ToolCallChunks)),
		UsageMetadata:    c.Usage,
		ResponseMetadata: c.ResponseMetadata,
	}
	for i, tc := range c.ToolCallChunks {
		out.ToolCallChunks[i] = toolCallChunkJS{nullable(tc.Name), nullable(tc.Args), nullable(tc.ID), tc.Index, "tool_call_chunk"}
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes an AIMessageChunk.
func (c *Chunk) UnmarshalJSON(data []byte) error {
	var in struct {
		Type             string            `json:"type"`
		ID               string            `json:"id"`
		Content          json.RawMessage   `json:"content"`
		ToolCallChunks   []toolCallChunkJS `json:"tool_call_chunks"`
		UsageMetadata    *Usage            `json:"usage_metadata"`
		ResponseMetadata ResponseMetadata  `json:"response_metadata"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("%w: chunk: %w", ErrInvalidMessage, err)
	}
	if in.Type != "AIMessageChunk" && in.Type != "ai" {
		return fmt.Errorf("%w: chunk has type %q, want AIMessageChunk", ErrInvalidMessage, in.Type)
	}
	var m Message
	if err := decodeContent(in.Content, &m); err != nil {
		return err
	}
	out := Chunk{ID: in.ID, Content: m.Text(), Usage: in.UsageMetadata, ResponseMetadata: in.ResponseMetadata}
	if len(out.ResponseMetadata) == 0 {
		out.ResponseMetadata = nil
	}
	for _, tc := range in.ToolCallChunks {
		out.ToolCallChunks = append(out.ToolCallChunks, ToolCallChunk{Index: tc.Index, ID: deref(tc.ID), Name: deref(tc.Name), Args: deref(tc.Args)})
	}
	*c = out
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
