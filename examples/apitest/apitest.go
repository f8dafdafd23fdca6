// Package apitest holds the three test graphs of the LangGraph Server API
// reference (../shared/bench/server/GRAPHS.md), built the same in Go: echo,
// approval and slow. weft serve --graphs apitest serves exactly these, the
// server's own tests run against them, and the load generator streams echo.
// None calls a model: each behaves the same on every run.
//
//	go run ./cmd/weft serve --graphs apitest
package apitest

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
)

// Graph ids, as the reference server registers them.
const (
	EchoID     = "echo"
	ApprovalID = "approval"
	SlowID     = "slow"
)

// Builder builds a graph over a checkpoint saver; the long-term store is
// not used by these graphs. It has the server's graph factory signature.
type Builder = func(saver *checkpoint.Saver, st *store.Store) (*graph.Graph, error)

// All returns the three graphs by graph id.
func All() map[string]Builder {
	return map[string]Builder{EchoID: Echo, ApprovalID: Approval, SlowID: Slow}
}

// ---------------------------------------------------------------- echo

// Messages is echo's state: a chat.
var Messages = graph.Messages[llm.Message]("messages")

// EchoStart and EchoEnd are the custom events echo emits around its reply.
type (
	EchoStart struct {
		Event  string `json:"event"`
		Tokens int    `json:"tokens"`
	}
	EchoEnd struct {
		Event string `json:"event"`
		Text  string `json:"text"`
	}
)

// Echo builds echo: START → echo → END. The node replies with the text of
// the last human message ("(no input)" when there is none or it is empty),
// streamed token by token through EchoModel, between two custom events.
func Echo(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
	model := EchoModel{}
	node := func(ctx context.Context, s graph.State) (graph.Update, error) {
		msgs := Messages.Get(s)
		text := ReplyFor(msgs)
		graph.Emit(ctx, EchoStart{Event: "echo_start", Tokens: countTokens(text)})
		chunks := make([]llm.Chunk, 0, countTokens(text))
		for c, err := range model.Stream(ctx, msgs) {
			if err != nil {
				return graph.Update{}, err
			}
			graph.StreamMessage(ctx, c)
			chunks = append(chunks, c)
		}
		reply := llm.Merge(chunks...).Message()
		graph.Emit(ctx, EchoEnd{Event: "echo_end", Text: text})
		return Messages.Write(llm.Message{Type: llm.TypeAI, ID: reply.ID, Content: text}), nil
	}
	return graph.New(Messages).
		AddNode(EchoID, node, nil).
		AddEdge(graph.START, EchoID).
		AddEdge(EchoID, graph.END).
		Compile(&graph.CompileOptions{Checkpointer: saver})
}

// ReplyFor is echo's reply to msgs: the text of the last human message, or
// "(no input)" when there is none or it is empty.
func ReplyFor(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == llm.TypeHuman {
			if t := msgs[i].Text(); t != "" {
				return t
			}
			return "(no input)"
		}
	}
	return "(no input)"
}

// Tokenize splits text into echo's tokens: each run of non-space with the
// spaces after it, and leading spaces as a token of their own, so that
// the tokens joined are the text. Spaces are ASCII's (tab, newline, form
// feed, carriage return, space), as \s in a regular expression; the
// tokens are those of `\S+\s*|\s+`, found by a scan instead, since echo
// runs it for every reply.
func Tokenize(text string) []string {
	if text == "" {
		return []string{text}
	}
	toks := make([]string, 0, countTokens(text))
	for i := 0; i < len(text); {
		j := nextToken(text, i)
		toks = append(toks, text[i:j])
		i = j
	}
	return toks
}

// countTokens is len(Tokenize(text)) without building the tokens.
func countTokens(text string) int {
	if text == "" {
		return 1
	}
	n := 0
	for i := 0; i < len(text); i = nextToken(text, i) {
		n++
	}
	return n
}

// nextToken returns where the token starting at i ends: after the run of
// non-space and the spaces that follow it, or after the run of spaces
// when it starts with one.
func nextToken(text string, i int) int {
	for i < len(text) && !isSpace(text[i]) {
		i++
	}
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	return i
}

// isSpace reports whether b is a space as \s is in Go's regular
// expressions. No byte of a multi-byte UTF-8 character is one.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// EchoModel is a chat model that answers with the last human message,
// streamed token by token; every chunk of a reply carries the reply's id,
// "run-" and a time-ordered UUID, as LangChain names a model run's
// message.
type EchoModel struct{}

// Generate implements llm.ChatModel.
func (m EchoModel) Generate(ctx context.Context, msgs []llm.Message, _ ...llm.CallOptions) (llm.Message, error) {
	return llm.Collect(m.Stream(ctx, msgs))
}

// Stream implements llm.ChatModel.
func (EchoModel) Stream(ctx context.Context, msgs []llm.Message, _ ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		id := "run-" + ids.TimeOrdered()
		for _, tok := range Tokenize(ReplyFor(msgs)) {
			if err := ctx.Err(); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if !yield(llm.Chunk{ID: id, Content: tok}, nil) {
				return
			}
		}
	}
}

// BindTools implements llm.ChatModel; echo calls no tools.
func (m EchoModel) BindTools([]llm.ToolSpec) llm.ChatModel { return m }

// ---------------------------------------------------------------- approval

// approval's state.
var (
	Request = graph.Value[string]("request")
	Answer  = graph.Value[any]("answer")
	Decided = graph.Value[bool]("decided")
)

// Question is what approval's ask node asks.
type Question struct {
	Question string `json:"question"`
}

// Approval builds approval: START → ask → finish → END. ask stops the run
// with an interrupt asking {"question": "Approve <request>?"} and, resumed
// with a value, writes it to answer; finish sets decided.
func Approval(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
	ask := func(ctx context.Context, s graph.State) (graph.Update, error) {
		req, ok := Request.Lookup(s)
		if !ok {
			req = "the request"
		}
		answer := graph.Ask[any](ctx, Question{Question: "Approve " + req + "?"})
		return Answer.Write(answer), nil
	}
	finish := func(ctx context.Context, s graph.State) (graph.Update, error) {
		return Decided.Write(true), nil
	}
	return graph.New(Request, Answer, Decided).
		AddNode("ask", ask, nil).
		AddNode("finish", finish, nil).
		AddEdge(graph.START, "ask").
		AddEdge("ask", "finish").
		AddEdge("finish", graph.END).
		Compile(&graph.CompileOptions{Checkpointer: saver})
}

// ---------------------------------------------------------------- slow

// Log is slow's log: the tags of the runs that completed, in order. It is
// written as [] before anything is in it, as the reference's default.
type Log []string

// MarshalJSON writes an empty log as [].
func (l Log) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(l))
}

// slow's state. DelayMS must be a number: any other input fails the run.
var (
	DelayMS = graph.Value[float64]("delay_ms")
	Tag     = graph.Value[string]("tag")
	LogKey  = graph.Reduce("log", func(cur, upd Log) Log { return append(append(Log(nil), cur...), upd...) })
)

// Slow builds slow: START → sleep → END. sleep waits delay_ms milliseconds
// (0 when unset), stopping at once when the run is cancelled, then appends
// tag ("done" when unset) to log.
func Slow(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
	sleep := func(ctx context.Context, s graph.State) (graph.Update, error) {
		if d := DelayMS.Get(s); d > 0 {
			t := time.NewTimer(time.Duration(d * float64(time.Millisecond)))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return graph.Update{}, context.Cause(ctx)
			}
		}
		tag, ok := Tag.Lookup(s)
		if !ok {
			tag = "done"
		}
		return LogKey.Write(Log{tag}), nil
	}
	return graph.New(DelayMS, Tag, LogKey).
		AddNode("sleep", sleep, nil).
		AddEdge(graph.START, "sleep").
		AddEdge("sleep", graph.END).
		Compile(&graph.CompileOptions{Checkpointer: saver})
}
