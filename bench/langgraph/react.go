package main

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// reactAgent builds the react_agent case with the real agent/react package:
// a fake model scripted to ask for nTools tool calls, one per turn, and
// then to answer; and one tool. The sizes follow bench.mjs: each query is a
// UUID repeated 100 times, each tool result "result for query: <query>"
// repeated 10 times (the tool message's content, as in LangGraph's
// ToolNode), and the answer
// "answer" repeated 100 times. Input: one human message "hi?". The agent
// runs agent -> tools N times, then agent: 2N+1 updates events.
func reactAgent(nTools int, saver *checkpoint.Saver) (*graph.Graph, graph.Update, error) {
	name := uuid.NewString()
	type queryArgs struct {
		Query string `json:"query"`
	}
	search := tool.New(name, "Looks a query up.", func(_ context.Context, in queryArgs) (string, error) {
		return strings.Repeat("result for query: "+in.Query, 10), nil
	})
	reg, err := tool.NewRegistry(search)
	if err != nil {
		return nil, graph.Update{}, err
	}
	responses := make([]llm.Message, 0, nTools+1)
	for range nTools {
		args, _ := json.Marshal(queryArgs{Query: strings.Repeat(uuid.NewString(), 100)})
		responses = append(responses, llm.Message{
			Type:      llm.TypeAI,
			ID:        uuid.NewString(),
			ToolCalls: []llm.ToolCall{{ID: uuid.NewString(), Name: name, Args: args}},
		})
	}
	answer := llm.AI(strings.Repeat("answer", 100))
	answer.ID = uuid.NewString()
	responses = append(responses, answer)
	g, err := react.New(&fakeModel{responses: responses}, reg, react.Options{
		MaxSteps:     nTools + 1,
		Timeout:      time.Hour,
		Checkpointer: saver,
		// LangGraph.js's fake model is invoked, not streamed.
		NoStream: true,
	})
	if err != nil {
		return nil, graph.Update{}, err
	}
	return g, react.Messages.Write(llm.Human("hi?")), nil
}

// fakeModel answers with its scripted responses in turn, instantly, like
// FakeToolCallingModel in bench.mjs (which wraps around at the end). Unlike
// llm/scripted it records nothing, so it costs the run nothing.
type fakeModel struct {
	mu        sync.Mutex
	responses []llm.Message
	i         int
}

func (m *fakeModel) Generate(context.Context, []llm.Message, ...llm.CallOptions) (llm.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msg := m.responses[m.i]
	m.i = (m.i + 1) % len(m.responses)
	return msg, nil
}

func (m *fakeModel) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		msg, err := m.Generate(ctx, msgs, opts...)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		c := llm.Chunk{ID: msg.ID, Content: msg.Content}
		for i, tc := range msg.ToolCalls {
			c.ToolCallChunks = append(c.ToolCallChunks, llm.ToolCallChunk{Index: i, ID: tc.ID, Name: tc.Name, Args: string(tc.Args)})
		}
		yield(c, nil)
	}
}

func (m *fakeModel) BindTools([]llm.ToolSpec) llm.ChatModel { return m }
