package react

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// FoundTool is one tool the search tool found: what its result lists.
type FoundTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"what the tool you need should do, in a few words (for example: create a calendar event)"`
}

// searchTool is the tool the model searches the catalogue with; the tools
// it finds are offered at the model's next calls in the turn. It lists
// only tools of a's view of the registry in the call's context (the turn's
// pinned tools, or the current ones), which a.tools holds by the time it
// runs.
func searchTool(r *Retrieval, a *agent) *tool.Tool {
	return tool.New(r.SearchToolName,
		"Search the tool catalogue for tools that can do what you need, when none of the tools you have fits. The tools found can be called from your next step on.",
		func(ctx context.Context, in searchArgs) ([]FoundTool, error) {
			if strings.TrimSpace(in.Query) == "" {
				return nil, &tool.Error{Code: tool.CodeInvalidArgs, Message: "query is empty: say what the tool should do"}
			}
			names, err := r.Tools.RetrieveTools(ctx, user(ctx, r), in.Query, r.K)
			if err != nil {
				return nil, err
			}
			view := a.tools.View(ctx)
			found := []FoundTool{}
			for _, n := range names {
				if t, ok := view.Get(n); ok && n != r.SearchToolName {
					found = append(found, FoundTool{Name: n, Description: t.Spec().Description})
				}
			}
			return found, nil
		}, tool.Options{Schema: func(s *jsonschema.Schema) { s.Properties["query"].Pattern = `\S` }})
}

func user(ctx context.Context, r *Retrieval) string {
	if r.User == nil {
		return ""
	}
	return r.User(ctx)
}

// toolSpecs returns the tools offered to the model's next call, from the
// registry's view in ctx (the turn's pinned tools, or the current ones):
// every tool, or with Retrieval those the turn calls for.
func (a *agent) toolSpecs(ctx context.Context, t turn) ([]llm.ToolSpec, error) {
	view := a.tools.View(ctx)
	r := a.opts.Retrieval
	if r == nil {
		return view.Specs(), nil
	}
	var names []string
	if strings.TrimSpace(t.question) != "" {
		got, err := r.Tools.RetrieveTools(ctx, user(ctx, r), t.question, r.K)
		if err != nil {
			return nil, fmt.Errorf("retrieve the tools for the request: %w", err)
		}
		names = got
	}
	// Then what the model found with the search tool, then what it called.
	var called []string
	for _, m := range t.msgs {
		switch {
		case m.Type == llm.TypeTool && m.Name == r.SearchToolName && !m.IsError():
			if res, err := tool.ResultOf[[]FoundTool](m); err == nil {
				for _, f := range res.Data {
					names = append(names, f.Name)
				}
			}
		case m.Type == llm.TypeAI:
			for _, c := range m.ToolCalls {
				called = append(called, c.Name)
			}
		}
	}
	names = append(names, called...)
	if !r.NoSearchTool {
		names = append(names, r.SearchToolName)
	}
	seen := make(map[string]bool, len(names))
	specs := make([]llm.ToolSpec, 0, len(names))
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if tl, ok := view.Get(n); ok {
			specs = append(specs, tl.Spec())
		}
	}
	return specs, nil
}
