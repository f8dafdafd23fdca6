// Package planner is the graph of the approval example: a planner that
// asks a human to approve its plan before it carries the plan out.
//
// The graph runs plan → approve → execute (one task per step, in
// parallel) → summarize. The approve node stops the run with
// graph.Interrupt and waits, saved in the checkpointer, until the run is
// resumed with graph.Resume(Decision{...}): approve carries the plan out,
// edit replaces it first, and reject ends the run with a message. Nothing
// here calls a model: the plan comes from plain Go code, so the example
// runs anywhere and always the same way.
package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// The graph's state. Each channel is a JSON key of the state.
var (
	// Goal is what the user wants done; it is the run's input.
	Goal = graph.Value[string]("goal")
	// Plan is the list of steps, as planned or as the reviewer edited it
	// (state key "steps": a node is named "plan", and a channel may not
	// share a node's name).
	Plan = graph.Value[[]string]("steps")
	// Approved says whether the reviewer let the plan run.
	Approved = graph.Value[bool]("approved")
	// Results collects what each step produced; the execute tasks of one
	// step all append to it, in the order of the plan.
	Results = graph.Reduce("results", func(current, update []string) []string {
		return append(append([]string(nil), current...), update...)
	})
	// Feedback is the reviewer's decision in words.
	Feedback = graph.Value[string]("feedback")
	// Summary is the run's final report.
	Summary = graph.Value[string]("summary")
	// Step is the input of one execute task: it travels in the task's
	// Send and is not part of the graph's state.
	Step = graph.Value[string]("step")
)

// Node names.
const (
	NodePlan      = "plan"
	NodeApprove   = "approve"
	NodeExecute   = "execute"
	NodeSummarize = "summarize"
)

// Action is what the reviewer decides about a plan.
type Action string

// The reviewer's choices.
const (
	// Approve runs the plan as it is.
	Approve Action = "approve"
	// Edit replaces the plan with Decision.Steps and runs that.
	Edit Action = "edit"
	// Reject ends the run without running anything.
	Reject Action = "reject"
)

// Decision is the reviewer's answer to a PlanQuestion: the value a run is
// resumed with, graph.Resume(planner.Decision{Action: planner.Approve}).
type Decision struct {
	Action Action `json:"action"`
	// Steps is the new plan, for Edit.
	Steps []string `json:"steps,omitempty"`
	// Reason is an optional comment, kept in Feedback.
	Reason string `json:"reason,omitempty"`
}

// PlanQuestion is what the approve node asks the reviewer: the value of
// the run's interrupt.
type PlanQuestion struct {
	Goal string   `json:"goal"`
	Plan []string `json:"plan"`
	// Problem says what was wrong with the previous answer, when the
	// question is asked again.
	Problem string `json:"problem,omitempty"`
	// Actions are the answers the question takes (approve, edit,
	// reject), so that a client that does not know the planner (a web
	// page's generic form) can offer them.
	Actions []Action `json:"actions,omitempty"`
}

// QuestionOf reads a PlanQuestion from an interrupt's value: the value
// itself in the run that stopped, or its JSON form when the interrupt was
// read back from a checkpoint.
func QuestionOf(v any) (PlanQuestion, error) {
	if q, ok := v.(PlanQuestion); ok {
		return q, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return PlanQuestion{}, fmt.Errorf("planner: interrupt value %T is not a PlanQuestion: %w", v, err)
	}
	var q PlanQuestion
	if err := json.Unmarshal(data, &q); err != nil {
		return PlanQuestion{}, fmt.Errorf("planner: interrupt value %s is not a PlanQuestion: %w", data, err)
	}
	return q, nil
}

// ErrNoGoal is the plan node's error for a run started without a goal.
var ErrNoGoal = errors.New("planner: the goal is empty: start the run with planner.Input(\"what you want done\")")

// Input is a run's input: the goal to plan for.
func Input(goal string) graph.Update { return Goal.Write(goal) }

// Build compiles the planner graph. It stops for a human, so it needs a
// checkpointer: saver keeps each thread's progress (a durable one lets a
// paused run be resumed by another process); nil keeps it in memory for
// as long as the program runs.
func Build(saver *checkpoint.Saver) (*graph.Graph, error) {
	if saver == nil {
		saver = checkpoint.NewMemory()
	}
	return graph.New(Goal, Plan, Approved, Results, Feedback, Summary).AddNode(
		NodePlan, plan, nil).AddNode(

		NodeApprove, approve, nil).
		AddNode(

			NodeExecute, execute, &graph.NodeOptions{Input: []graph.Channel{Step}}).AddNode(

		NodeSummarize, summarize, nil).
		AddEdge(graph.START, NodePlan).
		AddEdge(NodePlan, NodeApprove).AddConditionalEdges(

		NodeApprove, afterApproval, &graph.BranchOptions{PathMap: map[string]string{
			NodeExecute: NodeExecute,
			"rejected":  graph.END,
		}}).
		AddEdge(NodeExecute, NodeSummarize).
		AddEdge(NodeSummarize, graph.END).Compile(&graph.CompileOptions{Checkpointer: saver, Name: "approval"})

}

// MakePlan turns a goal into steps. It stands in for a planning model:
// a few keywords pick a template.
func MakePlan(goal string) []string {
	g := strings.ToLower(goal)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(g, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("offsite", "trip", "event", "party", "retreat", "conference"):
		return []string{"pick the dates", "book a venue", "arrange travel", "plan the agenda", "send the invitations"}
	case has("launch", "release", "ship"):
		return []string{"freeze the scope", "test the release candidate", "write the release notes", "announce the launch"}
	default:
		return []string{"define what done means for: " + goal, "list the tasks", "do the tasks", "review the result"}
	}
}

func plan(ctx context.Context, s graph.State) (graph.Update, error) {
	goal := strings.TrimSpace(Goal.Get(s))
	if goal == "" {
		return graph.Update{}, ErrNoGoal
	}
	return Plan.Write(MakePlan(goal)), nil
}

// approve asks the reviewer until it gets an answer it can use. When the
// run is resumed the node runs again from its top, and its k-th Ask returns
// the k-th answer, so earlier answers replay unchanged.
func approve(ctx context.Context, s graph.State) (graph.Update, error) {
	q := PlanQuestion{Goal: Goal.Get(s), Plan: Plan.Get(s), Actions: []Action{Approve, Edit, Reject}}
	for {
		d := graph.Ask[Decision](ctx, q)
		switch d.Action {
		case Approve:
			return Approved.Write(true).And(Feedback.Write(withReason("approved", d.Reason))), nil
		case Edit:
			steps := CleanSteps(d.Steps)
			if len(steps) == 0 {
				q.Problem = "the edited plan has no steps; give at least one"
				continue
			}
			return Plan.Write(steps).And(
				Approved.Write(true),
				Feedback.Write(withReason(fmt.Sprintf("approved, edited to %d steps", len(steps)), d.Reason)),
			), nil
		case Reject:
			return Approved.Write(false).And(
				Feedback.Write(withReason("rejected", d.Reason)),
				Summary.Write(fmt.Sprintf("plan for %q rejected; nothing was done", q.Goal)),
			), nil
		default:
			q.Problem = fmt.Sprintf("unknown action %q: answer %q, %q or %q", d.Action, Approve, Edit, Reject)
		}
	}
}

func withReason(s, reason string) string {
	if reason = strings.TrimSpace(reason); reason != "" {
		return s + ": " + reason
	}
	return s
}

// CleanSteps trims the steps and drops empty ones.
func CleanSteps(steps []string) []string {
	out := make([]string, 0, len(steps))
	for _, st := range steps {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// afterApproval fans out: one execute task per step, each with its own
// Step, all in the same superstep.
func afterApproval(ctx context.Context, s graph.State) (graph.Route, error) {
	if !Approved.Get(s) {
		return graph.To("rejected"), nil
	}
	steps := Plan.Get(s)
	sends := make([]graph.Send, len(steps))
	for i, st := range steps {
		sends[i] = graph.Send{Node: NodeExecute, Arg: Step.Write(st)}
	}
	return graph.Sends(sends...), nil
}

func execute(ctx context.Context, s graph.State) (graph.Update, error) {
	return Results.Write([]string{"done: " + Step.Get(s)}), nil
}

func summarize(ctx context.Context, s graph.State) (graph.Update, error) {
	results := Results.Get(s)
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d steps done for %q (%s)", len(results), len(Plan.Get(s)), Goal.Get(s), Feedback.Get(s))
	for _, r := range results {
		b.WriteString("\n  - " + r)
	}
	return Summary.Write(b.String()), nil
}
