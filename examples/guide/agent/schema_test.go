package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weftlabs/weft/examples/guide/agent"
	"github.com/weftlabs/weft/examples/guide/service"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

// Every argument set the tools' schemas admit is accepted, or answered with
// an error code the model can act on.
func TestToolsAcceptTheirSchemas(t *testing.T) {
	tooltest.CheckAccepts(t, []*tool.Tool{agent.CalculatorTool(), agent.TimeTool(service.Clock{}), agent.WebSearchTool(fakeSearch{}), agent.SaveTool()},
		agent.CodeInvalidExpression, agent.CodeUnknownTimezone)
	e := newEnv(t, scripted.New(), scripted.New(), agent.Options{WebSearch: fakeSearch{}})
	tooltest.CheckAccepts(t, e.a.Tools.Tools(), agent.CodeInvalidExpression, agent.CodeUnknownTimezone, "NOT_FOUND")
}

func TestUtilityTools(t *testing.T) {
	clock := service.Clock{Now: func() time.Time { return time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC) }}
	tests := []struct {
		tool     *tool.Tool
		args     string
		wantData string
		wantCode string
	}{
		{agent.CalculatorTool(), `{"expression": "(49 * 12) * 0.8"}`, `{"expression":"(49 * 12) * 0.8","result":470.4}`, ""},
		{agent.CalculatorTool(), `{"expression": "1200 * 15%"}`, `{"expression":"1200 * 15%","result":180}`, ""},
		{agent.CalculatorTool(), `{"expression": "1 / 0"}`, "", agent.CodeInvalidExpression},
		{agent.CalculatorTool(), `{"expression": "1,200 + 3"}`, "", agent.CodeInvalidExpression},
		{agent.TimeTool(clock), `{"timezone": "Asia/Seoul"}`, `{"timezone":"Asia/Seoul","time":"2026-11-27T08:00:00+09:00","date":"2026-11-27","weekday":"Friday","utc_offset":"+09:00"}`, ""},
		{agent.TimeTool(clock), `{}`, `{"timezone":"UTC","time":"2026-11-26T23:00:00Z","date":"2026-11-26","weekday":"Thursday","utc_offset":"+00:00"}`, ""},
		{agent.TimeTool(clock), `{"timezone": "Seoul"}`, "", agent.CodeUnknownTimezone},
		{agent.SaveTool(), `{"sub_task": " 2 ", "recommendation": " CapCut "}`, `{"sub_task":"2","recommendation":"CapCut"}`, ""},
		{agent.SaveTool(), `{"sub_task": "2", "recommendation": "  "}`, "", tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		r, err := tt.tool.Run(t.Context(), json.RawMessage(tt.args), time.Second)
		if err != nil && tt.wantCode == "" {
			t.Errorf("%s(%s): %v", tt.tool.Name(), tt.args, err)
			continue
		}
		if r.ErrorCode != tt.wantCode {
			t.Errorf("%s(%s) error code = %q (%s), want %q", tt.tool.Name(), tt.args, r.ErrorCode, r.Error, tt.wantCode)
			continue
		}
		if tt.wantCode != "" {
			if r.Error == "" {
				t.Errorf("%s(%s) fails without saying why", tt.tool.Name(), tt.args)
			}
			continue
		}
		got, _ := json.Marshal(r.Data)
		if string(got) != tt.wantData {
			t.Errorf("%s(%s) = %s, want %s", tt.tool.Name(), tt.args, got, tt.wantData)
		}
	}
}

// The zero Options run offline over the shipped knowledge base.
func TestNewLoadsTheKnowledgeBase(t *testing.T) {
	a, err := agent.New(t.Context(), scripted.New(), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(t.Context())
	if n := a.Index.Len(); n < 40 {
		t.Errorf("the knowledge base has %d chunks, want the shipped 46", n)
	}
	if _, ok := a.Tools.Get(agent.ToolWebSearch); ok {
		t.Error("web_search is offered without a search configured")
	}
}

// New that fails leaves nothing running: a registry that already has a
// tool of the guide's fails it after the reflector started.
func TestNewFailsCleanly(t *testing.T) {
	ix, err := sharedKB()
	if err != nil {
		t.Fatal(err)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	taken, err := tool.NewRegistry(tool.New(agent.ToolRetrieveDocs, "Someone else's.", func(context.Context, struct{}) (string, error) { return "", nil }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.New(t.Context(), scripted.New(), agent.Options{Index: ix, Tools: taken}); err == nil {
		t.Fatal("New succeeded with the guide's tool name taken")
	}
}
