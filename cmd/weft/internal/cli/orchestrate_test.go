package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/cli"
)

const (
	marketingDemo   = "scripted:../../../../examples/marketing/demo.yaml"
	marketingAnswer = "scripted:../../../../examples/marketing/demo-answer.yaml"
	marketingAsk    = "지난 분기 채널별 성과를 분석하고 다음 달 캠페인 안을 보고서로 만들어 줘"
)

var threadLine = regexp.MustCompile(`thread ([0-9a-f-]{36}) `)

// marketingDir is the data directory the marketing tests share: the
// marketing service's database in it is seeded once, which is slow under
// the race detector. Each run has a thread of its own.
var marketingDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weft-cli-test-")
	if err != nil {
		panic(err)
	}
	marketingDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// marketingEnv is runEnv over the shared data directory; it returns the
// database path.
func marketingEnv(t *testing.T) string {
	t.Helper()
	runEnv(t)
	db := filepath.Join(marketingDir, "weft.db")
	t.Setenv(dburl.EnvVar, db)
	return db
}

// The demo: the plan is shown and accepted from a piped answer; each
// todo's state is shown as it changes; the answer streams to stdout; the
// report and its attachments are saved beside the database.
func TestRunMarketingDemo(t *testing.T) {
	db := marketingEnv(t)
	out, info, err := executeIn(t, "accept\n", "run", "--agent", "marketing", "--model", marketingDemo, marketingAsk)
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stdout", out, "## 지난 분기 채널 성과와 다음 달 캠페인 안", "차트로 첨부했습니다.\n")
	inOrder(t, "stderr", info,
		"· cognitive\n", "· planning\n",
		"plan (revision 1): ", "  wave 1 t1 지난 분기 채널별 성과 수집 [data · collect_channel_metrics {\"period\":\"last_quarter\"}]\n",
		"  wave 4 t7 보고서 작성",
		"accept, edit JSON (the plan's todos, or @FILE), or reject [reason]? accept\n",
		"· execution\n", "← t5 done", "→ t6 다음 달 캠페인 안 작성 [content · draft_campaign_proposal]\n", "← t7 done", "· 7/7 todos ended\n",
		"· attachment document_t7.md", "· report: ", "· next: ")
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		if !strings.Contains(info, "→ "+id+" ") {
			t.Errorf("no running line for %s:\n%s", id, info)
		}
	}
	m := threadLine.FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no thread line:\n%s", info)
	}
	task := filepath.Join(filepath.Dir(db), "weft-results", m[1], "task-1")
	for _, name := range []string{"report.md", "document_t7.md", "plan.md", "step_t7_done.json", "chart_t5.svg"} {
		if _, err := os.Stat(filepath.Join(task, name)); err != nil {
			t.Error(err)
		}
	}
}

// A run left waiting for its plan's approval is answered later, by
// another invocation, with --thread alone.
func TestRunMarketingAnswerLater(t *testing.T) {
	marketingEnv(t)
	_, info, err := executeIn(t, "", "run", "--agent", "marketing", "--model", marketingDemo, marketingAsk)
	if err == nil || !strings.Contains(err.Error(), "standard input ended before the approval point was answered") || cli.ExitCode(err) != 1 {
		t.Fatalf("err %v (exit %d), want the run saved unanswered", err, cli.ExitCode(err))
	}
	m := threadLine.FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no thread line:\n%s", info)
	}
	if !strings.Contains(err.Error(), "answer later with weft run --agent marketing --thread "+m[1]) {
		t.Errorf("error %q does not say how to answer later", err)
	}
	show, _, err := execute(t, "threads", "show", m[1])
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show", show, "graph       marketing\n", "next        plan_approval\n", `waiting     {"actions":["accept","edit","reject"]`,
		"continue    weft run --agent marketing --thread "+m[1]+"\n")
	// A new request on the waiting thread is refused.
	if _, _, err := execute(t, "run", "--agent", "marketing", "--model", marketingAnswer, "--thread", m[1], "다른 요청"); err == nil || !strings.Contains(err.Error(), "waits for an answer") {
		t.Errorf("a request on a waiting thread: %v", err)
	}
	out, info, err := executeIn(t, "accept\n", "run", "--agent", "marketing", "--model", marketingAnswer, "--thread", m[1])
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stderr", info, "plan (revision 1): ", "or reject [reason]? accept\n", "· 7/7 todos ended\n", "· response\n")
	inOrder(t, "stdout", out, "## 지난 분기 채널 성과와 다음 달 캠페인 안")
	if _, _, err := execute(t, "run", "--agent", "marketing", "--model", marketingAnswer, "--thread", m[1]); err == nil || !strings.Contains(err.Error(), "is not waiting for an answer") {
		t.Errorf("--thread alone on a finished thread: %v", err)
	}
}

func TestRunMarketingApproveModes(t *testing.T) {
	t.Run("auto", func(t *testing.T) {
		marketingEnv(t)
		out, info, err := execute(t, "run", "--agent", "marketing", "--approve", "auto", "--model", marketingDemo, marketingAsk)
		if err != nil {
			t.Fatalf("%v\n%s", err, info)
		}
		inOrder(t, "stderr", info, "plan (revision 1): ", "or reject [reason]? accept (--approve auto)\n", "· 7/7 todos ended\n")
		inOrder(t, "stdout", out, "## 지난 분기 채널 성과와 다음 달 캠페인 안")
	})
	t.Run("none", func(t *testing.T) {
		marketingEnv(t)
		_, info, err := execute(t, "run", "--agent", "marketing", "--approve", "none", "--model", marketingDemo, marketingAsk)
		if err != nil {
			t.Fatalf("%v\n%s", err, info)
		}
		if strings.Contains(info, "plan (revision") || !strings.Contains(info, "· 7/7 todos ended\n") {
			t.Errorf("--approve none stopped at the plan or did not run:\n%s", info)
		}
	})
	t.Run("reject", func(t *testing.T) {
		marketingEnv(t)
		out, _, err := executeIn(t, "maybe\nreject 너무 넓어요\n", "run", "--agent", "marketing", "--model", marketingDemo, marketingAsk)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "계획이 거절되어 아무것도 실행하지 않았습니다. (너무 넓어요)") {
			t.Errorf("stdout %q", out)
		}
	})
}

func TestRunMarketingErrors(t *testing.T) {
	marketingEnv(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("approvals: {stpe: true}\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--approve", "sometimes", "x"}, `--approve "sometimes": want ask`},
		{[]string{"--config", bad, "x"}, "approvals.stpe (line 1): unknown key"},
		{[]string{}, "give a request, or --thread ID alone"},
	} {
		args := append([]string{"run", "--agent", "marketing", "--model", marketingDemo}, tt.args...)
		if _, _, err := execute(t, args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("weft %s: err %v, want %q", strings.Join(args, " "), err, tt.want)
		}
	}
	_, _, err := execute(t, "run", "--agent", "career", "--approve", "auto", "--model", "scripted:../../../../examples/career/demo.yaml", "x")
	if err == nil || !strings.Contains(err.Error(), "--approve is for the agents that stop for approval (guide, marketing), not career") {
		t.Errorf("--approve with career: %v", err)
	}
}

// A plan the model gets wrong twice ends the run with exit status 4 and
// the reason; a failing model call with 3.
func TestRunMarketingFailures(t *testing.T) {
	marketingEnv(t)
	cognition := `  - content: '{"intent": {"domain": "ANALYSIS", "category": "performance", "subcategory": "x"}, "entities": [], "ambiguous": false, "needs_tools": true, "confidence": 0.9}'` + "\n"
	cyclic := `  - content: '{"summary": "s", "todos": [{"id": "t1", "title": "a", "executor": "data", "tool": "get_customer_segments", "depends_on": ["t2"]}, {"id": "t2", "title": "b", "executor": "data", "tool": "get_customer_segments", "depends_on": ["t1"]}]}'` + "\n"
	model := writeScript(t, "responses:\n"+cognition+cyclic+cyclic)
	_, info, err := execute(t, "run", "--agent", "marketing", "--model", model, "x")
	if cli.ExitCode(err) != cli.ExitNoAnswer || !strings.Contains(err.Error(), "dependency cycle: t1 → t2 → t1") {
		t.Errorf("err %v (exit %d)", err, cli.ExitCode(err))
	}
	if !strings.Contains(info, "· failed: planning: after one repair attempt: dependency cycle: t1 → t2 → t1") {
		t.Errorf("stderr:\n%s", info)
	}
	model = writeScript(t, "responses:\n"+cognition+"  - error: the model is overloaded\n")
	_, _, err = execute(t, "run", "--agent", "marketing", "--model", model, "x")
	if cli.ExitCode(err) != cli.ExitModelFailed || !strings.Contains(err.Error(), "the model is overloaded") {
		t.Errorf("err %v (exit %d)", err, cli.ExitCode(err))
	}
}
