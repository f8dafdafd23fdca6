package main

import (
	"context"
	"strconv"

	"github.com/weftlabs/weft/graph"
)

// Message is the bench's chat message, standing in for LangChain's
// BaseMessage (MessagesAnnotation in bench.mjs): a role, text content, and
// the tool-call fields the react agent needs.
type Message struct {
	ID         string     `json:"id,omitempty"`
	Role       string     `json:"role"` // "human", "ai" or "tool"
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a tool call requested by an AI message.
type ToolCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// MessageID implements graph.MessageLike.
func (m Message) MessageID() string { return m.ID }

// WithMessageID implements graph.MessageLike.
func (m Message) WithMessageID(id string) Message { m.ID = id; return m }

// messages is the add-messages channel of the sequential and react_agent
// cases (LangGraph's MessagesAnnotation).
var messages = graph.Messages[Message]("messages")

// sequential builds START -> node_0 -> ... -> node_{n-1} -> END over a
// messages channel; every node returns an empty update. Input: no messages.
func sequential(n int) (*graph.Graph, graph.Update, error) {
	b := graph.New(messages)
	prev := graph.START
	for i := range n {
		name := "node_" + strconv.Itoa(i)
		b.AddNode(name, emptyNode, nil)
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g, err := b.Compile(nil)
	return g, messages.Write(), err
}

func emptyNode(context.Context, graph.State) (graph.Update, error) { return graph.Update{}, nil }
