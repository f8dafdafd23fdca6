package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

type placeQuery struct {
	Latitude  float64 `json:"latitude" jsonschema:"latitude of the place to replace"`
	Longitude float64 `json:"longitude"`
	Count     int     `json:"replace_count,omitempty"`
}

type place struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func replacePlaces(ctx context.Context, q placeQuery) ([]place, error) {
	tool.SetMeta(ctx, "source", "test")
	if q.Latitude == 0 {
		return nil, &tool.Error{Code: "NOT_FOUND", Message: "no places near 0,0"}
	}
	return []place{{ID: "p1", Name: "Cafe"}}, nil
}

var messages = graph.Messages[llm.Message]("messages")

func TestSpecFromInputType(t *testing.T) {
	tl := tool.New("replace_places", "Finds replacement places.", replacePlaces)
	if err := tl.Err(); err != nil {
		t.Fatal(err)
	}
	spec := tl.Spec()
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Properties) != 3 || !strings.Contains(string(schema.Properties["latitude"]), "latitude of the place") {
		t.Errorf("schema %s", spec.Parameters)
	}
	if diff := cmp.Diff([]string{"latitude", "longitude"}, schema.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
}

func TestBadDeclarations(t *testing.T) {
	for name, tl := range map[string]*tool.Tool{
		"empty name":      tool.New("", "x", replacePlaces),
		"non-object":      tool.New("s", "x", func(context.Context, string) (int, error) { return 0, nil }),
		"handler no then": tool.New("h", "x", replacePlaces, tool.Options{Handler: tool.HandleNode(nil)}),
	} {
		if err := tl.Err(); !errors.Is(err, tool.ErrInvalidTool) {
			t.Errorf("%s: err %v, want ErrInvalidTool", name, err)
		}
		if _, err := tool.NewRegistry(tl); !errors.Is(err, tool.ErrInvalidTool) {
			t.Errorf("%s: registry accepted it: %v", name, err)
		}
	}
	a := tool.New("a", "x", replacePlaces)
	if _, err := tool.NewRegistry(a, a); !errors.Is(err, tool.ErrInvalidTool) {
		t.Errorf("duplicate name: %v", err)
	}
}

func TestRun(t *testing.T) {
	tl := tool.New("replace_places", "Finds replacement places.", replacePlaces)
	ctx := context.Background()
	tests := []struct {
		name     string
		args     string
		wantErr  error
		wantCode string
	}{
		{"ok", `{"latitude": 37.5, "longitude": 127}`, nil, ""},
		{"missing field", `{"latitude": 37.5}`, tool.ErrInvalidArgs, tool.CodeInvalidArgs},
		{"wrong type", `{"latitude": "north", "longitude": 1}`, tool.ErrInvalidArgs, tool.CodeInvalidArgs},
		{"unknown field", `{"latitude": 1, "longitude": 1, "radius": 3}`, tool.ErrInvalidArgs, tool.CodeInvalidArgs},
		{"not json", `{latitude`, tool.ErrInvalidArgs, tool.CodeInvalidArgs},
		{"tool's own error", `{"latitude": 0, "longitude": 0}`, tool.ErrFailed, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tl.Run(ctx, json.RawMessage(tt.args), time.Minute)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if res.Success != (err == nil) || res.ErrorCode != tt.wantCode {
				t.Errorf("envelope %+v", res)
			}
			if err == nil && res.Meta["source"] != "test" {
				t.Errorf("meta %v", res.Meta)
			}
		})
	}
}

// Validate checks arguments as Run does, without calling the tool.
func TestValidate(t *testing.T) {
	called := false
	tl := tool.New("replace_places", "Finds replacement places.", func(ctx context.Context, q placeQuery) ([]place, error) {
		called = true
		return nil, nil
	})
	if diff := cmp.Diff([]string{"latitude", "longitude"}, tl.Required()); diff != "" {
		t.Errorf("Required (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		args string
		ok   bool
	}{
		{`{"latitude": 37.5, "longitude": 127}`, true},
		{`{"latitude": 37.5}`, false},
		{`{"latitude": "north", "longitude": 1, "radius": 3}`, false},
		{`{latitude`, false},
	} {
		err := tl.Validate(json.RawMessage(tt.args))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, tool.ErrInvalidArgs)) {
			t.Errorf("Validate(%s) = %v", tt.args, err)
		}
	}
	var v tool.Violations
	if err := tl.Validate(json.RawMessage(`{"latitude": "north", "radius": 3}`)); !errors.As(err, &v) || len(v) != 3 {
		t.Errorf("violations of a call with three problems: %v", err)
	}
	if called {
		t.Error("Validate called the tool")
	}
}

func TestRunPanicAndTimeout(t *testing.T) {
	boom := tool.New("boom", "panics", func(context.Context, struct{}) (int, error) { panic("kaput") })
	res, err := boom.Run(context.Background(), nil, 0)
	if !errors.Is(err, tool.ErrPanic) || res.ErrorCode != tool.CodePanic {
		t.Errorf("panic: %v %+v", err, res)
	}
	slow := tool.New("slow", "waits", func(ctx context.Context, _ struct{}) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	res, err = slow.Run(context.Background(), nil, time.Millisecond)
	if !errors.Is(err, tool.ErrTimeout) || res.ErrorCode != tool.CodeTimeout {
		t.Errorf("timeout: %v %+v", err, res)
	}
	// An isolated tool that ignores its context is abandoned at the
	// timeout.
	release := make(chan struct{})
	defer close(release)
	deaf := tool.New("deaf", "ignores ctx", func(context.Context, struct{}) (int, error) {
		<-release
		return 1, nil
	}, tool.Options{Isolate: true})
	if _, err := deaf.Run(context.Background(), nil, time.Millisecond); !errors.Is(err, tool.ErrTimeout) {
		t.Errorf("deaf tool: %v", err)
	}
}

// runNode runs the tool node once over msgs and returns what it wrote.
func runNode(t *testing.T, reg *tool.Registry, opts tool.NodeOptions, msgs ...llm.Message) []llm.Message {
	t.Helper()
	g, err := graph.New(messages).AddNode(
		"tools", tool.Node(reg, messages, opts), nil).
		AddEdge(graph.START, "tools").Compile(nil)

	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Invoke(context.Background(), messages.Write(msgs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return messages.Get(st)[len(msgs):]
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

func TestNodeParallelWithOneTimingOut(t *testing.T) {
	started := make(chan struct{}, 2)
	slow := tool.New("slow", "waits for its context", func(ctx context.Context, _ struct{}) (int, error) {
		started <- struct{}{}
		<-ctx.Done()
		return 0, ctx.Err()
	}, tool.Options{Timeout: time.Millisecond})
	fast := tool.New("replace_places", "x", replacePlaces)
	boom := tool.New("boom", "panics", func(context.Context, struct{}) (int, error) { panic("kaput") })
	reg, err := tool.NewRegistry(slow, fast, boom)
	if err != nil {
		t.Fatal(err)
	}
	got := runNode(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("",
		call("c1", "slow", `{}`),
		call("c2", "replace_places", `{"latitude":1,"longitude":2}`),
		call("c3", "nope", `{}`),
		call("c4", "replace_places", `{"latitude":1}`),
		call("c5", "boom", `{}`),
	))
	if len(got) != 5 {
		t.Fatalf("wrote %d messages, want 5: %v", len(got), got)
	}
	wantCodes := []string{tool.CodeTimeout, "", tool.CodeUnknownTool, tool.CodeInvalidArgs, tool.CodePanic}
	for i, m := range got {
		if m.Type != llm.TypeTool || m.ToolCallID != "c"+string(rune('1'+i)) {
			t.Errorf("message %d answers %q: %+v", i, m.ToolCallID, m)
		}
		r, err := tool.ResultOf[json.RawMessage](m)
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode != wantCodes[i] || m.IsError() != (wantCodes[i] != "") || r.Success == m.IsError() {
			t.Errorf("message %d: status %q, envelope %+v; want code %q", i, m.Status, r, wantCodes[i])
		}
	}
	typed, err := tool.ResultOf[[]place](got[1])
	if err != nil || !typed.Success || typed.Data[0].Name != "Cafe" {
		t.Errorf("typed result %+v, %v", typed, err)
	}
	if _, err := tool.ResultOf[[]place](llm.Human("x")); !errors.Is(err, tool.ErrInvalidResult) {
		t.Errorf("ResultOf a human message: %v", err)
	}
	if _, err := tool.ResultOf[int](got[1]); !errors.Is(err, tool.ErrInvalidResult) {
		t.Errorf("ResultOf with the wrong type: %v", err)
	}
}

func TestNodeInvalidToolCall(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.New("replace_places", "x", replacePlaces))
	ai := llm.AI("")
	ai.InvalidToolCalls = []llm.InvalidToolCall{{ID: "bad", Name: "replace_places", Args: "{lat", Error: "unexpected end"}}
	got := runNode(t, reg, tool.NodeOptions{}, llm.Human("go"), ai)
	if len(got) != 1 || !got[0].IsError() || got[0].ToolCallID != "bad" {
		t.Fatalf("got %+v", got)
	}
}

func TestNodeCache(t *testing.T) {
	calls := 0
	counted := tool.New("count", "counts", func(_ context.Context, in struct {
		Q string `json:"q"`
	}) (int, error) {
		calls++
		return calls, nil
	})
	reg, _ := tool.NewRegistry(counted)
	history := []llm.Message{llm.Human("go"), llm.AI("", call("a", "count", `{"q": "x"}`))}
	history = append(history, runNode(t, reg, tool.NodeOptions{Cache: true}, history...)...)
	history = append(history, llm.AI("", call("b", "count", `{ "q":"x" }`), call("c", "count", `{"q":"y"}`), call("d", "count", `{"q":"y"}`)))
	got := runNode(t, reg, tool.NodeOptions{Cache: true}, history...)
	if calls != 2 {
		t.Errorf("the tool ran %d times, want 2 (x once and then cached, y once)", calls)
	}
	cached := []bool{true, false, true}
	for i, m := range got {
		if tool.IsCached(m) != cached[i] {
			t.Errorf("message %d cached=%v", i, tool.IsCached(m))
		}
	}
	if r, _ := tool.ResultOf[int](got[0]); r.Data != 1 {
		t.Errorf("cached result %+v", r)
	}
}

var lastPlaces = graph.Value[[]place]("last_recommended_places")

func TestWireRoutesToHandlers(t *testing.T) {
	handled := tool.Handle(func(_ context.Context, _ graph.State, rs []tool.Result[[]place]) (graph.Update, error) {
		var ps []place
		for _, r := range rs {
			ps = append(ps, r.Data...)
		}
		return lastPlaces.Write(ps), nil
	})
	replace := tool.New("replace_places", "x", replacePlaces, tool.Options{Then: "handle_replace_places", Handler: handled})
	nearby := tool.New("recommend_nearby", "x", replacePlaces, tool.Options{Then: "handle_replace_places"})
	plain := tool.New("plain", "x", func(context.Context, struct{}) (string, error) { return "ok", nil })
	reg, err := tool.NewRegistry(replace, nearby, plain)
	if err != nil {
		t.Fatal(err)
	}
	script := [][]llm.ToolCall{
		{call("1", "plain", `{}`)},
		{call("2", "replace_places", `{"latitude":1,"longitude":1}`), call("3", "recommend_nearby", `{"latitude":2,"longitude":2}`)},
	}
	var visits []string
	agent := func(_ context.Context, s graph.State) (graph.Update, error) {
		n := 0
		for _, m := range messages.Get(s) {
			if m.Type == llm.TypeAI {
				n++
			}
		}
		if n < len(script) {
			return messages.Write(llm.AI("", script[n]...)), nil
		}
		return messages.Write(llm.AI("done")), nil
	}
	b := graph.New(messages, lastPlaces).AddNode("agent", agent, nil).AddEdge(graph.START, "agent").AddConditionalEdges(
		"agent", func(_ context.Context, s graph.State) (graph.Route, error) {
			ms := messages.Get(s)
			if len(ms[len(ms)-1].ToolCalls) > 0 {
				return graph.To("tools"), nil
			}
			return graph.To(graph.END), nil
		}, &graph.BranchOptions{})

	if err := tool.Wire(b, reg, messages, tool.WireOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := b.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range g.Stream(context.Background(), messages.Write(llm.Human("hi")), nil) {
		if err != nil {
			t.Fatal(err)
		}
		visits = append(visits, ev.Data.(graph.NodeUpdate).Node)
	}
	want := []string{"agent", "tools", "agent", "tools", "handle_replace_places", "agent"}
	if diff := cmp.Diff(want, visits); diff != "" {
		t.Errorf("nodes run (-want +got):\n%s", diff)
	}
	st, _ := g.Invoke(context.Background(), messages.Write(llm.Human("hi")), nil)
	if got := lastPlaces.Get(st); len(got) != 2 {
		t.Errorf("last_recommended_places %v", got)
	}
}

func TestWireChecksHandlers(t *testing.T) {
	wrongType := tool.Handle(func(context.Context, graph.State, []tool.Result[int]) (graph.Update, error) {
		return graph.Update{}, nil
	})
	cases := map[string][]*tool.Tool{
		"type mismatch": {tool.New("a", "x", replacePlaces, tool.Options{Then: "h", Handler: wrongType})},
		"no handler":    {tool.New("a", "x", replacePlaces, tool.Options{Then: "h"})},
	}
	for name, tools := range cases {
		reg, err := tool.NewRegistry(tools...)
		if err != nil {
			t.Fatal(err)
		}
		if err := tool.Wire(graph.New(messages), reg, messages, tool.WireOptions{}); !errors.Is(err, tool.ErrInvalidTool) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The tool message carries the envelope as LangChain's ToolMessage carries
// a result: the content is what the model reads (a string as it is, other
// data as JSON, an error as "error CODE: message"), the status says
// success or error, and the artifact holds the error code, message and
// meta. It survives the message's JSON form (a checkpoint) unchanged.
func TestToolMessageForm(t *testing.T) {
	text := tool.New("echo", "echoes", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	reg, err := tool.NewRegistry(text, tool.New("replace_places", "x", replacePlaces))
	if err != nil {
		t.Fatal(err)
	}
	got := runNode(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("",
		call("c1", "echo", `{"s":"line 1\nline \"2\" <b>"}`),
		call("c2", "replace_places", `{"latitude":1,"longitude":2}`),
		call("c3", "replace_places", `{"latitude":0,"longitude":0}`),
	))
	if len(got) != 3 {
		t.Fatalf("wrote %d messages, want 3", len(got))
	}
	want := []struct {
		content, status, artifact string
	}{
		{"line 1\nline \"2\" <b>", llm.StatusSuccess, ``},
		{`[{"id":"p1","name":"Cafe"}]`, llm.StatusSuccess, `{"meta":{"source":"test"}}`},
		{"error NOT_FOUND: no places near 0,0", llm.StatusError, `{"error_code":"NOT_FOUND","error":"no places near 0,0","meta":{"source":"test"}}`},
	}
	for i, m := range got {
		if m.Content != want[i].content || m.Status != want[i].status || string(m.Artifact) != want[i].artifact {
			t.Errorf("message %d: content %q, status %q, artifact %s; want %q, %q, %s", i, m.Content, m.Status, m.Artifact, want[i].content, want[i].status, want[i].artifact)
		}
		// Through JSON and back, as a checkpoint stores it.
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back llm.Message
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got[i] = back
	}
	s, err := tool.ResultOf[string](got[0])
	if err != nil || !s.Success || s.Data != want[0].content {
		t.Errorf("ResultOf[string] = %+v, %v", s, err)
	}
	raw, err := tool.ResultOf[json.RawMessage](got[0])
	if err != nil || string(raw.Data) != `"line 1\nline \"2\" \u003cb\u003e"` {
		t.Errorf("ResultOf[json.RawMessage] of a string = %s, %v; want the string as JSON", raw.Data, err)
	}
	places, err := tool.ResultOf[[]place](got[1])
	if err != nil || !places.Success || len(places.Data) != 1 || places.Data[0].ID != "p1" || places.Meta["source"] != "test" {
		t.Errorf("ResultOf[[]place] = %+v, %v", places, err)
	}
	failed, err := tool.ResultOf[[]place](got[2])
	if err != nil || failed.Success || failed.ErrorCode != "NOT_FOUND" || failed.Error != "no places near 0,0" || failed.Data != nil {
		t.Errorf("ResultOf of a failure = %+v, %v", failed, err)
	}
	bad := llm.ToolResult("c9", "echo", "x")
	bad.Artifact = json.RawMessage(`[1]`)
	if _, err := tool.ResultOf[string](bad); !errors.Is(err, tool.ErrInvalidResult) || !strings.Contains(err.Error(), "artifact") {
		t.Errorf("ResultOf with a foreign artifact: %v; want ErrInvalidResult naming the artifact", err)
	}
}

// By default a tool runs on the caller's goroutine with the deadline in
// its context; with Isolate, a tool that ignores its context is abandoned
// at the timeout, and answered with a timeout error.
func TestTimeoutIsolation(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := func(context.Context, struct{}) (int, error) {
		<-release // ignores its context
		return 1, nil
	}
	isolated := tool.New("stuck", "ignores its context", stuck, tool.Options{Timeout: 20 * time.Millisecond, Isolate: true})
	res, err := isolated.Run(context.Background(), nil, 0)
	if !errors.Is(err, tool.ErrTimeout) || res.ErrorCode != tool.CodeTimeout {
		t.Errorf("isolated stuck tool: %v, %+v; want a timeout", err, res)
	}

	// Cooperative (the default): the function sees the deadline, and its
	// context error is reported as a timeout.
	var sawDeadline bool
	coop := tool.New("coop", "waits for its context", func(ctx context.Context, _ struct{}) (int, error) {
		_, sawDeadline = ctx.Deadline()
		<-ctx.Done()
		return 0, fmt.Errorf("lookup: %w", ctx.Err())
	}, tool.Options{Timeout: 5 * time.Millisecond})
	res, err = coop.Run(context.Background(), nil, 0)
	if !sawDeadline || !errors.Is(err, tool.ErrTimeout) || res.ErrorCode != tool.CodeTimeout {
		t.Errorf("cooperative tool: deadline seen %v, %v, %+v; want a timeout", sawDeadline, err, res)
	}
	// A function that overruns its deadline but returns a result keeps it.
	late := tool.New("late", "finishes late", func(ctx context.Context, _ struct{}) (int, error) {
		<-ctx.Done()
		return 7, nil
	}, tool.Options{Timeout: time.Millisecond})
	if res, err := late.Run(context.Background(), nil, 0); err != nil || res.Data != 7 {
		t.Errorf("late result: %v, %+v; want the result kept", err, res)
	}
	// A panic is recovered on either path.
	for _, iso := range []bool{false, true} {
		boom := tool.New("boom", "panics", func(context.Context, struct{}) (int, error) { panic("kaput") }, tool.Options{Isolate: iso})
		if res, err := boom.Run(context.Background(), nil, time.Second); !errors.Is(err, tool.ErrPanic) || res.ErrorCode != tool.CodePanic {
			t.Errorf("Isolate %v: panic gave %v, %+v", iso, err, res)
		}
	}
}

// The cache serves only successful calls of the current turn: a failed
// call runs again, and a new human message starts a new turn.
func TestNodeCacheScope(t *testing.T) {
	calls := 0
	flaky := tool.New("flaky", "fails first", func(_ context.Context, in struct {
		Q string `json:"q"`
	}) (int, error) {
		calls++
		if calls == 1 {
			return 0, errors.New("try again")
		}
		return calls, nil
	})
	reg, _ := tool.NewRegistry(flaky)
	opts := tool.NodeOptions{Cache: true}
	history := []llm.Message{llm.Human("go"), llm.AI("", call("a", "flaky", `{"q":"x"}`))}
	history = append(history, runNode(t, reg, opts, history...)...)
	if !history[2].IsError() {
		t.Fatalf("first call = %+v, want an error", history[2])
	}
	history = append(history, llm.AI("", call("b", "flaky", `{"q":"x"}`)))
	history = append(history, runNode(t, reg, opts, history...)...)
	if calls != 2 || tool.IsCached(history[4]) || history[4].IsError() {
		t.Fatalf("after a failure the call ran %d times, cached %v; want it run again", calls, tool.IsCached(history[4]))
	}
	history = append(history, llm.AI("", call("c", "flaky", `{ "q" : "x" }`)))
	history = append(history, runNode(t, reg, opts, history...)...)
	if calls != 2 || !tool.IsCached(history[6]) || history[6].Content != history[4].Content || history[6].ToolCallID != "c" {
		t.Fatalf("same call again: ran %d times, message %+v; want the cached result answering c", calls, history[6])
	}
	history = append(history, llm.Human("and now?"), llm.AI("", call("d", "flaky", `{"q":"x"}`)))
	history = append(history, runNode(t, reg, opts, history...)...)
	if calls != 3 || tool.IsCached(history[len(history)-1]) {
		t.Fatalf("a new turn: the tool ran %d times in all, want 3 (no cache across turns)", calls)
	}
}

type summary string

// Text results stay text for every reader: a string that reads as JSON
// ("42") is marked as text in the artifact, and a named string type is
// given to the model as it is, not quoted.
func TestTextResults(t *testing.T) {
	num := tool.New("num", "answers 42 as text", func(context.Context, struct{}) (string, error) { return "42", nil })
	sum := tool.New("sum", "summarizes", func(context.Context, struct{}) (summary, error) { return "line 1\nline 2", nil })
	reg, _ := tool.NewRegistry(num, sum)
	got := runNode(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("", call("c1", "num", `{}`), call("c2", "sum", `{}`)))
	if got[0].Content != "42" || string(got[0].Artifact) != `{"format":"text"}` {
		t.Errorf("text that reads as JSON: content %q, artifact %s", got[0].Content, got[0].Artifact)
	}
	if a, err := tool.ResultOf[any](got[0]); err != nil || a.Data != "42" {
		t.Errorf("ResultOf[any] = %#v, %v; want the string \"42\"", a.Data, err)
	}
	if r, err := tool.ResultOf[json.RawMessage](got[0]); err != nil || string(r.Data) != `"42"` {
		t.Errorf("ResultOf[json.RawMessage] = %s, %v; want \"42\" as a JSON string", r.Data, err)
	}
	if got[1].Content != "line 1\nline 2" || len(got[1].Artifact) != 0 {
		t.Errorf("named string type: content %q, artifact %s; want the text as it is", got[1].Content, got[1].Artifact)
	}
	if s, err := tool.ResultOf[summary](got[1]); err != nil || s.Data != "line 1\nline 2" {
		t.Errorf("ResultOf[summary] = %q, %v", s.Data, err)
	}
}

// A function that gives up at its deadline and says so in its own words
// is reported as a timeout; an error it chose (a *tool.Error) stays its.
func TestTimeoutInOwnWords(t *testing.T) {
	words := tool.New("words", "rewords its timeout", func(ctx context.Context, _ struct{}) (int, error) {
		<-ctx.Done()
		return 0, fmt.Errorf("lookup failed: %v", ctx.Err())
	}, tool.Options{Timeout: time.Millisecond})
	if res, err := words.Run(context.Background(), nil, 0); !errors.Is(err, tool.ErrTimeout) || res.ErrorCode != tool.CodeTimeout {
		t.Errorf("reworded timeout: %v, %+v; want a timeout", err, res)
	}
	chosen := tool.New("chosen", "chooses its error", func(ctx context.Context, _ struct{}) (int, error) {
		<-ctx.Done()
		return 0, &tool.Error{Code: "UPSTREAM_SLOW", Message: "the upstream is slow"}
	}, tool.Options{Timeout: time.Millisecond})
	if res, _ := chosen.Run(context.Background(), nil, 0); res.ErrorCode != "UPSTREAM_SLOW" {
		t.Errorf("chosen error: %+v; want its own code", res)
	}
}

// An abandoned (Isolate) call that goes on setting metadata does not race
// with its result being written (run with -race).
func TestIsolatedMetaAfterTimeout(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	chatty := tool.New("chatty", "sets meta forever", func(ctx context.Context, _ struct{}) (int, error) {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return 0, nil
			default:
				tool.SetMeta(ctx, fmt.Sprint("k", i%8), i)
			}
		}
	}, tool.Options{Timeout: time.Millisecond, Isolate: true})
	reg, _ := tool.NewRegistry(chatty)
	for range 5 {
		got := runNode(t, reg, tool.NodeOptions{}, llm.Human("go"), llm.AI("", call("c1", "chatty", `{}`)))
		if !got[0].IsError() {
			t.Fatalf("got %+v, want a timeout", got[0])
		}
	}
}

// Integers beyond 2^53 are different arguments even where float64 cannot
// tell them apart: the cache never serves one for the other.
func TestNodeCacheBigIntegers(t *testing.T) {
	order := tool.New("get_order", "gets an order", func(_ context.Context, in struct {
		ID int64 `json:"id"`
	}) (string, error) {
		return fmt.Sprint("order ", in.ID), nil
	})
	reg, _ := tool.NewRegistry(order)
	got := runNode(t, reg, tool.NodeOptions{Cache: true}, llm.Human("go"), llm.AI("",
		call("a", "get_order", `{"id":9007199254740993}`), call("b", "get_order", `{"id":9007199254740992}`)))
	if got[0].Content != "order 9007199254740993" || got[1].Content != "order 9007199254740992" || tool.IsCached(got[1]) {
		t.Errorf("got %q and %q (cached %v); want each order's own result", got[0].Content, got[1].Content, tool.IsCached(got[1]))
	}
}

// TestRunReportsEveryViolation: one call with an unknown property, a
// missing required one and two out-of-range values gets all four named in
// one error, so the model can fix them in one retry.
func TestRunReportsEveryViolation(t *testing.T) {
	type args struct {
		Region   string `json:"region"`
		Category string `json:"category,omitempty"`
		Limit    int    `json:"limit,omitempty"`
	}
	tl := tool.New("popular", "x", func(context.Context, args) (int, error) { return 0, nil }, tool.Options{
		Schema: func(s *jsonschema.Schema) {
			s.Properties["category"].Enum = []any{"cafe", "shopping"}
			s.Properties["limit"].Minimum = jsonschema.Ptr(1.0)
			s.Properties["limit"].Maximum = jsonschema.Ptr(50.0)
		},
	})
	if err := tl.Err(); err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(context.Background(), json.RawMessage(`{"limit": 99, "category": "bar", "colour": "red"}`), time.Minute)
	if !errors.Is(err, tool.ErrInvalidArgs) || res.ErrorCode != tool.CodeInvalidArgs {
		t.Fatalf("err %v, envelope %+v", err, res)
	}
	var v tool.Violations
	if !errors.As(err, &v) || len(v) != 4 {
		t.Fatalf("violations %q, want 4 (unknown colour, missing region, category, limit); err: %v", v, err)
	}
	for _, want := range []string{`"colour"`, `"region"`, "category", "bar", "limit", "99"} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("the error the model reads does not mention %s: %s", want, res.Error)
		}
	}
	// The adjusted schema is what the model sees, and what is enforced.
	var spec struct {
		Properties map[string]struct {
			Enum    []string `json:"enum"`
			Maximum float64  `json:"maximum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Spec().Parameters, &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.Properties["category"].Enum) != 2 || spec.Properties["limit"].Maximum != 50 {
		t.Errorf("spec %s", tl.Spec().Parameters)
	}
	if _, err := tl.Run(context.Background(), json.RawMessage(`{"region": "x", "limit": 51}`), time.Minute); !errors.Is(err, tool.ErrInvalidArgs) {
		t.Errorf("limit 51 accepted: %v", err)
	}
	if _, err := tl.Run(context.Background(), json.RawMessage(`{"region": "x", "limit": 50, "category": "cafe"}`), time.Minute); err != nil {
		t.Errorf("valid arguments rejected: %v", err)
	}
}
