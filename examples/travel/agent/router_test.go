package agent_test

import (
	"errors"
	"testing"

	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/examples/travel/agent"
	"github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/llm/scripted"
)

// Greetings go to plain chat and requests about places and routes to the
// agent without asking the model; anything else is left to the classifier.
func TestRules(t *testing.T) {
	rules := agent.Rules()
	for _, tt := range []struct {
		msg     string
		route   router.Route
		decided bool
	}{
		{"안녕하세요!", router.Chat, true},
		{"고마워요", router.Chat, true},
		{"제주 인기 관광지 3곳을 추천해 주세요", router.Agent, true},
		{"한라산 대신 다른 곳으로 바꿔 주세요", router.Agent, true},
		{"성수동 근처 카페 알려줘", router.Agent, true},
		{"부산은 몇 월에 가면 좋아요?", "", false},
	} {
		route, ok := router.MatchRules(rules, tt.msg)
		if ok != tt.decided || (ok && route != tt.route) {
			t.Errorf("%q: route %q decided %v; want %q decided %v", tt.msg, route, ok, tt.route, tt.decided)
		}
	}
}

// FallbackRules decide, when the classifier fails, travel requests Rules
// leave open; small talk still goes to plain chat.
func TestFallbackRules(t *testing.T) {
	rules := agent.FallbackRules()
	for _, tt := range []struct {
		msg     string
		route   router.Route
		decided bool
	}{
		{"네", router.Chat, true},
		{"한라산 말고 대체할 곳 있어요?", router.Agent, true},
		{"부산에서 가볼 곳 좀 알려줘", router.Agent, true},
		{"Where should I go in Busan?", router.Agent, true},
		{"부산은 몇 월에 가면 좋아요?", "", false},
		{"여행 좋아하세요?", "", false},
	} {
		route, ok := router.MatchRules(rules, tt.msg)
		if ok != tt.decided || (ok && route != tt.route) {
			t.Errorf("%q: route %q decided %v; want %q decided %v", tt.msg, route, ok, tt.route, tt.decided)
		}
	}
}

// The router uses FallbackRules, not the career-flavoured defaults, when its
// model cannot classify.
func TestRouterFallback(t *testing.T) {
	svc, err := service.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	model := scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Err: errors.New("down")})
	a, err := agent.New(model, svc, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Router
	for _, tt := range []struct {
		msg    string
		route  router.Route
		source router.Source
	}{
		{"안녕하세요", router.Chat, router.ByRule},
		{"한라산 말고 대체할 곳 있어요?", router.Agent, router.ByFallbackRule},
		{"부산은 몇 월에 가면 좋아요?", router.Chat, router.ByFallback},
		{"포트폴리오 로드맵", router.Chat, router.ByFallback},
	} {
		route, src := r.Decide(t.Context(), tt.msg)
		if route != tt.route || src != tt.source {
			t.Errorf("%q: %q by %q, want %q by %q", tt.msg, route, src, tt.route, tt.source)
		}
	}
	if s := r.Stats(); s.ClassifierErrors != 3 || s.ByFallbackRule != 1 || s.ByFallback != 2 {
		t.Errorf("stats = %+v, want 3 classifier errors, 1 fallback rule, 2 defaults", s)
	}
}
