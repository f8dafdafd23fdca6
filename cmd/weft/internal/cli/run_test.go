package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/cli"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// runEnv points the conversations database at a temporary file and clears
// the model variable, so no test depends on the caller's environment or
// writes into the repository. It returns the database path.
func runEnv(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "weft.db")
	t.Setenv(dburl.EnvVar, db)
	t.Setenv("WEFT_MODEL", "")
	t.Setenv("WEFT_TOOLS", "")
	return db
}

// inOrder checks that s holds each of wants, in order.
func inOrder(t *testing.T, name, s string, wants ...string) {
	t.Helper()
	last := -1
	for _, want := range wants {
		i := strings.Index(s, want)
		if i < 0 {
			t.Errorf("%s lacks %q:\n%s", name, want, s)
			continue
		}
		if i < last {
			t.Errorf("%s has %q out of order:\n%s", name, want, s)
		}
		last = i
	}
}

// writeScript writes a scripted model script and returns its model name.
func writeScript(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + p
}

func TestRunCareerDemo(t *testing.T) {
	runEnv(t)
	out, info, err := execute(t, "run", "--agent", "career", "--model", "scripted:../../../../examples/career/demo.yaml", "UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"찾아볼게요.\n", "UI 디자인과 Figma (7주)", "김지은", "예약해 드릴게요.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "김지은") != 1 {
		t.Errorf("the answer is printed more than once:\n%s", out)
	}
	wantInfo := []string{
		"thread ",
		`→ get_learning_path({"career":"UX 디자이너"})` + "\n",
		`→ search_mentoring_sessions({"career_interest":"UX 디자이너"})` + "\n",
		"← get_learning_path: ok {career UX 디자이너, steps: 4, topics: 13}\n",
		"← search_mentoring_sessions: ok {sessions: 2}\n",
	}
	last := -1
	for _, want := range wantInfo {
		i := strings.Index(info, want)
		if i < 0 {
			t.Errorf("stderr lacks %q:\n%s", want, info)
			continue
		}
		if i < last {
			t.Errorf("stderr has %q out of order:\n%s", want, info)
		}
		last = i
	}
}

// The JSON-mode demo runs the same conversation as demo.yaml over a model
// without tool calling: one tool per reply, read from the model's JSON.
// The answer streams as text, never as the model's raw JSON.
func TestRunCareerDemoJSON(t *testing.T) {
	const answer = "UX 디자이너는 약 24주(입문 단계) 과정으로 시작할 수 있어요."
	for name, args := range map[string][]string{
		"flag": {"--tools", "json"},
		"env":  nil,
	} {
		t.Run(name, func(t *testing.T) {
			runEnv(t)
			if args == nil {
				t.Setenv("WEFT_TOOLS", "json")
			}
			args = append(args, "run", "--agent", "career", "--model", "scripted:../../../../examples/career/demo-json.yaml", "UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?")
			out, info, err := execute(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, answer) || !strings.HasSuffix(out, "원하시면 바로 예약해 드릴게요.\n") {
				t.Errorf("stdout is not the answer:\n%s", out)
			}
			for _, want := range []string{"1. UX 기초와 디자인 사고 (4주)", "UI 디자인과 Figma (7주)", "김지은", "(ms-002, 온라인, 10,000원, 마지막 한 자리)"} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if strings.Count(out, "김지은") != 1 || strings.ContainsAny(out, "{}") || strings.Contains(out, `\n`) {
				t.Errorf("stdout has the answer twice, or JSON:\n%s", out)
			}
			inOrder(t, "stderr", info,
				"thread ",
				`→ get_learning_path({"career":"UX 디자이너"})`+"\n",
				"← get_learning_path: ok {career UX 디자이너, steps: 4, topics: 13}\n",
				`→ search_mentoring_sessions({"career_interest":"UX 디자이너"})`+"\n",
				"← search_mentoring_sessions: ok {sessions: 2}\n",
			)
			if strings.Contains(info, "plain chat") {
				t.Errorf("the question went to plain chat, not the agent:\n%s", info)
			}
		})
	}
}

func TestRunTravelDemoJSON(t *testing.T) {
	runEnv(t)
	out, info, err := execute(t, "run", "--agent", "travel", "--tools", "json", "--model", "scripted:../../../../examples/travel/demo-json.yaml", "제주 인기 관광지 3곳을 추천하고 동선도 짜 주세요")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "제주 인기 관광지 3곳과 추천 동선입니다.\n\n1. 성산일출봉") || !strings.Contains(out, "총 이동 거리는 약 66.3 km") {
		t.Errorf("stdout:\n%s", out)
	}
	inOrder(t, "stderr", info,
		`→ recommend_popular_places_in_region({"region":"제주","category":"관광지","limit":3})`+"\n",
		"← recommend_popular_places_in_region: ok {places: 3}\n",
		"→ create_travel_route(",
		"← create_travel_route: ok {legs: 2, stops: 3}\n",
	)
}

// In JSON mode a reply that is not JSON is sent back once; a second one
// ends the turn with a fallback answer, shown in full.
func TestRunJSONUnparseable(t *testing.T) {
	runEnv(t)
	model := writeScript(t, `
- content: '{"route": "agent"}'
- content: "학습 경로를 찾아볼게요."
- content: "정말 모르겠어요."
`)
	out, info, err := execute(t, "run", "--agent", "career", "--tools", "json", "--model", model, "데이터 분석가가 되고 싶어요")
	if cli.ExitCode(err) != cli.ExitNoAnswer || !strings.Contains(err.Error(), "parse_error") {
		t.Fatalf("err = %v (exit %d), want the parse error with exit %d", err, cli.ExitCode(err), cli.ExitNoAnswer)
	}
	if out == "" || strings.Contains(out, "찾아볼게요") || strings.Contains(info, "→") {
		t.Errorf("stdout = %q, stderr = %q; want a fallback answer and no tool calls", out, info)
	}
}

func TestRunTravelDemo(t *testing.T) {
	runEnv(t)
	out, info, err := execute(t, "run", "--agent", "travel", "--model", "scripted:../../../../examples/travel/demo.yaml", "제주 인기 관광지 3곳을 추천하고 동선도 짜 주세요")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "총 이동 거리는 약 66.3 km") {
		t.Errorf("stdout:\n%s", out)
	}
	for _, want := range []string{
		"→ recommend_popular_places_in_region(",
		"← recommend_popular_places_in_region: ok {places: 3}\n",
		"→ create_travel_route(",
		"← create_travel_route: ok {legs: 2, stops: 3}\n",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("stderr lacks %q:\n%s", want, info)
		}
	}
}

func TestRunGreetingIsPlainChat(t *testing.T) {
	runEnv(t)
	model := writeScript(t, "- content: \"안녕하세요! 어떤 진로가 궁금하세요?\"\n")
	out, info, err := execute(t, "run", "--agent", "career", "--model", model, "안녕하세요")
	if err != nil {
		t.Fatal(err)
	}
	if out != "안녕하세요! 어떤 진로가 궁금하세요?\n" {
		t.Errorf("stdout = %q", out)
	}
	if !strings.Contains(info, "plain chat") || strings.Contains(info, "→") {
		t.Errorf("stderr = %q, want plain chat without tool calls", info)
	}
}

func TestRunToolError(t *testing.T) {
	runEnv(t)
	model := writeScript(t, `
- tool_calls: [{name: route, args: {route: agent}}]
- tool_calls: [{name: get_learning_path, args: {career: "우주 비행사"}}]
- content: "그 직무의 학습 경로는 아직 없어요."
`)
	out, info, err := execute(t, "run", "--agent", "career", "--model", model, "우주 비행사가 되려면 무엇을 해야 하나요")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "← get_learning_path: error NOT_FOUND: ") {
		t.Errorf("stderr:\n%s", info)
	}
	if out != "그 직무의 학습 경로는 아직 없어요.\n" {
		t.Errorf("stdout = %q", out)
	}
}

func TestRunContinuesThread(t *testing.T) {
	db := runEnv(t)
	script := `
- tool_calls: [{name: route, args: {route: agent}}]
- content: "네, 말씀하세요."
`
	for _, flag := range []string{"--new-thread", "--thread"} {
		if _, _, err := execute(t, "run", "--agent", "career", "--model", writeScript(t, script), flag, "t-1", "진로 질문이 있어요"); err != nil {
			t.Fatal(err)
		}
	}
	// The thread holds both turns.
	saver, err := dburl.Open(t.Context(), db, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	e, _ := examples.Lookup("career")
	a, err := e.Open(t.Context(), scripted.New(), examples.OpenOptions{Saver: saver.Saver})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	snap, err := a.Graph.GetState(t.Context(), checkpoint.Config{ThreadID: "t-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []llm.MessageType
	for _, m := range react.Messages.Get(snap.Values) {
		types = append(types, m.Type)
	}
	if len(types) != 4 || types[0] != llm.TypeHuman || types[2] != llm.TypeHuman {
		t.Errorf("thread messages = %v, want two turns of human and AI", types)
	}
}

func TestRunNewThreadIsPrinted(t *testing.T) {
	runEnv(t)
	model := writeScript(t, "- content: \"반가워요!\"\n")
	_, info, err := execute(t, "run", "--agent", "career", "--model", model, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info, "thread ") || !strings.Contains(info, "continue it with --thread ") {
		t.Errorf("stderr = %q, want the new thread id", info)
	}
}

func TestRunErrors(t *testing.T) {
	runEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"run", "--agent", "career", "hi"},
			"no model: pass --model openai:gpt-4o-mini (needs OPENAI_API_KEY), --model anthropic:claude-sonnet-4-5 (needs ANTHROPIC_API_KEY), --model ollama:qwen2.5:7b (a local Ollama, OLLAMA_HOST) or --model scripted:examples/career/demo.yaml (offline), or set WEFT_MODEL"},
		{"unknown agent", []string{"run", "--agent", "nope", "hi"}, `unknown agent "nope"; known agents: career, guide, marketing, travel`},
		{"not an agent", []string{"run", "--agent", "approval", "hi"}, `unknown agent "approval"; known agents: career, guide, marketing, travel`},
		{"no agent", []string{"run", "hi"}, "no agent: pass --agent with one of: career, guide, marketing, travel"},
		{"no question", []string{"run", "--agent", "career"}, "run takes the question to ask"},
		{"bad tools", []string{"run", "--agent", "career", "--tools", "xml", "hi"},
			`--tools "xml": want native (the model's tool calling) or json (a JSON reply format, for models without tool calling)`},
		{"tools case", []string{"run", "--agent", "career", "--tools", "JSON", "hi"}, `--tools "JSON": want native`},
		{"no model, JSON mode", []string{"run", "--agent", "career", "--tools", "json", "hi"},
			"no model: pass --model openai:gpt-4o-mini (needs OPENAI_API_KEY), --model anthropic:claude-sonnet-4-5 (needs ANTHROPIC_API_KEY), --model ollama:qwen2.5:7b (a local Ollama, OLLAMA_HOST) or --model scripted:examples/career/demo-json.yaml (offline), or set WEFT_MODEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := execute(t, tt.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// A bad $WEFT_TOOLS fails naming the variable; --tools overrides it.
func TestRunToolsFromEnv(t *testing.T) {
	runEnv(t)
	t.Setenv("WEFT_TOOLS", "yaml")
	model := writeScript(t, "- content: \"반가워요!\"\n")
	_, _, err := execute(t, "run", "--agent", "career", "--model", model, "hi")
	if want := `$WEFT_TOOLS "yaml": want native`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v\nwant %s...", err, want)
	}
	out, _, err := execute(t, "run", "--agent", "career", "--tools", "native", "--model", model, "hi")
	if err != nil || out != "반가워요!\n" {
		t.Errorf("with --tools native: stdout = %q, err = %v", out, err)
	}
}

func TestRunModelFromEnv(t *testing.T) {
	runEnv(t)
	t.Setenv("WEFT_MODEL", writeScript(t, "- content: \"반가워요!\"\n"))
	out, _, err := execute(t, "run", "--agent", "career", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if out != "반가워요!\n" {
		t.Errorf("stdout = %q", out)
	}
}

func TestGraphDrawAgents(t *testing.T) {
	for name, nodes := range map[string][]string{
		"career": {"route", "chat", "fail", "agent", "tools"},
		"travel": {"route", "chat", "fail", "agent", "tools", "handle_replace_places", "handle_place_recommendation", "handle_workspace_recommendation", "handle_travel_route"},
	} {
		out, _, err := execute(t, "graph", "draw", name)
		if err != nil {
			t.Fatalf("graph draw %s: %v", name, err)
		}
		for _, n := range nodes {
			if !strings.Contains(out, "\t"+n+"("+n+")\n") {
				t.Errorf("graph draw %s lacks node %s:\n%s", name, n, out)
			}
		}
	}
}

// An example's service keeps its data beside the conversations, so what
// one run does (a booking of the last seat) holds in the next run.
func TestRunServiceDataPersists(t *testing.T) {
	db := runEnv(t)
	book := func(user string) string {
		t.Helper()
		// "예약" routes the message to the agent by rule: no classifier call.
		model := writeScript(t, `
- tool_calls: [{name: book_mentoring, args: {session_id: "ms-002", user_id: "`+user+`"}}]
- content: "done"
`)
		out, info, err := execute(t, "run", "--agent", "career", "--model", model, "ms-002 세션을 예약해 주세요")
		if err != nil {
			t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, info)
		}
		return info
	}
	if info := book("u-first"); !strings.Contains(info, "← book_mentoring: ok") {
		t.Fatalf("first booking:\n%s", info)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(db), "weft-career.db")); err != nil {
		t.Fatalf("the career service's data is not beside the conversations: %v", err)
	}
	// ms-002 had one seat left; the first run took it.
	if info := book("u-second"); !strings.Contains(info, "← book_mentoring: error SESSION_FULL") {
		t.Errorf("second booking, in a new run:\n%s", info)
	}
}

// A plain chat turn is saved to the thread like an agent turn, so the
// conversation stays whole when the next message goes to the agent.
func TestRunChatTurnIsKept(t *testing.T) {
	db := runEnv(t)
	if _, _, err := execute(t, "run", "--agent", "career", "--model", writeScript(t, "- content: \"안녕하세요!\"\n"), "--new-thread", "t-2", "안녕하세요"); err != nil {
		t.Fatal(err)
	}
	agentTurn := `
- tool_calls: [{name: route, args: {route: agent}}]
- content: "네, 말씀하세요."
`
	if _, _, err := execute(t, "run", "--agent", "career", "--model", writeScript(t, agentTurn), "--thread", "t-2", "진로 질문이 있어요"); err != nil {
		t.Fatal(err)
	}
	saver, err := dburl.Open(t.Context(), db, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	e, _ := examples.Lookup("career")
	a, err := e.Open(t.Context(), scripted.New(), examples.OpenOptions{Saver: saver.Saver})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	snap, err := a.Graph.GetState(t.Context(), checkpoint.Config{ThreadID: "t-2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range react.Messages.Get(snap.Values) {
		got = append(got, string(m.Type)+": "+m.Text())
	}
	want := []string{"human: 안녕하세요", "ai: 안녕하세요!", "human: 진로 질문이 있어요", "ai: 네, 말씀하세요."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("thread messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(snap.Next) != 0 {
		t.Errorf("next = %v after the agent answered", snap.Next)
	}
}

// MateTrip answers a greeting with plain chat, without the agent.
func TestRunTravelGreetingIsPlainChat(t *testing.T) {
	runEnv(t)
	model := writeScript(t, "- content: \"안녕하세요! 어디로 떠나세요?\"\n")
	out, info, err := execute(t, "run", "--agent", "travel", "--model", model, "안녕하세요")
	if err != nil {
		t.Fatal(err)
	}
	if out != "안녕하세요! 어디로 떠나세요?\n" || !strings.Contains(info, "plain chat") || strings.Contains(info, "→") {
		t.Errorf("stdout = %q, stderr = %q; want a plain chat reply without tool calls", out, info)
	}
}

// A turn on a thread another process is running waits its turn, and says
// so on stderr, instead of interleaving with it.
func TestRunWaitsForBusyThread(t *testing.T) {
	db := runEnv(t)
	saver, err := dburl.Open(t.Context(), db, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	// Another process's run holds the thread and then dies: its lease,
	// not renewed, expires after 3 s.
	if err := saver.Saver.Driver().AcquireLease(t.Context(), "t-busy", checkpoint.LeaseRequest{Owner: "elsewhere", TTL: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	script := `
- tool_calls: [{name: route, args: {route: agent}}]
- content: "네, 말씀하세요."
`
	out, info, err := execute(t, "run", "--agent", "career", "--model", writeScript(t, script), "--new-thread", "t-busy", "진로 질문이 있어요")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(info, "thread t-busy is busy; waiting…\n") != 1 {
		t.Errorf("stderr does not say once that the thread is busy:\n%s", info)
	}
	if !strings.Contains(out, "네, 말씀하세요.") {
		t.Errorf("stdout lacks the answer:\n%s", out)
	}
}
