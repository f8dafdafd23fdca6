package browser

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
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
		return s && s.dataset.state === `+jsString(state)+` && document.getElementById("stop").hidden })()`)
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

	p.waitFor("the clarification", `!!document.querySelector('[data-testid="orch-clarify"]')`)
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
	p.waitFor("the plan", `!!document.querySelector('[data-testid="orch-plan"] [data-testid="plan-dag"]')`)
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
	p.waitFor("the orchestrator's problem", `document.querySelector('[data-testid="orch-plan"] [data-testid="orch-problem"]')?.textContent.includes("no_such_tool")`)

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

	p.waitFor("t1's step", `document.querySelector('[data-testid="orch-step"]')?.dataset.todoId === "t1"`)
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

	p.waitFor("t2's step", `document.querySelector('[data-testid="orch-step"]')?.dataset.todoId === "t2"`)
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
	p.waitFor("the plan", `!!document.querySelector('[data-testid="plan-accept"]')`)
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
