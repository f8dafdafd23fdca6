package router_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/anthropic"
	"github.com/weftlabs/weft/llm/openai"
)

// provider is a model provider as these tests drive it: how to open a model
// on a test server, and a stream of its wire format that closes mid-reply.
type provider struct {
	name     string
	open     func(t *testing.T, url string) llm.ChatModel
	cutShort []wiretest.Event
}

var providers = []provider{
	{
		name: "openai",
		open: func(t *testing.T, url string) llm.ChatModel {
			m, err := openai.New(openai.Options{Model: "gpt-4o-mini", APIKey: "k", BaseURL: url + "/v1/", Retry: llm.RetryPolicy{MaxRetries: -1}})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		cutShort: []wiretest.Event{
			{Data: `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`},
		},
	},
	{
		name: "anthropic",
		open: func(t *testing.T, url string) llm.ChatModel {
			m, err := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: url, Retry: llm.RetryPolicy{MaxRetries: -1}})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		cutShort: []wiretest.Event{
			{Name: "message_start", Data: `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
			{Name: "content_block_start", Data: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{Name: "content_block_delta", Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`},
		},
	},
}

// Every way a provider can fail a turn is told the same way on every path
// a turn takes: both providers, the chat route and the agent's, streamed
// and not, native tool calls and the JSON format. The run ends with the
// turn's error matching react.ErrModelFailed, whose cause names the
// provider and what was wrong, and the thread keeps the fallback answer
// with that cause (issue 7 §2, §4).
func TestModelFailuresOnEveryPath(t *testing.T) {
	type path struct {
		name     string
		question string
		agent    react.Options
	}
	paths := []path{
		{"chat", "hi", react.Options{}},
		{"agent", "any job?", react.Options{}},
		{"agent-generate", "any job?", react.Options{NoStream: true}},
		{"agent-json", "any job?", react.Options{Mode: react.JSONFormat}},
		{"agent-json-generate", "any job?", react.Options{Mode: react.JSONFormat, NoStream: true}},
	}
	for _, p := range providers {
		failures := []struct {
			name    string
			handler http.HandlerFunc
			cause   string
		}{
			{"401", wiretest.JSON(401, `{"error":{"message":"Incorrect API key provided","type":"authentication_error"}}`), "HTTP 401"},
			{"garbage 200", wiretest.JSON(200, `{not json at all`), llm.ErrInvalidResponse.Error()},
			{"null 200", wiretest.JSON(200, `null`), llm.ErrInvalidResponse.Error()},
			{"cut short", wiretest.SSE(false, p.cutShort...), llm.ErrInvalidResponse.Error()},
		}
		for _, f := range failures {
			for _, pa := range paths {
				t.Run(fmt.Sprintf("%s/%s/%s", p.name, f.name, pa.name), func(t *testing.T) {
					s := wiretest.New(t, f.handler)
					model := p.open(t, s.URL)
					r := graphRouter(t, model, model, checkpoint.NewMemory(), router.Options{}, pa.agent)
					_, err := collectRun(t.Context(), r.Graph(), router.Input(pa.question), &graph.RunOptions{ThreadID: "t"})
					var te *react.TurnError
					if !errors.As(err, &te) || !errors.Is(err, react.ErrModelFailed) {
						t.Fatalf("err = %v, want a *react.TurnError matching ErrModelFailed", err)
					}
					if !strings.Contains(te.Cause, f.cause) || !strings.Contains(te.Cause, p.name) {
						t.Errorf("cause %q, want one naming %s and %q", te.Cause, p.name, f.cause)
					}
					snap, err := r.Graph().GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
					if err != nil {
						t.Fatal(err)
					}
					msgs := react.Messages.Get(snap.Values)
					last := msgs[len(msgs)-1]
					if last.ResponseMetadata[react.MetaFallback] != true || last.ResponseMetadata[react.MetaError] != te.Cause {
						t.Errorf("the thread's last message is %+v, want the fallback answer with its cause", last)
					}
				})
			}
		}
	}
}
