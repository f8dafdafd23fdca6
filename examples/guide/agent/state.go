package agent

import (
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/rag"
)

// The graph's state: document 004's fields, each a typed channel whose name
// is its JSON key. Fields that are "str | None" in the document are
// pointers: nil is None.
var (
	// Messages is the conversation (short-term memory): the user's
	// questions, the tool loop's calls and observations, and the answers,
	// merged by the add-messages rule. It is react.Messages, so the ReAct
	// loop's nodes share it.
	Messages = react.Messages
	// ToolResult is the JSON of the tool calls recommend_tool_node asked
	// for in its last reply, nil when it asked for none (the loop is
	// over).
	ToolResult = graph.Value[*string]("tool_result")
	// IsComplexTask is llm_router's decision: a request that needs a plan
	// of sub-tasks (true) or a question answered at once (false).
	IsComplexTask = graph.Value[bool]("is_complex_task")
	// SubTasks is the plan: planning_node's, or the one the user wrote
	// in its place.
	SubTasks = graph.Value[[]string]("sub_tasks")
	// ToolRecommendations maps each sub-task to the service or tool
	// recommended for it.
	ToolRecommendations = graph.Value[map[string]Recommendation]("tool_recommendations")
	// UserFeedback is the user's feedback on a plan, waiting for
	// planning_node to plan again; nil when there is none.
	UserFeedback = graph.Value[*string]("user_feedback")
	// RetrievedDocs are the passages the knowledge base search and the web
	// search returned this turn, which the guide cites.
	RetrievedDocs = graph.Value[[]rag.Passage]("retrieved_docs")
	// FinalGuide is guide_generation_node's answer; nil until it is
	// written.
	FinalGuide = graph.Value[*string]("final_guide")
)

// Recommendation is the service or tool recommended for one sub-task.
type Recommendation struct {
	// Recommendation names the service or tool.
	Recommendation string `json:"recommendation"`
	// Reason says why it fits the sub-task.
	Reason string `json:"reason,omitempty"`
	// Sources are the citations of the passages it rests on.
	Sources []string `json:"sources,omitempty"`
}

// Node names, as document 004 gives them.
const (
	RouterNode     = "llm_router"
	PlanningNode   = "planning_node"
	RecommendNode  = "recommend_tool_node"
	ToolsNode      = "tool_executor"
	GuideNode      = "guide_generation_node"
	ReflectionNode = "reflection_node"
	// FailNode ends a run in which a model call failed, after the fallback
	// answer was written, with the *react.TurnError (as agent/router's
	// does).
	FailNode = "fail"
)

// channels are the graph's own channels besides the ReAct loop's.
var channels = []graph.Channel{ToolResult, IsComplexTask, SubTasks, ToolRecommendations, UserFeedback, RetrievedDocs, FinalGuide}
