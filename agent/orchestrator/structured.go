package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// NewTaskMarker separates tasks in the conversation the prompts show
// (document 001's NEW_TASK_MARKER).
const NewTaskMarker = "=== NEW TASK ==="

// structured asks model for a T: the reply is validated against T's
// schema (llm.Structured, which sends an invalid reply back once), then
// by check. A reply check refuses is sent back once with the reason for
// the model to correct; a second refusal fails with check's error.
func structured[T any](ctx context.Context, model llm.ChatModel, msgs []llm.Message, opts *llm.StructuredOptions, check func(T) error) (T, error) {
	v, err := llm.Structured[T](ctx, model, msgs, opts)
	if err != nil {
		return v, err
	}
	cerr := check(v)
	if cerr == nil {
		return v, nil
	}
	out, _ := json.Marshal(v)
	repair := append(append([]llm.Message(nil), msgs...),
		llm.AI(string(out)),
		llm.Human(fmt.Sprintf("That reply cannot be used: %v. Reply again with the whole %s, corrected.", cerr, opts.Name)))
	v, err = llm.Structured[T](ctx, model, repair, opts)
	if err != nil {
		return v, err
	}
	if cerr := check(v); cerr != nil {
		return v, fmt.Errorf("after one repair attempt: %w", cerr)
	}
	return v, nil
}

// conversation renders the last messages of the thread before the
// current request, for a prompt: "Human: ..." and "Assistant: ...", with
// NewTaskMarker before each request that began a task with tools.
func (a *Agent) conversation(s graph.State) string {
	msgs := Messages.Get(s)
	// The current request is the last human message; it is shown apart.
	last := len(msgs) - 1
	for last >= 0 && msgs[last].Type != llm.TypeHuman {
		last--
	}
	if last < 0 {
		return ""
	}
	prior := msgs[:last]
	n := a.cfg.Context.Messages - 1 // the request itself counts
	if len(prior) > n {
		prior = prior[len(prior)-n:]
	}
	var b strings.Builder
	for i, m := range prior {
		switch m.Type {
		case llm.TypeHuman:
			if startedTask(prior, i) {
				b.WriteString(NewTaskMarker + "\n")
			}
			fmt.Fprintf(&b, "Human: %s\n\n", m.Text())
		case llm.TypeAI:
			if t := m.Text(); t != "" {
				fmt.Fprintf(&b, "Assistant: %s\n\n", t)
			}
		}
	}
	return strings.TrimSpace(b.String())
}

// startedTask reports whether the human message msgs[i] began a task with
// tools: the answer after it says so.
func startedTask(msgs []llm.Message, i int) bool {
	for _, m := range msgs[i+1:] {
		switch m.Type {
		case llm.TypeHuman:
			return false
		case llm.TypeAI:
			if v, ok := m.ResponseMetadata[metaNewTask].(bool); ok {
				return v
			}
		}
	}
	return false
}

// requestPrompt is the human message of a layer's prompt: the
// conversation so far, the request, and the layer's own sections.
func (a *Agent) requestPrompt(s graph.State, request string, sections ...string) llm.Message {
	var b strings.Builder
	if conv := a.conversation(s); conv != "" {
		fmt.Fprintf(&b, "Conversation so far:\n%s\n\n%s\n", conv, NewTaskMarker)
	}
	fmt.Fprintf(&b, "Request:\n%s\n", request)
	for _, sec := range sections {
		if sec != "" {
			b.WriteString("\n" + sec + "\n")
		}
	}
	return llm.Human(strings.TrimSpace(b.String()))
}

// clip shortens s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
