package agent_test

import (
	"testing"

	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/examples/travel/agent"
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
