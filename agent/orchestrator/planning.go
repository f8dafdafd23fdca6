package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// planDraft is what the planning model returns.
type planDraft struct {
	Summary string      `json:"summary" jsonschema:"the plan in one sentence"`
	Todos   []todoDraft `json:"todos" jsonschema:"the todos, in the order they would run one after another"`
}

type todoDraft struct {
	ID        string         `json:"id" jsonschema:"a short id: t1, t2, ..."`
	Title     string         `json:"title" jsonschema:"what the todo does, in a few words"`
	Executor  string         `json:"executor" jsonschema:"the executor that runs it, one of those listed"`
	Tool      string         `json:"tool" jsonschema:"one of that executor's tools"`
	Params    map[string]any `json:"params,omitempty" jsonschema:"the tool's arguments, matching its schema"`
	DependsOn []string       `json:"depends_on,omitempty" jsonschema:"ids of the todos whose results this one needs; empty when none"`
}

// planning is document 003's planning layer (document 001's
// dynamic_planning): todos from the intent and the tool catalogue through
// structured output, checked (known executors and tools, parameters the
// tool accepts, dependencies that exist and form no cycle), with one
// repair attempt; then ordered, estimated and drawn.
func (a *Agent) planning(ctx context.Context, s graph.State) (graph.Update, error) {
	emit(ctx, events.LayerStart{Layer: events.LayerPlanning, Node: NodePlanning})
	request := RequestText.Get(s)
	var intent strings.Builder
	if c := CognitiveResult.Get(s); c != nil {
		fmt.Fprintf(&intent, "Intent: %s / %s / %s\n", c.Intent.Domain, c.Intent.Category, c.Intent.Subcategory)
		for _, e := range c.Entities {
			fmt.Fprintf(&intent, "Entity: %s = %s\n", e.Type, e.Value)
		}
	}
	msgs := []llm.Message{llm.System(a.cfg.Prompts.Planning), a.requestPrompt(s, request, intent.String(), a.catalogue())}
	opts := &llm.StructuredOptions{Name: "plan", Description: "The plan: todos with their executor, tool, parameters and dependencies.", Method: a.structuredMethod()}
	var plan *Plan
	_, err := structured(ctx, a.models.Planning, msgs, opts, func(d planDraft) error {
		p, err := a.makePlan(Task.Get(s), request, d.Summary, draftTodos(d.Todos), 1)
		plan = p
		return err
	})
	if err != nil {
		// Nothing is written: the run fails at this step, and the plan
		// files are not saved.
		return graph.Update{}, a.fail(ctx, "invalid_plan", fmt.Errorf("planning: %w", err))
	}
	files := a.savePlan(ctx, s, plan)
	detail := fmt.Sprintf("%d todos, %s, ~%.0fs (critical path %.0fs)", len(plan.Todos), plan.Strategy, plan.Estimate.Seconds, plan.Estimate.CriticalSeconds)
	if files != "" {
		detail += ", saved in " + files
	}
	emit(ctx, events.Status{Message: "plan: " + detail, Node: NodePlanning})
	emit(ctx, sessionState(threadOf(ctx), Task.Get(s), events.LayerPlanning, plan.Todos))
	return PlanState.Write(plan).And(
		OriginalPlan.Write(plan),
		Todos.Write(plan.Todos),
		Trace.Write([]TraceEntry{a.trace(s, events.LayerPlanning, NodePlanning, "", "planned", detail)}),
	).Goto(NodePlanApproval), nil
}

// draftTodos turns the model's draft into version-1 pending todos.
func draftTodos(drafts []todoDraft) []Todo {
	todos := make([]Todo, len(drafts))
	for i, d := range drafts {
		var params json.RawMessage
		if d.Params != nil {
			params, _ = json.Marshal(d.Params)
		}
		todos[i] = Todo{ID: strings.TrimSpace(d.ID), Title: strings.TrimSpace(d.Title), Executor: strings.TrimSpace(d.Executor),
			Tool: strings.TrimSpace(d.Tool), Params: params, DependsOn: d.DependsOn, Status: StatusPending, Version: 1}
	}
	return todos
}

// catalogue describes the executors and their tools for the planner.
func (a *Agent) catalogue() string {
	var b strings.Builder
	b.WriteString("Executors and their tools (parameters as JSON Schema):\n")
	for _, name := range a.order {
		e := a.executors[name]
		if len(e.Tools) == 0 && e.Run == nil {
			continue
		}
		fmt.Fprintf(&b, "\nexecutor %s: %s\n", name, e.Description)
		for _, t := range e.Tools {
			spec := t.Spec()
			fmt.Fprintf(&b, "- tool %s: %s\n  parameters: %s\n", spec.Name, spec.Description, compact(spec.Parameters))
		}
	}
	return b.String()
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// makePlan checks todos and builds the plan over them.
func (a *Agent) makePlan(task int, request, summary string, todos []Todo, revision int) (*Plan, error) {
	order, levels, err := a.checkTodos(todos)
	if err != nil {
		return nil, err
	}
	p := &Plan{Task: task, Request: request, Summary: strings.TrimSpace(summary), Todos: todos, Order: order, Levels: levels,
		Strategy: DecideStrategy(levels), Revision: revision, Edited: revision > 1}
	p.Estimate = estimate(todos, order, func(t Todo) (float64, float64) {
		secs, cost := 1.0, 0.0
		if ts := a.tools[t.Tool]; ts != nil {
			if ts.conf.Seconds > 0 {
				secs = ts.conf.Seconds
			}
			cost = ts.conf.Cost
		}
		return secs, cost
	})
	p.Mermaid = Mermaid(todos)
	return p, nil
}

// checkTodos validates todos against the catalogue and orders them. It
// fills an empty executor from the tool and an empty params with {}. Every
// problem is reported at once (a *PlanError); when there is none, a cycle
// is a *CycleError.
func (a *Agent) checkTodos(todos []Todo) (order []string, levels [][]string, err error) {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if len(todos) == 0 {
		return nil, nil, &PlanError{Problems: []string{"the plan has no todos"}}
	}
	if len(todos) > a.cfg.Planning.MaxTodos {
		bad("%d todos, more than planning.max_todos (%d)", len(todos), a.cfg.Planning.MaxTodos)
	}
	ids := map[string]bool{}
	for i := range todos {
		t := &todos[i]
		where := fmt.Sprintf("todo %d", i+1)
		if t.ID != "" {
			where = "todo " + t.ID
		}
		switch {
		case t.ID == "":
			bad("%s has no id", where)
		case ids[t.ID]:
			bad("the id %s is used twice", t.ID)
		}
		ids[t.ID] = true
		if t.Title == "" {
			bad("%s has no title", where)
		}
		ts := a.tools[t.Tool]
		if ts != nil && ts.conf.Disabled {
			ts = nil
		}
		if t.Executor == "" && ts != nil {
			t.Executor = ts.executor
		}
		e := a.executors[t.Executor]
		switch {
		case e == nil:
			bad("%s: no executor %q (executors: %s)", where, t.Executor, strings.Join(a.order, ", "))
			continue
		case t.Tool == "" && e.Run != nil:
			continue // the executor runs it its own way
		case t.Tool == "":
			bad("%s has no tool (tools of %s: %s)", where, t.Executor, strings.Join(e.names, ", "))
			continue
		case ts == nil:
			bad("%s: no tool %q (tools of %s: %s)", where, t.Tool, t.Executor, strings.Join(e.names, ", "))
			continue
		case ts.executor != t.Executor:
			bad("%s: tool %s belongs to executor %s, not %s", where, t.Tool, ts.executor, t.Executor)
			continue
		}
		if len(bytes.TrimSpace(t.Params)) == 0 || string(bytes.TrimSpace(t.Params)) == "null" {
			t.Params = json.RawMessage("{}")
		}
		if err := ts.tool.Validate(t.Params); err != nil {
			bad("%s: parameters %s: %v", where, compact(t.Params), err)
		}
	}
	for _, t := range todos {
		seen := map[string]bool{}
		for _, d := range t.DependsOn {
			switch {
			case d == t.ID:
				bad("todo %s depends on itself", t.ID)
			case !ids[d]:
				bad("todo %s depends on %q, which is not a todo of the plan", t.ID, d)
			case seen[d]:
				bad("todo %s lists %s twice in depends_on", t.ID, d)
			}
			seen[d] = true
		}
	}
	if len(probs) > 0 {
		return nil, nil, &PlanError{Problems: probs}
	}
	return Order(todos)
}

// planApproval is the plan approval point (document 001's plan_approval
// and process_plan_feedback): accept runs the plan; edit replaces it with
// the edited plan, checked again (asked again when it is invalid); reject
// goes to the response, which says so.
func (a *Agent) planApproval(ctx context.Context, s graph.State) (graph.Update, error) {
	plan := PlanState.Get(s)
	if plan == nil {
		return graph.Update{}, fmt.Errorf("orchestrator: %s ran without a plan", NodePlanApproval)
	}
	record := func(action Action, by, reason string) graph.Update {
		return ApprovalHistory.Write([]ApprovalRecord{{Task: plan.Task, Kind: KindPlan, Action: action, By: by, Reason: reason, Time: a.now().UTC()}}).And(
			Trace.Write([]TraceEntry{a.trace(s, events.LayerPlanning, NodePlanApproval, "", "plan_"+string(action), clip(reason, 200))}))
	}
	if !a.asks || !a.cfg.Approvals.askAt(a.cfg.Approvals.Plan) {
		return record(ActionAccept, "auto", "").Goto(NodeDispatcher), nil
	}
	req := Request{Kind: KindPlan, Message: fmt.Sprintf("Run this plan of %d todos?", len(plan.Todos)), Actions: []Action{ActionAccept, ActionEdit, ActionReject}, Plan: plan}
	for {
		d, err := ask(ctx, req)
		if err != nil {
			return graph.Update{}, err
		}
		switch d.Action {
		case ActionAccept:
			return record(ActionAccept, "user", d.Reason).Goto(NodeDispatcher), nil
		case ActionReject:
			return record(ActionReject, "user", d.Reason).And(Outcome.Write(OutcomeRejected), Reason.Write(strings.TrimSpace(d.Reason))).Goto(NodeResponse), nil
		case ActionEdit:
			if d.Plan == nil || len(d.Plan.Todos) == 0 {
				req.Problem = `edit needs the edited plan: {"action": "edit", "plan": {"todos": [...]}}`
				continue
			}
			edited, err := a.editedPlan(plan, d.Plan)
			if err != nil {
				req.Problem = err.Error()
				continue
			}
			a.savePlan(ctx, s, edited)
			emit(ctx, events.Status{Message: fmt.Sprintf("plan edited: %d todos, %s", len(edited.Todos), edited.Strategy), Node: NodePlanApproval})
			emit(ctx, sessionState(threadOf(ctx), plan.Task, events.LayerPlanning, edited.Todos))
			// The edited plan replaces the todos: a todo left out of it
			// is gone, not kept by the merge.
			return PlanState.Write(edited).And(Todos.Overwrite(edited.Todos), record(ActionEdit, "user", d.Reason)).Goto(NodeDispatcher), nil
		default:
			req.Problem = fmt.Sprintf("unknown action %q: answer %s", d.Action, actionList(req.Actions))
		}
	}
}

// editedPlan checks a person's edit of plan and builds the next revision:
// a todo kept from the plan is its next version, a new one version 1.
func (a *Agent) editedPlan(plan *Plan, e *EditedPlan) (*Plan, error) {
	old := map[string]Todo{}
	for _, t := range plan.Todos {
		old[t.ID] = t
	}
	todos := make([]Todo, len(e.Todos))
	for i, t := range e.Todos {
		n := Todo{ID: strings.TrimSpace(t.ID), Title: strings.TrimSpace(t.Title), Executor: strings.TrimSpace(t.Executor), Tool: strings.TrimSpace(t.Tool),
			Params: slices.Clone(t.Params), DependsOn: slices.Clone(t.DependsOn), Status: StatusPending, Version: 1}
		if o, ok := old[n.ID]; ok {
			n.Version = o.Version + 1
		}
		todos[i] = n
	}
	summary := e.Summary
	if summary == "" {
		summary = plan.Summary
	}
	return a.makePlan(plan.Task, plan.Request, summary, todos, plan.Revision+1)
}
