package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/tool"
	wmcp "github.com/weftlabs/weft/tool/mcp"
	"github.com/weftlabs/weft/tool/mcp/internal/npmtest"
)

// npmDir holds the package.json and package-lock.json that pin the npm
// packages of these tests.
const npmDir = "testdata/npm"

// shared is one manager over the npm servers for the whole test binary:
// starting node servers is slow.
var shared struct {
	once    sync.Once
	m       *wmcp.Manager
	err     error
	root    string // the filesystem server's directory, and the memory file's
	http    *exec.Cmd
	modules string
}

// npmServers returns the manager connected to the npm servers:
// server-everything over stdio ("everything") and streamable HTTP
// ("everything-http"), server-memory ("memory") and server-filesystem
// ("fs", over the directory it returns).
func npmServers(t *testing.T) (*wmcp.Manager, string) {
	t.Helper()
	modules := npmtest.Install(t, npmDir)
	shared.once.Do(func() { shared.modules = modules; shared.err = startShared(modules) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.m, shared.root
}

func startShared(modules string) error {
	node, ok := npmtest.Node(modules, 20)
	if !ok {
		return fmt.Errorf("no node 20 or newer, neither installed by %s nor on PATH", npmDir)
	}
	pkg := func(name string) string {
		return filepath.Join(modules, "@modelcontextprotocol", name, "dist", "index.js")
	}
	root, err := os.MkdirTemp("", "weft-mcp-npm-")
	if err != nil {
		return err
	}
	shared.root, _ = filepath.EvalSymlinks(root)
	url, err := startEverythingHTTP(node, pkg("server-everything"))
	if err != nil {
		return err
	}
	cfg := &wmcp.Config{Servers: map[string]wmcp.ServerConfig{
		"everything":      {Command: node, Args: []string{pkg("server-everything"), "stdio"}},
		"everything-http": {URL: url},
		"memory":          {Command: node, Args: []string{pkg("server-memory")}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(shared.root, "memory.jsonl")}},
		"fs":              {Command: node, Args: []string{pkg("server-filesystem"), shared.root}},
	}}
	opts := testOptions(nil)
	opts.ConnectTimeout = time.Minute
	shared.m, err = wmcp.Start(context.Background(), cfg, opts)
	if err != nil {
		return err
	}
	for _, s := range shared.m.Servers() {
		if s.State != wmcp.StateConnected {
			return fmt.Errorf("npm server %s: %s: %v", s.Name, s.State, s.Err)
		}
	}
	return nil
}

// startEverythingHTTP runs server-everything in its streamableHttp mode on
// a free port and waits until it listens.
func startEverythingHTTP(node, script string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	shared.http = cmd
	listening := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var last string
		for sc.Scan() {
			last = sc.Text()
			if strings.Contains(last, "listening on port") {
				listening <- nil
				for sc.Scan() {
				}
				return
			}
		}
		listening <- fmt.Errorf("server-everything streamableHttp exited: %s", last)
	}()
	select {
	case err := <-listening:
		if err != nil {
			return "", err
		}
	case <-time.After(time.Minute):
		return "", fmt.Errorf("server-everything streamableHttp did not listen within a minute")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), nil
}

func stopShared() {
	if shared.m != nil {
		shared.m.Close()
	}
	if shared.http != nil {
		shared.http.Process.Kill()
		shared.http.Wait()
	}
	if shared.root != "" {
		os.RemoveAll(shared.root)
	}
}

// The reference server's tools, over stdio and streamable HTTP, map onto
// weft's envelope.
func TestEverythingServer(t *testing.T) {
	m, _ := npmServers(t)
	reg := m.Registry()
	for _, server := range []string{"everything", "everything-http"} {
		name := func(tool string) string { return server + "__" + tool }
		for _, tc := range []struct {
			tool, args string
			check      func(r tool.Result[any]) bool
		}{
			{"echo", `{"message": "안녕 weft"}`, func(r tool.Result[any]) bool {
				return r.Success && r.Data == "Echo: 안녕 weft" && r.Meta[wmcp.MetaServer] == server && r.Meta[wmcp.MetaTool] == "echo"
			}},
			{"get-sum", `{"a": 2, "b": 40}`, func(r tool.Result[any]) bool {
				return r.Success && strings.Contains(fmt.Sprint(r.Data), "42")
			}},
			{"get-structured-content", `{"location": "Chicago"}`, func(r tool.Result[any]) bool {
				d, ok := r.Data.(map[string]any)
				return r.Success && ok && d["temperature"] == 36.0 && d["conditions"] == "Light rain / drizzle"
			}},
			{"get-tiny-image", `{}`, func(r tool.Result[any]) bool {
				return r.Success && strings.Contains(fmt.Sprint(r.Data), "[image image/png") && r.Meta[wmcp.MetaContent] != nil
			}},
			// The server's schema (from zod) is checked before the call.
			{"get-sum", `{"a": "two", "b": 40}`, func(r tool.Result[any]) bool {
				return !r.Success && r.ErrorCode == tool.CodeInvalidArgs && strings.Contains(r.Error, "/a")
			}},
			{"get-structured-content", `{"location": "Seoul"}`, func(r tool.Result[any]) bool {
				return !r.Success && r.ErrorCode == tool.CodeInvalidArgs && strings.Contains(r.Error, "enum")
			}},
		} {
			if r := run(t, reg, name(tc.tool), tc.args); !tc.check(r) {
				t.Errorf("%s(%s): %+v", name(tc.tool), tc.args, r)
			}
		}
		echo, _ := reg.Get(name("echo"))
		if p := string(echo.Spec().Parameters); !strings.Contains(p, `"Message to echo"`) || !strings.Contains(p, `"required":["message"]`) {
			t.Errorf("%s: echo's schema is not the server's: %s", server, p)
		}
		// A call past its timeout ends with a timeout, not a hang.
		slow, _ := reg.Get(name("trigger-long-running-operation"))
		r, _ := slow.Run(context.Background(), []byte(`{"duration": 30, "steps": 3}`), 200*time.Millisecond)
		if r.ErrorCode != tool.CodeTimeout {
			t.Errorf("%s: long-running operation: %+v", server, r)
		}
	}
}

// server-memory keeps a knowledge graph; its results are structured.
func TestMemoryServer(t *testing.T) {
	m, _ := npmServers(t)
	reg := m.Registry()
	r := run(t, reg, "memory__create_entities", `{"entities": [{"name": "Ada", "entityType": "person", "observations": ["writes Go", "likes MCP"]}]}`)
	if !r.Success {
		t.Fatalf("create_entities: %+v", r)
	}
	r = run(t, reg, "memory__search_nodes", `{"query": "Ada"}`)
	if !r.Success || !strings.Contains(fmt.Sprint(r.Data), "writes Go") {
		t.Errorf("search_nodes: %+v", r)
	}
	r = run(t, reg, "memory__open_nodes", `{"names": ["Ada"]}`)
	d, _ := r.Data.(map[string]any)
	if ents, _ := d["entities"].([]any); !r.Success || len(ents) != 1 {
		t.Errorf("open_nodes: want structured content with one entity, got %+v", r)
	}
}

// server-filesystem reads and writes in its directory; what it refuses is
// a tool error with its message.
func TestFilesystemServer(t *testing.T) {
	m, root := npmServers(t)
	reg := m.Registry()
	file := filepath.Join(root, "note.md")
	if r := run(t, reg, "fs__write_file", fmt.Sprintf(`{"path": %q, "content": "# 메모\nweft"}`, file)); !r.Success {
		t.Fatalf("write_file: %+v", r)
	}
	r := run(t, reg, "fs__read_text_file", fmt.Sprintf(`{"path": %q}`, file))
	if !r.Success || !strings.Contains(fmt.Sprint(r.Data), "# 메모\nweft") {
		t.Errorf("read_text_file: %+v", r)
	}
	for _, path := range []string{filepath.Join(root, "missing.md"), "/etc/hostname"} {
		r := run(t, reg, "fs__read_text_file", fmt.Sprintf(`{"path": %q}`, path))
		if r.Success || r.ErrorCode != wmcp.CodeToolError || r.Error == "" {
			t.Errorf("read_text_file(%s): want a tool error with the server's message, got %+v", path, r)
		}
	}
}
