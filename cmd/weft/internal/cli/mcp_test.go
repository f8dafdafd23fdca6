package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/cmd/weft/internal/cli"
)

// mcpServer serves an MCP server over streamable HTTP for the test and
// returns its URL: greet (text), weather (structured content) and fail
// (isError).
func mcpServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "weft-test", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "weather", Description: "Today's weather."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		City string `json:"city"`
	}) (*mcp.CallToolResult, struct {
		City    string  `json:"city"`
		Celsius float64 `json:"celsius"`
	}, error) {
		return nil, struct {
			City    string  `json:"city"`
			Celsius float64 `json:"celsius"`
		}{in.City, 21.5}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("the disk is full")
	})
	h := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(h.Close)
	return h.URL
}

// mcpConfig writes a configuration file with the servers given as
// name → URL.
func mcpConfig(t *testing.T, servers map[string]string) string {
	t.Helper()
	cfg := map[string]map[string]any{"mcpServers": {}}
	for name, url := range servers {
		cfg["mcpServers"][name] = map[string]string{"url": url}
	}
	b, _ := json.Marshal(cfg)
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String() + "/mcp"
}

func TestMCPTools(t *testing.T) {
	cfg := mcpConfig(t, map[string]string{"t": mcpServer(t)})
	out, _, err := execute(t, "mcp", "tools", "--mcp-config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "stdout", out,
		"t (http, connected, weft-test 1.0.0): 3 tools\n",
		"  t__greet\n    Greets someone.\n    input: {", `"who to greet"`,
		"  t__weather\n", "    output: {",
	)

	out, _, err = execute(t, "mcp", "tools", "--mcp-config", cfg, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Server, Transport, State string
		Tools                    []struct {
			Name        string          `json:"name"`
			ServerTool  string          `json:"server_tool"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var names []string
	for _, tl := range list[0].Tools {
		names = append(names, tl.Name+"="+tl.ServerTool)
	}
	if len(list) != 1 || list[0].State != "connected" || list[0].Transport != "http" {
		t.Errorf("servers: %+v", list)
	}
	if diff := cmp.Diff([]string{"t__fail=fail", "t__greet=greet", "t__weather=weather"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	// A server that cannot be reached is listed with its reason, and
	// fails the command.
	cfg = mcpConfig(t, map[string]string{"t": mcpServer(t), "down": closedURL(t)})
	out, _, err = execute(t, "mcp", "tools", "--mcp-config", cfg)
	if err == nil || cli.ExitCode(err) != cli.ExitError || !strings.Contains(err.Error(), "1 of 2 MCP servers unavailable: down (") {
		t.Errorf("err = %v", err)
	}
	inOrder(t, "stdout", out, "down (http, unavailable): ", "connection refused", "t (http, connected")
}

func TestMCPCall(t *testing.T) {
	cfg := mcpConfig(t, map[string]string{"t": mcpServer(t), "down": closedURL(t)})
	type envelope struct {
		Success   bool           `json:"success"`
		Data      any            `json:"data"`
		ErrorCode string         `json:"error_code"`
		Error     string         `json:"error"`
		Meta      map[string]any `json:"meta"`
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        envelope
		exit        int
		errHas      string
	}{
		{name: "text", args: []string{"t", "greet", `{"name": "Ada"}`},
			want: envelope{Success: true, Data: "hello Ada", Meta: map[string]any{"mcp_server": "t", "mcp_tool": "greet"}}},
		{name: "arguments from stdin", args: []string{"t", "greet", "-"}, stdin: `{"name": "stdin"}`,
			want: envelope{Success: true, Data: "hello stdin", Meta: map[string]any{"mcp_server": "t", "mcp_tool": "greet"}}},
		{name: "structured content", args: []string{"t", "weather", `{"city": "Seoul"}`},
			want: envelope{Success: true, Data: map[string]any{"city": "Seoul", "celsius": 21.5}, Meta: map[string]any{"mcp_server": "t", "mcp_tool": "weather"}}},
		{name: "isError", args: []string{"t", "fail"},
			want: envelope{ErrorCode: "tool_error", Error: "the disk is full", Meta: map[string]any{"mcp_server": "t", "mcp_tool": "fail"}},
			exit: cli.ExitToolFailed, errHas: "t fail: error tool_error: the disk is full"},
		{name: "invalid arguments", args: []string{"t", "greet", `{"name": 7}`},
			want: envelope{ErrorCode: "invalid_arguments"},
			exit: cli.ExitToolFailed, errHas: "invalid_arguments"},
		{name: "unknown tool", args: []string{"t", "gret", `{}`}, exit: cli.ExitError, errHas: `no tool "gret"; its tools: fail, greet, weather`},
		{name: "unknown server", args: []string{"x", "greet"}, exit: cli.ExitError, errHas: `no MCP server "x" in ` + cfg + "; its servers: down, t"},
		{name: "server down", args: []string{"down", "greet"}, exit: cli.ExitError, errHas: "MCP server down: unavailable: "},
		{name: "not an object", args: []string{"t", "greet", `["Ada"]`}, exit: cli.ExitError, errHas: "not a JSON object"},
	} {
		out, _, err := executeIn(t, tc.stdin, append([]string{"mcp", "call", "--mcp-config", cfg}, tc.args...)...)
		if got := cli.ExitCode(err); got != tc.exit || tc.errHas != "" && !strings.Contains(fmt.Sprint(err), tc.errHas) {
			t.Errorf("%s: exit %d, err %v; want exit %d, mentioning %q", tc.name, got, err, tc.exit, tc.errHas)
		}
		if tc.exit == cli.ExitError {
			if out != "" {
				t.Errorf("%s: printed %q", tc.name, out)
			}
			continue
		}
		var got envelope
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v:\n%s", tc.name, err, out)
		}
		if tc.want.ErrorCode == "invalid_arguments" {
			got.Error, got.Meta = "", nil
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// weft run --mcp-config gives the example agents the MCP tools besides
// their own.
func TestRunWithMCPTools(t *testing.T) {
	runEnv(t)
	cfg := mcpConfig(t, map[string]string{"t": mcpServer(t), "down": closedURL(t)})
	for _, tc := range []struct{ agent, script string }{
		{"career", `
- tool_calls: [{name: t__greet, args: {name: "지민"}}, {name: get_learning_path, args: {career: "UX 디자이너"}}]
- content: "인사와 학습 경로를 찾았어요."
`},
		{"travel", `
- tool_calls: [{name: t__weather, args: {city: "제주"}}, {name: recommend_popular_places_in_region, args: {region: "제주", category: "관광지", limit: 1}}]
- content: "제주 날씨와 관광지를 찾았어요."
`},
	} {
		out, info, err := execute(t, "run", "--agent", tc.agent, "--mcp-config", cfg, "--model", writeScript(t, tc.script), "제주 인기 관광지 날씨와 UX 디자이너 학습 경로를 알려 주세요")
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.agent, err, info)
		}
		if !strings.Contains(out, "찾았어요.") {
			t.Errorf("%s: stdout %q", tc.agent, out)
		}
		wants := map[string][]string{
			"career": {"· MCP server down: unavailable: ", "· MCP server t: 3 tools\n", `→ t__greet({"name":"지민"})`, `← t__greet: ok "hello 지민"`, "← get_learning_path: ok "},
			"travel": {"· MCP server down: unavailable: ", "· MCP server t: 3 tools\n", `→ t__weather({"city":"제주"})`, "← t__weather: ok {2 fields}\n", "← recommend_popular_places_in_region: ok "},
		}[tc.agent]
		inOrder(t, tc.agent+" stderr", info, wants...)
	}

	// A configuration that cannot be read stops the run before the model.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("mcpServers:\n  fs: {comand: npx}\n"), 0o600)
	_, _, err := execute(t, "run", "--agent", "career", "--mcp-config", bad, "--model", writeScript(t, "- content: unused"), "안녕")
	if err == nil || !strings.Contains(err.Error(), `--mcp-config: `+bad+`: mcp: invalid configuration: mcpServers.fs: unknown key "comand"`) {
		t.Errorf("bad configuration: %v", err)
	}

	// The orchestrator agent takes its tools from its own configuration:
	// the flag is refused rather than ignored.
	_, _, err = execute(t, "run", "--agent", "marketing", "--mcp-config", cfg, "--model", writeScript(t, "- content: unused"), "안녕")
	if err == nil || cli.ExitCode(err) != cli.ExitError || !strings.Contains(err.Error(), "--mcp-config works with the ReAct agents, not with marketing") {
		t.Errorf("--mcp-config with the orchestrator agent: %v", err)
	}
}
