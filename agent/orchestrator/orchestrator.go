package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// The graph's state: document 003's AgentState as typed channels. Each
// channel's name is its key in the state's JSON.
var (
	// Messages is the conversation: the user's requests and the
	// agent's answers. A run's input is a human message (Input).
	Messages = graph.Messages[llm.Message]("messages")
	// User is the user the memory hooks work for: the start of each task
	// writes the user it resolved (see Options.DefaultUser).
	User = graph.Value[string]("user_id")
	// Task counts the thread's tasks; each request starts one.
	Task = graph.Value[int]("task")
	// RequestText is the current task's request, with any clarification
	// joined to it.
	RequestText = graph.Value[string]("request")
	// CognitiveResult is the cognitive layer's reading of the request.
	CognitiveResult = graph.Value[*Cognition]("cognitive_result")
	// PastClarifications are memory's past clarifications for the
	// request, offered at the clarification point.
	PastClarifications = graph.Value[[]PastClarification]("past_clarifications")
	// PlanState is the plan as accepted (or as edited); OriginalPlan
	// the plan first proposed.
	PlanState    = graph.Value[*Plan]("plan")
	OriginalPlan = graph.Value[*Plan]("original_plan")
	// Todos are the plan's todos, merged by id with the higher version
	// winning (document 003's todo_reducer).
	Todos = graph.Reduce("todos", MergeTodos)
	// Results are the todos' results, merged by todo id (document 003's
	// results_reducer).
	Results = graph.Reduce("execution_results", MergeResults)
	// Trace is the append-only trace.
	Trace = graph.Reduce("trace", AppendTrace)
	// ApprovalHistory is the approval history (document 001).
	ApprovalHistory = graph.Reduce("approval_history", func(cur, upd []ApprovalRecord) []ApprovalRecord {
		if len(upd) == 0 {
			return cur
		}
		return append(slices.Clone(cur), upd...)
	})
	// Prepared are the steps step_preparation prepared for the next
	// wave, for step_approval.
	Prepared = graph.Value[[]Step]("prepared_steps")
	// Wave counts the waves of todos dispatched in the task; PausedWave
	// is the wave a pause was last taken before.
	Wave       = graph.Value[int]("wave")
	PausedWave = graph.Value[int]("paused_wave")
	// Outcome is "" while the task runs, and OutcomeRejected,
	// OutcomeAborted or OutcomeChat when it ends early.
	Outcome = graph.Value[string]("outcome")
	// Reason is a rejection's or an abort's reason.
	Reason = graph.Value[string]("reason")
	// ResponseResult is the response layer's output.
	ResponseResult = graph.Value[*Response]("response_result")
	// StepInput is the input of one execute_todo task: it travels in the
	// task's Send and is not part of the graph's state.
	StepInput = graph.Value[Step]("step")
)

// Node names: document 003's layers, with document 001's approval
// points as nodes of their own (docs/orchestrator.md maps them to
// document 001's names).
const (
	NodeStart          = "start"
	NodeCognitive      = "cognitive"
	NodeClarification  = "clarification"
	NodePlanning       = "planning"
	NodePlanApproval   = "plan_approval"
	NodeDispatcher     = "execution_dispatcher"
	NodePause          = "pause"
	NodePreparation    = "step_preparation"
	NodeStepApproval   = "step_approval"
	NodeExecuteTodo    = "execute_todo"
	NodeCollector      = "execution_collector"
	NodeErrorApproval  = "error_approval"
	NodeResponse       = "response"
	metaNewTask        = "weft_new_task"
	metaTask           = "weft_task"
	defaultGraphName   = "orchestrator"
	memoryHookFailures = "memory hook failed"
)

// Models are the chat models of the layers. Default is used by every
// layer whose own is nil.
type Models struct {
	Default   llm.ChatModel
	Cognitive llm.ChatModel
	Planning  llm.ChatModel
	// Execution proposes step parameters (detailed mode) and drives the
	// ReAct fallback.
	Execution llm.ChatModel
	Response  llm.ChatModel
}

// Options configure an Agent.
type Options struct {
	// Config is the configuration (DefaultConfig when zero).
	Config *Config
	// Models are the layers' models; Models.Default is required.
	Models Models
	// Executors are the domain executors and their tools.
	Executors []Executor
	// Checkpointer saves threads. The approval points need one: without
	// it every point decides by itself, as if switched off.
	Checkpointer *checkpoint.Saver
	// Mode is how the models are asked for structured output and how the
	// ReAct fallback calls tools: react.NativeTools (tool calling) or
	// react.JSONFormat (JSON in the reply's text, for models without
	// tool calling).
	Mode react.Mode
	// Memory are the memory hooks; nil ones are off. They work for the
	// task's user, who is, in this order: the run's user
	// (graph.RunOptions.User: the authenticated user in weft serve), the
	// run's configurable value "user_id" (a string), the user of the
	// task's Input, or DefaultUser. A task without a user uses no memory,
	// and says so in a status event.
	Memory Memory
	// DefaultUser is the user of a task that names none (above); empty
	// leaves such tasks without memory.
	DefaultUser string
	// Retriever finds the top tools for a step; nil uses a
	// LexicalRetriever over the executors' tools.
	Retriever ToolRetriever
	// Pauser requests pauses during execution; nil never does (besides
	// Config.Approvals.Pause).
	Pauser Pauser
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
}

// Agent is the orchestrator: its compiled graph and what its nodes use.
type Agent struct {
	// Graph is the compiled graph. Start a task with Input, answer an
	// approval point with graph.Resume(Decision{...}).
	Graph *graph.Graph

	cfg       Config
	models    Models
	mode      react.Mode
	executors map[string]*executorState
	order     []string // executor names, in the order given
	tools     map[string]*toolState
	memory    Memory
	retriever ToolRetriever
	pauser    Pauser
	dfltUser  string
	now       func() time.Time
	asks      bool // a checkpointer is there for the approval points
}

type executorState struct {
	Executor
	names []string
	// react is the fallback sub-agent over the executor's tools.
	react *graph.Graph
}

type toolState struct {
	tool     *tool.Tool
	executor string
	conf     ToolConfig
	required []string
}

// ErrNoRequest means a run started without a human message to work on.
var ErrNoRequest = errors.New("orchestrator: no request: start the run with orchestrator.Input(\"...\")")

// ErrInvalidOptions means New was given options it cannot build on.
var ErrInvalidOptions = errors.New("orchestrator: invalid options")

// Input is a run's input: a new request from user (who may be empty).
func Input(request, user string) graph.Update {
	u := Messages.Write(llm.Human(request))
	if user != "" {
		u = u.And(User.Write(user))
	}
	return u
}

// New builds the orchestrator.
func New(opts Options) (*Agent, error) {
	cfg := DefaultConfig()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Prompts = cfg.Prompts.withDefaults()
	if cfg.Name == "" {
		cfg.Name = defaultGraphName
	}
	if opts.Models.Default == nil {
		return nil, fmt.Errorf("%w: Models.Default is nil", ErrInvalidOptions)
	}
	a := &Agent{
		cfg:       cfg,
		models:    opts.Models,
		mode:      opts.Mode,
		executors: map[string]*executorState{},
		tools:     map[string]*toolState{},
		memory:    opts.Memory,
		retriever: opts.Retriever,
		pauser:    opts.Pauser,
		dfltUser:  opts.DefaultUser,
		now:       opts.Now,
		asks:      opts.Checkpointer != nil,
	}
	if a.now == nil {
		a.now = time.Now
	}
	for _, m := range []*llm.ChatModel{&a.models.Cognitive, &a.models.Planning, &a.models.Execution, &a.models.Response} {
		if *m == nil {
			*m = a.models.Default
		}
	}
	if err := a.addExecutors(opts.Executors); err != nil {
		return nil, err
	}
	if a.retriever == nil {
		a.retriever = LexicalRetriever{Tools: a.allTools}
	}
	g, err := a.build(opts.Checkpointer)
	if err != nil {
		return nil, err
	}
	a.Graph = g
	return a, nil
}

// addExecutors registers the executors and their tools, moving tools as
// Config.Tools says and checking that it names only tools that exist.
func (a *Agent) addExecutors(list []Executor) error {
	if len(list) == 0 {
		return fmt.Errorf("%w: no executors", ErrInvalidOptions)
	}
	var probs []string
	for _, e := range list {
		switch {
		case e.Name == "":
			probs = append(probs, "an executor has no name")
			continue
		case a.executors[e.Name] != nil:
			probs = append(probs, fmt.Sprintf("executor %q given twice", e.Name))
			continue
		}
		a.executors[e.Name] = &executorState{Executor: Executor{Name: e.Name, Description: e.Description, Run: e.Run}}
		a.order = append(a.order, e.Name)
	}
	for _, e := range list {
		for _, t := range e.Tools {
			if err := t.Err(); err != nil {
				probs = append(probs, err.Error())
				continue
			}
			if a.tools[t.Name()] != nil {
				probs = append(probs, fmt.Sprintf("tool %q belongs to two executors", t.Name()))
				continue
			}
			a.tools[t.Name()] = &toolState{tool: t, executor: e.Name, required: t.Required()}
		}
	}
	for _, name := range sortedKeys(a.cfg.Tools) {
		tc := a.cfg.Tools[name]
		ts, ok := a.tools[name]
		if !ok {
			probs = append(probs, fmt.Sprintf("tools.%s: no executor has a tool of that name (tools: %s)", name, strings.Join(sortedKeys(a.tools), ", ")))
			continue
		}
		if tc.Executor != "" {
			if a.executors[tc.Executor] == nil {
				probs = append(probs, fmt.Sprintf("tools.%s.executor: no executor %q (executors: %s)", name, tc.Executor, strings.Join(a.order, ", ")))
				continue
			}
			ts.executor = tc.Executor
		}
		ts.conf = tc
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(probs, "; "))
	}
	for _, name := range sortedKeys(a.tools) {
		ts := a.tools[name]
		if ts.conf.Disabled {
			continue
		}
		a.executors[ts.executor].Tools = append(a.executors[ts.executor].Tools, ts.tool)
		a.executors[ts.executor].names = append(a.executors[ts.executor].names, name)
	}
	for _, name := range a.order {
		e := a.executors[name]
		if len(e.Tools) == 0 || !a.cfg.Execution.ReactFallback {
			continue
		}
		reg, err := tool.NewRegistry(e.Tools...)
		if err != nil {
			return fmt.Errorf("%w: executor %s: %w", ErrInvalidOptions, name, err)
		}
		g, err := react.New(a.models.Execution, reg, react.Options{
			MaxSteps:     a.cfg.Execution.ReactMaxSteps,
			Timeout:      a.cfg.Execution.TodoTimeout,
			ToolTimeout:  a.cfg.Execution.ToolTimeout,
			Mode:         a.mode,
			SystemPrompt: a.cfg.Prompts.Execution,
			NoStream:     true,
			Name:         a.cfg.Name + "-" + name,
		})
		if err != nil {
			return fmt.Errorf("%w: executor %s: %w", ErrInvalidOptions, name, err)
		}
		e.react = g
	}
	return nil
}

// allTools lists the enabled tools, by name.
func (a *Agent) allTools() []*tool.Tool {
	var out []*tool.Tool
	for _, name := range sortedKeys(a.tools) {
		if ts := a.tools[name]; !ts.conf.Disabled {
			out = append(out, ts.tool)
		}
	}
	return out
}

// RecursionLimit is a recursion limit (graph.RunOptions.RecursionLimit)
// no task of this agent reaches: a task takes a few supersteps before and
// after execution and at most six per wave of todos (dispatcher, pause,
// preparation, approval, the todos, collector, error point), and a plan
// has at most Config.Planning.MaxTodos waves, each todo counted twice for
// a retry. The graph runtime's default, 25, is too few for a plan of more
// than about six waves, so the agent's graph is compiled with this limit as
// its runs' default (graph.CompileOptions.RecursionLimit).
func (a *Agent) RecursionLimit() int { return 10 + 7*2*a.cfg.Planning.MaxTodos }

// Config returns the agent's configuration, with defaults filled in.
func (a *Agent) Config() Config { return a.cfg }

// build compiles the graph.
func (a *Agent) build(saver *checkpoint.Saver) (*graph.Graph, error) {
	b := graph.New(Messages, User, Task, RequestText, CognitiveResult, PastClarifications, PlanState, OriginalPlan,
		Todos, Results, Trace, ApprovalHistory, Prepared, Wave, PausedWave, Outcome, Reason, ResponseResult)
	b.AddNode(NodeStart, a.start, nil)
	b.AddNode(NodeCognitive, a.cognitive, &graph.NodeOptions{Destinations: []string{NodeClarification, NodePlanning, NodeResponse}})
	b.AddNode(NodeClarification, a.clarification, &graph.NodeOptions{Destinations: []string{NodePlanning}})
	b.AddNode(NodePlanning, a.planning, &graph.NodeOptions{Destinations: []string{NodePlanApproval}})
	b.AddNode(NodePlanApproval, a.planApproval, &graph.NodeOptions{Destinations: []string{NodeDispatcher, NodeResponse}})
	b.AddNode(NodeDispatcher, a.dispatcher, &graph.NodeOptions{Destinations: []string{NodeExecuteTodo, NodePreparation, NodePause, NodeResponse}})
	b.AddNode(NodePause, a.pause, &graph.NodeOptions{Destinations: []string{NodeDispatcher}})
	b.AddNode(NodePreparation, a.preparation, &graph.NodeOptions{Destinations: []string{NodeStepApproval}})
	b.AddNode(NodeStepApproval, a.stepApproval, &graph.NodeOptions{Destinations: []string{NodeExecuteTodo, NodeCollector}})
	b.AddNode(NodeExecuteTodo, a.executeTodo, &graph.NodeOptions{Input: []graph.Channel{StepInput}})
	b.AddNode(NodeCollector, a.collector, &graph.NodeOptions{Destinations: []string{NodeDispatcher, NodeErrorApproval, NodeResponse}})
	b.AddNode(NodeErrorApproval, a.errorApproval, &graph.NodeOptions{Destinations: []string{NodeDispatcher, NodeResponse}})
	b.AddNode(NodeResponse, a.response, nil)
	b.AddEdge(graph.START, NodeStart)
	b.AddEdge(NodeStart, NodeCognitive)
	b.AddEdge(NodeExecuteTodo, NodeCollector)
	b.AddEdge(NodeResponse, graph.END)
	return b.Compile(&graph.CompileOptions{Checkpointer: saver, Name: a.cfg.Name, RecursionLimit: a.RecursionLimit()})
}

// execModel is the model of a layer, for Structured calls.
func (a *Agent) structuredMethod() llm.StructuredMethod { return a.mode.StructuredMethod() }

// userOf is the user the task works for (Options.Memory says in which
// order it is found).
func (a *Agent) userOf(ctx context.Context, s graph.State) string {
	ti, _ := graph.CurrentTask(ctx)
	cfgUser, _ := graph.Configurable(ctx, "user_id")
	u, _ := cfgUser.(string)
	return cmp.Or(strings.TrimSpace(ti.User), strings.TrimSpace(u), User.Get(s), a.dfltUser)
}

// hasMemory reports whether a memory hook is set.
func (a *Agent) hasMemory() bool {
	m := a.memory
	return m.Clarifications != nil || m.Acceptance != nil || m.Tools != nil || m.Recorder != nil
}

// threadOf returns the run's thread id, if it has one.
func threadOf(ctx context.Context) string {
	if ti, ok := graph.CurrentTask(ctx); ok {
		return ti.ThreadID
	}
	return ""
}

// trace makes one trace entry.
func (a *Agent) trace(s graph.State, layer, node, todo, event, detail string) TraceEntry {
	return TraceEntry{Task: Task.Get(s), Layer: layer, Node: node, TodoID: todo, Event: event, Detail: detail, Time: a.now().UTC()}
}
