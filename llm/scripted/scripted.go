// Package scripted is a chat model that replays a script of replies, for
// tests and offline demos. It streams each reply word by word and each
// tool call's arguments in fragments, so code that consumes streams is
// exercised without a network.
//
// A script is a list of AI messages, in Go or in YAML:
//
//	# a tool call, then the answer
//	- content: "Let me look that up."
//	  tool_calls:
//	    - name: search_jobs
//	      args: {query: "UX designer"}
//	- content: "Here is what I found: ..."
//
// or, to set options, a mapping:
//
//	loop: true
//	responses:
//	  - content: "Hello!"
//	  - error: "the model is overloaded"
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
)

// ErrExhausted is returned when every response of a script that does not
// loop has been used.
var ErrExhausted = errors.New("scripted: script exhausted")

// ErrScripted is wrapped by the errors a script's error responses return.
var ErrScripted = errors.New("scripted: scripted error")

// ModelName is the "model_name" the scripted model reports.
const ModelName = "scripted"

// Response is one step of a script: a reply, or an error to return.
type Response struct {
	Message llm.Message
	Err     error
}

// Options configure a Model.
type Options struct {
	// Loop starts the script over when it runs out, instead of failing.
	Loop bool
}

// Request is a call the model received, recorded for tests.
type Request struct {
	Messages []llm.Message
	Tools    []llm.ToolSpec
	Options  llm.CallOptions
}

// Model replays a script. It is safe for concurrent use; calls consume
// responses in the order they arrive. Models returned by BindTools share
// the script and its position.
type Model struct {
	s     *script
	tools []llm.ToolSpec
}

type script struct {
	mu        sync.Mutex
	responses []Response
	loop      bool
	next      int
	requests  []Request
}

var _ llm.ChatModel = (*Model)(nil)

// New returns a model that replies with responses in turn, and fails with
// ErrExhausted after the last.
func New(responses ...llm.Message) *Model {
	rs := make([]Response, len(responses))
	for i, m := range responses {
		rs[i] = Response{Message: m}
	}
	return NewScript(Options{}, rs...)
}

// NewScript returns a model that plays responses with opts. Tool calls
// without an ID get one ("call_<response>_<call>", counting from 1), and
// every message the AI type.
func NewScript(opts Options, responses ...Response) *Model {
	rs := make([]Response, len(responses))
	for i, r := range responses {
		if r.Err == nil {
			r.Message = prepare(r.Message, i)
		}
		rs[i] = r
	}
	return &Model{s: &script{responses: rs, loop: opts.Loop}}
}

func prepare(m llm.Message, i int) llm.Message {
	m.Type = llm.TypeAI
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for j := range m.ToolCalls {
		if m.ToolCalls[j].ID == "" {
			m.ToolCalls[j].ID = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		if len(m.ToolCalls[j].Args) == 0 {
			m.ToolCalls[j].Args = json.RawMessage("{}")
		}
	}
	md := llm.ResponseMetadata{"model_name": ModelName, "finish_reason": "stop"}
	if len(m.ToolCalls) > 0 {
		md["finish_reason"] = "tool_calls"
	}
	maps.Copy(md, m.ResponseMetadata)
	m.ResponseMetadata = md
	return m
}

// Open opens the script at path (YAML); it is the llm.OpenFunc of the
// "scripted" provider.
func Open(_ context.Context, path string, _ func(string) string) (llm.ChatModel, error) {
	return Load(path)
}

// BindTools returns a model that records tools with each request; the
// script is shared.
func (m *Model) BindTools(tools []llm.ToolSpec) llm.ChatModel {
	return &Model{s: m.s, tools: slices.Clone(tools)}
}

// Requests returns the calls received so far.
func (m *Model) Requests() []Request {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return slices.Clone(m.s.requests)
}

// Remaining returns how many responses are left before the script runs
// out (or starts over).
func (m *Model) Remaining() int {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return len(m.s.responses) - m.s.next
}

// take records a request and returns the next response.
func (m *Model) take(ctx context.Context, msgs []llm.Message, opts []llm.CallOptions) (llm.Message, error) {
	if err := ctx.Err(); err != nil {
		return llm.Message{}, err
	}
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Messages: slices.Clone(msgs), Tools: m.tools, Options: llm.MergeOptions(opts...)})
	if s.next >= len(s.responses) {
		if !s.loop || len(s.responses) == 0 {
			return llm.Message{}, fmt.Errorf("%w: all %d responses were used, and call %d has none left; add responses to the script or make it loop",
				ErrExhausted, len(s.responses), len(s.requests))
		}
		s.next = 0
	}
	r := s.responses[s.next]
	s.next++
	if r.Err != nil {
		return llm.Message{}, r.Err
	}
	msg := r.Message
	if msg.Usage == nil {
		msg.Usage = usage(msgs, msg)
	}
	return msg, nil
}

// usage counts words as tokens, so that usage is reported, repeatably.
func usage(in []llm.Message, out llm.Message) *llm.Usage {
	var n int64
	for _, m := range in {
		n += int64(len(strings.Fields(m.Text())))
	}
	o := int64(len(strings.Fields(out.Text())) + len(out.ToolCalls))
	return &llm.Usage{InputTokens: n, OutputTokens: o, TotalTokens: n + o}
}

// Generate returns the script's next response.
func (m *Model) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, error) {
	return m.take(ctx, msgs, opts)
}

// Stream streams the script's next response: its text word by word (each
// piece with the space before it), then each tool call in two pieces, then
// a last chunk with usage and metadata.
func (m *Model) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		msg, err := m.take(ctx, msgs, opts)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for c := range Chunks(msg) {
			if err := ctx.Err(); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

var word = regexp.MustCompile(`\s*\S+`)

// Words splits text into pieces that each hold one word and the space
// before it (the last also the space after it); they join back into text.
func Words(text string) []string {
	locs := word.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		if text == "" {
			return nil
		}
		return []string{text}
	}
	out := make([]string, len(locs))
	for i, loc := range locs {
		end := loc[1]
		if i == len(locs)-1 {
			end = len(text)
		}
		out[i] = text[loc[0]:end]
	}
	return out
}

// Chunks splits a message into the chunks Stream sends; llm.Merge of them
// gives the message back.
func Chunks(msg llm.Message) iter.Seq[llm.Chunk] {
	return func(yield func(llm.Chunk) bool) {
		for _, w := range Words(msg.Text()) {
			if !yield(llm.Chunk{ID: msg.ID, Content: w}) {
				return
			}
		}
		type call struct{ id, name, args string }
		calls := make([]call, 0, len(msg.ToolCalls)+len(msg.InvalidToolCalls))
		for _, tc := range msg.ToolCalls {
			calls = append(calls, call{tc.ID, tc.Name, string(tc.Args)})
		}
		for _, tc := range msg.InvalidToolCalls {
			calls = append(calls, call{tc.ID, tc.Name, tc.Args})
		}
		for i, tc := range calls {
			head, tail := halve(tc.args)
			first := llm.Chunk{ID: msg.ID, ToolCallChunks: []llm.ToolCallChunk{{Index: i, ID: tc.id, Name: tc.name, Args: head}}}
			if !yield(first) {
				return
			}
			if tail != "" && !yield(llm.Chunk{ID: msg.ID, ToolCallChunks: []llm.ToolCallChunk{{Index: i, Args: tail}}}) {
				return
			}
		}
		yield(llm.Chunk{ID: msg.ID, Usage: msg.Usage, ResponseMetadata: msg.ResponseMetadata})
	}
}

// halve splits s near its middle, on a rune boundary.
func halve(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}
