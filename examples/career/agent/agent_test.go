package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/career/agent"
	"github.com/weftlabs/weft/examples/career/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

const question = "UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?"

func openService(t *testing.T) *service.Service {
	t.Helper()
	svc, err := service.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func call(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
}

// TestDemoScript drives the whole agent (router, ReAct loop, tools over the
// seeded service) with the demo script the README runs.
func TestDemoScript(t *testing.T) {
	data, err := os.ReadFile("../demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model, err := scripted.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	a, err := agent.New(model, openService(t), agent.Options{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	run := graph.RunOptions{ThreadID: "demo"}
	reply, err := a.Handle(t.Context(), question, &run)
	if err != nil {
		t.Fatal(err)
	}
	if !reply.UsedAgent {
		t.Errorf("used_agent = false, want true")
	}
	if diff := cmp.Diff([]string{agent.GetLearningPath, agent.SearchMentoringSessions}, reply.ToolsUsed); diff != "" {
		t.Errorf("tools_used (-want +got):\n%s", diff)
	}
	if !strings.Contains(reply.Message, "김지은") || !strings.Contains(reply.Message, "UI 디자인과 Figma") {
		t.Errorf("answer does not use the tools' data:\n%s", reply.Message)
	}
	if model.Remaining() != 0 {
		t.Errorf("%d scripted responses unused", model.Remaining())
	}

	// The tool messages hold the seeded service's real data.
	snap, err := a.Graph.GetState(t.Context(), checkpoint.Config{ThreadID: "demo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := react.Messages.Get(snap.Values)
	var sawPath, sawSessions bool
	for _, m := range msgs {
		if m.Type != llm.TypeTool {
			continue
		}
		switch m.Name {
		case agent.GetLearningPath:
			r, err := tool.ResultOf[*service.LearningPath](m)
			if err != nil || !r.Success || r.Data.ID != "lp-ux" || len(r.Data.Steps) != 4 {
				t.Errorf("get_learning_path result = %+v, %v", r, err)
			}
			sawPath = true
		case agent.SearchMentoringSessions:
			r, err := tool.ResultOf[*service.MentoringSearchResult](m)
			if err != nil || !r.Success {
				t.Fatalf("search_mentoring_sessions result = %+v, %v", r, err)
			}
			ids := make([]string, len(r.Data.Sessions))
			for i, s := range r.Data.Sessions {
				ids[i] = s.ID
			}
			if !slices.Contains(ids, "ms-001") || !slices.Contains(ids, "ms-002") || slices.Contains(ids, "ms-003") {
				t.Errorf("sessions = %v, want the open UX sessions ms-001 and ms-002, not the full ms-003", ids)
			}
			sawSessions = true
		}
	}
	if !sawPath || !sawSessions {
		t.Errorf("tool messages: learning path %v, sessions %v", sawPath, sawSessions)
	}
	if out := react.OutcomeOf(msgs); out.Stop != react.StopAnswer {
		t.Errorf("stop = %q, want %q", out.Stop, react.StopAnswer)
	}
}

func TestGreetingGoesToChat(t *testing.T) {
	model := scripted.New(llm.AI("안녕하세요! 어떤 진로가 궁금하세요?"))
	a, err := agent.New(model, openService(t), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := a.Handle(t.Context(), "안녕하세요!", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := router.Reply{Message: "안녕하세요! 어떤 진로가 궁금하세요?", ToolsUsed: []string{}}
	if diff := cmp.Diff(want, reply); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	reqs := model.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 0 {
		t.Errorf("chat made %d model calls (tools %v), want one without tools", len(reqs), reqs)
	}
	if s := a.Router.Stats(); s.AgentRuns != 0 || s.Messages != 1 {
		t.Errorf("stats = %+v, want 1 message, no agent run", s)
	}
}

// When the classifier fails, career requests still reach the agent through
// the router's fallback rules, and small talk still goes to plain chat.
func TestClassifierFailureFallsBackToRules(t *testing.T) {
	classifier := scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Err: errors.New("down")})
	a, err := agent.New(scripted.New(), openService(t), agent.Options{Classifier: classifier})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		msg    string
		route  router.Route
		source router.Source
	}{
		{question, router.Agent, router.ByFallbackRule},
		{"데이터 분석가 로드맵 알려줘", router.Agent, router.ByFallbackRule},
		{"오늘 날씨 좋네요", router.Chat, router.ByFallback},
	} {
		route, src := a.Router.Decide(t.Context(), tt.msg)
		if route != tt.route || src != tt.source {
			t.Errorf("%q: %q by %q, want %q by %q", tt.msg, route, src, tt.route, tt.source)
		}
	}
	if s := a.Router.Stats(); s.ClassifierErrors != 3 {
		t.Errorf("classifier errors = %d, want 3", s.ClassifierErrors)
	}
}

// TestToolErrors checks that the service's typed errors reach the model as
// error codes it can act on, and bad arguments never reach the service.
func TestToolErrors(t *testing.T) {
	svc := openService(t)
	reg, err := agent.NewRegistry(svc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, args, code string
	}{
		{agent.GetLearningPath, `{"career":"우주 비행사"}`, agent.CodeNotFound},
		// A blank search text is refused by the schema (issue 7 §13).
		{agent.GetLearningPath, `{"career":"   "}`, tool.CodeInvalidArgs},
		{agent.GetLearningPath, `{}`, tool.CodeInvalidArgs},
		{agent.BookMentoring, `{"session_id":"ms-003","user_id":"u1"}`, agent.CodeSessionFull},
		{agent.BookMentoring, `{"session_id":"ms-013","user_id":"u1"}`, agent.CodeSessionStarted},
		{agent.BookMentoring, `{"session_id":"ms-999","user_id":"u1"}`, agent.CodeNotFound},
		{agent.SearchJobPostings, `{"keyword":42}`, tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			tl, _ := reg.Get(tt.tool)
			r, err := tl.Run(context.Background(), json.RawMessage(tt.args), 0)
			if err == nil || r.Success || r.ErrorCode != tt.code {
				t.Errorf("result = %+v, %v; want error code %s", r, err, tt.code)
			}
		})
	}

	book, _ := reg.Get(agent.BookMentoring)
	r, err := book.Run(t.Context(), json.RawMessage(`{"session_id":"ms-001","user_id":"u1"}`), 0)
	if err != nil || !r.Success {
		t.Fatalf("booking = %+v, %v", r, err)
	}
	r, _ = book.Run(t.Context(), json.RawMessage(`{"session_id":"ms-001","user_id":"u1"}`), 0)
	if r.ErrorCode != agent.CodeAlreadyBooked {
		t.Errorf("second booking error code = %q, want %s", r.ErrorCode, agent.CodeAlreadyBooked)
	}
}

// TestLimits checks the agent keeps document 002's step limit: a model that
// keeps calling tools is stopped after four steps and answers.
func TestLimits(t *testing.T) {
	var script []scripted.Response
	for i := range agent.MaxSteps {
		script = append(script, scripted.Response{Message: llm.AI("", call(agent.SearchJobPostings, `{"keyword":"UX `+strings.Repeat("디자이너 ", i+1)+`"}`))})
	}
	script = append(script, scripted.Response{Message: llm.AI("지금까지 찾은 공고를 정리해 드릴게요.")})
	model := scripted.NewScript(scripted.Options{}, script...)
	a, err := agent.New(model, openService(t), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := react.Run(t.Context(), a.Graph, "UX 디자이너 채용 공고 계속 찾아줘", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != react.StopMaxSteps || out.Steps != agent.MaxSteps {
		t.Errorf("outcome = %+v, want stop %q after %d steps", out, react.StopMaxSteps, agent.MaxSteps)
	}
}
