package agent

import (
	"fmt"
	"time"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// SystemPrompt is the agent's system prompt: a Korean travel planner that
// works from the tools' places.
const SystemPrompt = `당신은 MateTrip의 여행 플래너입니다. 사용자의 여행 일정을 함께 짭니다.

도구:
- recommend_popular_places_in_region(region, category, limit): 지역 인기 장소
- recommend_nearby_places(latitude, longitude, radius_km, category, limit): 좌표 주변 장소
- recommend_places_by_all_users(region, category, limit): 다른 사용자들이 많이 담은 장소
- replace_places(replace_target_ids, latitude, longitude, excluded_place_ids, category, radius_km): 일정의 장소를 근처 다른 장소로 교체
- create_travel_route(place_ids, start_place_id): 방문 순서와 이동 거리

원칙:
1. 장소는 도구 결과에 있는 것만 추천하고, 장소 id와 좌표는 도구 결과에서 그대로 가져오세요.
2. "두 번째 장소를 바꿔 줘"처럼 앞서 추천한 장소를 가리키면 직전 추천 목록을 기준으로 하세요.
3. 한국어로 짧게 답하고, 장소 이름, 평점, 거리처럼 결과에 있는 사실을 쓰세요.`

// Document 002's limits, which MateTrip shares.
const (
	MaxSteps    = 4
	Timeout     = 30 * time.Second
	ToolTimeout = 10 * time.Second
)

// Options configure the agent.
type Options struct {
	// Checkpointer keeps conversations, and the state channels, by
	// thread; nil keeps none.
	Checkpointer *checkpoint.Saver
	// Mode is react.NativeTools (default) or react.JSONFormat. With
	// JSONFormat the router's classifier is asked for its decision in the
	// system prompt, not through a tool.
	Mode react.Mode
	// Classifier decides the messages Rules leave open; nil uses the
	// agent's model. When it fails, FallbackRules decide, then plain chat.
	Classifier llm.ChatModel
	// Tools, when set, is the registry the agent uses: the travel tools
	// are added to it, beside what it holds, and tools added to it or
	// removed from it while the agent runs (MCP servers' tools) are
	// offered from the next model call. Only the travel tools have
	// post-processing nodes.
	Tools *tool.Registry
}

// Agent is MateTrip: a router in front of a ReAct agent over the travel
// tools, as one graph.
type Agent struct {
	// Graph is MateTrip's graph (Router.Graph): the route node, plain
	// chat, and the ReAct agent's nodes, whose tools' post-processing
	// nodes keep LastRecommendedPlaces and TravelRoute current. Its input
	// is a human message (router.Input).
	Graph *graph.Graph
	// Router is the router that built Graph: its decisions (Decide) and
	// statistics (Stats).
	Router *router.Router
}

// New builds MateTrip over model and svc: greetings go to plain chat with
// model, travel requests to the ReAct agent (Rules first, then the
// classifier, then FallbackRules, then plain chat). react.NewAgent wires
// the tools' post-processing nodes from their declarations.
func New(model llm.ChatModel, svc *service.Service, opts Options) (*Agent, error) {
	if model == nil || svc == nil {
		return nil, fmt.Errorf("travel agent: a model and a service are required")
	}
	reg, err := registry(opts.Tools, Tools(svc))
	if err != nil {
		return nil, fmt.Errorf("travel agent: %w", err)
	}
	ag, err := react.NewAgent(model, reg, react.Options{
		MaxSteps:     MaxSteps,
		Timeout:      Timeout,
		ToolTimeout:  ToolTimeout,
		Checkpointer: opts.Checkpointer,
		Mode:         opts.Mode,
		SystemPrompt: SystemPrompt,
		Name:         "travel",
		Channels:     []graph.Channel{LastRecommendedPlaces, TravelRoute},
	})
	if err != nil {
		return nil, fmt.Errorf("travel agent: %w", err)
	}
	classifier := opts.Classifier
	if classifier == nil {
		classifier = model
	}
	r, err := router.New(model, ag, router.Options{
		Rules:            Rules(),
		FallbackRules:    FallbackRules(),
		Classifier:       classifier,
		ClassifierMethod: opts.Mode.StructuredMethod(),
		ClassifierPrompt: ClassifierPrompt,
		ChatPrompt:       ChatPrompt,
	})
	if err != nil {
		return nil, fmt.Errorf("travel agent: %w", err)
	}
	return &Agent{Graph: r.Graph(), Router: r}, nil
}
