package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// writer is a graph whose one node writes files into its thread's
// directory under root, as an orchestrator writes its results.
func writer(root string) server.GraphFunc {
	done := graph.Value[bool]("done")
	return func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		return graph.New(done).
			AddNode("write", func(ctx context.Context, s graph.State) (graph.Update, error) {
				ti, _ := graph.CurrentTask(ctx)
				dir := filepath.Join(root, ti.ThreadID, "task-1")
				files := map[string]string{
					"report.md":       "# Report\n\n![chart](chart_t1.svg)\n",
					"chart_t1.svg":    `<svg xmlns="http://www.w3.org/2000/svg"></svg>`,
					"step_t1.json":    `{"ok":true}`,
					"data.bin":        "\x00\x01",
					".report.md.1234": "half written",
					"한글 보고서.md":       "# 보고서\n",
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return graph.Update{}, err
				}
				for name, body := range files {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
						return graph.Update{}, err
					}
				}
				// A link out of the thread's directory is neither listed
				// nor served.
				if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
					return graph.Update{}, err
				}
				return done.Write(true), nil
			}, nil).
			AddEdge(graph.START, "write").
			AddEdge("write", graph.END).
			Compile(&graph.CompileOptions{Checkpointer: saver})
	}
}

func filesServer(t *testing.T) (*testServer, string) {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("not the thread's"), 0o644); err != nil {
		t.Fatal(err)
	}
	graphs := apitestGraphs()
	graphs["writer"] = writer(root)
	s := newServer(t, server.Options{Graphs: graphs, ThreadFiles: func(graphID, threadID string) string {
		if graphID != "writer" {
			return ""
		}
		return filepath.Join(root, threadID)
	}})
	return s, root
}

// A thread's files are listed and served to its owner, with their media
// types; hidden files and links are not, paths out of the directory are
// refused, and another user's thread is a 404.
func TestThreadFiles(t *testing.T) {
	s, root := filesServer(t)
	alice, bob := s.as("alice"), s.as("bob")
	tid := alice.newThread()
	th := "/threads/" + tid

	// Before any run, the thread has no graph and so no files.
	if r := alice.must(200, "GET", th+"/files", nil); strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("files before any run: %s, want []", r.body)
	}
	alice.must(200, "POST", th+"/runs/wait", map[string]any{"assistant_id": "writer", "input": map[string]any{}})

	var list []struct {
		Name      string    `json:"name"`
		Size      int64     `json:"size"`
		MediaType string    `json:"media_type"`
		Modified  time.Time `json:"modified"`
	}
	alice.must(200, "GET", th+"/files", nil).json(t, &list)
	var names []string
	for _, f := range list {
		names = append(names, f.Name+" "+f.MediaType)
		if f.Modified.IsZero() || f.Size <= 0 {
			t.Errorf("file %+v: want its size and time", f)
		}
	}
	want := []string{
		"task-1/chart_t1.svg image/svg+xml",
		"task-1/data.bin application/octet-stream",
		"task-1/report.md text/markdown; charset=utf-8",
		"task-1/step_t1.json application/json",
		"task-1/한글 보고서.md text/markdown; charset=utf-8",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("files:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}

	r := alice.must(200, "GET", th+"/files/task-1/report.md", nil)
	if string(r.body) != "# Report\n\n![chart](chart_t1.svg)\n" || r.header.Get("Content-Type") != "text/markdown; charset=utf-8" {
		t.Errorf("report: %q %q", r.header.Get("Content-Type"), r.body)
	}
	if r.header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("report headers %v: want nosniff and a sandboxing CSP", r.header)
	}
	if d := r.header.Get("Content-Disposition"); !strings.HasPrefix(d, "inline") {
		t.Errorf("Content-Disposition %q, want inline", d)
	}
	r = alice.must(200, "GET", th+"/files/task-1/"+"%ED%95%9C%EA%B8%80%20%EB%B3%B4%EA%B3%A0%EC%84%9C.md?download=1", nil)
	if d := r.header.Get("Content-Disposition"); d != "attachment; filename*=UTF-8''%ED%95%9C%EA%B8%80%20%EB%B3%B4%EA%B3%A0%EC%84%9C.md" {
		t.Errorf("Content-Disposition %q", d)
	}
	if ct := alice.must(200, "GET", th+"/files/task-1/chart_t1.svg", nil).header.Get("Content-Type"); ct != "image/svg+xml" {
		t.Errorf("chart Content-Type %q", ct)
	}

	for _, name := range []string{"task-1/missing.md", "task-1/link.txt", "task-1", "task-2/report.md"} {
		alice.must(404, "GET", th+"/files/"+name, nil)
	}
	for _, name := range []string{"task-1/.report.md.1234", "task-1/%2E%2E/%2E%2E/secret.txt", "..%2Fsecret.txt", "task-1/..%5C..%5Csecret.txt", "%2Fetc%2Fpasswd", "task-1%2F.%2Freport.md"} {
		r := alice.do("GET", th+"/files/"+name, nil)
		if r.status != 400 && r.status != 404 {
			t.Errorf("GET files/%s: %d %s, want 400 or 404", name, r.status, r.body)
		}
		if strings.Contains(string(r.body), "not the thread's") || strings.Contains(string(r.body), "half written") {
			t.Errorf("GET files/%s: served %s", name, r.body)
		}
	}

	for _, p := range []string{th + "/files", th + "/files/task-1/report.md"} {
		bob.must(404, "GET", p, nil)
	}

	// Deleting the thread deletes its files.
	alice.must(204, "DELETE", th, nil)
	if _, err := os.Stat(filepath.Join(root, tid)); !os.IsNotExist(err) {
		t.Errorf("the thread's files are left after it was deleted: %v", err)
	}
}

// A thread that takes the id of a deleted one (ids are the creator's to
// choose) does not see files older than itself, when the deleted thread's
// files could not be removed.
func TestThreadFilesOlderThanTheThread(t *testing.T) {
	s, root := filesServer(t)
	tid := "6e4c9f0a-58d3-4a53-9f43-2b1b2f7c0c11"
	dir := filepath.Join(root, tid, "task-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "report.md")
	if err := os.WriteFile(old, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	bob := s.as("bob")
	bob.must(200, "POST", "/threads", map[string]any{"thread_id": tid})
	bob.must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "writer", "input": map[string]any{}})
	// The run wrote report.md anew; make it old again, as the left-over.
	if err := os.WriteFile(old, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	r := bob.must(200, "GET", "/threads/"+tid+"/files", nil)
	if strings.Contains(string(r.body), "report.md") {
		t.Errorf("files list the file older than the thread: %s", r.body)
	}
	bob.must(404, "GET", "/threads/"+tid+"/files/task-1/report.md", nil)
	bob.must(200, "GET", "/threads/"+tid+"/files/task-1/step_t1.json", nil)
}

// Any file name asked of a thread gets an answer below 500, and never a
// file from outside the thread's directory.
func FuzzThreadFileName(f *testing.F) {
	for _, seed := range []string{"task-1/report.md", "../secret.txt", "task-1/../../secret.txt", "%2e%2e/secret.txt",
		"task-1/link.txt", ".", "", "/", "task-1/.report.md.1234", `task-1\..\..\secret.txt`, "task-1/\x00", "%zz"} {
		f.Add(seed)
	}
	root := f.TempDir()
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("not the thread's"), 0o644); err != nil {
		f.Fatal(err)
	}
	graphs := apitestGraphs()
	graphs["writer"] = writer(root)
	srv, err := server.New(context.Background(), server.Options{Graphs: graphs, ThreadFiles: func(_, threadID string) string {
		return filepath.Join(root, threadID)
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Shutdown(context.Background()) })
	tid := "5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2"
	for _, req := range []struct{ path, body string }{
		{"/threads", `{"thread_id":"` + tid + `"}`},
		{"/threads/" + tid + "/runs/wait", `{"assistant_id":"writer","input":{}}`},
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("POST", req.path, strings.NewReader(req.body)))
		if rec.Code != 200 {
			f.Fatalf("POST %s: %d %s", req.path, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, name string) {
		u := &url.URL{Path: "/threads/" + tid + "/files/" + name}
		req, err := http.NewRequest("GET", u.String(), nil)
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("GET files/%q: %d %s", name, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "not the thread's") || strings.Contains(rec.Body.String(), "half written") {
			t.Fatalf("GET files/%q served %s", name, rec.Body)
		}
	})
}
