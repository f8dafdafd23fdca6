package llm

import (
	"context"
	"encoding/json"
	"iter"
)

// ChatModel is a chat model: it answers a conversation with an AI message.
//
// Implementations are safe for concurrent use. Options are structs: a call
// usually passes none or one; when several are given, the fields set in a
// later one override the earlier ones (see MergeOptions).
type ChatModel interface {
	// Generate returns the model's reply to msgs.
	Generate(ctx context.Context, msgs []Message, opts ...CallOptions) (Message, error)
	// Stream returns the reply as it is produced. Merging the chunks (see
	// Collect) gives the message Generate would return. An error ends the
	// stream: it is yielded once, with a zero Chunk. Stopping the loop
	// early releases the connection.
	Stream(ctx context.Context, msgs []Message, opts ...CallOptions) iter.Seq2[Chunk, error]
	// BindTools returns a model that offers these tools to the model on
	// every call, replacing tools bound before. The receiver is unchanged.
	BindTools(tools []ToolSpec) ChatModel
}

// ToolSpec describes a tool to a model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments, an object
	// schema. Empty means no arguments.
	Parameters json.RawMessage
}

// ToolChoice tells the model whether and which tool to call: one of the
// constants, or the name of a bound tool to force a call to it. Empty
// leaves it to the provider's default (auto when tools are bound).
type ToolChoice string

// The tool choices besides a tool's name.
const (
	ToolChoiceAuto     ToolChoice = "auto"
	ToolChoiceNone     ToolChoice = "none"
	ToolChoiceRequired ToolChoice = "required"
)

// ResponseFormat asks for a JSON reply (in the message's text) that
// matches a JSON Schema, where the provider supports it natively.
type ResponseFormat struct {
	// Name names the format (letters, digits, '_' and '-').
	Name string
	// Schema is the JSON Schema; empty asks for any JSON object.
	Schema json.RawMessage
	// Strict asks the provider to enforce the schema exactly (OpenAI's
	// strict mode, which accepts only a subset of JSON Schema).
	Strict bool
}

// CallOptions tune one call. The zero value of each field leaves the
// provider's default.
type CallOptions struct {
	Temperature *float64
	TopP        *float64
	// MaxTokens caps the reply's length in tokens.
	MaxTokens int
	// Stop sequences end the reply where they appear.
	Stop []string
	// ToolChoice applies when tools are bound.
	ToolChoice ToolChoice
	// ParallelToolCalls, when set, allows or forbids several tool calls in
	// one reply.
	ParallelToolCalls *bool
	// ResponseFormat asks for JSON matching a schema.
	ResponseFormat *ResponseFormat
}

// MergeOptions folds opts in order: each set field of a later options
// value overrides the earlier one.
func MergeOptions(opts ...CallOptions) CallOptions {
	var o CallOptions
	for _, p := range opts {
		if p.Temperature != nil {
			o.Temperature = p.Temperature
		}
		if p.TopP != nil {
			o.TopP = p.TopP
		}
		if p.MaxTokens != 0 {
			o.MaxTokens = p.MaxTokens
		}
		if p.Stop != nil {
			o.Stop = p.Stop
		}
		if p.ToolChoice != "" {
			o.ToolChoice = p.ToolChoice
		}
		if p.ParallelToolCalls != nil {
			o.ParallelToolCalls = p.ParallelToolCalls
		}
		if p.ResponseFormat != nil {
			o.ResponseFormat = p.ResponseFormat
		}
	}
	return o
}

// WithOptions returns a model that applies defaults to every call, under
// the options the call itself passes (LangChain's bind).
func WithOptions(m ChatModel, defaults CallOptions) ChatModel {
	return boundModel{m, defaults}
}

type boundModel struct {
	m        ChatModel
	defaults CallOptions
}

// Generate implements ChatModel.
func (b boundModel) Generate(ctx context.Context, msgs []Message, opts ...CallOptions) (Message, error) {
	return b.m.Generate(ctx, msgs, append([]CallOptions{b.defaults}, opts...)...)
}

// Stream implements ChatModel.
func (b boundModel) Stream(ctx context.Context, msgs []Message, opts ...CallOptions) iter.Seq2[Chunk, error] {
	return b.m.Stream(ctx, msgs, append([]CallOptions{b.defaults}, opts...)...)
}

// BindTools implements ChatModel, keeping the defaults.
func (b boundModel) BindTools(tools []ToolSpec) ChatModel {
	return boundModel{b.m.BindTools(tools), b.defaults}
}

// Ptr returns a pointer to v, for the optional fields of CallOptions.
func Ptr[T any](v T) *T { return &v }
