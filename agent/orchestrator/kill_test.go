package orchestrator_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// killChildEnv, set in the re-executed test binary, holds the database
// and call log paths, separated by a newline.
const killChildEnv = "WEFT_ORCHESTRATOR_KILL_CHILD"

const killThread = "kill"

// killAgent is the agent of both processes: t1, then t2 and t3 at the
// same time, then t4 over both. hook runs inside every fetch.
func killAgent(t *testing.T, saver *checkpoint.Saver, log string, model llm.ChatModel, hook func(ctx context.Context, kind string) error) *orchestrator.Agent {
	t.Helper()
	f := &fixture{hook: hook}
	f.calls.log = log
	cfg := orchestrator.DefaultConfig()
	cfg.Approvals.Plan = false
	cfg.Response.NextActions = false
	cfg.Execution.ReactFallback = false
	a, err := orchestrator.New(orchestrator.Options{Config: &cfg, Models: orchestrator.Models{Default: model}, Executors: f.executors(), Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func openSaver(t *testing.T, path string) *checkpoint.Saver {
	t.Helper()
	d, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return checkpoint.New(d)
}

// A process killed with SIGKILL while two todos run (one finished, one
// not) is resumed by another process: the unfinished todo runs again, and
// no todo that finished runs a second time.
func TestKillDuringExecution(t *testing.T) {
	if env := os.Getenv(killChildEnv); env != "" {
		dbPath, log, _ := strings.Cut(env, "\n")
		killChild(t, dbPath, log)
		return
	}
	dir := t.TempDir()
	dbPath, log := filepath.Join(dir, "weft.db"), filepath.Join(dir, "calls.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringExecution$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dbPath+"\n"+log)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	ready := false
	for sc.Scan() {
		if sc.Text() == "KILL ME" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Wait()
		t.Fatalf("the child ended before it was killed:\n%s", stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()

	saver := openSaver(t, dbPath)
	a := killAgent(t, saver, log, scripted.New(llmAnswer("resumed answer")), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The killed run's lease on the thread runs out first.
	st, err := a.Graph.Invoke(ctx, graph.Update{}, &graph.RunOptions{ThreadID: killThread, Busy: graph.BusyWait})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(st); got != "resumed answer" {
		t.Errorf("answer %q", got)
	}
	want := map[string]orchestrator.Status{"t1": "done", "t2": "done", "t3": "done", "t4": "done"}
	if diff := cmp.Diff(want, statuses(st)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Fields(string(data))
	slices.Sort(calls)
	// t3 ("hang") started in the killed process and ran again; t1 and t2
	// had finished there and did not.
	wantCalls := []string{"combine:8", "fetch:fast", "fetch:hang", "fetch:hang", "fetch:one"}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("tool calls across both processes (-want +got):\n%s", diff)
	}
}

// killChild runs the task until t2 has finished (its result stored) and
// t3 is running, says so, and waits to be killed.
func killChild(t *testing.T, dbPath, log string) {
	saver := openSaver(t, dbPath)
	hook := func(ctx context.Context, kind string) error {
		if kind != "hang" {
			return nil
		}
		for {
			tp, err := saver.Get(ctx, checkpoint.Config{ThreadID: killThread})
			if err == nil && tp != nil {
				for _, pw := range tp.PendingWrites {
					if pw.Channel == orchestrator.Results.Name() && strings.Contains(string(pw.Value), `"fast"`) {
						os.Stdout.WriteString("KILL ME\n")
						select {}
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	model := scripted.New(cognition(), plan(fetch("t1", "one"), fetch("t2", "fast", "t1"), fetch("t3", "hang", "t1"), combine("t4", "t2", "t3")))
	a := killAgent(t, saver, log, model, hook)
	_, err := a.Graph.Invoke(context.Background(), orchestrator.Input("go", ""), &graph.RunOptions{ThreadID: killThread, LeaseTTL: 2 * time.Second})
	t.Fatalf("the child's run returned: %v", err)
}
