package react_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

type query struct {
	Keyword string `json:"keyword" jsonschema:"what to search for"`
}

type job struct {
	Title string `json:"title"`
}

// tools returns a registry with search_jobs (counting its calls), slow
// (waits for its context), and broken (fails).
func tools(t *testing.T, searches *atomic.Int32) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(
		tool.New("search_jobs", "Searches job postings.", func(_ context.Context, q query) ([]job, error) {
			searches.Add(1)
			return []job{{Title: q.Keyword + " designer"}}, nil
		}),
		tool.New("slow", "Never finishes in time.", func(ctx context.Context, _ struct{}) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}),
		tool.New("broken", "Always fails.", func(context.Context, struct{}) (int, error) {
			return 0, errors.New("backend down")
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func call(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
}

func run(t *testing.T, model llm.ChatModel, reg *tool.Registry, opts react.Options) react.Outcome {
	t.Helper()
	g, err := react.New(model, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := react.Run(context.Background(), g, "I want to be a UX designer", nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStopConditions(t *testing.T) {
	tests := []struct {
		name     string
		opts     react.Options
		script   []scripted.Response
		want     react.Outcome
		searches int32
	}{
		{
			name:   "answer",
			script: []scripted.Response{{Message: llm.AI("Start with a portfolio.")}},
			want:   react.Outcome{Answer: "Start with a portfolio.", Stop: react.StopAnswer},
		},
		{
			name: "tool then answer",
			script: []scripted.Response{
				{Message: llm.AI("Let me look.", call("search_jobs", `{"keyword":"UX"}`))},
				{Message: llm.AI("There is a UX designer job.")},
			},
			want:     react.Outcome{Answer: "There is a UX designer job.", Stop: react.StopAnswer, Steps: 1, ToolsUsed: []string{"search_jobs"}, ToolCalls: 1},
			searches: 1,
		},
		{
			name: "step limit forces an answer",
			opts: react.Options{MaxSteps: 2},
			script: []scripted.Response{
				{Message: llm.AI("", call("search_jobs", `{"keyword":"UX"}`))},
				{Message: llm.AI("", call("search_jobs", `{"keyword":"UI"}`))},
				{Message: llm.AI("From what I found: UX and UI roles.")},
			},
			want:     react.Outcome{Answer: "From what I found: UX and UI roles.", Stop: react.StopMaxSteps, Steps: 2, ToolsUsed: []string{"search_jobs"}, ToolCalls: 2},
			searches: 2,
		},
		{
			name: "total timeout with a slow tool",
			opts: react.Options{Timeout: 5 * time.Millisecond, ToolTimeout: time.Hour},
			script: []scripted.Response{
				{Message: llm.AI("", call("slow", `{}`))},
				{Message: llm.AI("never used")},
			},
			want: react.Outcome{Stop: react.StopTimeout, Fallback: true},
		},
		{
			name: "repeated tool errors",
			script: []scripted.Response{
				{Message: llm.AI("", call("broken", `{}`))},
				{Message: llm.AI("", call("broken", `{}`))},
				{Message: llm.AI("never used")},
			},
			want: react.Outcome{Stop: react.StopToolErrors, Fallback: true, Steps: 2, ToolsUsed: []string{"broken"}, ToolCalls: 2, ToolErrors: 2},
		},
		{
			// Two failed calls in one parallel round use one of the two
			// rounds the budget allows: the model sees both errors.
			name: "one failed parallel round reaches the model",
			script: []scripted.Response{
				{Message: llm.AI("", call("broken", `{}`), call("broken", `{"x":1}`))},
				{Message: llm.AI("The tool is down; try later.")},
			},
			want: react.Outcome{Answer: "The tool is down; try later.", Stop: react.StopAnswer, Steps: 1, ToolsUsed: []string{"broken"}, ToolCalls: 2, ToolErrors: 2},
		},
		{
			name:   "model error",
			script: []scripted.Response{{Err: errors.New("overloaded")}},
			want:   react.Outcome{Stop: react.StopModelError, Fallback: true},
		},
		{
			name: "identical calls served from the cache",
			script: []scripted.Response{
				{Message: llm.AI("", call("search_jobs", `{"keyword":"UX"}`))},
				{Message: llm.AI("", call("search_jobs", `{ "keyword": "UX" }`))},
				{Message: llm.AI("Done.")},
			},
			want:     react.Outcome{Answer: "Done.", Stop: react.StopAnswer, Steps: 2, ToolsUsed: []string{"search_jobs"}, ToolCalls: 2, CacheHits: 1},
			searches: 1,
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			t.Run(tt.name, func(t *testing.T) {
				var searches atomic.Int32
				opts := tt.opts
				opts.NoStream = !stream
				got := run(t, scripted.NewScript(scripted.Options{}, tt.script...), tools(t, &searches), opts)
				if tt.want.Fallback {
					if got.Answer == "" {
						t.Error("empty fallback answer")
					}
					var te *react.TurnError
					if !errors.Is(got.Err, react.ErrNoAnswer) || !errors.As(got.Err, &te) || te.Reason != tt.want.Stop {
						t.Errorf("Err = %v, want a TurnError for %s", got.Err, tt.want.Stop)
					}
					if tt.want.Stop == react.StopModelError && (!errors.Is(got.Err, react.ErrModelFailed) || te.Cause != "overloaded") {
						t.Errorf("Err = %v, want ErrModelFailed with the cause", got.Err)
					}
					got.Answer, got.Err = "", nil
				}
				if tt.want.Stop == react.StopTimeout {
					// How far the turn got before its deadline varies.
					got = react.Outcome{Stop: got.Stop, Fallback: got.Fallback}
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if n := searches.Load(); n != tt.searches {
					t.Errorf("search_jobs ran %d times, want %d", n, tt.searches)
				}
			})
		}
	}
}

func TestModelSeesToolErrors(t *testing.T) {
	var searches atomic.Int32
	model := scripted.New(
		llm.AI("", call("search_jobs", `{"keyword":"UX"}`), call("slow", `{}`), call("search_jobs", `{"query":"UX"}`)),
		llm.AI("Found one job; the other search failed."),
	)
	reg := tools(t, &searches)
	// The slow tool times out; the others finish.
	reg.Remove("slow")
	if err := reg.Add(tool.New("slow", "x", func(ctx context.Context, _ struct{}) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}, tool.Options{Timeout: time.Millisecond})); err != nil {
		t.Fatal(err)
	}
	got := run(t, model, reg, react.Options{MaxToolErrors: 3})
	if got.Stop != react.StopAnswer || got.ToolErrors != 2 || got.ToolCalls != 3 {
		t.Fatalf("outcome %+v", got)
	}
	second := model.Requests()[1].Messages
	var codes []string
	for _, m := range second {
		if m.Type == llm.TypeTool {
			r, err := tool.ResultOf[json.RawMessage](m)
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, r.ErrorCode)
		}
	}
	if diff := cmp.Diff([]string{"", tool.CodeTimeout, tool.CodeInvalidArgs}, codes); diff != "" {
		t.Errorf("error codes the model saw (-want +got):\n%s", diff)
	}
}

func TestJSONFormat(t *testing.T) {
	tests := []struct {
		name    string
		replies []string
		want    react.Outcome
	}{
		{
			name: "tool then finish",
			replies: []string{
				`{"thought": "search first", "action": "search_jobs", "action_input": {"keyword": "UX"}}`,
				"```json\n{\"thought\": \"enough\", \"action\": \"FINISH\", \"action_input\": {\"answer\": \"Apply to the UX designer job.\"}}\n```",
			},
			want: react.Outcome{Answer: "Apply to the UX designer job.", Stop: react.StopAnswer, Steps: 1, ToolsUsed: []string{"search_jobs"}, ToolCalls: 1},
		},
		{
			name:    "unparseable once, then retried",
			replies: []string{`I think I should search`, `{"thought": "ok", "action": "FINISH", "answer": "Hello!"}`},
			want:    react.Outcome{Answer: "Hello!", Stop: react.StopAnswer},
		},
		{
			name:    "unparseable twice falls back",
			replies: []string{`not json`, `{"thought": "no action"}`, `never used`},
			want:    react.Outcome{Stop: react.StopParseError, Fallback: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []llm.Message
			for _, r := range tt.replies {
				msgs = append(msgs, llm.AI(r))
			}
			model := scripted.New(msgs...)
			var searches atomic.Int32
			got := run(t, model, tools(t, &searches), react.Options{Mode: react.JSONFormat, SystemPrompt: "You are DreamPath."})
			if tt.want.Fallback {
				if !errors.Is(got.Err, react.ErrNoAnswer) {
					t.Errorf("Err = %v, want ErrNoAnswer", got.Err)
				}
				got.Answer, got.Err = "", nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			for _, req := range model.Requests() {
				if len(req.Tools) != 0 {
					t.Error("JSON mode bound tools to the model")
				}
				if sys := req.Messages[0]; sys.Type != llm.TypeSystem || !strings.Contains(sys.Text(), "search_jobs") || !strings.Contains(sys.Text(), "You are DreamPath.") {
					t.Errorf("system prompt %q", sys.Text())
				}
				for _, m := range req.Messages {
					if m.Type == llm.TypeTool || len(m.ToolCalls) > 0 {
						t.Errorf("JSON mode sent a tool-calling message: %+v", m)
					}
				}
			}
		})
	}
}

func TestStreamsTokens(t *testing.T) {
	g, err := react.New(scripted.New(llm.AI("Start with a portfolio.")), nil, react.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for ev, err := range g.Stream(context.Background(), react.Messages.Write(llm.Human("hi")), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamMessages}}) {
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := ev.Data.(graph.MessageEvent).Message.(llm.Chunk); ok {
			text.WriteString(c.Content)
		}
	}
	if text.String() != "Start with a portfolio." {
		t.Errorf("streamed %q", text.String())
	}
}

func TestTurnsOnAThread(t *testing.T) {
	var searches atomic.Int32
	model := scripted.New(
		llm.AI("", call("search_jobs", `{"keyword":"UX"}`)),
		llm.AI("One job."),
		llm.AI("", call("search_jobs", `{"keyword":"UX"}`)),
		llm.AI("Still one job."),
	)
	g, err := react.New(model, tools(t, &searches), react.Options{MaxSteps: 1, Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "t1"}
	for i, want := range []string{"One job.", "Still one job."} {
		got, err := react.Run(context.Background(), g, "jobs?", &opts)
		if err != nil {
			t.Fatal(err)
		}
		// Each turn has its own step count and cache: with MaxSteps 1,
		// each makes one call and is then asked to answer.
		if got.Answer != want || got.Stop != react.StopMaxSteps || got.Fallback || got.CacheHits != 0 {
			t.Errorf("turn %d: %+v", i, got)
		}
	}
	if searches.Load() != 2 {
		t.Errorf("searches %d", searches.Load())
	}
}

func TestPostProcessingNodes(t *testing.T) {
	var handled atomic.Int32
	reg, err := tool.NewRegistry(tool.New("search_jobs", "x", func(_ context.Context, q query) ([]job, error) {
		return []job{{Title: q.Keyword}}, nil
	}, tool.Options{Then: "handle_jobs", Handler: tool.Handle(func(_ context.Context, _ graph.State, rs []tool.Result[[]job]) (graph.Update, error) {
		if len(rs) == 1 && rs[0].Data[0].Title == "UX" {
			handled.Add(1)
		}
		return graph.Update{}, nil
	})}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := react.New(scripted.New(llm.AI("", call("search_jobs", `{"keyword":"UX"}`)), llm.AI("ok")), reg, react.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for ev, err := range g.Stream(context.Background(), react.Messages.Write(llm.Human("hi")), nil) {
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, ev.Data.(graph.NodeUpdate).Node)
	}
	if !slices.Equal(nodes, []string{"agent", "tools", "handle_jobs", "agent"}) || handled.Load() != 1 {
		t.Errorf("nodes %v, handled %d", nodes, handled.Load())
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []react.Options{{MaxSteps: -1}, {Timeout: -time.Second}, {Mode: 7}} {
		if _, err := react.New(scripted.New(), nil, o); !errors.Is(err, react.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := react.New(nil, nil, react.Options{}); !errors.Is(err, react.ErrInvalidOptions) {
		t.Errorf("nil model: %v", err)
	}
}

// A provider that repeats its completion ids must not make a new message
// replace an earlier one: each message gets an id of its own, and the
// provider's is kept in the response metadata (issue 7 §6).
func TestRepeatedProviderIDs(t *testing.T) {
	withID := func(text string) llm.Message {
		m := llm.AI(text)
		m.ID = "chatcmpl-same"
		return m
	}
	for _, stream := range []bool{false, true} {
		model := scripted.New(withID("First."), withID("Second."))
		var searches atomic.Int32
		g, err := react.New(model, tools(t, &searches), react.Options{Checkpointer: checkpoint.NewMemory(), NoStream: !stream})
		if err != nil {
			t.Fatal(err)
		}
		opts := graph.RunOptions{ThreadID: "t1"}
		for _, q := range []string{"one", "two"} {
			if _, err := react.Run(context.Background(), g, q, &opts); err != nil {
				t.Fatal(err)
			}
		}
		st, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, m := range react.Messages.Get(st.Values) {
			texts = append(texts, m.Text())
			if m.Type == llm.TypeAI && m.ResponseMetadata[react.MetaProviderID] != "chatcmpl-same" {
				t.Errorf("stream=%v: provider id not kept: %+v", stream, m.ResponseMetadata)
			}
		}
		if want := []string{"one", "First.", "two", "Second."}; !slices.Equal(texts, want) {
			t.Errorf("stream=%v: thread holds %q, want %q", stream, texts, want)
		}
	}
}

// In a messages stream, the chunks of a reply and the message the thread
// saves carry one id, the agent's own, as in LangGraph: a client that
// merges chunks by id (agent-chat-ui) shows the reply once, not the chunks
// and then the message under another id. The id is unique in the thread
// even when the provider repeats its ids, and the provider's is kept in the
// response metadata.
func TestStreamedChunksCarryTheSavedID(t *testing.T) {
	reply := func(text string) llm.Message {
		m := llm.AI(text)
		m.ID = "chatcmpl-same"
		return m
	}
	finish := func(answer string) llm.Message {
		return reply(`{"thought": "easy", "action": "FINISH", "action_input": {"answer": "` + answer + `"}}`)
	}
	for _, tc := range []struct {
		mode    react.Mode
		replies []llm.Message
	}{
		{react.NativeTools, []llm.Message{reply("First answer."), reply("Second answer.")}},
		{react.JSONFormat, []llm.Message{finish("First answer."), finish("Second answer.")}},
	} {
		var searches atomic.Int32
		g, err := react.New(scripted.New(tc.replies...), tools(t, &searches), react.Options{Checkpointer: checkpoint.NewMemory(), Mode: tc.mode})
		if err != nil {
			t.Fatal(err)
		}
		opts := &graph.RunOptions{ThreadID: "t", StreamModes: []graph.StreamMode{graph.StreamMessages}}
		var turnIDs []string
		for _, q := range []string{"one", "two"} {
			chunkIDs := map[string]int{}
			var providerIDs []any
			for ev, err := range g.Stream(context.Background(), react.Messages.Write(llm.Human(q)), opts) {
				if err != nil {
					t.Fatal(err)
				}
				if c, _, ok := graph.MessageAs[llm.Chunk](ev); ok {
					chunkIDs[c.ID]++
					if p, ok := c.ResponseMetadata[react.MetaProviderID]; ok {
						providerIDs = append(providerIDs, p)
					}
				}
				if m, _, ok := graph.MessageAs[llm.Message](ev); ok && m.Type == llm.TypeAI {
					t.Errorf("mode %v, %q: the reply streamed again as a whole message %s", tc.mode, q, m.ID)
				}
			}
			st, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs := react.Messages.Get(st.Values)
			saved := msgs[len(msgs)-1]
			if len(chunkIDs) != 1 || chunkIDs[saved.ID] == 0 {
				t.Errorf("mode %v, %q: chunk ids %v, saved id %s; want every chunk under the saved id", tc.mode, q, chunkIDs, saved.ID)
			}
			if saved.ResponseMetadata[react.MetaProviderID] != "chatcmpl-same" || !slices.Equal(providerIDs, []any{"chatcmpl-same"}) {
				t.Errorf("mode %v, %q: provider id in the saved message %v, in chunks %v", tc.mode, q, saved.ResponseMetadata[react.MetaProviderID], providerIDs)
			}
			turnIDs = append(turnIDs, saved.ID)
		}
		if turnIDs[0] == turnIDs[1] || turnIDs[0] == "chatcmpl-same" {
			t.Errorf("mode %v: the two replies' ids %q, want two ids of the agent's own", tc.mode, turnIDs)
		}
	}
}

// AddTo runs the agent inline in a graph of the caller's: the turn's
// budget counts from the start the host records (AddOptions.TurnStart),
// and a fallback answer goes on to AddOptions.OnFallback while an answer
// ends the run.
func TestAddTo(t *testing.T) {
	began := graph.Value[time.Time]("began")
	for _, tt := range []struct {
		name     string
		ago      time.Duration
		wantStop react.StopReason
		wantRun  []string
	}{
		{"in time", 0, react.StopAnswer, []string{"host", react.AgentNode}},
		// The host's start is older than the agent's whole budget: the
		// agent answers with a fallback without asking the model.
		{"host's budget spent", time.Hour, react.StopTimeout, []string{"host", react.AgentNode, "report"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			model := scripted.New(llm.AI("An answer."))
			a, err := react.NewAgent(model, nil, react.Options{Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			b := graph.New(append(a.Channels(), began)...).
				AddNode("host", func(context.Context, graph.State) (graph.Update, error) {
					return began.Write(time.Now().Add(-tt.ago)), nil
				}, nil).
				AddNode("report", func(context.Context, graph.State) (graph.Update, error) { return graph.Update{}, nil }, nil).
				AddEdge(graph.START, "host").
				AddEdge("host", react.AgentNode)
			err = a.AddTo(b, &react.AddOptions{
				TurnStart:  func(s graph.State) (time.Time, bool) { return began.Lookup(s) },
				OnFallback: "report",
			})
			if err != nil {
				t.Fatal(err)
			}
			g, err := b.Compile(nil)
			if err != nil {
				t.Fatal(err)
			}
			var ran []string
			var final graph.State
			for ev, err := range g.Stream(t.Context(), react.Messages.Write(llm.Human("hi")), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamUpdates, graph.StreamValues}}) {
				if err != nil {
					t.Fatal(err)
				}
				if u, ok := ev.Update(); ok {
					ran = append(ran, u.Node)
				}
				if st, ok := ev.Values(); ok {
					final = st
				}
			}
			if diff := cmp.Diff(tt.wantRun, ran); diff != "" {
				t.Errorf("nodes run (-want +got):\n%s", diff)
			}
			if out := react.OutcomeOf(react.Messages.Get(final)); out.Stop != tt.wantStop {
				t.Errorf("stop = %q, want %q", out.Stop, tt.wantStop)
			}
			if final.Has("react_started_at") {
				t.Errorf("the agent recorded a start of its own although the host had one")
			}
		})
	}
}

// A host graph names the agent's nodes, gives each model call a system
// prompt made from its own state, records what goes with each reply, and
// goes on to a node of its own after the answer. Its nodes may write
// messages before the loop starts: the turn's budget counts from the
// loop's first step, not from a start an earlier turn recorded.
func TestAddToHosted(t *testing.T) {
	plan := graph.Value[[]string]("plan")
	calls := graph.Value[[]string]("calls")
	model := scripted.New(
		llm.AI("", call("search_jobs", `{"keyword":"UX"}`)),
		llm.AI("Done."),
	)
	var searches atomic.Int32
	a, err := react.NewAgent(model, tools(t, &searches), react.Options{Timeout: time.Minute, SystemPrompt: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	b := graph.New(append(a.Channels(), plan, calls)...).
		AddNode("planner", func(context.Context, graph.State) (graph.Update, error) {
			return plan.Write([]string{"find jobs"}).And(react.Messages.Write(llm.AI("The plan: find jobs."))), nil
		}, nil).
		AddNode("writer", func(context.Context, graph.State) (graph.Update, error) { return graph.Update{}, nil }, nil).
		AddEdge(graph.START, "planner").
		AddEdge("planner", "recommend").
		AddEdge("writer", graph.END)
	err = a.AddTo(b, &react.AddOptions{
		AgentNode: "recommend",
		ToolsNode: "executor",
		Then:      "writer",
		Prompt: func(_ context.Context, s graph.State) (string, error) {
			return "Carry out: " + strings.Join(plan.Get(s), "; "), nil
		},
		Also: func(_ context.Context, _ graph.State, reply llm.Message) (graph.Update, error) {
			var names []string
			for _, c := range reply.ToolCalls {
				names = append(names, c.Name)
			}
			return calls.Write(names), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Compile(&graph.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	// An earlier turn of the thread recorded its start an hour ago.
	var started graph.Writer[time.Time]
	for _, ch := range a.Channels() {
		if w, ok := ch.(graph.Writer[time.Time]); ok && ch.Name() == "react_started_at" {
			started = w
		}
	}
	if started == nil {
		t.Fatal("the agent declares no react_started_at channel")
	}
	if _, err := g.BulkUpdateState(t.Context(), checkpoint.Config{ThreadID: "t"}, [][]graph.StateUpdate{{{
		Update: react.Messages.Write(llm.Human("earlier"), llm.AI("earlier answer")).And(started.Write(time.Now().Add(-time.Hour))),
		AsNode: "writer",
	}}}); err != nil {
		t.Fatal(err)
	}
	var ran []string
	for ev, err := range g.Stream(t.Context(), react.Messages.Write(llm.Human("find me a job")), &graph.RunOptions{ThreadID: "t"}) {
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := ev.Update(); ok {
			ran = append(ran, u.Node)
		}
	}
	if diff := cmp.Diff([]string{"planner", "recommend", "executor", "recommend", "writer"}, ran); diff != "" {
		t.Errorf("nodes run (-want +got):\n%s", diff)
	}
	snap, err := g.GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := react.OutcomeOf(react.Messages.Get(snap.Values)); out.Stop != react.StopAnswer || out.Answer != "Done." {
		t.Errorf("outcome = %+v, want the model's answer", out)
	}
	if got, ok := calls.Lookup(snap.Values); !ok || len(got) != 0 {
		t.Errorf("calls after the answer = %#v (written: %v), want an empty write", got, ok)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Messages[0]; got.Type != llm.TypeSystem || got.Text() != "Carry out: find jobs" {
			t.Errorf("system prompt = %q, want the one made from the host's state", got.Text())
		}
	}
}

// A turn stopped while its tools ran (the run was cancelled: Ctrl-C, a
// deadline) leaves an AI message whose calls have no results. The next
// turn on the thread must still reach the model: every call the model is
// shown has its answer before the next message, as both providers require
// (they refuse the whole conversation otherwise, so the thread could never
// go on). The calls without results are answered as not run.
func TestNextTurnAfterInterruptedTools(t *testing.T) {
	started := make(chan struct{})
	reg, err := tool.NewRegistry(tool.New("book", "Books a session.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(
		llm.AI("", llm.ToolCall{ID: "call_book", Name: "book", Args: json.RawMessage(`{}`)}),
		llm.AI("Hello again."),
	)
	g, err := react.New(model, reg, react.Options{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "t"}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := react.Run(ctx, g, "book a session", &opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("first turn: err = %v, want context.Canceled", err)
	}
	out, err := react.Run(context.Background(), g, "hello?", &opts)
	if err != nil || out.Answer != "Hello again." {
		t.Fatalf("second turn: %+v, %v", out, err)
	}
	reqs := model.Requests()
	sent := reqs[len(reqs)-1].Messages
	unanswered := map[string]bool{}
	for i, m := range sent {
		switch m.Type {
		case llm.TypeAI:
			for _, c := range m.ToolCalls {
				unanswered[c.ID] = true
			}
		case llm.TypeTool:
			if !unanswered[m.ToolCallID] || !m.IsError() {
				t.Errorf("message %d answers call %q, which is not awaiting an answer, or not as an error: %+v", i, m.ToolCallID, m)
			}
			delete(unanswered, m.ToolCallID)
		default:
			if len(unanswered) > 0 {
				t.Errorf("message %d (%s) follows calls without results %v: %+v", i, m.Type, unanswered, sent)
			}
		}
	}
}
