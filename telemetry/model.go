package telemetry

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/llm"
)

// WrapModel returns m recording each call as a "chat" span (a child of the
// node's span inside a run) and in the model metrics: calls, duration,
// input and output tokens. name is the model's name as the CLI takes it,
// "PROVIDER:MODEL" ("openai:gpt-4o-mini"); the provider becomes
// gen_ai.provider.name, the model gen_ai.request.model. A nil Telemetry
// returns m.
func (t *Telemetry) WrapModel(m llm.ChatModel, name string) llm.ChatModel {
	if t == nil || m == nil {
		return m
	}
	provider, model, err := llm.ParseModelName(name)
	if err != nil {
		provider, model = "unknown", name
	}
	return &tracedModel{inner: m, t: t, provider: providerName(provider), model: model}
}

// providerName maps weft's provider names to the GenAI conventions'
// gen_ai.provider.name values where they differ.
func providerName(p string) string {
	switch p {
	case "azure":
		return "azure.ai.openai"
	case "scripted":
		return "weft.scripted"
	}
	return p
}

type tracedModel struct {
	inner           llm.ChatModel
	t               *Telemetry
	provider, model string
}

// Generate implements llm.ChatModel.
func (m *tracedModel) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, error) {
	ctx, c := m.start(ctx, opts)
	msg, err := m.inner.Generate(ctx, msgs, opts...)
	c.usage, c.id, c.meta = msg.Usage, msg.ID, msg.ResponseMetadata
	m.end(c, err)
	return msg, err
}

// Stream implements llm.ChatModel.
func (m *tracedModel) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		ctx, c := m.start(ctx, opts)
		var failed error
		// A consumer that stops early ends the call too.
		defer func() { m.end(c, failed) }()
		for ch, err := range m.inner.Stream(ctx, msgs, opts...) {
			if err != nil {
				failed = err
			} else {
				// What Merge would keep: usages add up, the latest value
				// of each metadata key wins.
				if ch.Usage != nil {
					c.usage = c.usage.Add(ch.Usage)
				}
				if ch.ID != "" {
					c.id = ch.ID
				}
				for k, v := range ch.ResponseMetadata {
					if c.meta == nil {
						c.meta = llm.ResponseMetadata{}
					}
					c.meta[k] = v
				}
			}
			if !yield(ch, err) {
				return
			}
		}
	}
}

// BindTools implements llm.ChatModel: the model with tools is recorded
// too.
func (m *tracedModel) BindTools(tools []llm.ToolSpec) llm.ChatModel {
	return &tracedModel{inner: m.inner.BindTools(tools), t: m.t, provider: m.provider, model: m.model}
}

// call is what a model call's span and metrics need at its end.
type call struct {
	span  trace.Span
	start time.Time
	usage *llm.Usage
	id    string
	meta  llm.ResponseMetadata
}

func (m *tracedModel) start(ctx context.Context, opts []llm.CallOptions) (context.Context, *call) {
	kv := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(m.provider),
		semconv.GenAIRequestModel(m.model),
	}
	o := llm.MergeOptions(opts...)
	if o.Temperature != nil {
		kv = append(kv, semconv.GenAIRequestTemperature(*o.Temperature))
	}
	if o.TopP != nil {
		kv = append(kv, semconv.GenAIRequestTopP(*o.TopP))
	}
	if o.MaxTokens > 0 {
		kv = append(kv, semconv.GenAIRequestMaxTokens(o.MaxTokens))
	}
	c := &call{start: time.Now()}
	ctx, c.span = m.t.tracer.Start(spanContext(ctx), "chat "+m.model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kv...), trace.WithTimestamp(c.start))
	return ctx, c
}

func (m *tracedModel) end(c *call, err error) {
	mt := m.t.m
	d := time.Since(c.start)
	status := "success"
	if err != nil {
		status = "error"
		c.span.SetStatus(codes.Error, err.Error())
		c.span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
	if c.id != "" {
		c.span.SetAttributes(semconv.GenAIResponseID(c.id))
	}
	if v, ok := c.meta["model_name"].(string); ok && v != "" {
		c.span.SetAttributes(semconv.GenAIResponseModel(v))
	}
	for _, k := range []string{"finish_reason", "stop_reason"} {
		if v, ok := c.meta[k].(string); ok && v != "" {
			c.span.SetAttributes(semconv.GenAIResponseFinishReasons(v))
			break
		}
	}
	if u := c.usage; u != nil {
		c.span.SetAttributes(semconv.GenAIUsageInputTokens(int(u.InputTokens)), semconv.GenAIUsageOutputTokens(int(u.OutputTokens)))
		if n := u.InputTokenDetails["cache_read"]; n > 0 {
			c.span.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(int(n)))
		}
		mt.modelTokens.WithLabelValues(m.provider, m.model, "input").Add(float64(max(u.InputTokens, 0)))
		mt.modelTokens.WithLabelValues(m.provider, m.model, "output").Add(float64(max(u.OutputTokens, 0)))
	}
	c.span.End()
	mt.modelCalls.WithLabelValues(m.provider, m.model, status).Inc()
	mt.modelDuration.WithLabelValues(m.provider, m.model).Observe(d.Seconds())
}

// errorType is the error.type of a failure: low in cardinality, as the
// conventions ask.
func errorType(err error) string {
	var api *llm.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &api):
		if api.StatusCode != 0 {
			return strconv.Itoa(api.StatusCode)
		}
		if api.Type != "" {
			return api.Type
		}
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
