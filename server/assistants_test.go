package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// GRAPHS.md's assistant ids: UUID v5 of the graph id.
func TestSystemAssistantIDs(t *testing.T) {
	for graph, want := range map[string]string{
		"echo":     "046b5dc7-2108-582c-9c6c-31d556d138f0",
		"approval": "e234584d-b7bf-527f-9d06-ba77f8f5172d",
		"slow":     "cad1b5ad-d177-59d1-ab39-5e327188ed3a",
	} {
		if got := server.SystemAssistantID(graph); got != want {
			t.Errorf("SystemAssistantID(%s) = %s, want %s", graph, got, want)
		}
	}
}

func TestAssistantsSearchAndGet(t *testing.T) {
	s := newServer(t, server.Options{})
	r := s.must(200, "POST", "/assistants/search", map[string]any{"limit": 100, "offset": 0})
	var list []map[string]any
	r.json(t, &list)
	if len(list) != 3 || r.header.Get("X-Pagination-Total") != "3" {
		t.Fatalf("search = %d assistants, total %q", len(list), r.header.Get("X-Pagination-Total"))
	}
	a := list[0]
	for _, k := range []string{"assistant_id", "graph_id", "config", "context", "created_at", "updated_at", "metadata", "version", "name", "description"} {
		if _, ok := a[k]; !ok {
			t.Errorf("assistant lacks %s: %v", k, a)
		}
	}
	s.must(200, "POST", "/assistants/search", map[string]any{"graph_id": "slow"}).json(t, &list)
	if len(list) != 1 || list[0]["assistant_id"] != server.SystemAssistantID("slow") || list[0]["name"] != "slow" {
		t.Errorf("graph_id filter = %v", list)
	}
	if diff := cmp.Diff(map[string]any{"created_by": "system"}, list[0]["metadata"]); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	r = s.must(200, "POST", "/assistants/search", map[string]any{"metadata": map[string]any{"created_by": "system"}, "limit": 2})
	r.json(t, &list)
	if len(list) != 2 || r.header.Get("X-Pagination-Total") != "3" || r.header.Get("X-Pagination-Next") != "2" {
		t.Errorf("page of 2: %d, total %q, next %q", len(list), r.header.Get("X-Pagination-Total"), r.header.Get("X-Pagination-Next"))
	}
	if n := s.must(200, "POST", "/assistants/count", map[string]any{"graph_id": "echo"}).body; string(n) != "1" {
		t.Errorf("count = %s", n)
	}
	byID := s.must(200, "GET", "/assistants/"+server.SystemAssistantID("echo"), nil).obj(t)
	byName := s.must(200, "GET", "/assistants/echo", nil).obj(t)
	if byID["assistant_id"] != byName["assistant_id"] || byID["graph_id"] != "echo" || byID["version"] != 1.0 {
		t.Errorf("by id %v, by name %v", byID, byName)
	}
	r = s.must(404, "GET", "/assistants/00000000-0000-0000-0000-000000000000", nil)
	if string(r.body) != "Assistant not found" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("404 = %q %q", r.body, r.header.Get("Content-Type"))
	}
	s.must(404, "GET", "/assistants/not-a-graph", nil)
	if r := s.do("POST", "/assistants/search", map[string]any{"limit": 0}); r.status != 400 || !strings.Contains(string(r.body), `"limit"`) {
		t.Errorf("limit 0: %d %s", r.status, r.body)
	}
	if r := s.do("POST", "/assistants/search", map[string]any{"sort_order": "up"}); r.status != 400 {
		t.Errorf("bad sort_order: %d", r.status)
	}
	sel := s.must(200, "POST", "/assistants/search", map[string]any{"graph_id": "echo", "select": []string{"assistant_id", "name"}})
	var selected []map[string]any
	sel.json(t, &selected)
	if len(selected) != 1 || len(selected[0]) != 2 {
		t.Errorf("select = %v", selected)
	}
}

func TestAssistantGraphAndSchemas(t *testing.T) {
	s := newServer(t, server.Options{})
	g := s.must(200, "GET", "/assistants/approval/graph", nil).obj(t)
	var ids []string
	for _, n := range g["nodes"].([]any) {
		ids = append(ids, n.(map[string]any)["id"].(string))
	}
	if diff := cmp.Diff([]string{"__start__", "ask", "finish", "__end__"}, ids); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	want := []any{
		map[string]any{"source": "__start__", "target": "ask", "conditional": false},
		map[string]any{"source": "ask", "target": "finish", "conditional": false},
		map[string]any{"source": "finish", "target": "__end__", "conditional": false},
	}
	if diff := cmp.Diff(want, g["edges"]); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	s.must(200, "GET", "/assistants/echo/graph?xray=true", nil)
	s.must(200, "GET", "/assistants/echo/graph?xray=2", nil)
	s.must(400, "GET", "/assistants/echo/graph?xray=maybe", nil)

	sc := s.must(200, "GET", "/assistants/echo/schemas", nil).obj(t)
	wantEcho := map[string]any{"type": "object", "properties": map[string]any{"messages": map[string]any{"langgraph_type": "messages", "description": "A list of chat messages"}}}
	for _, k := range []string{"input_schema", "output_schema", "state_schema"} {
		if diff := cmp.Diff(wantEcho, sc[k]); diff != "" {
			t.Errorf("echo %s (-want +got):\n%s", k, diff)
		}
	}
	if sc["graph_id"] != "echo" {
		t.Errorf("graph_id = %v", sc["graph_id"])
	}
	if _, ok := sc["config_schema"]; ok {
		t.Error("config_schema for a graph without one")
	}
	slow := s.must(200, "GET", "/assistants/slow/schemas", nil).obj(t)
	props := slow["state_schema"].(map[string]any)["properties"].(map[string]any)
	if props["delay_ms"].(map[string]any)["type"] != "number" || props["tag"].(map[string]any)["type"] != "string" {
		t.Errorf("slow properties = %v", props)
	}
	s.must(200, "GET", "/assistants/echo/subgraphs", nil)
	s.must(404, "GET", "/assistants/nope/schemas", nil)
}

func TestAssistantCRUD(t *testing.T) {
	s := newServer(t, server.Options{})
	alice, bob := s.as("alice"), s.as("bob")
	a := alice.must(200, "POST", "/assistants", map[string]any{
		"graph_id": "echo", "name": "Echo bot", "config": map[string]any{"configurable": map[string]any{"k": 1}}, "metadata": map[string]any{"team": "a"},
	}).obj(t)
	id := a["assistant_id"].(string)
	if a["version"] != 1.0 || a["name"] != "Echo bot" || a["description"] != nil {
		t.Errorf("created = %v", a)
	}
	alice.must(409, "POST", "/assistants", map[string]any{"graph_id": "echo", "assistant_id": id})
	same := alice.must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "assistant_id": id, "if_exists": "do_nothing"}).obj(t)
	if same["name"] != "Echo bot" {
		t.Errorf("do_nothing returned %v", same)
	}
	for _, bad := range []map[string]any{
		{"name": "no graph"},
		{"graph_id": "echo", "if_exists": "sometimes"},
		{"graph_id": "echo", "assistant_id": "nope"},
		{"graph_id": "echo", "metadata": 5},
		{"graph_id": "echo", "config": "x"},
	} {
		if r := alice.do("POST", "/assistants", bad); r.status != 400 {
			t.Errorf("create %v: %d %s", bad, r.status, r.body)
		}
	}
	alice.must(404, "POST", "/assistants", map[string]any{"graph_id": "nope"})

	// Another user sees neither the assistant nor its versions.
	bob.must(404, "GET", "/assistants/"+id, nil)
	bob.must(404, "PATCH", "/assistants/"+id, map[string]any{"name": "mine"})
	bob.must(404, "DELETE", "/assistants/"+id, nil)
	bob.must(404, "POST", "/assistants/"+id+"/versions", map[string]any{})
	bob.must(404, "GET", "/assistants/"+id+"/graph", nil)
	var bobs []map[string]any
	bob.must(200, "POST", "/assistants/search", map[string]any{}).json(t, &bobs)
	if len(bobs) != 3 {
		t.Errorf("bob sees %d assistants, want the 3 system ones", len(bobs))
	}
	// A user cannot change a system assistant.
	bob.must(404, "PATCH", "/assistants/echo", map[string]any{"name": "x"})

	p := alice.must(200, "PATCH", "/assistants/"+id, map[string]any{"name": "Renamed", "metadata": map[string]any{"v": 2}}).obj(t)
	if p["version"] != 2.0 || p["name"] != "Renamed" {
		t.Errorf("patched = %v", p)
	}
	if md := p["metadata"].(map[string]any); md["team"] != "a" || md["v"] != 2.0 {
		t.Errorf("patched metadata = %v", md)
	}
	var vs []map[string]any
	alice.must(200, "POST", "/assistants/"+id+"/versions", map[string]any{}).json(t, &vs)
	if len(vs) != 2 || vs[0]["version"] != 2.0 || vs[1]["name"] != "Echo bot" {
		t.Errorf("versions = %v", vs)
	}
	back := alice.must(200, "POST", "/assistants/"+id+"/latest", map[string]any{"version": 1}).obj(t)
	if back["name"] != "Echo bot" || back["version"] != 1.0 {
		t.Errorf("latest = %v", back)
	}
	alice.must(404, "POST", "/assistants/"+id+"/latest", map[string]any{"version": 7})
	alice.must(400, "POST", "/assistants/"+id+"/latest", map[string]any{})

	// The user's assistant runs its graph.
	tid := alice.newThread()
	_, evs := alice.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": id, "input": human("x")})
	if len(evs) < 2 || evs[len(evs)-1].Event != "values" {
		t.Errorf("run of a user's assistant: %v", names(evs))
	}
	bob.must(404, "POST", "/runs/wait", map[string]any{"assistant_id": id, "input": human("x")})

	var del []string
	alice.must(200, "DELETE", "/assistants/"+id, nil).json(t, &del)
	if len(del) != 1 || del[0] != id {
		t.Errorf("delete = %v", del)
	}
	alice.must(404, "GET", "/assistants/"+id, nil)
}

// GET /assistants/{id}/subgraphs[/{namespace}] gives the schemas of the
// graph's subgraphs by namespace, nested ones with recurse.
func TestAssistantSubgraphs(t *testing.T) {
	x := graph.Value[int]("x")
	y := graph.Value[string]("y")
	step := func(ctx context.Context, s graph.State) (graph.Update, error) { return x.Write(x.Get(s) + 1), nil }
	nested := func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		leaf, err := graph.New(x, y).AddNode("inc", step, nil).AddEdge(graph.START, "inc").Compile(nil)
		if err != nil {
			return nil, err
		}
		mid, err := graph.New(x).AddSubgraph("leaf", leaf, nil).AddEdge(graph.START, "leaf").Compile(nil)
		if err != nil {
			return nil, err
		}
		return graph.New(x).AddSubgraph("mid", mid, nil).AddEdge(graph.START, "mid").Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	s := newServer(t, server.Options{Graphs: map[string]server.GraphFunc{"nested": nested, "echo": apitestGraphs()["echo"]}})
	keys := func(path string) []string {
		var out []string
		for k := range s.must(200, "GET", path, nil).obj(t) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for path, want := range map[string][]string{
		"/assistants/nested/subgraphs":                      {"mid"},
		"/assistants/nested/subgraphs?recurse=true":         {"mid", "mid|leaf"},
		"/assistants/nested/subgraphs/mid":                  {"mid"},
		"/assistants/nested/subgraphs/mid%7Cleaf?recurse=1": {"mid|leaf"},
		"/assistants/nested/subgraphs/nope":                 nil,
		"/assistants/echo/subgraphs?recurse=true":           nil,
	} {
		if diff := cmp.Diff(want, keys(path)); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	leaf := s.must(200, "GET", "/assistants/nested/subgraphs/mid%7Cleaf?recurse=true", nil).obj(t)["mid|leaf"].(map[string]any)
	props := leaf["state_schema"].(map[string]any)["properties"].(map[string]any)
	if props["x"].(map[string]any)["type"] != "integer" || props["y"].(map[string]any)["type"] != "string" || leaf["graph_id"] != "nested" {
		t.Errorf("the leaf subgraph's schemas = %v", leaf)
	}
	s.must(404, "GET", "/assistants/nope/subgraphs", nil)
}
