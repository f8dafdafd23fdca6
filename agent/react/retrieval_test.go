package react_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

// retriever answers by keyword: the first rule whose word the query
// contains gives the names.
type retriever struct {
	mu    sync.Mutex
	rules [][2]string // word, comma-separated names
	err   error
	calls []string // "user|query|k"
}

func (r *retriever) RetrieveTools(_ context.Context, user, query string, k int) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, user+"|"+query)
	if r.err != nil {
		return nil, r.err
	}
	for _, rule := range r.rules {
		if strings.Contains(query, rule[0]) {
			names := strings.Split(rule[1], ",")
			return names[:min(k, len(names))], nil
		}
	}
	return nil, nil
}

type userKey struct{}

// catalogue is a registry of many small tools.
func catalogue(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"weather_forecast", "slack_post_message", "gmail_send_email", "jira_create_issue", "calendar_create_event"} {
		if err := reg.Add(tool.New(name, "Does "+strings.ReplaceAll(name, "_", " ")+".", func(context.Context, struct{}) (string, error) { return name + " done", nil })); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func toolNames(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestRetrievalBindsRetrievedAndFoundTools(t *testing.T) {
	reg := catalogue(t)
	before := reg.Names()
	r := &retriever{rules: [][2]string{
		{"weather", "weather_forecast,slack_post_message"},
		{"meeting", "calendar_create_event"},
	}}
	model := scripted.New(
		llm.AI("", call("search_tools", `{"query":"book a meeting"}`)),
		llm.AI("", call("calendar_create_event", `{}`)),
		llm.AI("Booked, and it will be sunny."),
	)
	g, err := react.New(model, reg, react.Options{
		Retrieval: &react.Retrieval{Tools: r, K: 2, User: func(ctx context.Context) string { s, _ := ctx.Value(userKey{}).(string); return s }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), userKey{}, "u7")
	out, err := react.Run(ctx, g, "check the weather and set up a team sync", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "Booked, and it will be sunny." || out.Fallback {
		t.Fatalf("outcome %+v", out)
	}
	var bound [][]string
	for _, req := range model.Requests() {
		bound = append(bound, toolNames(req.Tools))
	}
	want := [][]string{
		// The request's tools and the search tool.
		{"weather_forecast", "slack_post_message", "search_tools"},
		// The search found the calendar; the search tool stays (it was
		// called in the turn, and is always offered).
		{"weather_forecast", "slack_post_message", "calendar_create_event", "search_tools"},
		{"weather_forecast", "slack_post_message", "calendar_create_event", "search_tools"},
	}
	if diff := cmp.Diff(want, bound); diff != "" {
		t.Errorf("tools bound per call (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, reg.Names()); diff != "" {
		t.Errorf("the caller's registry changed (-before +after):\n%s", diff)
	}
	if len(r.calls) == 0 || !strings.HasPrefix(r.calls[0], "u7|") {
		t.Errorf("the retriever was not told the user: %v", r.calls)
	}
	if !slices.Contains(r.calls, "u7|book a meeting") {
		t.Errorf("the search tool's query did not reach the retriever: %v", r.calls)
	}
}

func TestRetrievalWithoutSearchTool(t *testing.T) {
	r := &retriever{rules: [][2]string{{"", "gmail_send_email,not_registered_any_more"}}}
	model := scripted.New(llm.AI("", call("jira_create_issue", `{}`)), llm.AI("done"))
	out := run(t, model, catalogue(t), react.Options{Retrieval: &react.Retrieval{Tools: r, NoSearchTool: true}})
	if out.Answer != "done" {
		t.Fatalf("outcome %+v", out)
	}
	var bound [][]string
	for _, req := range model.Requests() {
		bound = append(bound, toolNames(req.Tools))
	}
	// A tool the retriever names but the registry no longer has is left
	// out; a tool the model called stays offered.
	want := [][]string{{"gmail_send_email"}, {"gmail_send_email", "jira_create_issue"}}
	if diff := cmp.Diff(want, bound); diff != "" {
		t.Errorf("tools bound per call (-want +got):\n%s", diff)
	}
}

func TestRetrievalFailureIsAFallbackAnswer(t *testing.T) {
	r := &retriever{err: errors.New("index unreachable")}
	model := scripted.New(llm.AI("never used"))
	out := run(t, model, catalogue(t), react.Options{Retrieval: &react.Retrieval{Tools: r}})
	if out.Stop != react.StopRetrievalError || !out.Fallback || !errors.Is(out.Err, react.ErrNoAnswer) {
		t.Fatalf("outcome %+v; want a retrieval_error fallback", out)
	}
	if !strings.Contains(out.Err.Error(), "index unreachable") {
		t.Errorf("the cause is not told: %v", out.Err)
	}
	if len(model.Requests()) != 0 {
		t.Errorf("the model was called without tools: %d calls", len(model.Requests()))
	}
}

func TestRetrievalInJSONMode(t *testing.T) {
	r := &retriever{rules: [][2]string{{"", "weather_forecast"}}}
	model := scripted.New(llm.AI(`{"thought": "done", "action": "FINISH", "action_input": {"answer": "ok"}}`))
	out := run(t, model, catalogue(t), react.Options{Mode: react.JSONFormat, Retrieval: &react.Retrieval{Tools: r}})
	if out.Answer != "ok" {
		t.Fatalf("outcome %+v", out)
	}
	prompt := model.Requests()[0].Messages[0].Text()
	if !strings.Contains(prompt, "- weather_forecast:") || !strings.Contains(prompt, "- search_tools:") || strings.Contains(prompt, "gmail_send_email") {
		t.Errorf("the JSON-mode prompt should list the retrieved tools and the search tool only:\n%s", prompt)
	}
}

func TestRetrievalOptionsChecked(t *testing.T) {
	model := scripted.New()
	if _, err := react.New(model, nil, react.Options{Retrieval: &react.Retrieval{}}); !errors.Is(err, react.ErrInvalidOptions) {
		t.Errorf("no retriever: %v, want ErrInvalidOptions", err)
	}
	reg, _ := tool.NewRegistry(tool.New("search_tools", "mine", func(context.Context, struct{}) (string, error) { return "", nil }))
	if _, err := react.New(model, reg, react.Options{Retrieval: &react.Retrieval{Tools: &retriever{}}}); !errors.Is(err, react.ErrInvalidOptions) {
		t.Errorf("a registered tool named like the search tool: %v, want ErrInvalidOptions", err)
	}
}

// With Retrieval, a turn pinned on the caller's registry is offered, and
// finds with the search tool, only the tools of its start, while a tool
// it calls changes the registry (as an MCP server might meanwhile); an
// unpinned turn follows the change from its next call.
func TestRetrievalReadsThePinnedTools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pin   bool
		bound [][]string
		found []string
	}{
		{
			name: "pinned", pin: true,
			bound: [][]string{
				{"weather_forecast", "jira_create_issue", "search_tools"},
				{"weather_forecast", "jira_create_issue", "search_tools"},
				{"weather_forecast", "jira_create_issue", "search_tools"},
			},
			found: []string{},
		},
		{
			name: "current",
			bound: [][]string{
				{"weather_forecast", "jira_create_issue", "search_tools"},
				{"jira_create_issue", "search_tools"},
				{"jira_create_issue", "new_tool", "search_tools"},
			},
			found: []string{"new_tool"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := catalogue(t)
			// jira_create_issue is replaced by one that changes the registry.
			noop := func(context.Context, struct{}) (string, error) { return "ok", nil }
			jira := tool.New("jira_create_issue", "Creates an issue.", func(context.Context, struct{}) (string, error) {
				_, err := reg.Apply(tool.Change{Removed: []string{"weather_forecast"}, Added: []*tool.Tool{tool.New("new_tool", "Arrived mid-turn.", noop)}})
				return "created", err
			})
			if _, err := reg.Apply(tool.Change{Updated: []*tool.Tool{jira}}); err != nil {
				t.Fatal(err)
			}
			r := &retriever{rules: [][2]string{{"weather", "weather_forecast,jira_create_issue"}, {"arrived", "new_tool"}}}
			model := scripted.New(
				llm.AI("", call("jira_create_issue", `{}`)),
				llm.AI("", call("search_tools", `{"query":"what arrived"}`)),
				llm.AI("done"),
			)
			g, err := react.New(model, reg, react.Options{Retrieval: &react.Retrieval{Tools: r}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.pin {
				ctx = reg.Pin(ctx)
			}
			st, err := g.Invoke(ctx, react.Messages.Write(llm.Human("the weather, and file it")), nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs := react.Messages.Get(st)
			if out := react.OutcomeOf(msgs); out.Answer != "done" {
				t.Fatalf("outcome %+v", out)
			}
			var bound [][]string
			for _, req := range model.Requests() {
				bound = append(bound, toolNames(req.Tools))
			}
			if diff := cmp.Diff(tc.bound, bound); diff != "" {
				t.Errorf("tools bound per call (-want +got):\n%s", diff)
			}
			found := []string{}
			for _, m := range msgs {
				if m.Type == llm.TypeTool && m.Name == "search_tools" {
					res, err := tool.ResultOf[[]react.FoundTool](m)
					if err != nil || !res.Success {
						t.Fatalf("search result %+v, %v", res, err)
					}
					for _, f := range res.Data {
						found = append(found, f.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.found, found); diff != "" {
				t.Errorf("the search found (-want +got):\n%s", diff)
			}
		})
	}
}
