package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// start begins a task (document 001's start_node): the last human message
// is the request; the previous task's plan, todos and results are cleared.
func (a *Agent) start(ctx context.Context, s graph.State) (graph.Update, error) {
	msgs := Messages.Get(s)
	var request string
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == llm.TypeHuman {
			request = strings.TrimSpace(msgs[i].Text())
			break
		}
	}
	if request == "" {
		return graph.Update{}, ErrNoRequest
	}
	task := Task.Get(s) + 1
	emit(ctx, events.Start{Thread: threadOf(ctx), Task: task, Request: request, Time: a.now().UTC()})
	user := a.userOf(ctx, s)
	if user == "" && a.hasMemory() {
		emit(ctx, events.Status{Message: "memory is off for this task: it names no user", Node: NodeStart})
	}
	return Task.Write(task).And(
		User.Write(user),
		RequestText.Write(request),
		CognitiveResult.Write(nil),
		PastClarifications.Write(nil),
		PlanState.Write(nil),
		OriginalPlan.Write(nil),
		Todos.Overwrite(nil),
		Results.Overwrite(nil),
		Prepared.Write(nil),
		Wave.Write(0),
		PausedWave.Write(0),
		Outcome.Write(""),
		Reason.Write(""),
		ResponseResult.Write(nil),
		Trace.Write([]TraceEntry{{Task: task, Layer: "start", Node: NodeStart, Event: "task_started", Detail: clip(request, 200), Time: a.now().UTC()}}),
	), nil
}

// cognitive is document 003's cognitive layer: intent, entities and
// ambiguity through structured output, then the hand-off: to the
// clarification point, to planning, or (a request without tools) to the
// response.
func (a *Agent) cognitive(ctx context.Context, s graph.State) (graph.Update, error) {
	emit(ctx, events.LayerStart{Layer: events.LayerCognitive, Node: NodeCognitive})
	request := RequestText.Get(s)
	c, err := a.understand(ctx, s, request)
	if err != nil {
		return graph.Update{}, a.fail(ctx, "cognitive_error", fmt.Errorf("understanding the request: %w", err))
	}
	tr := func(event, detail string) graph.Update {
		return Trace.Write([]TraceEntry{a.trace(s, events.LayerCognitive, NodeCognitive, "", event, detail)})
	}
	intent := fmt.Sprintf("%s/%s/%s", c.Intent.Domain, c.Intent.Category, c.Intent.Subcategory)
	u := CognitiveResult.Write(&c).And(tr("intent", intent))
	if !c.NeedsTools {
		emit(ctx, events.Status{Message: "plain chat: no tools needed", Node: NodeCognitive})
		return u.And(Outcome.Write(OutcomeChat)).Goto(NodeResponse), nil
	}
	if !c.Ambiguous {
		return u.Goto(NodePlanning), nil
	}
	past := a.pastClarifications(ctx, s, request)
	if best, ok := a.reusable(past); ok {
		// Document 001: a past clarification reused at least 5 times with
		// confidence 0.9 or more is applied without asking.
		a.record(ctx, s, ClarificationRecord{Thread: threadOf(ctx), Request: request, Question: c.Question, Action: "auto", Answer: best.Answer, PastID: best.ID})
		emit(ctx, events.Status{Message: "clarification reused from memory: " + clip(best.Answer, 120), Node: NodeCognitive})
		return u.And(
			RequestText.Write(request+fmt.Sprintf(a.cfg.Prompts.ClarificationAdded, best.Answer)),
			ApprovalHistory.Write([]ApprovalRecord{{Task: Task.Get(s), Kind: KindClarification, Action: ActionReusePast, By: "memory", Reason: best.ID, Time: a.now().UTC()}}),
			tr("clarification_reused", best.ID),
		).Goto(NodePlanning), nil
	}
	if !a.asks || !a.cfg.Approvals.askAt(a.cfg.Approvals.Clarification) {
		return u.And(
			ApprovalHistory.Write([]ApprovalRecord{{Task: Task.Get(s), Kind: KindClarification, Action: ActionProceedAnyway, By: "auto", Time: a.now().UTC()}}),
			tr("ambiguous", "clarification approval is off: planning as asked"),
		).Goto(NodePlanning), nil
	}
	return u.And(PastClarifications.Write(past), tr("ambiguous", c.Question)).Goto(NodeClarification), nil
}

// understand asks the cognitive model for a Cognition and checks it.
func (a *Agent) understand(ctx context.Context, s graph.State, request string) (Cognition, error) {
	var cat strings.Builder
	cat.WriteString("Intent domains and their categories:\n")
	for _, d := range sortedKeys(a.cfg.Intents) {
		fmt.Fprintf(&cat, "- %s: %s\n", d, strings.Join(a.cfg.Intents[d], ", "))
	}
	cat.WriteString("\nTools the agent can use:\n")
	for _, t := range a.allTools() {
		spec := t.Spec()
		fmt.Fprintf(&cat, "- %s: %s\n", spec.Name, spec.Description)
	}
	msgs := []llm.Message{llm.System(a.cfg.Prompts.Cognitive), a.requestPrompt(s, request, cat.String())}
	domains := sortedKeys(a.cfg.Intents)
	opts := &llm.StructuredOptions{Name: "cognition", Description: "The reading of the user's request.", Method: a.structuredMethod()}
	return structured(ctx, a.models.Cognitive, msgs, opts, func(c Cognition) error {
		cats, ok := a.cfg.Intents[c.Intent.Domain]
		switch {
		case !ok:
			return fmt.Errorf("intent.domain %q is not one of %s", c.Intent.Domain, strings.Join(domains, ", "))
		case len(cats) > 0 && !slices.Contains(cats, c.Intent.Category):
			return fmt.Errorf("intent.category %q is not a category of %s (%s)", c.Intent.Category, c.Intent.Domain, strings.Join(cats, ", "))
		case c.Confidence < 0 || c.Confidence > 1:
			return fmt.Errorf("confidence %v is not between 0 and 1", c.Confidence)
		}
		for i, e := range c.Entities {
			if e.Confidence < 0 || e.Confidence > 1 {
				return fmt.Errorf("entities[%d].confidence %v is not between 0 and 1", i, e.Confidence)
			}
		}
		return nil
	})
}

// pastClarifications asks memory, within its time bound; a failure is
// told and counts as none.
func (a *Agent) pastClarifications(ctx context.Context, s graph.State, request string) []PastClarification {
	user := a.userOf(ctx, s)
	if a.memory.Clarifications == nil || user == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Memory.Timeout)
	defer cancel()
	past, err := a.memory.Clarifications.PastClarifications(ctx, user, request)
	if err != nil {
		emit(ctx, events.Status{Message: fmt.Sprintf("%s (past clarifications): %v", memoryHookFailures, err), Node: NodeCognitive})
		return nil
	}
	return past
}

// reusable picks the past clarification to apply without asking.
func (a *Agent) reusable(past []PastClarification) (PastClarification, bool) {
	for _, p := range past {
		if p.ReuseCount >= a.cfg.Memory.ReuseCount && p.Confidence >= a.cfg.Memory.ReuseConfidence && strings.TrimSpace(p.Answer) != "" {
			return p, true
		}
	}
	return PastClarification{}, false
}

// record tells clarification memory, within its time bound.
func (a *Agent) record(ctx context.Context, s graph.State, rec ClarificationRecord) {
	user := a.userOf(ctx, s)
	if a.memory.Clarifications == nil || user == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Memory.Timeout)
	defer cancel()
	if err := a.memory.Clarifications.RecordClarification(ctx, user, rec); err != nil {
		emit(ctx, events.Status{Message: fmt.Sprintf("%s (recording a clarification): %v", memoryHookFailures, err), Node: NodeClarification})
	}
}

// clarification is the clarification point (document 001's
// task_clarification_approval and process_clarification_feedback): it
// asks the question, and takes an answer (clarify), no answer
// (proceed_anyway) or a past clarification (reuse_past).
func (a *Agent) clarification(ctx context.Context, s graph.State) (graph.Update, error) {
	c := CognitiveResult.Get(s)
	request := RequestText.Get(s)
	past := PastClarifications.Get(s)
	question := a.cfg.Prompts.DefaultQuestion
	var intent Intent
	var entities []Entity
	if c != nil {
		intent, entities = c.Intent, c.Entities
		if strings.TrimSpace(c.Question) != "" {
			question = c.Question
		}
	}
	req := Request{
		Kind:          KindClarification,
		Message:       question,
		Actions:       []Action{ActionClarify, ActionProceedAnyway},
		Clarification: &ClarificationRequest{Request: request, Question: question, Intent: intent, Entities: entities, Past: past},
	}
	if len(past) > 0 {
		req.Actions = append(req.Actions, ActionReusePast)
	}
	rec := func(action Action, reason string) graph.Update {
		return ApprovalHistory.Write([]ApprovalRecord{{Task: Task.Get(s), Kind: KindClarification, Action: action, By: "user", Reason: reason, Time: a.now().UTC()}}).And(
			Trace.Write([]TraceEntry{a.trace(s, events.LayerCognitive, NodeClarification, "", "clarification_"+string(action), clip(reason, 200))}))
	}
	for {
		d, err := ask(ctx, req)
		if err != nil {
			return graph.Update{}, err
		}
		switch d.Action {
		case ActionClarify:
			answer := strings.TrimSpace(d.Answer)
			if answer == "" {
				req.Problem = `clarify needs an answer: {"action": "clarify", "answer": "..."}`
				continue
			}
			a.record(ctx, s, ClarificationRecord{Thread: threadOf(ctx), Request: request, Question: question, Action: "clarify", Answer: answer})
			return RequestText.Write(request + fmt.Sprintf(a.cfg.Prompts.ClarificationAdded, answer)).And(rec(ActionClarify, answer)).Goto(NodePlanning), nil
		case ActionProceedAnyway:
			return rec(ActionProceedAnyway, d.Reason).Goto(NodePlanning), nil
		case ActionReusePast:
			p, ok := pickPast(past, d.PastID)
			if !ok {
				req.Problem = fmt.Sprintf("no past clarification %q to reuse (past: %s)", d.PastID, pastIDs(past))
				continue
			}
			a.record(ctx, s, ClarificationRecord{Thread: threadOf(ctx), Request: request, Question: question, Action: "reuse_past", Answer: p.Answer, PastID: p.ID})
			return RequestText.Write(request + fmt.Sprintf(a.cfg.Prompts.ClarificationAdded, p.Answer)).And(rec(ActionReusePast, p.ID)).Goto(NodePlanning), nil
		default:
			req.Problem = fmt.Sprintf("unknown action %q: answer %s", d.Action, actionList(req.Actions))
		}
	}
}

// pickPast finds the past clarification id names; empty picks the first
// (the best).
func pickPast(past []PastClarification, id string) (PastClarification, bool) {
	for _, p := range past {
		if id == "" || p.ID == id {
			return p, true
		}
	}
	return PastClarification{}, false
}

func pastIDs(past []PastClarification) string {
	if len(past) == 0 {
		return "none"
	}
	ids := make([]string, len(past))
	for i, p := range past {
		ids[i] = p.ID
	}
	return strings.Join(ids, ", ")
}

func actionList(as []Action) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = string(a)
	}
	return strings.Join(parts, ", ")
}

// fail tells the stream that the task failed (document 001's END with an
// error) and returns err for the node to return: the run fails, and
// nothing of the step is saved. A failed model call (not a reply that
// could not be used) is marked ErrModelFailed and coded "model_error".
func (a *Agent) fail(ctx context.Context, code string, err error) error {
	if !errors.Is(err, llm.ErrInvalidOutput) && !errors.Is(err, ErrInvalidPlan) && !errors.Is(err, context.Canceled) {
		code, err = "model_error", &modelError{err}
	}
	emit(ctx, events.End{Status: events.EndFailed, Message: err.Error(), Error: &events.Error{Code: code, Message: err.Error()}})
	return err
}

// ErrModelFailed matches a run's error when a model call failed (the
// provider's error, a timeout), as opposed to a reply that could not be
// used (llm.ErrInvalidOutput, ErrInvalidPlan).
var ErrModelFailed = errors.New("orchestrator: the model failed")

type modelError struct{ err error }

func (e *modelError) Error() string   { return e.err.Error() }
func (e *modelError) Unwrap() []error { return []error{ErrModelFailed, e.err} }
