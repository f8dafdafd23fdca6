package planner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/approval/planner"
	"github.com/weftlabs/weft/graph"
)

const goal = "plan a team offsite"

// session drives one thread of the planner and counts the tasks that
// started, by node, over all of its runs.
type session struct {
	t      *testing.T
	g      *graph.Graph
	thread string
	runs   map[string]int
}

func newSession(t *testing.T) *session {
	t.Helper()
	g, err := planner.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, g: g, thread: t.Name(), runs: map[string]int{}}
}

// run runs the graph with in and returns the interrupts it stopped at.
func (s *session) run(in graph.Update) []graph.Interruption {
	s.t.Helper()
	var its []graph.Interruption
	opts := graph.RunOptions{ThreadID: s.thread, StreamModes: []graph.StreamMode{graph.StreamTasks, graph.StreamUpdates}}
	for ev, err := range s.g.Stream(context.Background(), in, &opts) {
		if err != nil {
			s.t.Fatalf("run: %v", err)
		}
		switch d := ev.Data.(type) {
		case graph.TaskStart:
			s.runs[d.Name]++
		case graph.NodeUpdate:
			if d.Node == "__interrupt__" {
				its = append(its, d.Interrupts...)
			}
		}
	}
	return its
}

// ask starts the run and returns the question it stops at.
func (s *session) ask() planner.PlanQuestion {
	s.t.Helper()
	its := s.run(planner.Input(goal))
	return s.question(its)
}

func (s *session) question(its []graph.Interruption) planner.PlanQuestion {
	s.t.Helper()
	if len(its) != 1 {
		s.t.Fatalf("run stopped at %d interrupts, want 1: %+v", len(its), its)
	}
	q, err := planner.QuestionOf(its[0].Value)
	if err != nil {
		s.t.Fatal(err)
	}
	return q
}

func (s *session) state() graph.StateSnapshot {
	s.t.Helper()
	snap, err := s.g.GetState(context.Background(), checkpoint.Config{ThreadID: s.thread}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return snap
}

func TestApprove(t *testing.T) {
	s := newSession(t)
	q := s.ask()
	steps := planner.MakePlan(goal)
	if diff := cmp.Diff(planner.PlanQuestion{Goal: goal, Plan: steps, Actions: []planner.Action{planner.Approve, planner.Edit, planner.Reject}}, q); diff != "" {
		t.Fatalf("question (-want +got):\n%s", diff)
	}
	if next := s.state().Next; !cmp.Equal(next, []string{planner.NodeApprove}) {
		t.Fatalf("paused before %v, want [approve]", next)
	}
	// The question read back from the checkpoint is the same question.
	saved := s.state().Interrupts
	if len(saved) != 1 {
		t.Fatalf("checkpoint holds %d interrupts, want 1", len(saved))
	}
	if got, err := planner.QuestionOf(saved[0].Value); err != nil || !cmp.Equal(got, q) {
		t.Fatalf("saved question = %+v, %v; want %+v", got, err, q)
	}

	if its := s.run(graph.Resume(planner.Decision{Action: planner.Approve})); len(its) != 0 {
		t.Fatalf("resumed run stopped again: %+v", its)
	}
	snap := s.state()
	v := snap.Values
	if !planner.Approved.Get(v) {
		t.Error("approved = false")
	}
	want := make([]string, len(steps))
	for i, st := range steps {
		want[i] = "done: " + st
	}
	if diff := cmp.Diff(want, planner.Results.Get(v)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if got := planner.Feedback.Get(v); got != "approved" {
		t.Errorf("feedback = %q", got)
	}
	if sum := planner.Summary.Get(v); !strings.HasPrefix(sum, "5 of 5 steps done for \"plan a team offsite\"") {
		t.Errorf("summary = %q", sum)
	}
	if len(snap.Next) != 0 {
		t.Errorf("next = %v after the end", snap.Next)
	}
	// approve ran twice: stopped at the question, then again from its top
	// with the answer; execute once per step.
	wantRuns := map[string]int{planner.NodePlan: 1, planner.NodeApprove: 2, planner.NodeExecute: len(steps), planner.NodeSummarize: 1}
	if diff := cmp.Diff(wantRuns, s.runs); diff != "" {
		t.Errorf("tasks started (-want +got):\n%s", diff)
	}
}

func TestEdit(t *testing.T) {
	s := newSession(t)
	s.ask()
	s.run(graph.Resume(planner.Decision{Action: planner.Edit, Steps: []string{" book a cabin ", "", "buy snacks"}, Reason: "keep it small"}))
	v := s.state().Values
	if diff := cmp.Diff([]string{"book a cabin", "buy snacks"}, planner.Plan.Get(v)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"done: book a cabin", "done: buy snacks"}, planner.Results.Get(v)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if got, want := planner.Feedback.Get(v), "approved, edited to 2 steps: keep it small"; got != want {
		t.Errorf("feedback = %q, want %q", got, want)
	}
	wantRuns := map[string]int{planner.NodePlan: 1, planner.NodeApprove: 2, planner.NodeExecute: 2, planner.NodeSummarize: 1}
	if diff := cmp.Diff(wantRuns, s.runs); diff != "" {
		t.Errorf("tasks started (-want +got):\n%s", diff)
	}
}

func TestReject(t *testing.T) {
	s := newSession(t)
	s.ask()
	s.run(graph.Resume(planner.Decision{Action: planner.Reject, Reason: "too expensive"}))
	snap := s.state()
	v := snap.Values
	if planner.Approved.Get(v) {
		t.Error("approved = true")
	}
	if got := planner.Results.Get(v); len(got) != 0 {
		t.Errorf("results = %q, want none", got)
	}
	if got, want := planner.Feedback.Get(v), "rejected: too expensive"; got != want {
		t.Errorf("feedback = %q, want %q", got, want)
	}
	if got, want := planner.Summary.Get(v), `plan for "plan a team offsite" rejected; nothing was done`; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
	if len(snap.Next) != 0 || len(snap.Interrupts) != 0 {
		t.Errorf("run did not end: next %v, interrupts %v", snap.Next, snap.Interrupts)
	}
	wantRuns := map[string]int{planner.NodePlan: 1, planner.NodeApprove: 2}
	if diff := cmp.Diff(wantRuns, s.runs); diff != "" {
		t.Errorf("tasks started (-want +got):\n%s", diff)
	}
}

func TestUnusableAnswerIsAskedAgain(t *testing.T) {
	s := newSession(t)
	s.ask()
	tests := []struct {
		answer  planner.Decision
		problem string
	}{
		{planner.Decision{Action: planner.Edit, Steps: []string{" ", ""}}, "the edited plan has no steps; give at least one"},
		{planner.Decision{Action: "maybe"}, `unknown action "maybe": answer "approve", "edit" or "reject"`},
	}
	for _, tt := range tests {
		q := s.question(s.run(graph.Resume(tt.answer)))
		if q.Problem != tt.problem {
			t.Errorf("after %+v: problem = %q, want %q", tt.answer, q.Problem, tt.problem)
		}
		if !cmp.Equal(q.Plan, planner.MakePlan(goal)) {
			t.Errorf("after %+v: plan changed to %q", tt.answer, q.Plan)
		}
	}
	s.run(graph.Resume(planner.Decision{Action: planner.Approve}))
	if got := len(planner.Results.Get(s.state().Values)); got != 5 {
		t.Errorf("%d results, want 5", got)
	}
	if got := s.runs[planner.NodeApprove]; got != 4 {
		t.Errorf("approve started %d times, want 4 (one per answer and the first question)", got)
	}
}

func TestNoGoal(t *testing.T) {
	g, err := planner.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), planner.Input("  "), &graph.RunOptions{ThreadID: "empty"})
	if !errors.Is(err, planner.ErrNoGoal) {
		t.Fatalf("err = %v, want ErrNoGoal", err)
	}
}

func TestMakePlan(t *testing.T) {
	tests := []struct {
		goal  string
		first string
		n     int
	}{
		{"plan a team offsite", "pick the dates", 5},
		{"Ship the 2.0 release", "freeze the scope", 4},
		{"learn Go", "define what done means for: learn Go", 4},
	}
	for _, tt := range tests {
		got := planner.MakePlan(tt.goal)
		if len(got) != tt.n || got[0] != tt.first {
			t.Errorf("MakePlan(%q) = %q; want %d steps starting with %q", tt.goal, got, tt.n, tt.first)
		}
	}
}
