package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm/scripted"
)

func resume(d orchestrator.Decision) graph.Update { return graph.Resume(d) }

// memory is a test memory: past clarifications to offer, what it was
// told, and an acceptance prediction.
type memory struct {
	mu       sync.Mutex
	past     []orchestrator.PastClarification
	recorded []orchestrator.ClarificationRecord
	accept   *float64
	tasks    []orchestrator.TaskRecord
}

func (m *memory) PastClarifications(context.Context, string, string) ([]orchestrator.PastClarification, error) {
	return m.past, nil
}

func (m *memory) RecordClarification(_ context.Context, _ string, rec orchestrator.ClarificationRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recorded = append(m.recorded, rec)
	return nil
}

func (m *memory) PredictAcceptance(context.Context, string, orchestrator.Step) (float64, bool, error) {
	if m.accept == nil {
		return 0, false, nil
	}
	return *m.accept, true, nil
}

func (m *memory) RecordTask(_ context.Context, rec orchestrator.TaskRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tasks = append(m.tasks, rec)
	return nil
}

// planningPrompt returns the text of the planning call's request.
func planningPrompt(t *testing.T, model *scripted.Model) string {
	t.Helper()
	for _, r := range model.Requests() {
		if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Text(), "You plan a task") {
			return r.Messages[len(r.Messages)-1].Text()
		}
	}
	t.Fatal("no planning call")
	return ""
}

func TestClarification(t *testing.T) {
	past := []orchestrator.PastClarification{{ID: "p1", Request: "sales trend", Question: "which period?", Answer: "the last 30 days", ReuseCount: 2, Confidence: 0.95}}
	tests := []struct {
		name     string
		past     []orchestrator.PastClarification
		answers  []orchestrator.Decision
		problems int
		// want is in the planning request; notWant is not.
		want, notWant string
		recorded      []string // actions told to memory
		by            string   // who decided, in the approval history
	}{
		{name: "clarify", answers: []orchestrator.Decision{{Action: "clarify"}, {Action: "clarify", Answer: "running shoes"}}, problems: 1,
			want: "Additional information: running shoes", recorded: []string{"clarify"}, by: "user"},
		{name: "proceed anyway", answers: []orchestrator.Decision{{Action: "proceed_anyway"}},
			notWant: "Additional information", by: "user"},
		{name: "reuse past", past: past, answers: []orchestrator.Decision{{Action: "reuse_past", PastID: "p9"}, {Action: "reuse_past", PastID: "p1"}}, problems: 1,
			want: "Additional information: the last 30 days", recorded: []string{"reuse_past"}, by: "user"},
		{name: "unknown action", answers: []orchestrator.Decision{{Action: "maybe"}, {Action: "proceed_anyway"}}, problems: 1, by: "user"},
		{name: "reused automatically", past: []orchestrator.PastClarification{{ID: "p2", Answer: "women's shoes", ReuseCount: 5, Confidence: 0.9}},
			want: "Additional information: women's shoes", recorded: []string{"auto"}, by: "memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fixture{}
			mem := &memory{past: tt.past}
			model := scripted.New(ambiguous("Which product do you mean?"), plan(fetch("t1", "sales")), llmAnswer("ok"))
			a := newAgent(t, f, model, setup{memory: orchestrator.Memory{Clarifications: mem}})
			r := drive(t, a, "th", orchestrator.Input("show me the sales trend", "u1"))
			problems := 0
			for _, d := range tt.answers {
				if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindClarification {
					t.Fatalf("err %v, stop %+v; want the clarification", r.err, r.stop)
				}
				if r.stop.Problem != "" {
					problems++
				}
				c := r.stop.Clarification
				if c.Question != "Which product do you mean?" || c.Request != "show me the sales trend" || len(c.Past) != len(tt.past) {
					t.Errorf("clarification payload %+v", c)
				}
				if hi := named[events.HITLRequest](r.events); len(hi) != 1 || hi[0].Kind != "clarification" {
					t.Errorf("hitl_request events %+v", hi)
				}
				r = drive(t, a, "th", resume(d))
			}
			if problems != tt.problems {
				t.Errorf("asked again %d times, want %d", problems, tt.problems)
			}
			if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindPlan {
				t.Fatalf("err %v, stop %+v; want the plan approval", r.err, r.stop)
			}
			prompt := planningPrompt(t, model)
			if tt.want != "" {
				contains(t, "planning request", prompt, tt.want)
			}
			if tt.notWant != "" && strings.Contains(prompt, tt.notWant) {
				t.Errorf("planning request %q has %q", prompt, tt.notWant)
			}
			var actions []string
			for _, rec := range mem.recorded {
				actions = append(actions, rec.Action)
			}
			if diff := cmp.Diff(tt.recorded, actions); diff != "" {
				t.Errorf("recorded (-want +got):\n%s", diff)
			}
			hist := orchestrator.ApprovalHistory.Get(r.state)
			if len(hist) == 0 || hist[0].Kind != orchestrator.KindClarification || hist[0].By != tt.by {
				t.Errorf("approval history %+v, want a clarification by %s", hist, tt.by)
			}
		})
	}
}

// With the clarification point off, an ambiguous request is planned as
// asked.
func TestClarificationOff(t *testing.T) {
	model := scripted.New(ambiguous("Which?"), plan(fetch("t1", "sales")), llmAnswer("ok"))
	a := newAgent(t, &fixture{}, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Clarification = false; c.Approvals.Plan = false }})
	r := drive(t, a, "th", orchestrator.Input("sales trend", ""))
	if r.err != nil || r.stop != nil || answer(r.state) != "ok" {
		t.Fatalf("err %v stop %+v answer %q", r.err, r.stop, answer(r.state))
	}
}

func TestPlanApproval(t *testing.T) {
	edited := &orchestrator.EditedPlan{Todos: []orchestrator.Todo{
		{ID: "t1", Title: "fetch orders", Executor: "data", Tool: "fetch", Params: json.RawMessage(`{"kind":"orders"}`)},
		{ID: "t3", Title: "combine", Executor: "insight", Tool: "combine", DependsOn: []string{"t1"}},
	}}
	cyclic := &orchestrator.EditedPlan{Todos: []orchestrator.Todo{
		{ID: "t1", Title: "fetch", Tool: "fetch", Params: json.RawMessage(`{"kind":"a"}`), DependsOn: []string{"t3"}},
		{ID: "t3", Title: "combine", Tool: "combine", DependsOn: []string{"t1"}},
	}}
	tests := []struct {
		name      string
		answers   []orchestrator.Decision
		problems  []string
		calls     []string
		answer    string
		end       string
		revision  int
		statusOf  map[string]orchestrator.Status
		respFirst bool
	}{
		{name: "accept", answers: []orchestrator.Decision{{Action: "accept"}},
			calls: []string{"fetch:sales", "fetch:visits", "combine:11"}, answer: "the answer", end: "done", revision: 1,
			statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "done", "t3": "done"}},
		{name: "edit", answers: []orchestrator.Decision{{Action: "edit"}, {Action: "edit", Plan: cyclic}, {Action: "edit", Plan: edited}},
			problems: []string{"edit needs the edited plan", "dependency cycle: t1 → t3 → t1"},
			calls:    []string{"fetch:orders", "combine:6"}, answer: "the answer", end: "done", revision: 2,
			statusOf: map[string]orchestrator.Status{"t1": "done", "t3": "done"}},
		{name: "reject", answers: []orchestrator.Decision{{Action: "reject", Reason: "too broad"}},
			answer: "The plan was rejected, so nothing was run. (too broad)", end: "rejected", revision: 1,
			statusOf: map[string]orchestrator.Status{"t1": "pending", "t2": "pending", "t3": "pending"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fixture{}
			model := scripted.New(cognition(), plan(fetch("t1", "sales"), fetch("t2", "visits"), combine("t3", "t1", "t2")), llmAnswer("the answer"))
			a := newAgent(t, f, model, setup{})
			r := drive(t, a, "th", orchestrator.Input("analyse", ""))
			var problems []string
			for _, d := range tt.answers {
				if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindPlan {
					t.Fatalf("err %v stop %+v; want the plan approval", r.err, r.stop)
				}
				if r.stop.Problem != "" {
					problems = append(problems, r.stop.Problem)
				}
				r = drive(t, a, "th", resume(d))
			}
			if r.err != nil || r.stop != nil {
				t.Fatalf("err %v stop %+v", r.err, r.stop)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems %q, want %q", problems, tt.problems)
			}
			for i, p := range tt.problems {
				contains(t, "problem", problems[i], p)
			}
			if diff := cmp.Diff(sorted(tt.calls), sortedCalls(f)); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if got := answer(r.state); got != tt.answer {
				t.Errorf("answer %q, want %q", got, tt.answer)
			}
			if ends := named[events.End](r.events); len(ends) != 1 || ends[0].Status != tt.end {
				t.Errorf("end %+v, want %s", ends, tt.end)
			}
			if p := orchestrator.PlanState.Get(r.state); p.Revision != tt.revision {
				t.Errorf("plan revision %d, want %d", p.Revision, tt.revision)
			}
			if diff := cmp.Diff(tt.statusOf, statuses(r.state)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// Step approval: the model proposes each step's parameters (detailed
// mode), and a person accepts, edits (checked against the tool's schema)
// or skips each step; a skipped step's dependents are skipped too.
func TestStepApproval(t *testing.T) {
	tests := []struct {
		name     string
		answers  []orchestrator.Decision
		problems int
		calls    []string
		statusOf map[string]orchestrator.Status
	}{
		{name: "accept", answers: []orchestrator.Decision{{Action: "accept"}, {Action: "accept"}, {Action: "accept"}},
			calls: []string{"fetch:sales", "fetch:visits", "combine:11"}, statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "done", "t3": "done"}},
		{name: "edit", answers: []orchestrator.Decision{
			{Action: "edit", Params: json.RawMessage(`{"kind": 3}`)},
			{Action: "edit", Params: json.RawMessage(`{"kind": "orders"}`)},
			{Action: "accept"}, {Action: "accept"}}, problems: 1,
			calls: []string{"fetch:orders", "fetch:visits", "combine:12"}, statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "done", "t3": "done"}},
		{name: "skip", answers: []orchestrator.Decision{{Action: "skip", Reason: "not needed"}, {Action: "accept"}},
			calls: []string{"fetch:visits"}, statusOf: map[string]orchestrator.Status{"t1": "skipped", "t2": "done", "t3": "skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fixture{}
			// Detailed preparation proposes the parameters of each step of
			// a wave, in plan order: t1, t2, then t3.
			model := scripted.New(cognition(), plan(fetch("t1", "sales"), fetch("t2", "visits"), combine("t3", "t1", "t2")),
				js(map[string]any{"kind": "sales"}), js(map[string]any{"kind": "visits"}), js(map[string]any{}), llmAnswer("ok"))
			a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false; c.Approvals.Step = true }})
			r := drive(t, a, "th", orchestrator.Input("analyse", ""))
			all := r.events
			problems := 0
			for _, d := range tt.answers {
				if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindStep {
					t.Fatalf("err %v stop %+v; want a step approval", r.err, r.stop)
				}
				st := r.stop.Step
				if st.Mode != "detailed" || st.Readiness != 1 || len(st.Missing) != 0 || len(st.Tools) == 0 || len(st.Schema) == 0 {
					t.Errorf("step %+v: want a detailed preparation", st)
				}
				if st.Description == "" {
					t.Errorf("step %+v: want the tool's description", st)
				}
				if r.stop.Problem != "" {
					problems++
				}
				r = drive(t, a, "th", resume(d))
				all = append(all, r.events...)
			}
			if r.err != nil || r.stop != nil {
				t.Fatalf("err %v stop %+v", r.err, r.stop)
			}
			if problems != tt.problems {
				t.Errorf("asked again %d times, want %d", problems, tt.problems)
			}
			if diff := cmp.Diff(sorted(tt.calls), sortedCalls(f)); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.statusOf, statuses(r.state)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			onceEach(t, all)
		})
	}
}

// onceEach checks that no change of a todo's status was told twice: a
// node resumed after an interrupt runs again from its top.
func onceEach(t *testing.T, evs []events.Event) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range named[events.TodoProgress](evs) {
		key := fmt.Sprintf("%s v%d %s", p.TodoID, p.Version, p.Status)
		if seen[key] {
			t.Errorf("told twice: %s (progress %v)", key, progress(evs))
		}
		seen[key] = true
	}
}

// A step approval in light mode still shows the tool's schema and
// description, so that a client can build the parameters' form; the
// model is not asked for parameters.
func TestStepApprovalLightShowsSchema(t *testing.T) {
	f := &fixture{}
	model := scripted.New(cognition(), plan(fetch("t1", "sales")), llmAnswer("ok"))
	a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) {
		c.Approvals.Plan = false
		c.Approvals.Step = true
		c.Execution.Preparation = orchestrator.PrepareLight
	}})
	r := drive(t, a, "th", orchestrator.Input("sales", ""))
	if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindStep {
		t.Fatalf("err %v stop %+v; want a step approval", r.err, r.stop)
	}
	st := r.stop.Step
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(st.Schema, &schema); err != nil || schema.Type != "object" || schema.Properties["kind"] == nil {
		t.Errorf("step schema %s (%v): want the fetch tool's object schema with kind", st.Schema, err)
	}
	if st.Mode != "light" || st.Description == "" {
		t.Errorf("step mode %q, description %q: want light, and the tool's description", st.Mode, st.Description)
	}
	r = drive(t, a, "th", resume(orchestrator.Decision{Action: "accept"}))
	if r.err != nil || r.stop != nil {
		t.Fatalf("err %v stop %+v", r.err, r.stop)
	}
	if diff := cmp.Diff([]string{"fetch:sales"}, sortedCalls(f)); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
}

// A step memory predicts to be accepted (probability above 0.8) runs
// without asking; one below asks.
func TestStepApprovalPredicted(t *testing.T) {
	for _, p := range []float64{0.85, 0.8} {
		f := &fixture{}
		model := scripted.New(cognition(), plan(fetch("t1", "sales")), js(map[string]any{"kind": "sales"}), llmAnswer("ok"))
		mem := &memory{accept: &p}
		a := newAgent(t, f, model, setup{memory: orchestrator.Memory{Acceptance: mem},
			config: func(c *orchestrator.Config) { c.Approvals.Plan = false; c.Approvals.Step = true }})
		r := drive(t, a, "th", orchestrator.Input("sales", ""))
		if asked := r.stop != nil; asked != (p <= 0.8) {
			t.Errorf("prediction %v: asked %v (err %v)", p, asked, r.err)
		}
		if p <= 0.8 {
			continue
		}
		// Told, and recorded as memory's decision.
		told := false
		for _, s := range named[events.Status](r.events) {
			told = told || s.Message == "step t1 approved by memory: predicted acceptance 0.85"
		}
		hist := orchestrator.ApprovalHistory.Get(r.state)
		if !told || len(hist) != 2 || hist[1].By != "memory" || hist[1].Kind != orchestrator.KindStep || hist[1].TodoID != "t1" {
			t.Errorf("prediction %v: told %v, history %+v", p, told, hist)
		}
	}
}

// The error point: retry runs the todo again, skip leaves it (its
// dependents are skipped), abort stops and answers from what succeeded.
func TestErrorApproval(t *testing.T) {
	flakyTodo := todo{ID: "t2", Title: "fetch from the flaky source", Executor: "data", Tool: "flaky", Params: map[string]any{"kind": "x"}}
	tests := []struct {
		name     string
		answers  []orchestrator.Decision
		calls    []string
		statusOf map[string]orchestrator.Status
		end      string
	}{
		{name: "retry", answers: []orchestrator.Decision{{Action: "retry"}},
			calls:    []string{"fetch:sales", "flaky:x", "flaky:x", "combine:5"},
			statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "done", "t3": "done", "t4": "pending"}, end: "done"},
		{name: "skip", answers: []orchestrator.Decision{{Action: "skip"}},
			calls:    []string{"fetch:sales", "flaky:x", "fetch:later"},
			statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "skipped", "t3": "skipped", "t4": "done"}, end: "done"},
		{name: "abort", answers: []orchestrator.Decision{{Action: "nope"}, {Action: "abort", Reason: "enough"}},
			calls:    []string{"fetch:sales", "flaky:x"},
			statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "failed", "t3": "skipped", "t4": "skipped"}, end: "aborted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fixture{fails: 1}
			model := scripted.New(cognition(), plan(fetch("t1", "sales"), flakyTodo, combine("t3", "t1", "t2"), fetch("t4", "later", "t1", "t2", "t3")), llmAnswer("partial answer"))
			if tt.name == "retry" {
				// t4 fetches after t3: keep the test to three todos done.
				model = scripted.New(cognition(), plan(fetch("t1", "sales"), flakyTodo, combine("t3", "t1", "t2")), llmAnswer("partial answer"))
				delete(tt.statusOf, "t4")
			}
			if tt.name == "skip" {
				model = scripted.New(cognition(), plan(fetch("t1", "sales"), flakyTodo, combine("t3", "t1", "t2"), fetch("t4", "later", "t1")), llmAnswer("partial answer"))
			}
			a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
			r := drive(t, a, "th", orchestrator.Input("analyse", ""))
			all := r.events
			for _, d := range tt.answers {
				if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindError {
					t.Fatalf("err %v stop %+v; want the error point", r.err, r.stop)
				}
				fr := r.stop.Failure
				if fr.Todo.ID != "t2" || fr.Result.Status != "failed" || !strings.Contains(fr.Result.Error, "the source is down") {
					t.Errorf("failure payload %+v", fr)
				}
				r = drive(t, a, "th", resume(d))
				all = append(all, r.events...)
			}
			onceEach(t, all)
			if r.err != nil || r.stop != nil {
				t.Fatalf("err %v stop %+v", r.err, r.stop)
			}
			if diff := cmp.Diff(sorted(tt.calls), sortedCalls(f)); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.statusOf, statuses(r.state)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if ends := named[events.End](r.events); len(ends) != 1 || ends[0].Status != tt.end {
				t.Errorf("end %+v, want %s", ends, tt.end)
			}
			if got := answer(r.state); got != "partial answer" {
				t.Errorf("answer %q", got)
			}
		})
	}
}

// With the error point off, a failed todo stays failed and its dependents
// are skipped; the answer is over what succeeded.
func TestErrorPointOff(t *testing.T) {
	f := &fixture{}
	model := scripted.New(cognition(), plan(fetch("t1", "sales"), fetch("t2", "broken"), combine("t3", "t1", "t2")), llmAnswer("sales only"))
	a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false; c.Approvals.Error = false }})
	r := drive(t, a, "th", orchestrator.Input("analyse", ""))
	if r.err != nil || r.stop != nil {
		t.Fatalf("err %v stop %+v", r.err, r.stop)
	}
	want := map[string]orchestrator.Status{"t1": "done", "t2": "failed", "t3": "skipped"}
	if diff := cmp.Diff(want, statuses(r.state)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	// The answer's prompt has t1's data, and t2 and t3 only as missing.
	reqs := model.Requests()
	prompt := reqs[len(reqs)-1].Messages[1].Text()
	contains(t, "answer prompt", prompt, `"kind":"sales"`)
	contains(t, "answer prompt", prompt, "[t2] fetch broken: failed")
	contains(t, "answer prompt", prompt, "[t3] combine the figures: skipped")
	if strings.Contains(prompt, "no data for broken") && !strings.Contains(prompt, "Steps without a result") {
		t.Errorf("failed data in the successful results: %s", prompt)
	}
	c := named[events.Complete](r.events)
	if len(c) != 1 || c[0].Succeeded != 1 || c[0].Failed != 1 || c[0].Skipped != 1 {
		t.Errorf("complete %+v", c)
	}
}

// The pause point: verify goes on, delete skips pending todos, modify
// changes them (checked as a plan).
func TestPause(t *testing.T) {
	tests := []struct {
		name     string
		answers  []orchestrator.Decision
		problems int
		calls    []string
		statusOf map[string]orchestrator.Status
	}{
		{name: "verify", answers: []orchestrator.Decision{{Action: "verify"}},
			calls: []string{"fetch:sales", "fetch:visits"}, statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "done"}},
		{name: "delete", answers: []orchestrator.Decision{{Action: "delete", Delete: []string{"t9"}}, {Action: "delete", Delete: []string{"t2"}}}, problems: 1,
			calls: []string{"fetch:sales"}, statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "skipped"}},
		{name: "modify", answers: []orchestrator.Decision{
			{Action: "modify", Todos: []orchestrator.Todo{{ID: "t2", DependsOn: []string{"t2"}}}},
			{Action: "modify", Todos: []orchestrator.Todo{{ID: "t2", Params: json.RawMessage(`{"kind":"orders"}`)}}}}, problems: 1,
			calls: []string{"fetch:sales", "fetch:orders"}, statusOf: map[string]orchestrator.Status{"t1": "done", "t2": "done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fixture{}
			model := scripted.New(cognition(), plan(fetch("t1", "sales"), fetch("t2", "visits")), llmAnswer("ok"))
			pauser := &orchestrator.PauseSwitch{}
			pauser.Request("th")
			a := newAgent(t, f, model, setup{pauser: pauser, config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
			r := drive(t, a, "th", orchestrator.Input("analyse", ""))
			problems := 0
			for _, d := range tt.answers {
				if r.err != nil || r.stop == nil || r.stop.Kind != orchestrator.KindPause {
					t.Fatalf("err %v stop %+v; want the pause", r.err, r.stop)
				}
				if diff := cmp.Diff([]string{"t1", "t2"}, r.stop.Pause.Next); diff != "" {
					t.Errorf("next (-want +got):\n%s", diff)
				}
				if r.stop.Problem != "" {
					problems++
				}
				r = drive(t, a, "th", resume(d))
			}
			if r.err != nil || r.stop != nil {
				t.Fatalf("err %v stop %+v", r.err, r.stop)
			}
			if problems != tt.problems {
				t.Errorf("asked again %d times, want %d", problems, tt.problems)
			}
			if diff := cmp.Diff(sorted(tt.calls), sortedCalls(f)); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.statusOf, statuses(r.state)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// sortedCalls are the calls sorted: parallel todos call in any order.
func sortedCalls(f *fixture) []string {
	c := f.calls.get()
	slices.Sort(c)
	return c
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
