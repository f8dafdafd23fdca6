package react_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

// The code of docs/agents.md.

type JobQuery struct {
	Keyword string `json:"keyword" jsonschema:"job title or skill, e.g. UX designer"`
}

type Job struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// searchJobs stands for a pure business service.
func searchJobs(_ context.Context, q JobQuery) ([]Job, error) {
	if q.Keyword == "" {
		return nil, &tool.Error{Code: "EMPTY_QUERY", Message: "give a keyword"}
	}
	return []Job{{ID: "j1", Title: q.Keyword + " at Acme"}}, nil
}

var lastJobs = graph.Value[[]Job]("last_jobs")

func Example() {
	// A post-processing node reads the typed results of its tool.
	handleJobs := tool.Handle(func(_ context.Context, _ graph.State, rs []tool.Result[[]Job]) (graph.Update, error) {
		var jobs []Job
		for _, r := range rs {
			if r.Success {
				jobs = append(jobs, r.Data...)
			}
		}
		fmt.Println("handle_jobs saw", len(jobs), "job(s)")
		return lastJobs.Write(jobs), nil
	})
	reg, err := tool.NewRegistry(
		tool.New("search_jobs", "Searches job postings.", searchJobs,
			tool.Options{Then: "handle_jobs", Handler: handleJobs}),
	)
	if err != nil {
		panic(err)
	}
	model := scripted.New(
		llm.AI("", llm.ToolCall{Name: "search_jobs", Args: json.RawMessage(`{"keyword":"UX designer"}`)}),
		llm.AI("There is a UX designer opening at Acme."),
	)
	agent, err := react.New(model, reg, react.Options{
		SystemPrompt: "You are DreamPath, a career counsellor.",
		Channels:     []graph.Channel{lastJobs},
	})
	if err != nil {
		panic(err)
	}
	out, err := react.Run(context.Background(), agent, "UX 디자이너가 되고 싶어요", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Answer)
	fmt.Println(out.Stop, out.ToolsUsed)
	// Output:
	// handle_jobs saw 1 job(s)
	// There is a UX designer opening at Acme.
	// answer [search_jobs]
}
