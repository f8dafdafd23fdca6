package cli_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/examples/approval/planner"
	careeragent "github.com/weftlabs/weft/examples/career/agent"
	careerservice "github.com/weftlabs/weft/examples/career/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// threadJSON is what threads list, show and history print with --json.
type threadJSON struct {
	ThreadID   string                     `json:"thread_id"`
	Graph      string                     `json:"graph"`
	Step       int                        `json:"step"`
	Next       []string                   `json:"next"`
	Interrupts []graph.Interruption       `json:"interrupts"`
	Summary    string                     `json:"summary"`
	Values     map[string]json.RawMessage `json:"values"`
}

// threadsFixture saves a career conversation (thread "talk") and an
// approval run waiting for its answer (thread "plan") in a database file.
func threadsFixture(t *testing.T) string {
	t.Helper()
	db := runEnv(t)
	model := writeScript(t, "- tool_calls: [{name: route, args: {route: agent}}]\n- content: \"네, 말씀하세요.\"\n")
	if _, _, err := execute(t, "run", "--agent", "career", "--model", model, "--new-thread", "talk", "진로 질문이 있어요"); err != nil {
		t.Fatal(err)
	}
	d, err := dburl.Open(t.Context(), db, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g, err := planner.Build(d.Saver)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(t.Context(), planner.Input("plan a team offsite"), &graph.RunOptions{ThreadID: "plan"}); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestThreadsListAndShow(t *testing.T) {
	db := threadsFixture(t)
	out, _, err := execute(t, "threads", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []threadJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if len(list) != 2 || list[0].ThreadID != "plan" || list[1].ThreadID != "talk" {
		t.Fatalf("list --json = %+v, want plan then talk, newest first", list)
	}
	if list[0].Graph != "approval" || len(list[0].Interrupts) != 1 || list[0].Summary != "plan a team offsite" {
		t.Errorf("plan = %+v, want the approval graph waiting on one interrupt", list[0])
	}
	if list[1].Graph != "career" || len(list[1].Interrupts) != 0 || list[1].Summary != "진로 질문이 있어요" || list[1].Values != nil {
		t.Errorf("talk = %+v, want a finished career thread, its question as summary, no values", list[1])
	}

	out, _, err = execute(t, "threads", "list")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads list", out, "THREAD", "plan ", "approval", "waiting for an answer", "talk ", "career", "done", "진로 질문이 있어요")

	out, _, err = execute(t, "threads", "show", "plan", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var plan threadJSON
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Next) != 1 || plan.Next[0] != "approve" || len(plan.Interrupts) != 1 || string(plan.Values["goal"]) != `"plan a team offsite"` {
		t.Errorf("show plan --json = %+v", plan)
	}
	out, _, err = execute(t, "threads", "show", "plan", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show plan", out, "thread      plan\n", "graph       approval\n", "next        approve\n",
		`waiting     {"actions":["approve","edit","reject"],"goal":"plan a team offsite","plan":[`, "continue    go run ./examples/approval --thread plan --db "+db+"\n")

	out, _, err = execute(t, "threads", "show", "talk")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show talk", out, "graph       career\n", "next        nothing: the run finished\n",
		`continue    weft run --agent career --thread talk "..."`, "messages\n", "  human: 진로 질문이 있어요\n", "  ai: 네, 말씀하세요.\n")
}

func TestThreadsHistory(t *testing.T) {
	threadsFixture(t)
	out, _, err := execute(t, "threads", "history", "talk", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var hist []threadJSON
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist) < 3 || hist[0].Step <= hist[len(hist)-1].Step || hist[len(hist)-1].Step != -1 {
		t.Fatalf("history: %d snapshots, want newest first down to the input (step -1): %+v", len(hist), hist)
	}
	if got := len(hist[0].Values["messages"]); got == 0 {
		t.Errorf("the newest snapshot has no messages")
	}
	out, _, err = execute(t, "threads", "history", "talk", "--limit", "2")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[1], "STEP") {
		t.Errorf("history --limit 2 prints %d lines, want a title, a header and 2 rows:\n%s", len(lines), out)
	}
}

// delete removes whole threads, and nothing when one id is unknown.
func TestThreadsDelete(t *testing.T) {
	threadsFixture(t)
	_, _, err := execute(t, "threads", "delete", "talk", "typo")
	if !errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), `"typo"`) {
		t.Fatalf("delete with an unknown id: err = %v, want ErrNotFound naming it", err)
	}
	if _, _, err := execute(t, "threads", "show", "talk"); err != nil {
		t.Fatalf("talk was deleted although the command failed: %v", err)
	}
	out, _, err := execute(t, "threads", "delete", "talk", "--json")
	if err != nil || strings.Join(strings.Fields(out), "") != `{"deleted":["talk"]}` {
		t.Fatalf("delete --json: %q, %v", out, err)
	}
	_, _, err = execute(t, "threads", "show", "talk")
	if !errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), "weft threads list") {
		t.Errorf("show after delete: err = %v", err)
	}
	out, _, _ = execute(t, "threads", "list")
	if strings.Contains(out, "talk") || !strings.Contains(out, "plan") {
		t.Errorf("list after delete:\n%s", out)
	}
}

func TestThreadsEmpty(t *testing.T) {
	db := runEnv(t)
	out, _, err := execute(t, "threads", "list")
	if err != nil || out != "no threads in sqlite "+db+"\n" {
		t.Errorf("list of an empty database = %q, %v", out, err)
	}
	out, _, err = execute(t, "threads", "list", "--json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("list --json of an empty database = %q, %v", out, err)
	}
}

// A thread knows the graph that wrote it: a travel conversation of plain
// chat only, whose channels the career graph has too, lists as travel.
func TestThreadsKnowTheirGraph(t *testing.T) {
	runEnv(t)
	model := writeScript(t, "- content: \"안녕하세요! 어디로 떠나세요?\"\n")
	if _, _, err := execute(t, "run", "--agent", "travel", "--model", model, "--new-thread", "hello", "안녕하세요"); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, "threads", "show", "hello", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v threadJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	var routing struct{ Route, Source string }
	if err := json.Unmarshal(v.Values["routing"], &routing); err != nil || v.Graph != "travel" || routing.Route != "chat" || routing.Source != "rule" {
		t.Errorf("show --json: graph %q, routing %s (%v); want the travel graph with its routing", v.Graph, v.Values["routing"], err)
	}
}

// Threads saved before the router was a graph (by the ReAct agent's own
// graph, with plain chat saved by UpdateState) still read through the
// career graph, and a run goes on with them.
func TestThreadsReadOlderThreads(t *testing.T) {
	db := runEnv(t)
	func() {
		d, err := dburl.Open(t.Context(), db, dburl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		svc, err := careerservice.Open(t.Context(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		reg, err := careeragent.NewRegistry(svc)
		if err != nil {
			t.Fatal(err)
		}
		old, err := react.New(scripted.New(llm.AI("네, 말씀하세요.")), reg, react.Options{Checkpointer: d.Saver, Name: "career"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Invoke(t.Context(), react.Messages.Write(llm.Human("진로 질문이 있어요")), &graph.RunOptions{ThreadID: "old"}); err != nil {
			t.Fatal(err)
		}
		if _, err := old.UpdateState(t.Context(), checkpoint.Config{ThreadID: "old"}, react.Messages.Write(llm.Human("고마워요"), llm.AI("천만에요!")), graph.END); err != nil {
			t.Fatal(err)
		}
	}()
	out, _, err := execute(t, "threads", "show", "old")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show old", out, "graph       career\n", "next        nothing: the run finished\n",
		"  human: 진로 질문이 있어요\n", "  ai: 네, 말씀하세요.\n", "  human: 고마워요\n", "  ai: 천만에요!\n")
	if _, _, err := execute(t, "run", "--agent", "career", "--model", writeScript(t, "- content: \"반가워요!\"\n"), "--thread", "old", "안녕하세요"); err != nil {
		t.Fatal(err)
	}
	out, _, err = execute(t, "threads", "show", "old")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show old, continued", out, "  ai: 천만에요!\n", "  human: 안녕하세요\n", "  ai: 반가워요!\n")
}
