package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

func TestMatchRules(t *testing.T) {
	rules := router.DefaultRules()
	tests := []struct {
		msg  string
		want router.Route
		ok   bool
	}{
		{"안녕하세요!", router.Chat, true},
		{"  Hello :) ", router.Chat, true},
		{"안녕하세요, 멘토링 예약하고 싶어요", router.Agent, true},
		{"UX 디자이너 채용 공고 있나요?", router.Agent, true},
		{"Any JOB openings?", router.Agent, true},
		{"UX 디자이너가 되고 싶은데 어떻게 해야 할까요?", "", false},
	}
	for _, tt := range tests {
		got, ok := router.MatchRules(rules, tt.msg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: %q %v, want %q %v", tt.msg, got, ok, tt.want, tt.ok)
		}
	}
}

func decision(route string) llm.Message {
	return llm.AI("", llm.ToolCall{Name: "route", Args: json.RawMessage(`{"route":"` + route + `"}`)})
}

func newRouter(t *testing.T, classifier llm.ChatModel, agentScript ...llm.Message) *router.Router {
	t.Helper()
	reg, err := tool.NewRegistry(tool.New("search_jobs", "Searches jobs.", func(context.Context, struct {
		Keyword string `json:"keyword"`
	}) ([]string, error) {
		return []string{"UX designer at Acme"}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := react.New(scripted.New(agentScript...), reg, react.Options{NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Message: llm.AI("Hi! How can I help?")}), agent, router.Options{Classifier: classifier})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDecide(t *testing.T) {
	const undecided = "UX 디자이너가 되고 싶어요"
	tests := []struct {
		name       string
		classifier llm.ChatModel
		msg        string
		want       router.Route
		source     router.Source
	}{
		{"rule", nil, "hi", router.Chat, router.ByRule},
		{"model", scripted.New(decision("agent")), undecided, router.Agent, router.ByModel},
		{"model says chat", scripted.New(decision("chat")), undecided, router.Chat, router.ByModel},
		{"model fails", scripted.NewScript(scripted.Options{}, scripted.Response{Err: errors.New("down")}), undecided, router.Chat, router.ByFallback},
		{"model answers nonsense twice", scripted.New(decision("maybe"), decision("perhaps")), undecided, router.Chat, router.ByFallback},
		{"no model", nil, undecided, router.Chat, router.ByFallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouter(t, tt.classifier)
			got, src := r.Decide(context.Background(), tt.msg)
			if got != tt.want || src != tt.source {
				t.Errorf("%q by %q, want %q by %q", got, src, tt.want, tt.source)
			}
		})
	}
}

func TestHandleAndStats(t *testing.T) {
	r := newRouter(t, scripted.New(decision("agent")),
		llm.AI("", llm.ToolCall{Name: "search_jobs", Args: json.RawMessage(`{"keyword":"UX"}`)}),
		llm.AI("There is a UX designer opening at Acme."),
	)
	ctx := context.Background()
	chat, err := r.Handle(ctx, "안녕하세요")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(router.Reply{Message: "Hi! How can I help?", ToolsUsed: []string{}}, chat); diff != "" {
		t.Errorf("chat reply (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(chat)
	if string(b) != `{"message":"Hi! How can I help?","used_agent":false,"tools_used":[]}` {
		t.Errorf("JSON %s", b)
	}
	agent, err := r.Handle(ctx, "UX 디자이너가 되고 싶어요")
	if err != nil {
		t.Fatal(err)
	}
	want := router.Reply{Message: "There is a UX designer opening at Acme.", UsedAgent: true, ToolsUsed: []string{"search_jobs"}}
	if diff := cmp.Diff(want, agent); diff != "" {
		t.Errorf("agent reply (-want +got):\n%s", diff)
	}
	for range 2 {
		if _, err := r.Handle(ctx, "thanks!"); err != nil {
			t.Fatal(err)
		}
	}
	want2 := router.Stats{Messages: 4, AgentRuns: 1, AgentRate: 0.25, ByRule: 3, ByModel: 1}
	if diff := cmp.Diff(want2, r.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := router.New(nil, nil, router.Options{}); !errors.Is(err, router.ErrInvalidOptions) {
		t.Errorf("nil models: %v", err)
	}
	agent, _ := react.New(scripted.New(), nil, react.Options{})
	for _, o := range []router.Options{{Default: "maybe"}, {Rules: []router.Rule{{Route: "x"}}}} {
		if _, err := router.New(scripted.New(), agent, o); !errors.Is(err, router.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
