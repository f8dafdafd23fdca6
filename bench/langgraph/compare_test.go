package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Without the LangGraph.js peer beside the repository, bench/compare.sh
// fails at once, saying where the peer lives, before it looks for node.
func TestCompareScriptWithoutPeer(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err := os.ReadFile("../compare.sh")
	if err != nil {
		t.Fatal(err)
	}
	// A repository checkout with nothing beside it.
	repo := filepath.Join(t.TempDir(), "weft")
	if err := os.MkdirAll(filepath.Join(repo, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "bench", "compare.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	// A PATH with dirname only: no node, npm or go.
	bin := t.TempDir()
	dirname, err := exec.LookPath("dirname")
	if err != nil {
		t.Skip("no dirname")
	}
	if err := os.Symlink(dirname, filepath.Join(bin, "dirname")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, filepath.Join(repo, "bench", "compare.sh"))
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("compare.sh: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"the LangGraph.js peer benchmark is not at " + repo + "/../shared/bench/langgraphjs", "It lives in ../shared/bench/langgraphjs/", "LANGGRAPHJS_BENCH"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
