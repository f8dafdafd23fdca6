package browser

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	marketingagent "github.com/weftlabs/weft/examples/marketing/agent"
	marketingservice "github.com/weftlabs/weft/examples/marketing/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
)

// marketingRequest is the request examples/marketing/demo.yaml answers.
const marketingRequest = "지난 분기 채널별 성과를 분석하고 다음 달 캠페인 안을 보고서로 만들어 줘"

// orchScript is a scripted model from testdata (read before startServer
// changes the working directory).
func orchScript(t *testing.T, name string) llm.ChatModel {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	m, err := scripted.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// threadID is the open thread's id, from the page's address.
func (p *page) threadID() string {
	p.t.Helper()
	id := eval[string](p, `location.hash.replace("#thread=", "")`)
	if len(id) != 36 {
		p.t.Fatalf("no thread open (address %q)", id)
	}
	return id
}

// threadState reads a thread's state values over the API.
func (s *testServer) threadState(t *testing.T, id string) map[string]json.RawMessage {
	t.Helper()
	code, body := s.apiGet("/threads/" + id + "/state")
	if code != 200 {
		t.Fatalf("state of %s: %d %s", id, code, body)
	}
	var st struct {
		Values map[string]json.RawMessage `json:"values"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	return st.Values
}

// runCount is the number of runs a thread had.
func (s *testServer) runCount(t *testing.T, id string) int {
	t.Helper()
	code, body := s.apiGet("/threads/" + id + "/runs?limit=100")
	if code != 200 {
		t.Fatalf("runs of %s: %d %s", id, code, body)
	}
	var runs []json.RawMessage
	if err := json.Unmarshal([]byte(body), &runs); err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// waitRunEnd waits until the page shows the run ended (the panel's status
// says how).
func (p *page) waitRunEnd(state string) {
	p.t.Helper()
	p.waitFor("the run to end "+state, `(() => { const s = document.querySelector('[data-testid="orch-run-status"]');
		return s && s.dataset.state === `+jsString(state)+` && document.body.dataset.run === "idle" })()`)
}

// waitPoint waits for an approval point's view, once the run that stopped
// there has settled (the page reloaded the thread's state, so the view
// drawn is the one that stays).
func (p *page) waitPoint(what, expr string) {
	p.t.Helper()
	p.waitFor(what, `document.body.dataset.run === "idle" && (`+expr+`)`)
}

type todoRow struct {
	ID, Status, Text string
}

// panelTodos lists the run panel's todos.
func (p *page) panelTodos() []todoRow {
	p.t.Helper()
	return eval[[]todoRow](p, `[...document.querySelectorAll('[data-testid="orch-todos"] > li')].map(li => ({ID: li.dataset.todoId, Status: li.dataset.status, Text: li.textContent}))`)
}

func statuses(rows []todoRow) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID+":"+r.Status)
	}
	return strings.Join(out, " ")
}

// The clarification is answered (an empty answer is refused in the page),
// then the plan is edited: a cycle is refused before anything is sent,
// an unknown tool is refused by the orchestrator (its problem shown), and
// an edit that removes a todo, adds one with a dependency and renames
// another runs. Reopened, the panel is rebuilt from the thread's state.
func TestOrchClarifyAndEditPlan(t *testing.T) {
	m := orchScript(t, "orch-clarify.yaml")
	s := startServer(t, &serverOptions{Model: m})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send("지난 분기 캠페인 보고서를 만들어 줘")

	p.waitPoint("the clarification", `!!document.querySelector('[data-testid="orch-clarify"]')`)
	if q := p.text(testid("orch-clarify-question")); q != "어느 상품의 캠페인을 분석할까요?" {
		t.Errorf("question = %q", q)
	}
	if got := p.text(`[data-testid="orch-clarify"] .orch-understood`); !strings.Contains(got, "CONTENT") || !strings.Contains(got, "지난 분기") {
		t.Errorf("intent and entities shown = %q", got)
	}
	p.waitFor("the panel waiting in the cognitive layer", `document.querySelector('[data-testid="orch-layers"] li[aria-current="step"]')?.dataset.layer === "cognitive" &&
		document.querySelector('[data-testid="orch-run-status"]').dataset.state === "waiting"`)
	tid := p.threadID()
	runs := s.runCount(t, tid)
	p.click(testid("orch-clarify-send"))
	if got := p.text(`[data-testid="orch-clarify"] [data-testid="orch-error"]`); got == "" || s.runCount(t, tid) != runs {
		t.Fatalf("an empty answer: error %q, runs %d → %d; want it refused in the page", got, runs, s.runCount(t, tid))
	}
	p.fill(testid("orch-clarify-answer"), "딥 모이스처 크림")
	p.click(testid("orch-clarify-send"))

	// The plan: its graph, estimate and todos.
	p.waitPoint("the plan", `!!document.querySelector('[data-testid="orch-plan"] [data-testid="plan-dag"]')`)
	nodes := eval[[]string](p, `[...document.querySelectorAll('[data-testid="orch-plan"] [data-testid="plan-dag"] g.node')].map(g => g.dataset.id)`)
	edges := eval[[]string](p, `[...document.querySelectorAll('[data-testid="orch-plan"] [data-testid="plan-dag"] path.edge')].map(e => e.dataset.from + ">" + e.dataset.to)`)
	slices.Sort(nodes)
	slices.Sort(edges)
	if strings.Join(nodes, ",") != "t1,t2,t3,t4" || strings.Join(edges, ",") != "t1>t4,t2>t4" {
		t.Errorf("plan graph: nodes %v edges %v", nodes, edges)
	}
	if facts := p.text(testid("plan-facts")); !strings.Contains(facts, "parallel") || !strings.Contains(facts, "t1 → t4") {
		t.Errorf("plan facts = %q", facts)
	}
	var req string
	if err := json.Unmarshal(s.threadState(t, tid)["request"], &req); err != nil || !strings.Contains(req, "딥 모이스처 크림") {
		t.Errorf("request after the clarification = %q (%v), want the answer joined to it", req, err)
	}

	// A cycle is refused in the page, and drawn.
	p.click(testid("plan-edit"))
	p.click(`[data-testid="plan-todo-deps-0"] input[data-dep="t4"]`)
	p.waitFor("the cycle named", `document.querySelector('[data-testid="plan-errors"]')?.textContent.includes("dependency cycle: t1 → t4 → t1")`)
	if n := eval[int](p, `document.querySelectorAll('[data-testid="orch-plan"] path.edge.cycle').length`); n != 2 {
		t.Errorf("%d edges drawn as the cycle, want 2", n)
	}
	runs = s.runCount(t, tid)
	p.click(testid("plan-edit-send"))
	if !eval[bool](p, `!!document.querySelector('[data-testid="plan-editor"]')`) || s.runCount(t, tid) != runs {
		t.Fatal("a plan with a cycle was sent")
	}
	p.click(`[data-testid="plan-todo-deps-0"] input[data-dep="t4"]`)
	p.waitFor("the plan valid again", `document.querySelector('[data-testid="plan-check"]').classList.contains("valid")`)

	// A tool the orchestrator does not know: refused there, and said.
	p.fill(testid("plan-todo-tool-2"), "no_such_tool")
	p.click(testid("plan-edit-send"))
	p.waitPoint("the orchestrator's problem", `document.querySelector('[data-testid="orch-plan"] [data-testid="orch-problem"]')?.textContent.includes("no_such_tool")`)

	// The edit that runs: t3 removed, t5 added before t4, t2 renamed.
	p.click(testid("plan-edit"))
	p.click(testid("plan-todo-remove-2"))
	p.click(testid("plan-add-todo"))
	p.fill(testid("plan-todo-id-3"), "t5")
	p.fill(testid("plan-todo-title-3"), "리뷰 감성 분석")
	p.fill(testid("plan-todo-executor-3"), "insight")
	p.fill(testid("plan-todo-tool-3"), "analyze_review_sentiment")
	p.fill(testid("plan-todo-params-3"), `{"period": "last_quarter", "product_id": "p-01"}`)
	p.click(`[data-testid="plan-todo-deps-2"] input[data-dep="t5"]`) // t4 (now third) needs t5
	p.fill(testid("plan-todo-title-1"), "VIP 고객 세그먼트 조회")
	p.waitFor("the edited plan valid", `document.querySelector('[data-testid="plan-check"]').classList.contains("valid")`)
	p.click(testid("plan-edit-send"))
	p.waitRunEnd("done")

	rows := p.panelTodos()
	if got := statuses(rows); got != "t1:done t2:done t4:done t5:done" {
		t.Errorf("panel todos = %s", got)
	}
	var todos []orchestrator.Todo
	if err := json.Unmarshal(s.threadState(t, tid)["todos"], &todos); err != nil {
		t.Fatal(err)
	}
	byID := map[string]orchestrator.Todo{}
	for _, td := range todos {
		byID[td.ID] = td
	}
	if len(todos) != 4 || byID["t2"].Title != "VIP 고객 세그먼트 조회" || !slices.Contains(byID["t4"].DependsOn, "t5") || byID["t3"].ID != "" {
		t.Errorf("todos run = %+v", todos)
	}

	// Reopened: the panel is rebuilt from the state.
	p.open(s.URL + "/#thread=" + tid)
	p.waitFor("the rebuilt panel", `document.querySelectorAll('[data-testid="orch-todos"] > li[data-status="done"]').length === 4 &&
		!!document.querySelector('[data-testid="orch-result"]:not([hidden])')`)
	if got := statuses(p.panelTodos()); got != "t1:done t2:done t4:done t5:done" {
		t.Errorf("panel todos after reopening = %s", got)
	}
}

// Step approval: the step's parameters are a form generated from the
// tool's JSON Schema; a value the schema refuses is marked in the page and
// not sent; the edited parameters run; a skipped step skips the todo that
// needs it.
func TestOrchStepApprovalEditAndSkip(t *testing.T) {
	m := orchScript(t, "orch-step.yaml")
	s := startServer(t, &serverOptions{Model: m, Configure: func(_ string, c *orchestrator.Config) {
		c.Approvals.Plan = false
		c.Approvals.Step = true
		c.Execution.Preparation = orchestrator.PrepareLight
	}})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send("지난 분기 채널 성과 보고서를 만들어 줘")

	p.waitPoint("t1's step", `document.querySelector('[data-testid="orch-step"]')?.dataset.todoId === "t1"`)
	if tool := p.text(testid("orch-step-tool")); tool != "collect_channel_metrics" {
		t.Errorf("step tool = %q", tool)
	}
	if d := p.text(testid("orch-step-description")); d == "" {
		t.Error("the step shows no description of its tool")
	}
	field := eval[map[string]string](p, `(() => { const f = document.querySelector('[data-field="period"]');
		return {value: f.querySelector("input").value, label: f.querySelector("label").textContent, help: (f.querySelector(".help") || {}).textContent || ""} })()`)
	if field["value"] != "last_quarter" || !strings.Contains(field["label"], "required") || !strings.Contains(field["help"], "last_90_days") {
		t.Errorf("period field = %v, want the plan's value, a required mark and the schema's description", field)
	}
	tid := p.threadID()
	runs := s.runCount(t, tid)
	p.fill(testid("param-period"), "yesterday")
	p.click(testid("step-edit"))
	if msg := p.text(`[data-field="period"] .field-error`); !strings.Contains(msg, "period") || s.runCount(t, tid) != runs {
		t.Fatalf("an invalid period: message %q, runs %d → %d; want it refused in the page", msg, runs, s.runCount(t, tid))
	}
	if inv := eval[string](p, `document.querySelector('[data-testid="param-period"]').getAttribute("aria-invalid") || ""`); inv != "true" {
		t.Errorf("the invalid field is not marked aria-invalid")
	}
	p.fill(testid("param-period"), "last_90_days")
	p.click(testid("step-edit"))

	p.waitPoint("t2's step", `document.querySelector('[data-testid="orch-step"]')?.dataset.todoId === "t2"`)
	p.click(testid("step-skip"))
	p.fill(testid("step-skip-reason"), "세그먼트는 필요 없음")
	p.click(testid("step-skip-confirm"))
	p.waitRunEnd("done")

	if got := statuses(p.panelTodos()); got != "t1:done t2:skipped t3:skipped" {
		t.Errorf("panel todos = %s", got)
	}
	var results map[string]orchestrator.Result
	if err := json.Unmarshal(s.threadState(t, tid)["execution_results"], &results); err != nil {
		t.Fatal(err)
	}
	if p := string(results["t1"].Params); !strings.Contains(p, `"last_90_days"`) {
		t.Errorf("t1 ran with %s, want the edited period", p)
	}
	if counts := p.text(testid("orch-result-counts")); !strings.Contains(counts, "1 done") || !strings.Contains(counts, "2 skipped") {
		t.Errorf("result counts = %q", counts)
	}
}

// The result of the demo: the report opens rendered from Markdown with its
// charts, a step's result file downloads, and a next action is sent as the
// next message.
func TestOrchReportFilesAndNextActions(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send(marketingRequest)
	p.waitPoint("the plan", `!!document.querySelector('[data-testid="plan-accept"]')`)
	p.click(testid("plan-accept"))
	p.waitRunEnd("done")
	p.waitFor("the result files", `!!document.querySelector('[data-testid="orch-files"]')`)

	// The charts attached to the answer.
	p.waitFor("the charts", `(() => { const imgs = [...document.querySelectorAll('[data-testid="orch-attachment-image"]')];
		return imgs.length === 3 && imgs.every(i => i.complete && i.naturalWidth > 0) })()`)

	// The report.
	p.click(testid("open-report"))
	p.waitFor("the report", `document.querySelector('[data-testid="report-body"]')?.dataset.loaded === "true"`)
	report := eval[map[string]any](p, `(() => { const b = document.querySelector('[data-testid="report-body"]');
		return {h1: b.querySelector("h1")?.textContent || "", tables: b.querySelectorAll("table").length, rows: b.querySelectorAll("tbody tr").length,
			mermaid: !!b.querySelector("code.language-mermaid"), scripts: b.querySelectorAll("script").length} })()`)
	if report["h1"] != marketingRequest || report["tables"].(float64) < 1 || report["rows"].(float64) != 7 || report["mermaid"] != true || report["scripts"].(float64) != 0 {
		t.Errorf("report rendered = %v", report)
	}
	p.waitFor("the report's charts", `(() => { const imgs = [...document.querySelectorAll('[data-testid="report-body"] img')];
		return imgs.length === 3 && imgs.every(i => i.complete && i.naturalWidth > 0) })()`)
	p.click(testid("report-close"))

	// A step's result file, downloaded: the page receives its bytes and
	// hands them to the browser as a file of that name.
	eval[bool](p, `(() => { window.__downloads = []; const blobs = new Map(); const make = URL.createObjectURL;
		URL.createObjectURL = (b) => { const u = make(b); blobs.set(u, b); return u; };
		document.addEventListener("click", e => {
			const a = e.target.closest && e.target.closest("a[download]");
			if (a && blobs.has(a.href)) window.__downloads.push(blobs.get(a.href).text().then(text => ({name: a.download, text})));
		}, true); return true })()`)
	p.click(`[data-testid="orch-todo-t1"] [data-testid="file-download"][data-name$="step_t1_done.md"]`)
	p.waitFor("the download", `window.__downloads.length === 1`)
	got := eval[map[string]string](p, `window.__downloads[0]`)
	if got["name"] != "step_t1_done.md" || !strings.HasPrefix(got["text"], "# t1: 지난 분기 채널별 성과 수집") {
		t.Errorf("downloaded %q: %.80q", got["name"], got["text"])
	}

	// A next action is the next message.
	next := p.text(testid("next-action"))
	if next == "" {
		t.Fatal("no next actions")
	}
	p.click(testid("next-action"))
	p.waitFor("the next action sent", `[...document.querySelectorAll('[data-testid="msg-human"]')].pop()?.textContent.includes(`+jsString(next)+`)`)
}

// toolGate holds tool calls until it is opened; the tools named in
// failOnce fail their first call.
type toolGate struct {
	open     chan struct{}
	once     sync.Once
	started  chan string
	mu       sync.Mutex
	failOnce map[string]bool
}

func newToolGate() *toolGate {
	return &toolGate{open: make(chan struct{}), started: make(chan string, 64)}
}

// Open lets every held call, and every later one, go on.
func (g *toolGate) Open() { g.once.Do(func() { close(g.open) }) }

// held is orig, waiting at the gate before it runs: the same name,
// description and schema, and the same result, metadata included.
func (g *toolGate) held(orig *tool.Tool) *tool.Tool {
	spec := orig.Spec()
	return tool.NewRaw(orig.Name(), spec.Description, spec.Parameters, func(ctx context.Context, args json.RawMessage) (any, error) {
		select {
		case g.started <- orig.Name():
		default:
		}
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
		fail := g.failOnce[orig.Name()]
		delete(g.failOnce, orig.Name())
		g.mu.Unlock()
		if fail {
			return nil, errors.New("the data source did not answer")
		}
		r, err := orig.Run(ctx, args, time.Minute)
		for k, v := range r.Meta {
			tool.SetMeta(ctx, k, v)
		}
		if err != nil {
			return nil, err
		}
		if !r.Success {
			return nil, errors.New(r.Error)
		}
		return r.Data, nil
	})
}

// heldOptions change heldMarketing's agent.
type heldOptions struct {
	configure func(*orchestrator.Config)
	memory    orchestrator.Memory
}

// heldMarketing is the marketing agent over model whose tools wait at the
// gate, with no plan approval; opts, if set, change it further.
func heldMarketing(t *testing.T, model llm.ChatModel, g *toolGate, opts *heldOptions) server.GraphFunc {
	if opts == nil {
		opts = &heldOptions{}
	}
	dir := t.TempDir()
	return func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		ctx := context.Background()
		svc, err := marketingservice.Open(ctx, filepath.Join(dir, "marketing.db"))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { svc.Close() })
		execs, err := marketingagent.Executors(ctx, svc)
		if err != nil {
			return nil, err
		}
		for i := range execs {
			for j, tl := range execs[i].Tools {
				execs[i].Tools[j] = g.held(tl)
			}
		}
		cfg, err := marketingagent.DefaultConfig()
		if err != nil {
			return nil, err
		}
		cfg.Approvals.Plan = false
		cfg.Results.Dir = filepath.Join(dir, "results")
		if opts.configure != nil {
			opts.configure(&cfg)
		}
		// Without API keys a run names no user, and memory works for one.
		a, err := orchestrator.New(orchestrator.Options{Config: &cfg, Models: orchestrator.Models{Default: model}, Executors: execs,
			Checkpointer: saver, Memory: opts.memory, DefaultUser: "browser-test"})
		if err != nil {
			return nil, err
		}
		return a.Graph, nil
	}
}

// Independent todos run at the same time, and the page shows them so: the
// demo plan's first four todos are running together in the panel (their
// tools are held until the page shows it), each with its time going, in
// the execution layer; then they and the rest end.
func TestOrchParallelTodos(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "marketing", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := scripted.Parse(demo)
	if err != nil {
		t.Fatal(err)
	}
	g := newToolGate()
	defer g.Open()
	s := startServer(t, &serverOptions{Graphs: map[string]server.GraphFunc{"marketing": heldMarketing(t, model, g, nil)}})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send(marketingRequest)

	p.waitFor("four todos running together", `document.querySelectorAll('[data-testid="orch-todos"] > li[data-status="running"]').length === 4`)
	running := eval[[]string](p, `[...document.querySelectorAll('[data-testid="orch-todos"] > li[data-status="running"]')].map(li => li.dataset.todoId)`)
	if strings.Join(running, ",") != "t1,t2,t3,t4" {
		t.Errorf("running together: %v, want t1 to t4", running)
	}
	if layer := eval[string](p, `document.querySelector('[data-testid="orch-layers"] li[aria-current="step"]')?.dataset.layer || ""`); layer != "execution" {
		t.Errorf("current layer %q, want execution", layer)
	}
	if now := p.text(testid("orch-running-now")); !strings.Contains(now, "t1, t2, t3, t4") {
		t.Errorf("running now = %q", now)
	}
	if n := eval[int](p, `document.querySelectorAll('[data-testid="orch-dag"] g.node.st-running').length`); n != 4 {
		t.Errorf("%d nodes of the graph drawn running, want 4", n)
	}
	// Their times go on while they run, and the run's.
	first := p.text(`[data-testid="orch-todo-t1"] .time`)
	run := p.text(testid("orch-run-elapsed"))
	p.waitFor("t1's time to advance", `document.querySelector('[data-testid="orch-todo-t1"] .time').textContent !== `+jsString(first))
	p.waitFor("the run's time to advance", `document.querySelector('[data-testid="orch-run-elapsed"]').textContent !== `+jsString(run))
	// The panel's graph, enlarged, is coloured live too.
	p.click(testid("orch-dag-enlarge"))
	p.waitFor("the enlarged graph", `document.querySelectorAll('[data-testid="graph-dialog"] g.node.st-running').length === 4`)
	if w := eval[[]float64](p, `(() => { const s = document.querySelector('[data-testid="graph-dialog"] svg'); return [s.getBoundingClientRect().width, s.viewBox.baseVal.width] })()`); w[0] < w[1] {
		t.Errorf("the enlarged graph is %v px wide, want its full %v", w[0], w[1])
	}
	p.click(testid("graph-close"))
	g.Open()
	p.waitRunEnd("done")
	if got := statuses(p.panelTodos()); got != "t1:done t2:done t3:done t4:done t5:done t6:done t7:done" {
		t.Errorf("panel todos = %s", got)
	}
	if n := eval[string](p, `document.querySelector('[data-testid="orch-panel"]').dataset.maxRunning`); n != "4" {
		t.Errorf("at most %s todos shown running at once, want 4", n)
	}
}

// The Markdown renderer builds the elements Markdown means and never
// HTML from the text: raw HTML shows as text, links keep http, https and
// relative URLs only, images this page's origin only.
func TestMarkdownRenderer(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	cases := []struct{ name, src, want string }{
		{"heading and emphasis", "# Title\n\nSome *em*, **strong**, ~~gone~~ and `code`.",
			"<h1>Title</h1><p>Some <em>em</em>, <strong>strong</strong>, <del>gone</del> and <code>code</code>.</p>"},
		{"nested lists", "- a\n- b\n  - c\n  - d\n- e\n\n3. x\n4. y",
			"<ul><li>a</li><li>b<ul><li>c</li><li>d</li></ul></li><li>e</li></ul><ol start=\"3\"><li>x</li><li>y</li></ol>"},
		{"loose list", "- a\n\n- b", "<ul><li><p>a</p></li><li><p>b</p></li></ul>"},
		{"task items", "- [x] done\n- [ ] open", `<ul><li class="task"><input type="checkbox" disabled=""> done</li><li class="task"><input type="checkbox" disabled=""> open</li></ul>`},
		{"table", "| id | 값 |\n|---|--:|\n| t1 \\| x | **1** |",
			`<div class="md-table"><table><thead><tr><th>id</th><th style="text-align: right;">값</th></tr></thead><tbody><tr><td>t1 | x</td><td style="text-align: right;"><strong>1</strong></td></tr></tbody></table></div>`},
		{"code block", "```go\nif a < b && c {\n}\n```", `<pre><code class="language-go" data-lang="go">if a &lt; b &amp;&amp; c {\n}</code></pre>`},
		{"quote and rule", "> said\n> more\n\n---", "<blockquote><p>said\nmore</p></blockquote><hr>"},
		{"raw HTML is text", "<script>alert(1)</script> <img src=x onerror=alert(1)>",
			"<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;</p>"},
		{"links", "[a](https://example.com/x \"t\") [b](report.md) [c](javascript:alert(1)) [d](<JaVa\tScRiPt:alert(1)>) [e](data:text/html,x) <https://example.org>",
			`<p><a href="https://example.com/x" title="t" target="_blank" rel="noopener noreferrer">a</a> <a href="report.md">b</a> <span>c</span> <span>d</span> <span>e</span> <a href="https://example.org" target="_blank" rel="noopener noreferrer">https://example.org</a></p>`},
		{"images", "![chart](/ui/icon.svg) ![far](https://example.com/a.png) ![data](data:image/png;base64,AAAA)",
			`<p><img alt="chart" loading="lazy" decoding="async" referrerpolicy="no-referrer" src="` + s.URL + `/ui/icon.svg"> <span class="md-image-blocked">[far]</span> <span class="md-image-blocked">[data]</span></p>`},
		{"bare URL", "see https://example.com/a_b.", `<p>see <a href="https://example.com/a_b" target="_blank" rel="noopener noreferrer">https://example.com/a_b</a>.</p>`},
		{"no ids from text", "# x\n\n<a id=app name=app>", "<h1>x</h1><p>&lt;a id=app name=app&gt;</p>"},
		{"hard break", "a  \nb\\\nc", "<p>a<br>b<br>c</p>"},
		{"korean emphasis", "**채널 분석**: 증감을 정리했습니다", "<p><strong>채널 분석</strong>: 증감을 정리했습니다</p>"},
	}
	for _, c := range cases {
		got := eval[string](p, `import("/ui/markdown.js").then(m => { const d = document.createElement("div"); d.append(m.renderMarkdown(`+jsString(strings.ReplaceAll(c.src, `\n`, "\n"))+`)); return d.innerHTML; })`)
		want := strings.ReplaceAll(c.want, `\n`, "\n")
		if got != want {
			t.Errorf("%s:\n got  %s\n want %s", c.name, got, want)
		}
	}
}

// TestOrchScreenshots writes the orchestrator views' screenshots of
// docs/img (WEFT_SCREENSHOTS=1 go test -run Screenshots
// ./cmd/weft/internal/browser): the plan viewer, the step form, the todos
// panel with todos running in parallel, the report, and the plan on a
// phone.
func TestOrchScreenshots(t *testing.T) {
	if os.Getenv("WEFT_SCREENSHOTS") != "1" {
		t.Skip("WEFT_SCREENSHOTS=1 writes the screenshots of docs/img")
	}
	out := filepath.Join(repoRoot(t), "docs", "img")
	stepModel := orchScript(t, "orch-step.yaml")
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "marketing", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	heldModel, err := scripted.Parse(demo)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("plan", func(t *testing.T) {
		s := startServer(t, nil)
		p := newPage(t, &pageOptions{Width: 1280, Height: 900})
		p.open(s.URL + "/")
		p.pick("marketing")
		p.send(marketingRequest)
		p.waitPoint("the plan", `!!document.querySelector('[data-testid="plan-accept"]')`)
		p.screenshot(filepath.Join(out, "webui-plan.png"))
		p.click(testid("plan-accept"))
		p.waitRunEnd("done")
		p.waitFor("the charts", `[...document.querySelectorAll('[data-testid="orch-attachment-image"]')].every(i => i.complete && i.naturalWidth > 0)`)
		p.click(testid("open-report"))
		p.waitFor("the report's charts", `document.querySelector('[data-testid="report-body"]')?.dataset.loaded === "true" &&
			[...document.querySelectorAll('[data-testid="report-body"] img')].every(i => i.complete && i.naturalWidth > 0)`)
		p.screenshot(filepath.Join(out, "webui-report.png"))
	})
	t.Run("step", func(t *testing.T) {
		s := startServer(t, &serverOptions{Model: stepModel, Configure: func(_ string, c *orchestrator.Config) {
			c.Approvals.Plan = false
			c.Approvals.Step = true
			c.Execution.Preparation = orchestrator.PrepareLight
		}})
		p := newPage(t, &pageOptions{Width: 1280, Height: 900, Lang: "ko-KR"})
		p.open(s.URL + "/")
		p.pick("marketing")
		p.send("지난 분기 채널 성과 보고서를 만들어 줘")
		p.waitPoint("t1's step", `document.querySelector('[data-testid="orch-step"]')?.dataset.todoId === "t1"`)
		p.fill(testid("param-period"), "yesterday")
		p.click(testid("step-edit"))
		p.screenshot(filepath.Join(out, "webui-step.png"))
	})
	t.Run("todos", func(t *testing.T) {
		g := newToolGate()
		defer g.Open()
		s := startServer(t, &serverOptions{Graphs: map[string]server.GraphFunc{"marketing": heldMarketing(t, heldModel, g, nil)}})
		p := newPage(t, &pageOptions{Width: 1280, Height: 900, ColorScheme: "dark"})
		p.open(s.URL + "/")
		p.pick("marketing")
		p.send(marketingRequest)
		p.waitFor("four todos running", `document.querySelectorAll('[data-testid="orch-todos"] > li[data-status="running"]').length === 4`)
		// Held for a while, so that the times shown have gone on.
		p.waitFor("a second and a half", `parseFloat(document.querySelector('[data-testid="orch-todo-t1"] .time').textContent) >= 1.5`)
		p.screenshot(filepath.Join(out, "webui-todos.png"))
		g.Open()
		p.waitRunEnd("done")
	})
	t.Run("phone", func(t *testing.T) {
		s := startServer(t, nil)
		p := newPage(t, &pageOptions{Width: 390, Height: 844, Phone: true, Lang: "ko-KR"})
		p.open(s.URL + "/")
		p.pick("marketing")
		p.send(marketingRequest)
		p.waitPoint("the plan", `!!document.querySelector('[data-testid="plan-accept"]')`)
		p.screenshot(filepath.Join(out, "webui-phone-plan.png"))
	})
}

// On a phone, in Korean: the plan is answered with its Korean controls,
// the page does not scroll sideways (the graph scrolls in its own box),
// the run panel opens from its tab and shows the todos, and switching the
// language relabels the panel.
func TestOrchPhoneKorean(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, &pageOptions{Width: 390, Height: 844, Phone: true, Lang: "ko-KR"})
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send(marketingRequest)
	p.waitPoint("the plan", `!!document.querySelector('[data-testid="plan-accept"]')`)
	if got := p.text(testid("plan-accept")); got != "승인" {
		t.Errorf("accept button = %q, want Korean", got)
	}
	if w := eval[[]int](p, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a %d px screen", w[0], w[1])
	}
	if r := eval[map[string]float64](p, `(() => { const b = document.querySelector('[data-testid="orch-plan"]').getBoundingClientRect(); return {left: b.left, right: b.right, vw: window.innerWidth} })()`); r["left"] < 0 || r["right"] > r["vw"] {
		t.Errorf("the plan box %v overflows the screen", r)
	}
	p.click(testid("plan-accept"))
	p.waitRunEnd("done")
	p.click(testid("panel-toggle"))
	p.waitFor("the run panel", `document.getElementById("run-panel").checkVisibility() &&
		document.querySelectorAll('[data-testid="orch-todos"] > li[data-status="done"]').length === 7`)
	if got := p.text(`[data-testid="orch-todo-t1"] .badge`); got != "완료" {
		t.Errorf("t1's status = %q, want Korean", got)
	}
	eval[bool](p, `(() => { const s = document.getElementById("lang"); s.value = "en"; s.dispatchEvent(new Event("change")); return true })()`)
	p.waitFor("the panel in English", `document.querySelector('[data-testid="orch-todo-t1"] .badge')?.textContent === "done"`)
}

// The error point: a todo whose tool failed is shown with its error, and
// Retry runs it again (its second attempt succeeds); the run goes on.
func TestOrchErrorRetry(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "marketing", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := scripted.Parse(demo)
	if err != nil {
		t.Fatal(err)
	}
	g := newToolGate()
	g.failOnce = map[string]bool{"get_customer_segments": true}
	g.Open()
	s := startServer(t, &serverOptions{Graphs: map[string]server.GraphFunc{"marketing": heldMarketing(t, model, g, &heldOptions{configure: func(c *orchestrator.Config) {
		c.Execution.ReactFallback = false
	}})}})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send(marketingRequest)
	p.waitPoint("the error point", `!!document.querySelector('[data-testid="orch-error-point"]')`)
	if got := p.text(testid("orch-error-point")); !strings.Contains(got, "t2") || !strings.Contains(got, "the data source did not answer") {
		t.Errorf("error point = %q", got)
	}
	if st := eval[string](p, `document.querySelector('[data-testid="orch-todo-t2"]').dataset.status`); st != "failed" {
		t.Errorf("t2 in the panel: %s, want failed", st)
	}
	p.click(testid("error-retry"))
	p.waitRunEnd("done")
	if got := statuses(p.panelTodos()); got != "t1:done t2:done t3:done t4:done t5:done t6:done t7:done" {
		t.Errorf("panel todos = %s", got)
	}
	if meta := p.text(`[data-testid="orch-todo-t2"] .meta`); !strings.Contains(meta, "attempt 2") {
		t.Errorf("t2's row = %q, want its second attempt", meta)
	}
}

// The pause point (approvals.pause on): before the first wave the coming
// todos are shown; dropping one skips it and the todos that need it, and
// the next pause is answered with Go on.
func TestOrchPauseDelete(t *testing.T) {
	s := startServer(t, &serverOptions{Configure: func(_ string, c *orchestrator.Config) {
		c.Approvals.Plan = false
		c.Approvals.Pause = true
	}})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send(marketingRequest)
	p.waitPoint("the first pause", `!!document.querySelector('[data-testid="orch-pause"]')`)
	next := eval[[]string](p, `[...document.querySelectorAll('[data-testid="orch-pause"] li.next input')].map(i => i.value)`)
	if strings.Join(next, ",") != "t1,t2,t3,t4" {
		t.Errorf("about to run: %v, want t1 to t4", next)
	}
	p.click(testid("pause-delete"))
	if got := p.text(`[data-testid="orch-pause"] [data-testid="orch-error"]`); got == "" {
		t.Error("dropping nothing selected is not refused in the page")
	}
	p.click(testid("pause-drop-t4"))
	p.click(testid("pause-delete"))
	// The waves after: each pause is answered with Go on, until the end.
	for range 4 {
		p.waitFor("the next pause or the end", `document.body.dataset.run === "idle" && (!!document.querySelector('[data-testid="pause-verify"]') ||
			document.querySelector('[data-testid="orch-run-status"]')?.dataset.state === "done")`)
		if !eval[bool](p, `!!document.querySelector('[data-testid="pause-verify"]')`) {
			break
		}
		p.click(testid("pause-verify"))
	}
	p.waitRunEnd("done")
	if got := statuses(p.panelTodos()); got != "t1:done t2:done t3:done t4:skipped t5:done t6:skipped t7:skipped" {
		t.Errorf("panel todos = %s", got)
	}
}

// The views' pure parts, in the browser: the dependency checks (cycles
// named as the orchestrator names them) and the layered layout, and the
// form generated from a JSON Schema with its validation per field.
func TestOrchModules(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	type check struct {
		Cycle  []string `json:"cycle"`
		Errors []string `json:"errors"`
	}
	deps := func(todos string) check {
		return eval[check](p, `import("/ui/orch/dag.js").then(m => { const r = m.checkDeps(`+todos+`); return {cycle: r.cycle || [], errors: r.errors.map(e => e.text)} })`)
	}
	if c := deps(`[{id: "t1", depends_on: ["t3"]}, {id: "t2"}, {id: "t3", depends_on: ["t2", "t1"]}]`); strings.Join(c.Cycle, " ") != "t1 t3 t1" || len(c.Errors) != 1 || c.Errors[0] != "dependency cycle: t1 → t3 → t1" {
		t.Errorf("two-todo cycle: %+v", c)
	}
	if c := deps(`[{id: "a", depends_on: ["c"]}, {id: "b", depends_on: ["a"]}, {id: "c", depends_on: ["b"]}]`); strings.Join(c.Cycle, " ") != "a b c a" {
		t.Errorf("three-todo cycle: %+v", c)
	}
	if c := deps(`[{id: "t1"}, {id: "t1"}, {id: ""}, {id: "t 4"}, {id: "t5", depends_on: ["t5", "t9"]}]`); len(c.Cycle) != 0 || strings.Join(c.Errors, "|") != "t1: two todos have this id|Todo 3: an id is needed|t 4: an id is letters, digits, - and _|t5: depends on itself|t5: depends on t9, which is not in the plan" {
		t.Errorf("bad ids and dependencies: %+v", c)
	}
	if c := deps(`[{id: "t1"}, {id: "t2", depends_on: ["t1"]}, {id: "t3", depends_on: ["t1"]}, {id: "t4", depends_on: ["t2", "t3"]}]`); len(c.Cycle) != 0 || len(c.Errors) != 0 {
		t.Errorf("a valid DAG: %+v", c)
	}
	levels := eval[map[string]int](p, `import("/ui/orch/dag.js").then(m => Object.fromEntries(m.levels([{id: "t1"}, {id: "t2", depends_on: ["t1"]}, {id: "t3"}, {id: "t4", depends_on: ["t2", "t3"]}, {id: "t5", depends_on: ["t1"]}])))`)
	if levels["t1"] != 0 || levels["t2"] != 1 || levels["t3"] != 0 || levels["t4"] != 2 || levels["t5"] != 1 {
		t.Errorf("levels = %v", levels)
	}

	// A form from a schema of every kind of field.
	schema := `{type: "object", required: ["name", "count", "kind"], properties: {
		name: {type: "string", minLength: 2, pattern: "^[a-z]+$", description: "lower-case letters"},
		count: {type: "integer", minimum: 1, maximum: 12},
		ratio: {type: ["number", "null"], maximum: 1},
		kind: {type: "string", enum: ["a", "b"]},
		on: {type: "boolean", default: true},
		tags: {type: "array", items: {type: "string"}},
		days: {type: "array", items: {type: "string", enum: ["mon", "tue"]}},
		where: {type: "object", properties: {city: {type: "string"}}},
		extra: {anyOf: [{type: "string"}, {type: "number"}]}
	}}`
	type formResult struct {
		Value  map[string]any `json:"value"`
		Errors []string       `json:"errors"`
		Labels []string       `json:"labels"`
	}
	form := func(value, fill string) formResult {
		return eval[formResult](p, `import("/ui/orch/schemaform.js").then(m => {
			const f = m.schemaForm(`+schema+`, `+value+`, {testid: "x"}); document.body.append(f.el);
			const set = (name, v) => { const el = f.el.querySelector('[data-field="' + name + '"] input, [data-field="' + name + '"] select, [data-field="' + name + '"] textarea'); el.value = v; };
			`+fill+`;
			const r = f.read(); const labels = [...f.el.querySelectorAll("label, legend")].map(l => l.textContent); f.el.remove();
			return {value: r.value, errors: r.errors.map(e => e.message), labels} })`)
	}
	r := form(`{name: "abc", count: 3, kind: "b", tags: ["x", "y"], days: ["tue"], where: {city: "Seoul"}, extra: 5, other: 1}`, "")
	want := `{"count":3,"days":["tue"],"extra":5,"kind":"b","name":"abc","on":true,"other":1,"tags":["x","y"],"where":{"city":"Seoul"}}`
	if got, _ := json.Marshal(r.Value); string(got) != want || len(r.Errors) != 0 {
		t.Errorf("form read back %s (errors %v), want %s", got, r.Errors, want)
	}
	if !slices.Contains(r.Labels, "name (required)") || !slices.Contains(r.Labels, "ratio") {
		t.Errorf("labels %v: want the required marks", r.Labels)
	}
	r = form(`{}`, `set("name", "A1"); set("count", "13"); set("ratio", "2"); set("extra", "{nope")`)
	wantErrs := []string{"name does not have the expected form", "count must be at most 12", "ratio must be at most 1", "kind is required", "extra is not valid JSON"}
	if len(r.Errors) != len(wantErrs) {
		t.Fatalf("errors %q, want %q", r.Errors, wantErrs)
	}
	for i, w := range wantErrs {
		if !strings.HasPrefix(r.Errors[i], w) {
			t.Errorf("error %d = %q, want %q", i, r.Errors[i], w)
		}
	}
	r = form(`{}`, `set("name", "x"); set("count", "2.5"); set("kind", "0")`)
	if strings.Join(r.Errors, "|") != "name needs at least 2 characters|count must be a whole number" {
		t.Errorf("errors %q", r.Errors)
	}
}

// Proceed anyway plans the request as it is; Reject, with a reason, ends
// the task without running a todo, and the panel says so.
func TestOrchProceedAndReject(t *testing.T) {
	m := orchScript(t, "orch-clarify.yaml")
	s := startServer(t, &serverOptions{Model: m})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send("지난 분기 캠페인 보고서를 만들어 줘")
	p.waitPoint("the clarification", `!!document.querySelector('[data-testid="orch-clarify"]')`)
	p.click(testid("orch-clarify-proceed"))
	p.waitPoint("the plan", `!!document.querySelector('[data-testid="plan-reject"]')`)
	tid := p.threadID()
	var req string
	if err := json.Unmarshal(s.threadState(t, tid)["request"], &req); err != nil || req != "지난 분기 캠페인 보고서를 만들어 줘" {
		t.Errorf("request = %q (%v), want it as asked", req, err)
	}
	p.click(testid("plan-reject"))
	p.fill(testid("plan-reject-reason"), "기간이 틀렸어요")
	p.click(testid("plan-reject-confirm"))
	p.waitRunEnd("rejected")
	if got := p.text(testid("orch-run-status")); got != "Plan rejected" {
		t.Errorf("panel status = %q", got)
	}
	st := s.threadState(t, tid)
	var outcome, reason string
	_ = json.Unmarshal(st["outcome"], &outcome)
	_ = json.Unmarshal(st["reason"], &reason)
	if outcome != "rejected" || reason != "기간이 틀렸어요" {
		t.Errorf("outcome %q, reason %q", outcome, reason)
	}
	if rows := p.panelTodos(); statuses(rows) != "t1:pending t2:pending t3:pending t4:pending" {
		t.Errorf("panel todos = %s, want none run", statuses(rows))
	}
}

// pastMemory is a clarification memory that offers past answers and
// records what the agent tells it.
type pastMemory struct {
	past     []orchestrator.PastClarification
	mu       sync.Mutex
	recorded []orchestrator.ClarificationRecord
}

func (m *pastMemory) PastClarifications(context.Context, string, string) ([]orchestrator.PastClarification, error) {
	return m.past, nil
}

func (m *pastMemory) RecordClarification(_ context.Context, _ string, rec orchestrator.ClarificationRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recorded = append(m.recorded, rec)
	return nil
}

// Reuse an earlier answer: memory offers two past clarifications (neither
// sure enough to be applied without asking); the person picks the second,
// and the request is planned with its answer.
func TestOrchReusePastClarification(t *testing.T) {
	m := orchScript(t, "orch-clarify.yaml")
	mem := &pastMemory{past: []orchestrator.PastClarification{
		{ID: "past-1", Request: "지난 분기 캠페인 보고서", Question: "어느 상품인가요?", Answer: "비타 브라이트 세럼", ReuseCount: 2, Confidence: 0.7},
		{ID: "past-2", Request: "캠페인 보고서", Question: "어느 상품인가요?", Answer: "딥 모이스처 크림", ReuseCount: 1, Confidence: 0.6},
	}}
	g := newToolGate()
	g.Open()
	s := startServer(t, &serverOptions{Graphs: map[string]server.GraphFunc{"marketing": heldMarketing(t, m, g, &heldOptions{
		configure: func(c *orchestrator.Config) { c.Approvals.Plan = true },
		memory:    orchestrator.Memory{Clarifications: mem},
	})}})
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send("지난 분기 캠페인 보고서를 만들어 줘")
	p.waitPoint("the clarification", `!!document.querySelector('[data-testid="orch-clarify-reuse"]')`)
	past := eval[[]string](p, `[...document.querySelectorAll('.orch-past li')].map(li => li.textContent)`)
	if len(past) != 2 || !strings.Contains(past[0], "비타 브라이트 세럼") || !strings.Contains(past[1], "딥 모이스처 크림") {
		t.Errorf("past answers offered: %q", past)
	}
	p.click(testid("orch-clarify-past-1"))
	p.click(testid("orch-clarify-reuse"))
	p.waitPoint("the plan", `!!document.querySelector('[data-testid="plan-accept"]')`)
	var req string
	st := s.threadState(t, p.threadID())
	if err := json.Unmarshal(st["request"], &req); err != nil || !strings.Contains(req, "딥 모이스처 크림") {
		t.Errorf("request = %q (%v), want the reused answer joined to it; approvals %s", req, err, st["approval_history"])
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if len(mem.recorded) != 1 || mem.recorded[0].Action != "reuse_past" || mem.recorded[0].PastID != "past-2" {
		t.Errorf("recorded %+v, want the reuse of past-2", mem.recorded)
	}
}
