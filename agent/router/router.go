// Package router answers each message of a conversation by plain chat or
// by the ReAct agent, whichever it needs (document 002: the agent only when
// it is needed, and its usage counted). The router is a graph (Router.Graph):
//
//	START → route ─┬─ chat ───────────────→ END (or fail)
//	               └─ agent ⇄ tools, ... ─→ END (or fail)
//
// over the agent's channels (react.Messages first) and RoutingChannel. A
// turn's input is a human message written to react.Messages (Input); the
// route node decides on the latest human message by the first of these
// that decides it:
//
//  1. the first-pass keyword rules (Options.Rules, DefaultRules): cheap and
//     confident;
//  2. a model classification through structured output
//     (Options.Classifier), when there is a classifier;
//  3. the fallback keyword rules (Options.FallbackRules,
//     DefaultFallbackRules), only when the classifier is missing or failed
//     (an error, or a route other than chat and agent): broader heuristics
//     that stand in for the model;
//  4. Options.Default.
//
// It records the decision and what made it (Routing, a Source) and Stats
// counts them. The chat node answers from the conversation's latest
// messages, streaming its tokens; the agent's nodes run inline, sharing
// the messages. A turn that ends in a fallback answer goes on to the fail
// node, which ends the run with the turn's *react.TurnError once the
// fallback answer is saved: the user has an answer, and the caller (a
// stream's error event, the command line's exit status) the failure.
package router

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/llm"
)

// Route is where a message goes.
type Route string

// The routes.
const (
	Chat  Route = "chat"
	Agent Route = "agent"
)

// ErrInvalidOptions: the router's options are incomplete or out of range.
var ErrInvalidOptions = errors.New("router: invalid options")

// Decision is the model's classification of a message.
type Decision struct {
	Route  Route  `json:"route" jsonschema:"chat for greetings, small talk and questions answerable without tools; agent when tools are needed (search, look up, book)"`
	Reason string `json:"reason,omitempty" jsonschema:"one short sentence on why"`
}

// Source says what decided a route.
type Source string

// The sources, in the order the router consults them.
const (
	// ByRule: a first-pass rule (Options.Rules) matched.
	ByRule Source = "rule"
	// ByModel: the classifier decided.
	ByModel Source = "model"
	// ByFallbackRule: no first-pass rule matched, the classifier was
	// missing or failed, and a fallback rule (Options.FallbackRules)
	// matched.
	ByFallbackRule Source = "fallback_rule"
	// ByFallback: nothing else decided, so Options.Default did.
	ByFallback Source = "fallback"
)

// Rule routes a message that holds one of its keywords (case-insensitive).
// A keyword that starts with an ASCII letter or digit must start a word
// ("search" matches "searching", not "research"); any other keyword
// (Korean, whose particles attach to words) matches anywhere. With Whole,
// the message must be a keyword and nothing else, apart from spaces,
// punctuation and symbols ("안녕하세요!", "hi :)").
type Rule struct {
	Route    Route
	Keywords []string
	Whole    bool
}

// DefaultRules are the confident first pass: they route greetings and
// thanks to chat, and messages naming the tools' subjects in document 002
// (mentoring, learning paths, jobs, booking) to the agent.
func DefaultRules() []Rule {
	return []Rule{
		{Route: Chat, Whole: true, Keywords: []string{"안녕", "안녕하세요", "반가워요", "고마워", "고마워요", "감사합니다", "hi", "hello", "hey", "thanks", "thank you", "good morning"}},
		{Route: Agent, Keywords: []string{"멘토", "상담", "예약", "신청", "채용", "취업", "연봉", "회사", "배워야", "공부", "시작하려면", "학습", "mentor", "job", "hiring", "book", "learning path"}},
	}
}

// DefaultFallbackRules stand in for the classifier when it is missing or
// fails. They are broader guesses than DefaultRules, acceptable only
// because the alternative is Default for every such message; they follow
// document 002's should_use_agent:
//
//   - a short acknowledgement and nothing else ("네", "응", "ㅋㅋ", "ok")
//     goes to chat;
//   - a request or lookup verb ("추천", "찾아", "알려", "검색", "recommend",
//     "find", "search", "look up"), a question on how to start or become
//     something ("어떻게 시작", "뭐부터", "되고 싶", "how do i start", "how
//     do i become") or a career topic the tools cover ("진로", "로드맵",
//     "포트폴리오", "이력서", "면접", "자격증", "career", "roadmap",
//     "portfolio", "resume", "interview") goes to the agent.
func DefaultFallbackRules() []Rule {
	return []Rule{
		AcknowledgementRule(),
		{Route: Agent, Keywords: []string{
			"추천", "찾아", "알려", "검색", "어떻게 시작", "어떻게 해야", "어떻게 준비", "뭐부터", "되고 싶", "되려면",
			"진로", "커리어", "로드맵", "포트폴리오", "이력서", "자기소개서", "면접", "자격증",
			"recommend", "suggest", "find", "search", "look up", "how do i start", "how do i become", "how to become", "want to become",
			"career", "roadmap", "portfolio", "resume", "interview",
		}},
	}
}

// AcknowledgementRule sends a short acknowledgement and nothing else ("네",
// "응", "ㅋㅋ", "ok", "yes", "no") to plain chat: the first of
// DefaultFallbackRules, for fallback lists of other subjects to start with.
func AcknowledgementRule() Rule {
	return Rule{Route: Chat, Whole: true, Keywords: []string{"네", "응", "아니", "아니요", "좋아요", "알겠어요", "ㅋㅋ", "ㅎㅎ", "ok", "okay", "yes", "no", "lol"}}
}

// Reply is the router's answer; its JSON form is {message, used_agent,
// tools_used}, with stop, fallback and error when the turn ended without a
// model answer.
type Reply struct {
	// Message is the answer's text: the model's, or a fallback answer for
	// the user (react.DefaultFallback) when there was none.
	Message   string   `json:"message"`
	UsedAgent bool     `json:"used_agent"`
	ToolsUsed []string `json:"tools_used"`
	// Stop is why the agent's turn ended (empty on the chat route).
	Stop react.StopReason `json:"stop,omitempty"`
	// Fallback is true when Message is a fallback answer; Error then
	// says why (the provider's error, a bound crossed, ...).
	Fallback bool   `json:"fallback,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Options configure a Router.
type Options struct {
	// Rules are the first pass, tried in order before anything else; the
	// first that matches decides. Nil uses DefaultRules; an empty non-nil
	// list sends every message to the classifier.
	Rules []Rule
	// Classifier decides the messages no first-pass rule decides; nil
	// leaves them to FallbackRules, then Default.
	Classifier llm.ChatModel
	// ClassifierPrompt is its system prompt; empty uses a built-in one.
	ClassifierPrompt string
	// ClassifierMethod is how the classifier is asked for its Decision
	// (llm.StructuredOptions.Method): empty or llm.StructuredToolCall
	// offers it a tool; llm.StructuredPrompt asks in the system prompt,
	// for models without tool calling (react.JSONFormat agents).
	ClassifierMethod llm.StructuredMethod
	// FallbackRules are tried in order only when no first-pass rule
	// matched and the classifier is missing or failed (an error, or a
	// route other than chat and agent); the first that matches decides.
	// Nil uses DefaultFallbackRules; an empty non-nil list disables them,
	// leaving those messages to Default.
	FallbackRules []Rule
	// Default is the route when no rule of either pass matches and the
	// classifier is missing or fails (default Chat: the cheap path).
	Default Route
	// ChatPrompt is the system prompt of plain chat replies.
	ChatPrompt string
	// ChatHistory is how many of the conversation's latest messages a
	// plain chat reply sees before the question (default 10, document
	// 001's window): human messages and the AI's answers, not tool calls
	// and results.
	ChatHistory int
	// TurnTimeout bounds a whole turn, the classifier's call included
	// (default 30s, document 002). The agent's own budget
	// (react.Options.Timeout) counts from the turn's start too.
	TurnTimeout time.Duration
}

// Stats counts the router's decisions.
type Stats struct {
	// Messages is the number of messages routed; AgentRuns those sent to
	// the agent.
	Messages, AgentRuns int64
	// AgentRate is AgentRuns / Messages (0 before the first message);
	// document 002 aims at 0.3 or less.
	AgentRate float64
	// ByRule counts decisions by a first-pass rule, ByModel by the
	// classifier, ByFallbackRule by a fallback rule and ByFallback by
	// Options.Default (see Source).
	ByRule, ByModel, ByFallbackRule, ByFallback int64
	// ClassifierErrors counts failed classifications (an error, or a route
	// other than chat and agent); each is then decided by a fallback rule
	// or by Default.
	ClassifierErrors int64
}

// Node names of the router's graph; the agent's are react.AgentNode,
// react.ToolsNode and its tools' post-processing nodes.
const (
	// RouteNode decides the turn's route and records it (RoutingChannel).
	RouteNode = "route"
	// ChatNode answers on the chat route; its token chunks stream as
	// messages events of this node.
	ChatNode = "chat"
	// FailNode ends a run whose turn ended in a fallback answer with the
	// turn's *react.TurnError, after the answer is saved.
	FailNode = "fail"
)

// Routing is the route node's record of a turn: where it went and why. It
// is the graph's "routing" channel (RoutingChannel), part of the thread's
// state as clients see it.
type Routing struct {
	Route  Route  `json:"route"`
	Source Source `json:"source"`
	// Reason is the classifier's reason, when it decided.
	Reason string `json:"reason,omitempty"`
	// ClassifierError says why the classifier failed (an error, or a
	// route other than chat and agent), when it was asked and did not
	// decide.
	ClassifierError string `json:"classifier_error,omitempty"`
	// StartedAt is when the turn began: its budget (Options.TurnTimeout,
	// and the agent's react.Options.Timeout) counts from here, the
	// classifier's call included.
	StartedAt time.Time `json:"started_at"`
}

// RoutingChannel holds the latest turn's Routing.
var RoutingChannel = graph.Value[Routing]("routing")

// ErrNoQuestion: the conversation holds no human message to answer (a run
// whose input wrote none to a new thread).
var ErrNoQuestion = errors.New("router: no human message to answer")

// Router routes messages between a chat model and an agent, as a graph
// (Graph). It is safe for concurrent use.
type Router struct {
	chat llm.ChatModel
	opts Options
	// fallback writes fallback answers: the agent's (react.Options).
	fallback func(context.Context, react.Failure) string
	graph    *graph.Graph

	messages, agentRuns, byRule, byModel, byFallbackRule, byFallback, classifierErrors atomic.Int64
}

// New returns a router that answers chat with chat and runs agent (built by
// react.NewAgent) for the rest. Its graph (Graph) holds the agent's nodes
// inline and takes the agent's Checkpointer and Name.
func New(chat llm.ChatModel, agent *react.Agent, opts Options) (*Router, error) {
	if chat == nil || agent == nil {
		return nil, fmt.Errorf("%w: both a chat model and an agent are required", ErrInvalidOptions)
	}
	if opts.Rules == nil {
		opts.Rules = DefaultRules()
	}
	if err := checkRoutes("rule", opts.Rules); err != nil {
		return nil, err
	}
	if opts.FallbackRules == nil {
		opts.FallbackRules = DefaultFallbackRules()
	}
	if err := checkRoutes("fallback rule", opts.FallbackRules); err != nil {
		return nil, err
	}
	switch opts.Default {
	case "":
		opts.Default = Chat
	case Chat, Agent:
	default:
		return nil, fmt.Errorf("%w: Default route %q; expected %q or %q", ErrInvalidOptions, opts.Default, Chat, Agent)
	}
	if opts.ChatHistory < 0 || opts.TurnTimeout < 0 {
		return nil, fmt.Errorf("%w: ChatHistory and TurnTimeout must not be negative (got %d, %v)", ErrInvalidOptions, opts.ChatHistory, opts.TurnTimeout)
	}
	if opts.ChatHistory == 0 {
		opts.ChatHistory = 10
	}
	if opts.TurnTimeout == 0 {
		opts.TurnTimeout = 30 * time.Second
	}
	if opts.ClassifierPrompt == "" {
		opts.ClassifierPrompt = "Classify the user's message. Answer \"chat\" for greetings, small talk and questions you can answer directly; \"agent\" when answering needs tools: searching mentoring sessions, learning paths or job postings, or booking."
	}
	ao := agent.Options()
	r := &Router{chat: chat, opts: opts, fallback: ao.Fallback}
	b := graph.New(append(agent.Channels(), RoutingChannel)...).
		AddNode(RouteNode, r.route, nil).
		AddNode(ChatNode, r.answerChat, nil).
		AddNode(FailNode, fail, nil).
		AddEdge(graph.START, RouteNode).
		AddConditionalEdges(RouteNode, routeTo, &graph.BranchOptions{PathMap: map[string]string{string(Chat): ChatNode, string(Agent): react.AgentNode}}).
		AddConditionalEdges(ChatNode, afterChat, &graph.BranchOptions{PathMap: map[string]string{graph.END: graph.END, FailNode: FailNode}})
	err := agent.AddTo(b, &react.AddOptions{
		TurnStart: func(s graph.State) (time.Time, bool) {
			rt, ok := RoutingChannel.Lookup(s)
			return rt.StartedAt, ok && !rt.StartedAt.IsZero()
		},
		OnFallback: FailNode,
	})
	if err != nil {
		return nil, fmt.Errorf("router: adding the agent: %w", err)
	}
	if r.graph, err = b.Compile(&graph.CompileOptions{Checkpointer: ao.Checkpointer, Name: ao.Name}); err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return r, nil
}

// Graph returns the router's graph: what a server serves and the command
// line runs. Its input is Input(msg), or any write of a human message to
// react.Messages.
func (r *Router) Graph() *graph.Graph { return r.graph }

// Input is a turn's input: msg as a human message.
func Input(msg string) graph.Update { return react.Messages.Write(llm.Human(msg)) }

// checkRoutes reports the first of rules (named kind in the error) whose
// route is neither Chat nor Agent.
func checkRoutes(kind string, rules []Rule) error {
	for i, r := range rules {
		if r.Route != Chat && r.Route != Agent {
			return fmt.Errorf("%w: %s %d has route %q; expected %q or %q", ErrInvalidOptions, kind, i, r.Route, Chat, Agent)
		}
	}
	return nil
}

// MatchRules returns the route of the first rule that matches msg.
func MatchRules(rules []Rule, msg string) (Route, bool) {
	text := strings.ToLower(strings.TrimSpace(msg))
	bare := strings.TrimFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) })
	for _, r := range rules {
		for _, k := range r.Keywords {
			k = strings.ToLower(k)
			if r.Whole && bare == k || !r.Whole && containsKeyword(text, k) {
				return r.Route, true
			}
		}
	}
	return "", false
}

// containsKeyword reports whether text holds k, at the start of a word
// when k starts with an ASCII letter or digit.
func containsKeyword(text, k string) bool {
	if k == "" {
		return false
	}
	if !isASCIIWordByte(k[0]) {
		return strings.Contains(text, k)
	}
	for i := 0; ; {
		j := strings.Index(text[i:], k)
		if j < 0 {
			return false
		}
		at := i + j
		if at == 0 || !isASCIIWordByte(text[at-1]) {
			return true
		}
		i = at + 1
	}
}

func isASCIIWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// Decide routes msg without answering it, as the route node does: first-
// pass rules, then the classifier, then (when the classifier is missing or
// failed) fallback rules, then Default. The Source says which decided. A
// ctx without a deadline gets Options.TurnTimeout for the classifier.
func (r *Router) Decide(ctx context.Context, msg string) (Route, Source) {
	if _, ok := ctx.Deadline(); !ok {
		// A classifier that hangs must not hold the turn past its
		// budget; the fallback rules then decide.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.TurnTimeout)
		defer cancel()
	}
	rt := r.decide(ctx, msg)
	return rt.Route, rt.Source
}

// decide is Decide's work, with the classifier's reason or failure.
func (r *Router) decide(ctx context.Context, msg string) Routing {
	if route, ok := MatchRules(r.opts.Rules, msg); ok {
		r.byRule.Add(1)
		return Routing{Route: route, Source: ByRule}
	}
	var failure string
	if r.opts.Classifier != nil {
		d, err := llm.Structured[Decision](ctx, r.opts.Classifier, []llm.Message{llm.System(r.opts.ClassifierPrompt), llm.Human(msg)}, &llm.StructuredOptions{Name: "route", Description: "Where the message should go.", Method: r.opts.ClassifierMethod, TypeSchemas: routeSchema})
		switch {
		case err != nil:
			failure = err.Error()
		case d.Route == Chat || d.Route == Agent:
			r.byModel.Add(1)
			return Routing{Route: d.Route, Source: ByModel, Reason: d.Reason}
		default:
			failure = fmt.Sprintf("the classifier chose route %q; expected %q or %q", d.Route, Chat, Agent)
		}
		r.classifierErrors.Add(1)
	}
	if route, ok := MatchRules(r.opts.FallbackRules, msg); ok {
		r.byFallbackRule.Add(1)
		return Routing{Route: route, Source: ByFallbackRule, ClassifierError: failure}
	}
	r.byFallback.Add(1)
	return Routing{Route: r.opts.Default, Source: ByFallback, ClassifierError: failure}
}

// routeSchema makes the classifier's schema list the routes it may choose.
var routeSchema = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[Route](): {Type: "string", Enum: []any{string(Chat), string(Agent)}},
}

// latestHuman returns the index of the last human message in msgs, or -1.
func latestHuman(msgs []llm.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == llm.TypeHuman {
			return i
		}
	}
	return -1
}

// route is the route node: it decides the latest human message's route
// within the turn's budget and records it.
func (r *Router) route(ctx context.Context, s graph.State) (graph.Update, error) {
	start := time.Now()
	msgs := react.Messages.Get(s)
	h := latestHuman(msgs)
	if h < 0 {
		return graph.Update{}, fmt.Errorf("%w: the input must write one to %q ({\"messages\": [{\"role\": \"user\", \"content\": ...}]})", ErrNoQuestion, react.Messages.Name())
	}
	tctx, cancel := context.WithDeadline(ctx, start.Add(r.opts.TurnTimeout))
	defer cancel()
	rt := r.decide(tctx, msgs[h].Text())
	rt.StartedAt = start
	r.messages.Add(1)
	if rt.Route == Agent {
		r.agentRuns.Add(1)
	}
	return RoutingChannel.Write(rt), nil
}

func routeTo(_ context.Context, s graph.State) (graph.Route, error) {
	return graph.To(string(RoutingChannel.Get(s).Route)), nil
}

// answerChat is the chat node: the chat model answers from the latest
// messages, its tokens streaming as messages events of ChatNode, within
// what is left of the turn's budget. A failed or timed-out call is
// answered with a fallback answer (the agent's react.Options.Fallback
// writes it) that records its cause.
func (r *Router) answerChat(ctx context.Context, s graph.State) (graph.Update, error) {
	msgs := react.Messages.Get(s)
	h := latestHuman(msgs)
	if h < 0 {
		return graph.Update{}, ErrNoQuestion
	}
	start := RoutingChannel.Get(s).StartedAt
	if start.IsZero() {
		start = time.Now()
	}
	tctx, cancel := context.WithDeadline(ctx, start.Add(r.opts.TurnTimeout))
	defer cancel()
	// The reply streams under the id it is saved with (react.StreamReply).
	reply, failure := react.StreamReply(ctx, ids.Random(), r.chat.Stream(tctx, r.chatMessages(msgs[:h], msgs[h])))
	if failure != nil && ctx.Err() != nil {
		// The run was cancelled, not the model: nothing to record.
		return graph.Update{}, fmt.Errorf("router: chat: %w", failure)
	}
	if failure != nil {
		why := react.StopModelError
		if tctx.Err() != nil {
			why = react.StopTimeout // the turn's budget ran out
		}
		f := react.Failure{Reason: why, Err: failure, Question: msgs[h].Text()}
		// A message of its own, not the streamed one: a client shows the
		// partial text and then this answer.
		reply = react.OwnID(react.FallbackMessage(r.fallback(ctx, f), why, failure))
	}
	return react.Messages.Write(reply), nil
}

// afterChat ends the run after an answer, and goes to FailNode after a
// fallback answer.
func afterChat(_ context.Context, s graph.State) (graph.Route, error) {
	if react.OutcomeOf(react.Messages.Get(s)).Fallback {
		return graph.To(FailNode), nil
	}
	return graph.To(graph.END), nil
}

// fail is FailNode: it fails the run with the turn's *react.TurnError. It
// runs after the fallback answer was written, so the answer is saved and
// streamed before the error.
func fail(_ context.Context, s graph.State) (graph.Update, error) {
	if err := react.OutcomeOf(react.Messages.Get(s)).Err; err != nil {
		return graph.Update{}, err
	}
	return graph.Update{}, nil
}

// chatMessages is the chat model's input: the chat prompt, the last
// ChatHistory messages of the conversation's text before the question, and
// the question. The text is the human messages and the AI's answers: tool
// calls and their results are left out, since a model called without tools
// may refuse them, and the answers say what they found.
func (r *Router) chatMessages(before []llm.Message, question llm.Message) []llm.Message {
	var history []llm.Message
	for _, m := range slices.Backward(before) {
		if len(history) == r.opts.ChatHistory {
			break
		}
		if m.Type == llm.TypeTool || m.Type == llm.TypeAI && len(m.ToolCalls)+len(m.InvalidToolCalls) > 0 {
			continue
		}
		history = append(history, m)
	}
	slices.Reverse(history)
	conv := make([]llm.Message, 0, len(history)+2)
	if r.opts.ChatPrompt != "" {
		conv = append(conv, llm.System(r.opts.ChatPrompt))
	}
	conv = append(conv, history...)
	return append(conv, question)
}

// Handle routes msg and answers it: Answer without events. opts are the
// graph's run options (a thread for a checkpointed agent).
func (r *Router) Handle(ctx context.Context, msg string, opts *graph.RunOptions) (Reply, error) {
	var o AnswerOptions
	if opts != nil {
		o.Run = *opts
	}
	return r.Answer(ctx, msg, o)
}

// AnswerOptions configure Answer.
type AnswerOptions struct {
	// Run are the graph's run options: ThreadID names the conversation
	// (a checkpointed agent keeps it); StreamModes select the events
	// OnEvent receives.
	Run graph.RunOptions
	// OnRoute, if set, is told where the message went before it is
	// answered.
	OnRoute func(Route, Source)
	// OnEvent, if set, receives the graph's events in Run.StreamModes as
	// they happen: on the chat route, a messages event of ChatNode per
	// token chunk, then one with the whole reply.
	OnEvent func(graph.Event)
}

// Answer runs the router's graph on msg and returns the turn as a Reply
// (document 002's {message, used_agent, tools_used}): a convenience over
// Graph().Stream for callers that want the answer, not the events.
//
// When no model answer was produced, Reply holds the fallback answer for
// the user (Fallback, Error) and the error is the turn's *react.TurnError,
// matching react.ErrNoAnswer (and react.ErrModelFailed when the model call
// failed, on either route); the thread records the fallback answer with its
// cause (react.MetaError), marked as a fallback (react.MetaFallback).
// Other errors (the thread could not be read or saved, ctx ended) come
// with an empty Reply.
func (r *Router) Answer(ctx context.Context, msg string, opts AnswerOptions) (Reply, error) {
	run := opts.Run
	var asked []graph.StreamMode
	if opts.OnEvent != nil {
		asked = run.StreamModes
	}
	// Values for the final state, updates for the route.
	run.StreamModes = slices.Clone(asked)
	for _, m := range []graph.StreamMode{graph.StreamValues, graph.StreamUpdates} {
		if !slices.Contains(run.StreamModes, m) {
			run.StreamModes = append(run.StreamModes, m)
		}
	}
	var final graph.State
	var routing Routing
	var runErr error
	for ev, err := range r.graph.Stream(ctx, Input(msg), &run) {
		if err != nil {
			runErr = err
			break
		}
		if len(ev.Namespace) == 0 {
			if st, ok := ev.Values(); ok {
				final = st
			}
			if u, ok := ev.Update(); ok && u.Node == RouteNode {
				if rt, ok := graph.Written(u.Update, RoutingChannel); ok {
					routing = rt
					if opts.OnRoute != nil {
						opts.OnRoute(rt.Route, rt.Source)
					}
				}
			}
		}
		if slices.Contains(asked, ev.Mode) {
			opts.OnEvent(ev)
		}
	}
	var te *react.TurnError
	if runErr != nil && !errors.As(runErr, &te) {
		return Reply{}, fmt.Errorf("router: %w", runErr)
	}
	out := react.OutcomeOf(react.Messages.Get(final))
	reply := Reply{Message: out.Answer, UsedAgent: routing.Route == Agent, ToolsUsed: out.ToolsUsed, Fallback: out.Fallback}
	if reply.ToolsUsed == nil {
		reply.ToolsUsed = []string{}
	}
	if reply.UsedAgent {
		reply.Stop = out.Stop
	}
	if te != nil {
		reply.Error = te.Cause
		return reply, te
	}
	return reply, nil
}

// Stats returns the counts so far.
func (r *Router) Stats() Stats {
	s := Stats{
		Messages:         r.messages.Load(),
		AgentRuns:        r.agentRuns.Load(),
		ByRule:           r.byRule.Load(),
		ByModel:          r.byModel.Load(),
		ByFallbackRule:   r.byFallbackRule.Load(),
		ByFallback:       r.byFallback.Load(),
		ClassifierErrors: r.classifierErrors.Load(),
	}
	if s.Messages > 0 {
		s.AgentRate = float64(s.AgentRuns) / float64(s.Messages)
	}
	return s
}
