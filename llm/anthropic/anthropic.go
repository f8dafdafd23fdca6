// Package anthropic is a weft chat model over Anthropic's Messages API,
// through the official anthropic-sdk-go SDK.
//
// System messages become the request's system prompt; tool calls and tool
// results become tool_use and tool_result blocks. Retries are weft's own
// (llm.RetryPolicy; the SDK's are turned off), as in llm/openai.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/internal/wire"
)

// DefaultMaxTokens is the reply length cap sent when a call sets none; the
// Messages API requires one.
const DefaultMaxTokens = 4096

// Options configure a Model.
type Options struct {
	// Model is the model's name ("claude-sonnet-4-5").
	Model string
	// APIKey is required unless BaseURL points at another server.
	APIKey string
	// BaseURL is the API's root; empty means Anthropic's.
	BaseURL string
	// MaxTokens caps replies when a call sets no MaxTokens; zero means
	// DefaultMaxTokens.
	MaxTokens int
	// Headers are sent with every request (a beta flag, say).
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
	// RequestOptions are passed to the SDK client last (an escape hatch).
	RequestOptions []option.RequestOption
}

const provider = "anthropic"

// maxNonStreamingTokens is the largest max_tokens the SDK accepts without
// streaming (ten minutes at its assumed 128k tokens an hour).
const maxNonStreamingTokens = 21_333

// Model is a chat model served over Anthropic's Messages API.
type Model struct {
	client sdk.Client
	o      Options
	call   wire.Call
	tools  []sdk.ToolUnionParam
}

var _ llm.ChatModel = (*Model)(nil)

// New returns a model. It fails when Model is empty, or when APIKey is
// empty and BaseURL too (then naming ANTHROPIC_API_KEY).
func New(o Options) (*Model, error) {
	if o.Model == "" {
		return nil, fmt.Errorf("%s: no model name given", provider)
	}
	if o.APIKey == "" && o.BaseURL == "" {
		return nil, &llm.ConfigError{Provider: provider, Setting: "API key", EnvVar: "ANTHROPIC_API_KEY"}
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	opts := []option.RequestOption{
		// weft resolves credentials itself; the SDK's chain would also
		// read profiles from disk.
		option.WithoutEnvironmentDefaults(),
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

// Open opens an Anthropic model configured by the environment:
// ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL for another endpoint. It is the
// llm.OpenFunc of the "anthropic" provider.
func Open(_ context.Context, model string, getenv func(string) string) (llm.ChatModel, error) {
	key, base := getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_BASE_URL")
	if key == "" {
		return nil, &llm.ConfigError{Provider: provider, Setting: "API key", EnvVar: "ANTHROPIC_API_KEY"}
	}
	return New(Options{Model: model, APIKey: key, BaseURL: base})
}

// BindTools returns a model that offers tools on every call.
func (m *Model) BindTools(tools []llm.ToolSpec) llm.ChatModel {
	c := *m
	c.tools = make([]sdk.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		tp := sdk.ToolParam{Name: t.Name, InputSchema: inputSchema(t.Parameters)}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		c.tools = append(c.tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return &c
}

// inputSchema splits a JSON Schema into the SDK's shape: properties,
// required, and the rest as extra fields.
func inputSchema(schema json.RawMessage) sdk.ToolInputSchemaParam {
	var s map[string]any
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		s = map[string]any{}
	}
	out := sdk.ToolInputSchemaParam{Properties: s["properties"]}
	if out.Properties == nil {
		out.Properties = map[string]any{}
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				out.Required = append(out.Required, name)
			}
		}
	}
	for k, v := range s {
		switch k {
		case "type", "properties", "required":
		default:
			if out.ExtraFields == nil {
				out.ExtraFields = map[string]any{}
			}
			out.ExtraFields[k] = v
		}
	}
	return out
}

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, error) {
	params, err := m.params(msgs, opts)
	if err != nil {
		return llm.Message{}, err
	}
	if params.MaxTokens > maxNonStreamingTokens {
		// The SDK refuses a non-streaming call that may outlast ten
		// minutes; the same reply streamed and merged is equal.
		msg, err := llm.Collect(m.Stream(ctx, msgs, opts...))
		if err != nil {
			return llm.Message{}, err
		}
		return msg, nil
	}
	return wire.Generate(ctx, &m.call, func(ctx context.Context, check wire.Middleware) (*sdk.Message, error) {
		return m.client.Messages.New(ctx, params, option.WithMiddleware(check))
	}, fromMessage)
}

// Stream implements llm.ChatModel.
func (m *Model) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	params, err := m.params(msgs, opts)
	if err != nil {
		return wire.Failed(err)
	}
	return wire.Stream(ctx, &m.call, func(ctx context.Context, check wire.Middleware) wire.Events[sdk.MessageStreamEventUnion] {
		return m.client.Messages.NewStreaming(ctx, params, option.WithMiddleware(check))
	}, newEventDecoder)
}

// explain maps an SDK error to weft's: API errors (already *llm.APIError
// from the middleware), error events in a stream, timeouts, cancellation.
func explain(provider string, att *wire.Attempt, err error) error {
	var ae *sdk.Error
	if errors.As(err, &ae) {
		var h http.Header
		if ae.Response != nil {
			h = ae.Response.Header
		}
		return wire.APIError(provider, ae.StatusCode, h, ae.RawJSON(), ae.RequestID, err)
	}
	return att.Err(provider, err)
}

func (m *Model) params(msgs []llm.Message, opts []llm.CallOptions) (sdk.MessageNewParams, error) {
	o := llm.MergeOptions(append([]llm.CallOptions{m.o.Defaults}, opts...)...)
	p := sdk.MessageNewParams{Model: sdk.Model(m.o.Model), MaxTokens: int64(m.o.MaxTokens)}
	var err error
	if p.System, p.Messages, err = toParams(msgs); err != nil {
		return p, fmt.Errorf("%s: %w", provider, err)
	}
	if o.MaxTokens > 0 {
		p.MaxTokens = int64(o.MaxTokens)
	}
	if o.Temperature != nil {
		p.Temperature = sdk.Float(*o.Temperature)
	}
	if o.TopP != nil {
		p.TopP = sdk.Float(*o.TopP)
	}
	p.StopSequences = o.Stop
	if len(m.tools) > 0 {
		p.Tools = m.tools
		disable := o.ParallelToolCalls != nil && !*o.ParallelToolCalls
		switch o.ToolChoice {
		case "", llm.ToolChoiceAuto:
			if o.ToolChoice != "" || disable {
				p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{}
				if disable {
					p.ToolChoice.OfAuto.DisableParallelToolUse = sdk.Bool(true)
				}
			}
		case llm.ToolChoiceNone:
			p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
		case llm.ToolChoiceRequired:
			p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{}
			if disable {
				p.ToolChoice.OfAny.DisableParallelToolUse = sdk.Bool(true)
			}
		default:
			p.ToolChoice.OfTool = &sdk.ToolChoiceToolParam{Name: string(o.ToolChoice)}
			if disable {
				p.ToolChoice.OfTool.DisableParallelToolUse = sdk.Bool(true)
			}
		}
	} else if o.ToolChoice != "" && o.ToolChoice != llm.ToolChoiceAuto && o.ToolChoice != llm.ToolChoiceNone {
		return p, fmt.Errorf("%w: %s: tool choice %q but no tools are bound", llm.ErrBadRequest, provider, o.ToolChoice)
	}
	if rf := o.ResponseFormat; rf != nil {
		var schema map[string]any
		if len(rf.Schema) == 0 {
			schema = map[string]any{"type": "object"}
		} else if err := json.Unmarshal(rf.Schema, &schema); err != nil {
			return p, fmt.Errorf("%w: %s: response format schema: %w", llm.ErrBadRequest, provider, err)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	return p, nil
}

// toParams converts messages: system messages become the system prompt
// (wherever they stand), tool results user turns of tool_result blocks,
// and consecutive user-side messages one turn, as the API requires.
func toParams(msgs []llm.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var system []sdk.TextBlockParam
	var out []sdk.MessageParam
	add := func(role sdk.MessageParamRole, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, sdk.MessageParam{Role: role, Content: blocks})
	}
	for i, m := range msgs {
		switch m.Type {
		case llm.TypeSystem:
			if text := m.Text(); text != "" {
				system = append(system, sdk.TextBlockParam{Text: text})
			}
		case llm.TypeHuman:
			blocks, err := userBlocks(m)
			if err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", i, err)
			}
			add(sdk.MessageParamRoleUser, blocks...)
		case llm.TypeAI:
			var blocks []sdk.ContentBlockParamUnion
			if text := m.Text(); text != "" {
				blocks = append(blocks, sdk.NewTextBlock(text))
			}
			for _, tc := range m.ToolCalls {
				args := tc.Args
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, args, tc.Name))
			}
			// Invalid calls were made too, and are answered by tool
			// results that must find them.
			for _, tc := range m.InvalidToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, json.RawMessage("{}"), tc.Name))
			}
			add(sdk.MessageParamRoleAssistant, blocks...)
		case llm.TypeTool:
			block := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if text := m.Text(); text != "" {
				block.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
			}
			if m.IsError() {
				block.IsError = sdk.Bool(true)
			}
			add(sdk.MessageParamRoleUser, sdk.ContentBlockParamUnion{OfToolResult: &block})
		default:
			return nil, nil, fmt.Errorf("%w: message %d has type %q, which is not sent to a model", llm.ErrInvalidMessage, i, m.Type)
		}
	}
	return system, out, nil
}

func userBlocks(m llm.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	if m.Content != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Content))
	}
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Text))
			}
		case llm.PartImage:
			if mediaType, data, ok := p.ImageData(); ok {
				blocks = append(blocks, sdk.NewImageBlockBase64(mediaType, data))
			} else {
				blocks = append(blocks, sdk.NewImageBlock(sdk.URLImageSourceParam{URL: p.ImageURL}))
			}
		default:
			return nil, fmt.Errorf("%w: content part of type %q cannot be sent to this model", llm.ErrUnsupported, p.Type)
		}
	}
	return blocks, nil
}

func fromMessage(r *sdk.Message) (llm.Message, error) {
	if r == nil || !r.JSON.Content.Valid() {
		// A JSON object, but not a message: "content" is required.
		return llm.Message{}, fmt.Errorf("%w: %s: the response has no content", llm.ErrInvalidResponse, provider)
	}
	msg := llm.Message{Type: llm.TypeAI, ID: r.ID}
	var text strings.Builder
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args, err := llm.ParseArgs(string(b.Input))
			if err != nil {
				msg.InvalidToolCalls = append(msg.InvalidToolCalls, llm.InvalidToolCall{ID: b.ID, Name: b.Name, Args: string(b.Input), Error: err.Error()})
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	msg.Content = text.String()
	u := r.Usage
	msg.Usage = usage(u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
	msg.ResponseMetadata = llm.ResponseMetadata{"model_name": string(r.Model)}
	if r.StopReason != "" {
		msg.ResponseMetadata["stop_reason"] = string(r.StopReason)
	}
	return msg, nil
}

// usage follows LangChain: input tokens include those read from and
// written to the prompt cache, which the details break out.
func usage(input, cacheRead, cacheWrite, output int64) *llm.Usage {
	u := &llm.Usage{InputTokens: input + cacheRead + cacheWrite, OutputTokens: output}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if cacheRead > 0 || cacheWrite > 0 {
		u.InputTokenDetails = map[string]int64{"cache_read": cacheRead, "cache_creation": cacheWrite}
	}
	return u
}

// eventDecoder converts the events of one stream: each chunk carries the
// message id that message_start gave, and the reply ends with a stop
// reason (message_delta) or message_stop.
type eventDecoder struct {
	id    string
	ended bool
}

func newEventDecoder() wire.Decoder[sdk.MessageStreamEventUnion] { return &eventDecoder{} }

// Chunk implements wire.Decoder.
func (d *eventDecoder) Chunk(ev sdk.MessageStreamEventUnion) (llm.Chunk, bool) {
	switch ev.Type {
	case "message_start":
		d.id = ev.Message.ID
	case "message_stop":
		d.ended = true
	case "message_delta":
		d.ended = d.ended || ev.Delta.StopReason != ""
	}
	c, ok := fromEvent(ev)
	c.ID = d.id
	return c, ok
}

// Ended implements wire.Decoder.
func (d *eventDecoder) Ended() bool { return d.ended }

// fromEvent converts a stream event. Usage comes in two parts that add up:
// input tokens with message_start, output tokens (a running total, of
// which the last is taken) with message_delta.
func fromEvent(ev sdk.MessageStreamEventUnion) (llm.Chunk, bool) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		c := llm.Chunk{
			Usage:            usage(u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, 0),
			ResponseMetadata: llm.ResponseMetadata{"model_name": string(ev.Message.Model)},
		}
		return c, true
	case "content_block_start":
		b := ev.ContentBlock
		switch b.Type {
		case "text":
			return llm.Chunk{Content: b.Text}, b.Text != ""
		case "tool_use":
			tc := llm.ToolCallChunk{Index: int(ev.Index), ID: b.ID, Name: b.Name}
			if in, ok := b.Input.(map[string]any); ok && len(in) > 0 {
				raw, _ := json.Marshal(in)
				tc.Args = string(raw)
			}
			return llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{tc}}, true
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			return llm.Chunk{Content: ev.Delta.Text}, true
		case "input_json_delta":
			return llm.Chunk{ToolCallChunks: []llm.ToolCallChunk{{Index: int(ev.Index), Args: ev.Delta.PartialJSON}}}, true
		}
	case "message_delta":
		c := llm.Chunk{Usage: &llm.Usage{OutputTokens: ev.Usage.OutputTokens, TotalTokens: ev.Usage.OutputTokens}}
		if ev.Delta.StopReason != "" {
			c.ResponseMetadata = llm.ResponseMetadata{"stop_reason": string(ev.Delta.StopReason)}
		}
		return c, true
	}
	return llm.Chunk{}, false
}
