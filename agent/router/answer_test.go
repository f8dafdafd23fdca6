package router_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// unauthorized is what a provider answers to a bad key.
var unauthorized = &llm.APIError{Provider: "openai", StatusCode: 401, Type: "invalid_api_key", Message: "Incorrect API key provided"}

// A failed model call is told, not hidden behind the fallback answer, and
// both routes behave alike: the error matches react.ErrModelFailed and
// names the provider's status and message; the Reply carries the fallback
// text for users with the cause; the thread records the fallback marked as
// one, with its cause (issue 7 §2).
func TestAnswerModelFailure(t *testing.T) {
	for _, route := range []router.Route{router.Chat, router.Agent} {
		t.Run(string(route), func(t *testing.T) {
			failing := scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Err: unauthorized})
			agent, err := react.NewAgent(failing, nil, react.Options{Checkpointer: checkpoint.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			r, err := router.New(failing, agent, router.Options{Rules: []router.Rule{{Route: route, Keywords: []string{"hello"}}}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var events int
			reply, err := r.Answer(ctx, "hello", router.AnswerOptions{
				Run:     graph.RunOptions{ThreadID: "t", StreamModes: []graph.StreamMode{graph.StreamMessages}},
				OnEvent: func(graph.Event) { events++ },
			})
			if !errors.Is(err, react.ErrModelFailed) || !errors.Is(err, react.ErrNoAnswer) {
				t.Fatalf("err = %v, want ErrModelFailed", err)
			}
			if !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "Incorrect API key provided") {
				t.Errorf("err = %q, want the provider's status and message", err)
			}
			if !reply.Fallback || reply.Message == "" || !strings.Contains(reply.Error, "HTTP 401") || reply.UsedAgent != (route == router.Agent) {
				t.Errorf("reply = %+v, want a fallback answer with its cause", reply)
			}
			if events == 0 {
				t.Error("no events")
			}
			st, err := r.Graph().GetState(ctx, checkpoint.Config{ThreadID: "t"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs := react.Messages.Get(st.Values)
			if len(msgs) != 2 || msgs[0].Text() != "hello" {
				t.Fatalf("thread holds %+v", msgs)
			}
			last := msgs[1].ResponseMetadata
			if last[react.MetaFallback] != true || last[react.MetaStop] != string(react.StopModelError) || !strings.Contains(last[react.MetaError].(string), "HTTP 401") {
				t.Errorf("recorded reply metadata = %v, want a fallback with its cause", last)
			}
		})
	}
}

// The classifier is offered the routes as an enum (issue 7 §7).
func TestRouteSchemaIsAnEnum(t *testing.T) {
	classifier := scripted.New(decision("chat"))
	r := newRouter(t, classifier)
	if _, src := r.Decide(context.Background(), "UX 디자인 트렌드가 궁금해요"); src != router.ByModel {
		t.Fatalf("decided by %s", src)
	}
	reqs := classifier.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	if p := string(reqs[0].Tools[0].Parameters); !strings.Contains(p, `"enum":["chat","agent"]`) {
		t.Errorf("route schema %s has no enum of the routes", p)
	}
}

// hanging is a model that answers only when its context ends.
type hanging struct{}

func (hanging) Generate(ctx context.Context, _ []llm.Message, _ ...llm.CallOptions) (llm.Message, error) {
	<-ctx.Done()
	return llm.Message{}, ctx.Err()
}

func (h hanging) Stream(ctx context.Context, msgs []llm.Message, _ ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		_, err := h.Generate(ctx, msgs)
		yield(llm.Chunk{}, err)
	}
}

func (h hanging) BindTools([]llm.ToolSpec) llm.ChatModel { return h }

// The turn's budget covers the classifier's call: a classifier that never
// answers does not hold the message, which the fallback rules then decide
// (issue 7 §3).
func TestClassifierWithinTurnBudget(t *testing.T) {
	r := newRouterOpts(t, router.Options{Classifier: hanging{}, TurnTimeout: 10 * time.Millisecond}, llm.AI("An answer."))
	reply, err := r.Answer(context.Background(), "UX 디자인 트렌드가 궁금해요", router.AnswerOptions{})
	if !reply.Fallback || reply.UsedAgent {
		t.Errorf("reply = %+v, want a fallback answer on the chat route", reply)
	}
	// The classifier used the whole budget: the chat reply that follows
	// has none left, and the turn ends in a timeout, told as such.
	var te *react.TurnError
	if !errors.As(err, &te) || te.Reason != react.StopTimeout {
		t.Errorf("err = %v, want a turn timeout", err)
	}
	if s := r.Stats(); s.ClassifierErrors != 1 || s.ByFallback != 1 {
		t.Errorf("stats %+v", s)
	}
}
