package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/marketing/agent"
	"github.com/weftlabs/weft/examples/marketing/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

const request = "지난 분기 채널별 성과를 분석하고 다음 달 캠페인 안을 보고서로 만들어 줘"

var (
	shared     *service.Service
	sharedErr  error
	sharedOnce sync.Once
)

// openService returns the package's one service: the tools only read, and
// seeding is slow under the race detector.
func openService(t *testing.T) *service.Service {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = service.Open(context.Background(), ":memory:") })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// The demo script plans seven todos, four of them at once, and produces
// a Markdown report with charts from the real service's data.
func TestDemo(t *testing.T) {
	ctx := context.Background()
	model, err := scripted.Load("../demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, err := agent.New(ctx, model, openService(t), agent.Options{Checkpointer: checkpoint.NewMemory(), ResultsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := &graph.RunOptions{ThreadID: "demo", StreamModes: []graph.StreamMode{graph.StreamCustom}}
	var evs []events.Event
	run := func(in graph.Update) {
		for ev, err := range a.Graph.Stream(ctx, in, opts) {
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := graph.CustomAs[events.Event](ev); ok {
				evs = append(evs, e)
			}
		}
	}
	run(orchestrator.Input(request, ""))
	snap, err := a.Graph.GetState(ctx, checkpoint.Config{ThreadID: "demo"}, nil)
	if err != nil || len(snap.Interrupts) != 1 {
		t.Fatalf("want the plan approval: %v %+v", err, snap.Interrupts)
	}
	req, _ := graph.InterruptValue[orchestrator.Request](snap.Interrupts[0])
	if req.Kind != orchestrator.KindPlan || req.Plan.Strategy != orchestrator.StrategyParallel {
		t.Fatalf("request %+v", req)
	}
	if diff := cmp.Diff([][]string{{"t1", "t2", "t3", "t4"}, {"t5"}, {"t6"}, {"t7"}}, req.Plan.Levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	run(graph.Resume(orchestrator.Decision{Action: orchestrator.ActionAccept}))
	snap, err = a.Graph.GetState(ctx, checkpoint.Config{ThreadID: "demo"}, nil)
	if err != nil || len(snap.Interrupts) != 0 {
		t.Fatalf("%v %+v", err, snap.Interrupts)
	}
	for _, td := range orchestrator.Todos.Get(snap.Values) {
		if td.Status != orchestrator.StatusDone {
			r := orchestrator.Results.Get(snap.Values)[td.ID]
			t.Errorf("%s %s: %s %s", td.ID, td.Status, r.ErrorCode, r.Error)
		}
	}
	resp := orchestrator.ResponseResult.Get(snap.Values)
	if resp == nil || resp.Format != orchestrator.FormatMixed || len(resp.NextActions) != 3 {
		t.Fatalf("response %+v", resp)
	}
	var names []string
	for _, at := range resp.Attachments {
		names = append(names, at.Name)
	}
	if diff := cmp.Diff([]string{"chart_t3.svg", "chart_t5.svg", "chart_t6.svg", "document_t7.md"}, names); diff != "" {
		t.Errorf("attachments (-want +got):\n%s", diff)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "demo", "task-1", "document_t7.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# 지난 분기 채널 성과 분석과 다음 달 캠페인 제안", "## 채널별 성과", "| 검색광고 |", "## 캠페인 제안", "## 리뷰 감성", "## 고객 세그먼트", "## 재고"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	report, _ := os.ReadFile(resp.Report)
	if !strings.Contains(string(report), "[지난 분기 채널 성과 분석과 다음 달 캠페인 제안](document_t7.md)") || !strings.Contains(string(report), "![채널별 ROAS") {
		t.Errorf("report.md:\n%s", report)
	}
	running := 0
	for _, e := range evs {
		if p, ok := e.(events.TodoProgress); ok && p.Status == "running" {
			running++
		}
	}
	if running != 7 {
		t.Errorf("%d todos ran", running)
	}
}

// Every tool accepts every argument its schema allows. tooltest cannot
// sample the period and month patterns, nor a tool without arguments:
// those tools are checked on the forms the pattern describes.
func TestToolsAcceptTheirSchemas(t *testing.T) {
	svc := openService(t)
	execs, err := agent.Executors(context.Background(), svc)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*tool.Tool{}
	var sampled []*tool.Tool
	for _, e := range execs {
		for _, tl := range e.Tools {
			byName[tl.Name()] = tl
			switch tl.Name() {
			case agent.CollectChannelMetrics, agent.ListCampaigns, agent.DraftCampaignProposal, agent.GetCustomerSegments:
			default:
				sampled = append(sampled, tl)
			}
		}
	}
	// NEEDS_INPUT: a report without analyses before it; NO_DATA: a period
	// the seed data does not reach.
	tooltest.CheckAccepts(t, sampled, agent.CodeNotFound, agent.CodeNoData, agent.CodeNeedsInput)
	ctx := context.Background()
	for _, c := range []struct {
		tool, args string
	}{
		{agent.CollectChannelMetrics, `{"period": "last_quarter"}`},
		{agent.CollectChannelMetrics, `{"period": "last_30_days"}`},
		{agent.CollectChannelMetrics, `{"period": "last_year"}`},
		{agent.ListCampaigns, `{"period": "last_90_days"}`},
		{agent.ListCampaigns, `{"period": "this_quarter"}`},
		{agent.DraftCampaignProposal, `{"month": "next_month"}`},
		{agent.DraftCampaignProposal, `{"month": "2027-01", "budget_krw": 30000000}`},
		{agent.GetCustomerSegments, `{}`},
	} {
		tl := byName[c.tool]
		if err := tl.Validate(json.RawMessage(c.args)); err != nil {
			t.Errorf("%s %s: %v", c.tool, c.args, err)
			continue
		}
		if res, err := tl.Run(ctx, json.RawMessage(c.args), time.Minute); err != nil || !res.Success {
			t.Errorf("%s %s: %+v %v", c.tool, c.args, res, err)
		}
	}
	for _, bad := range []string{`{"period": "yesterday"}`, `{"period": "2025-Q5"}`, `{"period": ""}`} {
		if err := byName[agent.CollectChannelMetrics].Validate(json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted by the schema", bad)
		}
	}
}

// The embedded configuration parses and names only tools that exist.
func TestConfig(t *testing.T) {
	c, err := agent.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "marketing" || !c.Approvals.Plan || c.Approvals.Step || len(c.Tools) != 12 {
		t.Errorf("config %+v", c)
	}
	if _, err := agent.New(context.Background(), scripted.New(), openService(t), agent.Options{}); err != nil {
		t.Errorf("New: %v", err)
	}
}
