package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

type Route struct {
	UseAgent bool     `json:"use_agent" jsonschema:"whether the message needs tools"`
	Reason   string   `json:"reason"`
	Tools    []string `json:"tools,omitempty"`
}

func call(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
}

func TestStructuredValid(t *testing.T) {
	m := scripted.New(llm.AI("", call("Route", `{"use_agent":true,"reason":"needs job search","tools":["search_jobs"]}`)))
	got, err := llm.Structured[Route](context.Background(), m, []llm.Message{llm.Human("Find UX jobs in Seoul")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Route{UseAgent: true, Reason: "needs job search", Tools: []string{"search_jobs"}}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if len(r.Tools) != 1 || r.Tools[0].Name != "Route" || r.Options.ToolChoice != "Route" {
		t.Fatalf("request offered %+v with choice %q; want the Route tool, forced", r.Tools, r.Options.ToolChoice)
	}
	var schema map[string]any
	if err := json.Unmarshal(r.Tools[0].Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	props, _ := schema["properties"].(map[string]any)
	useAgent, _ := props["use_agent"].(map[string]any)
	if schema["type"] != "object" || useAgent["description"] != "whether the message needs tools" {
		t.Errorf("schema = %v", schema)
	}
}

func TestStructuredRepaired(t *testing.T) {
	m := scripted.New(
		llm.AI("", call("Route", `{"use_agent":"yes"}`)),
		llm.AI("", call("Route", `{"use_agent":false,"reason":"small talk"}`)),
	)
	got, err := llm.Structured[Route](context.Background(), m, []llm.Message{llm.Human("hello!")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Route{UseAgent: false, Reason: "small talk"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The second call sees the bad reply and a tool error explaining it.
	second := reqs[1].Messages
	if len(second) != 3 || second[1].Type != llm.TypeAI || second[2].Type != llm.TypeTool {
		t.Fatalf("second request = %+v", second)
	}
	fix := second[2]
	if fix.ToolCallID != second[1].ToolCalls[0].ID || !fix.IsError() || !strings.Contains(fix.Text(), "use_agent") {
		t.Errorf("repair message = %+v", fix)
	}
}

func TestStructuredInvalidTwice(t *testing.T) {
	m := scripted.New(
		llm.AI("", call("Route", `{"reason":"missing use_agent"}`)),
		llm.AI("I think you should use the agent."),
	)
	_, err := llm.Structured[Route](context.Background(), m, []llm.Message{llm.Human("hi")}, nil)
	var se *llm.StructuredOutputError
	if !errors.Is(err, llm.ErrInvalidOutput) || !errors.As(err, &se) {
		t.Fatalf("err = %v, want *StructuredOutputError", err)
	}
	if se.Attempts != 2 || se.Output != "I think you should use the agent." || se.Type != "llm_test.Route" {
		t.Errorf("error = %+v", se)
	}
	// A text reply is repaired with a human message.
	if last := m.Requests()[1].Messages; last[len(last)-1].Type != llm.TypeTool {
		t.Errorf("after a tool call the repair is a tool message; got %+v", last[len(last)-1])
	}
	if m.Remaining() != 0 {
		t.Errorf("Structured made more than two calls")
	}
}

func TestStructuredFromText(t *testing.T) {
	// Models without forced tool choice may answer in (fenced) text.
	m := scripted.New(
		llm.AI("not json at all"),
		llm.AI("```json\n{\"use_agent\": true, \"reason\": \"r\"}\n```"),
	)
	got, err := llm.Structured[Route](context.Background(), m, []llm.Message{llm.Human("hi")}, nil)
	if err != nil || !got.UseAgent {
		t.Fatalf("got %+v, %v", got, err)
	}
	if fix := m.Requests()[1].Messages[2]; fix.Type != llm.TypeHuman || !strings.Contains(fix.Text(), "not valid JSON") {
		t.Errorf("repair message = %+v", fix)
	}
}

func TestStructuredNonObject(t *testing.T) {
	m := scripted.New(llm.AI("", call("steps", `{"value":["plan","book"]}`)))
	got, err := llm.Structured[[]string](context.Background(), m, []llm.Message{llm.Human("steps?")}, &llm.StructuredOptions{Name: "steps"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"plan", "book"}, got); d != "" {
		t.Error(d)
	}
}

func TestStructuredJSONSchemaMethod(t *testing.T) {
	m := scripted.New(llm.AI(`{"use_agent":false,"reason":"r"}`))
	_, err := llm.Structured[Route](context.Background(), m, []llm.Message{llm.Human("hi")}, &llm.StructuredOptions{Method: llm.StructuredJSONSchema})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Requests()[0]
	if len(r.Tools) != 0 || r.Options.ResponseFormat == nil || r.Options.ResponseFormat.Name != "Route" || len(r.Options.ResponseFormat.Schema) == 0 {
		t.Errorf("request = %+v", r)
	}
}

// The prompt method binds nothing: the schema goes into the system
// message (joined to the caller's), and the JSON is read from the reply's
// text, even inside a sentence.
func TestStructuredPromptMethod(t *testing.T) {
	m := scripted.New(llm.AI(`Sure! {"use_agent": true, "reason": "needs a search"} Hope that helps.`))
	got, err := llm.Structured[Route](context.Background(), m, []llm.Message{llm.System("You route messages."), llm.Human("find jobs")}, &llm.StructuredOptions{Method: llm.StructuredPrompt, Name: "route"})

	if err != nil || !got.UseAgent || got.Reason != "needs a search" {
		t.Fatalf("got %+v, %v", got, err)
	}
	r := m.Requests()[0]
	if len(r.Tools) != 0 || r.Options.ToolChoice != "" || r.Options.ResponseFormat != nil {
		t.Errorf("request binds tools or a format: %+v", r)
	}
	if len(r.Messages) != 2 {
		t.Fatalf("request has %d messages, want the joined system message and the human one", len(r.Messages))
	}
	sys := r.Messages[0].Text()
	if r.Messages[0].Type != llm.TypeSystem || !strings.HasPrefix(sys, "You route messages.") || !strings.Contains(sys, `"use_agent"`) || !strings.Contains(sys, "only one JSON object") {
		t.Errorf("system message = %q; want the caller's prompt followed by the schema", sys)
	}
}

func TestStructuredModelError(t *testing.T) {
	boom := &llm.APIError{Provider: "p", StatusCode: 401}
	m := scripted.NewScript(scripted.Options{}, scripted.Response{Err: boom})
	_, err := llm.Structured[Route](context.Background(), m, nil, nil)
	if !errors.Is(err, llm.ErrAuthentication) || errors.Is(err, llm.ErrInvalidOutput) {
		t.Errorf("err = %v, want the model's error as it is", err)
	}
}
