package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/examples/guide/agent"
	"github.com/weftlabs/weft/examples/guide/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
)

func call(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
}

// Scripted replies of each step.
func routeTo(complex bool) llm.Message {
	if complex {
		return llm.AI("", call("classify_request", `{"is_complex_task": true, "reason": "여러 단계의 작업"}`))
	}
	return llm.AI("", call("classify_request", `{"is_complex_task": false, "reason": "도구 하나에 대한 질문"}`))
}

func planOf(tasks ...string) llm.Message {
	b, _ := json.Marshal(map[string]any{"sub_tasks": tasks})
	return llm.AI("", call("plan", string(b)))
}

// nothingToRemember is the memory manager's answer when the conversation
// holds nothing worth keeping.
var nothingToRemember = llm.AI("", call("memory_operations", `{"operations": []}`))

// env is an agent over scripted models, with its memories in a store the
// test can reopen the agent on.
type env struct {
	t       *testing.T
	model   *scripted.Model
	memory  *scripted.Model
	mem     *store.Store
	saver   *checkpoint.Saver
	a       *agent.Agent
	results chan memory.Result
}

func newEnv(t *testing.T, model, mem *scripted.Model, opts agent.Options) *env {
	t.Helper()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, model: model, memory: mem, mem: st, saver: checkpoint.NewMemory(), results: make(chan memory.Result, 16)}
	e.open(opts)
	return e
}

func (e *env) open(opts agent.Options) {
	e.t.Helper()
	if opts.Index == nil {
		ix, err := sharedKB()
		if err != nil {
			e.t.Fatal(err)
		}
		opts.Index = ix
	}
	opts.Memory = e.mem
	opts.Checkpointer = e.saver
	opts.MemoryModel = e.memory
	opts.Reflection.Attempts = 1
	opts.OnReflect = func(_ string, r memory.Result, err error) {
		if err == nil {
			e.results <- r
		}
	}
	opts.Clock = service.Clock{Now: func() time.Time { return time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC) }}
	a, err := agent.New(e.t.Context(), e.model, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.a = a
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			e.t.Errorf("Close: %v", err)
		}
	})
}

// run streams the graph on thread for user and returns the nodes that ran.
func (e *env) run(in graph.Update, thread, user string) ([]string, error) {
	return e.runWith(in, &graph.RunOptions{ThreadID: thread}, user)
}

// approve runs a thread that waits for approval to its end: the zero
// update, without the breakpoint (agent.Approve).
func (e *env) approve(thread, user string) []string {
	e.t.Helper()
	ran, err := e.runWith(graph.Update{}, agent.Approve(thread), user)
	if err != nil {
		e.t.Fatalf("run: %v", err)
	}
	return ran
}

func (e *env) runWith(in graph.Update, opts *graph.RunOptions, user string) ([]string, error) {
	e.t.Helper()
	ctx := memory.WithUser(e.t.Context(), user)
	var ran []string
	for ev, err := range e.a.Graph.Stream(ctx, in, opts) {
		if err != nil {
			return ran, err
		}
		if u, ok := ev.Update(); ok && u.Node != "__interrupt__" {
			ran = append(ran, u.Node)
		}
	}
	return ran, nil
}

func (e *env) mustRun(in graph.Update, thread, user string) []string {
	e.t.Helper()
	ran, err := e.run(in, thread, user)
	if err != nil {
		e.t.Fatalf("run: %v", err)
	}
	return ran
}

func (e *env) state(thread string) graph.StateSnapshot {
	e.t.Helper()
	snap, err := e.a.Graph.GetState(e.t.Context(), checkpoint.Config{ThreadID: thread}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return snap
}

// edit applies a review of the plan as document 004 does:
// update_state(as_node="planning_node").
func (e *env) edit(thread string, u graph.Update) {
	e.t.Helper()
	if _, err := e.a.Graph.UpdateState(e.t.Context(), checkpoint.Config{ThreadID: thread}, u, agent.PlanningNode); err != nil {
		e.t.Fatal(err)
	}
}

// system returns the system prompt of the model's i-th request.
func (e *env) system(i int) string {
	e.t.Helper()
	reqs := e.model.Requests()
	if i >= len(reqs) {
		e.t.Fatalf("the model had %d requests, not %d", len(reqs), i+1)
	}
	if m := reqs[i].Messages[0]; m.Type == llm.TypeSystem {
		return m.Text()
	}
	return ""
}

func (e *env) finalGuide(thread string) string {
	e.t.Helper()
	g := agent.FinalGuide.Get(e.state(thread).Values)
	if g == nil {
		e.t.Fatalf("thread %s has no final guide", thread)
	}
	return *g
}

func TestSimpleQuestion(t *testing.T) {
	e := newEnv(t, scripted.New(
		routeTo(false),
		llm.AI("calculator는 사칙연산, 괄호, 거듭제곱(^)과 퍼센트를 계산해요 [1]."),
	), scripted.New(nothingToRemember), agent.Options{})
	ran := e.mustRun(agent.Input("calculator 도구는 어떤 계산을 할 수 있어?"), "t1", "jimin")
	if diff := cmp.Diff([]string{agent.RouterNode, agent.GuideNode, agent.ReflectionNode}, ran); diff != "" {
		t.Errorf("nodes run (-want +got):\n%s", diff)
	}
	st := e.state("t1")
	if len(st.Next) != 0 {
		t.Errorf("next = %v, want the run finished", st.Next)
	}
	if agent.IsComplexTask.Get(st.Values) {
		t.Error("is_complex_task is true for a simple question")
	}
	// The guide searched the knowledge base itself and cites it.
	docs := agent.RetrievedDocs.Get(st.Values)
	if len(docs) == 0 || docs[0].DocID != "tool-calculator-ko" {
		t.Fatalf("retrieved_docs = %+v, want the calculator's entry first", docs)
	}
	if prompt := e.system(1); !strings.Contains(prompt, "[1] "+docs[0].Citation) {
		t.Errorf("the guide's prompt does not number the source %q:\n%s", docs[0].Citation, prompt)
	}
	if got := e.finalGuide("t1"); !strings.Contains(got, "퍼센트") {
		t.Errorf("final_guide = %q", got)
	}
	out := react.OutcomeOf(agent.Messages.Get(st.Values))
	if out.Stop != react.StopAnswer || out.Fallback || out.Steps != 0 {
		t.Errorf("outcome = %+v, want an answer without tools", out)
	}
}

// complexScript is the model's part of a complex request, from the plan on:
// the tool loop searches the knowledge base, computes a figure, saves a
// recommendation per sub-task, and the guide is written.
func complexScript(plan ...string) []llm.Message {
	return []llm.Message{
		routeTo(true),
		planOf(plan...),
		llm.AI("각 단계에 맞는 도구를 찾아볼게요.",
			call("retrieve_docs", `{"query": "쇼츠 대본 작성", "language": "ko"}`),
			call("retrieve_docs", `{"query": "AI 영상 생성 도구", "language": "ko"}`)),
		llm.AI("", call("calculator", `{"expression": "9.99 * 12"}`)),
		llm.AI("",
			call("save_recommendation", `{"sub_task": "`+plan[0]+`", "recommendation": "150~180자 대본 템플릿", "reason": "60초 안에 읽히는 길이", "sources": ["tools.json › wf-shorts-ko"]}`),
			call("save_recommendation", `{"sub_task": "2", "recommendation": "텍스트 기반 AI 영상 도구", "reason": "배경 장면을 프롬프트로 생성", "sources": ["trends-2026.pdf p.1"]}`)),
		llm.AI("두 단계 모두 추천을 마쳤어요."),
		llm.AI("## 쇼츠 제작 가이드\n1. 대본: 150~180자 [1]\n2. 영상 생성: AI 영상 도구 [2]\n\nSources\n[1] tools.json › wf-shorts-ko"),
	}
}

func TestComplexTaskApproved(t *testing.T) {
	e := newEnv(t, scripted.New(complexScript("대본 작성", "영상 생성")...), scripted.New(nothingToRemember), agent.Options{})
	ran := e.mustRun(agent.Input("유튜브 쇼츠를 만들고 싶어요. 어떤 순서로 하면 될까요?"), "t1", "jimin")
	if diff := cmp.Diff([]string{agent.RouterNode, agent.PlanningNode}, ran); diff != "" {
		t.Errorf("nodes run before the pause (-want +got):\n%s", diff)
	}
	st := e.state("t1")
	if !agent.AwaitingApproval(st) || !slices.Equal(st.Next, []string{agent.RecommendNode}) {
		t.Fatalf("next = %v, want a pause before %s", st.Next, agent.RecommendNode)
	}
	if diff := cmp.Diff([]string{"대본 작성", "영상 생성"}, agent.SubTasks.Get(st.Values)); diff != "" {
		t.Errorf("sub_tasks (-want +got):\n%s", diff)
	}

	// Approve: run on with the zero update (document 004's invoke(None)).
	// The breakpoint is static: run as it is, the thread stops again each
	// time the loop comes back to recommend_tool_node, and those stops are
	// not asking for approval.
	ran = e.mustRun(graph.Update{}, "t1", "jimin")
	if diff := cmp.Diff([]string{agent.RecommendNode, agent.ToolsNode}, ran); diff != "" {
		t.Errorf("nodes run on the first resume (-want +got):\n%s", diff)
	}
	if st := e.state("t1"); !slices.Equal(st.Next, []string{agent.RecommendNode}) || agent.AwaitingApproval(st) {
		t.Errorf("in the loop: next = %v, awaiting approval %v; want a stop that is not an approval", st.Next, agent.AwaitingApproval(st))
	}
	// agent.Approve's options run it to its end.
	ran = append(ran, e.approve("t1", "jimin")...)
	want := []string{agent.RecommendNode, agent.ToolsNode, agent.RecommendNode, agent.ToolsNode, agent.RecommendNode, agent.ToolsNode, agent.RecommendNode, agent.GuideNode, agent.ReflectionNode}
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("nodes run after approval (-want +got):\n%s", diff)
	}
	st = e.state("t1")
	if agent.AwaitingApproval(st) || len(st.Next) != 0 {
		t.Errorf("next = %v, want the run finished", st.Next)
	}
	recs := agent.ToolRecommendations.Get(st.Values)
	wantRecs := map[string]agent.Recommendation{
		"대본 작성": {Recommendation: "150~180자 대본 템플릿", Reason: "60초 안에 읽히는 길이", Sources: []string{"tools.json › wf-shorts-ko"}},
		"영상 생성": {Recommendation: "텍스트 기반 AI 영상 도구", Reason: "배경 장면을 프롬프트로 생성", Sources: []string{"trends-2026.pdf p.1"}},
	}
	if diff := cmp.Diff(wantRecs, recs); diff != "" {
		t.Errorf("tool_recommendations (-want +got):\n%s", diff)
	}
	if tr := agent.ToolResult.Get(st.Values); tr != nil {
		t.Errorf("tool_result = %s after the loop, want nil", *tr)
	}
	// retrieve_docs' passages, with their citations, are the guide's sources.
	docs := agent.RetrievedDocs.Get(st.Values)
	var cites []string
	for _, d := range docs {
		cites = append(cites, d.Citation)
	}
	if !slices.Contains(cites, "tools.json › wf-shorts-ko") {
		t.Errorf("retrieved_docs cite %v, want the shorts workflow among them", cites)
	}
	reqs := e.model.Requests()
	guide := e.system(len(reqs) - 1)
	for i, c := range cites {
		if !strings.Contains(guide, "["+itoa(i+1)+"] "+c) {
			t.Errorf("the guide's prompt does not number source %q", c)
		}
	}
	if !strings.Contains(guide, "1. 대본 작성 → 150~180자 대본 템플릿") {
		t.Errorf("the guide's prompt lacks the recommendations:\n%s", guide)
	}
	// The tool loop worked from the approved plan, with the guide's tools.
	if p := e.system(2); !strings.Contains(p, "1. 대본 작성\n2. 영상 생성") {
		t.Errorf("recommend_tool_node's prompt lacks the plan:\n%s", p)
	}
	var bound []string
	for _, s := range reqs[2].Tools {
		bound = append(bound, s.Name)
	}
	if diff := cmp.Diff([]string{"calculator", "get_time", "read_memory", "retrieve_docs", "save_recommendation", "write_memory"}, sorted(bound)); diff != "" {
		t.Errorf("tools offered (-want +got):\n%s", diff)
	}
	// The calculator's answer reached the model.
	if !hasToolResult(agent.Messages.Get(st.Values), "calculator", `"result":119.88`) {
		t.Error("no calculator result 119.88 in the conversation")
	}
	if got := e.finalGuide("t1"); !strings.HasPrefix(got, "## 쇼츠 제작 가이드") {
		t.Errorf("final_guide = %q", got)
	}
}

func TestEditPlanAsPlanningNode(t *testing.T) {
	// The model is not asked to plan again: the user's plan is used.
	script := complexScript("대본 작성", "영상 생성")
	e := newEnv(t, scripted.New(script...), scripted.New(nothingToRemember), agent.Options{})
	e.mustRun(agent.Input("유튜브 쇼츠를 만들고 싶어요"), "t1", "jimin")
	e.edit("t1", agent.EditPlan([]string{"대본 작성", " 영상  생성 ", "자막 넣기"}))
	st := e.state("t1")
	if !agent.AwaitingApproval(st) {
		t.Fatalf("after the edit: next = %v, want %s", st.Next, agent.RecommendNode)
	}
	ran := e.approve("t1", "jimin")
	if ran[0] != agent.RecommendNode {
		t.Fatalf("after the edit the run began with %v, want %s", ran, agent.RecommendNode)
	}
	if p := e.system(2); !strings.Contains(p, "1. 대본 작성\n2. 영상 생성\n3. 자막 넣기") {
		t.Errorf("recommend_tool_node did not get the edited plan:\n%s", p)
	}
	msgs := agent.Messages.Get(e.state("t1").Values)
	if !slices.ContainsFunc(msgs, func(m llm.Message) bool {
		return m.Type == llm.TypeHuman && strings.Contains(m.Text(), "3. 자막 넣기")
	}) {
		t.Error("the edit is not in the conversation")
	}
}

func TestFeedbackReplans(t *testing.T) {
	script := []llm.Message{routeTo(true), planOf("대본 작성", "유료 AI 영상 생성")}
	script = append(script, planOf("대본 작성", "무료 스톡 영상 편집"))
	rest := complexScript("대본 작성", "무료 스톡 영상 편집")[2:]
	e := newEnv(t, scripted.New(append(script, rest...)...), scripted.New(nothingToRemember), agent.Options{})
	e.mustRun(agent.Input("유튜브 쇼츠를 만들고 싶어요"), "t1", "jimin")

	e.edit("t1", agent.Feedback("유료 도구는 빼 주세요"))
	if st := e.state("t1"); !slices.Equal(st.Next, []string{agent.PlanningNode}) {
		t.Fatalf("after feedback: next = %v, want %s", st.Next, agent.PlanningNode)
	}
	ran := e.mustRun(graph.Update{}, "t1", "jimin")
	if diff := cmp.Diff([]string{agent.PlanningNode}, ran); diff != "" {
		t.Errorf("nodes run after feedback (-want +got):\n%s", diff)
	}
	st := e.state("t1")
	if !agent.AwaitingApproval(st) {
		t.Fatalf("the new plan was not shown for approval: next = %v", st.Next)
	}
	if diff := cmp.Diff([]string{"대본 작성", "무료 스톡 영상 편집"}, agent.SubTasks.Get(st.Values)); diff != "" {
		t.Errorf("re-planned sub_tasks (-want +got):\n%s", diff)
	}
	if fb := agent.UserFeedback.Get(st.Values); fb != nil {
		t.Errorf("user_feedback = %q after re-planning, want it used up", *fb)
	}
	replan := e.system(2)
	if !strings.Contains(replan, "1. 대본 작성\n2. 유료 AI 영상 생성") || !strings.Contains(replan, "유료 도구는 빼 주세요") {
		t.Errorf("the planner was not shown its plan and the feedback:\n%s", replan)
	}
	ran = e.approve("t1", "jimin")
	if ran[len(ran)-1] != agent.ReflectionNode {
		t.Errorf("the approved run ended at %v", ran)
	}
}

func TestRejectAnswersWithoutTools(t *testing.T) {
	e := newEnv(t, scripted.New(routeTo(true), planOf("대본 작성", "영상 생성"), llm.AI("계획 없이 알려 드릴게요: 쇼츠는 다섯 단계로 만듭니다 [1].")),
		scripted.New(nothingToRemember), agent.Options{})
	e.mustRun(agent.Input("유튜브 쇼츠를 만들고 싶어요"), "t1", "jimin")
	e.edit("t1", agent.Reject("지금은 실행하지 않을래요"))
	ran := e.mustRun(graph.Update{}, "t1", "jimin")
	if diff := cmp.Diff([]string{agent.GuideNode, agent.ReflectionNode}, ran); diff != "" {
		t.Errorf("nodes run after a rejection (-want +got):\n%s", diff)
	}
	if p := e.system(2); !strings.Contains(p, "I rejected the plan: 지금은 실행하지 않을래요") {
		t.Errorf("the guide was not told of the rejection:\n%s", p)
	}
	if got := react.OutcomeOf(agent.Messages.Get(e.state("t1").Values)); got.Steps != 0 {
		t.Errorf("%d tool steps ran after a rejection", got.Steps)
	}
}

// reflection writes the user's preference in the background after a run;
// a new thread of the same user plans with it, another user's does not.
func TestReflectionRemembersPreferences(t *testing.T) {
	remember := llm.AI("", call("memory_operations",
		`{"operations": [{"op": "insert", "content": {"category": "preference", "content": "유료 도구 대신 무료 도구를 선호함"}}]}`))
	model := scripted.New(append(
		[]llm.Message{routeTo(false), llm.AI("무료로 쇼츠를 만드는 방법은 ... [1]")},
		complexScript("대본 작성", "영상 생성")...)...)
	e := newEnv(t, model, scripted.New(remember, nothingToRemember), agent.Options{})

	e.mustRun(agent.Input("저는 유료 도구는 안 써요. 무료로 쇼츠 만드는 법 알려 주세요"), "t1", "jimin")
	// The run returned before the reflection ran; wait for it.
	if err := e.a.Reflector.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-e.results:
		if len(r.Inserted) != 1 {
			t.Fatalf("reflection = %+v, want one memory inserted", r)
		}
	default:
		t.Fatal("no reflection after the run")
	}
	mems, err := e.a.Facts.Search(t.Context(), "jimin", "무료 도구", 5)
	if err != nil || len(mems) != 1 {
		t.Fatalf("jimin's memories = %v, %v", mems, err)
	}

	// A new conversation of the same user: the planner and the tool loop
	// are told the preference.
	e.mustRun(agent.Input("유튜브 쇼츠 제작 계획을 세워 주세요"), "t2", "jimin")
	const pref = "- 유료 도구 대신 무료 도구를 선호함"
	if p := e.system(3); !strings.Contains(p, pref) {
		t.Errorf("the planner of a new thread was not told the preference:\n%s", p)
	}
	e.approve("t2", "jimin")
	if p := e.system(4); !strings.Contains(p, pref) {
		t.Errorf("recommend_tool_node was not told the preference:\n%s", p)
	}
	// Another user's conversation is not.
	others, err := e.a.Facts.Search(t.Context(), "minho", "무료 도구", 5)
	if err != nil || len(others) != 0 {
		t.Errorf("minho's memories = %v, %v; want none", others, err)
	}
}

// Every model failure ends the run with an error that says so, after a
// fallback answer the thread keeps; the conversation is not lost.
func TestModelFailures(t *testing.T) {
	down := scripted.Response{Err: &llm.APIError{Provider: "openai", StatusCode: 503, Message: "overloaded"}}
	ok := func(m llm.Message) scripted.Response { return scripted.Response{Message: m} }
	badPlan := llm.AI("", call("plan", `{"sub_tasks": []}`))
	tests := []struct {
		name      string
		script    []scripted.Response
		approve   bool
		want      error
		wantNot   error
		failedAt  string
		wantCause string
	}{
		{name: "router", script: []scripted.Response{down}, want: react.ErrModelFailed, failedAt: agent.RouterNode, wantCause: "overloaded"},
		{name: "planner output twice invalid", script: []scripted.Response{ok(routeTo(true)), ok(badPlan), ok(badPlan)},
			want: react.ErrNoAnswer, wantNot: react.ErrModelFailed, failedAt: agent.PlanningNode, wantCause: "minItems"},
		{name: "tool loop", script: []scripted.Response{ok(routeTo(true)), ok(planOf("대본 작성")), down}, approve: true,
			want: react.ErrModelFailed, failedAt: agent.RecommendNode, wantCause: "503"},
		{name: "guide", script: []scripted.Response{ok(routeTo(false)), down}, want: react.ErrModelFailed, failedAt: agent.GuideNode, wantCause: "overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, scripted.NewScript(scripted.Options{}, tt.script...), scripted.New(), agent.Options{})
			ran, err := e.run(agent.Input("유튜브 쇼츠를 만들고 싶어요"), "t1", "jimin")
			if tt.approve {
				if err != nil {
					t.Fatal(err)
				}
				ran, err = e.runWith(graph.Update{}, agent.Approve("t1"), "jimin")
			}
			if !errors.Is(err, tt.want) || tt.wantNot != nil && errors.Is(err, tt.wantNot) {
				t.Fatalf("run error = %v, want %v (and not %v)", err, tt.want, tt.wantNot)
			}
			var te *react.TurnError
			if !errors.As(err, &te) || !strings.Contains(te.Cause, tt.wantCause) {
				t.Errorf("the turn error %v does not tell the cause %q", err, tt.wantCause)
			}
			if ran[len(ran)-1] != tt.failedAt {
				t.Errorf("nodes run = %v, want the last to be %s", ran, tt.failedAt)
			}
			st := e.state("t1")
			out := react.OutcomeOf(agent.Messages.Get(st.Values))
			if !out.Fallback || out.Answer == "" {
				t.Errorf("outcome = %+v, want a fallback answer saved on the thread", out)
			}
			if msgs := agent.Messages.Get(st.Values); msgs[0].Text() != "유튜브 쇼츠를 만들고 싶어요" {
				t.Errorf("the question was lost: %v", msgs[0])
			}
			if agent.FinalGuide.Get(st.Values) != nil {
				t.Error("a final guide was written although the model failed")
			}
		})
	}
}

func TestWebSearchOnlyWhenConfigured(t *testing.T) {
	for _, configured := range []bool{false, true} {
		script := []llm.Message{routeTo(true), planOf("최신 가격 확인"), llm.AI("", call("retrieve_docs", `{"query": "영상 도구 가격"}`)), llm.AI("끝."), llm.AI("가이드")}
		if configured {
			script[3] = llm.AI("", call("web_search", `{"query": "AI video tool price 2026", "k": 2}`))
			script = slices.Insert(script, 4, llm.AI("끝."))
		}
		var opts agent.Options
		if configured {
			opts.WebSearch = fakeSearch{}
		}
		e := newEnv(t, scripted.New(script...), scripted.New(nothingToRemember), opts)
		e.mustRun(agent.Input("AI 영상 도구의 요즘 가격을 정리해 줘"), "t1", "jimin")
		e.approve("t1", "jimin")
		var names []string
		for _, s := range e.model.Requests()[2].Tools {
			names = append(names, s.Name)
		}
		if got := slices.Contains(names, "web_search"); got != configured {
			t.Errorf("configured %v: web_search offered = %v (%v)", configured, got, names)
		}
		docs := agent.RetrievedDocs.Get(e.state("t1").Values)
		web := slices.ContainsFunc(docs, func(p ragPassage) bool { return p.Source == "web" && p.URL == "https://news.example/video-tools" })
		if web != configured {
			t.Errorf("configured %v: web results in retrieved_docs = %v", configured, web)
		}
	}
}

// With more tools than its own (an MCP server's), the tool loop is offered
// its own tools and those tool retrieval finds for the request, not all.
func TestToolRetrievalOverExtraTools(t *testing.T) {
	extra := extraTools(t)
	e := newEnv(t, scripted.New(routeTo(true), planOf("이슈 등록"), llm.AI("끝."), llm.AI("가이드")), scripted.New(nothingToRemember), agent.Options{Tools: extra, K: 2})
	e.mustRun(agent.Input("file a bug issue on our GitHub repository"), "t1", "jimin")
	e.approve("t1", "jimin")
	var names []string
	for _, s := range e.model.Requests()[2].Tools {
		names = append(names, s.Name)
	}
	for _, want := range []string{"retrieve_docs", "calculator", "get_time", "read_memory", "write_memory", "save_recommendation", "github_create_issue", "search_tools"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools offered %v lack %s", names, want)
		}
	}
	if slices.Contains(names, "slack_send_message") || len(names) != 6+2+1 {
		t.Errorf("tools offered = %v, want the 6 of the guide, 2 retrieved and search_tools", names)
	}
	if _, ok := extra.Get("retrieve_docs"); !ok {
		t.Error("the guide's tools were not added to the registry given")
	}
}

func TestJSONMode(t *testing.T) {
	model := scripted.New(
		llm.AI(`{"is_complex_task": true, "reason": "여러 단계"}`),
		llm.AI(`{"sub_tasks": ["대본 작성"]}`),
		llm.AI(`{"thought": "지식 베이스를 찾아보자", "action": "retrieve_docs", "action_input": {"query": "쇼츠 대본"}}`),
		llm.AI(`{"thought": "추천을 저장", "action": "save_recommendation", "action_input": {"sub_task": "대본 작성", "recommendation": "대본 템플릿"}}`),
		llm.AI(`{"thought": "끝", "action": "FINISH", "action_input": {"answer": "추천 완료"}}`),
		llm.AI("## 가이드\n대본은 150~180자로 [1]"),
	)
	e := newEnv(t, model, scripted.New(llm.AI(`{"operations": []}`)), agent.Options{Mode: react.JSONFormat})
	e.mustRun(agent.Input("유튜브 쇼츠 대본을 쓰고 싶어요"), "t1", "jimin")
	e.approve("t1", "jimin")
	st := e.state("t1")
	if got := agent.ToolRecommendations.Get(st.Values)["대본 작성"].Recommendation; got != "대본 템플릿" {
		t.Errorf("recommendation = %q", got)
	}
	for i, r := range model.Requests() {
		if len(r.Tools) > 0 {
			t.Errorf("request %d was offered tools in JSON mode", i)
		}
	}
	if !strings.Contains(e.system(0), "JSON") {
		t.Error("the router was not asked for JSON in the prompt")
	}
	if e.finalGuide("t1") == "" {
		t.Error("no guide")
	}
}
