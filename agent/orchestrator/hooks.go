package orchestrator

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/weftlabs/weft/tool"
)

// The memory hooks: small interfaces through which long-term memory
// (document 001's clarification, behaviour and tool managers) and tool
// retrieval (BigTool) inform the agent. Each has a default that predicts
// nothing, so the agent runs the same with memory off.

// PastClarification is a clarification a user gave for an earlier, similar
// request, as memory keeps it.
type PastClarification struct {
	ID string `json:"id"`
	// Request is the request it clarified.
	Request  string `json:"request"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
	// ReuseCount counts how often it was applied again.
	ReuseCount int `json:"reuse_count"`
	// Confidence is memory's confidence that it applies, 0 to 1.
	Confidence float64 `json:"confidence"`
}

// ClarificationRecord is what the agent tells memory after a
// clarification: the user's answer, or the past clarification reused.
type ClarificationRecord struct {
	Thread   string `json:"thread_id"`
	Request  string `json:"request"`
	Question string `json:"question"`
	// Action is "clarify" (Answer is new), "reuse_past" (a person chose
	// PastID) or "auto" (PastID was applied without asking).
	Action string `json:"action"`
	Answer string `json:"answer"`
	PastID string `json:"past_id,omitempty"`
}

// ClarificationMemory finds past clarifications and learns new ones.
type ClarificationMemory interface {
	// PastClarifications returns the user's past clarifications for
	// requests like request, best first (at most a handful).
	PastClarifications(ctx context.Context, user, request string) ([]PastClarification, error)
	// RecordClarification stores what the user answered, or counts a
	// reuse.
	RecordClarification(ctx context.Context, user string, rec ClarificationRecord) error
}

// AcceptancePredictor predicts whether the user would accept a step
// (document 001's behaviour memory).
type AcceptancePredictor interface {
	// PredictAcceptance returns the probability that user accepts step;
	// known is false when memory has nothing to go on.
	PredictAcceptance(ctx context.Context, user string, step Step) (probability float64, known bool, err error)
}

// ToolAdvice is what tool memory says about tools for a step: a score
// added to each boosted tool (document 001: success rate × 0.3) and the
// tools to avoid (those that failed repeatedly).
type ToolAdvice struct {
	Boost map[string]float64 `json:"boost,omitempty"`
	Avoid []string           `json:"avoid,omitempty"`
}

// ToolAdvisor boosts and avoids tools by what succeeded and failed before
// for similar steps.
type ToolAdvisor interface {
	ToolAdvice(ctx context.Context, user, step string) (ToolAdvice, error)
}

// ScoredTool is a retrieved tool and its score (higher is better).
type ScoredTool struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// RetrieveRequest asks for the tools that fit a step.
type RetrieveRequest struct {
	// User is the user the step is for (a retriever with tool memory
	// boosts and avoids by it); empty when unknown.
	User string
	// Query is the step's description.
	Query string
	// Among limits the answer to these tools; nil allows any.
	Among []string
	// K is how many to return.
	K int
}

// ToolRetriever finds the tools that fit a step (BigTool).
type ToolRetriever interface {
	RetrieveTools(ctx context.Context, req RetrieveRequest) ([]ScoredTool, error)
}

// TaskRecord is a finished task, for memory to learn from (document 001's
// plan, tool, behaviour and workflow memories).
type TaskRecord struct {
	User    string `json:"user_id"`
	Thread  string `json:"thread_id"`
	Task    int    `json:"task"`
	Request string `json:"request"`
	// Cognition is the cognitive layer's reading of the request, if the
	// task got that far.
	Cognition *Cognition `json:"cognition,omitempty"`
	// Plan is the plan that ran (after edits); OriginalPlan is the one
	// first proposed, when it was edited.
	Plan         *Plan             `json:"plan,omitempty"`
	OriginalPlan *Plan             `json:"original_plan,omitempty"`
	Results      map[string]Result `json:"results,omitempty"`
	// Trace is the task's trace: every attempt at every todo (a todo
	// retried or skipped after failing keeps only its last result in
	// Results).
	Trace     []TraceEntry     `json:"trace,omitempty"`
	Approvals []ApprovalRecord `json:"approvals,omitempty"`
	Answer    string           `json:"answer"`
	// Outcome is "done", "rejected", "aborted" or "chat".
	Outcome string `json:"outcome"`
}

// TaskRecorder learns from finished tasks. It is called after the answer
// was given; its error is reported, never fatal.
type TaskRecorder interface {
	RecordTask(ctx context.Context, rec TaskRecord) error
}

// Memory gathers the memory hooks. A nil field is off.
type Memory struct {
	Clarifications ClarificationMemory
	Acceptance     AcceptancePredictor
	Tools          ToolAdvisor
	Recorder       TaskRecorder
}

// Pauser requests a pause before the next wave of todos (document 003's
// pause request during execution). PauseRequested is asked once per wave
// and should report a request once.
type Pauser interface {
	PauseRequested(ctx context.Context, thread string) bool
}

// PauseSwitch is a Pauser a program flips: Request(thread) pauses that
// thread's run before its next wave. It is safe for concurrent use.
type PauseSwitch struct {
	mu      sync.Mutex
	pending map[string]bool
}

// Request asks the run on thread to pause before its next wave.
func (p *PauseSwitch) Request(thread string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[string]bool{}
	}
	p.pending[thread] = true
}

// PauseRequested implements Pauser: it reports a request once.
func (p *PauseSwitch) PauseRequested(_ context.Context, thread string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[thread] {
		delete(p.pending, thread)
		return true
	}
	return false
}

// LexicalRetriever is the default ToolRetriever: it ranks tools by the
// words (and, for text without spaces, the letter pairs) their names and
// descriptions share with the step. With K tools or fewer to choose from,
// it returns them all.
type LexicalRetriever struct {
	// Tools returns the tools to rank.
	Tools func() []*tool.Tool
}

// RetrieveTools implements ToolRetriever.
func (r LexicalRetriever) RetrieveTools(_ context.Context, req RetrieveRequest) ([]ScoredTool, error) {
	var tools []*tool.Tool
	if r.Tools != nil {
		tools = r.Tools()
	}
	q := terms(req.Query)
	var out []ScoredTool
	for _, t := range tools {
		if req.Among != nil && !slices.Contains(req.Among, t.Name()) {
			continue
		}
		spec := t.Spec()
		doc := terms(strings.ReplaceAll(spec.Name, "_", " ") + " " + spec.Description)
		out = append(out, ScoredTool{Name: t.Name(), Score: overlap(q, doc)})
	}
	slices.SortStableFunc(out, func(a, b ScoredTool) int { return cmp.Compare(b.Score, a.Score) })
	if req.K > 0 && len(out) > req.K {
		out = out[:req.K]
	}
	return out, nil
}

// terms splits text into lower-case words, and adds the letter pairs of
// words in scripts written without spaces between words (Korean, say), so
// "채널별" and "채널" share a term.
func terms(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		out[w] = true
		rs := []rune(w)
		if len(rs) > 1 && rs[0] > unicode.MaxLatin1 {
			for i := 0; i+1 < len(rs); i++ {
				out[string(rs[i:i+2])] = true
			}
		}
	}
	return out
}

// overlap is the cosine of two term sets.
func overlap(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return float64(n) / math.Sqrt(float64(len(a)*len(b)))
}
