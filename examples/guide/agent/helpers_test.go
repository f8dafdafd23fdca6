package agent_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/examples/guide/kb"
	"github.com/weftlabs/weft/examples/guide/service"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

type ragPassage = rag.Passage

// sharedKB is the shipped knowledge base, indexed once for every test (an
// Index is safe for concurrent use).
var sharedKB = sync.OnceValues(func() (*rag.Index, error) {
	docs, err := kb.Documents()
	if err != nil {
		return nil, err
	}
	ix, err := rag.New(context.Background(), rag.Config{})
	if err != nil {
		return nil, err
	}
	return ix, ix.Add(context.Background(), docs...)
})

func itoa(i int) string { return strconv.Itoa(i) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func hasToolResult(msgs []llm.Message, name, content string) bool {
	return slices.ContainsFunc(msgs, func(m llm.Message) bool {
		return m.Type == llm.TypeTool && m.Name == name && strings.Contains(m.Content, content)
	})
}

// fakeSearch stands in for a SearXNG instance.
type fakeSearch struct{}

func (fakeSearch) Search(_ context.Context, query string, k int) ([]service.WebResult, error) {
	return []service.WebResult{{Title: "AI video tools in 2026", URL: "https://news.example/video-tools", Snippet: "Prices start at 10 USD a month."}}[:min(k, 1)], nil
}

// extraTools is a registry such as an MCP server fills.
func extraTools(t *testing.T) *tool.Registry {
	t.Helper()
	type args struct {
		Text string `json:"text"`
	}
	noop := func(context.Context, args) (string, error) { return "ok", nil }
	var tools []*tool.Tool
	for name, desc := range map[string]string{
		"github_create_issue":   "Create an issue (bug report) in a GitHub repository.",
		"github_list_pulls":     "List the open pull requests of a GitHub repository.",
		"slack_send_message":    "Send a message to a Slack channel.",
		"gmail_send_email":      "Send an email from Gmail.",
		"calendar_create_event": "Create an event in Google Calendar.",
		"jira_create_issue":     "Create a Jira ticket in a project.",
	} {
		tools = append(tools, tool.New(name, desc, noop))
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
