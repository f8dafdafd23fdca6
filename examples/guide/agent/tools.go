package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/examples/guide/service"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// Tool names, as document 004 gives them; web_search is its google_search,
// for whichever search is configured; save_recommendation is how the model
// writes tool_recommendations.
const (
	ToolRetrieveDocs       = rag.ToolName
	ToolReadMemory         = "read_memory"
	ToolWriteMemory        = "write_memory"
	ToolCalculator         = "calculator"
	ToolGetTime            = "get_time"
	ToolWebSearch          = "web_search"
	ToolSaveRecommendation = "save_recommendation"
)

// Error codes of the guide's tools, besides the tool layer's own: answers
// the model can act on (correct the expression, name another zone, go on
// without the web).
const (
	CodeInvalidExpression = "INVALID_EXPRESSION"
	CodeUnknownTimezone   = "UNKNOWN_TIMEZONE"
	CodeSearchFailed      = "SEARCH_FAILED"
)

// WebSearcher searches the web; service.SearXNG is one.
type WebSearcher interface {
	Search(ctx context.Context, query string, k int) ([]service.WebResult, error)
}

// CalcInput is the calculator's argument.
type CalcInput struct {
	Expression string `json:"expression" jsonschema:"an arithmetic expression: numbers, + - * /, ^ for powers, parentheses, % for percent (20% is 0.2); plain numbers without currency signs or thousands separators, e.g. (49 * 12) * 0.8"`
}

// CalcResult is the calculator's answer.
type CalcResult struct {
	Expression string  `json:"expression"`
	Result     float64 `json:"result"`
}

// TimeInput is get_time's argument.
type TimeInput struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"an IANA time zone such as Asia/Seoul or Europe/Berlin; empty for UTC"`
}

// SearchInput is web_search's argument.
type SearchInput struct {
	Query string `json:"query" jsonschema:"what to search the web for; never put confidential or personal data in it"`
	K     int    `json:"k,omitempty" jsonschema:"how many results (default 5)"`
}

// WebResults is web_search's answer.
type WebResults struct {
	Query   string              `json:"query"`
	Results []service.WebResult `json:"results"`
}

// SaveInput is save_recommendation's argument: the recommendation for one
// sub-task of the plan.
type SaveInput struct {
	SubTask        string   `json:"sub_task" jsonschema:"the sub-task as the plan writes it, or its number in the plan"`
	Recommendation string   `json:"recommendation" jsonschema:"the one service or tool recommended for it"`
	Reason         string   `json:"reason,omitempty" jsonschema:"why it fits, in a sentence"`
	Sources        []string `json:"sources,omitempty" jsonschema:"citations of the retrieved passages it rests on, as retrieve_docs gave them"`
}

// nonBlank makes the named string properties of a schema require a
// character that is not a space, as the tools check.
func nonBlank(names ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		for _, n := range names {
			s.Properties[n].Pattern = `\S`
		}
	}
}

// CalculatorTool is the calculator: service.Eval behind a tool. A
// malformed expression, a division by zero or a result too large are
// INVALID_EXPRESSION errors naming the problem, so the model can write the
// expression again.
func CalculatorTool() *tool.Tool {
	return tool.New(ToolCalculator,
		"Evaluate an arithmetic expression exactly: prices, totals, discounts, a monthly cost over a year. Use it for every figure in the answer instead of doing the sum yourself.",
		func(_ context.Context, in CalcInput) (CalcResult, error) {
			v, err := service.Eval(in.Expression)
			if err != nil {
				return CalcResult{}, &tool.Error{Code: CodeInvalidExpression, Message: err.Error(), Err: err}
			}
			return CalcResult{Expression: service.Trim(in.Expression), Result: v}, nil
		}, tool.Options{Schema: func(s *jsonschema.Schema) {
			nonBlank("expression")(s)
			most := service.MaxExpression
			s.Properties["expression"].MaxLength = &most
		}})
}

// TimeTool is get_time over clock.
func TimeTool(clock service.Clock) *tool.Tool {
	return tool.New(ToolGetTime,
		"Get the current date, time and weekday in a time zone. Models do not know today's date: call it for anything about today, tomorrow, a weekday or a deadline, once per zone to compare offices.",
		func(_ context.Context, in TimeInput) (service.Now, error) {
			now, err := clock.In(in.Timezone)
			if errors.Is(err, service.ErrUnknownTimezone) {
				return now, &tool.Error{Code: CodeUnknownTimezone, Message: err.Error(), Err: err}
			}
			return now, err
		})
}

// WebSearchTool is web_search over s: offered only when a search is
// configured.
func WebSearchTool(s WebSearcher) *tool.Tool {
	return tool.New(ToolWebSearch,
		"Search the web for facts that change often and are missing from the knowledge base (current prices, releases, announcements). Cite each result's URL; when a page disagrees with the knowledge base, the knowledge base wins.",
		func(ctx context.Context, in SearchInput) (WebResults, error) {
			k := in.K
			if k == 0 {
				k = 5
			}
			res, err := s.Search(ctx, strings.TrimSpace(in.Query), k)
			if err != nil {
				return WebResults{}, &tool.Error{Code: CodeSearchFailed, Message: err.Error(), Err: err}
			}
			if res == nil {
				res = []service.WebResult{}
			}
			return WebResults{Query: in.Query, Results: res}, nil
		}, tool.Options{Schema: func(s *jsonschema.Schema) {
			nonBlank("query")(s)
			one, most := 1.0, 10.0
			s.Properties["k"].Minimum, s.Properties["k"].Maximum = &one, &most
		}})
}

// SaveTool is save_recommendation: it records the model's recommendation
// for a sub-task; recommend_tool_node writes what it saved to
// tool_recommendations.
func SaveTool() *tool.Tool {
	return tool.New(ToolSaveRecommendation,
		"Save the one service or tool you recommend for a sub-task of the plan, with why and the citations it rests on. Call it once per sub-task; calling it again for a sub-task replaces its recommendation.",
		func(_ context.Context, in SaveInput) (SaveInput, error) {
			in.SubTask = strings.TrimSpace(in.SubTask)
			in.Recommendation = strings.TrimSpace(in.Recommendation)
			in.Reason = strings.TrimSpace(in.Reason)
			return in, nil
		}, tool.Options{Schema: nonBlank("sub_task", "recommendation")})
}

// coreTools are the guide's own tools, with the knowledge base index ix,
// the memory manager facts, and web search when search is set.
func coreTools(ix *rag.Index, facts *memory.Manager[memory.Fact], user func(context.Context) string, clock service.Clock, search WebSearcher) []*tool.Tool {
	tools := []*tool.Tool{
		ix.Tool(rag.ToolOptions{}),
		memory.SearchTool(facts, memory.ToolOptions{Name: ToolReadMemory, User: user,
			Description: "Search what is remembered about the user (preferences, past feedback, goals) for what matters to this request."}),
		memory.ManageTool(facts, memory.ToolOptions{Name: ToolWriteMemory, User: user,
			Description: "Remember one lasting fact or preference about the user for later conversations (e.g. 'wants estimates in euros'); give the id of a remembered one to change it, with delete true to forget it."}),
		CalculatorTool(),
		TimeTool(clock),
		SaveTool(),
	}
	if search != nil {
		tools = append(tools, WebSearchTool(search))
	}
	return tools
}
