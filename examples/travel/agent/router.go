package agent

import "github.com/weftlabs/weft/agent/router"

// ChatPrompt is the system prompt of plain chat replies (greetings, small
// talk), which the router answers without the agent.
const ChatPrompt = `당신은 MateTrip의 친절한 여행 플래너입니다. 인사나 가벼운 대화에는 한두 문장으로 따뜻하게 답하고, 지역별 인기 장소, 근처 장소, 장소 바꾸기, 동선 짜기를 도와 드릴 수 있다고 안내하세요.`

// ClassifierPrompt asks the router's classifier for a route.
const ClassifierPrompt = `사용자의 메시지를 분류하세요. 인사, 잡담, 도구 없이 바로 답할 수 있는 질문은 "chat"; 장소를 찾거나 추천하거나 바꾸거나 동선을 짜야 답할 수 있는 여행 요청은 "agent".`

// Rules are the router's first pass: they send greetings and thanks to
// plain chat and messages about places and routes to the agent; the
// classifier decides the rest, and FallbackRules stand in for it when it
// fails.
func Rules() []router.Rule {
	return []router.Rule{
		{Route: router.Chat, Whole: true, Keywords: []string{"안녕", "안녕하세요", "반가워요", "고마워", "고마워요", "감사합니다", "hi", "hello", "hey", "thanks", "thank you"}},
		{Route: router.Agent, Keywords: []string{"추천", "동선", "경로", "일정", "근처", "주변", "바꿔", "대신", "카페", "맛집", "관광지", "숙소", "가볼 만한", "recommend", "route", "nearby", "itinerary"}},
	}
}

// FallbackRules decide, when the classifier fails, the messages Rules left
// open. They are broader travel heuristics than Rules: a short
// acknowledgement ("네", "ok") goes to plain chat; a replacement ("대체",
// "바꾸", "교체"), a place or trip question ("어디", "가볼", "갈 만한",
// "코스", "명소", "여행지", "where", "places", "trip") or a lookup verb
// ("찾아", "알려", "검색", "find", "search", "suggest") goes to the agent.
// What neither decides goes to plain chat.
func FallbackRules() []router.Rule {
	return []router.Rule{
		router.AcknowledgementRule(),
		{Route: router.Agent, Keywords: []string{
			"대체", "바꾸", "교체", "어디", "가볼", "갈 만한", "코스", "명소", "여행지", "찾아", "알려", "검색",
			"where", "places", "trip", "find", "search", "suggest", "replace", "instead",
		}},
	}
}
