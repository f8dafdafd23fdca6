package react

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

type agent struct {
	model llm.ChatModel
	tools *tool.Registry
	opts  Options
}

// errUnparseable marks a JSON-format reply that cannot be read.
var errUnparseable = errors.New("react: unparseable reply")

// turn is the current turn of a conversation: what follows its last human
// message.
type turn struct {
	question string
	msgs     []llm.Message
	steps    int
	// toolErrors counts the rounds with a failed tool call; failedCalls
	// the failed calls.
	toolErrors, failedCalls int
}

// observations returns the turn's successful tool messages.
func (t turn) observations() []llm.Message {
	var out []llm.Message
	for _, m := range t.msgs {
		if m.Type == llm.TypeTool && !m.IsError() {
			out = append(out, m)
		}
	}
	return out
}

func currentTurn(msgs []llm.Message) turn {
	start := 0
	var t turn
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == llm.TypeHuman {
			start = i + 1
			t.question = msgs[i].Text()
			break
		}
	}
	t.msgs = msgs[start:]
	// Tool errors count by round (the calls of one reply), so that one
	// parallel round of failures reaches the model before the budget ends
	// the turn.
	failedRound := false
	for _, m := range t.msgs {
		switch {
		case m.Type == llm.TypeAI && len(m.ToolCalls)+len(m.InvalidToolCalls) > 0:
			t.steps++
			failedRound = false
		case m.Type == llm.TypeTool && m.IsError():
			t.failedCalls++
			if !failedRound {
				t.toolErrors++
				failedRound = true
			}
		}
	}
	return t
}

// node is the agent node. ao.TurnStart, if set, reads the turn's start
// from the host graph's state; when it has none, the agent records the
// start itself on its first step of a turn. ao.Prompt and ao.Also are the
// host's system prompt and writes.
func (a *agent) node(ao AddOptions) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		msgs := Messages.Get(s)
		t := currentTurn(msgs)
		var out graph.Update
		at, ok := time.Time{}, false
		if ao.TurnStart != nil {
			at, ok = ao.TurnStart(s)
		}
		if !ok {
			at, ok = ownStart(s)
			if t.steps == 0 || !ok {
				// The loop's first step in this turn (nodes of the host may
				// have written messages before it): a start the state holds
				// is the last turn's.
				at = time.Now()
				out = startedAt.Write(at)
			}
		}
		prompt := a.opts.SystemPrompt
		if ao.Prompt != nil {
			var err error
			if prompt, err = ao.Prompt(ctx, s); err != nil {
				return graph.Update{}, fmt.Errorf("react: the system prompt: %w", err)
			}
		}
		reply, err := a.decide(ctx, msgs, t, prompt, at.Add(a.opts.Timeout))
		if err != nil {
			return graph.Update{}, err
		}
		if reply.ID == "" {
			// A fallback answer: a message of the agent's, not the model's.
			reply = OwnID(reply)
		}
		out = out.And(Messages.Write(reply))
		if ao.Also != nil {
			also, err := ao.Also(ctx, s, reply)
			if err != nil {
				return graph.Update{}, err
			}
			out = out.And(also)
		}
		return out, nil
	}
}

// ownStart is the turn's start as the agent recorded it.
func ownStart(s graph.State) (time.Time, bool) {
	t, ok := startedAt.Lookup(s)
	return t, ok && !t.IsZero()
}

// OwnID gives m an ID of its own, unique whatever the provider sent (a
// server that repeats completion ids would otherwise have a new message
// replace an earlier one), and keeps the provider's ID in the message's
// response metadata under MetaProviderID.
func OwnID(m llm.Message) llm.Message {
	return withID(m, ids.Random())
}

// withID gives m the ID id, keeping the provider's under MetaProviderID.
func withID(m llm.Message, id string) llm.Message {
	if m.ID != "" {
		md := make(llm.ResponseMetadata, len(m.ResponseMetadata)+1)
		maps.Copy(md, m.ResponseMetadata)
		md[MetaProviderID] = m.ID
		m.ResponseMetadata = md
	}
	m.ID = id
	return m
}

// StreamReply drains a model's streamed reply under id, an ID of the
// agent's own (see OwnID). Every chunk reaches the run's messages stream
// (graph.StreamMessage) carrying id, and the first chunk that carries the
// provider's ID keeps it in its response metadata under MetaProviderID, so
// that a client that merges chunks by ID (LangGraph's SDKs do) shows the
// chunks as the one message the thread then saves under id, not as a
// second one. It returns the merged message, with id, or the stream's
// error.
func StreamReply(ctx context.Context, id string, stream iter.Seq2[llm.Chunk, error]) (llm.Message, error) {
	var chunks []llm.Chunk
	provider := ""
	for c, err := range stream {
		if err != nil {
			return llm.Message{}, err
		}
		if c.ID != "" && c.ID != provider {
			provider = c.ID
			md := make(llm.ResponseMetadata, len(c.ResponseMetadata)+1)
			maps.Copy(md, c.ResponseMetadata)
			md[MetaProviderID] = c.ID
			c.ResponseMetadata = md
		}
		c.ID = id
		graph.StreamMessage(ctx, c)
		chunks = append(chunks, c)
	}
	m := llm.Merge(chunks...).Message()
	m.ID = id
	return m, nil
}

// decide returns the agent's next message: tool calls, an answer, or a
// fallback answer.
func (a *agent) decide(ctx context.Context, msgs []llm.Message, t turn, prompt string, deadline time.Time) (llm.Message, error) {
	if !time.Now().Before(deadline) {
		return a.fallback(ctx, t, StopTimeout, context.DeadlineExceeded), nil
	}
	if t.toolErrors >= a.opts.MaxToolErrors {
		return a.fallback(ctx, t, StopToolErrors, nil), nil
	}
	tctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	forced := t.steps >= a.opts.MaxSteps
	var specs []llm.ToolSpec
	if !forced || a.opts.Mode == JSONFormat {
		var err error
		if specs, err = a.toolSpecs(tctx, t); err != nil {
			switch {
			case ctx.Err() != nil:
				return llm.Message{}, ctx.Err()
			case tctx.Err() != nil:
				return a.fallback(ctx, t, StopTimeout, err), nil
			}
			return a.fallback(ctx, t, StopRetrievalError, err), nil
		}
	}
	reply, err := a.ask(tctx, msgs, prompt, forced, specs)
	if err == nil && a.opts.Mode == JSONFormat {
		var perr error
		if reply, perr = a.parse(reply, len(msgs)); perr != nil {
			// One retry, telling the model what was wrong.
			retry := append(msgs[:len(msgs):len(msgs)], llm.AI(reply.Text()), llm.Human(fmt.Sprintf("Your reply could not be used: %v. Reply with only one JSON object of the form {\"thought\": ..., \"action\": ..., \"action_input\": {...}}.", perr)))
			reply, err = a.ask(tctx, retry, prompt, forced, specs)
			if err == nil {
				if reply, perr = a.parse(reply, len(msgs)); perr != nil {
					return a.fallback(ctx, t, StopParseError, perr), nil
				}
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return llm.Message{}, ctx.Err()
		}
		if tctx.Err() != nil {
			return a.fallback(ctx, t, StopTimeout, err), nil
		}
		return a.fallback(ctx, t, StopModelError, err), nil
	}
	if forced {
		// The model was asked not to call tools; if it did anyway, answer
		// from the observations.
		if len(reply.ToolCalls)+len(reply.InvalidToolCalls) > 0 || strings.TrimSpace(reply.Text()) == "" {
			return a.fallback(ctx, t, StopMaxSteps, nil), nil
		}
		return finish(reply, StopMaxSteps, false), nil
	}
	if len(reply.ToolCalls)+len(reply.InvalidToolCalls) > 0 {
		return reply, nil
	}
	return finish(reply, StopAnswer, false), nil
}

// ask calls the model, streaming unless NoStream, offering it specs.
// forced asks for an answer without tools. The reply has an ID of the
// agent's own, given before it streams (StreamReply).
func (a *agent) ask(ctx context.Context, msgs []llm.Message, prompt string, forced bool, specs []llm.ToolSpec) (llm.Message, error) {
	var conv []llm.Message
	model := a.model
	switch a.opts.Mode {
	case JSONFormat:
		if p := jsonPrompt(prompt, specs); p != "" {
			conv = append(conv, llm.System(p))
		}
		conv = append(conv, asJSONConversation(msgs)...)
		if forced {
			conv = append(conv, llm.Human(`You have used all your steps. Reply now with {"thought": ..., "action": "FINISH", "action_input": {"answer": ...}}, answering from what you know.`))
		}
	default:
		conv = answerCalls(msgs)
		if prompt != "" || forced {
			// Copy only when something is added: the history is long.
			hist := conv
			conv = make([]llm.Message, 0, len(hist)+2)
			if prompt != "" {
				conv = append(conv, llm.System(prompt))
			}
			conv = append(conv, hist...)
		}
		if forced {
			conv = append(conv, llm.Human("You have used all your steps. Answer now from what you know, without calling tools."))
		} else if len(specs) > 0 {
			model = model.BindTools(specs)
		}
	}
	if a.opts.NoStream {
		m, err := model.Generate(ctx, conv)
		if err != nil {
			return llm.Message{}, err
		}
		return OwnID(m), nil
	}
	return StreamReply(ctx, ids.Random(), model.Stream(ctx, conv))
}

// interruptedCall is the answer to a call whose result the thread lacks.
const interruptedCall = "error interrupted: the run stopped before this call's result was recorded; whether it took effect is unknown"

// answerCalls returns msgs with an error answer after every tool call that
// has none: a call of a turn stopped while its tools ran (a cancelled
// run). Providers refuse a conversation with a call left unanswered, so
// without one the thread could not go on. msgs itself is returned when
// every call is answered (the usual case: no copy of a long history).
func answerCalls(msgs []llm.Message) []llm.Message {
	var out []llm.Message // nil until an answer is missing
	for i := 0; i < len(msgs); {
		m := msgs[i]
		j := i + 1
		if m.Type != llm.TypeAI || len(m.ToolCalls)+len(m.InvalidToolCalls) == 0 {
			if out != nil {
				out = append(out, m)
			}
			i = j
			continue
		}
		answered := map[string]bool{}
		for ; j < len(msgs) && msgs[j].Type == llm.TypeTool; j++ {
			answered[msgs[j].ToolCallID] = true
		}
		var missing []llm.Message
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				missing = append(missing, llm.ToolError(c.ID, c.Name, interruptedCall))
			}
		}
		for _, c := range m.InvalidToolCalls {
			if !answered[c.ID] {
				missing = append(missing, llm.ToolError(c.ID, c.Name, interruptedCall))
			}
		}
		if missing != nil && out == nil {
			out = append(make([]llm.Message, 0, len(msgs)+len(missing)), msgs[:i]...)
		}
		if out != nil {
			out = append(append(out, msgs[i:j]...), missing...)
		}
		i = j
	}
	if out == nil {
		return msgs
	}
	return out
}

// finish marks reply as the turn's final answer.
func finish(reply llm.Message, why StopReason, fallback bool) llm.Message {
	md := make(llm.ResponseMetadata, len(reply.ResponseMetadata)+2)
	maps.Copy(md, reply.ResponseMetadata)
	md[MetaStop] = string(why)
	if fallback {
		md[MetaFallback] = true
	}
	reply.ResponseMetadata = md
	return reply
}

func (a *agent) fallback(ctx context.Context, t turn, why StopReason, err error) llm.Message {
	text := a.opts.Fallback(ctx, Failure{Reason: why, Err: err, Question: t.question, Observations: t.observations()})
	return FallbackMessage(text, why, err)
}

// FallbackMessage is a fallback answer with text for the user, marked as
// one (MetaFallback, MetaStop) and recording its cause (MetaError), so
// that the thread tells it apart from a model's answer.
func FallbackMessage(text string, why StopReason, cause error) llm.Message {
	m := finish(llm.AI(text), why, true)
	if cause != nil {
		m.ResponseMetadata[MetaError] = cause.Error()
	}
	return m
}

// ---------------------------------------------------------------- JSON mode

const jsonFormat = `Reply with exactly one JSON object and nothing else:
{"thought": "your reasoning about what to do next", "action": "a tool name, or FINISH", "action_input": {the tool's arguments, or for FINISH {"answer": "your answer to the user"}}}
Call one tool at a time. Use FINISH when you can answer, or when you are unsure and need to ask the user.`

func jsonPrompt(prompt string, specs []llm.ToolSpec) string {
	var b strings.Builder
	if prompt != "" {
		b.WriteString(prompt)
		b.WriteString("\n\n")
	}
	b.WriteString("## Tools\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "- %s: %s\n  arguments (JSON Schema): %s\n", s.Name, s.Description, s.Parameters)
	}
	b.WriteString("- FINISH: answer without a tool\n\n## Output format\n")
	b.WriteString(jsonFormat)
	return b.String()
}

// asJSONConversation rewrites a conversation for a model without tool
// calling: the agent's tool-calling messages keep only their JSON text,
// and tool results become observations.
func asJSONConversation(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case m.Type == llm.TypeAI && len(m.ToolCalls) > 0:
			out = append(out, llm.AI(m.Text()))
		case m.Type == llm.TypeTool:
			out = append(out, llm.Human("Observation from "+m.Name+": "+m.Text()))
		default:
			out = append(out, m)
		}
	}
	return out
}

type jsonReply struct {
	Thought     string          `json:"thought"`
	Action      string          `json:"action"`
	ActionInput json.RawMessage `json:"action_input"`
	Answer      string          `json:"answer"`
}

// parse reads a JSON-format reply into a tool call or a final answer.
// n, the conversation's length, makes the call's ID unique in the thread.
func (a *agent) parse(reply llm.Message, n int) (llm.Message, error) {
	text := strings.TrimSpace(reply.Text())
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		text = text[i : j+1]
	}
	var r jsonReply
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return reply, fmt.Errorf("%w: not a JSON object: %w", errUnparseable, err)
	}
	input := r.ActionInput
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	switch {
	case r.Action == "":
		return reply, fmt.Errorf("%w: the \"action\" field is missing", errUnparseable)
	case strings.EqualFold(r.Action, "FINISH"):
		answer := r.Answer
		var in struct {
			Answer string `json:"answer"`
		}
		if answer == "" && json.Unmarshal(input, &in) == nil {
			answer = in.Answer
		}
		if answer == "" {
			var s string
			if json.Unmarshal(input, &s) == nil {
				answer = s
			}
		}
		if answer == "" {
			answer = r.Thought
		}
		msg := llm.AI(answer)
		msg.ID, msg.Usage, msg.ResponseMetadata = reply.ID, reply.Usage, reply.ResponseMetadata
		msg.AdditionalKwargs = map[string]json.RawMessage{"react_raw": mustJSON(reply.Text())}
		return msg, nil
	}
	if input[0] != '{' {
		return reply, fmt.Errorf("%w: \"action_input\" of %s must be a JSON object, got %s", errUnparseable, r.Action, input)
	}
	msg := llm.AI(reply.Text(), llm.ToolCall{ID: "react_" + strconv.Itoa(n), Name: r.Action, Args: input})
	msg.ID, msg.Usage, msg.ResponseMetadata = reply.ID, reply.Usage, reply.ResponseMetadata
	return msg, nil
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
