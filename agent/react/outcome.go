package react

import (
	"context"
	"slices"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// Outcome summarises the last turn of a conversation.
type Outcome struct {
	// Answer is the text of the turn's final AI message.
	Answer string
	// Stop says why the turn ended; empty if it has not ended.
	Stop StopReason
	// Fallback is true when the answer is a fallback answer.
	Fallback bool
	// Steps counts the model's tool-calling replies.
	Steps int
	// ToolsUsed names the tools called, each once, in first-call order.
	ToolsUsed []string
	// ToolCalls counts tool calls; CacheHits those served from the
	// cache; ToolErrors those that failed.
	ToolCalls, CacheHits, ToolErrors int
	// Err is why the turn ended in a fallback answer (a *TurnError,
	// matching ErrNoAnswer); nil when the model answered.
	Err error
}

// OutcomeOf reads the outcome of the last turn in msgs.
func OutcomeOf(msgs []llm.Message) Outcome {
	t := currentTurn(msgs)
	o := Outcome{Steps: t.steps, ToolErrors: t.failedCalls}
	for _, m := range t.msgs {
		switch m.Type {
		case llm.TypeAI:
			for _, c := range m.ToolCalls {
				o.ToolCalls++
				if !slices.Contains(o.ToolsUsed, c.Name) {
					o.ToolsUsed = append(o.ToolsUsed, c.Name)
				}
			}
		case llm.TypeTool:
			if tool.IsCached(m) {
				o.CacheHits++
			}
		}
	}
	if n := len(t.msgs); n > 0 && t.msgs[n-1].Type == llm.TypeAI && len(t.msgs[n-1].ToolCalls) == 0 {
		last := t.msgs[n-1]
		o.Answer = last.Text()
		if why, ok := last.ResponseMetadata[MetaStop].(string); ok {
			o.Stop = StopReason(why)
		}
		o.Fallback, _ = last.ResponseMetadata[MetaFallback].(bool)
		if o.Fallback {
			cause, _ := last.ResponseMetadata[MetaError].(string)
			o.Err = &TurnError{Reason: o.Stop, Cause: cause}
		}
	}
	return o
}

// Run sends question to agent g (built by New) as a new human message and
// returns the turn's outcome. opts are the graph's run options (a thread
// for a checkpointed agent), nil for the defaults.
func Run(ctx context.Context, g *graph.Graph, question string, opts *graph.RunOptions) (Outcome, error) {
	st, err := g.Invoke(ctx, Messages.Write(llm.Human(question)), opts)
	if err != nil {
		return Outcome{}, err
	}
	return OutcomeOf(Messages.Get(st)), nil
}
