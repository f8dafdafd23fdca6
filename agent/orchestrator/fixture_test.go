package orchestrator_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// js is a scripted reply holding v as JSON text: structured output reads
// JSON from a reply's text whatever the method.
func js(v any) llm.Message {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return llm.AI(string(b))
}

// cognition is a clear request that needs tools.
func cognition() llm.Message {
	return js(map[string]any{
		"intent":      map[string]any{"domain": "ANALYSIS", "category": "performance", "subcategory": "channel_performance"},
		"entities":    []any{map[string]any{"type": "date_range", "value": "last quarter", "confidence": 0.9}},
		"ambiguous":   false,
		"needs_tools": true,
		"confidence":  0.9,
	})
}

// ambiguous is a request that needs a question.
func ambiguous(question string) llm.Message {
	return js(map[string]any{
		"intent":      map[string]any{"domain": "ANALYSIS", "category": "trend", "subcategory": "sales"},
		"entities":    []any{},
		"ambiguous":   true,
		"question":    question,
		"needs_tools": true,
		"confidence":  0.5,
	})
}

// todo is a plan todo for the model's draft.
type todo struct {
	ID        string         `json:"id"`
	Title     string         `json:"title"`
	Executor  string         `json:"executor"`
	Tool      string         `json:"tool"`
	Params    map[string]any `json:"params,omitempty"`
	DependsOn []string       `json:"depends_on,omitempty"`
}

func plan(todos ...todo) llm.Message {
	return js(map[string]any{"summary": "test plan", "todos": todos})
}

func fetch(id, kind string, deps ...string) todo {
	return todo{ID: id, Title: "fetch " + kind, Executor: "data", Tool: "fetch", Params: map[string]any{"kind": kind}, DependsOn: deps}
}

func combine(id string, deps ...string) todo {
	return todo{ID: id, Title: "combine the figures", Executor: "insight", Tool: "combine", Params: map[string]any{}, DependsOn: deps}
}

// calls records the tool calls of a test, in order.
type calls struct {
	mu   sync.Mutex
	list []string
	log  string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
	if c.log != "" {
		f, err := os.OpenFile(c.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			panic(err)
		}
		fmt.Fprintln(f, s)
		f.Close()
	}
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

type fetchIn struct {
	Kind string `json:"kind" jsonschema:"what to fetch"`
}

type figure struct {
	Kind  string `json:"kind"`
	Value int    `json:"value"`
}

type combineIn struct{}

type sum struct {
	Total int      `json:"total"`
	From  []string `json:"from"`
}

// fixture builds the test executors: data (fetch, flaky), insight
// (combine). fetch of kind "broken" fails; flaky fails its first fails
// calls.
type fixture struct {
	calls calls
	// hook, when set, runs inside every fetch call.
	hook  func(ctx context.Context, kind string) error
	fails int
}

func (f *fixture) executors() []orchestrator.Executor {
	fetchTool := tool.New("fetch", "Fetches a figure of a kind (sales, visits).", func(ctx context.Context, in fetchIn) (figure, error) {
		f.calls.add("fetch:" + in.Kind)
		if f.hook != nil {
			if err := f.hook(ctx, in.Kind); err != nil {
				return figure{}, err
			}
		}
		if in.Kind == "broken" {
			return figure{}, &tool.Error{Code: "NO_DATA", Message: "no data for broken"}
		}
		return figure{Kind: in.Kind, Value: len(in.Kind)}, nil
	})
	var mu sync.Mutex
	flaky := tool.New("flaky", "Fetches a figure from a source that fails at first.", func(ctx context.Context, in fetchIn) (figure, error) {
		f.calls.add("flaky:" + in.Kind)
		mu.Lock()
		defer mu.Unlock()
		if f.fails > 0 {
			f.fails--
			return figure{}, errors.New("the source is down")
		}
		return figure{Kind: in.Kind, Value: 7}, nil
	})
	combineTool := tool.New("combine", "Adds up the figures fetched before.", func(ctx context.Context, _ combineIn) (sum, error) {
		figs, err := orchestrator.InputData[figure](ctx, "fetch")
		if err != nil {
			return sum{}, err
		}
		var s sum
		for _, fg := range figs {
			s.Total += fg.Value
			s.From = append(s.From, fg.Kind)
		}
		f.calls.add(fmt.Sprintf("combine:%d", s.Total))
		tool.SetMeta(ctx, orchestrator.MetaChart, orchestrator.Chart{Title: "figures", Labels: s.From, Series: []orchestrator.ChartSeries{{Name: "value", Values: values(figs)}}})
		return s, nil
	})
	return []orchestrator.Executor{
		{Name: "data", Description: "fetches figures", Tools: []*tool.Tool{fetchTool, flaky}},
		{Name: "insight", Description: "analyses figures", Tools: []*tool.Tool{combineTool}},
	}
}

func values(figs []figure) []float64 {
	out := make([]float64, len(figs))
	for i, f := range figs {
		out[i] = float64(f.Value)
	}
	return out
}

// setup configures a test agent.
type setup struct {
	config func(*orchestrator.Config)
	memory orchestrator.Memory
	pauser orchestrator.Pauser
	noSave bool // no checkpointer
	// user is the agent's DefaultUser: "default-user" when empty, "-"
	// for none.
	user string
}

func newAgent(t *testing.T, f *fixture, model llm.ChatModel, st setup) *orchestrator.Agent {
	t.Helper()
	cfg := orchestrator.DefaultConfig()
	cfg.Response.NextActions = false
	cfg.Execution.ReactFallback = false
	if st.config != nil {
		st.config(&cfg)
	}
	var saver *checkpoint.Saver
	if !st.noSave {
		saver = checkpoint.NewMemory()
	}
	a, err := orchestrator.New(orchestrator.Options{
		Config:       &cfg,
		Models:       orchestrator.Models{Default: model},
		Executors:    f.executors(),
		Checkpointer: saver,
		Memory:       st.memory,
		Pauser:       st.pauser,
		DefaultUser:  strings.TrimPrefix(cmp.Or(st.user, "default-user"), "-"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run is one run's outcome: its final state, its events and the request
// it stopped at, if any.
type run struct {
	state  graph.State
	events []events.Event
	stop   *orchestrator.Request
	err    error
}

// drive runs the graph on thread with in, collecting the custom events.
func drive(t *testing.T, a *orchestrator.Agent, thread string, in graph.Update) run {
	t.Helper()
	var r run
	opts := &graph.RunOptions{ThreadID: thread, StreamModes: []graph.StreamMode{graph.StreamCustom, graph.StreamValues}, RecursionLimit: a.RecursionLimit()}
	for ev, err := range a.Graph.Stream(context.Background(), in, opts) {
		if err != nil {
			r.err = err
			break
		}
		if e, ok := graph.CustomAs[events.Event](ev); ok {
			r.events = append(r.events, e)
		}
		if v, ok := ev.Values(); ok {
			r.state = v
		}
	}
	if r.err != nil {
		return r
	}
	snap, err := a.Graph.GetState(context.Background(), checkpoint.Config{ThreadID: thread}, nil)
	if err == nil && len(snap.Interrupts) > 0 {
		req, err := graph.InterruptValue[orchestrator.Request](snap.Interrupts[0])
		if err != nil {
			t.Fatalf("interrupt value: %v", err)
		}
		r.stop = &req
	}
	return r
}

// statuses are the todos' final statuses by id.
func statuses(s graph.State) map[string]orchestrator.Status {
	out := map[string]orchestrator.Status{}
	for _, td := range orchestrator.Todos.Get(s) {
		out[td.ID] = td.Status
	}
	return out
}

// progress lists the todo_progress events as "id:status".
func progress(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		if p, ok := e.(events.TodoProgress); ok {
			out = append(out, p.TodoID+":"+p.Status)
		}
	}
	return out
}

func named[T events.Event](evs []events.Event) []T {
	var out []T
	for _, e := range evs {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func answer(s graph.State) string {
	if r := orchestrator.ResponseResult.Get(s); r != nil {
		return r.Text
	}
	return ""
}

func contains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s %q does not contain %q", what, s, sub)
	}
}
