package orchestrator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

func TestMergeTodos(t *testing.T) {
	t1 := orchestrator.Todo{ID: "t1", Title: "a", Status: "pending", Version: 1}
	t2 := orchestrator.Todo{ID: "t2", Title: "b", Status: "pending", Version: 1}
	t1run := t1.With(func(n *orchestrator.Todo) { n.Status = "running" })
	t1done := t1run.With(func(n *orchestrator.Todo) { n.Status = "done" })
	if t1.Status != "pending" || t1run.Version != 2 || t1done.Version != 3 {
		t.Fatalf("With changed the original or miscounted: %+v %+v %+v", t1, t1run, t1done)
	}
	current := []orchestrator.Todo{t1, t2}
	tests := []struct {
		name   string
		update []orchestrator.Todo
		want   []orchestrator.Todo
	}{
		{"newer version wins", []orchestrator.Todo{t1run}, []orchestrator.Todo{t1run, t2}},
		{"older version loses", []orchestrator.Todo{t1done, t1run}, []orchestrator.Todo{t1done, t2}},
		{"same version keeps the first", []orchestrator.Todo{{ID: "t2", Title: "other", Version: 1}}, []orchestrator.Todo{t1, t2}},
		{"new id is added", []orchestrator.Todo{{ID: "t3", Version: 1}}, []orchestrator.Todo{t1, t2, {ID: "t3", Version: 1}}},
		{"nothing", nil, []orchestrator.Todo{t1, t2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]orchestrator.Todo(nil), current...)
			got := orchestrator.MergeTodos(current, tt.update)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, current); diff != "" {
				t.Errorf("the current list changed:\n%s", diff)
			}
		})
	}
}

func TestMergeResultsAndTrace(t *testing.T) {
	cur := map[string]orchestrator.Result{"t1": {TodoID: "t1", Status: "failed"}}
	got := orchestrator.MergeResults(cur, map[string]orchestrator.Result{"t1": {TodoID: "t1", Status: "done"}, "t2": {TodoID: "t2"}})
	if got["t1"].Status != "done" || len(got) != 2 || cur["t1"].Status != "failed" {
		t.Errorf("merged %v, current %v", got, cur)
	}
	tr := []orchestrator.TraceEntry{{Event: "a"}}
	out := orchestrator.AppendTrace(tr, []orchestrator.TraceEntry{{Event: "b"}})
	if len(out) != 2 || out[1].Event != "b" || len(tr) != 1 {
		t.Errorf("trace %v", out)
	}
}

func deps(pairs ...string) []orchestrator.Todo {
	var out []orchestrator.Todo
	for _, p := range pairs {
		id, ds, _ := strings.Cut(p, ":")
		t := orchestrator.Todo{ID: id}
		if ds != "" {
			t.DependsOn = strings.Split(ds, ",")
		}
		out = append(out, t)
	}
	return out
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name     string
		todos    []orchestrator.Todo
		order    []string
		levels   [][]string
		strategy orchestrator.Strategy
		cycle    []string
	}{
		{name: "single", todos: deps("a"), order: []string{"a"}, levels: [][]string{{"a"}}, strategy: "single"},
		{name: "chain", todos: deps("c:b", "b:a", "a"), order: []string{"a", "b", "c"}, levels: [][]string{{"a"}, {"b"}, {"c"}}, strategy: "sequential"},
		{name: "diamond", todos: deps("a", "b:a", "c:a", "d:b,c"), order: []string{"a", "b", "c", "d"}, levels: [][]string{{"a"}, {"b", "c"}, {"d"}}, strategy: "parallel"},
		{name: "uneven", todos: deps("a", "b", "c:a", "d:c,b"), order: []string{"a", "b", "c", "d"}, levels: [][]string{{"a", "b"}, {"c"}, {"d"}}, strategy: "parallel"},
		{name: "two cycle", todos: deps("a:b", "b:a"), cycle: []string{"a", "b", "a"}},
		{name: "three cycle after a root", todos: deps("r", "x:z,r", "y:x", "z:y"), cycle: []string{"x", "y", "z", "x"}},
		{name: "self", todos: deps("a:a"), cycle: []string{"a", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			order, levels, err := orchestrator.Order(tt.todos)
			if tt.cycle != nil {
				var ce *orchestrator.CycleError
				if !errors.As(err, &ce) || !errors.Is(err, orchestrator.ErrCycle) {
					t.Fatalf("err %v, want a cycle", err)
				}
				if diff := cmp.Diff(tt.cycle, ce.Cycle); diff != "" {
					t.Errorf("cycle (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.order, order); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.levels, levels); diff != "" {
				t.Errorf("levels (-want +got):\n%s", diff)
			}
			if s := orchestrator.DecideStrategy(levels); s != tt.strategy {
				t.Errorf("strategy %s, want %s", s, tt.strategy)
			}
		})
	}
}

func TestMermaid(t *testing.T) {
	m := orchestrator.Mermaid([]orchestrator.Todo{
		{ID: "t1", Title: `say "hi" <b>`, Executor: "data", Tool: "fetch", Status: "done"},
		{ID: "t-2", Title: "next", Executor: "insight", DependsOn: []string{"t1"}, Status: "pending"},
	})
	for _, want := range []string{
		"flowchart TD",
		`todo_t1["t1: say #quot;hi#quot; #lt;b#gt;<br/><small>data · fetch</small>"]:::done`,
		`todo_t_2d_2["t-2: next<br/><small>insight</small>"]:::pending`,
		"todo_t1 --> todo_t_2d_2",
	} {
		contains(t, "mermaid", m, want)
	}
}

func TestChartSVG(t *testing.T) {
	c := orchestrator.Chart{Title: "ROAS <by> channel", Labels: []string{"검색", "SNS"}, Unit: "%",
		Series: []orchestrator.ChartSeries{{Name: "Q3", Values: []float64{3.5, -1}}, {Name: "Q4", Values: []float64{4, 2}}}}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "ROAS &lt;by&gt; channel", ">검색<", ">Q4<", "</svg>"} {
		contains(t, "svg", string(svg), want)
	}
	if n := strings.Count(string(svg), "<rect x="); n != 4+2 { // bars and legend boxes
		t.Errorf("%d rects", n)
	}
	for _, bad := range []orchestrator.Chart{{}, {Labels: []string{"a"}}, {Labels: []string{"a"}, Series: []orchestrator.ChartSeries{{Values: []float64{1, 2}}}}} {
		if _, err := bad.SVG(); !errors.Is(err, orchestrator.ErrInvalidChart) {
			t.Errorf("chart %+v: err %v", bad, err)
		}
	}
}

func TestLexicalRetriever(t *testing.T) {
	mk := func(name, desc string) *tool.Tool {
		return tool.New(name, desc, func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	tools := []*tool.Tool{
		mk("collect_channel_metrics", "채널별 광고 성과(노출, 클릭, 전환, 매출)를 수집합니다."),
		mk("analyze_review_sentiment", "리뷰의 감성과 키워드를 분석합니다."),
		mk("check_inventory", "상품 재고를 확인합니다."),
	}
	r := orchestrator.LexicalRetriever{Tools: func() []*tool.Tool { return tools }}
	got, err := r.RetrieveTools(context.Background(), orchestrator.RetrieveRequest{Query: "지난 분기 채널별 성과 수집", K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "collect_channel_metrics" {
		t.Errorf("ranked %+v", got)
	}
	got, _ = r.RetrieveTools(context.Background(), orchestrator.RetrieveRequest{Query: "재고", Among: []string{"check_inventory", "analyze_review_sentiment"}, K: 5})
	if len(got) != 2 || got[0].Name != "check_inventory" {
		t.Errorf("among: %+v", got)
	}
}

func TestPauseSwitch(t *testing.T) {
	var p orchestrator.PauseSwitch
	ctx := context.Background()
	if p.PauseRequested(ctx, "a") {
		t.Error("paused without a request")
	}
	p.Request("a")
	if p.PauseRequested(ctx, "b") || !p.PauseRequested(ctx, "a") || p.PauseRequested(ctx, "a") {
		t.Error("a request is reported once, for its thread")
	}
}

func TestConfig(t *testing.T) {
	good := `
name: shop
approvals: {enabled: true, step: true}
models: {planning: "openai:gpt-4o"}
intents:
  ANALYSIS: [trend]
tools:
  fetch: {seconds: 2.5, cost: 0.01}
execution: {preparation: light, tool_timeout: 5s}
prompts: {rejected: "거절됨%s (100%%)"}
`
	c, err := orchestrator.ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "shop" || !c.Approvals.Step || !c.Approvals.Plan || c.Models.Planning != "openai:gpt-4o" || len(c.Intents) != 1 ||
		c.Tools["fetch"].Seconds != 2.5 || c.Execution.Preparation != "light" || c.Execution.ToolTimeout.Seconds() != 5 || c.Execution.TopTools != 5 {
		t.Errorf("config %+v", c)
	}
	tests := []struct {
		doc  string
		want []string
	}{
		{"approvals: {stpe: true}", []string{"approvals.stpe (line 1): unknown key (known: clarification, enabled, error, pause, plan, step)"}},
		{"approvals: {step: maybe}", []string{`approvals.step (line 1): "maybe" is not true or false`}},
		{"execution: {preparation: fast, top_tools: 0}", []string{`execution.preparation: "fast" is not one of light, detailed, auto`, "execution.top_tools: 0: want at least 1"}},
		{"memory: {reuse_confidence: 1.5}", []string{"memory.reuse_confidence: 1.5: want a number from 0 to 1"}},
		{"tools: {fetch: {cost: -1}}", []string{"tools.fetch.cost: -1: want 0 or more"}},
		{"execution: {tool_timeout: soon}", []string{`execution.tool_timeout (line 1): "soon" is not a duration`}},
		{"intents: {}", []string{"intents: empty"}},
		// The fixed texts are format strings: a verb other than the one
		// %s would print %!d(string=...) in the answer.
		{`prompts: {rejected: "rejected (%d)"}`, []string{`prompts.rejected: %d: want at most one %s (the reason), and %% for a percent sign`}},
		{`prompts: {clarification_added: "note: %v"}`, []string{`prompts.clarification_added: %v: want exactly one %s (the answer), and %% for a percent sign`}},
	}
	for _, tt := range tests {
		_, err := orchestrator.ParseConfig([]byte(tt.doc))
		if !errors.Is(err, orchestrator.ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", tt.doc, err)
			continue
		}
		for _, w := range tt.want {
			contains(t, tt.doc, err.Error(), w)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("nme: x"), 0o644)
	if _, err := orchestrator.LoadConfig(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "nme") {
		t.Errorf("LoadConfig: %v", err)
	}
}

// A configuration naming a tool no executor has, or an executor that does
// not exist, is refused naming the key.
func TestNewConfigTools(t *testing.T) {
	f := &fixture{}
	for doc, want := range map[string]string{
		"tools: {fecth: {seconds: 1}}":        "tools.fecth: no executor has a tool of that name (tools: combine, fetch, flaky)",
		"tools: {fetch: {executor: finance}}": `tools.fetch.executor: no executor "finance" (executors: data, insight)`,
	} {
		cfg, err := orchestrator.ParseConfig([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		_, err = orchestrator.New(orchestrator.Options{Config: &cfg, Models: orchestrator.Models{Default: scripted.New()}, Executors: f.executors()})
		if !errors.Is(err, orchestrator.ErrInvalidConfig) {
			t.Errorf("%s: err %v", doc, err)
			continue
		}
		contains(t, doc, err.Error(), want)
	}
	if _, err := orchestrator.New(orchestrator.Options{Executors: f.executors()}); !errors.Is(err, orchestrator.ErrInvalidOptions) {
		t.Errorf("no model: %v", err)
	}
}

// Each thread's results have a directory of their own inside the results
// directory, whatever characters its id has: threads are the callers' to
// name (a server takes client-chosen ids), and two threads, maybe two
// users', must never write over each other's files.
func TestTaskDirKeepsThreadsApart(t *testing.T) {
	root := t.TempDir()
	a := newAgent(t, &fixture{}, scripted.New(), setup{config: func(c *orchestrator.Config) { c.Results.Dir = root }})
	threads := []string{"a:b", "a_b", "a/b", "a.b", "a%3Ab", "..", ".", "", "run", "_", "한글", "한_", "\xff", "\uFFFD", strings.Repeat("x", 300), strings.Repeat("x", 299) + "y"}
	seen := map[string]string{}
	for _, th := range threads {
		dir := a.TaskDir(th, 1)
		if td := orchestrator.ThreadDir(root, th); filepath.Dir(dir) != td {
			t.Errorf("thread %q: ThreadDir is %s, want the parent of TaskDir %s", th, td, dir)
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || strings.Count(filepath.ToSlash(rel), "/") != 1 {
			t.Errorf("thread %q: %s is not one directory inside %s", th, dir, root)
		}
		if other, dup := seen[dir]; dup && !(th == "" && other == "run" || th == "run" && other == "") {
			t.Errorf("threads %q and %q share %s", other, th, dir)
		}
		seen[dir] = th
	}
	if d := orchestrator.ThreadDir("", "t1"); d != "" {
		t.Errorf(`ThreadDir("", "t1") = %q, want "" (results not saved)`, d)
	}
}

// A configuration file never panics the parser.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("approvals: {step: true}\ntools: {a: {cost: 1}}\nintents: {X: [y]}\n"))
	f.Add([]byte("execution: {error_patterns: [a, ''], tool_timeout: 1s}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := orchestrator.ParseConfig(data)
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("parsed config does not validate: %v", verr)
			}
		}
	})
}
