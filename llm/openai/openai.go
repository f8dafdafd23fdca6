// Package openai is a weft chat model over OpenAI's Chat Completions API,
// through the official openai-go SDK. Every server that speaks that API
// works by base URL: OpenAI, Azure OpenAI (its v1 API), Ollama, vLLM and
// LM Studio.
//
// The SDK does the HTTP and SSE work; retries are weft's own
// (llm.RetryPolicy, the SDK's are turned off) so that both providers retry
// alike and tests can observe the waits.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/internal/wire"
)

// Options configure a Model.
type Options struct {
	// Model is the model's name ("gpt-4o-mini", "qwen2.5:7b").
	Model string
	// APIKey is sent as a bearer token. It is required unless BaseURL
	// points at another server.
	APIKey string
	// BaseURL is the API's root ("https://api.openai.com/v1/",
	// "http://localhost:11434/v1"); empty means OpenAI's.
	BaseURL string
	// Provider names the provider in errors; empty means "openai".
	Provider string
	// Headers are sent with every request (Azure's "api-key", say).
	Headers map[string]string
	// HTTPClient sends the requests; nil uses a client whose connections
	// are bounded by Timeouts.Connect.
	HTTPClient *http.Client
	// Timeouts bound connecting, the wait for the first byte and the gaps
	// in a stream; zero fields take llm's defaults (llm.Timeouts).
	Timeouts llm.Timeouts
	// Timeout, when positive, is the first-byte and stream-idle bound
	// both, unless Timeouts sets them (an older shorthand).
	Timeout time.Duration
	// Retry is the retry policy; the zero value is llm's default.
	Retry llm.RetryPolicy
	// MaxResponseBytes bounds the bytes read of one response, a stream's
	// whole body included (zero: 64 MiB; negative: no bound), so that a
	// server that sends without end cannot exhaust memory. Crossing it is
	// an error matching llm.ErrInvalidResponse.
	MaxResponseBytes int64
	// Defaults apply to every call, under the call's own options.
	Defaults llm.CallOptions
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens,
	// for servers that only know the older name.
	LegacyMaxTokens bool
	// NoStreamUsage leaves out stream_options.include_usage, for servers
	// that reject it; streamed replies then carry no usage.
	NoStreamUsage bool
	// RequestOptions are passed to the SDK client last (an escape hatch).
	RequestOptions []option.RequestOption
}

// Model is a chat model served over the Chat Completions API.
type Model struct {
	client sdk.Client
	o      Options
	call   wire.Call
	tools  []sdk.ChatCompletionToolUnionParam
}

var _ llm.ChatModel = (*Model)(nil)

// New returns a model. It fails when Model is empty, or when APIKey is
// empty and BaseURL too (then naming OPENAI_API_KEY).
func New(o Options) (*Model, error) {
	if o.Provider == "" {
		o.Provider = "openai"
	}
	if o.Model == "" {
		return nil, fmt.Errorf("%s: no model name given", o.Provider)
	}
	if o.APIKey == "" && o.BaseURL == "" {
		return nil, &llm.ConfigError{Provider: o.Provider, Setting: "API key", EnvVar: "OPENAI_API_KEY"}
	}
	provider := o.Provider
	opts := []option.RequestOption{
		option.WithMaxRetries(0),
		option.WithMiddleware(wire.CheckMiddleware(provider)),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	call, client := wire.NewCall(provider, o.Timeouts, o.Timeout, o.Retry, o.HTTPClient, o.MaxResponseBytes, explain)
	opts = append(opts, option.WithHTTPClient(client))
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	opts = append(opts, o.RequestOptions...)
	return &Model{client: sdk.NewClient(opts...), o: o, call: call}, nil
}

// BindTools returns a model that offers tools on every call.
func (m *Model) BindTools(tools []llm.ToolSpec) llm.ChatModel {
	c := *m
	c.tools = make([]sdk.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: parametersOf(t.Parameters)}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		c.tools = append(c.tools, sdk.ChatCompletionFunctionTool(def))
	}
	return &c
}

// parametersOf decodes a tool's JSON Schema; an empty or undecodable one
// becomes the schema of no arguments (a bad schema is the caller's bug, and
// the API reports it better than a panic would).
func parametersOf(schema json.RawMessage) shared.FunctionParameters {
	var p shared.FunctionParameters
	if len(schema) == 0 || json.Unmarshal(schema, &p) != nil || p == nil {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	}
	return p
}

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, error) {
	params, err := m.params(msgs, opts, false)
	if err != nil {
		return llm.Message{}, err
	}
	return wire.Generate(ctx, &m.call, func(ctx context.Context, check wire.Middleware) (*sdk.ChatCompletion, error) {
		return m.client.Chat.Completions.New(ctx, params, option.WithMiddleware(check))
	}, m.fromCompletion)
}

// Stream implements llm.ChatModel.
func (m *Model) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	params, err := m.params(msgs, opts, true)
	if err != nil {
		return wire.Failed(err)
	}
	return wire.Stream(ctx, &m.call, func(ctx context.Context, check wire.Middleware) wire.Events[sdk.ChatCompletionChunk] {
		return m.client.Chat.Completions.NewStreaming(ctx, params, option.WithMiddleware(check))
	}, func() wire.Decoder[sdk.ChatCompletionChunk] { return &chunkDecoder{m: m} })
}

// explain maps an SDK error to weft's: API errors (already *llm.APIError
// from the middleware), error events in a stream, timeouts, cancellation.
func explain(provider string, att *wire.Attempt, err error) error {
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return wire.APIError(provider, 0, nil, string(se.Event.Data), "", err)
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		var h http.Header
		if ae.Response != nil {
			h = ae.Response.Header
		}
		return wire.APIError(provider, ae.StatusCode, h, ae.RawJSON(), "", err)
	}
	return att.Err(provider, err)
}

func (m *Model) params(msgs []llm.Message, opts []llm.CallOptions, stream bool) (sdk.ChatCompletionNewParams, error) {
	o := llm.MergeOptions(append([]llm.CallOptions{m.o.Defaults}, opts...)...)
	p := sdk.ChatCompletionNewParams{Model: m.o.Model}
	var err error
	if p.Messages, err = toParams(msgs); err != nil {
		return p, fmt.Errorf("%s: %w", m.o.Provider, err)
	}
	if o.Temperature != nil {
		p.Temperature = sdk.Float(*o.Temperature)
	}
	if o.TopP != nil {
		p.TopP = sdk.Float(*o.TopP)
	}
	if o.MaxTokens > 0 {
		if m.o.LegacyMaxTokens {
			p.MaxTokens = sdk.Int(int64(o.MaxTokens))
		} else {
			p.MaxCompletionTokens = sdk.Int(int64(o.MaxTokens))
		}
	}
	if len(o.Stop) > 0 {
		p.Stop.OfStringArray = o.Stop
	}
	if len(m.tools) > 0 {
		p.Tools = m.tools
		switch o.ToolChoice {
		case "":
		case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
			p.ToolChoice.OfAuto = sdk.String(string(o.ToolChoice))
		default:
			p.ToolChoice = sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: string(o.ToolChoice)})
		}
		if o.ParallelToolCalls != nil {
			p.ParallelToolCalls = sdk.Bool(*o.ParallelToolCalls)
		}
	} else if o.ToolChoice != "" && o.ToolChoice != llm.ToolChoiceAuto && o.ToolChoice != llm.ToolChoiceNone {
		return p, fmt.Errorf("%w: %s: tool choice %q but no tools are bound", llm.ErrBadRequest, m.o.Provider, o.ToolChoice)
	}
	if rf := o.ResponseFormat; rf != nil {
		if len(rf.Schema) == 0 {
			p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		} else {
			var schema map[string]any
			if err := json.Unmarshal(rf.Schema, &schema); err != nil {
				return p, fmt.Errorf("%w: %s: response format schema: %w", llm.ErrBadRequest, m.o.Provider, err)
			}
			js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: rf.Name, Schema: schema}
			if rf.Strict {
				js.Strict = sdk.Bool(true)
			}
			p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
		}
	}
	if stream && !m.o.NoStreamUsage {
		p.StreamOptions.IncludeUsage = sdk.Bool(true)
	}
	return p, nil
}

func toParams(msgs []llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i, m := range msgs {
		switch m.Type {
		case llm.TypeSystem:
			p := sdk.SystemMessage(m.Text())
			if m.Name != "" {
				p.OfSystem.Name = sdk.String(m.Name)
			}
			out = append(out, p)
		case llm.TypeHuman:
			var p sdk.ChatCompletionMessageParamUnion
			if m.Parts == nil {
				p = sdk.UserMessage(m.Content)
			} else {
				parts, err := userParts(m)
				if err != nil {
					return nil, fmt.Errorf("message %d: %w", i, err)
				}
				p = sdk.UserMessage(parts)
			}
			if m.Name != "" {
				p.OfUser.Name = sdk.String(m.Name)
			}
			out = append(out, p)
		case llm.TypeAI:
			var a sdk.ChatCompletionAssistantMessageParam
			if text := m.Text(); text != "" || len(m.ToolCalls)+len(m.InvalidToolCalls) == 0 {
				// Content is required without tool calls, even empty: an
				// empty answer in the history would fail every later call.
				a.Content.OfString = sdk.String(text)
			}
			if m.Name != "" {
				a.Name = sdk.String(m.Name)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, functionCall(tc.ID, tc.Name, string(tc.Args)))
			}
			// Invalid calls were made too, and are answered by tool
			// messages that must find them.
			for _, tc := range m.InvalidToolCalls {
				a.ToolCalls = append(a.ToolCalls, functionCall(tc.ID, tc.Name, tc.Args))
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.TypeTool:
			out = append(out, sdk.ToolMessage(m.Text(), m.ToolCallID))
		default:
			return nil, fmt.Errorf("%w: message %d has type %q, which is not sent to a model", llm.ErrInvalidMessage, i, m.Type)
		}
	}
	return out, nil
}

func functionCall(id, name, args string) sdk.ChatCompletionMessageToolCallUnionParam {
	return sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
		ID:       id,
		Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args},
	}}
}

func userParts(m llm.Message) ([]sdk.ChatCompletionContentPartUnionParam, error) {
	var parts []sdk.ChatCompletionContentPartUnionParam
	if m.Content != "" {
		parts = append(parts, sdk.TextContentPart(m.Content))
	}
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartText:
			parts = append(parts, sdk.TextContentPart(p.Text))
		case llm.PartImage:
			parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: p.ImageURL, Detail: p.Detail}))
		default:
			return nil, fmt.Errorf("%w: content part of type %q cannot be sent to this model", llm.ErrUnsupported, p.Type)
		}
	}
	return parts, nil
}

func (m *Model) fromCompletion(c *sdk.ChatCompletion) (llm.Message, error) {
	if c == nil || len(c.Choices) == 0 {
		return llm.Message{}, fmt.Errorf("%w: %s: the response has no choices", llm.ErrInvalidResponse, m.o.Provider)
	}
	ch := c.Choices[0]
	msg := llm.Message{Type: llm.TypeAI, ID: c.ID, Content: ch.Message.Content}
	for _, tc := range ch.Message.ToolCalls {
		args, err := llm.ParseArgs(tc.Function.Arguments)
		if err != nil {
			msg.InvalidToolCalls = append(msg.InvalidToolCalls, llm.InvalidToolCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments, Error: err.Error()})
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: args})
	}
	if ch.Message.Refusal != "" {
		refusal, _ := json.Marshal(ch.Message.Refusal)
		msg.AdditionalKwargs = map[string]json.RawMessage{"refusal": refusal}
	}
	if c.JSON.Usage.Valid() {
		msg.Usage = usageOf(c.Usage)
	}
	msg.ResponseMetadata = metadata(c.Model, ch.FinishReason)
	return msg, nil
}

// chunkDecoder converts the chunks of one stream; the reply ends with a
// chunk that gives a finish reason.
type chunkDecoder struct {
	m     *Model
	ended bool
}

// Chunk implements wire.Decoder.
func (d *chunkDecoder) Chunk(c sdk.ChatCompletionChunk) (llm.Chunk, bool) {
	out, ok := d.m.fromChunk(c)
	if out.ResponseMetadata.FinishReason() != "" {
		d.ended = true
	}
	return out, ok
}

// Ended implements wire.Decoder.
func (d *chunkDecoder) Ended() bool { return d.ended }

func (m *Model) fromChunk(c sdk.ChatCompletionChunk) (llm.Chunk, bool) {
	if len(c.Choices) == 0 && !c.JSON.Usage.Valid() {
		return llm.Chunk{}, false
	}
	out := llm.Chunk{ID: c.ID}
	if c.JSON.Usage.Valid() && c.Usage.TotalTokens+c.Usage.PromptTokens+c.Usage.CompletionTokens > 0 {
		out.Usage = usageOf(c.Usage)
	}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		out.Content = ch.Delta.Content
		for _, tc := range ch.Delta.ToolCalls {
			out.ToolCallChunks = append(out.ToolCallChunks, llm.ToolCallChunk{
				Index: int(tc.Index), ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments,
			})
		}
		if ch.FinishReason != "" {
			out.ResponseMetadata = metadata(c.Model, ch.FinishReason)
		}
	}
	return out, true
}

func metadata(model, finish string) llm.ResponseMetadata {
	md := llm.ResponseMetadata{"model_name": model}
	if finish != "" {
		md["finish_reason"] = finish
	}
	return md
}

func usageOf(u sdk.CompletionUsage) *llm.Usage {
	out := &llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	in := map[string]int64{}
	if n := u.PromptTokensDetails.CachedTokens; n > 0 {
		in["cache_read"] = n
	}
	if n := u.PromptTokensDetails.AudioTokens; n > 0 {
		in["audio"] = n
	}
	outd := map[string]int64{}
	if n := u.CompletionTokensDetails.ReasoningTokens; n > 0 {
		outd["reasoning"] = n
	}
	if n := u.CompletionTokensDetails.AudioTokens; n > 0 {
		outd["audio"] = n
	}
	if len(in) > 0 {
		out.InputTokenDetails = in
	}
	if len(outd) > 0 {
		out.OutputTokenDetails = outd
	}
	return out
}
