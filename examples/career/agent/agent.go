package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/career/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// SystemPrompt is the ReAct agent's system prompt: a Korean career
// counsellor that grounds its answers in the tools' data.
const SystemPrompt = `당신은 DreamPath의 커리어 상담사입니다. 사용자가 원하는 직무로 나아가도록 구체적이고 실행 가능한 조언을 합니다.

도구:
- search_mentoring_sessions(career_interest): 예약 가능한 멘토링 세션 검색
- get_learning_path(career): 직무별 단계적 학습 경로
- search_job_postings(keyword): 채용 공고 검색
- book_mentoring(session_id, user_id): 멘토링 예약 (사용자가 예약을 분명히 요청하고 user_id를 알 때만)

원칙:
1. 필요한 도구만 부르세요. 서로 독립적인 조회는 한 번에 함께 호출해도 됩니다.
2. 답변은 도구 결과에 있는 실제 데이터(세션 제목, 멘토, 학습 단계, 자료, 공고)만 근거로 하고, 없는 정보를 지어내지 마세요.
3. 결과가 비어 있으면 다른 도구나 다른 표현으로 한 번 더 시도하고, 그래도 없으면 솔직히 말하세요.
4. 한국어로, 단계별로 짧고 분명하게 답하고 마지막에 다음 행동 하나를 제안하세요.`

// ChatPrompt is the system prompt of plain chat replies (greetings, small
// talk), which the router answers without the agent.
const ChatPrompt = `당신은 DreamPath의 친절한 커리어 상담사입니다. 인사나 가벼운 대화에는 한두 문장으로 따뜻하게 답하고, 멘토링 세션, 학습 경로, 채용 공고를 찾아 드릴 수 있다고 안내하세요.`

// ClassifierPrompt asks the router's classifier for a route.
const ClassifierPrompt = `사용자의 메시지를 분류하세요. 인사, 잡담, 도구 없이 바로 답할 수 있는 질문은 "chat"; 멘토링 세션, 학습 경로, 채용 공고를 찾아보거나 예약해야 답할 수 있는 진로 질문은 "agent".`

// Document 002's limits.
const (
	MaxSteps    = 4
	Timeout     = 30 * time.Second
	ToolTimeout = 10 * time.Second
)

// Options configure the agent.
type Options struct {
	// Checkpointer keeps conversations by thread; nil keeps none.
	Checkpointer *checkpoint.Saver
	// Classifier decides the messages the router's first-pass keyword
	// rules (router.DefaultRules) leave open; nil uses the agent's model.
	// When it fails, router.DefaultFallbackRules decide, then plain chat.
	Classifier llm.ChatModel
	// Mode is react.NativeTools (default) or react.JSONFormat, for models
	// without tool calling.
	Mode react.Mode
	// Tools, when set, is the registry the agent uses: the career tools
	// are added to it, beside what it holds, and tools added to it or
	// removed from it while the agent runs (MCP servers' tools) are
	// offered from the next model call.
	Tools *tool.Registry
}

// Agent is DreamPath: a router in front of a ReAct agent over the career
// tools, as one graph.
type Agent struct {
	// Graph is DreamPath's graph (Router.Graph): the route node, plain
	// chat, and the ReAct agent's nodes. Its input is a human message
	// (router.Input); serve it, stream it, read its threads.
	Graph *graph.Graph
	// Router is the router that built Graph: its decisions (Decide) and
	// statistics (Stats).
	Router *router.Router
}

// New builds DreamPath over model and svc.
func New(model llm.ChatModel, svc *service.Service, opts Options) (*Agent, error) {
	if model == nil || svc == nil {
		return nil, fmt.Errorf("career agent: a model and a service are required")
	}
	reg, err := registry(opts.Tools, Tools(svc))
	if err != nil {
		return nil, fmt.Errorf("career agent: %w", err)
	}
	ag, err := react.NewAgent(model, reg, react.Options{
		MaxSteps:     MaxSteps,
		Timeout:      Timeout,
		ToolTimeout:  ToolTimeout,
		Checkpointer: opts.Checkpointer,
		Mode:         opts.Mode,
		SystemPrompt: SystemPrompt,
		Name:         "career",
	})
	if err != nil {
		return nil, fmt.Errorf("career agent: %w", err)
	}
	classifier := opts.Classifier
	if classifier == nil {
		classifier = model
	}
	r, err := router.New(model, ag, router.Options{
		Classifier:       classifier,
		ClassifierMethod: opts.Mode.StructuredMethod(),
		ClassifierPrompt: ClassifierPrompt,
		ChatPrompt:       ChatPrompt,
	})
	if err != nil {
		return nil, fmt.Errorf("career agent: %w", err)
	}
	return &Agent{Graph: r.Graph(), Router: r}, nil
}

// Handle answers msg: {message, used_agent, tools_used}. opts are the
// graph's run options (a thread when the agent has a checkpointer), nil
// for the defaults.
func (a *Agent) Handle(ctx context.Context, msg string, opts *graph.RunOptions) (router.Reply, error) {
	return a.Router.Handle(ctx, msg, opts)
}
