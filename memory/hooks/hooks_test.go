package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/hooks"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/retrieve"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func js(v any) llm.Message {
	b, _ := json.Marshal(v)
	return llm.AI(string(b))
}

func cognition(ambiguous bool) llm.Message {
	return js(map[string]any{"intent": map[string]any{"domain": "ANALYSIS", "category": "trend", "subcategory": "sales"}, "entities": []any{},
		"ambiguous": ambiguous, "question": "Which product?", "needs_tools": true, "confidence": 0.9})
}

var plan = js(map[string]any{"summary": "s", "todos": []any{
	map[string]any{"id": "t1", "title": "fetch the weekly sales figures", "executor": "data", "tool": "sales", "params": map[string]any{}},
}})

type noArgs struct{}

func agent(t *testing.T, model llm.ChatModel, mem orchestrator.Memory, fail bool, cfg func(*orchestrator.Config)) *orchestrator.Agent {
	t.Helper()
	sales := tool.New("sales", "Fetches the weekly sales figures.", func(context.Context, noArgs) (int, error) {
		if fail {
			return 0, errors.New("the sales source is down")
		}
		return 42, nil
	})
	c := orchestrator.DefaultConfig()
	c.Response.NextActions = false
	c.Execution.ReactFallback = false
	c.Execution.Preparation = orchestrator.PrepareLight
	c.Approvals.Plan = false
	c.Approvals.Error = false
	if cfg != nil {
		cfg(&c)
	}
	a, err := orchestrator.New(orchestrator.Options{Config: &c, Models: orchestrator.Models{Default: model}, Checkpointer: checkpoint.NewMemory(), Memory: mem,
		Executors: []orchestrator.Executor{{Name: "data", Tools: []*tool.Tool{sales}}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run drives a thread, answering each stop from answers, and returns the
// requests it stopped at.
func run(t *testing.T, a *orchestrator.Agent, thread, request string, answers ...orchestrator.Decision) []orchestrator.Request {
	t.Helper()
	ctx := context.Background()
	opts := &graph.RunOptions{ThreadID: thread, RecursionLimit: a.RecursionLimit()}
	st, err := a.Graph.Invoke(ctx, orchestrator.Input(request, "alice"), opts)
	var stops []orchestrator.Request
	for err == nil && len(st.Interrupts()) > 0 {
		req, _ := graph.InterruptValue[orchestrator.Request](st.Interrupts()[0])
		stops = append(stops, req)
		if len(answers) == 0 {
			t.Fatalf("stopped at %s with no answer left", req.Kind)
		}
		st, err = a.Graph.Invoke(ctx, graph.Resume(answers[0]), opts)
		answers = answers[1:]
	}
	if err != nil {
		t.Fatal(err)
	}
	return stops
}

// Document 001's behaviour memory end to end: after the user accepted the
// step of a tool twice, the third time is approved without asking.
func TestAcceptanceLearned(t *testing.T) {
	exp, err := memory.NewExperience(newStore(t), memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := func(c *orchestrator.Config) { c.Approvals.Step = true }
	for i, wantStops := range []int{1, 1, 0} {
		model := scripted.New(cognition(false), plan, llm.AI("42"))
		a := agent(t, model, hooks.New(exp), false, steps)
		stops := run(t, a, "t"+string(rune('0'+i)), "weekly sales", orchestrator.Decision{Action: orchestrator.ActionAccept})
		if len(stops) != wantStops {
			t.Errorf("task %d stopped %d times, want %d", i+1, len(stops), wantStops)
		}
	}
	p, n, err := exp.Behaviour.PredictAcceptance(context.Background(), "alice", "step", "sales")
	if err != nil || n != 2 || p <= 0.8 {
		t.Errorf("prediction %v from %d samples (%v)", p, n, err)
	}
	// The plans and workflows were recorded too.
	plans, err := exp.Plans.FindSimilar(context.Background(), "alice", "weekly sales", 5)
	if err != nil || len(plans) != 1 {
		t.Errorf("plans %+v %v", plans, err)
	}
}

// A clarification the user gave is offered for a similar request.
func TestClarificationRemembered(t *testing.T) {
	exp, err := memory.NewExperience(newStore(t), memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(cognition(true), plan, llm.AI("ok"), cognition(true), plan, llm.AI("ok"))
	a := agent(t, model, hooks.New(exp), false, nil)
	stops := run(t, a, "t1", "show the sales trend", orchestrator.Decision{Action: orchestrator.ActionClarify, Answer: "running shoes"})
	if len(stops) != 1 || len(stops[0].Clarification.Past) != 0 {
		t.Fatalf("first task: %+v", stops)
	}
	stops = run(t, a, "t2", "show the sales trend", orchestrator.Decision{Action: orchestrator.ActionReusePast})
	if len(stops) != 1 {
		t.Fatalf("second task stopped %d times", len(stops))
	}
	past := stops[0].Clarification.Past
	if len(past) != 1 || past[0].Answer != "running shoes" || past[0].ReuseCount != 0 {
		t.Fatalf("past %+v", past)
	}
	again, err := exp.Clarifications.FindSimilar(context.Background(), "alice", "show the sales trend")
	if err != nil || len(again) != 1 || again[0].ReuseCount != 1 {
		t.Errorf("after the reuse: %+v %v", again, err)
	}
}

// A tool that failed for similar steps three times is advised against.
func TestToolAvoided(t *testing.T) {
	exp, err := memory.NewExperience(newStore(t), memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		model := scripted.New(cognition(false), plan, llm.AI("no"))
		run(t, agent(t, model, hooks.New(exp), true, nil), "t"+string(rune('0'+i)), "weekly sales")
	}
	adv, err := hooks.Tools{M: exp.Tools}.ToolAdvice(context.Background(), "alice", "fetch the weekly sales figures")
	if err != nil || len(adv.Avoid) != 1 || adv.Avoid[0] != "sales" {
		t.Errorf("advice %+v %v", adv, err)
	}
}

// The BigTool retriever ranks among the executor's tools only.
func TestRetriever(t *testing.T) {
	ctx := context.Background()
	x, err := retrieve.New(ctx, newStore(t), retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, desc string) *tool.Tool {
		return tool.New(name, desc, func(context.Context, noArgs) (int, error) { return 0, nil })
	}
	reg, _ := tool.NewRegistry(mk("weather", "Weather forecast for a city."), mk("sales", "Weekly sales figures of a shop."),
		mk("refunds", "Refunds of a shop's orders."), mk("forecast_sales", "Forecast of next month's sales figures."))
	if _, err := x.SyncRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	r := hooks.Retriever(x)
	got, err := r.RetrieveTools(ctx, orchestrator.RetrieveRequest{Query: "weekly sales figures", Among: []string{"sales", "refunds", "weather"}, K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "sales" {
		t.Errorf("ranked %+v", got)
	}
	for _, g := range got {
		if g.Name == "forecast_sales" {
			t.Errorf("a tool outside Among: %+v", got)
		}
	}
}

// The background hooks: recording never blocks the task, and the user's
// next task still sees what the last one taught, with no flush between
// them; the third acceptance is predicted. A task of another user reads
// nothing of alice's.
func TestBackgroundLearned(t *testing.T) {
	exp, err := memory.NewExperience(newStore(t), memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bg, err := hooks.NewBackground(exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := func(c *orchestrator.Config) { c.Approvals.Step = true }
	for i, wantStops := range []int{1, 1, 0} {
		model := scripted.New(cognition(false), plan, llm.AI("42"))
		a := agent(t, model, bg.Hooks(), false, steps)
		stops := run(t, a, "t"+string(rune('0'+i)), "weekly sales", orchestrator.Decision{Action: orchestrator.ActionAccept})
		if len(stops) != wantStops {
			t.Errorf("task %d stopped %d times, want %d", i+1, len(stops), wantStops)
		}
	}
	if err := bg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := bg.Stats(); s.Recorded != 3 || s.Failed+s.Dropped != 0 {
		t.Errorf("stats %+v", s)
	}
	if _, n, err := exp.Behaviour.PredictAcceptance(context.Background(), "bob", "step", "sales"); err != nil || n != 0 {
		t.Errorf("bob's samples: %d (%v)", n, err)
	}
}

// When memory cannot be written the task still answers and its thread
// keeps the conversation; the failure is told, not hidden.
func TestBackgroundFailureTold(t *testing.T) {
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := memory.NewExperience(st, memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var told []error
	bg, err := hooks.NewBackground(exp, &hooks.BackgroundOptions{Attempts: 2, Backoff: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDone: func(j hooks.Job, err error) { told = append(told, err) }})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // every write now fails
	model := scripted.New(cognition(false), plan, llm.AI("42 sold"))
	a := agent(t, model, bg.Hooks(), false, nil)
	run(t, a, "t1", "weekly sales")
	if err := bg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] == nil || !strings.Contains(told[0].Error(), "the outcome of sales") {
		t.Errorf("told %v", told)
	}
	snap, err := a.Graph.GetState(context.Background(), checkpoint.Config{ThreadID: "t1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := orchestrator.Messages.Get(snap.Values)
	if len(msgs) != 2 || msgs[1].Text() != "42 sold" {
		t.Errorf("the thread's conversation: %v", msgs)
	}
	if s := bg.Stats(); s.Failed != 1 || s.Retries != 1 {
		t.Errorf("stats %+v", s)
	}
}

// Every attempt at a todo is a tool outcome: one retried after failing
// and then skipped at the error point counts two failures, not none.
func TestEveryAttemptRecorded(t *testing.T) {
	exp, err := memory.NewExperience(newStore(t), memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(cognition(false), plan)
	a := agent(t, model, hooks.New(exp), true, func(c *orchestrator.Config) { c.Approvals.Error = true })
	stops := run(t, a, "t1", "weekly sales", orchestrator.Decision{Action: orchestrator.ActionRetry}, orchestrator.Decision{Action: orchestrator.ActionSkip})
	if len(stops) != 2 || stops[1].Kind != orchestrator.KindError {
		t.Fatalf("stops %+v", stops)
	}
	stats, err := exp.Tools.Stats(context.Background(), "alice", "fetch the weekly sales figures")
	if err != nil || len(stats) != 1 || stats[0].Failures != 2 || stats[0].Successes != 0 {
		t.Errorf("stats %+v (%v); want two failures of sales", stats, err)
	}
	wf, err := exp.Workflows.FindSimilar(context.Background(), "alice", "weekly sales", 1)
	if err != nil || len(wf) != 1 || wf[0].Successes != 0 {
		t.Errorf("workflow %+v (%v); want one that did not succeed", wf, err)
	}
}
