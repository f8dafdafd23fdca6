package agent

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// Route is llm_router's structured output.
type Route struct {
	IsComplexTask bool   `json:"is_complex_task" jsonschema:"true for a task of several steps that needs a plan; false for a question answered at once"`
	Reason        string `json:"reason" jsonschema:"why, in a few words"`
}

// Plan is planning_node's structured output.
type Plan struct {
	SubTasks PlanSteps `json:"sub_tasks" jsonschema:"the sub-tasks, in order, each a short phrase in the user's language"`
}

// PlanSteps are a plan's sub-tasks: 1 to 8 non-blank phrases.
type PlanSteps []string

// planSchemas state in the schema what plan checks: 1 to 8 steps, none
// blank.
var planSchemas = func() map[reflect.Type]*jsonschema.Schema {
	one, most := 1, maxSubTasks
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[PlanSteps](): {Type: "array", MinItems: &one, MaxItems: &most,
			Items: &jsonschema.Schema{Type: "string", Pattern: `\S`}},
	}
}()

// maxSubTasks bounds a plan: each sub-task costs tool calls.
const maxSubTasks = 8

// recentHistory is how many messages of earlier turns the router and the
// guide writer read.
const recentHistory = 10

// questionIndex is the index of the turn's question: the latest human
// message that is not a review of a plan; -1 when there is none.
func questionIndex(msgs []llm.Message) int {
	for i, m := range slices.Backward(msgs) {
		if m.Type == llm.TypeHuman && !isReview(m) {
			return i
		}
	}
	return -1
}

// history is the text of the conversation before the question: human
// messages and answers, without tool calls and results, at most
// recentHistory.
func history(msgs []llm.Message, q int) []llm.Message {
	var out []llm.Message
	for _, m := range slices.Backward(msgs[:q]) {
		if len(out) == recentHistory {
			break
		}
		if m.Type == llm.TypeTool || m.Type == llm.TypeSystem || m.Type == llm.TypeAI && len(m.ToolCalls)+len(m.InvalidToolCalls) > 0 {
			continue
		}
		if m.Type == llm.TypeAI && m.ResponseMetadata[react.MetaFallback] == true {
			continue
		}
		out = append(out, m)
	}
	slices.Reverse(out)
	return out
}

// failure is the fallback answer for a model call that failed: its text
// for the user (the tool loop's fallback writer), its cause recorded.
// timedOut says the node's own bound on the call passed.
func (a *Agent) failure(ctx context.Context, question string, err error, timedOut bool) llm.Message {
	why := react.StopModelError
	switch {
	case timedOut:
		why = react.StopTimeout
	case errors.Is(err, llm.ErrInvalidOutput):
		why = react.StopParseError
	}
	f := react.Failure{Reason: why, Err: err, Question: question}
	return react.OwnID(react.FallbackMessage(a.fallback(ctx, f), why, err))
}

// memories are what is remembered about the run's user that bears on
// query. A memory that cannot be read is logged: the answer goes on
// without it.
func (a *Agent) memories(ctx context.Context, query string) []memory.Memory[memory.Fact] {
	user := a.opts.User(ctx)
	mems, err := a.Facts.Search(ctx, user, query, 5)
	if err != nil {
		a.opts.Logger.Warn("guide: could not read the user's memories; answering without them", "user", user, "error", err)
		return nil
	}
	return mems
}

// fresh are the writes that start a turn: what an earlier turn of the
// thread left in the state is not this turn's.
func fresh() graph.Update {
	return ToolResult.Write(nil).And(
		SubTasks.Write(nil),
		ToolRecommendations.Write(nil),
		UserFeedback.Write(nil),
		RetrievedDocs.Write(nil),
		FinalGuide.Write(nil),
	)
}

// route is llm_router: it decides is_complex_task with the model's
// structured output.
func (a *Agent) route(ctx context.Context, s graph.State) (graph.Update, error) {
	msgs := Messages.Get(s)
	q := questionIndex(msgs)
	if q < 0 {
		return graph.Update{}, ErrNoQuestion
	}
	conv := append([]llm.Message{llm.System(routerPrompt)}, history(msgs, q)...)
	conv = append(conv, msgs[q])
	tctx, cancel := context.WithTimeout(ctx, a.opts.ModelTimeout)
	defer cancel()
	d, err := llm.Structured[Route](tctx, a.model, conv, &llm.StructuredOptions{
		Name:        "classify_request",
		Description: "Say whether the request is a complex task that needs a plan.",
		Method:      a.opts.Mode.StructuredMethod(),
	})
	if err != nil {
		if ctx.Err() != nil {
			return graph.Update{}, ctx.Err()
		}
		return fresh().And(Messages.Write(a.failure(ctx, msgs[q].Text(), err, tctx.Err() != nil))), nil
	}
	return fresh().And(IsComplexTask.Write(d.IsComplexTask)), nil
}

func afterRouter(_ context.Context, s graph.State) (graph.Route, error) {
	switch {
	case lastIsFallback(s):
		return graph.To(FailNode), nil
	case IsComplexTask.Get(s):
		return graph.To(PlanningNode), nil
	}
	return graph.To(GuideNode), nil
}

func lastIsFallback(s graph.State) bool {
	msgs := Messages.Get(s)
	n := len(msgs)
	return n > 0 && msgs[n-1].Type == llm.TypeAI && msgs[n-1].ResponseMetadata[react.MetaFallback] == true
}

// plan is planning_node: it splits the request into sub-tasks, or plans
// again from the user's feedback on the last plan.
func (a *Agent) plan(ctx context.Context, s graph.State) (graph.Update, error) {
	msgs := Messages.Get(s)
	q := questionIndex(msgs)
	if q < 0 {
		return graph.Update{}, ErrNoQuestion
	}
	question := msgs[q].Text()
	prompt := plannerPrompt + memorySection(a.memories(ctx, question))
	if fb := UserFeedback.Get(s); fb != nil {
		prompt += "\n\nYour previous plan was:\n" + numbered(SubTasks.Get(s)) +
			"\nThe user's feedback on it: " + *fb + "\nPlan again, following the feedback."
	}
	tctx, cancel := context.WithTimeout(ctx, a.opts.ModelTimeout)
	defer cancel()
	p, err := llm.Structured[Plan](tctx, a.model, []llm.Message{llm.System(prompt), msgs[q]}, &llm.StructuredOptions{
		Name:        "plan",
		Description: "The plan's sub-tasks.",
		Method:      a.opts.Mode.StructuredMethod(),
		TypeSchemas: planSchemas,
	})
	if err != nil {
		if ctx.Err() != nil {
			return graph.Update{}, ctx.Err()
		}
		return UserFeedback.Write(nil).And(Messages.Write(a.failure(ctx, question, err, tctx.Err() != nil))), nil
	}
	return SubTasks.Write(cleanTasks(p.SubTasks)).And(UserFeedback.Write(nil), ToolRecommendations.Write(nil)), nil
}

// afterPlanning is where planning_node goes, and where an UpdateState as
// planning_node goes: to plan again after feedback, to the tool loop with
// a plan, to the guide without one (a rejected plan).
func afterPlanning(_ context.Context, s graph.State) (graph.Route, error) {
	switch {
	case lastIsFallback(s):
		return graph.To(FailNode), nil
	case UserFeedback.Get(s) != nil:
		return graph.To(PlanningNode), nil
	case len(SubTasks.Get(s)) == 0:
		return graph.To(GuideNode), nil
	}
	return graph.To(RecommendNode), nil
}

// recommendPrompt is recommend_tool_node's system prompt: the request, the
// approved plan with the recommendations so far, and what is remembered
// about the user.
func (a *Agent) recommendPrompt(ctx context.Context, s graph.State) (string, error) {
	msgs := Messages.Get(s)
	question := ""
	if q := questionIndex(msgs); q >= 0 {
		question = msgs[q].Text()
	}
	return recommendPrompt +
		"\n\nThe user's request: " + question +
		"\n\nThe approved plan:\n" + planSection(SubTasks.Get(s), ToolRecommendations.Get(s)) +
		memorySection(a.memories(ctx, question)), nil
}

// afterReply is what recommend_tool_node writes besides its message:
// tool_result, the JSON of the calls it asks for (nil when it asks for
// none); and from the turn's tool results so far, retrieved_docs and
// tool_recommendations.
func (a *Agent) afterReply(_ context.Context, s graph.State, reply llm.Message) (graph.Update, error) {
	var calls *string
	if len(reply.ToolCalls) > 0 {
		b, err := json.Marshal(reply.ToolCalls)
		if err != nil {
			return graph.Update{}, err
		}
		text := string(b)
		calls = &text
	}
	msgs := Messages.Get(s)
	q := max(questionIndex(msgs), 0)
	plan := SubTasks.Get(s)
	var docs []rag.Passage
	seen := map[string]bool{}
	recs := maps.Clone(ToolRecommendations.Get(s))
	if recs == nil {
		recs = map[string]Recommendation{}
	}
	for _, m := range msgs[q:] {
		if m.Type != llm.TypeTool || m.IsError() {
			continue
		}
		switch m.Name {
		case ToolRetrieveDocs:
			if r, err := tool.ResultOf[rag.Retrieved](m); err == nil {
				for _, p := range r.Data.Passages {
					if !seen[p.ID] {
						seen[p.ID] = true
						docs = append(docs, p)
					}
				}
			}
		case ToolWebSearch:
			if r, err := tool.ResultOf[WebResults](m); err == nil {
				for _, w := range r.Data.Results {
					if id := "web:" + w.URL; !seen[id] {
						seen[id] = true
						docs = append(docs, rag.Passage{ID: id, DocID: w.URL, Title: w.Title, Text: w.Snippet, Citation: w.URL, Source: "web", URL: w.URL})
					}
				}
			}
		case ToolSaveRecommendation:
			if r, err := tool.ResultOf[SaveInput](m); err == nil {
				recs[matchTask(plan, r.Data.SubTask)] = Recommendation{Recommendation: r.Data.Recommendation, Reason: r.Data.Reason, Sources: r.Data.Sources}
			}
		}
	}
	return ToolResult.Write(calls).And(RetrievedDocs.Write(docs), ToolRecommendations.Write(recs)), nil
}

// matchTask finds the plan's sub-task the model named: by its text
// (ignoring case and spacing) or its number; else the name as given.
func matchTask(plan []string, name string) string {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	want := norm(name)
	for _, st := range plan {
		if norm(st) == want {
			return st
		}
	}
	if n, err := strconv.Atoi(strings.TrimSuffix(want, ".")); err == nil && n >= 1 && n <= len(plan) {
		return plan[n-1]
	}
	return strings.TrimSpace(name)
}

// sourcesFor is how many passages guide_generation_node looks up itself
// when the turn retrieved none (a simple question, a rejected plan).
const sourcesFor = 4

// writeGuide is guide_generation_node: the final guide, from the approved
// plan, the recommendations and the retrieved passages, streamed as it is
// written. For a simple question (no tool loop) it searches the knowledge
// base itself, so the answer is grounded and cited too.
func (a *Agent) writeGuide(ctx context.Context, s graph.State) (graph.Update, error) {
	msgs := Messages.Get(s)
	q := questionIndex(msgs)
	if q < 0 {
		return graph.Update{}, ErrNoQuestion
	}
	question := msgs[q].Text()
	var out graph.Update
	docs := RetrievedDocs.Get(s)
	if len(docs) == 0 {
		hits, err := a.Index.Search(ctx, question, rag.SearchOptions{K: sourcesFor})
		if err != nil {
			a.opts.Logger.Warn("guide: the knowledge base search failed; answering without sources", "error", err)
		}
		for _, h := range hits {
			docs = append(docs, h.Passage())
		}
		out = RetrievedDocs.Write(docs)
	}
	prompt := guidePrompt
	if plan := SubTasks.Get(s); len(plan) > 0 {
		prompt += "\n\nThe plan the user approved, with the service or tool recommended for each sub-task:\n" + planSection(plan, ToolRecommendations.Get(s))
	}
	for _, m := range msgs[q+1:] {
		if isReview(m) {
			prompt += "\n\nThe user's review of the plan: " + m.Text()
		}
	}
	prompt += sourcesSection(docs) + memorySection(a.memories(ctx, question))
	conv := append([]llm.Message{llm.System(prompt)}, history(msgs, q)...)
	conv = append(conv, msgs[q])

	tctx, cancel := context.WithTimeout(ctx, a.opts.ModelTimeout)
	defer cancel()
	var chunks []llm.Chunk
	var failed error
	for c, err := range a.model.Stream(tctx, conv) {
		if err != nil {
			failed = err
			break
		}
		graph.StreamMessage(ctx, c)
		chunks = append(chunks, c)
	}
	if failed == nil && strings.TrimSpace(llm.Merge(chunks...).Message().Text()) == "" {
		failed = errors.New("guide: the model wrote an empty guide")
	}
	if failed != nil {
		if ctx.Err() != nil {
			return graph.Update{}, ctx.Err()
		}
		return out.And(Messages.Write(a.failure(ctx, question, failed, tctx.Err() != nil))), nil
	}
	reply := react.OwnID(llm.Merge(chunks...).Message())
	md := maps.Clone(reply.ResponseMetadata)
	if md == nil {
		md = llm.ResponseMetadata{}
	}
	md[react.MetaStop] = string(react.StopAnswer)
	reply.ResponseMetadata = md
	text := reply.Text()
	return out.And(Messages.Write(reply), FinalGuide.Write(&text)), nil
}

func afterGuide(_ context.Context, s graph.State) (graph.Route, error) {
	if lastIsFallback(s) {
		return graph.To(FailNode), nil
	}
	return graph.To(ReflectionNode), nil
}

// fail is FailNode: it fails the run with the turn's *react.TurnError,
// after the fallback answer was saved and streamed.
func fail(_ context.Context, s graph.State) (graph.Update, error) {
	if err := react.OutcomeOf(Messages.Get(s)).Err; err != nil {
		return graph.Update{}, err
	}
	return graph.Update{}, nil
}
