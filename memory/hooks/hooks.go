// Package hooks connects long-term memory (package memory: document 001's
// clarification, behaviour, tool, plan and workflow memories) and a tool
// index (package tool/retrieve, BigTool) to the orchestrator's memory hooks
// (agent/orchestrator), which know neither:
//
//	exp, err := memory.NewExperience(st, memory.ExperienceOptions{})
//	a, err := orchestrator.New(orchestrator.Options{
//		...
//		Memory:    hooks.New(exp),
//		Retriever: hooks.Retriever(index), // optional: BigTool instead of the lexical default
//	})
//
// Past clarifications are offered and applied by their reuse count and
// confidence; a step's acceptance is predicted from the user's past answers
// to step approvals of its tool; tools are boosted by their success rate
// for similar steps (× 0.3 × the cold-start multiplier) and avoided after
// repeated failures; and every finished task is recorded: each attempt at
// each todo as a tool outcome, each of the user's approval answers, the plan as proposed and as
// run, and the workflow.
//
// NewBackground gives the same hooks with the writes taken off the run's
// path: queued, made by a goroutine of its own, retried, and told when
// they fail; a user's reads wait for that user's queued writes. weft run
// and weft serve wire it into the marketing agent.
package hooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tool/retrieve"
)

// BoostWeight scales a tool's success rate into its boost (document
// 001's score_boost = success_rate × 0.3).
const BoostWeight = 0.3

// New returns the orchestrator's memory hooks over exp.
func New(exp *memory.Experience) orchestrator.Memory {
	return orchestrator.Memory{
		Clarifications: Clarifications{exp.Clarifications},
		Acceptance:     Acceptance{exp.Behaviour},
		Tools:          Tools{exp.Tools},
		Recorder:       Recorder{exp},
	}
}

// Clarifications is orchestrator.ClarificationMemory over a
// memory.ClarificationMemory.
type Clarifications struct{ M *memory.ClarificationMemory }

// PastClarifications implements orchestrator.ClarificationMemory: the
// user's clarifications of similar requests, best first, with their reuse
// counts and their confidence for this request.
func (c Clarifications) PastClarifications(ctx context.Context, user, request string) ([]orchestrator.PastClarification, error) {
	found, err := c.M.FindSimilar(ctx, user, request)
	if err != nil {
		return nil, err
	}
	out := make([]orchestrator.PastClarification, len(found))
	for i, p := range found {
		out[i] = orchestrator.PastClarification{ID: p.ID, Request: p.Query, Question: strings.Join(p.Questions, " / "), Answer: p.Response,
			ReuseCount: p.ReuseCount, Confidence: p.Confidence}
	}
	return out, nil
}

// RecordClarification implements orchestrator.ClarificationMemory: a new
// answer is recorded with full confidence (the user gave it); a reuse, by
// the user's choice or applied automatically, counts as a successful reuse.
func (c Clarifications) RecordClarification(ctx context.Context, user string, rec orchestrator.ClarificationRecord) error {
	o, err := c.op(user, rec)
	if err != nil || o.do == nil {
		return err
	}
	return o.do(ctx)
}

// op is one write of what a task taught memory, named for errors.
type op struct {
	what string
	do   func(ctx context.Context) error
}

// op is the write RecordClarification makes; none (a nil do) for an
// action memory does not learn from.
func (c Clarifications) op(user string, rec orchestrator.ClarificationRecord) (op, error) {
	switch rec.Action {
	case "clarify":
		cl := memory.Clarification{Query: rec.Request, Questions: []string{rec.Question}, Response: rec.Answer, Confidence: 1}
		return op{"the clarification", func(ctx context.Context) error {
			_, err := c.M.Record(ctx, user, cl)
			return err
		}}, nil
	case "reuse_past", "auto":
		if rec.PastID == "" {
			return op{}, errors.New("hooks: a reuse without the id of the clarification reused")
		}
		id := rec.PastID
		return op{"the clarification's reuse", func(ctx context.Context) error { return c.M.MarkReused(ctx, user, id, true) }}, nil
	}
	return op{}, nil
}

// Acceptance is orchestrator.AcceptancePredictor over a
// memory.BehaviourMemory.
type Acceptance struct{ M *memory.BehaviourMemory }

// PredictAcceptance implements orchestrator.AcceptancePredictor: the
// cold-start-adjusted share of the user's "accept" answers to step
// approvals of the step's tool; unknown without samples.
func (a Acceptance) PredictAcceptance(ctx context.Context, user string, st orchestrator.Step) (float64, bool, error) {
	p, samples, err := a.M.PredictAcceptance(ctx, user, string(orchestrator.KindStep), st.Tool)
	return p, samples > 0, err
}

// Tools is orchestrator.ToolAdvisor over a memory.ToolMemory.
type Tools struct{ M *memory.ToolMemory }

// ToolAdvice implements orchestrator.ToolAdvisor: each tool that served
// similar steps is boosted by its success rate × BoostWeight × its
// cold-start confidence; tools that failed repeatedly are avoided.
func (t Tools) ToolAdvice(ctx context.Context, user, step string) (orchestrator.ToolAdvice, error) {
	stats, err := t.M.Stats(ctx, user, step)
	if err != nil {
		return orchestrator.ToolAdvice{}, err
	}
	adv := orchestrator.ToolAdvice{Boost: map[string]float64{}}
	for _, s := range stats {
		if s.ShouldAvoid {
			adv.Avoid = append(adv.Avoid, s.Tool)
			continue
		}
		if b := s.SuccessRate * BoostWeight * s.Confidence; b > 0 {
			adv.Boost[s.Tool] = b
		}
	}
	return adv, nil
}

// Recorder is orchestrator.TaskRecorder over an Experience.
type Recorder struct{ Exp *memory.Experience }

// RecordTask implements orchestrator.TaskRecorder: every todo that ran is
// a tool outcome (a todo the ReAct fallback finished is a failure of the
// recommended tool and a success of the one that worked); every answer the
// user gave at an approval point is an approval; the plan, as proposed and
// as run, is a plan outcome; and the task is a workflow run. A task
// answered as plain chat records nothing. Every record is tried; the
// errors are returned together.
func (r Recorder) RecordTask(ctx context.Context, rec orchestrator.TaskRecord) error {
	var errs []error
	for _, o := range r.ops(rec) {
		if err := o.do(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.what, err))
		}
	}
	return errors.Join(errs...)
}

// ops are the writes RecordTask makes, each holding what it writes (not
// the record, which the run may still use).
func (r Recorder) ops(rec orchestrator.TaskRecord) []op {
	if rec.Plan == nil || rec.Outcome == orchestrator.OutcomeChat {
		return nil
	}
	exp, user := r.Exp, rec.User
	var ops []op
	tool := func(o memory.ToolOutcome) {
		what := "the outcome of " + o.Tool
		ops = append(ops, op{what, func(ctx context.Context) error { return exp.Tools.RecordOutcome(ctx, user, o) }})
	}
	titles := map[string]string{}
	tools := map[string]string{}
	for _, t := range rec.Plan.Todos {
		titles[t.ID], tools[t.ID] = t.Title, t.Tool
	}
	// Every attempt at a todo is an outcome, as the trace keeps them: a
	// todo that failed, then was retried or skipped at the error point,
	// failed all the same. The attempt its result holds brings its time.
	last := map[string]string{} // by todo: its last run's event
	for _, e := range rec.Trace {
		if e.Node != orchestrator.NodeExecuteTodo || (e.Event != string(orchestrator.StatusDone) && e.Event != string(orchestrator.StatusFailed)) {
			continue
		}
		last[e.TodoID] = e.Event
		ok := e.Event == string(orchestrator.StatusDone)
		o := memory.ToolOutcome{Step: titles[e.TodoID], Tool: cmp.Or(e.Tool, tools[e.TodoID]), Success: ok}
		if !ok {
			o.Error = e.Detail
		}
		if res, has := rec.Results[e.TodoID]; has && res.Attempt == e.Attempt && string(res.Status) == e.Event {
			o.Duration, o.Error = res.Ended.Sub(res.Started), res.Error
		}
		if e.Method == "react" && tools[e.TodoID] != "" && tools[e.TodoID] != o.Tool {
			tool(memory.ToolOutcome{Step: o.Step, Tool: tools[e.TodoID], Success: false, Error: "failed; the ReAct fallback took over"})
		}
		if o.Step != "" && o.Tool != "" {
			tool(o)
		}
	}
	// The workflow failed when a todo's last run failed (whether it was
	// then skipped or the task aborted).
	failed := false
	for _, ev := range last {
		failed = failed || ev != string(orchestrator.StatusDone)
	}
	var start, end time.Time
	for _, id := range rec.Plan.Order {
		res, ok := rec.Results[id]
		if !ok || res.Status == orchestrator.StatusSkipped {
			continue
		}
		if start.IsZero() || res.Started.Before(start) {
			start = res.Started
		}
		if res.Ended.After(end) {
			end = res.Ended
		}
	}
	for _, a := range rec.Approvals {
		if a.By != "user" {
			continue // not the user's behaviour
		}
		ap := memory.Approval{Kind: string(a.Kind), Tool: tools[a.TodoID], Action: string(a.Action)}
		ops = append(ops, op{"the " + ap.Kind + " approval", func(ctx context.Context) error { return exp.Behaviour.RecordApproval(ctx, user, ap) }})
	}
	success := rec.Outcome == orchestrator.OutcomeDone && !failed
	original := rec.Plan
	if rec.OriginalPlan != nil {
		original = rec.OriginalPlan
	}
	po := memory.PlanOutcome{Query: rec.Request, Plan: planTitles(original), Accepted: rec.Outcome != orchestrator.OutcomeRejected, Success: success}
	if rec.OriginalPlan != nil {
		po.Final = planTitles(rec.Plan)
	}
	ops = append(ops, op{"the plan", func(ctx context.Context) error {
		_, err := exp.Plans.Record(ctx, user, po)
		return err
	}})
	if rec.Outcome != orchestrator.OutcomeRejected {
		wf := memory.WorkflowRun{Query: rec.Request, Steps: planTitles(rec.Plan), Success: success, Duration: end.Sub(start)}
		if c := rec.Cognition; c != nil {
			wf.Category = c.Intent.Domain + "/" + c.Intent.Category
		}
		for _, id := range rec.Plan.Order {
			if t := tools[id]; t != "" {
				wf.Tools = append(wf.Tools, t)
			}
		}
		ops = append(ops, op{"the workflow", func(ctx context.Context) error {
			_, err := exp.Workflows.Record(ctx, user, wf)
			return err
		}})
	}
	return ops
}

// planTitles lists a plan's todos' titles in its order.
func planTitles(p *orchestrator.Plan) []string {
	byID := map[string]string{}
	for _, t := range p.Todos {
		byID[t.ID] = t.Title
	}
	out := make([]string, 0, len(p.Order))
	for _, id := range p.Order {
		out = append(out, byID[id])
	}
	return out
}

// Retriever returns an orchestrator.ToolRetriever over a tool index: the
// index's ranking for the step's user (boosting and avoiding by the index's
// own tool memory, when it has one), kept to the executor's tools.
//
// With New's hooks as the agent's Memory too, give it an index without
// retrieve.Options.Outcomes: the orchestrator applies the ToolAdvisor's
// boosts and avoidances after the retriever's ranking, so an index with
// the same tool memory would count each tool's record twice.
func Retriever(x *retrieve.Index) orchestrator.ToolRetriever { return retriever{x} }

type retriever struct{ x *retrieve.Index }

// candidates is how many more hits than asked for are read when the
// answer is kept to some tools: the others are dropped after ranking.
const candidates = 4

func (r retriever) RetrieveTools(ctx context.Context, req orchestrator.RetrieveRequest) ([]orchestrator.ScoredTool, error) {
	k := req.K
	if req.Among != nil {
		k = max(k*candidates, len(req.Among))
	}
	hits, err := r.x.SearchFor(ctx, req.User, req.Query, k)
	if err != nil {
		return nil, err
	}
	var out []orchestrator.ScoredTool
	for _, h := range hits {
		if req.Among != nil && !slices.Contains(req.Among, h.Spec.Name) {
			continue
		}
		out = append(out, orchestrator.ScoredTool{Name: h.Spec.Name, Score: h.Score})
		if len(out) == req.K {
			break
		}
	}
	return out, nil
}
