package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/openai"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

// The rules of these tests: "hi" and "thanks" go to plain chat, a message
// with "job" to the agent, and no classifier is asked.
var testRules = []router.Rule{
	{Route: router.Chat, Whole: true, Keywords: []string{"hi", "thanks"}},
	{Route: router.Agent, Keywords: []string{"job"}},
}

func jobsRegistry(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(tool.New("search_jobs", "Searches jobs.", func(_ context.Context, in struct {
		Keyword string `json:"keyword"`
	}) ([]string, error) {
		return []string{in.Keyword + " designer at Acme"}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// graphRouter builds a router whose chat route answers with chat and whose
// agent runs model over search_jobs, kept by saver (nil: none).
func graphRouter(t *testing.T, chat, model llm.ChatModel, saver *checkpoint.Saver, ro router.Options, ao react.Options) *router.Router {
	t.Helper()
	ao.Checkpointer = saver
	agent, err := react.NewAgent(model, jobsRegistry(t), ao)
	if err != nil {
		t.Fatal(err)
	}
	if ro.Rules == nil {
		ro.Rules = testRules
	}
	r, err := router.New(chat, agent, ro)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// collectRun streams one turn and returns its events and the error that
// ended it.
func collectRun(ctx context.Context, g *graph.Graph, in graph.Update, opts *graph.RunOptions) ([]graph.Event, error) {
	var evs []graph.Event
	for ev, err := range g.Stream(ctx, in, opts) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// streamed is what a client sees of a turn in messages mode: the streamed
// text and the ids of its chunks per node, and the whole messages per node.
type streamed struct {
	tokens   map[string]string
	chunkIDs map[string][]string
	whole    map[string][]llm.Message
}

func messagesOf(evs []graph.Event) streamed {
	s := streamed{tokens: map[string]string{}, chunkIDs: map[string][]string{}, whole: map[string][]llm.Message{}}
	for _, ev := range evs {
		if c, node, ok := graph.MessageAs[llm.Chunk](ev); ok {
			s.tokens[node] += c.Content
			if ids := s.chunkIDs[node]; len(ids) == 0 || ids[len(ids)-1] != c.ID {
				s.chunkIDs[node] = append(ids, c.ID)
			}
		}
		if m, node, ok := graph.MessageAs[llm.Message](ev); ok {
			s.whole[node] = append(s.whole[node], m)
		}
	}
	return s
}

// A turn on either route is one run of the router's graph: the route node
// records its decision first, the answer streams as messages events of the
// node that made it (chat, or the agent's model node), and the final state
// holds the conversation and the routing (issue 8).
func TestGraphRoutes(t *testing.T) {
	for _, tt := range []struct {
		question string
		route    router.Route
		node     string
		answer   string
		nodes    []string
	}{
		{"hi", router.Chat, router.ChatNode, "Hello! How can I help?", []string{router.RouteNode, router.ChatNode}},
		{"any job for UX?", router.Agent, react.AgentNode, "Acme hires a UX designer.", []string{router.RouteNode, react.AgentNode, react.ToolsNode, react.AgentNode}},
	} {
		t.Run(string(tt.route), func(t *testing.T) {
			chat := scripted.New(llm.AI("Hello! How can I help?"))
			model := scripted.New(
				llm.AI("", llm.ToolCall{Name: "search_jobs", Args: json.RawMessage(`{"keyword":"UX"}`)}),
				llm.AI("Acme hires a UX designer."),
			)
			r := graphRouter(t, chat, model, checkpoint.NewMemory(), router.Options{}, react.Options{})
			evs, err := collectRun(t.Context(), r.Graph(), router.Input(tt.question), &graph.RunOptions{
				ThreadID:    "t",
				StreamModes: []graph.StreamMode{graph.StreamValues, graph.StreamUpdates, graph.StreamMessages},
			})
			if err != nil {
				t.Fatal(err)
			}
			var nodes []string
			var final graph.State
			for _, ev := range evs {
				if u, ok := ev.Update(); ok {
					nodes = append(nodes, u.Node)
					if u.Node == router.RouteNode {
						rt, ok := graph.Written(u.Update, router.RoutingChannel)
						if !ok || rt.Route != tt.route || rt.Source != router.ByRule || rt.StartedAt.IsZero() {
							t.Errorf("route node wrote %+v, %v; want %s by rule with its start", rt, ok, tt.route)
						}
					}
				}
				if st, ok := ev.Values(); ok {
					final = st
				}
			}
			if diff := cmp.Diff(tt.nodes, nodes); diff != "" {
				t.Errorf("nodes run (-want +got):\n%s", diff)
			}
			got := messagesOf(evs)
			if !strings.Contains(got.tokens[tt.node], tt.answer) {
				t.Errorf("tokens streamed by %s = %q, want the answer; all: %v", tt.node, got.tokens[tt.node], got.tokens)
			}
			msgs := react.Messages.Get(final)
			if len(msgs) == 0 || msgs[0].Text() != tt.question || msgs[len(msgs)-1].Text() != tt.answer {
				t.Fatalf("final messages = %+v", msgs)
			}
			// The answer streams once: its chunks carry the id the thread
			// saves it under, and it is not streamed again whole.
			if ids := got.chunkIDs[tt.node]; len(ids) == 0 || ids[len(ids)-1] != msgs[len(msgs)-1].ID {
				t.Errorf("chunk ids of %s = %q, want the answer's chunks under its saved id %s", tt.node, ids, msgs[len(msgs)-1].ID)
			}
			for _, m := range got.whole[tt.node] {
				if m.Type == llm.TypeAI {
					t.Errorf("%s streamed its reply again whole: %+v", tt.node, m)
				}
			}
			// What a client sees in values: the conversation and the
			// routing, as JSON.
			b, err := json.Marshal(final)
			if err != nil {
				t.Fatal(err)
			}
			var values struct {
				Messages []json.RawMessage `json:"messages"`
				Routing  map[string]any    `json:"routing"`
			}
			if err := json.Unmarshal(b, &values); err != nil {
				t.Fatal(err)
			}
			if len(values.Messages) != len(msgs) || values.Routing["route"] != string(tt.route) || values.Routing["source"] != "rule" || values.Routing["started_at"] == nil {
				t.Errorf("values JSON = %s", b)
			}
			if s := r.Stats(); s.Messages != 1 || s.AgentRuns != map[router.Route]int64{router.Chat: 0, router.Agent: 1}[tt.route] {
				t.Errorf("stats = %+v", s)
			}
		})
	}
}

// A client sends a turn as LangGraph's input, {"messages": [{"role":
// "user", "content": ...}]}; the route node finds the human message itself.
func TestGraphLangGraphInput(t *testing.T) {
	var in struct {
		Messages []llm.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), &in); err != nil {
		t.Fatal(err)
	}
	r := graphRouter(t, scripted.New(llm.AI("Hello!")), scripted.New(), nil, router.Options{}, react.Options{})
	st, err := r.Graph().Invoke(t.Context(), react.Messages.Write(in.Messages...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := router.RoutingChannel.Get(st); got.Route != router.Chat {
		t.Errorf("routing = %+v", got)
	}
	if msgs := react.Messages.Get(st); len(msgs) != 2 || msgs[1].Text() != "Hello!" {
		t.Errorf("messages = %+v", msgs)
	}
	// Input without a human message has nothing to answer.
	_, err = r.Graph().Invoke(t.Context(), react.Messages.Write(llm.AI("hello?")), nil)
	if !errors.Is(err, router.ErrNoQuestion) {
		t.Errorf("err = %v, want ErrNoQuestion", err)
	}
}

// A model that fails (401, 500 after its retries) or does not answer in
// the turn's time, on either route: the fallback answer for the user is
// written, streamed and saved with its cause, and then the run fails with
// the turn's *react.TurnError from the fail node, so that a streaming
// client gets an error event and the thread shows the failed task
// (issue 7 §2, §3; issue 8).
func TestGraphModelFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func() http.HandlerFunc
		failed  bool // ErrModelFailed (else a timeout)
		cause   string
		// budget bounds the turn (the default when zero): the time a
		// hanging model crosses, and no bound a failing one could meet.
		budget time.Duration
	}{
		{"401", func() http.HandlerFunc {
			return wiretest.JSON(401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
		}, true, "HTTP 401", 0},
		{"500", func() http.HandlerFunc {
			return wiretest.JSON(500, `{"error":{"message":"boom","type":"server_error"}}`)
		}, true, "HTTP 500", 0},
		{"timeout", wiretest.Hang, false, "deadline exceeded", 200 * time.Millisecond},
	} {
		for _, route := range []router.Route{router.Chat, router.Agent} {
			t.Run(tc.name+"/"+string(route), func(t *testing.T) {
				s := wiretest.New(t, tc.handler())
				var sleeps wiretest.Sleeps
				model, err := openai.New(openai.Options{Model: "gpt-4o-mini", APIKey: "k", BaseURL: s.URL + "/v1/",
					Retry: llm.RetryPolicy{Sleep: sleeps.Sleep, QuietRetries: true}})
				if err != nil {
					t.Fatal(err)
				}
				// The bounds that a hanging model crosses: the turn's on
				// the chat route, the agent's own on the agent route.
				r := graphRouter(t, model, model, checkpoint.NewMemory(), router.Options{TurnTimeout: tc.budget}, react.Options{Timeout: tc.budget})
				question := map[router.Route]string{router.Chat: "hi", router.Agent: "any job?"}[route]
				evs, err := collectRun(t.Context(), r.Graph(), router.Input(question), &graph.RunOptions{
					ThreadID:    "t",
					StreamModes: []graph.StreamMode{graph.StreamMessages, graph.StreamValues},
				})
				var te *react.TurnError
				var ne *graph.NodeError
				if !errors.As(err, &te) || !errors.As(err, &ne) || ne.Node != router.FailNode {
					t.Fatalf("err = %v, want the fail node's *react.TurnError", err)
				}
				if errors.Is(err, react.ErrModelFailed) != tc.failed || !errors.Is(err, react.ErrNoAnswer) || !strings.Contains(te.Cause, tc.cause) {
					t.Errorf("err = %v (cause %q); want ErrModelFailed %v, a cause with %q", err, te.Cause, tc.failed, tc.cause)
				}
				// The client saw the fallback answer before the error.
				node := map[router.Route]string{router.Chat: router.ChatNode, router.Agent: react.AgentNode}[route]
				whole := messagesOf(evs).whole[node]
				if len(whole) != 1 || whole[0].ResponseMetadata[react.MetaFallback] != true {
					t.Errorf("messages of %s = %+v, want the fallback answer", node, whole)
				}
				snap, err := r.Graph().GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				msgs := react.Messages.Get(snap.Values)
				last := msgs[len(msgs)-1]
				if len(msgs) != 2 || last.ResponseMetadata[react.MetaFallback] != true || !strings.Contains(fmt.Sprint(last.ResponseMetadata[react.MetaError]), tc.cause) {
					t.Errorf("thread holds %+v, want the question and the fallback with its cause", msgs)
				}
				if !slices.Equal(snap.Next, []string{router.FailNode}) || len(snap.Tasks) != 1 || !strings.Contains(snap.Tasks[0].Error, tc.cause) {
					t.Errorf("next %v, tasks %+v; want the failed fail task with its cause", snap.Next, snap.Tasks)
				}
			})
		}
	}
}

// A chat turn, an agent turn and a chat turn on one thread: the thread
// holds every message once, in order; the last chat reply saw the
// conversation's text (the answers, not the tool calls and results).
func TestGraphThreadAcrossRoutes(t *testing.T) {
	chat := scripted.New(llm.AI("Hello!"), llm.AI("You're welcome."))
	model := scripted.New(
		llm.AI("Let me look.", llm.ToolCall{Name: "search_jobs", Args: json.RawMessage(`{"keyword":"UX"}`)}),
		llm.AI("Acme hires a UX designer."),
	)
	r := graphRouter(t, chat, model, checkpoint.NewMemory(), router.Options{ChatPrompt: "Be brief."}, react.Options{})
	opts := &graph.RunOptions{ThreadID: "t"}
	for _, q := range []string{"hi", "any job for UX?", "thanks"} {
		if _, err := r.Graph().Invoke(t.Context(), router.Input(q), opts); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
	}
	snap, err := r.Graph().GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ids := map[string]bool{}
	for _, m := range react.Messages.Get(snap.Values) {
		got = append(got, string(m.Type)+": "+m.Text())
		if ids[m.ID] {
			t.Errorf("message id %s twice", m.ID)
		}
		ids[m.ID] = true
	}
	want := []string{
		"human: hi", "ai: Hello!",
		"human: any job for UX?", "ai: Let me look.", `tool: ["UX designer at Acme"]`, "ai: Acme hires a UX designer.",
		"human: thanks", "ai: You're welcome.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("thread messages (-want +got):\n%s", diff)
	}
	if len(snap.Next) != 0 || router.RoutingChannel.Get(snap.Values).Route != router.Chat {
		t.Errorf("next %v, routing %+v", snap.Next, router.RoutingChannel.Get(snap.Values))
	}
	reqs := chat.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d chat calls, want 2", len(reqs))
	}
	var seen []string
	for _, m := range reqs[1].Messages {
		seen = append(seen, string(m.Type)+": "+m.Text())
	}
	wantSeen := []string{"system: Be brief.", "human: hi", "ai: Hello!", "human: any job for UX?", "ai: Acme hires a UX designer.", "human: thanks"}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("the last chat reply's input (-want +got):\n%s", diff)
	}
}

// The chat route's reply streams under the id the thread saves it with,
// an id of the router's own even when the provider repeats its ids; the
// provider's id is kept in the response metadata.
func TestGraphChatRepeatedProviderIDs(t *testing.T) {
	reply := func(text string) llm.Message {
		m := llm.AI(text)
		m.ID = "chatcmpl-same"
		return m
	}
	chat := scripted.New(reply("Hello!"), reply("You're welcome."))
	r := graphRouter(t, chat, scripted.New(), checkpoint.NewMemory(), router.Options{}, react.Options{})
	opts := &graph.RunOptions{ThreadID: "t", StreamModes: []graph.StreamMode{graph.StreamMessages}}
	var saved []string
	for _, q := range []string{"hi", "thanks"} {
		evs, err := collectRun(t.Context(), r.Graph(), router.Input(q), opts)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		snap, err := r.Graph().GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs := react.Messages.Get(snap.Values)
		last := msgs[len(msgs)-1]
		if ids := messagesOf(evs).chunkIDs[router.ChatNode]; len(ids) != 1 || ids[0] != last.ID {
			t.Errorf("%q: chunk ids %q, want all under the saved id %s", q, ids, last.ID)
		}
		if last.ResponseMetadata[react.MetaProviderID] != "chatcmpl-same" {
			t.Errorf("%q: response metadata %v, want the provider's id kept", q, last.ResponseMetadata)
		}
		saved = append(saved, last.ID)
	}
	if saved[0] == saved[1] || saved[0] == "chatcmpl-same" {
		t.Errorf("saved ids %q, want two ids of the router's own", saved)
	}
}

// A turn that failed (the run ended in the fail node) does not hold the
// thread: the next message starts a new turn, and the thread keeps the
// fallback answer and then the new exchange.
func TestGraphNextTurnAfterFailure(t *testing.T) {
	chat := scripted.NewScript(scripted.Options{}, scripted.Response{Err: unauthorized}, scripted.Response{Message: llm.AI("Hello again!")})
	r := graphRouter(t, chat, scripted.New(), checkpoint.NewMemory(), router.Options{}, react.Options{})
	opts := &graph.RunOptions{ThreadID: "t"}
	if _, err := r.Graph().Invoke(t.Context(), router.Input("hi"), opts); !errors.Is(err, react.ErrModelFailed) {
		t.Fatalf("first turn: err = %v, want ErrModelFailed", err)
	}
	if _, err := r.Graph().Invoke(t.Context(), router.Input("hi"), opts); err != nil {
		t.Fatalf("second turn: %v", err)
	}
	snap, err := r.Graph().GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := react.Messages.Get(snap.Values)
	if len(msgs) != 4 || msgs[1].ResponseMetadata[react.MetaFallback] != true || msgs[3].Text() != "Hello again!" || len(snap.Next) != 0 || len(snap.Tasks) != 0 {
		t.Errorf("messages %+v, next %v, tasks %+v", msgs, snap.Next, snap.Tasks)
	}
}

// keywordModel is an agent model safe for concurrent use: it searches
// jobs for the question's last word, then answers with what it found.
type keywordModel struct{}

func (keywordModel) Generate(_ context.Context, msgs []llm.Message, _ ...llm.CallOptions) (llm.Message, error) {
	last := msgs[len(msgs)-1]
	if last.Type == llm.TypeTool {
		return llm.AI("Found " + last.Text()), nil
	}
	words := strings.Fields(last.Text())
	args, _ := json.Marshal(map[string]string{"keyword": words[len(words)-1]})
	return llm.AI("", llm.ToolCall{Name: "search_jobs", Args: args}), nil
}

func (m keywordModel) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		msg, err := m.Generate(ctx, msgs, opts...)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for c := range scripted.Chunks(msg) {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func (m keywordModel) BindTools([]llm.ToolSpec) llm.ChatModel { return m }

// Threads run concurrently through one router graph keep their own
// conversations (run with -race).
func TestGraphConcurrentThreads(t *testing.T) {
	chat := scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Message: llm.AI("Hello!")})
	r := graphRouter(t, chat, keywordModel{}, checkpoint.NewMemory(), router.Options{}, react.Options{})
	threads := []string{"writer", "painter", "baker", "pilot"}
	var wg sync.WaitGroup
	errs := make([]error, len(threads))
	for i, th := range threads {
		wg.Go(func() {
			opts := &graph.RunOptions{ThreadID: th, StreamModes: []graph.StreamMode{graph.StreamMessages, graph.StreamUpdates}}
			for _, q := range []string{"hi", "any job for " + th} {
				if _, err := collectRun(t.Context(), r.Graph(), router.Input(q), opts); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, th := range threads {
		if errs[i] != nil {
			t.Fatalf("thread %s: %v", th, errs[i])
		}
		snap, err := r.Graph().GetState(t.Context(), checkpoint.Config{ThreadID: th}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range react.Messages.Get(snap.Values) {
			got = append(got, m.Text())
		}
		want := []string{"hi", "Hello!", "any job for " + th, "", `["` + th + ` designer at Acme"]`, `Found ["` + th + ` designer at Acme"]`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("thread %s (-want +got):\n%s", th, diff)
		}
	}
	if s := r.Stats(); s.Messages != 8 || s.AgentRuns != 4 {
		t.Errorf("stats = %+v", s)
	}
}

// Threads saved before the router was a graph (by the ReAct agent's own
// graph, with chat turns saved by UpdateState as END) read through the
// router's graph, and go on.
func TestGraphReadsOlderThreads(t *testing.T) {
	saver := checkpoint.NewMemory()
	model := scripted.New(
		llm.AI("", llm.ToolCall{Name: "search_jobs", Args: json.RawMessage(`{"keyword":"UX"}`)}),
		llm.AI("Acme hires a UX designer."),
	)
	old, err := react.New(model, jobsRegistry(t), react.Options{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cfg := checkpoint.Config{ThreadID: "old"}
	if _, err := old.Invoke(ctx, router.Input("any job for UX?"), &graph.RunOptions{ThreadID: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.UpdateState(ctx, cfg, react.Messages.Write(llm.Human("thanks"), llm.AI("You're welcome.")), graph.END); err != nil {
		t.Fatal(err)
	}

	r := graphRouter(t, scripted.New(llm.AI("Hello!")), scripted.New(), saver, router.Options{}, react.Options{})
	texts := func() []string {
		t.Helper()
		snap, err := r.Graph().GetState(ctx, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Next) != 0 {
			t.Errorf("next = %v", snap.Next)
		}
		var got []string
		for _, m := range react.Messages.Get(snap.Values) {
			got = append(got, m.Text())
		}
		return got
	}
	want := []string{"any job for UX?", "", `["UX designer at Acme"]`, "Acme hires a UX designer.", "thanks", "You're welcome."}
	if diff := cmp.Diff(want, texts()); diff != "" {
		t.Errorf("old thread through the router's graph (-want +got):\n%s", diff)
	}
	if _, err := r.Graph().Invoke(ctx, router.Input("hi"), &graph.RunOptions{ThreadID: "old"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(want, "hi", "Hello!"), texts()); diff != "" {
		t.Errorf("old thread continued (-want +got):\n%s", diff)
	}
}
