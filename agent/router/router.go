// Package router decides, per message, between a plain chat reply and the
// agent (document 002: the agent only when it is needed, and its usage
// counted). A message is decided by the first of these that decides it:
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
// Decide reports which one decided (a Source) and Stats counts them.
package router

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
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
	// ChatHistory is how many of the thread's latest messages a plain
	// chat reply sees (default 10, document 001's window).
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

// Router routes messages between a chat model and an agent. It is safe for
// concurrent use.
type Router struct {
	chat  llm.ChatModel
	agent *graph.Graph
	opts  Options

	messages, agentRuns, byRule, byModel, byFallbackRule, byFallback, classifierErrors atomic.Int64
}

// New returns a router that answers chat with chat and runs agent (built by
// react.New) for the rest.
func New(chat llm.ChatModel, agent *graph.Graph, opts Options) (*Router, error) {
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
	return &Router{chat: chat, agent: agent, opts: opts}, nil
}

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

// Decide routes msg without answering it: first-pass rules, then the
// classifier, then (when the classifier is missing or failed) fallback
// rules, then Default. The Source says which decided.
func (r *Router) Decide(ctx context.Context, msg string) (Route, Source) {
	if route, ok := MatchRules(r.opts.Rules, msg); ok {
		r.byRule.Add(1)
		return route, ByRule
	}
	if r.opts.Classifier != nil {
		if _, ok := ctx.Deadline(); !ok {
			// A classifier that hangs must not hold the turn past its
			// budget; the fallback rules then decide.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, r.opts.TurnTimeout)
			defer cancel()
		}
		d, err := llm.Structured[Decision](ctx, r.opts.Classifier, []llm.Message{llm.System(r.opts.ClassifierPrompt), llm.Human(msg)}, &llm.StructuredOptions{Name: "route", Description: "Where the message should go.", Method: r.opts.ClassifierMethod, TypeSchemas: routeSchema})
		if err == nil && (d.Route == Chat || d.Route == Agent) {
			r.byModel.Add(1)
			return d.Route, ByModel
		}
		r.classifierErrors.Add(1)
	}
	if route, ok := MatchRules(r.opts.FallbackRules, msg); ok {
		r.byFallbackRule.Add(1)
		return route, ByFallbackRule
	}
	r.byFallback.Add(1)
	return r.opts.Default, ByFallback
}

// routeSchema makes the classifier's schema list the routes it may choose.
var routeSchema = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[Route](): {Type: "string", Enum: []any{string(Chat), string(Agent)}},
}

// Handle routes msg and answers it: Answer without events. opts are the
// agent's run options (a thread for a checkpointed agent).
func (r *Router) Handle(ctx context.Context, msg string, opts *graph.RunOptions) (Reply, error) {
	var o AnswerOptions
	if opts != nil {
		o.Run = *opts
	}
	return r.Answer(ctx, msg, o)
}

// ChatNode names the chat route's replies in the events Answer sends: a
// graph.MessageEvent of Node ChatNode per chunk, then one with the whole
// message.
const ChatNode = "chat"

// AnswerOptions configure Answer.
type AnswerOptions struct {
	// Run are the agent's run options: ThreadID names the conversation
	// (a checkpointed agent keeps it, and the chat route reads and
	// extends it too); StreamModes select the agent's events for OnEvent.
	Run graph.RunOptions
	// OnRoute, if set, is told where the message went before it is
	// answered.
	OnRoute func(Route, Source)
	// OnEvent, if set, receives what happens while the message is
	// answered: the agent's graph events (Run.StreamModes), or on the
	// chat route a graph.MessageEvent of Node ChatNode per chunk and then
	// one with the whole reply, in messages mode.
	OnEvent func(graph.Event)
}

// Answer routes msg, answers it and records the exchange on the thread
// (Run.ThreadID): the one path by which a message is answered, for the
// command line and servers alike. The turn is bounded by TurnTimeout,
// the classifier's call included.
//
// When no model answer was produced, Reply holds a fallback answer for
// the user (Fallback, Error) and the error is a *react.TurnError matching
// react.ErrNoAnswer (and react.ErrModelFailed when the model call failed,
// on either route); the thread records the fallback answer with its cause
// (react.MetaError), marked as a fallback (react.MetaFallback). Other
// errors (the thread could not be read or saved, ctx ended) come with an
// empty Reply.
func (r *Router) Answer(ctx context.Context, msg string, opts AnswerOptions) (Reply, error) {
	start := time.Now()
	tctx, cancel := context.WithDeadline(ctx, start.Add(r.opts.TurnTimeout))
	defer cancel()
	route, src := r.Decide(tctx, msg)
	r.messages.Add(1)
	if opts.OnRoute != nil {
		opts.OnRoute(route, src)
	}
	if route == Agent {
		r.agentRuns.Add(1)
		// The agent's budget counts from the turn's start; it enforces
		// it itself, with a fallback answer, so it runs under ctx.
		return r.answerByAgent(react.WithTurnStart(ctx, start), msg, opts)
	}
	return r.answerByChat(ctx, tctx, msg, opts)
}

func (r *Router) answerByAgent(ctx context.Context, msg string, opts AnswerOptions) (Reply, error) {
	input := react.Messages.Write(llm.Human(msg))
	var final graph.State
	if opts.OnEvent == nil {
		st, err := r.agent.Invoke(ctx, input, &opts.Run)
		if err != nil {
			return Reply{}, fmt.Errorf("router: agent: %w", err)
		}
		final = st
	} else {
		// Values are streamed too, for the final state; the caller sees
		// only the modes it asked for.
		run := opts.Run
		asked := slices.Clone(run.StreamModes)
		if !slices.Contains(asked, graph.StreamValues) {
			run.StreamModes = append(slices.Clone(asked), graph.StreamValues)
		}
		for ev, err := range r.agent.Stream(ctx, input, &run) {
			if err != nil {
				return Reply{}, fmt.Errorf("router: agent: %w", err)
			}
			if ev.Mode == graph.StreamValues && len(ev.Namespace) == 0 {
				if st, ok := ev.Data.(graph.State); ok {
					final = st
				}
			}
			if slices.Contains(asked, ev.Mode) {
				opts.OnEvent(ev)
			}
		}
	}
	out := react.OutcomeOf(react.Messages.Get(final))
	tools := out.ToolsUsed
	if tools == nil {
		tools = []string{}
	}
	reply := Reply{Message: out.Answer, UsedAgent: true, ToolsUsed: tools, Stop: out.Stop, Fallback: out.Fallback}
	var te *react.TurnError
	if errors.As(out.Err, &te) {
		reply.Error = te.Cause
	}
	return reply, out.Err
}

// answerByChat answers on the chat route: the model sees the thread's
// latest messages, the reply streams, and the exchange is saved to the
// thread, so that the agent sees it on a later turn. tctx is the turn's
// bounded context, for the model call; the thread is read and written
// under ctx.
func (r *Router) answerByChat(ctx, tctx context.Context, msg string, opts AnswerOptions) (Reply, error) {
	thread := opts.Run.ThreadID
	cfg := checkpoint.Config{ThreadID: thread}
	var history []llm.Message
	if thread != "" {
		st, err := r.agent.GetState(ctx, cfg, nil)
		switch {
		case errors.Is(err, graph.ErrNoCheckpointer):
			thread = "" // nothing to read or save
		case err != nil:
			return Reply{}, fmt.Errorf("router: reading thread %s: %w", cfg.ThreadID, err)
		default:
			history = react.Messages.Get(st.Values)
			history = history[max(0, len(history)-r.opts.ChatHistory):]
		}
	}
	emit := func(m any) {
		if opts.OnEvent != nil {
			opts.OnEvent(graph.Event{Mode: graph.StreamMessages, Data: graph.MessageEvent{Message: m, Node: ChatNode, TaskID: ChatNode}})
		}
	}
	var chunks []llm.Chunk
	var failure error
	for c, err := range r.chat.Stream(tctx, r.chatMessages(history, msg)) {
		if err != nil {
			failure = err
			break
		}
		emit(c)
		chunks = append(chunks, c)
	}
	if failure != nil && ctx.Err() != nil {
		return Reply{}, fmt.Errorf("router: chat: %w", failure)
	}
	var reply llm.Message
	var turnErr error
	if failure != nil {
		why := react.StopModelError
		if tctx.Err() != nil {
			why = react.StopTimeout // the turn's budget ran out
		}
		f := react.Failure{Reason: why, Err: failure, Question: msg}
		reply = react.FallbackMessage(react.DefaultFallback(ctx, f), why, failure)
		turnErr = &react.TurnError{Reason: why, Cause: failure.Error(), Err: failure}
	} else {
		reply = llm.Merge(chunks...).Message()
	}
	reply = react.OwnID(reply)
	emit(reply)
	if thread != "" {
		// Saved as written after the graph's end: nothing is scheduled to
		// run.
		if _, err := r.agent.UpdateState(ctx, cfg, react.Messages.Write(llm.Human(msg), reply), graph.END); err != nil {
			return Reply{}, errors.Join(turnErr, fmt.Errorf("router: saving the chat to thread %s: %w", thread, err))
		}
	}
	out := Reply{Message: reply.Text(), ToolsUsed: []string{}}
	if failure != nil {
		out.Fallback, out.Error = true, failure.Error()
	}
	return out, turnErr
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

// Chat streams the plain chat reply to msg, with history (the caller picks
// how much of the conversation) before it: what Handle answers on the chat
// route, for callers that show tokens as they arrive.
func (r *Router) Chat(ctx context.Context, history []llm.Message, msg string) iter.Seq2[llm.Chunk, error] {
	return r.chat.Stream(ctx, r.chatMessages(history, msg))
}

// chatMessages is the chat model's input: the chat prompt, history, msg.
func (r *Router) chatMessages(history []llm.Message, msg string) []llm.Message {
	conv := make([]llm.Message, 0, len(history)+2)
	if r.opts.ChatPrompt != "" {
		conv = append(conv, llm.System(r.opts.ChatPrompt))
	}
	conv = append(conv, history...)
	return append(conv, llm.Human(msg))
}
