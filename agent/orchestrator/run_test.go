package orchestrator_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// A clear request runs through: plan, accepted, the independent fetches
// in one wave, combine after them, an answer over the results.
func TestRunAccept(t *testing.T) {
	f := &fixture{}
	model := scripted.New(cognition(), plan(fetch("t1", "sales"), fetch("t2", "visits"), combine("t3", "t1", "t2")), llmAnswer("total is 11"))
	a := newAgent(t, f, model, setup{})
	r := drive(t, a, "th", orchestrator.Input("analyse sales and visits", "u1"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.stop == nil || r.stop.Kind != orchestrator.KindPlan {
		t.Fatalf("stopped at %+v, want the plan approval", r.stop)
	}
	p := r.stop.Plan
	if p.Strategy != orchestrator.StrategyParallel || !cmp.Equal(p.Levels, [][]string{{"t1", "t2"}, {"t3"}}) {
		t.Errorf("plan strategy %s levels %v", p.Strategy, p.Levels)
	}
	if p.Estimate.CriticalSeconds != 2 || p.Estimate.Seconds != 3 {
		t.Errorf("estimate %+v", p.Estimate)
	}
	r = drive(t, a, "th", graph.Resume(orchestrator.Decision{Action: orchestrator.ActionAccept}))
	if r.err != nil || r.stop != nil {
		t.Fatalf("err %v, stop %+v", r.err, r.stop)
	}
	if diff := cmp.Diff(map[string]orchestrator.Status{"t1": "done", "t2": "done", "t3": "done"}, statuses(r.state)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	got := f.calls.get()
	if len(got) != 3 || got[2] != "combine:11" {
		t.Errorf("calls %v, want the two fetches then combine:11", got)
	}
	if a := answer(r.state); a != "total is 11" {
		t.Errorf("answer %q", a)
	}
	// The response's prompt holds the results of the todos.
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Messages
	contains(t, "answer prompt", last[len(last)-1].Text(), `"total":11`)
	msgs := orchestrator.Messages.Get(r.state)
	if len(msgs) != 2 || msgs[1].Text() != "total is 11" {
		t.Errorf("conversation %v", msgs)
	}
	ends := named[events.End](r.events)
	if len(ends) != 1 || ends[0].Status != events.EndDone {
		t.Errorf("end events %+v", ends)
	}
}

func llmAnswer(text string) llm.Message { return llm.AI(text) }

// Dependencies are respected: a todo starts only after every todo it
// depends on is done.
func TestDependencyOrder(t *testing.T) {
	f := &fixture{}
	model := scripted.New(cognition(),
		plan(fetch("a", "one"), fetch("b", "two", "a"), fetch("c", "three", "a"), combine("d", "b", "c"), fetch("e", "four", "d")),
		llmAnswer("done"))
	a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
	r := drive(t, a, "th", orchestrator.Input("go", ""))
	if r.err != nil || r.stop != nil {
		t.Fatalf("err %v stop %+v", r.err, r.stop)
	}
	deps := map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "e": {"d"}}
	pos := map[string]int{}
	for i, p := range progress(r.events) {
		pos[p] = i
	}
	for id, ds := range deps {
		for _, d := range ds {
			if pos[id+":running"] < pos[d+":done"] {
				t.Errorf("%s started before its dependency %s was done: %v", id, d, progress(r.events))
			}
		}
	}
	if len(pos) != 10 {
		t.Errorf("progress events %v", progress(r.events))
	}
}
