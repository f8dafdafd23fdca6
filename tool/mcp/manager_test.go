package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/weftlabs/weft/tool"
	wmcp "github.com/weftlabs/weft/tool/mcp"
)

func sameJSON(t *testing.T, want, got string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal([]byte(want), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &b); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

// The tools of a stdio server become weft tools: names prefixed by the
// server, schemas kept, results in weft's envelope.
func TestStdioServerTools(t *testing.T) {
	rec := &recorder{}
	sc := stdioServer(nil)
	sc.Timeout = 300 * time.Millisecond
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"t": sc}}, testOptions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := m.Registry()
	notes := wmcp.ToolName("t", "notes.search")
	want := []string{"t__exit", "t__fail", "t__greet", "t__image", "t__slow", "t__weather", notes}
	got := reg.Names()
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("registered tools (-want +got):\n%s", diff)
	}
	// The first listing is one change, told to OnChange.
	if changes := rec.all(); len(changes) != 1 || len(changes[0].Added) != len(want) || changes[0].Version != reg.Version() {
		t.Errorf("changes: %+v", changes)
	}

	// The server's schema is what the model sees.
	tl, _ := reg.Get(notes)
	sameJSON(t, notesSchema, string(tl.Spec().Parameters))
	if d := tl.Spec().Description; d != "Searches notes." {
		t.Errorf("description %q", d)
	}
	greet, _ := reg.Get("t__greet")
	if p := string(greet.Spec().Parameters); !strings.Contains(p, `"who to greet"`) {
		t.Errorf("greet's schema lost its description: %s", p)
	}

	for _, tc := range []struct {
		name, tool, args string
		want             tool.Result[any]
		// contains is a part of the data or error, when they vary.
		contains string
	}{
		{name: "text", tool: "t__greet", args: `{"name": "Ada"}`,
			want: tool.Result[any]{Success: true, Data: "hello Ada", Meta: map[string]any{"mcp_server": "t", "mcp_tool": "greet"}}},
		{name: "structured content", tool: "t__weather", args: `{"city": "Seoul"}`,
			want: tool.Result[any]{Success: true, Data: map[string]any{"city": "Seoul", "celsius": 21.5}, Meta: map[string]any{"mcp_server": "t", "mcp_tool": "weather"}}},
		{name: "isError", tool: "t__fail", args: `{}`,
			want: tool.Result[any]{ErrorCode: wmcp.CodeToolError, Error: "the disk is full", Meta: map[string]any{"mcp_server": "t", "mcp_tool": "fail"}}},
		{name: "renamed tool", tool: notes, args: `{"q": "go"}`,
			want: tool.Result[any]{Success: true, Data: `found: {"q":"go"}`, Meta: map[string]any{"mcp_server": "t", "mcp_tool": "notes.search"}}},
		{name: "arguments checked against the server's schema", tool: notes, args: `{"limit": 0}`,
			want: tool.Result[any]{ErrorCode: tool.CodeInvalidArgs}, contains: "missing required properties"},
		{name: "the server's timeout", tool: "t__slow", args: `{"ms": 60000}`,
			want: tool.Result[any]{ErrorCode: tool.CodeTimeout}, contains: "300ms"},
	} {
		got := run(t, reg, tc.tool, tc.args)
		if tc.contains != "" {
			if !strings.Contains(fmt.Sprint(got.Data, got.Error), tc.contains) {
				t.Errorf("%s: %+v does not mention %q", tc.name, got, tc.contains)
			}
			got.Error, got.Data, got.Meta = "", nil, nil
			tc.want.Error, tc.want.Meta = "", nil
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}

	// Blocks other than text are placeholders for the model, and kept
	// whole in meta.
	img := run(t, reg, "t__image", `{}`)
	if img.Data != "a red dot:\n[image image/png, 3 bytes]" {
		t.Errorf("image data %q", img.Data)
	}
	content, _ := json.Marshal(img.Meta[wmcp.MetaContent])
	sameJSON(t, `[{"type":"text","text":"a red dot:"},{"type":"image","data":"AQID","mimeType":"image/png"}]`, string(content))

	// Servers tells the server's state and tools with their schemas.
	st := m.Servers()
	if len(st) != 1 || st[0].State != wmcp.StateConnected || st[0].Transport != wmcp.Stdio || st[0].Server == nil || st[0].Server.Name != "weft-test" || len(st[0].Tools) != len(want) {
		t.Fatalf("status %+v", st)
	}
	for _, ti := range st[0].Tools {
		if ti.ServerTool == "weather" {
			sameJSON(t, `{"type":"object","required":["city","celsius"],"properties":{"city":{"type":"string"},"celsius":{"type":"number"}},"additionalProperties":false}`, string(ti.OutputSchema))
		}
	}
	if tl, ok := m.Tool("t", "notes.search"); !ok || tl.Name() != notes {
		t.Errorf("Tool(t, notes.search) = %v, %v", tl, ok)
	}

	// Close removes the tools.
	m.Close()
	if n := len(reg.Names()); n != 0 {
		t.Errorf("%d tools left after Close", n)
	}
	if last := rec.all()[len(rec.all())-1]; len(last.Removed) != len(want) {
		t.Errorf("last change %v", summary(last))
	}
}

// A server that dies is reconnected; meanwhile its tools answer at once
// that it is unavailable, with the reason, and they stay registered.
func TestServerDiesAndComesBack(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	rec := &recorder{}
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"t": stdioServer(map[string]string{downEnv: down})}}, testOptions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := m.Registry()
	if r := run(t, reg, "t__greet", `{"name": "Ada"}`); !r.Success {
		t.Fatalf("greet: %+v", r)
	}
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, reg, "t__exit", `{}`); r.Success {
		t.Errorf("exit succeeded: %+v", r)
	}
	eventually(t, "the server to be unavailable", func() bool { return state(m, "t") == wmcp.StateUnavailable })
	r := run(t, reg, "t__greet", `{"name": "Ada"}`)
	if r.ErrorCode != wmcp.CodeUnavailable || !strings.Contains(r.Error, "MCP server t is unavailable") {
		t.Errorf("while down: %+v", r)
	}
	// The reason is the server's own last words, once a restart failed.
	eventually(t, "a failed restart", func() bool {
		return strings.Contains(run(t, reg, "t__greet", `{"name": "Ada"}`).Error, "down for the test")
	})
	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server to be back", func() bool { return state(m, "t") == wmcp.StateConnected })
	if r := run(t, reg, "t__greet", `{"name": "Ada"}`); !r.Success || r.Data != "hello Ada" {
		t.Errorf("after restart: %+v", r)
	}
	// The tools were never removed: one listing, nothing changed since.
	if changes := rec.all(); len(changes) != 1 {
		t.Errorf("changes: %v", changes)
	}
}

// A server that dies on its own, with no call under way, ends its session;
// the manager closes it, so nothing of it is left running once the manager
// is closed (the SDK stops a session's subscription listener only on
// Close).
func TestDeadSessionLeavesNothingRunning(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	down := filepath.Join(t.TempDir(), "down")
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{
		"t": stdioServer(map[string]string{downEnv: down, lifetimeEnv: "300ms"}),
	}}, testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server to die and fail to restart", func() bool {
		st := m.Servers()[0]
		return st.State == wmcp.StateUnavailable && st.Err != nil && strings.Contains(st.Err.Error(), "down for the test")
	})
	m.Close()
}

// Tools added, changed and removed on a running server are noticed through
// notifications/tools/list_changed (no periodic listing here), while calls
// go on.
func TestToolListChangedNotifications(t *testing.T) {
	srv := newServer(nil)
	rec := &recorder{}
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"h": {URL: serveHTTP(t, srv)}}}, testOptions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := m.Registry()
	if st := m.Servers(); st[0].State != wmcp.StateConnected || st[0].Transport != wmcp.HTTP {
		t.Fatalf("status %+v", st)
	}

	// Calls run concurrently with the changes.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r := run(t, reg, "h__weather", `{"city": "Busan"}`); !r.Success {
				t.Errorf("weather during changes: %+v", r)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	added := func(desc string) {
		mcp.AddTool(srv, &mcp.Tool{Name: "translate", Description: desc}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: desc + ": " + in.Text}}}, nil, nil
		})
	}
	last := func() []string {
		c := rec.all()
		return summary(c[len(c)-1])
	}
	added("Translates to English")
	eventually(t, "the new tool", func() bool { _, ok := reg.Get("h__translate"); return ok })
	if diff := cmp.Diff([]string{"+h__translate"}, last()); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}
	if r := run(t, reg, "h__translate", `{"text": "annyeong"}`); r.Data != "Translates to English: annyeong" {
		t.Errorf("new tool: %+v", r)
	}

	added("Translates to Korean")
	eventually(t, "the changed tool", func() bool {
		tl, _ := reg.Get("h__translate")
		return tl.Spec().Description == "Translates to Korean"
	})
	if diff := cmp.Diff([]string{"~h__translate"}, last()); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}

	// A turn pinned before the removal still offers the tool; its call
	// answers that the server took it away.
	pinned := reg.Pin(context.Background())
	srv.RemoveTools("translate", "greet")
	eventually(t, "the removal", func() bool { _, ok := reg.Get("h__greet"); return !ok })
	if diff := cmp.Diff([]string{"-h__greet", "-h__translate"}, last()); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}
	old, ok := reg.View(pinned).Get("h__greet")
	if !ok {
		t.Fatal("the pinned view lost h__greet")
	}
	if r, _ := old.Run(context.Background(), json.RawMessage(`{"name": "x"}`), 0); r.ErrorCode != wmcp.CodeRemoved {
		t.Errorf("call of a removed tool: %+v", r)
	}
	var versions []uint64
	for _, c := range rec.all() {
		versions = append(versions, c.Version)
	}
	if !slices.IsSorted(versions) || versions[len(versions)-1] != reg.Version() {
		t.Errorf("versions %v, registry at %d", versions, reg.Version())
	}
}

// A server that sends no notifications is followed by the periodic listing.
func TestPeriodicListing(t *testing.T) {
	srv := newServer(&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}}})
	rec := &recorder{}
	opts := testOptions(rec)
	opts.RefreshInterval = 20 * time.Millisecond
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"quiet": {URL: serveHTTP(t, srv)}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := m.Registry()
	mcp.AddTool(srv, &mcp.Tool{Name: "late", Description: "came later"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil, nil
	})
	eventually(t, "the late tool", func() bool { _, ok := reg.Get("quiet__late"); return ok })
	srv.RemoveTools("late")
	eventually(t, "its removal", func() bool { _, ok := reg.Get("quiet__late"); return !ok })
	var got []string
	for _, c := range rec.all()[1:] {
		got = append(got, summary(c)...)
	}
	if diff := cmp.Diff([]string{"+quiet__late", "-quiet__late"}, got); diff != "" {
		t.Errorf("changes after the first listing (-want +got):\n%s", diff)
	}
}

// Servers added to, removed from and changed in the configuration file
// are noticed while the manager runs; a broken file changes nothing.
func TestWatchConfigFile(t *testing.T) {
	urlA, urlB := serveHTTP(t, newServer(nil)), serveHTTP(t, newServer(nil))
	path := filepath.Join(t.TempDir(), "mcp.yaml")
	write := func(s string) {
		// Written aside and renamed, as editors do.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("mcpServers:\n  a: {url: " + urlA + "}\n")
	rec := &recorder{}
	m, err := wmcp.Watch(context.Background(), path, testOptions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := m.Registry()
	has := func(name string) bool { _, ok := reg.Get(name); return ok }
	if !has("a__greet") {
		t.Fatalf("tools %v", reg.Names())
	}
	gone, _ := reg.Get("a__greet")

	write("mcpServers:\n  a: {url: " + urlA + "}\n  b: {url: " + urlB + "}\n")
	eventually(t, "server b's tools", func() bool { return has("b__greet") })

	write("mcpServers:\n  a: {url: [broken\n")
	write("mcpServers:\n  b: {url: " + urlB + "}\n")
	eventually(t, "server a's tools to go", func() bool { return !has("a__greet") })
	if !has("b__greet") {
		t.Errorf("server b lost its tools: %v", reg.Names())
	}
	if r, _ := gone.Run(context.Background(), json.RawMessage(`{"name": "x"}`), 0); r.ErrorCode != wmcp.CodeRemoved || !strings.Contains(r.Error, "MCP server a was removed") {
		t.Errorf("a tool of a removed server: %+v", r)
	}

	// A changed configuration restarts the server; its tools are rebuilt
	// with it (here, with a timeout of their own).
	before := len(rec.all())
	write("mcpServers:\n  b: {url: " + urlB + ", timeout: 45s}\n")
	eventually(t, "server b's tools to be rebuilt", func() bool {
		tl, ok := reg.Get("b__greet")
		return ok && tl.Options().Timeout == 45*time.Second
	})
	var kinds []string
	for _, c := range rec.all()[before:] {
		for _, s := range summary(c) {
			kinds = append(kinds, s[:1])
		}
	}
	if slices.Contains(kinds, "-") || slices.Contains(kinds, "+") || !slices.Contains(kinds, "~") {
		t.Errorf("a changed server's tools are updated in place; changes were %v", kinds)
	}

	write(`{"mcpServers": {}}`) // JSON is YAML too
	eventually(t, "every tool to go", func() bool { return len(reg.Names()) == 0 })
}

// A server the configuration now disables has its tools removed by the
// time Reload returns, and OnChange has been told, so nothing about it
// happens after Reload (or a Close right after it).
func TestReloadDisablesServer(t *testing.T) {
	url := serveHTTP(t, newServer(nil))
	rec := &recorder{}
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"a": {URL: url}}}, testOptions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := m.Registry()
	if _, ok := reg.Get("a__greet"); !ok {
		t.Fatalf("tools %v", reg.Names())
	}
	if err := m.Reload(&wmcp.Config{Servers: map[string]wmcp.ServerConfig{"a": {URL: url, Disabled: true}}}); err != nil {
		t.Fatal(err)
	}
	if names := reg.Names(); len(names) != 0 {
		t.Errorf("tools of the disabled server after Reload: %v", names)
	}
	changes := rec.all()
	if len(changes) != 2 || len(changes[1].Removed) == 0 {
		t.Errorf("changes told by the time Reload returned: %d, want the listing and the removal", len(changes))
	}
	if st := state(m, "a"); st != wmcp.StateDisabled {
		t.Errorf("state %s, want disabled", st)
	}
}

// Servers that cannot be reached do not hold up Start, and say why.
func TestUnreachableServers(t *testing.T) {
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	opts := testOptions(nil)
	opts.ConnectTimeout = 300 * time.Millisecond
	cfg := &wmcp.Config{Servers: map[string]wmcp.ServerConfig{
		"missing": {Command: filepath.Join(t.TempDir(), "no-such-server")},
		"silent":  {Command: "sleep", Args: []string{"30"}},
		"closed":  {URL: closed},
		"off":     {Command: "never-run", Disabled: true},
	}}
	m, err := wmcp.Start(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := map[string]string{"closed": "connection refused", "missing": "no-such-server", "silent": "no answer within 300ms"}
	for _, s := range m.Servers() {
		if s.Name == "off" {
			if s.State != wmcp.StateDisabled {
				t.Errorf("off: %+v", s)
			}
			continue
		}
		if s.State != wmcp.StateUnavailable || s.Err == nil || !strings.Contains(s.Err.Error(), want[s.Name]) {
			t.Errorf("%s: state %s, error %v; want unavailable, mentioning %q", s.Name, s.State, s.Err, want[s.Name])
		}
	}
	if n := len(m.Registry().Names()); n != 0 {
		t.Errorf("%d tools from servers that never connected", n)
	}
}

// Tools already in the registry keep their names; an MCP tool that would
// take one is skipped, and the others are added.
func TestSharedRegistry(t *testing.T) {
	mine := tool.New("h__greet", "mine", func(context.Context, struct{}) (string, error) { return "mine", nil })
	reg, err := tool.NewRegistry(mine)
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(nil)
	opts.Registry = reg
	m, err := wmcp.Start(context.Background(), &wmcp.Config{Servers: map[string]wmcp.ServerConfig{"h": {URL: serveHTTP(t, newServer(nil))}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Registry() != reg {
		t.Fatal("the manager made its own registry")
	}
	if tl, _ := reg.Get("h__greet"); tl != mine {
		t.Error("an MCP tool replaced the registry's own")
	}
	if _, ok := reg.Get("h__weather"); !ok {
		t.Errorf("the other tools were not added: %v", reg.Names())
	}
	m.Close()
	if diff := cmp.Diff([]string{"h__greet"}, reg.Names()); diff != "" {
		t.Errorf("after Close (-want +got):\n%s", diff)
	}
}
