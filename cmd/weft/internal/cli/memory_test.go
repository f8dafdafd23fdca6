package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/server/apikey"
)

// The marketing agent's long-term memory, end to end through weft run:
// each run is a process of its own that opens the database and closes it,
// so what one run learned and a later run uses has survived a restart on
// the same SQLite file. Every test names users of its own: the tests
// share one database.

// memoryScript is a looping marketing script: the reading of a request
// (ambiguous or not), a one-todo plan, then replies for the rest of the
// task.
func memoryScript(t *testing.T, ambiguous bool, todo string, rest ...string) string {
	t.Helper()
	cognition := map[string]any{"intent": map[string]any{"domain": "ANALYSIS", "category": "performance", "subcategory": "segments"},
		"entities": []any{}, "ambiguous": ambiguous, "needs_tools": true, "confidence": 0.9}
	if ambiguous {
		cognition["question"] = "어느 기간의 성과를 볼까요?"
		cognition["confidence"] = 0.5
	}
	replies := []string{js(t, cognition), `{"summary": "s", "todos": [` + todo + `]}`}
	var b strings.Builder
	b.WriteString("loop: true\nresponses:\n")
	for _, r := range append(replies, rest...) {
		q, _ := json.Marshal(r)
		b.WriteString("  - content: " + string(q) + "\n")
	}
	return writeScript(t, b.String())
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	segmentsTodo = `{"id": "t1", "title": "고객 세그먼트 조회", "executor": "data", "tool": "get_customer_segments", "params": {}}`
	reportTodo   = `{"id": "t1", "title": "보고서 작성", "executor": "content", "tool": "draft_report", "params": {"title": "보고서"}}`
	noActions    = `{"actions": []}`
)

// marketingConfig writes the marketing agent's configuration with edits:
// each pair replaces a line's text.
func marketingConfig(t *testing.T, edits ...string) string {
	t.Helper()
	data, err := os.ReadFile("../../../../examples/marketing/agent/marketing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("marketing.yaml has no %q", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	p := filepath.Join(t.TempDir(), "marketing.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// approvals reads a thread's approval history from the database.
func approvals(t *testing.T, db, thread string) []orchestrator.ApprovalRecord {
	t.Helper()
	ctx := context.Background()
	d, err := dburl.Open(ctx, db, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	e, err := examples.Lookup("marketing")
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.Build(d.Saver)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: thread}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return orchestrator.ApprovalHistory.Get(snap.Values)
}

// runMarketing runs weft run --agent marketing for user with the answers
// piped, failing the test if it fails; it returns stderr and the thread.
func runMarketing(t *testing.T, user, model, answers string, args ...string) (string, string) {
	t.Helper()
	all := append([]string{"run", "--agent", "marketing", "--user", user, "--model", model}, args...)
	_, info, err := executeIn(t, answers, append(all, "고객 세그먼트별 성과를 정리해 줘")...)
	if err != nil {
		t.Fatalf("weft %s: %v\n%s", strings.Join(all, " "), err, info)
	}
	m := threadLine.FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no thread line:\n%s", info)
	}
	return info, m[1]
}

// (a) A clarification answered once and reused five times (reuse count 5,
// confidence 1 × the similarity of the same request: at least 0.9) is
// applied without asking the next time: a status line says so and the
// approval history records it by "memory". Another user is asked.
//
// It plays the command sequence docs/memory.md gives, with the script it
// names.
func TestMemoryClarificationReused(t *testing.T) {
	db := marketingEnv(t)
	model := "scripted:../../../../examples/marketing/demo-clarify.yaml"
	info, _ := runMarketing(t, "clar-alice", model, "지난 분기\naccept\n")
	inOrder(t, "run 1", info, "question: 어느 기간의 성과를 볼까요?\n", "answer the question (or: proceed, reuse [ID]): 지난 분기\n", "· memory: learned from task 1 for clar-alice\n")
	for i := 1; i <= 5; i++ {
		info, _ = runMarketing(t, "clar-alice", model, "reuse\naccept\n")
		inOrder(t, "a reuse", info, "question: 어느 기간의 성과를 볼까요?\n", `"지난 분기" (reused `+string(rune('0'+i-1))+"×, confidence 1.00)", "reuse [ID]): reuse\n")
	}
	info, thread := runMarketing(t, "clar-alice", model, "accept\n")
	if strings.Contains(info, "question:") {
		t.Errorf("asked again after five reuses:\n%s", info)
	}
	inOrder(t, "run 7", info, "· clarification reused from memory: 지난 분기\n", "plan (revision 1)")
	hist := approvals(t, db, thread)
	if len(hist) == 0 || hist[0].Kind != orchestrator.KindClarification || hist[0].By != "memory" || hist[0].Action != orchestrator.ActionReusePast {
		t.Errorf("approval history %+v; want the clarification reused by memory first", hist)
	}
	// Another user's request is asked about, with nothing past to offer.
	info, _ = runMarketing(t, "clar-bob", model, "proceed\naccept\n")
	if !strings.Contains(info, "question: 어느 기간의 성과를 볼까요?\n") || strings.Contains(info, "past answer") || strings.Contains(info, "from memory") {
		t.Errorf("another user saw alice's clarification:\n%s", info)
	}
}

// (b) A step the user accepted twice is approved by memory the third time
// (predicted acceptance 0.85 > 0.8); another user is still asked; with
// --memory=false nothing is predicted.
func TestMemoryStepAutoApproved(t *testing.T) {
	db := marketingEnv(t)
	cfg := marketingConfig(t, "step: false", "step: true", "preparation: auto", "preparation: light")
	model := memoryScript(t, false, segmentsTodo, "세그먼트를 정리했습니다.", noActions)
	stepPrompt := "accept, edit JSON (the tool's parameters, or @FILE), or skip [reason]? accept\n"
	for i := range 2 {
		info, _ := runMarketing(t, "step-alice", model, "accept\naccept\n", "--config", cfg)
		if !strings.Contains(info, stepPrompt) {
			t.Fatalf("run %d did not ask at the step:\n%s", i+1, info)
		}
	}
	info, thread := runMarketing(t, "step-alice", model, "accept\n", "--config", cfg)
	if strings.Contains(info, stepPrompt) {
		t.Errorf("asked at the step a third time:\n%s", info)
	}
	inOrder(t, "run 3", info, "· step t1 approved by memory: predicted acceptance 0.85\n", "← t1 done")
	hist := approvals(t, db, thread)
	if n := len(hist); n != 2 || hist[1].Kind != orchestrator.KindStep || hist[1].By != "memory" || hist[1].TodoID != "t1" {
		t.Errorf("approval history %+v; want the step approved by memory", hist)
	}
	info, _ = runMarketing(t, "step-bob", model, "accept\naccept\n", "--config", cfg)
	if !strings.Contains(info, stepPrompt) {
		t.Errorf("another user's step was not asked:\n%s", info)
	}
	info, _ = runMarketing(t, "step-alice", model, "accept\naccept\n", "--config", cfg, "--memory=false")
	if !strings.Contains(info, stepPrompt) || strings.Contains(info, "· memory:") {
		t.Errorf("--memory=false used or wrote memory:\n%s", info)
	}
}

// (c) A tool that failed three times for a step is advised against when
// the step is prepared again: told in light preparation, replaced by
// another tool in detailed preparation (step approvals on). Another user's
// step is prepared as planned.
func TestMemoryToolAvoided(t *testing.T) {
	marketingEnv(t)
	// draft_report fails without results before it; the ReAct fallback's
	// reply calls no tool, so it fails too.
	failing := memoryScript(t, false, reportTodo, "보고서를 쓸 수 없습니다.", noActions)
	advice := "tool memory advises against draft_report (it failed repeatedly for similar steps)"
	for i := range 3 {
		info, _ := runMarketing(t, "tool-alice", failing, "", "--approve", "none")
		if !strings.Contains(info, "← t1: error: ") || strings.Contains(info, advice) {
			t.Fatalf("run %d: the tool did not fail, or was advised against too early:\n%s", i+1, info)
		}
	}
	info, _ := runMarketing(t, "tool-alice", failing, "", "--approve", "none")
	inOrder(t, "run 4", info, "· preparing t1: "+advice+"; light preparation runs the plan's tool all the same\n")

	// Detailed preparation (step approvals on) proposes another tool.
	cfg := marketingConfig(t, "step: false", "step: true")
	detailed := memoryScript(t, false, reportTodo, `{}`, noActions)
	info, _ = runMarketing(t, "tool-alice", detailed, "accept\nskip\n", "--config", cfg)
	inOrder(t, "detailed", info, "step t1: 보고서 작성\n", "  note: "+advice+": using ")
	if strings.Contains(info, "  tool draft_report ") {
		t.Errorf("the avoided tool is still the step's:\n%s", info)
	}
	info, _ = runMarketing(t, "tool-bob", detailed, "accept\nskip\n", "--config", cfg)
	if !strings.Contains(info, "  tool draft_report ") || strings.Contains(info, advice) {
		t.Errorf("another user's step was changed by alice's memory:\n%s", info)
	}
}

// (d) and (e) through weft serve with two API keys: each run's memory is
// its key's user's. Alice's draft_report fails three times; her fourth
// task is advised against it, bob's first is not; after the server
// restarts on the same database, the same holds.
func TestMemoryServedPerUser(t *testing.T) {
	marketingEnv(t)
	t.Setenv(apikey.EnvVar, "bob:"+cliBobKey)
	keys := keysFile(t)
	// Beside the shared marketing service data, a database of its own.
	db := filepath.Join(marketingDir, "serve-memory.db")
	failing := memoryScript(t, false, reportTodo, "보고서를 쓸 수 없습니다.", noActions)
	advice := "tool memory advises against draft_report"
	// task runs one task for the user of key, through its plan and error
	// approval points, and reports whether its execution was advised
	// against draft_report.
	task := func(t *testing.T, url, key string) bool {
		t.Helper()
		h := []string{"x-api-key", key}
		st, _, body := request(t, "POST", url+"/threads", `{}`, h...)
		if st != 200 {
			t.Fatalf("POST /threads: %d %s", st, body)
		}
		tid := strings.Split(strings.Split(body, `"thread_id":"`)[1], `"`)[0]
		runs := url + "/threads/" + tid + "/runs/"
		steps := []struct{ path, body, want string }{
			{"wait", `{"assistant_id":"marketing","input":{"messages":[{"role":"user","content":"보고서를 써 줘"}]}}`, `"kind":"plan"`},
			{"stream", `{"assistant_id":"marketing","command":{"resume":{"action":"accept"}},"stream_mode":["custom"]}`, `"kind":"error"`},
			{"wait", `{"assistant_id":"marketing","command":{"resume":{"action":"skip"}}}`, `"outcome":""`},
		}
		advised := false
		for _, s := range steps {
			st, _, body := request(t, "POST", runs+s.path, s.body, h...)
			if st != 200 || !strings.Contains(body, s.want) {
				t.Fatalf("POST %s%s: %d, lacks %s:\n%s", runs, s.path, st, s.want, body)
			}
			advised = advised || strings.Contains(body, advice)
		}
		return advised
	}
	t.Run("first server", func(t *testing.T) {
		url, _ := startServe(t, "--db", db, "--api-keys", keys, "--model", failing)
		for i := range 3 {
			if task(t, url, cliAliceKey) {
				t.Fatalf("alice's task %d was advised against the tool before it failed three times", i+1)
			}
		}
		if !task(t, url, cliAliceKey) {
			t.Error("alice's fourth task was not advised against the tool that failed three times")
		}
		if task(t, url, cliBobKey) {
			t.Error("bob's first task was advised by alice's memory")
		}
	})
	t.Run("after a restart", func(t *testing.T) {
		url, log := startServe(t, "--db", db, "--api-keys", keys, "--model", failing)
		if !task(t, url, cliAliceKey) {
			t.Error("after the restart alice's task was not advised against the tool")
		}
		if task(t, url, cliBobKey) {
			t.Error("after the restart bob's task was advised by alice's memory")
		}
		if !strings.Contains(log.String(), "the orchestrator agents learn from each task, per user") {
			t.Errorf("the log does not say memory is on:\n%s", log.String())
		}
	})
}

// A run left waiting is answered for the user it runs for: --thread alone
// takes the thread's user, another --user is refused.
func TestMemoryThreadUser(t *testing.T) {
	marketingEnv(t)
	t.Setenv("WEFT_USER", "")
	model := memoryScript(t, false, segmentsTodo, "세그먼트를 정리했습니다.", noActions)
	_, info, err := execute(t, "run", "--agent", "marketing", "--user", "later-alice", "--model", model, "세그먼트를 정리해 줘")
	m := threadLine.FindStringSubmatch(info)
	if err == nil || m == nil || !strings.Contains(err.Error(), "answer later with weft run --agent marketing --thread "+m[1]+" --user later-alice") {
		t.Fatalf("err %v; want the run saved, to answer later as later-alice\n%s", err, info)
	}
	_, _, err = executeIn(t, "accept\n", "run", "--agent", "marketing", "--user", "later-bob", "--model", model, "--thread", m[1])
	if err == nil || !strings.Contains(err.Error(), "runs for user later-alice, not later-bob") {
		t.Errorf("answered as another user: %v", err)
	}
	// The rest of the script, as a process answering later would have it.
	rest := writeScript(t, "responses:\n  - content: 세그먼트를 정리했습니다.\n  - content: '"+noActions+"'\n")
	_, info, err = executeIn(t, "accept\n", "run", "--agent", "marketing", "--model", rest, "--thread", m[1])
	if err != nil || !strings.Contains(info, "· memory: learned from task 1 for later-alice\n") {
		t.Errorf("answered later: %v\n%s", err, info)
	}
}

// The memories live in PostgreSQL with --db postgres://, beside the
// threads, and survive from one process to the next.
func TestMemoryPostgres(t *testing.T) {
	runEnv(t)
	url := pgtest.NewDatabase(t, "weft_cli_memory_")
	cfg := marketingConfig(t, "step: false", "step: true", "preparation: auto", "preparation: light")
	model := memoryScript(t, false, segmentsTodo, "세그먼트를 정리했습니다.", noActions)
	// With PostgreSQL the service data and the results go to the current
	// directory.
	t.Chdir(t.TempDir())
	stepPrompt := "or skip [reason]? accept\n"
	for i, wantAsked := range []bool{true, true, false} {
		info, _ := runMarketing(t, "pg-alice", model, "accept\naccept\n", "--config", cfg, "--db", url)
		if asked := strings.Contains(info, stepPrompt); asked != wantAsked {
			t.Errorf("run %d asked at the step: %v, want %v\n%s", i+1, asked, wantAsked, info)
		}
	}
}

// The step approval demo of docs/memory.md, with demo.yaml's seven todos:
// after two runs whose every step was accepted, the third approves them
// all by memory.
func TestMemoryStepDemo(t *testing.T) {
	marketingEnv(t)
	cfg := marketingConfig(t, "step: false", "step: true", "preparation: auto", "preparation: light")
	accepts := strings.Repeat("accept\n", 20)
	for i := range 3 {
		_, info, err := executeIn(t, accepts, "run", "--agent", "marketing", "--user", "demo-jimin", "--config", cfg, "--model", marketingDemo, marketingAsk)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, info)
		}
		asked, byMemory := strings.Count(info, "or skip [reason]? accept\n"), strings.Count(info, "approved by memory: predicted acceptance 0.85\n")
		if want := []int{7, 7, 0}[i]; asked != want || byMemory != 7-want {
			t.Errorf("run %d: %d steps asked, %d approved by memory; want %d and %d\n%s", i+1, asked, byMemory, want, 7-want, info)
		}
	}
}
