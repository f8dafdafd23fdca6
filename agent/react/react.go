// Package react is the prebuilt ReAct agent: a model node and a tool node
// in a loop (document 002), with a step limit, a total timeout, a timeout
// per tool, a cache of identical tool calls, and a fallback answer from
// what is known whenever the loop cannot finish normally.
//
// The agent is a compiled graph over one channel, Messages. Its nodes are
// "agent" (the model) and "tools" (tool.Node), plus the post-processing
// nodes the tools declare (tool.Options.Then), wired by tool.Wire. Every
// turn ends with an AI message whose ResponseMetadata["react_stop"] tells
// why it ended; OutcomeOf reads it back with the tools used.
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
}

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
	return o, nil
}

// New builds the agent over model and tools (nil: no tools).
func New(model llm.ChatModel, tools *tool.Registry, opts Options) (*graph.Graph, error) {
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
	b := graph.New(append([]graph.Channel{Messages, startedAt}, o.Channels...)...).AddNode(
		AgentNode, a.node, nil).
		AddEdge(graph.START, AgentNode).AddConditionalEdges(

		AgentNode, shouldContinue, &graph.BranchOptions{PathMap: map[string]string{ToolsNode: ToolsNode, graph.END: graph.END}})

	err = tool.Wire(b, tools, Messages, tool.WireOptions{
		Tools: ToolsNode,
		Agent: AgentNode,
		Node: tool.NodeOptions{
			Timeout: o.ToolTimeout,
			Cache:   !o.NoCache,
			Deadline: func(s graph.State) (time.Time, bool) {
				t, ok := startedAt.Lookup(s)
				return t.Add(o.Timeout), ok && !t.IsZero()
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return b.Compile(&graph.CompileOptions{Checkpointer: o.Checkpointer, Name: o.Name})
}

func shouldContinue(_ context.Context, s graph.State) (graph.Route, error) {
	msgs := Messages.Get(s)
	if n := len(msgs); n > 0 && msgs[n-1].Type == llm.TypeAI && len(msgs[n-1].ToolCalls)+len(msgs[n-1].InvalidToolCalls) > 0 {
		return graph.To(ToolsNode), nil
	}
	return graph.To(graph.END), nil
}

// DefaultFallback answers with the reason and the observations gathered.
func DefaultFallback(_ context.Context, f Failure) string {
	why := map[StopReason]string{
		StopTimeout:    "it took too long",
		StopToolErrors: "the tools I needed kept failing",
		StopParseError: "I could not form a valid plan",
		StopModelError: "the language model failed",
		StopMaxSteps:   "I ran out of steps",
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
