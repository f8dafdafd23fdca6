// Package react is the prebuilt ReAct agent: a model node and a tool node
// in a loop (document 002), with a step limit, a total timeout, a timeout
// per tool, a cache of identical tool calls, and a fallback answer from
// what is known whenever the loop cannot finish normally.
//
// The agent is a compiled graph over one channel, Messages. Its nodes are
// "agent" (the model) and "tools" (tool.Node), plus the post-processing
// nodes the tools declare (tool.Options.Then), wired by tool.Wire. Every
// turn ends with an AI message whose ResponseMetadata["react_stop"] tells
// why it ended; OutcomeOf reads it back with the tools used. New compiles
// the agent as a graph of its own; NewAgent and Agent.AddTo put its nodes
// in a graph of the caller's instead (agent/router's, behind a route node).
//
// Two modes: NativeTools uses the model's tool calling; JSONFormat is for
// models without it and asks for document 002's reply format,
//
//	{"thought": "...", "action": "search_jobs", "action_input": {"keyword": "UX"}}
//	{"thought": "...", "action": "FINISH", "action_input": {"answer": "..."}}
//
// which the agent turns into tool calls, so the tool node, the cache and
// the post-processing nodes work alike in both modes.
package react

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// Messages is the agent's state: the conversation, with LangGraph's
// add-messages rule. A run's input is Messages.Write(llm.Human(...)).
var Messages = graph.Messages[llm.Message]("messages")

// startedAt is when the current turn started, for the total timeout.
var startedAt = graph.Value[time.Time]("react_started_at")

// Node names.
const (
	AgentNode = "agent"
	ToolsNode = "tools"
)

// Mode is how the model asks for tools.
type Mode int

// The modes.
const (
	// NativeTools binds the tools to the model and reads its tool calls.
	NativeTools Mode = iota
	// JSONFormat describes the tools in the system prompt and reads a
	// JSON reply {"thought", "action", "action_input"}.
	JSONFormat
)

// StopReason says why a turn ended.
type StopReason string

// The stop reasons.
const (
	// StopAnswer: the model answered.
	StopAnswer StopReason = "answer"
	// StopMaxSteps: the step limit was reached; the model was asked to
	// answer from what it knew.
	StopMaxSteps StopReason = "max_steps"
	// StopTimeout: the total timeout passed.
	StopTimeout StopReason = "timeout"
	// StopToolErrors: tools failed repeatedly.
	StopToolErrors StopReason = "tool_errors"
	// StopParseError: the model's reply could not be parsed, twice.
	StopParseError StopReason = "parse_error"
	// StopModelError: the model call failed.
	StopModelError StopReason = "model_error"
	// StopRetrievalError: the tools for the turn could not be retrieved
	// (Options.Retrieval).
	StopRetrievalError StopReason = "retrieval_error"
)

// Metadata keys of the agent's AI messages.
const (
	// MetaStop (the turn's final message) holds its StopReason.
	MetaStop = "react_stop"
	// MetaFallback (the turn's final message) is true when it is a
	// fallback answer, not the model's.
	MetaFallback = "react_fallback"
	// MetaError (a fallback answer) holds the cause of the failure: the
	// provider's error, a bound crossed, a parse error.
	MetaError = "react_error"
	// MetaProviderID holds the id the provider gave the reply. The
	// message's own ID is the agent's, unique in the thread, whatever the
	// provider sends.
	MetaProviderID = "id"
)

// Errors of a turn that ended without a model answer; test for them with
// errors.Is on a *TurnError (Outcome.Err).
var (
	// ErrNoAnswer: the turn ended in a fallback answer.
	ErrNoAnswer = errors.New("react: the turn ended without a model answer")
	// ErrModelFailed: the model call failed (StopModelError). It also
	// matches ErrNoAnswer.
	ErrModelFailed = errors.New("react: the model failed")
)

// TurnError is why a turn ended in a fallback answer. It matches
// ErrNoAnswer, and ErrModelFailed when the model call failed.
type TurnError struct {
	// Reason is why the loop stopped.
	Reason StopReason
	// Cause is the failure's description, as the thread records it
	// (MetaError); empty when there was no error (tools kept failing,
	// the step limit).
	Cause string
	// Err is the failure itself when it is at hand (a chat reply that
	// failed: an *llm.APIError, say); a turn read back from a thread has
	// only Cause.
	Err error
}

// Unwrap returns Err.
func (e *TurnError) Unwrap() error { return e.Err }

// Error names the reason and the cause.
func (e *TurnError) Error() string {
	if e.Cause == "" {
		return fmt.Sprintf("no answer (%s)", e.Reason)
	}
	return fmt.Sprintf("no answer (%s): %s", e.Reason, e.Cause)
}

// Is matches ErrNoAnswer, and ErrModelFailed for StopModelError.
func (e *TurnError) Is(target error) bool {
	return target == ErrNoAnswer || target == ErrModelFailed && e.Reason == StopModelError
}

// StructuredMethod is how a model of this mode is asked for structured
// output (a router's classifier, say): by a tool call for NativeTools,
// in the system prompt for JSONFormat, whose models reject tools.
func (m Mode) StructuredMethod() llm.StructuredMethod {
	if m == JSONFormat {
		return llm.StructuredPrompt
	}
	return llm.StructuredToolCall
}

// ErrInvalidOptions: the agent's options are out of range.
var ErrInvalidOptions = errors.New("react: invalid options")

// Failure is what a fallback answer is made from.
type Failure struct {
	// Reason is why the loop could not finish normally.
	Reason StopReason
	// Err is the error behind it, if any.
	Err error
	// Question is the text of the turn's human message.
	Question string
	// Observations are the turn's successful tool messages.
	Observations []llm.Message
}

// Options configure the agent. Zero values take the defaults of
// document 002.
type Options struct {
	// MaxSteps caps the model's tool-calling replies per turn (default
	// 4); after that the model is asked to answer without tools.
	MaxSteps int
	// Timeout bounds a whole turn (default 30s).
	Timeout time.Duration
	// ToolTimeout bounds one tool call (default 10s).
	ToolTimeout time.Duration
	// MaxToolErrors is the number of tool rounds with a failed call in a
	// turn after which the agent stops with a fallback answer (default 2:
	// the model sees the first round's failures, all of them, and may
	// correct itself). A round is the tool calls of one model reply.
	MaxToolErrors int
	// Checkpointer saves the conversation by thread.
	Checkpointer *checkpoint.Saver
	// Mode selects native tool calling or the JSON format.
	Mode Mode
	// SystemPrompt is sent first on every model call (not stored).
	SystemPrompt string
	// Fallback writes the answer when the loop cannot finish; nil uses a
	// summary of the observations.
	Fallback func(ctx context.Context, f Failure) string
	// NoStream calls Generate instead of Stream; by default the model's
	// chunks are streamed to the graph's "messages" stream mode.
	NoStream bool
	// NoCache runs identical tool calls of a turn again.
	NoCache bool
	// Name names the compiled graph.
	Name string
	// Channels are more state channels, for the post-processing nodes of
	// the tools to write (document 000's last_recommended_places).
	Channels []graph.Channel
	// Retrieval, when set, binds to each model call only the tools
	// retrieved for the turn's request instead of every registered tool
	// (BigTool, document 001): for catalogues too large to send whole.
	Retrieval *Retrieval
}

// Retrieval configures tool retrieval (Options.Retrieval). Each model
// call of a turn is offered: the K tools retrieved for the turn's request
// (the text of its human message), the tools the model found with the
// search tool during the turn, the tools it already called in the turn,
// and the search tool itself, with which the model looks for more in its
// own words (langgraph-bigtool's retrieve_tools). Tools that are no longer
// registered are left out.
type Retrieval struct {
	// Tools retrieves tools; *retrieve.Index (package tool/retrieve)
	// implements it. Required.
	Tools ToolRetriever
	// K is how many tools are retrieved for the request, and by each
	// search (default 5).
	K int
	// User names the user a run is for, from its context, so that the
	// retriever can use that user's tool memory; nil means no user.
	User func(ctx context.Context) string
	// NoSearchTool leaves the search tool out: the model sees only the
	// tools retrieved for the request and those it called.
	NoSearchTool bool
	// SearchToolName names the search tool (default "search_tools").
	SearchToolName string
}

// ToolRetriever finds the tools that fit a request.
type ToolRetriever interface {
	// RetrieveTools returns the names of the k tools that best fit query
	// for user (empty when unknown), best first.
	RetrieveTools(ctx context.Context, user, query string, k int) ([]string, error)
}

// DefaultSearchToolName is the search tool's name when
// Retrieval.SearchToolName is empty.
const DefaultSearchToolName = "search_tools"

func (o Options) withDefaults() (Options, error) {
	if o.MaxSteps < 0 || o.Timeout < 0 || o.ToolTimeout < 0 || o.MaxToolErrors < 0 {
		return o, fmt.Errorf("%w: MaxSteps, Timeout, ToolTimeout and MaxToolErrors must not be negative (got %d, %v, %v, %d)", ErrInvalidOptions, o.MaxSteps, o.Timeout, o.ToolTimeout, o.MaxToolErrors)
	}
	if o.Mode != NativeTools && o.Mode != JSONFormat {
		return o, fmt.Errorf("%w: unknown Mode %d; expected NativeTools or JSONFormat", ErrInvalidOptions, o.Mode)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = 4
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.ToolTimeout == 0 {
		o.ToolTimeout = tool.DefaultTimeout
	}
	if o.MaxToolErrors == 0 {
		o.MaxToolErrors = 2
	}
	if o.Fallback == nil {
		o.Fallback = DefaultFallback
	}
	if r := o.Retrieval; r != nil {
		if r.Tools == nil || r.K < 0 {
			return o, fmt.Errorf("%w: Retrieval needs a ToolRetriever and a K that is not negative (got %d)", ErrInvalidOptions, r.K)
		}
		c := *r
		if c.K == 0 {
			c.K = 5
		}
		if c.SearchToolName == "" {
			c.SearchToolName = DefaultSearchToolName
		}
		o.Retrieval = &c
	}
	return o, nil
}

// New builds the agent over model and tools (nil: no tools) and compiles
// it as a graph of its own: NewAgent, then Agent.Compile. The tools are
// read at every model call, so tools added to or removed from the registry
// while the agent runs (MCP servers' changes) are offered from the next
// call on; a caller that wants one tool set for a whole turn runs it under
// tools.Pin(ctx).
func New(model llm.ChatModel, tools *tool.Registry, opts Options) (*graph.Graph, error) {
	a, err := NewAgent(model, tools, opts)
	if err != nil {
		return nil, err
	}
	return a.Compile()
}

// Agent is the ReAct loop before it is compiled. Compile makes it a graph
// of its own; AddTo adds its nodes to a graph of the caller's, where they
// run inline and share its Messages channel (agent/router puts a route
// node and a chat node in front of them).
type Agent struct {
	a *agent
}

// NewAgent builds the agent over model and tools (nil: no tools), to
// compile (Compile) or to add to a graph (AddTo).
func NewAgent(model llm.ChatModel, tools *tool.Registry, opts Options) (*Agent, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: nil model", ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if tools == nil {
		tools, _ = tool.NewRegistry()
	}
	a := &agent{model: model, tools: tools, opts: o}
	if r := o.Retrieval; r != nil && !r.NoSearchTool {
		// The tool node must run the search tool; the caller's registry
		// is extended, not changed. The search reads the extension's
		// view, so a turn pinned on either registry finds only tools it
		// can call.
		if a.tools, err = tools.Extend(searchTool(r, a)); err != nil {
			return nil, fmt.Errorf("%w: the search tool: %w", ErrInvalidOptions, err)
		}
	}
	return &Agent{a: a}, nil
}

// Options returns the agent's options, with the defaults applied.
func (a *Agent) Options() Options { return a.a.opts }

// Channels are the channels the agent's nodes read and write: Messages,
// the turn's start (react_started_at) and Options.Channels. A graph that
// adds the agent (AddTo) declares them all.
func (a *Agent) Channels() []graph.Channel {
	return append([]graph.Channel{Messages, startedAt}, a.a.opts.Channels...)
}

// AddOptions configure AddTo.
type AddOptions struct {
	// TurnStart, if set, reads when the current turn began from the
	// host graph's state (a route node's record of the turn), so that the
	// turn's budget (Options.Timeout) covers what ran before the agent.
	// When it is nil or reports false, the agent records the start
	// itself when it first runs in a turn.
	TurnStart func(s graph.State) (time.Time, bool)
	// OnFallback is the node the agent goes to after it ends a turn with
	// a fallback answer (MetaFallback), to report the failure; empty goes
	// where an answer goes (Then).
	OnFallback string
	// Then is the node the agent goes to when the model has answered
	// (the turn's loop is over); empty ends the run there.
	Then string
	// AgentNode and ToolsNode name the agent's two nodes in the host
	// graph (default the constants AgentNode and ToolsNode), for a graph
	// whose design names them (document 004's recommend_tool_node and
	// tool_executor).
	AgentNode, ToolsNode string
	// Prompt, if set, makes the system prompt of each model call from the
	// host graph's state, in place of Options.SystemPrompt: for a prompt
	// that carries what the host keeps in channels of its own (a plan the
	// user approved, say). Its error fails the agent node.
	Prompt func(ctx context.Context, s graph.State) (string, error)
	// Also, if set, returns writes to the host's channels that go with
	// each message the agent node writes (document 004's tool_result,
	// which mirrors the reply's tool calls). It sees the state the node
	// ran on and the message. Its error fails the agent node.
	Also func(ctx context.Context, s graph.State, reply llm.Message) (graph.Update, error)
}

// AddTo adds the agent's nodes to b: AgentNode, ToolsNode and the tools'
// post-processing nodes, with the edges between them. AgentNode goes to
// ToolsNode while the model calls tools, and to END when the turn is over
// (to opts.Then after an answer, to opts.OnFallback after a fallback
// answer). The edges into AgentNode are the caller's; b must declare
// Channels(). opts may be nil.
func (a *Agent) AddTo(b *graph.Builder, opts *AddOptions) error {
	var ao AddOptions
	if opts != nil {
		ao = *opts
	}
	agentNode, toolsNode := cmp.Or(ao.AgentNode, AgentNode), cmp.Or(ao.ToolsNode, ToolsNode)
	if agentNode == toolsNode {
		return fmt.Errorf("%w: the agent node and the tools node are both named %q", ErrInvalidOptions, agentNode)
	}
	o := a.a.opts
	start := func(s graph.State) (time.Time, bool) {
		if ao.TurnStart != nil {
			if t, ok := ao.TurnStart(s); ok {
				return t, true
			}
		}
		return ownStart(s)
	}
	done := cmp.Or(ao.Then, graph.END)
	paths := map[string]string{toolsNode: toolsNode, done: done}
	if ao.OnFallback != "" {
		paths[ao.OnFallback] = ao.OnFallback
	}
	next := func(_ context.Context, s graph.State) (graph.Route, error) {
		msgs := Messages.Get(s)
		n := len(msgs)
		switch {
		case n == 0 || msgs[n-1].Type != llm.TypeAI:
		case len(msgs[n-1].ToolCalls)+len(msgs[n-1].InvalidToolCalls) > 0:
			return graph.To(toolsNode), nil
		case ao.OnFallback != "" && msgs[n-1].ResponseMetadata[MetaFallback] == true:
			return graph.To(ao.OnFallback), nil
		}
		return graph.To(done), nil
	}
	b.AddNode(agentNode, a.a.node(ao), nil).
		AddConditionalEdges(agentNode, next, &graph.BranchOptions{PathMap: paths})
	return tool.Wire(b, a.a.tools, Messages, tool.WireOptions{
		Tools: toolsNode,
		Agent: agentNode,
		Node: tool.NodeOptions{
			Timeout: o.ToolTimeout,
			Cache:   !o.NoCache,
			Deadline: func(s graph.State) (time.Time, bool) {
				t, ok := start(s)
				return t.Add(o.Timeout), ok
			},
		},
	})
}

// Compile returns the agent as a graph of its own, START → AgentNode,
// with Options.Checkpointer and Options.Name.
func (a *Agent) Compile() (*graph.Graph, error) {
	b := graph.New(a.Channels()...).AddEdge(graph.START, AgentNode)
	if err := a.AddTo(b, nil); err != nil {
		return nil, err
	}
	return b.Compile(&graph.CompileOptions{Checkpointer: a.a.opts.Checkpointer, Name: a.a.opts.Name})
}

// DefaultFallback answers with the reason and the observations gathered.
func DefaultFallback(_ context.Context, f Failure) string {
	why := map[StopReason]string{
		StopTimeout:        "it took too long",
		StopToolErrors:     "the tools I needed kept failing",
		StopParseError:     "I could not form a valid plan",
		StopModelError:     "the language model failed",
		StopMaxSteps:       "I ran out of steps",
		StopRetrievalError: "I could not look up the tools I needed",
	}[f.Reason]
	if why == "" {
		why = string(f.Reason)
	}
	text := "I could not fully complete this request because " + why + "."
	if len(f.Observations) == 0 {
		return text + " Please try again, or rephrase the question."
	}
	text += " Here is what I found so far:"
	for _, m := range f.Observations {
		text += "\n- " + m.Name + ": " + m.Text()
	}
	return text
}
