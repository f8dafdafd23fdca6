package cli_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/cmd/weft/internal/cli"
)

const (
	guideDemo     = "scripted:../../../../examples/guide/demo.yaml"
	guideQuestion = "유튜브 쇼츠를 처음 만들어 보려고 해요. 유료 도구는 쓰지 않아요. 한 달 동안 주 3편씩 올리려면 어떤 순서로 하면 될까요?"
)

// The offline demo shows the whole of document 004's flow: the route, the
// plan and its approval, retrieval with the knowledge base's citations, a
// memory written, the guide, and what reflection remembered.
func TestRunGuideDemo(t *testing.T) {
	for _, tt := range []struct {
		name, call string
		args       []string
	}{
		{"native", `→ retrieve_docs({"k":3,"language":"ko","query":"쇼츠 기획 대본 자막 업로드"})`, []string{"--model", guideDemo}},
		{"json", `→ retrieve_docs({"query":"쇼츠 기획 대본 자막 업로드","language":"ko","k":3})`, []string{"--tools", "json", "--model", "scripted:../../../../examples/guide/demo-json.yaml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runEnv(t)
			args := append([]string{"run", "--agent", "guide", "--user", "jimin"}, tt.args...)
			out, info, err := executeIn(t, "approve\n", append(args, guideQuestion)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, info)
			}
			inOrder(t, "stdout", out, "## 무료 도구로 쇼츠 만들기", "1. **기획과 대본 작성**", "[1] tools.json › wf-shorts-ko\n[2] trends-2026.pdf p.1\n")
			if strings.ContainsAny(out, "→←·") || strings.Contains(out, "approve") {
				t.Errorf("stdout holds more than the guide:\n%s", out)
			}
			inOrder(t, "stderr", info,
				"thread ",
				"· a task of several steps: planning it\n",
				"plan (3 sub-tasks), paused at checkpoint ",
				"  1. 기획과 대본 작성\n  2. AI로 영상과 내레이션 만들기\n  3. 편집, 자막, 업로드\n",
				"approve, edit (sub-tasks separated by ';', or feedback in words) or reject [reason]? approve\n",
				"· approved; recommending a tool for each sub-task\n",
				tt.call,
				"← retrieve_docs: ok 3 passages: tools.json › wf-shorts-ko; trends-2026.pdf p.1; trends-2026.pdf p.2\n",
				"← write_memory: ok created\n",
				"← calculator: ok 3 * 4 = 12\n",
				"← save_recommendation: ok 기획과 대본 작성 → 한 편에 메시지 하나, 150~180자 대본\n",
				"· 세 단계 모두 추천을 마쳤어요.\n",
				"· reflecting on the conversation in the background\n",
				"· remembered about jimin: 한 달 동안 주 3편씩 유튜브 쇼츠를 올리는 것이 목표\n",
			)
			if strings.Contains(info, `{"thought"`) {
				t.Errorf("stderr shows the model's raw JSON:\n%s", info)
			}

			// A second conversation of the same user finds both memories;
			// the reflection finds nothing new, and says so.
			_, info, err = executeIn(t, "approve\n", append(args, guideQuestion)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, info)
			}
			if tt.name == "native" {
				inOrder(t, "stderr of the second run", info,
					"← read_memory: ok 2 memories: ",
					"← write_memory: ok unchanged\n",
					"· nothing new to remember about jimin\n")
			}
		})
	}
}

func TestRunGuideSimpleQuestion(t *testing.T) {
	runEnv(t)
	out, info, err := execute(t, "run", "--agent", "guide", "--model", "scripted:../../../../examples/guide/demo-question.yaml", "calculator 도구는 어떤 계산을 할 수 있어?")
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stdout", out, "calculator는 사칙연산", "[1] tools.json › tool-calculator-ko\n")
	inOrder(t, "stderr", info,
		"· a question: answering from the knowledge base\n",
		"· from the knowledge base: [1] tools.json › tool-calculator-ko; [2] tools.json › tool-calculator-en; [3] tools.json › wf-budget-ko",
		"· nothing new to remember about default\n")
	if strings.Contains(info, "plan (") {
		t.Errorf("a simple question was planned:\n%s", info)
	}
}

// guideRest is the model's part after the plan: one tool round, the end of
// the loop, the guide, and nothing to remember.
const guideRest = `
  - tool_calls:
      - {name: retrieve_docs, args: {query: "쇼츠 대본"}}
  - content: "끝났어요."
  - content: "가이드 본문 [1]"
  - tool_calls:
      - {name: memory_operations, args: {operations: []}}
`

// A run whose plan is not answered is saved, and another process answers it
// later with --thread alone.
func TestRunGuideAnswerLater(t *testing.T) {
	runEnv(t)
	first := writeScript(t, `
- tool_calls: [{name: classify_request, args: {is_complex_task: true, reason: "steps"}}]
- tool_calls: [{name: plan, args: {sub_tasks: ["대본 작성", "영상 생성"]}}]
`)
	_, info, err := executeIn(t, "", "run", "--agent", "guide", "--model", first, "쇼츠를 만들고 싶어요")
	if err == nil || !strings.Contains(err.Error(), "standard input ended before the plan was approved") {
		t.Fatalf("error = %v, want the plan left unanswered\n%s", err, info)
	}
	m := regexp.MustCompile(`answer later with weft run --agent guide --thread (\S+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error does not say how to answer later: %v", err)
	}
	thread := m[1]

	// A question on a thread waiting for its review is refused.
	if _, _, err := executeIn(t, "", "run", "--agent", "guide", "--model", first, "--thread", thread, "다른 질문"); err == nil || !strings.Contains(err.Error(), "waits for its plan to be reviewed") {
		t.Errorf("a question on a waiting thread: error = %v", err)
	}

	// Later, elsewhere: edit the plan, which approves the edited plan.
	rest := writeScript(t, guideRest)
	out, info, err := executeIn(t, "maybe\nedit 대본 작성; 자막 넣기\n", "run", "--agent", "guide", "--model", rest, "--thread", thread)
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stderr", info,
		"  1. 대본 작성\n  2. 영상 생성\n",
		`please answer approve, edit or reject (got "maybe")`,
		"· plan edited to 2 sub-tasks\n",
		"→ retrieve_docs(",
		"· nothing new to remember about default\n")
	if out != "가이드 본문 [1]\n" {
		t.Errorf("stdout = %q", out)
	}
	// Nothing waits any more.
	if _, _, err := executeIn(t, "", "run", "--agent", "guide", "--model", rest, "--thread", thread); err == nil || !strings.Contains(err.Error(), "is not waiting for a review") {
		t.Errorf("answering a finished thread: error = %v", err)
	}
}

// Feedback has the plan made again and shown again; a rejection answers
// without running tools.
func TestRunGuideFeedbackAndReject(t *testing.T) {
	runEnv(t)
	script := writeScript(t, `
- tool_calls: [{name: classify_request, args: {is_complex_task: true, reason: "steps"}}]
- tool_calls: [{name: plan, args: {sub_tasks: ["대본 작성", "유료 AI 영상 생성"]}}]
- tool_calls: [{name: plan, args: {sub_tasks: ["대본 작성", "무료 스톡 영상 편집"]}}]
- content: "도구 없이 말씀드리면, 쇼츠는 다섯 단계로 만듭니다 [1]."
- tool_calls: [{name: memory_operations, args: {operations: [{op: insert, content: {category: preference, content: "유료 도구를 쓰지 않음"}}]}}]
`)
	out, info, err := executeIn(t, "edit 유료 도구는 빼 주세요\nreject 오늘은 계획만 볼게요\n", "run", "--agent", "guide", "--model", script, "쇼츠를 만들고 싶어요")
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stderr", info,
		"  2. 유료 AI 영상 생성\n",
		"· planning again from your feedback\n",
		"  2. 무료 스톡 영상 편집\n",
		"· plan rejected; answering without running tools\n",
		"· remembered about default: 유료 도구를 쓰지 않음\n")
	if strings.Contains(info, "→ ") {
		t.Errorf("a tool ran after the plan was rejected:\n%s", info)
	}
	if !strings.HasPrefix(out, "도구 없이 말씀드리면") {
		t.Errorf("stdout = %q", out)
	}
}

// A model that fails ends the run with the fallback answer on stdout, the
// cause in the error, and the exit code of a failed model call.
func TestRunGuideModelFails(t *testing.T) {
	runEnv(t)
	script := writeScript(t, `
- error: "the model is overloaded"
`)
	out, _, err := execute(t, "run", "--agent", "guide", "--model", script, "쇼츠를 만들고 싶어요")
	if !errors.Is(err, react.ErrModelFailed) || cli.ExitCode(err) != cli.ExitModelFailed {
		t.Fatalf("error = %v (exit %d), want a failed model call (exit %d)", err, cli.ExitCode(err), cli.ExitModelFailed)
	}
	if !strings.Contains(err.Error(), "the model is overloaded") {
		t.Errorf("the error does not tell the cause: %v", err)
	}
	if !strings.Contains(out, "the language model failed") {
		t.Errorf("stdout = %q, want the fallback answer", out)
	}
}

func TestRunUserFlag(t *testing.T) {
	runEnv(t)
	_, _, err := execute(t, "run", "--agent", "career", "--user", "jimin", "--model", "scripted:../../../../examples/career/demo.yaml", "hi")
	if err == nil || !strings.Contains(err.Error(), "--user") {
		t.Errorf("--user on career: error = %v", err)
	}
	_, _, err = execute(t, "run", "--agent", "guide", "--user", " ", "--model", guideDemo, "hi")
	if err == nil || !strings.Contains(err.Error(), "--user is empty") {
		t.Errorf("an empty --user: error = %v", err)
	}
	_, _, err = execute(t, "run", "--agent", "guide", "--model", guideDemo)
	if err == nil || !strings.Contains(err.Error(), "give a question") {
		t.Errorf("no question: error = %v", err)
	}
}

// --approve auto approves the plan without asking; the rest runs as usual.
func TestRunGuideApproveAuto(t *testing.T) {
	runEnv(t)
	out, info, err := executeIn(t, "", "run", "--agent", "guide", "--approve", "auto", "--model", guideDemo, guideQuestion)
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stderr", info, "  3. 편집, 자막, 업로드\n", "or reject [reason]? approve (--approve auto)\n", "· approved; recommending a tool for each sub-task\n")
	if !strings.Contains(out, "## 무료 도구로 쇼츠 만들기") {
		t.Errorf("stdout = %q", out)
	}
	if _, _, err := execute(t, "run", "--agent", "guide", "--approve", "sometimes", "--model", guideDemo, "x"); err == nil || !strings.Contains(err.Error(), `--approve "sometimes"`) {
		t.Errorf("--approve sometimes: %v", err)
	}
}

// --mcp-config gives the guide's tool loop the MCP servers' tools besides
// its own.
func TestRunGuideWithMCPTools(t *testing.T) {
	runEnv(t)
	cfg := mcpConfig(t, map[string]string{"t": mcpServer(t)})
	script := writeScript(t, `
- tool_calls: [{name: classify_request, args: {is_complex_task: true, reason: "steps"}}]
- tool_calls: [{name: plan, args: {sub_tasks: ["촬영 날씨 확인", "대본 작성"]}}]
- tool_calls: [{name: t__weather, args: {city: "제주"}}, {name: retrieve_docs, args: {query: "쇼츠 대본"}}]
- content: "끝났어요."
- content: "제주는 맑아요. 대본은 150~180자로 [1]."
- tool_calls: [{name: memory_operations, args: {operations: []}}]
`)
	out, info, err := executeIn(t, "approve\n", "run", "--agent", "guide", "--mcp-config", cfg, "--model", script, "제주에서 쇼츠를 찍으려고 해요")
	if err != nil {
		t.Fatalf("%v\n%s", err, info)
	}
	inOrder(t, "stderr", info, "· MCP server t: 3 tools\n", "approve\n", `→ t__weather({"city":"제주"})`, "← t__weather: ok {2 fields}\n", "← retrieve_docs: ok ")
	if !strings.HasPrefix(out, "제주는 맑아요.") {
		t.Errorf("stdout = %q", out)
	}
}
