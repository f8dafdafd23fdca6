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
	"github.com/weftlabs/weft/internal/providertest"
	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
)

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
	for _, p := range []providertest.Provider{providertest.OpenAI(), providertest.Anthropic()} {
		failures := []struct {
			name    string
			handler http.HandlerFunc
			cause   string
		}{
			{"401", wiretest.JSON(401, `{"error":{"message":"Incorrect API key provided","type":"authentication_error"}}`), "HTTP 401"},
			{"garbage 200", wiretest.JSON(200, `{not json at all`), llm.ErrInvalidResponse.Error()},
			{"null 200", wiretest.JSON(200, `null`), llm.ErrInvalidResponse.Error()},
			{"cut short", wiretest.SSE(false, p.CutShort...), llm.ErrInvalidResponse.Error()},
		}
		for _, f := range failures {
			for _, pa := range paths {
				t.Run(fmt.Sprintf("%s/%s/%s", p.Name, f.name, pa.name), func(t *testing.T) {
					model := p.Model(t, wiretest.New(t, f.handler), providertest.Settings{Retry: llm.RetryPolicy{MaxRetries: -1}})
					r := graphRouter(t, model, model, checkpoint.NewMemory(), router.Options{}, pa.agent)
					_, err := collectRun(t.Context(), r.Graph(), router.Input(pa.question), &graph.RunOptions{ThreadID: "t"})
					var te *react.TurnError
					if !errors.As(err, &te) || !errors.Is(err, react.ErrModelFailed) {
						t.Fatalf("err = %v, want a *react.TurnError matching ErrModelFailed", err)
					}
					if !strings.Contains(te.Cause, f.cause) || !strings.Contains(te.Cause, p.Name) {
						t.Errorf("cause %q, want one naming %s and %q", te.Cause, p.Name, f.cause)
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
