package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

func TestThreadCRUD(t *testing.T) {
	s := newServer(t, server.Options{})
	th := s.must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"suite": "check", "n": 1}}).obj(t)
	id := th["thread_id"].(string)
	for _, k := range []string{"thread_id", "created_at", "updated_at", "metadata", "status", "config"} {
		if _, ok := th[k]; !ok {
			t.Errorf("thread lacks %s: %v", k, th)
		}
	}
	if _, ok := th["values"]; ok {
		t.Errorf("a new thread has values: %v", th)
	}
	if th["status"] != "idle" {
		t.Errorf("status = %v", th["status"])
	}
	given := "412385d9-5373-4821-8c26-03e4045bc63f"
	s.must(200, "POST", "/threads", map[string]any{"thread_id": given})
	r := s.must(409, "POST", "/threads", map[string]any{"thread_id": given})
	if string(r.body) != "Thread already exists" {
		t.Errorf("409 body = %q", r.body)
	}
	s.must(200, "POST", "/threads", map[string]any{"thread_id": given, "if_exists": "do_nothing"})

	got := s.must(200, "GET", "/threads/"+id, nil).obj(t)
	if diff := cmp.Diff(th, got); diff != "" {
		t.Errorf("get (-created +got):\n%s", diff)
	}
	p := s.must(200, "PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"n": 2, "extra": "x"}}).obj(t)
	if diff := cmp.Diff(map[string]any{"suite": "check", "n": 2.0, "extra": "x"}, p["metadata"]); diff != "" {
		t.Errorf("patched metadata (-want +got):\n%s", diff)
	}
	s.must(204, "DELETE", "/threads/"+id, nil)
	r = s.must(404, "GET", "/threads/"+id, nil)
	if string(r.body) != "Thread with ID "+id+" not found" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("404 = %q (%s)", r.body, r.header.Get("Content-Type"))
	}
	s.must(404, "DELETE", "/threads/"+id, nil)
	s.must(404, "PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{}})
	s.must(404, "GET", "/threads/"+id+"/state", nil)
	s.must(404, "GET", "/threads/"+id+"/runs", nil)
}

func TestThreadValidation(t *testing.T) {
	s := newServer(t, server.Options{})
	tests := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"metadata of the wrong type", "POST", "/threads", map[string]any{"metadata": 5}, 400, `"metadata"`},
		{"malformed JSON", "POST", "/threads/search", "{not json", 400, "Malformed JSON in request body"},
		{"a path id that is not a UUID", "GET", "/threads/not-a-uuid", nil, 400, `"thread_id"`},
		{"a thread id that is not a UUID", "POST", "/threads", map[string]any{"thread_id": "x"}, 400, `"thread_id"`},
		{"if_exists", "POST", "/threads", map[string]any{"if_exists": "maybe"}, 400, `"if_exists"`},
		{"status filter", "POST", "/threads/search", map[string]any{"status": "sleepy"}, 400, `"status"`},
		{"sort_by", "POST", "/threads/search", map[string]any{"sort_by": "name"}, 400, `"sort_by"`},
		{"limit", "POST", "/threads/search", map[string]any{"limit": 5000}, 400, `"limit"`},
		{"offset", "POST", "/threads/search", map[string]any{"offset": -1}, 400, `"offset"`},
		{"ids", "POST", "/threads/search", map[string]any{"ids": []string{"x"}}, 400, `"ids"`},
		{"limit of the wrong type", "POST", "/threads/search", map[string]any{"limit": "ten"}, 400, `"limit"`},
	}
	for _, tt := range tests {
		r := s.do(tt.method, tt.path, tt.body)
		if r.status != tt.status || !strings.Contains(string(r.body), tt.field) {
			t.Errorf("%s: %d %s; want %d naming %s", tt.name, r.status, r.body, tt.status, tt.field)
		}
	}
}

func TestThreadSearch(t *testing.T) {
	s := newServer(t, server.Options{})
	a := s.newThread()
	s.must(200, "PATCH", "/threads/"+a, map[string]any{"metadata": map[string]any{"suite": "x"}})
	b := s.must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"suite": "x", "n": 2}}).obj(t)["thread_id"].(string)
	c := s.newThread()
	s.must(200, "POST", "/threads/"+c+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")})
	ids := func(r response) []string {
		var list []map[string]any
		r.json(t, &list)
		out := []string{}
		for _, th := range list {
			out = append(out, th["thread_id"].(string))
		}
		return out
	}
	r := s.must(200, "POST", "/threads/search", map[string]any{})
	if diff := cmp.Diff([]string{c, b, a}, ids(r)); diff != "" {
		t.Errorf("newest first (-want +got):\n%s", diff)
	}
	if r.header.Get("X-Pagination-Total") != "3" {
		t.Errorf("total = %q", r.header.Get("X-Pagination-Total"))
	}
	if diff := cmp.Diff([]string{b, a}, ids(s.must(200, "POST", "/threads/search", map[string]any{"metadata": map[string]any{"suite": "x"}}))); diff != "" {
		t.Errorf("metadata filter (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{a, b, c}, ids(s.must(200, "POST", "/threads/search", map[string]any{"sort_by": "created_at", "sort_order": "asc"}))); diff != "" {
		t.Errorf("oldest first (-want +got):\n%s", diff)
	}
	r = s.must(200, "POST", "/threads/search", map[string]any{"limit": 1, "offset": 1})
	if diff := cmp.Diff([]string{b}, ids(r)); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	if r.header.Get("X-Pagination-Next") != "2" || r.header.Get("X-Pagination-Total") != "3" {
		t.Errorf("pagination headers: next %q total %q", r.header.Get("X-Pagination-Next"), r.header.Get("X-Pagination-Total"))
	}
	r = s.must(200, "POST", "/threads/search", map[string]any{"limit": 10, "offset": 2})
	if r.header.Get("X-Pagination-Next") != "" {
		t.Errorf("next on the last page: %q", r.header.Get("X-Pagination-Next"))
	}
	if diff := cmp.Diff([]string{a, c}, ids(s.must(200, "POST", "/threads/search", map[string]any{"ids": []string{a, c}, "sort_order": "asc"}))); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	d := s.newThread()
	s.must(200, "POST", "/threads/"+d+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"tag": "v"}})
	if diff := cmp.Diff([]string{d}, ids(s.must(200, "POST", "/threads/search", map[string]any{"values": map[string]any{"tag": "v"}}))); diff != "" {
		t.Errorf("values filter (-want +got):\n%s", diff)
	}
	s.must(204, "DELETE", "/threads/"+d, nil)
	vals := s.must(200, "POST", "/threads/search", map[string]any{"ids": []string{c}}).body
	if !strings.Contains(string(vals), `"values"`) || !strings.Contains(string(vals), "hello") {
		t.Errorf("a thread that ran lists its values: %s", vals)
	}
	if diff := cmp.Diff([]string{c, b, a}, ids(s.must(200, "POST", "/threads/search", map[string]any{"status": "idle"}))); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	var sel []map[string]any
	s.must(200, "POST", "/threads/search", map[string]any{"ids": []string{a}, "select": []string{"thread_id", "status"}}).json(t, &sel)
	if diff := cmp.Diff([]map[string]any{{"thread_id": a, "status": "idle"}}, sel); diff != "" {
		t.Errorf("select (-want +got):\n%s", diff)
	}
	if n := s.must(200, "POST", "/threads/count", map[string]any{"metadata": map[string]any{"suite": "x"}}).body; string(n) != "2" {
		t.Errorf("count = %s", n)
	}
}

func TestThreadState(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	empty := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	if diff := cmp.Diff(map[string]any{"values": map[string]any{}, "next": []any{}, "tasks": []any{}, "created_at": nil, "checkpoint": nil, "parent_checkpoint": nil}, empty); diff != "" {
		t.Errorf("state of a new thread (-want +got):\n%s", diff)
	}
	var hist []any
	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{}).json(t, &hist)
	if len(hist) != 0 {
		t.Errorf("history of a new thread = %v", hist)
	}
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello wait")})
	st := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	msgs := st["values"].(map[string]any)["messages"].([]any)
	if len(msgs) != 2 || len(st["next"].([]any)) != 0 {
		t.Errorf("state after a run = %v", st)
	}
	md := st["metadata"].(map[string]any)
	if md["source"] != "loop" || md["step"] != 1.0 || md["graph_id"] != "echo" || md["thread_id"] != tid || md["run_id"] == nil {
		t.Errorf("metadata = %v", md)
	}
	cp := st["checkpoint"].(map[string]any)
	cpID := cp["checkpoint_id"].(string)
	if cp["thread_id"] != tid || cp["checkpoint_ns"] != "" || st["parent_checkpoint"] == nil {
		t.Errorf("checkpoint = %v", cp)
	}
	at := s.must(200, "GET", "/threads/"+tid+"/state/"+cpID, nil).obj(t)
	if diff := cmp.Diff(st, at); diff != "" {
		t.Errorf("state at the latest checkpoint (-latest +at):\n%s", diff)
	}
	parent := st["parent_checkpoint"].(map[string]any)["checkpoint_id"].(string)
	prev := s.must(200, "POST", "/threads/"+tid+"/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": parent, "checkpoint_ns": ""}}).obj(t)
	if diff := cmp.Diff([]any{"echo"}, prev["next"]); diff != "" {
		t.Errorf("next at the step-0 checkpoint (-want +got):\n%s", diff)
	}
	task := prev["tasks"].([]any)[0].(map[string]any)
	if task["name"] != "echo" || task["result"] == nil || task["error"] != nil {
		t.Errorf("task = %v", task)
	}
	if diff := cmp.Diff([]any{"__pregel_pull", "echo"}, task["path"]); diff != "" {
		t.Errorf("task path (-want +got):\n%s", diff)
	}
	s.must(404, "GET", "/threads/"+tid+"/state/00000000-0000-4000-8000-000000000000", nil)
	s.must(400, "GET", "/threads/"+tid+"/state/nope", nil)

	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).json(t, &hist)
	var steps []float64
	for _, h := range hist {
		steps = append(steps, h.(map[string]any)["metadata"].(map[string]any)["step"].(float64))
	}
	if diff := cmp.Diff([]float64{1, 0, -1}, steps); diff != "" {
		t.Errorf("history steps (-want +got):\n%s", diff)
	}
	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 1}).json(t, &hist)
	if len(hist) != 1 {
		t.Errorf("history limit 1: %d", len(hist))
	}
	for _, before := range []any{cpID, map[string]any{"configurable": map[string]any{"checkpoint_id": cpID}}} {
		s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"before": before}).json(t, &hist)
		if len(hist) != 2 {
			t.Errorf("history before %v: %d", before, len(hist))
		}
	}
	s.must(200, "GET", "/threads/"+tid+"/history?limit=2&before="+cpID, nil).json(t, &hist)
	if len(hist) != 2 {
		t.Errorf("GET history: %d", len(hist))
	}
	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"metadata": map[string]any{"source": "input"}}).json(t, &hist)
	if len(hist) != 1 {
		t.Errorf("history metadata filter: %d", len(hist))
	}
	s.must(400, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 0})
	s.must(400, "POST", "/threads/"+tid+"/history", map[string]any{"before": 5})
}

func TestUpdateState(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	s.must(400, "POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"messages": []any{}}})
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")})
	r := s.must(200, "POST", "/threads/"+tid+"/state", map[string]any{
		"values": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "added", "id": "upd-1"}}}, "as_node": "echo",
	}).obj(t)
	cp := r["checkpoint"].(map[string]any)
	if cp["thread_id"] != tid || cp["checkpoint_id"] == "" {
		t.Errorf("update answer = %v", r)
	}
	st := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	msgs := st["values"].(map[string]any)["messages"].([]any)
	if len(msgs) != 3 || msgs[2].(map[string]any)["content"] != "added" {
		t.Errorf("messages after update = %v", msgs)
	}
	if md := st["metadata"].(map[string]any); md["source"] != "update" || md["step"] != 2.0 {
		t.Errorf("metadata after update = %v", md)
	}
	// The same id replaces the message; as_node may be left out.
	s.must(200, "POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "replaced", "id": "upd-1"}}}})
	st = s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	msgs = st["values"].(map[string]any)["messages"].([]any)
	if len(msgs) != 3 || msgs[2].(map[string]any)["content"] != "replaced" {
		t.Errorf("messages after replace = %v", msgs)
	}
	th := s.must(200, "GET", "/threads/"+tid, nil).obj(t)
	if vs := th["values"].(map[string]any)["messages"].([]any); len(vs) != 3 {
		t.Errorf("the thread record's values follow the update: %v", th["values"])
	}
	for _, bad := range []map[string]any{
		{"values": map[string]any{"nope": 1}},
		{"values": map[string]any{"messages": 5}},
		{"values": map[string]any{"messages": []any{}}, "as_node": "nope"},
	} {
		if r := s.do("POST", "/threads/"+tid+"/state", bad); r.status != 400 {
			t.Errorf("update %v: %d %s", bad, r.status, r.body)
		}
	}
}

func TestCopyThread(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"suite": "check"}}).obj(t)["thread_id"].(string)
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("hello")})
	cp := s.must(200, "POST", "/threads/"+tid+"/copy", nil).obj(t)
	nid := cp["thread_id"].(string)
	md := cp["metadata"].(map[string]any)
	if nid == tid || md["suite"] != "check" || md["thread_id"] != nid || md["graph_id"] != "echo" || cp["status"] != "idle" {
		t.Errorf("copy = %v", cp)
	}
	orig := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	copied := s.must(200, "GET", "/threads/"+nid+"/state", nil).obj(t)
	if diff := cmp.Diff(orig["values"], copied["values"]); diff != "" {
		t.Errorf("copied values (-orig +copy):\n%s", diff)
	}
	var hist []any
	s.must(200, "POST", "/threads/"+nid+"/history", map[string]any{}).json(t, &hist)
	if len(hist) != 3 {
		t.Errorf("copied history: %d checkpoints", len(hist))
	}
	// The copy runs on.
	s.must(200, "POST", "/threads/"+nid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("again")})
	s.must(404, "POST", "/threads/00000000-0000-4000-8000-000000000000/copy", nil)
}

// TestThreadIDsAreTimeOrdered checks that the threads the server names
// (POST /threads without an id, a copy) get version 7 UUIDs that grow
// with time: their rows then sit together in the tables' indexes.
func TestThreadIDsAreTimeOrdered(t *testing.T) {
	s := newServer(t, server.Options{})
	var made []string
	for range 3 {
		made = append(made, s.newThread())
	}
	made = append(made, s.must(200, "POST", "/threads/"+made[0]+"/copy", nil).obj(t)["thread_id"].(string))
	for i, id := range made {
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 {
			t.Errorf("thread id %q: version %v (err %v), want a version 7 UUID", id, u.Version(), err)
		}
		if i > 0 && id <= made[i-1] {
			t.Errorf("thread id %q made after %q sorts before it", id, made[i-1])
		}
	}
}

// POST /threads/prune (the SDK's threads.prune): keep_latest leaves each
// named thread with its latest checkpoint and its state, delete deletes
// threads; threads that are missing or another user's are passed over,
// and a busy thread stops keep_latest before anything is pruned.
func TestPruneThreads(t *testing.T) {
	s := newServer(t, server.Options{})
	bob := s.as("bob")
	alice := s.as("alice")
	twoRuns := func(c *testServer) string {
		tid := c.newThread()
		c.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("one")})
		c.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("two")})
		return tid
	}
	history := func(c *testServer, tid string) int {
		var hist []any
		c.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).json(t, &hist)
		return len(hist)
	}
	a, b, theirs := twoRuns(alice), twoRuns(alice), twoRuns(bob)
	if n := history(alice, a); n != 6 {
		t.Fatalf("history before the prune: %d checkpoints, want 6", n)
	}
	before := alice.must(200, "GET", "/threads/"+a+"/state", nil).obj(t)
	missing := "00000000-0000-4000-8000-000000000000"
	got := alice.must(200, "POST", "/threads/prune", map[string]any{"thread_ids": []string{a, strings.ToUpper(b), theirs, missing, a}, "strategy": "keep_latest"}).obj(t)
	if got["pruned_count"] != float64(2) {
		t.Errorf("keep_latest pruned_count = %v, want 2 (alice's two threads)", got["pruned_count"])
	}
	if n := history(alice, a); n != 1 {
		t.Errorf("history after keep_latest: %d checkpoints, want 1", n)
	}
	after := alice.must(200, "GET", "/threads/"+a+"/state", nil).obj(t)
	if diff := cmp.Diff(before["values"], after["values"]); diff != "" {
		t.Errorf("state after keep_latest (-before +after):\n%s", diff)
	}
	// The thread goes on from its kept state.
	v := alice.must(200, "POST", "/threads/"+a+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("three")}).obj(t)
	if msgs := v["messages"].([]any); len(msgs) != 6 {
		t.Errorf("a run after the prune sees %d messages, want 6", len(msgs))
	}
	if n := history(bob, theirs); n != 6 {
		t.Errorf("bob's thread after alice's prune: %d checkpoints, want 6", n)
	}

	// A busy thread: keep_latest prunes nothing and names it.
	c := twoRuns(alice)
	busy := alice.newThread()
	alice.startSlow(busy, "p", 600000)
	r := alice.do("POST", "/threads/prune", map[string]any{"thread_ids": []string{c, busy}, "strategy": "keep_latest"})
	if r.status != 409 || !strings.Contains(string(r.body), busy) {
		t.Errorf("keep_latest with a busy thread: %d %s; want 409 naming it", r.status, r.body)
	}
	if n := history(alice, c); n != 6 {
		t.Errorf("the thread before the busy one: %d checkpoints after the refused prune, want 6", n)
	}

	// delete (the default) deletes, a running thread too (its run stops).
	got = alice.must(200, "POST", "/threads/prune", map[string]any{"thread_ids": []string{a, busy, theirs}}).obj(t)
	if got["pruned_count"] != float64(2) {
		t.Errorf("delete pruned_count = %v, want 2", got["pruned_count"])
	}
	alice.must(404, "GET", "/threads/"+a, nil)
	alice.must(404, "GET", "/threads/"+busy, nil)
	bob.must(200, "GET", "/threads/"+theirs, nil)
	if got := alice.must(200, "POST", "/threads/prune", map[string]any{"thread_ids": []string{}}).obj(t); got["pruned_count"] != float64(0) {
		t.Errorf("an empty list: %v", got)
	}

	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{"thread_ids": []string{b}, "strategy": "all"}, "strategy"},
		{map[string]any{"strategy": "delete"}, "thread_ids"},
		{map[string]any{"thread_ids": []string{b, "not-a-uuid"}}, "thread_ids"},
		{map[string]any{"thread_ids": make([]string, 1001)}, "thread_ids"},
		{map[string]any{"thread_ids": "all"}, "thread_ids"},
	} {
		r := alice.do("POST", "/threads/prune", bad.body)
		if r.status != 400 || !strings.Contains(string(r.body), bad.field) {
			t.Errorf("prune %v: %d %s; want 400 naming %s", bad.body, r.status, r.body, bad.field)
		}
	}
	alice.must(200, "GET", "/threads/"+b, nil)
}

// keep_latest also deletes what the thread's finished subgraph calls
// left (each call's checkpoints have a namespace of their own): the
// thread keeps its latest checkpoint alone, and its state.
func TestPruneKeepLatestSubgraphs(t *testing.T) {
	x := graph.Value[int]("x")
	nested := func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		inc := func(ctx context.Context, s graph.State) (graph.Update, error) { return x.Write(x.Get(s) + 1), nil }
		child, err := graph.New(x).AddNode("inc", inc, nil).AddNode("again", inc, nil).
			AddEdge(graph.START, "inc").AddEdge("inc", "again").Compile(nil)
		if err != nil {
			return nil, err
		}
		return graph.New(x).AddSubgraph("sub", child, nil).AddEdge(graph.START, "sub").Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	db := backends[0].open(t)
	s := newServer(t, server.Options{DB: db, Graphs: map[string]server.GraphFunc{"nested": nested}})
	tid := s.newThread()
	for range 2 {
		s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "nested", "input": map[string]any{}})
	}
	count := func() (all, root int) {
		for tp, err := range db.Saver.List(context.Background(), tid, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			all++
			if tp.Config.Namespace == "" {
				root++
			}
		}
		return all, root
	}
	if all, root := count(); all <= root {
		t.Fatalf("before the prune: %d checkpoints, %d of the root; want subgraph ones too", all, root)
	}
	before := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)["values"]
	s.must(200, "POST", "/threads/prune", map[string]any{"thread_ids": []string{tid}, "strategy": "keep_latest"})
	if all, root := count(); all != 1 || root != 1 {
		t.Errorf("after keep_latest: %d checkpoints, %d of the root; want the latest alone", all, root)
	}
	if diff := cmp.Diff(before, s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)["values"]); diff != "" {
		t.Errorf("values after keep_latest (-before +after):\n%s", diff)
	}
	got := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "nested", "input": map[string]any{}}).obj(t)
	if got["x"] != 6.0 {
		t.Errorf("a run after the prune: x = %v, want 6", got["x"])
	}
}

// PATCH /threads/{id}/state (the SDK's threads.patchState) sets keys of
// the latest checkpoint's metadata: the state and its history show them,
// and the history filters on them.
func TestPatchState(t *testing.T) {
	s := newServer(t, server.Options{})
	tid := s.newThread()
	s.must(404, "PATCH", "/threads/"+tid+"/state", map[string]any{"metadata": map[string]any{"tag": "x"}})
	s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": human("one")})
	before := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	s.must(204, "PATCH", "/threads/"+tid+"/state", map[string]any{"metadata": map[string]any{"rating": "good", "score": 4}})
	after := s.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)
	md := after["metadata"].(map[string]any)
	if md["rating"] != "good" || md["score"] != float64(4) || md["step"] != before["metadata"].(map[string]any)["step"] || md["run_id"] == nil {
		t.Errorf("metadata after the patch = %v", md)
	}
	if diff := cmp.Diff(before["values"], after["values"]); diff != "" {
		t.Errorf("the patch changed the values (-before +after):\n%s", diff)
	}
	var hist []map[string]any
	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"metadata": map[string]any{"rating": "good"}}).json(t, &hist)
	if len(hist) != 1 || hist[0]["checkpoint"].(map[string]any)["checkpoint_id"] != after["checkpoint"].(map[string]any)["checkpoint_id"] {
		t.Errorf("history filtered by the patched key: %d states", len(hist))
	}

	for _, bad := range []map[string]any{{}, {"metadata": map[string]any{"step": 3}}, {"metadata": "x"}} {
		if r := s.do("PATCH", "/threads/"+tid+"/state", bad); r.status != 400 || !strings.Contains(string(r.body), "metadata") {
			t.Errorf("patch %v: %d %s; want 400 naming metadata", bad, r.status, r.body)
		}
	}
	s.as("bob").must(404, "PATCH", "/threads/"+tid+"/state", map[string]any{"metadata": map[string]any{"rating": "bad"}})
	busy := s.newThread()
	s.must(200, "POST", "/threads/"+busy+"/runs/wait", map[string]any{"assistant_id": "slow", "input": map[string]any{"delay_ms": 1}})
	rid := s.startSlow(busy, "busy", 600000)
	if r := s.do("PATCH", "/threads/"+busy+"/state", map[string]any{"metadata": map[string]any{"rating": "busy"}}); r.status != 409 {
		t.Errorf("patch while a run holds the thread: %d %s; want 409", r.status, r.body)
	}
	s.must(204, "POST", "/threads/"+busy+"/runs/"+rid+"/cancel?wait=1", nil)
}

// POST /threads with supersteps (the SDK's threads.create({supersteps}))
// builds the new thread's history update by update, as a run would have:
// input, START, then the nodes; a run then goes on from it. Bad
// supersteps create nothing and name what is wrong.
func TestCreateThreadWithSupersteps(t *testing.T) {
	s := newServer(t, server.Options{})
	human := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi there", "id": "h1"}}}
	ai := map[string]any{"messages": []any{map[string]any{"type": "ai", "content": "hi there", "id": "a1"}}}
	th := s.must(200, "POST", "/threads", map[string]any{
		"metadata": map[string]any{"graph_id": "echo", "source": "import"},
		"supersteps": []any{
			map[string]any{"updates": []any{map[string]any{"values": human, "as_node": "__input__"}}},
			map[string]any{"updates": []any{map[string]any{"values": human, "as_node": "__start__"}}},
			map[string]any{"updates": []any{map[string]any{"values": ai, "as_node": "echo"}}},
		},
	}).obj(t)
	tid := th["thread_id"].(string)
	msgs, _ := th["values"].(map[string]any)["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["type"] != "human" || msgs[1].(map[string]any)["content"] != "hi there" || th["status"] != "idle" {
		t.Errorf("the thread the supersteps built = %v", th)
	}
	var hist []map[string]any
	s.must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).json(t, &hist)
	var steps []any
	for _, h := range hist {
		steps = append(steps, h["metadata"].(map[string]any)["step"])
	}
	if diff := cmp.Diff([]any{1.0, 0.0, -1.0}, steps); diff != "" {
		t.Errorf("history steps, newest first (-want +got):\n%s", diff)
	}
	v := s.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "and again"}}}}).obj(t)
	if msgs := v["messages"].([]any); len(msgs) != 4 {
		t.Errorf("a run after the supersteps sees %d messages, want 4", len(msgs))
	}

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": human, "as_node": "__input__"}}}}}, "graph_id"},
		{map[string]any{"metadata": map[string]any{"graph_id": "nope"}, "supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": human}}}}}, "graph_id"},
		{map[string]any{"metadata": map[string]any{"graph_id": "echo"}, "supersteps": []any{map[string]any{"updates": []any{}}}}, "updates"},
		{map[string]any{"metadata": map[string]any{"graph_id": "echo"}, "supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{"nope": 1}, "as_node": "__input__"}}}}}, "supersteps"},
		{map[string]any{"metadata": map[string]any{"graph_id": "echo"}, "supersteps": []any{map[string]any{"updates": []any{map[string]any{"command": map[string]any{"resume": "x"}}}}}}, "resume"},
		{map[string]any{"metadata": map[string]any{"graph_id": "echo"}, "supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": human, "as_node": "no-such-node"}}}}}, "supersteps"},
	} {
		before := s.must(200, "POST", "/threads/count", map[string]any{}).body
		r := s.do("POST", "/threads", bad.body)
		if r.status != 400 || !strings.Contains(string(r.body), bad.field) {
			t.Errorf("supersteps %v: %d %s; want 400 naming %s", bad.body, r.status, r.body, bad.field)
		}
		if after := s.must(200, "POST", "/threads/count", map[string]any{}).body; string(after) != string(before) {
			t.Errorf("bad supersteps %v left a thread: count %s → %s", bad.body, before, after)
		}
	}
}
