package server_test

import (
	"strings"
	"testing"

	"github.com/weftlabs/weft/server"
)

// Another user's thread, runs and store items are never found, read,
// searched, changed or resumed: every endpoint answers as if they did not
// exist.
func TestUsersAreKeptApart(t *testing.T) {
	s := newServer(t, server.Options{})
	alice, bob := s.as("alice"), s.as("bob")
	tid := alice.must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"owner": "alice"}}).obj(t)["thread_id"].(string)
	w := alice.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"request": "secret"}}).obj(t)
	iid := w["__interrupt__"].([]any)[0].(map[string]any)["id"].(string)
	var runs []map[string]any
	alice.must(200, "GET", "/threads/"+tid+"/runs", nil).json(t, &runs)
	rid := runs[0]["run_id"].(string)
	cp := alice.must(200, "GET", "/threads/"+tid+"/state", nil).obj(t)["checkpoint"].(map[string]any)["checkpoint_id"].(string)
	alice.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"memories"}, "key": "k", "value": map[string]any{"secret": true}})
	cron := "/runs/crons/" + alice.must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "approval", "schedule": "0 0 1 1 *", "metadata": map[string]any{"secret": true}}).obj(t)["cron_id"].(string)

	th := "/threads/" + tid
	run := th + "/runs/" + rid
	notFound := []struct {
		method, path string
		body         any
		headers      []string
	}{
		{"GET", th, nil, nil},
		{"PATCH", th, map[string]any{"metadata": map[string]any{"x": 1}}, nil},
		{"DELETE", th, nil, nil},
		{"POST", th + "/copy", nil, nil},
		{"GET", th + "/state", nil, nil},
		{"POST", th + "/state", map[string]any{"values": map[string]any{"request": "mine"}}, nil},
		{"PATCH", th + "/state", map[string]any{"metadata": map[string]any{"rating": "bob's"}}, nil},
		{"GET", th + "/state/" + cp, nil, nil},
		{"POST", th + "/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": cp}}, nil},
		{"GET", th + "/history", nil, nil},
		{"POST", th + "/history", map[string]any{}, nil},
		{"GET", th + "/stream", nil, nil},
		{"GET", th + "/stream?stream_mode=lifecycle", nil, []string{"Last-Event-ID", "-"}},
		{"GET", th + "/files", nil, nil},
		{"GET", th + "/files/task-1/report.md", nil, nil},
		{"POST", th + "/runs", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": "yes"}}, nil},
		{"POST", th + "/runs/stream", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{iid: "yes"}}}, nil},
		{"POST", th + "/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": "yes"}, "multitask_strategy": "interrupt"}, nil},
		{"GET", th + "/runs", nil, nil},
		{"GET", run, nil, nil},
		{"DELETE", run, nil, nil},
		{"GET", run + "/join", nil, nil},
		{"GET", run + "/stream", nil, nil},
		{"GET", "/runs/" + rid + "/stream", nil, nil},
		{"POST", run + "/cancel?wait=1", nil, nil},
		{"POST", "/runs/cancel", map[string]any{"thread_id": tid}, nil},
		{"POST", th + "/runs/crons", map[string]any{"assistant_id": "approval", "schedule": "* * * * *"}, nil},
		{"PATCH", cron, map[string]any{"enabled": false}, nil},
		{"DELETE", cron, nil, nil},
	}
	for _, c := range notFound {
		if r := bob.do(c.method, c.path, c.body, c.headers...); r.status != 404 {
			t.Errorf("bob %s %s: %d %s; want 404", c.method, c.path, r.status, r.body)
		} else if strings.Contains(string(r.body), "secret") {
			t.Errorf("bob %s %s: the 404 leaks the thread: %s", c.method, c.path, r.body)
		}
	}
	bob.must(409, "POST", "/threads", map[string]any{"thread_id": tid})
	for _, path := range []string{"/runs/crons/search", "/runs/crons/count"} {
		r := bob.must(200, "POST", path, map[string]any{"thread_id": tid})
		if b := strings.TrimSpace(string(r.body)); b != "[]" && b != "0" {
			t.Errorf("bob %s = %s", path, r.body)
		}
	}
	if r := alice.must(200, "POST", "/runs/crons/count", map[string]any{"thread_id": tid}); strings.TrimSpace(string(r.body)) != "1" {
		t.Errorf("alice's crons on her thread after bob's tries: %s, want 1", r.body)
	}
	for _, path := range []string{"/threads/search", "/threads/count"} {
		r := bob.must(200, "POST", path, map[string]any{"ids": []string{tid}})
		if b := strings.TrimSpace(string(r.body)); b != "[]" && b != "0" {
			t.Errorf("bob %s = %s", path, r.body)
		}
	}
	if r := bob.must(200, "GET", "/store/items?namespace=memories&key=k", nil); strings.TrimSpace(string(r.body)) != "null" {
		t.Errorf("bob reads alice's item: %s", r.body)
	}
	if r := bob.must(200, "POST", "/store/items/search", map[string]any{}); strings.Contains(string(r.body), "secret") {
		t.Errorf("bob finds alice's item: %s", r.body)
	}
	if r := bob.must(200, "POST", "/store/namespaces", map[string]any{}); strings.Contains(string(r.body), "memories") {
		t.Errorf("bob lists alice's namespaces: %s", r.body)
	}
	bob.must(204, "DELETE", "/store/items", map[string]any{"namespace": []string{"memories"}, "key": "k"})
	bob.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"memories"}, "key": "k", "value": map[string]any{"bob": true}})

	// Alice's thread, run and item are as they were.
	got := alice.must(200, "GET", th, nil).obj(t)
	if got["status"] != "interrupted" || got["metadata"].(map[string]any)["x"] != nil {
		t.Errorf("alice's thread = %v", got)
	}
	if r := alice.must(200, "GET", "/store/items?namespace=memories&key=k", nil); !strings.Contains(string(r.body), "secret") {
		t.Errorf("alice's item = %s", r.body)
	}
	var nss struct {
		Namespaces [][]string `json:"namespaces"`
	}
	alice.must(200, "POST", "/store/namespaces", map[string]any{}).json(t, &nss)
	if len(nss.Namespaces) != 1 || nss.Namespaces[0][0] != "memories" {
		t.Errorf("alice's namespaces = %v", nss.Namespaces)
	}
	alice.must(200, "POST", th+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": "yes"}})
	// Without a user, none of it is visible either.
	s.must(404, "GET", th, nil)
}
