package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// A plan with a cycle is sent back once with the cycle named; a second
// cyclic plan fails the run with an error event, and nothing of the plan
// is saved.
func TestPlanCycle(t *testing.T) {
	cyclic := plan(fetch("t1", "a", "t2"), fetch("t2", "b", "t1"))
	t.Run("repaired", func(t *testing.T) {
		model := scripted.New(cognition(), cyclic, plan(fetch("t1", "a"), fetch("t2", "b", "t1")), llmAnswer("ok"))
		a := newAgent(t, &fixture{}, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
		r := drive(t, a, "th", orchestrator.Input("go", ""))
		if r.err != nil || answer(r.state) != "ok" {
			t.Fatalf("err %v answer %q", r.err, answer(r.state))
		}
		reqs := model.Requests()
		repair := reqs[2].Messages
		contains(t, "repair request", repair[len(repair)-1].Text(), "dependency cycle: t1 → t2 → t1")
	})
	t.Run("rejected", func(t *testing.T) {
		dir := t.TempDir()
		model := scripted.New(cognition(), cyclic, cyclic)
		a := newAgent(t, &fixture{}, model, setup{config: func(c *orchestrator.Config) { c.Results.Dir = dir }})
		r := drive(t, a, "th", orchestrator.Input("go", ""))
		var ce *orchestrator.CycleError
		if !errors.As(r.err, &ce) || !errors.Is(r.err, orchestrator.ErrInvalidPlan) {
			t.Fatalf("err %v, want a CycleError", r.err)
		}
		if diff := cmp.Diff([]string{"t1", "t2", "t1"}, ce.Cycle); diff != "" {
			t.Errorf("cycle (-want +got):\n%s", diff)
		}
		ends := named[events.End](r.events)
		if len(ends) != 1 || ends[0].Status != events.EndFailed || ends[0].Error.Code != "invalid_plan" {
			t.Errorf("end events %+v", ends)
		}
		contains(t, "end message", ends[0].Message, "dependency cycle: t1 → t2 → t1")
		snap, err := a.Graph.GetState(context.Background(), checkpoint.Config{ThreadID: "th"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := orchestrator.PlanState.Get(snap.Values); p != nil || len(orchestrator.Todos.Get(snap.Values)) != 0 {
			t.Errorf("a rejected plan was saved: %+v", p)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("files were saved for a rejected plan: %v", entries)
		}
	})
	t.Run("unknown tool and bad parameters", func(t *testing.T) {
		bad := plan(todo{ID: "t1", Title: "x", Executor: "data", Tool: "nope"}, todo{ID: "t2", Title: "y", Executor: "data", Tool: "fetch", Params: map[string]any{"kind": 1}, DependsOn: []string{"t7"}})
		model := scripted.New(cognition(), bad, bad)
		a := newAgent(t, &fixture{}, model, setup{})
		r := drive(t, a, "th", orchestrator.Input("go", ""))
		var pe *orchestrator.PlanError
		if !errors.As(r.err, &pe) || len(pe.Problems) != 3 {
			t.Fatalf("err %v, want a PlanError with 3 problems", r.err)
		}
		for _, want := range []string{`no tool "nope" (tools of data: fetch, flaky)`, "todo t2: parameters", `depends on "t7"`} {
			contains(t, "error", r.err.Error(), want)
		}
	})
}

// Two independent todos run at the same time: each waits inside its tool
// until both have started, and the events show both started before
// either ended.
func TestParallelOverlap(t *testing.T) {
	var mu sync.Mutex
	arrived := map[string]bool{}
	both := make(chan struct{})
	f := &fixture{hook: func(ctx context.Context, kind string) error {
		mu.Lock()
		arrived[kind] = true
		if len(arrived) == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
			return nil
		case <-time.After(20 * time.Second):
			return fmt.Errorf("%s waited alone: the todos did not run at the same time", kind)
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	model := scripted.New(cognition(), plan(fetch("t1", "a"), fetch("t2", "b")), llmAnswer("ok"))
	a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
	r := drive(t, a, "th", orchestrator.Input("go", ""))
	if r.err != nil {
		t.Fatal(r.err)
	}
	var start, end = map[string]time.Time{}, map[string]time.Time{}
	order := progress(r.events)
	for _, p := range named[events.TodoProgress](r.events) {
		switch p.Status {
		case "running":
			start[p.TodoID] = p.Time
		case "done":
			end[p.TodoID] = p.Time
		}
	}
	if len(start) != 2 || len(end) != 2 {
		t.Fatalf("progress %v", order)
	}
	// Both started before either ended, in the stream and by the clock.
	if order[0] != "t1:running" && order[0] != "t2:running" || !strings.HasSuffix(order[1], ":running") {
		t.Errorf("progress %v: want both running first", order)
	}
	if !start["t1"].Before(end["t2"]) || !start["t2"].Before(end["t1"]) {
		t.Errorf("intervals t1 [%v, %v] and t2 [%v, %v] do not overlap", start["t1"], end["t1"], start["t2"], end["t2"])
	}
}

// Results are saved per step as JSON and Markdown, with the plan, the
// chart a tool offered and the final report.
func TestResultFiles(t *testing.T) {
	dir := t.TempDir()
	f := &fixture{}
	model := scripted.New(cognition(), plan(fetch("t1", "sales"), fetch("t2", "visits"), combine("t3", "t1", "t2")), llmAnswer("## Summary\n\n- total is 11"),
		js(map[string]any{"actions": []string{"compare with last year", "draft a report"}}))
	a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) {
		c.Approvals.Plan = false
		c.Results.Dir = dir
		c.Response.NextActions = true
	}})
	r := drive(t, a, "th/1", orchestrator.Input("analyse sales", ""))
	if r.err != nil {
		t.Fatal(r.err)
	}
	task := filepath.Join(dir, "th%2F1", "task-1")
	for _, name := range []string{"plan.json", "plan.md", "step_t1_done.json", "step_t1_done.md", "step_t2_done.json", "step_t3_done.md", "chart_t3.svg", "report.md"} {
		if _, err := os.Stat(filepath.Join(task, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var step struct {
		Todo   orchestrator.Todo   `json:"todo"`
		Result orchestrator.Result `json:"result"`
	}
	data, err := os.ReadFile(filepath.Join(task, "step_t3_done.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &step); err != nil {
		t.Fatal(err)
	}
	var data3 bytes.Buffer
	json.Compact(&data3, step.Result.Data)
	if step.Result.Status != "done" || data3.String() != `{"total":11,"from":["sales","visits"]}` {
		t.Errorf("saved result %+v", step.Result)
	}
	report, _ := os.ReadFile(filepath.Join(task, "report.md"))
	for _, want := range []string{"# analyse sales", "- total is 11", "![figures](chart_t3.svg)", "- compare with last year", "| t3 | combine the figures | done | combine |", "```mermaid"} {
		contains(t, "report", string(report), want)
	}
	svg, _ := os.ReadFile(filepath.Join(task, "chart_t3.svg"))
	contains(t, "chart", string(svg), "<svg")
	resp := orchestrator.ResponseResult.Get(r.state)
	if resp.Format != orchestrator.FormatMixed || len(resp.Attachments) != 1 || resp.Report != filepath.Join(task, "report.md") {
		t.Errorf("response %+v", resp)
	}
	if diff := cmp.Diff([]string{"compare with last year", "draft a report"}, resp.NextActions); diff != "" {
		t.Errorf("next actions (-want +got):\n%s", diff)
	}
}

// A request that needs no tools is answered as plain chat, without a
// plan.
func TestPlainChat(t *testing.T) {
	model := scripted.New(js(map[string]any{
		"intent": map[string]any{"domain": "INQUIRY", "category": "general", "subcategory": "greeting"}, "entities": []any{},
		"ambiguous": false, "needs_tools": false, "confidence": 1,
	}), llmAnswer("Hello!"))
	a := newAgent(t, &fixture{}, model, setup{})
	r := drive(t, a, "th", orchestrator.Input("hi", ""))
	if r.err != nil || r.stop != nil || answer(r.state) != "Hello!" {
		t.Fatalf("err %v stop %+v answer %q", r.err, r.stop, answer(r.state))
	}
	if orchestrator.PlanState.Get(r.state) != nil {
		t.Error("a plan for plain chat")
	}
	var text strings.Builder
	for _, tok := range named[events.Token](r.events) {
		text.WriteString(tok.Text)
	}
	if text.String() != "Hello!" {
		t.Errorf("tokens %q", text.String())
	}
}

// The second task of a thread sees the conversation, the last ten
// messages, with the first task marked as one.
func TestConversationContext(t *testing.T) {
	model := scripted.New(cognition(), plan(fetch("t1", "sales")), llmAnswer("first answer"),
		cognition(), plan(fetch("t1", "visits")), llmAnswer("second answer"))
	f := &fixture{}
	a := newAgent(t, f, model, setup{config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
	if r := drive(t, a, "th", orchestrator.Input("first request", "")); r.err != nil {
		t.Fatal(r.err)
	}
	r := drive(t, a, "th", orchestrator.Input("second request", ""))
	if r.err != nil || answer(r.state) != "second answer" {
		t.Fatalf("err %v answer %q", r.err, answer(r.state))
	}
	if orchestrator.Task.Get(r.state) != 2 || len(orchestrator.Todos.Get(r.state)) != 1 || orchestrator.Todos.Get(r.state)[0].Version != 3 {
		t.Errorf("task %d todos %+v: want task 2 with its own todo", orchestrator.Task.Get(r.state), orchestrator.Todos.Get(r.state))
	}
	reqs := model.Requests()
	prompt := reqs[3].Messages[1].Text()
	want := orchestrator.NewTaskMarker + "\nHuman: first request\n\nAssistant: first answer\n\n" + orchestrator.NewTaskMarker + "\nRequest:\nsecond request"
	contains(t, "second task's prompt", prompt, want)
	if diff := cmp.Diff([]string{"fetch:sales", "fetch:visits"}, f.calls.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// With a model without tool calling (JSON mode) nothing is bound as a
// tool: structured output is asked for in the prompt, and the ReAct
// fallback replies in document 002's JSON.
func TestJSONMode(t *testing.T) {
	f := &fixture{}
	model := scripted.New(cognition(), plan(fetch("t1", "broken")),
		// The fallback sub-agent, in JSON: fetch sales instead, then finish.
		llm.AI(`{"thought": "the broken source has nothing; try sales", "action": "fetch", "action_input": {"kind": "sales"}}`),
		llm.AI(`{"thought": "done", "action": "FINISH", "action_input": {"answer": "fetched sales instead"}}`),
		llmAnswer("sales is 5"))
	cfg := orchestrator.DefaultConfig()
	cfg.Approvals.Plan = false
	cfg.Response.NextActions = false
	a, err := orchestrator.New(orchestrator.Options{Config: &cfg, Models: orchestrator.Models{Default: model}, Executors: f.executors(),
		Checkpointer: checkpoint.NewMemory(), Mode: react.JSONFormat})
	if err != nil {
		t.Fatal(err)
	}
	r := drive(t, a, "th", orchestrator.Input("sales please", ""))
	if r.err != nil || answer(r.state) != "sales is 5" {
		t.Fatalf("err %v answer %q", r.err, answer(r.state))
	}
	for i, req := range model.Requests() {
		if len(req.Tools) > 0 {
			t.Errorf("request %d bound tools %v", i, req.Tools)
		}
	}
	res := orchestrator.Results.Get(r.state)["t1"]
	if res.Status != "done" || res.Method != "react" || res.Tool != "fetch" || string(res.Data) != `{"kind":"sales","value":5}` || res.Text != "fetched sales instead" {
		t.Errorf("result %+v", res)
	}
	if diff := cmp.Diff([]string{"fetch:broken", "fetch:sales"}, f.calls.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A todo whose tool fails, and whose ReAct fallback fails too, is failed
// with both reasons.
func TestFallbackFails(t *testing.T) {
	f := &fixture{}
	model := scripted.New(cognition(), plan(fetch("t1", "broken")),
		llm.AI("I cannot do that."), // the sub-agent answers without a tool
		llmAnswer("unused"))
	cfg := orchestrator.DefaultConfig()
	cfg.Approvals.Plan, cfg.Approvals.Error = false, false
	cfg.Response.NextActions = false
	a, err := orchestrator.New(orchestrator.Options{Config: &cfg, Models: orchestrator.Models{Default: model}, Executors: f.executors(), Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	r := drive(t, a, "th", orchestrator.Input("x", ""))
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := orchestrator.Results.Get(r.state)["t1"]
	if res.Status != "failed" {
		t.Fatalf("result %+v", res)
	}
	contains(t, "error", res.Error, "no data for broken")
	contains(t, "error", res.Error, "the ReAct fallback failed too: the sub-agent answered without calling a tool")
	contains(t, "answer", answer(r.state), "None of the plan's steps succeeded")
}

// The memory recorder hears of every finished task.
func TestTaskRecorder(t *testing.T) {
	mem := &memory{}
	model := scripted.New(cognition(), plan(fetch("t1", "sales")), llmAnswer("ok"))
	a := newAgent(t, &fixture{}, model, setup{memory: orchestrator.Memory{Recorder: mem}})
	drive(t, a, "th", orchestrator.Input("sales", "u7"))
	r := drive(t, a, "th", resume(orchestrator.Decision{Action: "accept"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(mem.tasks) != 1 {
		t.Fatalf("recorded %d tasks", len(mem.tasks))
	}
	rec := mem.tasks[0]
	if rec.User != "u7" || rec.Thread != "th" || rec.Outcome != "done" || rec.Answer != "ok" || rec.Plan == nil || len(rec.Results) != 1 || len(rec.Approvals) != 1 {
		t.Errorf("record %+v", rec)
	}
}

// The memory hooks work for the run's user first (graph.RunOptions.User:
// the authenticated user in weft serve), then the run's configurable
// user_id, then the input's user, then DefaultUser; a task without any
// uses no memory and says so. The state records the user the task ran
// for.
func TestMemoryUser(t *testing.T) {
	for _, tt := range []struct {
		name                     string
		runUser, cfgUser, inUser string
		dflt                     string
		want                     string
	}{
		{"run user", "alice", "carol", "mallory", "", "alice"},
		{"configurable", "", "carol", "mallory", "", "carol"},
		{"input", "", "", "mallory", "d", "mallory"},
		{"default", "", "", "", "d", "d"},
		{"none", "", "", "", "-", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mem := &memory{}
			model := scripted.New(cognition(), plan(fetch("t1", "sales")), llmAnswer("ok"))
			a := newAgent(t, &fixture{}, model, setup{memory: orchestrator.Memory{Recorder: mem}, user: tt.dflt,
				config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
			opts := &graph.RunOptions{ThreadID: "th", User: tt.runUser, StreamModes: []graph.StreamMode{graph.StreamCustom}}
			if tt.cfgUser != "" {
				opts.Configurable = map[string]any{"user_id": tt.cfgUser}
			}
			var said []string
			for ev, err := range a.Graph.Stream(context.Background(), orchestrator.Input("sales", tt.inUser), opts) {
				if err != nil {
					t.Fatal(err)
				}
				if s, ok := graph.CustomAs[events.Event](ev); ok {
					if st, ok := s.(events.Status); ok {
						said = append(said, st.Message)
					}
				}
			}
			snap, err := a.Graph.GetState(context.Background(), checkpoint.Config{ThreadID: "th"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := orchestrator.User.Get(snap.Values); got != tt.want {
				t.Errorf("state user_id = %q, want %q", got, tt.want)
			}
			off := slices.Contains(said, "memory is off for this task: it names no user")
			if tt.want == "" {
				if len(mem.tasks) != 0 || !off {
					t.Errorf("without a user: %d tasks recorded, statuses %q", len(mem.tasks), said)
				}
				return
			}
			if len(mem.tasks) != 1 || mem.tasks[0].User != tt.want || off {
				t.Errorf("recorded %+v, statuses %q; want one task for %q", mem.tasks, said, tt.want)
			}
		})
	}
}

// Without a checkpointer every approval point decides by itself.
func TestNoCheckpointer(t *testing.T) {
	model := scripted.New(ambiguous("which?"), plan(fetch("t1", "broken")), llmAnswer("unused"))
	a := newAgent(t, &fixture{}, model, setup{noSave: true})
	st, err := a.Graph.Invoke(context.Background(), orchestrator.Input("x", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(st); got["t1"] != "failed" {
		t.Errorf("statuses %v", got)
	}
	var by []string
	for _, h := range orchestrator.ApprovalHistory.Get(st) {
		by = append(by, string(h.Kind)+":"+h.By)
	}
	if diff := cmp.Diff([]string{"clarification:auto", "plan:auto", "error:auto"}, by); diff != "" {
		t.Errorf("approvals (-want +got):\n%s", diff)
	}
}

// A run of a plan of MaxTodos todos one after another (a wave each)
// needs more supersteps than the runtime's default limit: the agent's graph
// carries RecursionLimit as its runs' default, so a run without options
// finishes, and a run that names the runtime's default fails.
func TestRecursionLimit(t *testing.T) {
	const n = 12
	var todos []todo
	for i := range n {
		var deps []string
		if i > 0 {
			deps = []string{fmt.Sprintf("t%d", i)}
		}
		todos = append(todos, fetch(fmt.Sprintf("t%d", i+1), "x", deps...))
	}
	for _, limit := range []int{0, graph.DefaultRecursionLimit} {
		model := scripted.New(cognition(), plan(todos...), llmAnswer("ok"))
		a := newAgent(t, &fixture{}, model, setup{config: func(c *orchestrator.Config) {
			c.Approvals.Enabled = false
			c.Planning.MaxTodos = n
		}})
		_, err := a.Graph.Invoke(context.Background(), orchestrator.Input("go", ""), &graph.RunOptions{ThreadID: "th", RecursionLimit: limit})
		if limit == 0 && err != nil {
			t.Errorf("the graph's own limit: %v", err)
		}
		if limit > 0 && !errors.Is(err, graph.ErrRecursionLimit) {
			t.Errorf("limit %d: err %v, want the recursion limit", limit, err)
		}
	}
}

// brokenMemory is tool memory and a tool retriever that fail.
type brokenMemory struct{}

var errMemoryDown = errors.New("memory store unreachable")

func (brokenMemory) ToolAdvice(context.Context, string, string) (orchestrator.ToolAdvice, error) {
	return orchestrator.ToolAdvice{}, errMemoryDown
}

func (brokenMemory) RetrieveTools(context.Context, orchestrator.RetrieveRequest) ([]orchestrator.ScoredTool, error) {
	return nil, errMemoryDown
}

// A tool memory or a tool retriever that fails while a step is prepared
// is told in a status event, with no step approval to show it (light
// mode), and the todo still runs.
func TestPreparationFailuresAreTold(t *testing.T) {
	model := scripted.New(cognition(), plan(fetch("t1", "sales")), llmAnswer("ok"))
	cfg := orchestrator.DefaultConfig()
	cfg.Approvals.Plan = false
	cfg.Response.NextActions = false
	cfg.Execution.ReactFallback = false
	a, err := orchestrator.New(orchestrator.Options{
		Config: &cfg, Models: orchestrator.Models{Default: model}, Executors: (&fixture{}).executors(),
		Checkpointer: checkpoint.NewMemory(), Memory: orchestrator.Memory{Tools: brokenMemory{}}, Retriever: brokenMemory{},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := drive(t, a, "th", orchestrator.Input("sales", "u1"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := statuses(r.state); got["t1"] != orchestrator.StatusDone {
		t.Errorf("statuses %v", got)
	}
	var told []string
	for _, s := range named[events.Status](r.events) {
		if strings.Contains(s.Message, errMemoryDown.Error()) {
			told = append(told, s.Message)
		}
	}
	if len(told) != 2 || !strings.Contains(strings.Join(told, "\n"), "tool advice") || !strings.Contains(strings.Join(told, "\n"), "tool retrieval") {
		t.Errorf("status events telling the failures: %q; want the tool retrieval's and the tool advice's", told)
	}
}

// advisor is a ToolAdvisor with fixed advice.
type advisor struct{ adv orchestrator.ToolAdvice }

func (a advisor) ToolAdvice(context.Context, string, string) (orchestrator.ToolAdvice, error) {
	return a.adv, nil
}

// Tool memory's advice in step preparation: an avoided tool leaves the
// ranking and is told; in detailed mode the best other tool replaces it,
// in light mode the plan's tool runs all the same.
func TestToolAdvice(t *testing.T) {
	mem := orchestrator.Memory{Tools: advisor{orchestrator.ToolAdvice{Avoid: []string{"fetch"}, Boost: map[string]float64{"flaky": 0.3}}}}
	t.Run("light", func(t *testing.T) {
		f := &fixture{}
		model := scripted.New(cognition(), plan(fetch("t1", "sales")), llmAnswer("ok"))
		a := newAgent(t, f, model, setup{memory: mem, config: func(c *orchestrator.Config) { c.Approvals.Plan = false }})
		r := drive(t, a, "th", orchestrator.Input("sales", ""))
		if r.err != nil {
			t.Fatal(r.err)
		}
		told := false
		for _, s := range named[events.Status](r.events) {
			told = told || s.Message == "preparing t1: tool memory advises against fetch (it failed repeatedly for similar steps); light preparation runs the plan's tool all the same"
		}
		if !told || !slices.Equal(f.calls.get(), []string{"fetch:sales"}) {
			t.Errorf("told %v, calls %v", told, f.calls.get())
		}
	})
	t.Run("detailed", func(t *testing.T) {
		model := scripted.New(cognition(), plan(fetch("t1", "sales")), js(map[string]any{"kind": "sales"}), llmAnswer("ok"))
		a := newAgent(t, &fixture{}, model, setup{memory: mem, config: func(c *orchestrator.Config) { c.Approvals.Plan = false; c.Approvals.Step = true }})
		r := drive(t, a, "th", orchestrator.Input("sales", ""))
		if r.stop == nil || r.stop.Step == nil {
			t.Fatalf("did not stop at the step: %v", r.err)
		}
		st := r.stop.Step
		var ranked []string
		for _, s := range st.Tools {
			ranked = append(ranked, s.Name)
		}
		if st.Tool != "flaky" || !slices.Equal(ranked, []string{"flaky"}) || !strings.Contains(st.Note, "tool memory advises against fetch (it failed repeatedly for similar steps): using flaky instead") {
			t.Errorf("step tool %s, ranked %v, note %q", st.Tool, ranked, st.Note)
		}
	})
}
