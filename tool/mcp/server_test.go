package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/weftlabs/weft/tool"
	wmcp "github.com/weftlabs/weft/tool/mcp"
)

// The test binary is also a stdio MCP server: with serverEnv set, TestMain
// serves instead of testing. downEnv names a file whose presence makes the
// server exit at once, as a server that cannot start.
const (
	serverEnv = "WEFT_MCP_TEST_SERVER"
	downEnv   = "WEFT_MCP_TEST_DOWN"
	// lifetimeEnv makes the server exit on its own after this long (a
	// time.ParseDuration string), with no call that asked it to.
	lifetimeEnv = "WEFT_MCP_TEST_LIFETIME"
)

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		os.Exit(serveStdio())
	}
	code := m.Run()
	stopShared()
	// A manager's Close must stop every goroutine it started: its
	// servers' reconnect loops, sessions and the file watcher.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func serveStdio() int {
	if f := os.Getenv(downEnv); f != "" {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintln(os.Stderr, "test server: down for the test")
			return 1
		}
	}
	if d, err := time.ParseDuration(os.Getenv(lifetimeEnv)); err == nil {
		go func() {
			time.Sleep(d)
			fmt.Fprintln(os.Stderr, "test server: lifetime over")
			os.Exit(4)
		}()
	}
	s := newServer(nil)
	mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "Stops the server."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "test server: exiting as asked")
		os.Exit(3)
		return nil, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	return 0
}

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type weather struct {
	City    string  `json:"city"`
	Celsius float64 `json:"celsius"`
}

// notesSchema is a schema written by hand, as a server in another
// language sends it.
const notesSchema = `{"type":"object","properties":{"q":{"type":"string","description":"words to look for"},"limit":{"type":"integer","minimum":1,"default":5}},"required":["q"],"additionalProperties":false}`

// newServer is the test server's tools.
func newServer(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "weft-test", Version: "1.0.0"}, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."}, func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "weather", Description: "Today's weather in a city."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		City string `json:"city"`
	}) (*mcp.CallToolResult, weather, error) {
		return nil, weather{City: in.City, Celsius: 21.5}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("the disk is full")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Returns a picture."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a red dot:"},
			&mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"},
		}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Waits."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Ms int `json:"ms"`
	}) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "notes.search", Description: "Searches notes.", InputSchema: json.RawMessage(notesSchema)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found: " + string(req.Params.Arguments)}}}, nil
	})
	return s
}

// serveHTTP serves s over streamable HTTP until the test ends.
func serveHTTP(t testing.TB, s *mcp.Server) string {
	t.Helper()
	h := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(h.Close)
	return h.URL
}

// stdioServer is the configuration that runs the test binary as a server.
func stdioServer(env map[string]string) wmcp.ServerConfig {
	e := map[string]string{serverEnv: "1"}
	for k, v := range env {
		e[k] = v
	}
	return wmcp.ServerConfig{Command: os.Args[0], Env: e}
}

// recorder keeps the changes OnChange receives.
type recorder struct {
	mu      sync.Mutex
	changes []tool.Change
}

func (r *recorder) on(c tool.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
}

func (r *recorder) all() []tool.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changes)
}

// summary is a change as "+added ~updated -removed" names.
func summary(c tool.Change) []string {
	var out []string
	for _, t := range c.Added {
		out = append(out, "+"+t.Name())
	}
	for _, t := range c.Updated {
		out = append(out, "~"+t.Name())
	}
	for _, n := range c.Removed {
		out = append(out, "-"+n)
	}
	slices.Sort(out)
	return out
}

// testOptions are quick options for tests.
func testOptions(rec *recorder) wmcp.Options {
	o := wmcp.Options{
		MinBackoff:      20 * time.Millisecond,
		MaxBackoff:      200 * time.Millisecond,
		ConnectTimeout:  30 * time.Second,
		RefreshInterval: -1,
		WatchInterval:   20 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if rec != nil {
		o.OnChange = rec.on
	}
	if testing.Verbose() {
		o.Logger = slog.Default()
	}
	return o
}

// eventually waits until cond holds. The bound only keeps a broken test
// from hanging: nothing is asserted about how long it takes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run calls a registered tool as the tool node would.
func run(t *testing.T, reg *tool.Registry, name, args string) tool.Result[any] {
	t.Helper()
	tl, ok := reg.Get(name)
	if !ok {
		t.Fatalf("no tool %s; the tools are %v", name, reg.Names())
	}
	r, _ := tl.Run(context.Background(), json.RawMessage(args), 0)
	return r
}

func state(m *wmcp.Manager, server string) wmcp.State {
	for _, s := range m.Servers() {
		if s.Name == server {
			return s.State
		}
	}
	return ""
}
