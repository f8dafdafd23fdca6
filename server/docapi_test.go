package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

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

const marketingRequest = "지난 분기 채널별 성과를 분석하고 다음 달 캠페인 안을 보고서로 만들어 줘"

var (
	marketingSvc     *marketingservice.Service
	marketingSvcErr  error
	marketingSvcOnce sync.Once
)

// marketingGraph builds document 003's marketing agent (examples/marketing)
// over its offline demo script, played in a loop, as weft serve does
// without a model. The service only reads: the tests share one.
func marketingGraph(t *testing.T) server.GraphFunc {
	t.Helper()
	marketingSvcOnce.Do(func() { marketingSvc, marketingSvcErr = marketingservice.Open(context.Background(), ":memory:") })
	if marketingSvcErr != nil {
		t.Fatal(marketingSvcErr)
	}
	script, err := os.ReadFile("../examples/marketing/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model, err := scripted.Parse(append(script, "\nloop: true\n"...))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := marketingagent.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Results.Dir = t.TempDir()
	return func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		a, err := marketingagent.New(context.Background(), model, marketingSvc, marketingagent.Options{Config: &cfg, Checkpointer: saver})
		if err != nil {
			return nil, err
		}
		return a.Graph, nil
	}
}

// failingGraph fails its one node with the error its message names: a
// model's rate limit ("rate"), a tool's failure ("tool"), a panic
// ("panic").
func failingGraph(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
	msgs := graph.Messages[llm.Message]("messages")
	return graph.New(msgs).
		AddNode("work", func(ctx context.Context, s graph.State) (graph.Update, error) {
			m := msgs.Get(s)
			switch m[len(m)-1].Text() {
			case "rate":
				return graph.Update{}, &llm.APIError{Provider: "openai", StatusCode: 429, Message: "slow down"}
			case "tool":
				return graph.Update{}, &tool.Error{Code: "NOT_FOUND", Message: "no such campaign"}
			case "panic":
				panic("the node broke")
			}
			return msgs.Write(llm.Message{Type: llm.TypeAI, Content: "fine"}), nil
		}, nil).
		AddEdge(graph.START, "work").
		Compile(&graph.CompileOptions{Checkpointer: saver})
}

// docGraphs are the apitest graphs, the marketing agent and failing.
func docGraphs(t *testing.T) map[string]server.GraphFunc {
	g := apitestGraphs()
	g["marketing"] = marketingGraph(t)
	g["failing"] = failingGraph
	return g
}

func newDocServer(t *testing.T, opts server.Options) *testServer {
	t.Helper()
	if opts.Graphs == nil {
		opts.Graphs = docGraphs(t)
	}
	return newServer(t, opts)
}

// docErr is the body of the document API's errors.
type docErr struct {
	Error struct {
		Code      int            `json:"code"`
		Name      string         `json:"name"`
		Category  string         `json:"category"`
		Message   string         `json:"message"`
		Field     string         `json:"field"`
		SessionID string         `json:"session_id"`
		RunID     string         `json:"run_id"`
		Details   map[string]any `json:"details"`
	} `json:"error"`
}

// mustErr does a request that must fail with status and code.
func (s *testServer) mustErr(status, code int, method, path string, body any, headers ...string) docErr {
	s.t.Helper()
	r := s.do(method, path, body, headers...)
	var e docErr
	if err := json.Unmarshal(r.body, &e); err != nil || r.status != status || e.Error.Code != code {
		s.t.Fatalf("%s %s: %d %s; want %d with code %d", method, path, r.status, r.body, status, code)
	}
	if e.Error.Message == "" || e.Error.Category == "" || e.Error.Name == "" {
		s.t.Fatalf("%s %s: error without message, category or name: %s", method, path, r.body)
	}
	return e
}

type agentRun struct {
	SessionID    string `json:"session_id"`
	RunID        string `json:"run_id"`
	Status       string `json:"status"`
	WebSocketURL string `json:"websocket_url"`
	Response     struct {
		Format      string   `json:"format"`
		Text        string   `json:"text"`
		NextActions []string `json:"next_actions"`
		Derived     bool     `json:"derived"`
	} `json:"response"`
	HITLRequests []struct {
		Kind        string          `json:"kind"`
		Message     string          `json:"message"`
		Actions     []string        `json:"actions"`
		Request     json.RawMessage `json:"request"`
		InterruptID string          `json:"interrupt_id"`
	} `json:"hitl_requests"`
	Values map[string]any `json:"values"`
}

func (s *testServer) agentRun(body any) agentRun {
	s.t.Helper()
	var out agentRun
	s.must(200, "POST", "/agent/run", body).json(s.t, &out)
	return out
}

// A blocking run answers with its response; its session is a thread of
// the LangGraph API, the same records.
func TestAgentRunBlocks(t *testing.T) {
	s := newDocServer(t, server.Options{})
	out := s.agentRun(map[string]any{"user_input": "hello there", "assistant_id": "echo"})
	if out.Status != "completed" || out.Response.Text != "hello there" || out.Response.Format != "text" || !out.Response.Derived {
		t.Fatalf("echo run = %+v", out)
	}
	if !strings.HasSuffix(out.WebSocketURL, "/ws/"+out.SessionID) || !strings.HasPrefix(out.WebSocketURL, "ws://") {
		t.Errorf("websocket_url = %q", out.WebSocketURL)
	}
	th := s.must(200, "GET", "/threads/"+out.SessionID, nil).obj(t)
	if th["status"] != "idle" || th["metadata"].(map[string]any)["graph_id"] != "echo" {
		t.Errorf("the session's thread = %v", th)
	}
	run := s.must(200, "GET", "/threads/"+out.SessionID+"/runs/"+out.RunID, nil).obj(t)
	if run["status"] != "success" {
		t.Errorf("the run = %v", run)
	}
	// The session goes on, with its agent.
	again := s.agentRun(map[string]any{"user_input": "and again", "session_id": out.SessionID})
	if again.SessionID != out.SessionID || again.Response.Text != "and again" {
		t.Errorf("second run = %+v", again)
	}
	msgs := again.Values["messages"].([]any)
	if len(msgs) != 4 {
		t.Errorf("the session holds %d messages, want 4", len(msgs))
	}

	// The marketing agent stops at its plan, then answers once approved.
	m := s.agentRun(map[string]any{"user_input": marketingRequest, "assistant_id": "marketing"})
	if m.Status != "interrupted" || len(m.HITLRequests) != 1 || m.HITLRequests[0].Kind != "plan" {
		t.Fatalf("marketing = %+v", m)
	}
	if got := strings.Join(m.HITLRequests[0].Actions, ","); got != "accept,edit,reject" {
		t.Errorf("plan actions = %s", got)
	}
	sess := s.must(200, "GET", "/sessions/"+m.SessionID, nil).obj(t)
	if sess["status"] != "interrupted" || len(sess["hitl_requests"].([]any)) != 1 {
		t.Errorf("session = %v", sess)
	}
}

// A run that outlasts its wait is a 504 naming its session and run; it
// goes on, and its end is read later.
func TestAgentRunTimeout(t *testing.T) {
	s := newDocServer(t, server.Options{})
	e := s.mustErr(504, 4002, "POST", "/agent/run", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 300}, "timeout": 0.01})
	if e.Error.SessionID == "" || e.Error.RunID == "" {
		t.Fatalf("timeout names no session or run: %+v", e)
	}
	var joined map[string]any
	s.must(200, "GET", "/threads/"+e.Error.SessionID+"/runs/"+e.Error.RunID+"/join", nil).json(t, &joined)
	if log, _ := joined["log"].([]any); len(log) != 1 || log[0] != "done" {
		t.Errorf("the run did not go on to its end: %v", joined)
	}
	if st := s.must(200, "GET", "/sessions/"+e.Error.SessionID, nil).obj(t)["status"]; st != "idle" {
		t.Errorf("session status %v", st)
	}
}

// A run that fails answers the code of its typed error.
func TestAgentRunFailureCodes(t *testing.T) {
	s := newDocServer(t, server.Options{})
	for _, c := range []struct {
		input  string
		status int
		code   int
	}{
		{"rate", 502, 7003},
		{"tool", 502, 6005},
		{"panic", 500, 9002},
	} {
		e := s.mustErr(c.status, c.code, "POST", "/agent/run", map[string]any{"user_input": c.input, "assistant_id": "failing"})
		if e.Error.SessionID == "" || e.Error.RunID == "" {
			t.Errorf("%s: %+v names no run", c.input, e)
		}
		if st := s.must(200, "GET", "/sessions/"+e.Error.SessionID, nil).obj(t)["status"]; st != "error" {
			t.Errorf("%s: session status %v", c.input, st)
		}
	}
}

// Bad input is a 4xx whose code is of its range and whose body names the
// field.
func TestDocAPIBadInput(t *testing.T) {
	s := newDocServer(t, server.Options{MaxBodyBytes: 4096})
	sid := s.must(201, "POST", "/sessions", map[string]any{"assistant_id": "echo"}).obj(t)["session_id"].(string)
	other := "5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2"
	cases := []struct {
		method, path string
		body         any
		status, code int
		field        string
	}{
		{"POST", "/agent/run", `{nope`, 400, 1001, ""},
		{"POST", "/agent/run", ``, 400, 1002, "user_input"},
		{"POST", "/agent/run", map[string]any{"assistant_id": "echo"}, 400, 1002, "user_input"},
		{"POST", "/agent/run", map[string]any{"user_input": 5, "assistant_id": "echo"}, 400, 1002, "user_input"},
		{"POST", "/agent/run", map[string]any{"user_input": " ", "assistant_id": "echo"}, 400, 1002, "user_input"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "input": map[string]any{}, "assistant_id": "echo"}, 400, 1002, "input"},
		{"POST", "/agent/run", map[string]any{"user_input": "x"}, 400, 1002, "assistant_id"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "assistant_id": "nobody"}, 404, 4001, "assistant_id"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "assistant_id": "approval"}, 400, 1004, "user_input"},
		{"POST", "/agent/run", map[string]any{"input": map[string]any{"bogus": 1}, "assistant_id": "approval"}, 400, 1004, "input.bogus"},
		{"POST", "/agent/run", map[string]any{"input": []int{1}, "assistant_id": "approval"}, 400, 1002, "input"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "timeout": 301}, 400, 1002, "timeout"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "session_id": "nope"}, 400, 1002, "session_id"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "session_id": other}, 404, 3001, "session_id"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "session_id": sid, "assistant_id": "failing"}, 409, 3004, "assistant_id"},
		{"POST", "/agent/run", map[string]any{"user_input": "x", "metadata": []int{}}, 400, 1002, "metadata"},
		{"POST", "/agent/run", `{"user_input":"` + strings.Repeat("x", 5000) + `"}`, 413, 1003, ""},
		{"POST", "/agent/run-async", map[string]any{}, 400, 1002, "user_input"},
		{"POST", "/agent/stream", map[string]any{"input": "x"}, 400, 1002, "input"},
		{"POST", "/sessions", map[string]any{"session_id": "x"}, 400, 1002, "session_id"},
		{"POST", "/sessions", map[string]any{"session_id": sid}, 409, 3002, "session_id"},
		{"POST", "/sessions", map[string]any{"assistant_id": "nobody"}, 404, 4001, "assistant_id"},
		{"POST", "/sessions", map[string]any{"metadata": "x"}, 400, 1002, "metadata"},
		{"GET", "/sessions?limit=0", nil, 400, 1002, "limit"},
		{"GET", "/sessions?status=happy", nil, 400, 1002, "status"},
		{"GET", "/sessions/nope", nil, 400, 1002, "session_id"},
		{"GET", "/sessions/" + other, nil, 404, 3001, "session_id"},
		{"DELETE", "/sessions/" + other, nil, 404, 3001, "session_id"},
		{"POST", "/approve/nope", map[string]any{"user_action": "accept"}, 400, 1002, "chat_id"},
		{"POST", "/approve/" + other, map[string]any{"user_action": "accept"}, 404, 3001, "session_id"},
		{"POST", "/approve/" + sid, map[string]any{"user_action": "accept"}, 409, 5001, ""},
		{"GET", "/ws/" + sid, nil, 426, 1005, "Upgrade"},
		{"GET", "/ws/" + other, nil, 404, 3001, "session_id"},
		{"GET", "/agent/run", nil, 405, 1007, ""},
		{"PUT", "/sessions/" + sid, nil, 405, 1007, ""},
		{"POST", "/health", nil, 405, 1007, ""},
		{"GET", "/agent/nowhere", nil, 404, 1006, ""},
		{"GET", "/sessions/" + sid + "/runs", nil, 404, 1006, ""},
	}
	for _, c := range cases {
		e := s.mustErr(c.status, c.code, c.method, c.path, c.body)
		if e.Error.Field != c.field {
			t.Errorf("%s %s %v: field %q, want %q (%s)", c.method, c.path, c.body, e.Error.Field, c.field, e.Error.Message)
		}
	}
}

// Sessions are created, read, listed and deleted; a session is a thread,
// and deleting one deletes the thread.
func TestSessions(t *testing.T) {
	s := newDocServer(t, server.Options{})
	var created struct {
		SessionID    string         `json:"session_id"`
		Status       string         `json:"status"`
		GraphID      string         `json:"graph_id"`
		AssistantID  string         `json:"assistant_id"`
		Metadata     map[string]any `json:"metadata"`
		WebSocketURL string         `json:"websocket_url"`
	}
	s.must(201, "POST", "/sessions", map[string]any{"assistant_id": "echo", "metadata": map[string]any{"app": "t"}}).json(t, &created)
	if created.Status != "idle" || created.GraphID != "echo" || created.AssistantID != server.SystemAssistantID("echo") || created.Metadata["app"] != "t" {
		t.Errorf("created = %+v", created)
	}
	own := "0b9a4a50-3a3f-4c4e-9d55-1d0bc0e1e0a1"
	s.must(201, "POST", "/sessions", map[string]any{"session_id": own})
	// The LangGraph API reads them as threads.
	s.must(200, "GET", "/threads/"+created.SessionID, nil)
	s.must(200, "GET", "/threads/"+own, nil)

	// Without assistant_id, a run takes the session's agent.
	out := s.agentRun(map[string]any{"user_input": "hi", "session_id": created.SessionID})
	if out.Response.Text != "hi" {
		t.Errorf("run = %+v", out)
	}
	got := s.must(200, "GET", "/sessions/"+created.SessionID, nil).obj(t)
	if got["status"] != "idle" || got["values"] == nil {
		t.Errorf("session = %v", got)
	}
	var list struct {
		Sessions []map[string]any `json:"sessions"`
		Total    int              `json:"total"`
	}
	s.must(200, "GET", "/sessions", nil).json(t, &list)
	if list.Total != 2 || len(list.Sessions) != 2 || list.Sessions[0]["session_id"] != created.SessionID {
		t.Errorf("list = %+v", list)
	}
	if list.Sessions[0]["values"] != nil {
		t.Error("a listed session carries its values")
	}
	s.must(200, "GET", "/sessions?limit=1&offset=1", nil).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0]["session_id"] != own {
		t.Errorf("second page = %+v", list)
	}
	s.must(200, "GET", "/sessions?status=busy", nil).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("busy sessions = %+v", list)
	}

	s.must(204, "DELETE", "/sessions/"+created.SessionID, nil)
	s.mustErr(404, 3001, "GET", "/sessions/"+created.SessionID, nil)
	s.must(404, "GET", "/threads/"+created.SessionID, nil)
	s.must(404, "GET", "/threads/"+created.SessionID+"/runs/"+out.RunID, nil)
	// A thread made by the LangGraph API is a session, and deleting it
	// there deletes the session.
	tid := s.newThread()
	s.must(200, "GET", "/sessions/"+tid, nil)
	s.must(204, "DELETE", "/threads/"+tid, nil)
	s.mustErr(404, 3001, "GET", "/sessions/"+tid, nil)
}

// The health check answers while the database does, and 503 once it does
// not or the server shuts down.
func TestHealth(t *testing.T) {
	for _, b := range backends {
		pb := newDocServer(t, server.Options{Graphs: apitestGraphs(), DB: b.open(t)})
		h := pb.must(200, "GET", "/health", nil).obj(t)
		if h["status"] != "ok" || h["checks"].(map[string]any)["database"].(map[string]any)["status"] != "ok" {
			t.Errorf("%s: health = %v", b.name, h)
		}
	}
	s := newDocServer(t, server.Options{Graphs: apitestGraphs()})

	db := backends[0].open(t)
	down := newServer(t, server.Options{Graphs: apitestGraphs(), DB: db})
	db.Close()
	e := down.mustErr(503, 8001, "GET", "/health", nil)
	if e.Error.Details["database"].(map[string]any)["status"] != "unavailable" {
		t.Errorf("health of a closed database = %+v", e)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s.mustErr(503, 9003, "GET", "/health", nil)
}

// Doc 001's stream carries START, STATUS, TOKEN, HUMAN_INPUT_REQUIRED and
// END; an approval resumes the run.
func TestApproveResumes(t *testing.T) {
	s := newDocServer(t, server.Options{})
	_, evs := s.stream("POST", "/agent/stream", map[string]any{"user_input": marketingRequest, "assistant_id": "marketing"})
	got := names(evs)
	if len(got) == 0 || got[0] != "START" || got[len(got)-1] != "HUMAN_INPUT_REQUIRED" {
		t.Fatalf("events = %v", got)
	}
	for _, e := range evs {
		m := e.obj(t)
		if m["event"] != strings.ToLower(e.Event) {
			t.Errorf("%s carries %v", e.Event, m["event"])
		}
		if m["derived"] == true {
			t.Errorf("the orchestrator's %s is marked derived", e.Event)
		}
		if !strings.Contains("START STATUS TOKEN HUMAN_INPUT_REQUIRED END", e.Event) {
			t.Errorf("event %s on doc 001's stream", e.Event)
		}
	}
	start := evs[0].obj(t)
	sid := start["thread_id"].(string)
	if start["request"] != marketingRequest {
		t.Errorf("START = %v", start)
	}
	if hir := evs[len(evs)-1].obj(t); hir["kind"] != "plan" {
		t.Errorf("HUMAN_INPUT_REQUIRED = %v", hir)
	}

	e := s.mustErr(422, 5002, "POST", "/approve/"+sid, map[string]any{"user_action": "skip"})
	if e.Error.Field != "user_action" || len(e.Error.Details["actions"].([]any)) != 3 {
		t.Errorf("refusal = %+v", e)
	}
	s.mustErr(400, 1002, "POST", "/approve/"+sid, map[string]any{"user_action": "edit"})
	s.mustErr(422, 5003, "POST", "/approve/"+sid, map[string]any{"user_action": "accept", "interrupt_id": strings.Repeat("0", 32)})

	_, evs = s.stream("POST", "/approve/"+sid, map[string]any{"user_action": "accept"}, "Accept", "text/event-stream")
	got = names(evs)
	if len(got) == 0 || got[len(got)-1] != "END" {
		t.Fatalf("events after approval = %v", got)
	}
	for _, want := range []string{"STATUS", "TOKEN"} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("no %s after approval: %v", want, got)
		}
	}
	if end := evs[len(evs)-1].obj(t); end["status"] != "done" {
		t.Errorf("END = %v", end)
	}
	if st := s.must(200, "GET", "/sessions/"+sid, nil).obj(t)["status"]; st != "idle" {
		t.Errorf("session after approval: %v", st)
	}
	s.mustErr(409, 5001, "POST", "/approve/"+sid, map[string]any{"user_action": "accept"})

	// Without text/event-stream, an approval answers 202 and the run goes
	// on; the apitest approval graph takes a resume as it is.
	a := s.must(200, "POST", "/threads", map[string]any{}).obj(t)["thread_id"].(string)
	s.must(200, "POST", "/threads/"+a+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "the budget"}})
	acc := s.must(202, "POST", "/approve/"+a, map[string]any{"resume": "yes"}).obj(t)
	if acc["status"] != "resumed" || acc["chat_id"] != a {
		t.Fatalf("approve = %v", acc)
	}
	s.must(200, "GET", "/threads/"+a+"/runs/"+acc["run_id"].(string)+"/join", nil)
	vals := s.must(200, "GET", "/threads/"+a+"/state", nil).obj(t)["values"].(map[string]any)
	if vals["answer"] != "yes" || vals["decided"] != true {
		t.Errorf("approval's state = %v", vals)
	}
}

// Doc 001's events for a graph that sends none are derived from the run.
func TestAgentStreamDerived(t *testing.T) {
	s := newDocServer(t, server.Options{})
	_, evs := s.stream("POST", "/agent/stream", map[string]any{"user_input": "derive me", "assistant_id": "echo"})
	if got := strings.Join(names(evs), ","); got != "START,STATUS,TOKEN,END" {
		t.Fatalf("events = %s", got)
	}
	for _, e := range evs {
		if e.obj(t)["derived"] != true {
			t.Errorf("%s is not marked derived", e.Event)
		}
	}
	if tok := evs[2].obj(t); tok["text"] != "derive me" {
		t.Errorf("TOKEN = %v", tok)
	}
	_, evs = s.stream("POST", "/agent/stream", map[string]any{"user_input": "rate", "assistant_id": "failing"})
	end := evs[len(evs)-1].obj(t)
	if end["status"] != "failed" || end["error"].(map[string]any)["code"] != "model_rate_limited" {
		t.Errorf("END of a failed run = %v", end)
	}
}

// ---------------------------------------------------------------- WebSocket

type socketMsg struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	RunID     string          `json:"run_id"`
	Seq       int             `json:"seq"`
	Derived   bool            `json:"derived"`
	Data      json.RawMessage `json:"data"`
	Error     *struct {
		Code  int    `json:"code"`
		Field string `json:"field"`
	} `json:"error"`
}

func (m socketMsg) obj(t *testing.T) map[string]any {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal(m.Data, &o); err != nil {
		t.Fatalf("%s data: %v: %s", m.Type, err, m.Data)
	}
	return o
}

// socketClient is a test's WebSocket on a session.
type socketClient struct {
	t    *testing.T
	c    *websocket.Conn
	next int
}

// dial opens the WebSocket of path, acting for the client's user.
func (s *testServer) dial(path string) (*socketClient, *http.Response, error) {
	s.t.Helper()
	h := http.Header{}
	if s.user != "" {
		h.Set(userHeader, s.user)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.ts.URL, "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, res, err
	}
	c.SetReadLimit(1 << 24)
	s.t.Cleanup(func() { c.CloseNow() })
	return &socketClient{t: s.t, c: c}, res, nil
}

func (s *testServer) mustDial(path string) *socketClient {
	s.t.Helper()
	c, res, err := s.dial(path)
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		s.t.Fatalf("dial %s: %d %v", path, status, err)
	}
	return c
}

// read returns the next message; it fails the test when none comes in
// 60 s (a bound against hanging, not a measure).
func (c *socketClient) read() socketMsg {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	typ, b, err := c.c.Read(ctx)
	if err != nil {
		c.t.Fatalf("reading the socket: %v", err)
	}
	if typ != websocket.MessageText {
		c.t.Fatalf("a binary message")
	}
	var m socketMsg
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("message %s: %v", b, err)
	}
	if m.Seq != c.next {
		c.t.Fatalf("message seq %d, want %d: %s", m.Seq, c.next, b)
	}
	c.next++
	return m
}

// until reads messages up to the first that pred accepts, and returns them
// all.
func (c *socketClient) until(pred func(socketMsg) bool) []socketMsg {
	c.t.Helper()
	var out []socketMsg
	for {
		m := c.read()
		out = append(out, m)
		if pred(m) {
			return out
		}
	}
}

func (c *socketClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.c.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

// endedAs accepts the session_state the server derives at a run's end.
func endedAs(status string) func(socketMsg) bool {
	return func(m socketMsg) bool {
		if m.Type != "session_state" || !m.Derived {
			return false
		}
		var st struct {
			Status    string `json:"status"`
			RunStatus string `json:"run_status"`
		}
		_ = json.Unmarshal(m.Data, &st)
		return st.Status == status && st.RunStatus != "" && st.RunStatus != "running"
	}
}

func types(ms []socketMsg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Type
		if m.Derived {
			out[i] += "*"
		}
	}
	return out
}

func count(ms []socketMsg, typ string) int {
	n := 0
	for _, m := range ms {
		if m.Type == typ {
			n++
		}
	}
	return n
}

// Document 003's flow: run-async, the session's WebSocket, the plan's
// hitl_request answered with hitl_response, the todos' progress, and the
// response.
func TestRunAsyncSocketFlow(t *testing.T) {
	s := newDocServer(t, server.Options{})
	var started struct {
		SessionID    string `json:"session_id"`
		RunID        string `json:"run_id"`
		WebSocketURL string `json:"websocket_url"`
	}
	s.must(202, "POST", "/agent/run-async", map[string]any{"user_input": marketingRequest, "assistant_id": "marketing"}).json(t, &started)
	if started.SessionID == "" || started.WebSocketURL != "ws"+strings.TrimPrefix(s.ts.URL, "http")+"/ws/"+started.SessionID {
		t.Fatalf("run-async = %+v", started)
	}
	c := s.mustDial("/ws/" + started.SessionID)
	first := c.read()
	if first.Type != "session_state" || !first.Derived || first.SessionID != started.SessionID {
		t.Fatalf("first message = %+v", first)
	}
	plan := c.until(endedAs("interrupted"))
	var hitl *socketMsg
	for i, m := range plan {
		if m.RunID != started.RunID {
			t.Errorf("message of run %q: %+v", m.RunID, m)
		}
		if m.Type == "hitl_request" {
			hitl = &plan[i]
		}
	}
	if hitl == nil || hitl.Derived {
		t.Fatalf("no hitl_request of the agent's: %v", types(plan))
	}
	req := hitl.obj(t)
	if req["kind"] != "plan" || req["request"].(map[string]any)["plan"] == nil {
		t.Errorf("hitl_request = %v", req)
	}
	layers := []string{}
	for _, m := range plan {
		if m.Type == "layer_start" {
			layers = append(layers, m.obj(t)["layer"].(string))
		}
	}
	if strings.Join(layers, ",") != "cognitive,planning" {
		t.Errorf("layers before the plan: %v (%v)", layers, types(plan))
	}

	// An answer the plan does not take is refused on the socket, which
	// stays open.
	c.send(map[string]any{"type": "hitl_response", "data": map[string]any{"action": "skip"}})
	if m := c.read(); m.Type != "error" || m.Error == nil || m.Error.Code != 5002 || m.Error.Field != "data.action" {
		t.Fatalf("answer skip = %+v", m)
	}
	c.send(map[string]any{"type": "sing"})
	if m := c.read(); m.Type != "error" || m.Error.Code != 1002 || m.Error.Field != "type" {
		t.Fatalf("answer sing = %+v", m)
	}
	c.send(map[string]any{"type": "ping"})
	if m := c.read(); m.Type != "pong" {
		t.Fatalf("ping = %+v", m)
	}

	c.send(map[string]any{"type": "hitl_response", "data": map[string]any{"action": "accept"}})
	acc := c.read()
	if acc.Type != "hitl_accepted" || acc.RunID == "" || acc.RunID == started.RunID {
		t.Fatalf("accept = %+v", acc)
	}
	rest := c.until(endedAs("idle"))
	if n := count(rest, "todo_progress"); n < 14 {
		t.Errorf("%d todo_progress for 7 todos: %v", n, types(rest))
	}
	done := map[string]bool{}
	var complete map[string]any
	for _, m := range rest {
		if m.RunID != acc.RunID {
			t.Errorf("message of run %q after the answer", m.RunID)
		}
		switch m.Type {
		case "todo_progress":
			p := m.obj(t)
			if p["status"] == "done" {
				done[p["todo_id"].(string)] = true
			}
		case "complete":
			if m.Derived {
				t.Error("the orchestrator's complete is marked derived")
			}
			complete = m.obj(t)
		case "hitl_request", "error":
			t.Errorf("unexpected %s: %s", m.Type, m.Data)
		}
	}
	if len(done) != 7 {
		t.Errorf("todos done: %v", done)
	}
	if complete == nil || !strings.Contains(complete["text"].(string), "캠페인") || len(complete["next_actions"].([]any)) == 0 {
		t.Errorf("complete = %v", complete)
	}
	// The run is the LangGraph API's too.
	run := s.must(200, "GET", "/threads/"+started.SessionID+"/runs/"+acc.RunID, nil).obj(t)
	if run["status"] != "success" {
		t.Errorf("resumed run = %v", run)
	}
}

// A socket follows the session's runs whoever starts them, and derives
// the events of a graph that sends none.
func TestSocketFollowsRuns(t *testing.T) {
	s := newDocServer(t, server.Options{})
	sid := s.must(201, "POST", "/sessions", map[string]any{"assistant_id": "approval"}).obj(t)["session_id"].(string)
	c := s.mustDial("/ws/" + sid)
	if m := c.read(); m.Type != "session_state" {
		t.Fatalf("first = %+v", m)
	}
	// A run through the LangGraph API, on the idle socket's session.
	s.must(200, "POST", "/threads/"+sid+"/runs", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "the launch"}})
	ms := c.until(endedAs("interrupted"))
	var hitl map[string]any
	for _, m := range ms {
		if m.Type == "hitl_request" {
			if !m.Derived {
				t.Error("a hitl_request of approval is not marked derived")
			}
			hitl = m.obj(t)
		}
	}
	if hitl == nil || hitl["message"] != "Approve the launch?" || len(hitl["interrupt_id"].(string)) != 32 {
		t.Fatalf("hitl_request = %v (%v)", hitl, types(ms))
	}
	// Answered through doc 001's approve.
	s.must(202, "POST", "/approve/"+sid, map[string]any{"resume": "go", "interrupt_id": hitl["interrupt_id"]})
	ms = c.until(endedAs("idle"))
	var complete *socketMsg
	for i, m := range ms {
		if m.Type == "complete" {
			complete = &ms[i]
		}
	}
	if complete == nil || !complete.Derived || complete.obj(t)["format"] != "text" {
		t.Errorf("complete after approve: %v", types(ms))
	}
	// Deleting the session closes its socket.
	s.must(204, "DELETE", "/sessions/"+sid, nil)
	ms = c.until(func(m socketMsg) bool { return m.Type == "error" })
	if e := ms[len(ms)-1].Error; e.Code != 3001 {
		t.Errorf("after delete: %+v", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("socket of a deleted session: %v", err)
	}
}

// Another user's session, thread and runs are not found on any endpoint
// of the document API, the WebSocket included.
func TestDocAPIUsersKeptApart(t *testing.T) {
	s := newDocServer(t, server.Options{})
	alice, bob := s.as("alice"), s.as("bob")
	m := alice.agentRun(map[string]any{"user_input": marketingRequest, "assistant_id": "marketing"})
	sid := m.SessionID
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/sessions/" + sid, nil},
		{"DELETE", "/sessions/" + sid, nil},
		{"POST", "/agent/run", map[string]any{"user_input": "mine", "session_id": sid}},
		{"POST", "/agent/run-async", map[string]any{"user_input": "mine", "session_id": sid}},
		{"POST", "/agent/stream", map[string]any{"user_input": "mine", "session_id": sid}},
		{"POST", "/approve/" + sid, map[string]any{"user_action": "accept"}},
		{"POST", "/approve/" + sid, map[string]any{"user_action": "nonsense"}},
		{"GET", "/ws/" + sid, nil},
	} {
		r := bob.do(c.method, c.path, c.body)
		var e docErr
		_ = json.Unmarshal(r.body, &e)
		if r.status != 404 || e.Error.Code != 3001 {
			t.Errorf("bob %s %s: %d %s; want 404 with code 3001", c.method, c.path, r.status, r.body)
		}
		if strings.Contains(string(r.body), "plan") {
			t.Errorf("bob %s %s: the answer leaks the session: %s", c.method, c.path, r.body)
		}
	}
	if _, res, err := bob.dial("/ws/" + sid); err == nil || res == nil || res.StatusCode != 404 {
		t.Errorf("bob's WebSocket on alice's session: %v", err)
	}
	var list struct {
		Sessions []any `json:"sessions"`
		Total    int   `json:"total"`
	}
	bob.must(200, "GET", "/sessions", nil).json(t, &list)
	if list.Total != 0 || len(list.Sessions) != 0 {
		t.Errorf("bob lists %+v", list)
	}
	// Alice's session is as it was, and still hers to answer.
	if st := alice.must(200, "GET", "/sessions/"+sid, nil).obj(t)["status"]; st != "interrupted" {
		t.Errorf("alice's session: %v", st)
	}
	alice.mustDial("/ws/" + sid)
	alice.must(202, "POST", "/approve/"+sid, map[string]any{"user_action": "reject"})
}

// A client that goes away mid-run leaves the run going: its end is
// recorded, and the session can be followed again.
func TestDocAPIClientGoesAway(t *testing.T) {
	s := newDocServer(t, server.Options{})
	sid := s.must(201, "POST", "/sessions", map[string]any{"assistant_id": "slow"}).obj(t)["session_id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.ts.URL+"/agent/run",
			strings.NewReader(`{"session_id":"`+sid+`","input":{"delay_ms":400,"tag":"blocking"}}`))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			err = errors.New("the request ended before it was cancelled: " + res.Status)
		}
		done <- err
	}()
	for s.must(200, "GET", "/sessions/"+sid, nil).obj(t)["status"] != "busy" {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the client: %v", err)
	}
	for s.must(200, "GET", "/sessions/"+sid, nil).obj(t)["status"] == "busy" {
		time.Sleep(time.Millisecond)
	}
	logOf := func() []any {
		return s.must(200, "GET", "/threads/"+sid+"/state", nil).obj(t)["values"].(map[string]any)["log"].([]any)
	}
	if log := logOf(); len(log) != 1 || log[0] != "blocking" {
		t.Errorf("the blocking run's end: %v", log)
	}

	// A socket that goes mid-run: the run has 2 s left when it goes.
	s.must(202, "POST", "/agent/run-async", map[string]any{"session_id": sid, "input": map[string]any{"delay_ms": 2000, "tag": "socket"}})
	c := s.mustDial("/ws/" + sid)
	c.until(func(m socketMsg) bool { return m.Type == "session_state" && m.RunID != "" })
	c.c.CloseNow()
	// The run goes on without its client: the next socket sees it end.
	c2 := s.mustDial("/ws/" + sid)
	c2.until(endedAs("idle"))
	if log := logOf(); len(log) != 2 || log[1] != "socket" {
		t.Errorf("the followed run's end: %v", log)
	}
}

// A shutdown lets the run going finish, then closes the sockets with
// 1001 (going away); the document API's new runs are refused meanwhile.
func TestDocAPIShutdown(t *testing.T) {
	s := newDocServer(t, server.Options{})
	sid := s.must(201, "POST", "/sessions", map[string]any{"assistant_id": "slow"}).obj(t)["session_id"].(string)
	c := s.mustDial("/ws/" + sid)
	c.read()
	s.must(202, "POST", "/agent/run-async", map[string]any{"session_id": sid, "input": map[string]any{"delay_ms": 1000}})
	var runID string
	c.until(func(m socketMsg) bool {
		runID = m.RunID
		return m.Type == "session_state" && m.RunID != ""
	})
	// The run's first event comes before it executes: shut down only once
	// it runs (recorded running after 100 ms), since a run that has not
	// started by then is left for the next start instead.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := s.must(200, "GET", "/threads/"+sid+"/runs/"+runID, nil).obj(t)["status"]
		if st != "pending" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still pending after 20s", runID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shut <- s.srv.Shutdown(ctx)
	}()
	ms := c.until(endedAs("idle"))
	if count(ms, "error") != 0 {
		t.Errorf("the run did not finish: %v", types(ms))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, _, err = c.c.Read(ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("socket at shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	s.mustErr(503, 9003, "POST", "/agent/run", map[string]any{"session_id": sid, "input": map[string]any{}})
}
