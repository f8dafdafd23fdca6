package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

func TestMatchDefaultFallbackRules(t *testing.T) {
	rules := router.DefaultFallbackRules()
	tests := []struct {
		msg  string
		want router.Route
		ok   bool
	}{
		{"네", router.Chat, true},
		{"OK!", router.Chat, true},
		{"UX 디자이너가 되고 싶어요", router.Agent, true},
		{"개발자 되고 싶어", router.Agent, true},
		{"프론트엔드 로드맵 알려줘", router.Agent, true},
		{"포트폴리오는 어떻게 준비하나요?", router.Agent, true},
		{"How do I start in data science?", router.Agent, true},
		{"Can you recommend a course?", router.Agent, true},
		{"네 그럼 데이터 분석가 추천해 주세요", router.Agent, true},
		{"요즘 날씨가 좋네요", "", false},
		{"UX 디자인 트렌드가 궁금해요", "", false},
		// English keywords start a word: "search" is not in "research".
		{"I did some research on it", "", false},
		{"I was searching for a mentor", router.Agent, true},
		{"pathfinder", "", false},
	}
	for _, tt := range tests {
		got, ok := router.MatchRules(rules, tt.msg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: %q %v, want %q %v", tt.msg, got, ok, tt.want, tt.ok)
		}
	}
	// The first pass stays the confident one: it must not be replaced by
	// the broader fallback list.
	if _, ok := router.MatchRules(router.DefaultRules(), "UX 디자이너가 되고 싶어요"); ok {
		t.Errorf("DefaultRules decide a message left to the classifier")
	}
}

func decision(route string) llm.Message {
	return llm.AI("", llm.ToolCall{Name: "route", Args: json.RawMessage(`{"route":"` + route + `"}`)})
}

func newRouter(t *testing.T, classifier llm.ChatModel, agentScript ...llm.Message) *router.Router {
	t.Helper()
	return newRouterOpts(t, router.Options{Classifier: classifier}, agentScript...)
}

func newRouterOpts(t *testing.T, opts router.Options, agentScript ...llm.Message) *router.Router {
	t.Helper()
	reg, err := tool.NewRegistry(tool.New("search_jobs", "Searches jobs.", func(context.Context, struct {
		Keyword string `json:"keyword"`
	}) ([]string, error) {
		return []string{"UX designer at Acme"}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := react.NewAgent(scripted.New(agentScript...), reg, react.Options{NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Message: llm.AI("Hi! How can I help?")}), agent, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func failing() llm.ChatModel {
	return scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Err: errors.New("down")})
}

func TestDecide(t *testing.T) {
	const (
		// careerish is left to the classifier by DefaultRules but matched
		// by DefaultFallbackRules; undecided is matched by neither.
		careerish = "UX 디자이너가 되고 싶어요"
		undecided = "UX 디자인 트렌드가 궁금해요"
	)
	toChat := []router.Rule{{Route: router.Chat, Keywords: []string{"되고 싶"}}}
	tests := []struct {
		name   string
		opts   router.Options
		msg    string
		want   router.Route
		source router.Source
	}{
		{"rule", router.Options{}, "hi", router.Chat, router.ByRule},
		{"rule before fallback rule", router.Options{Classifier: failing()}, "멘토 추천해 주세요", router.Agent, router.ByRule},
		{"model", router.Options{Classifier: scripted.New(decision("agent"))}, undecided, router.Agent, router.ByModel},
		{"model says chat over a fallback rule", router.Options{Classifier: scripted.New(decision("chat"))}, careerish, router.Chat, router.ByModel},
		{"no model, fallback rule", router.Options{}, careerish, router.Agent, router.ByFallbackRule},
		{"model fails, fallback rule", router.Options{Classifier: failing()}, careerish, router.Agent, router.ByFallbackRule},
		{"model answers nonsense twice, fallback rule", router.Options{Classifier: scripted.New(decision("maybe"), decision("perhaps"))}, careerish, router.Agent, router.ByFallbackRule},
		{"fallback chat rule over an agent default", router.Options{Default: router.Agent}, "네", router.Chat, router.ByFallbackRule},
		{"custom fallback rules", router.Options{FallbackRules: toChat, Default: router.Agent}, careerish, router.Chat, router.ByFallbackRule},
		{"no model, no fallback rule", router.Options{}, undecided, router.Chat, router.ByFallback},
		{"model fails, no fallback rule", router.Options{Classifier: failing()}, undecided, router.Chat, router.ByFallback},
		{"agent default", router.Options{Classifier: failing(), Default: router.Agent}, undecided, router.Agent, router.ByFallback},
		{"fallback rules disabled", router.Options{FallbackRules: []router.Rule{}}, careerish, router.Chat, router.ByFallback},
		{"fallback rules disabled, model fails", router.Options{Classifier: failing(), FallbackRules: []router.Rule{}}, careerish, router.Chat, router.ByFallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouterOpts(t, tt.opts)
			got, src := r.Decide(context.Background(), tt.msg)
			if got != tt.want || src != tt.source {
				t.Errorf("%q by %q, want %q by %q", got, src, tt.want, tt.source)
			}
		})
	}
}

// Each source is counted, and a classifier failure is counted whether a
// fallback rule or Default then decides.
func TestDecideStats(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name       string
		classifier llm.ChatModel
		want       router.Stats
	}{
		{"no model", nil, router.Stats{ByRule: 1, ByFallbackRule: 2, ByFallback: 1}},
		{"model fails", failing(), router.Stats{ByRule: 1, ByFallbackRule: 2, ByFallback: 1, ClassifierErrors: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouter(t, tt.classifier)
			for _, msg := range []string{"hi", "UX 디자이너가 되고 싶어요", "로드맵 알려줘", "UX 디자인 트렌드가 궁금해요"} {
				r.Decide(ctx, msg)
			}
			if diff := cmp.Diff(tt.want, r.Stats()); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
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
	chat, err := r.Handle(ctx, "안녕하세요", nil)
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
	agent, err := r.Handle(ctx, "UX 디자이너가 되고 싶어요", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := router.Reply{Message: "There is a UX designer opening at Acme.", UsedAgent: true, ToolsUsed: []string{"search_jobs"}, Stop: react.StopAnswer}
	if diff := cmp.Diff(want, agent); diff != "" {
		t.Errorf("agent reply (-want +got):\n%s", diff)
	}
	for range 2 {
		if _, err := r.Handle(ctx, "thanks!", nil); err != nil {
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
	agent, _ := react.NewAgent(scripted.New(), nil, react.Options{})
	for _, tt := range []struct {
		opts router.Options
		want string
	}{
		{router.Options{Default: "maybe"}, `Default route "maybe"`},
		{router.Options{Rules: []router.Rule{{Route: "x"}}}, `rule 0 has route "x"`},
		{router.Options{FallbackRules: []router.Rule{{Route: router.Agent}, {Route: "tools"}}}, `fallback rule 1 has route "tools"; expected "chat" or "agent"`},
	} {
		_, err := router.New(scripted.New(), agent, tt.opts)
		if !errors.Is(err, router.ErrInvalidOptions) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v; want ErrInvalidOptions saying %s", tt.opts, err, tt.want)
		}
	}
}
