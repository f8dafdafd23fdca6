// Package agent is the workflow-guide agent of design document 004: a
// graph that routes a request (llm_router), plans complex ones
// (planning_node) and stops for the user to approve the plan before any
// tool runs, recommends a service or tool per sub-task in a ReAct loop over
// a knowledge base, long-term memory and utility tools
// (recommend_tool_node ⇄ tool_executor), writes the guide
// (guide_generation_node), and learns the user's preferences in the
// background (reflection_node):
//
//	START → llm_router ─┬─ simple ─────────────────────────────────────────────┐
//	                    └─ complex → planning_node ⟲ (user_feedback)             │
//	                                   │ (interrupt before)                      ▼
//	                                   └→ recommend_tool_node ⇄ tool_executor → guide_generation_node → reflection_node → END
//
// A model call that fails writes a fallback answer and ends the run in the
// fail node with a *react.TurnError, as agent/router's graph does.
//
// The run stops before recommend_tool_node (a static breakpoint, document
// 004's interrupt_before). The user approves by running the thread on with
// the zero update, or edits with UpdateState as planning_node: EditPlan
// (the plan as the user wrote it), Feedback (planning_node plans again from
// it, and the run stops again to show the new plan) or Reject (no tools;
// the guide answers from what is known).
package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/examples/guide/kb"
	"github.com/weftlabs/weft/examples/guide/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/retrieve"
)

// DefaultUser is the user of a run whose context names none
// (memory.WithUser): memories are then shared by every such run.
const DefaultUser = "default"

// Options configure the agent. The zero value runs offline: the shipped
// knowledge base in memory, memories in memory, no web search.
type Options struct {
	// Checkpointer keeps threads; the approval pause needs one (nil: an
	// in-memory saver).
	Checkpointer *checkpoint.Saver
	// Name names the graph (default "guide").
	Name string
	// Mode is react.NativeTools (default) or react.JSONFormat, for models
	// without tool calling: the ReAct loop, the router, the planner and
	// the memory manager then ask for JSON in the prompt.
	Mode react.Mode
	// Index searches the knowledge base; nil loads the shipped one
	// (package kb) into an in-memory index, closed by Close.
	Index *rag.Index
	// Memory is the store of the users' long-term memories; it needs a
	// vector index (memory's docs). nil keeps them in memory, for as long
	// as the agent lives.
	Memory *store.Store
	// MemoryModel extracts memories in the background (default: the
	// agent's model).
	MemoryModel llm.ChatModel
	// Reflection tunes the background reflection (queue, debounce,
	// attempts, where failed conversations are kept: default Memory); its
	// Extractors are the agent's.
	Reflection memory.ReflectorOptions
	// OnReflect, if set, is told what each reflection did for a user: the
	// memories it inserted, updated or deleted, or why it failed.
	OnReflect func(user string, r memory.Result, err error)
	// Tools, when set, is a registry of more tools (an MCP server's, kept
	// current while the agent runs): the guide's tools are added to it,
	// and each model call of the tool loop is offered the guide's tools
	// plus the K of the others that tool retrieval finds for the request
	// (and a search_tools tool to find more).
	Tools *tool.Registry
	// K is how many of Tools' other tools each call is offered (default 5).
	K int
	// WebSearch, when set, is offered as the web_search tool; nil offers
	// no web search at all.
	WebSearch WebSearcher
	// User names the user a run is for, from its context: whose memories
	// are read and written. Default: memory.UserFrom, else DefaultUser.
	User func(ctx context.Context) string
	// Clock is get_time's clock (default the system's).
	Clock service.Clock
	// MaxSteps and Timeout bound the tool loop (defaults 10 tool-calling
	// replies and 2 minutes from its first step); ToolTimeout bounds one
	// tool call (default 30 s).
	MaxSteps    int
	Timeout     time.Duration
	ToolTimeout time.Duration
	// ModelTimeout bounds each call of the router, the planner and the
	// guide writer (default 2 minutes).
	ModelTimeout time.Duration
	// Logger receives what is reported without failing a run: memory or
	// knowledge-base searches that failed (default slog.Default()).
	Logger *slog.Logger
}

// Agent is the workflow-guide agent.
type Agent struct {
	// Graph is the agent's graph, compiled with a breakpoint before
	// recommend_tool_node. Its input is a human message (Input).
	Graph *graph.Graph
	// Index searches the knowledge base.
	Index *rag.Index
	// Facts are the users' semantic memories: preferences and facts.
	Facts *memory.Manager[memory.Fact]
	// Reflector learns from finished conversations in the background.
	Reflector *memory.Reflector
	// Tools are the tools the tool loop may call.
	Tools *tool.Registry

	model    llm.ChatModel
	opts     Options
	fallback func(context.Context, react.Failure) string
	closers  []func() error
}

// ErrNoQuestion means a run's conversation has no human message to answer.
var ErrNoQuestion = errors.New("guide: no question: start the run with a human message (agent.Input)")

// Input is a turn's input: question as a human message.
func Input(question string) graph.Update { return Messages.Write(llm.Human(question)) }

// New builds the agent over model.
func New(ctx context.Context, model llm.ChatModel, opts Options) (_ *Agent, err error) {
	if model == nil {
		return nil, errors.New("guide: a model is required")
	}
	if opts.K < 0 || opts.MaxSteps < 0 || opts.Timeout < 0 || opts.ToolTimeout < 0 || opts.ModelTimeout < 0 {
		return nil, fmt.Errorf("guide: K, MaxSteps, Timeout, ToolTimeout and ModelTimeout must not be negative")
	}
	opts.Name = cmp.Or(opts.Name, "guide")
	opts.K = cmp.Or(opts.K, 5)
	opts.MaxSteps = cmp.Or(opts.MaxSteps, 10)
	opts.Timeout = cmp.Or(opts.Timeout, 2*time.Minute)
	opts.ToolTimeout = cmp.Or(opts.ToolTimeout, 30*time.Second)
	opts.ModelTimeout = cmp.Or(opts.ModelTimeout, 2*time.Minute)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Checkpointer == nil {
		opts.Checkpointer = checkpoint.NewMemory()
	}
	if opts.User == nil {
		opts.User = func(ctx context.Context) string { return cmp.Or(memory.UserFrom(ctx), DefaultUser) }
	}
	a := &Agent{model: model, opts: opts}
	// What New started is stopped when it fails: a (not the result, nil
	// then) holds it.
	defer func() {
		if err != nil {
			if a.Reflector != nil {
				a.Reflector.Close(context.Background()) // nothing was submitted: it returns at once
			}
			a.closeAll()
		}
	}()
	if a.Index = opts.Index; a.Index == nil {
		if a.Index, err = loadKB(ctx); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, a.Index.Close)
	}
	mem := opts.Memory
	if mem == nil {
		if mem, err = store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}}); err != nil {
			return nil, fmt.Errorf("guide: memory store: %w", err)
		}
		a.closers = append(a.closers, mem.Close)
	}
	method := opts.Mode.StructuredMethod()
	a.Facts, err = memory.NewManager[memory.Fact](cmp.Or[llm.ChatModel](opts.MemoryModel, model), mem, memory.ManagerOptions{
		Instructions: MemoryInstructions,
		Structured:   llm.StructuredOptions{Method: method},
	})
	if err != nil {
		return nil, fmt.Errorf("guide: memory: %w", err)
	}
	ro := opts.Reflection
	ro.Extractors = []memory.Extractor{reporting{m: a.Facts, on: opts.OnReflect}}
	if ro.Failed == nil {
		ro.Failed = mem
	}
	if ro.Logger == nil {
		ro.Logger = opts.Logger
	}
	if a.Reflector, err = memory.NewReflector(ro); err != nil {
		return nil, fmt.Errorf("guide: reflection: %w", err)
	}

	core := coreTools(a.Index, a.Facts, opts.User, opts.Clock, opts.WebSearch)
	var retrieval *react.Retrieval
	if opts.Tools == nil {
		if a.Tools, err = tool.NewRegistry(core...); err != nil {
			return nil, fmt.Errorf("guide: tools: %w", err)
		}
	} else {
		a.Tools = opts.Tools
		names := make([]string, len(core))
		for i, t := range core {
			if err := a.Tools.Add(t); err != nil {
				return nil, fmt.Errorf("guide: adding tool %s to the registry given: %w", t.Spec().Name, err)
			}
			names[i] = t.Spec().Name
		}
		picker, closeIdx, err := newPicker(ctx, a.Tools, names)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, closeIdx)
		retrieval = &react.Retrieval{Tools: picker, K: opts.K, User: opts.User}
	}
	loop, err := react.NewAgent(model, a.Tools, react.Options{
		MaxSteps:    opts.MaxSteps,
		Timeout:     opts.Timeout,
		ToolTimeout: opts.ToolTimeout,
		// A plan of several sub-tasks makes many calls: a second round
		// with a failed call (a zone misspelt, an expression to correct)
		// should not end the loop.
		MaxToolErrors: 3,
		Mode:          opts.Mode,
		Retrieval:     retrieval,
		Name:          opts.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("guide: the tool loop: %w", err)
	}
	a.fallback = loop.Options().Fallback
	if a.Graph, err = a.build(loop); err != nil {
		return nil, err
	}
	return a, nil
}

// loadKB indexes the shipped knowledge base in memory.
func loadKB(ctx context.Context) (*rag.Index, error) {
	docs, err := kb.Documents()
	if err != nil {
		return nil, fmt.Errorf("guide: knowledge base: %w", err)
	}
	ix, err := rag.New(ctx, rag.Config{})
	if err != nil {
		return nil, fmt.Errorf("guide: knowledge base index: %w", err)
	}
	if err := ix.Add(ctx, docs...); err != nil {
		ix.Close()
		return nil, fmt.Errorf("guide: knowledge base index: %w", err)
	}
	return ix, nil
}

// build wires the graph.
func (a *Agent) build(loop *react.Agent) (*graph.Graph, error) {
	b := graph.New(append(loop.Channels(), channels...)...).
		AddNode(RouterNode, a.route, nil).
		AddNode(PlanningNode, a.plan, nil).
		AddNode(GuideNode, a.writeGuide, nil).
		AddNode(ReflectionNode, memory.ReflectionNode(a.Reflector, Messages, a.opts.User), nil).
		AddNode(FailNode, fail, nil).
		AddEdge(graph.START, RouterNode).
		AddConditionalEdges(RouterNode, afterRouter, &graph.BranchOptions{PathMap: map[string]string{
			PlanningNode: PlanningNode, GuideNode: GuideNode, FailNode: FailNode}}).
		AddConditionalEdges(PlanningNode, afterPlanning, &graph.BranchOptions{PathMap: map[string]string{
			PlanningNode: PlanningNode, RecommendNode: RecommendNode, GuideNode: GuideNode, FailNode: FailNode}}).
		AddConditionalEdges(GuideNode, afterGuide, &graph.BranchOptions{PathMap: map[string]string{
			ReflectionNode: ReflectionNode, FailNode: FailNode}}).
		AddEdge(ReflectionNode, graph.END).
		AddEdge(FailNode, graph.END)
	err := loop.AddTo(b, &react.AddOptions{
		AgentNode:  RecommendNode,
		ToolsNode:  ToolsNode,
		Then:       GuideNode,
		OnFallback: FailNode,
		Prompt:     a.recommendPrompt,
		Also:       a.afterReply,
	})
	if err != nil {
		return nil, fmt.Errorf("guide: the tool loop: %w", err)
	}
	g, err := b.Compile(&graph.CompileOptions{
		Checkpointer:    a.opts.Checkpointer,
		Name:            a.opts.Name,
		InterruptBefore: []string{RecommendNode},
	})
	if err != nil {
		return nil, fmt.Errorf("guide: %w", err)
	}
	return g, nil
}

// Close waits for the reflections under way (bounded by ctx) and releases
// what the agent opened. Memories still waiting when ctx ends are kept in
// the reflection's Failed store, for memory.Reflector.Replay.
func (a *Agent) Close(ctx context.Context) error {
	err := a.Reflector.Close(ctx)
	return errors.Join(err, a.closeAll())
}

func (a *Agent) closeAll() error {
	var errs []error
	for _, c := range slices.Backward(a.closers) {
		errs = append(errs, c())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// reporting is the memory manager as the Reflector runs it, telling
// Options.OnReflect what each extraction did.
type reporting struct {
	m  *memory.Manager[memory.Fact]
	on func(user string, r memory.Result, err error)
}

// Extract implements memory.Extractor.
func (x reporting) Extract(ctx context.Context, user string, msgs []llm.Message) (memory.Result, error) {
	r, err := x.m.Extract(ctx, user, msgs)
	if x.on != nil {
		x.on(user, r, err)
	}
	return r, err
}

// picker offers the guide's own tools always, and the others of the
// registry that tool retrieval finds for the request: with MCP servers a
// registry may hold hundreds.
type picker struct {
	reg  *tool.Registry
	core []string
	idx  *retrieve.Index
}

func newPicker(ctx context.Context, reg *tool.Registry, core []string) (*picker, func() error, error) {
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		return nil, nil, fmt.Errorf("guide: tool index: %w", err)
	}
	idx, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("guide: tool index: %w", err)
	}
	return &picker{reg: reg, core: core, idx: idx}, st.Close, nil
}

// RetrieveTools implements react.ToolRetriever. It syncs the index with
// the registry first: tools MCP servers added or removed since are
// followed, and an unchanged registry costs a hash per tool.
func (p *picker) RetrieveTools(ctx context.Context, user, query string, k int) ([]string, error) {
	var others []llm.ToolSpec
	for _, s := range p.reg.View(ctx).Specs() {
		if !slices.Contains(p.core, s.Name) {
			others = append(others, s)
		}
	}
	if _, err := p.idx.Sync(ctx, others); err != nil {
		return nil, fmt.Errorf("guide: syncing the tool index: %w", err)
	}
	names, err := p.idx.RetrieveTools(ctx, user, query, k)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(p.core), names...), nil
}

// ------------------------------------------------------------ the review

// reviewKey marks the human messages that carry the user's review of a
// plan (AdditionalKwargs), so that the turn's question is told from them.
const reviewKey = "guide_review"

func review(kind, text string) llm.Message {
	m := llm.Human(text)
	m.AdditionalKwargs = map[string]json.RawMessage{reviewKey: json.RawMessage(strconv.Quote(kind))}
	return m
}

func isReview(m llm.Message) bool {
	_, ok := m.AdditionalKwargs[reviewKey]
	return ok
}

// EditPlan is the update, made with UpdateState as planning_node, that
// replaces the plan with subTasks as the user wrote them: the run then goes
// on to recommend_tool_node with it. The edit is recorded in the
// conversation, so reflection sees it.
func EditPlan(subTasks []string) graph.Update {
	tasks := cleanTasks(subTasks)
	return SubTasks.Write(tasks).And(Messages.Write(review("edit", "I changed the plan to:\n"+numbered(tasks))))
}

// Feedback is the update, made with UpdateState as planning_node, that
// asks planning_node to plan again from the user's words: the run then
// runs planning_node and stops again before recommend_tool_node.
func Feedback(text string) graph.Update {
	text = strings.TrimSpace(text)
	return UserFeedback.Write(&text).And(Messages.Write(review("feedback", "Feedback on the plan: "+text)))
}

// Reject is the update, made with UpdateState as planning_node, that
// drops the plan: no tool runs, and guide_generation_node answers from
// what is known.
func Reject(reason string) graph.Update {
	text := "I rejected the plan."
	if reason = strings.TrimSpace(reason); reason != "" {
		text = "I rejected the plan: " + reason
	}
	return SubTasks.Write([]string{}).And(Messages.Write(review("reject", text)))
}

// Approve returns the options that run thread on after its plan was
// approved (or edited) to the end of the turn: the zero update as input
// (document 004's invoke(None)), without the breakpoint. The breakpoint is
// static, as in the document: run with the graph's own, the thread would
// stop again each time the tool loop comes back to recommend_tool_node,
// stops that AwaitingApproval tells apart.
func Approve(thread string) *graph.RunOptions {
	return &graph.RunOptions{ThreadID: thread, InterruptBefore: []string{}}
}

// AwaitingApproval reports whether the thread whose latest state is snap
// waits for the user to approve its plan: it stopped before
// recommend_tool_node and the tool loop has not started this turn.
func AwaitingApproval(snap graph.StateSnapshot) bool {
	if !slices.Contains(snap.Next, RecommendNode) {
		return false
	}
	msgs := Messages.Get(snap.Values)
	q := questionIndex(msgs)
	if q < 0 {
		return false
	}
	for _, m := range msgs[q+1:] {
		if m.Type == llm.TypeAI && len(m.ToolCalls)+len(m.InvalidToolCalls) > 0 {
			return false
		}
	}
	return true
}

func cleanTasks(tasks []string) []string {
	out := make([]string, 0, len(tasks))
	for _, t := range tasks {
		if t = strings.Join(strings.Fields(t), " "); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
