package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/checkpointtest"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/graph"
)

// childEnv, when set, names the database the child process runs on.
const childEnv = "WEFT_TEST_KILL_CHILD_DB"

// crashCode is the exit code of a child that stopped where it should.
const crashCode = 3

var msgs = checkpointtest.Messages

func say(text string, calls *atomic.Int64) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		calls.Add(1)
		return msgs.Write(checkpointtest.Msg{Text: text}), nil
	}
}

// killGraph: START -> a -> (writer, crasher in one step) -> after. In the
// child, crasher ends the process once writer's result is committed, when
// the last human message asks for it.
func killGraph(t testing.TB, saver *checkpoint.Saver, counts map[string]*atomic.Int64, child bool) *graph.Graph {
	crasher := func(ctx context.Context, s graph.State) (graph.Update, error) {
		counts["crasher"].Add(1)
		ms := msgs.Get(s)
		if child && ms[len(ms)-2].Text == "crash now" {
			// Wait until writer's pending write is in the file, then die
			// without unwinding anything: no deferred call, no Close.
			for range 4000 {
				tp, err := saver.Get(ctx, checkpoint.Config{ThreadID: "k"})
				if err == nil && tp != nil {
					for _, pw := range tp.PendingWrites {
						if strings.Contains(string(pw.Value), "written") {
							os.Exit(crashCode)
						}
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			os.Exit(crashCode + 1)
		}
		return msgs.Write(checkpointtest.Msg{Text: "crasher"}), nil
	}
	g, err := graph.New(msgs).AddNode(
		"a", say("a", counts["a"]), nil).AddNode(

		"writer", say("written", counts["writer"]), nil).AddNode(

		"crasher", crasher, nil).AddNode(

		"after", say("after", counts["after"]), nil).
		AddEdge(graph.START, "a").AddEdge("a", "writer").AddEdge("a", "crasher").
		AddJoin([]string{"writer", "crasher"}, "after").Compile(&graph.CompileOptions{Checkpointer: saver})

	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newCounts() map[string]*atomic.Int64 {
	m := map[string]*atomic.Int64{}
	for _, n := range []string{"a", "writer", "crasher", "after"} {
		m[n] = new(atomic.Int64)
	}
	return m
}

// TestKillMidSuperstep runs a graph in a child process that exits hard in
// the middle of a superstep, after one task of the step has finished, then
// opens the file and continues the thread: nothing committed is lost and
// the finished task is not run again.
func TestKillMidSuperstep(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		runChild(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "weft.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidSuperstep$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != crashCode {
		t.Fatalf("child process: %v (want exit code %d)\n%s", err, crashCode, out)
	}

	ctx := context.Background()
	d, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	saver := checkpoint.New(d)
	counts := newCounts()
	g := killGraph(t, saver, counts, false)

	// The first turn, finished in the child, is all there.
	turn1 := "one,a,crasher,written,after"
	var found bool
	for snap, err := range g.GetStateHistory(ctx, "k", nil) {
		if err != nil {
			t.Fatal(err)
		}
		if texts(snap) == turn1 && len(snap.Next) == 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("the first turn's final checkpoint is missing after the crash")
	}
	// The thread stopped after a, with writer's result saved.
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := saver.Get(ctx, checkpoint.Config{ThreadID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var saved []checkpointtest.Msg
	if err := json.Unmarshal(tp.Checkpoint.Values["messages"], &saved); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range saved {
		got = append(got, m.Text)
	}
	if strings.Join(got, ",") != turn1+",crash now,a" {
		t.Fatalf("last checkpoint after the crash holds %v; want %s,crash now,a", got, turn1)
	}
	if fmt.Sprint(snap.Next) != "[crasher]" {
		t.Fatalf("next after the crash = %v; want [crasher] (writer finished before the crash)", snap.Next)
	}
	var done []string
	for _, ts := range snap.Tasks {
		if ts.Result != nil {
			done = append(done, ts.Name)
		}
	}
	if fmt.Sprint(done) != "[writer]" {
		t.Fatalf("tasks with saved results after the crash: %v; want [writer]", done)
	}

	// Continue the thread in this process. The child died owning the
	// thread: this run waits until its lease expires, then takes over.
	st, err := g.Invoke(ctx, graph.Update{}, &graph.RunOptions{ThreadID: "k", Busy: graph.BusyWait})
	if err != nil {
		t.Fatal(err)
	}
	if want := turn1 + ",crash now,a,crasher,written,after"; texts2(st) != want {
		t.Fatalf("after continuing: %s; want %s", texts2(st), want)
	}
	if counts["writer"].Load() != 0 || counts["crasher"].Load() != 1 || counts["a"].Load() != 0 {
		t.Fatalf("ran writer %d, crasher %d, a %d times after the crash; want 0, 1, 0", counts["writer"].Load(), counts["crasher"].Load(), counts["a"].Load())
	}
}

func runChild(t *testing.T, path string) {
	ctx := context.Background()
	d, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.New(d)
	g := killGraph(t, saver, newCounts(), true)
	// A short lease, so that the parent does not wait long once this
	// process is gone.
	opts := graph.RunOptions{ThreadID: "k", LeaseTTL: time.Second}
	if _, err := g.Invoke(ctx, msgs.Write(checkpointtest.Msg{Text: "one"}), &opts); err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(ctx, msgs.Write(checkpointtest.Msg{Text: "crash now"}), &opts)
	t.Fatalf("the run that should have crashed returned: %v", err)
}

func texts(s graph.StateSnapshot) string { return texts2(s.Values) }

func texts2(s graph.State) string {
	var out []string
	for _, m := range msgs.Get(s) {
		out = append(out, m.Text)
	}
	return strings.Join(out, ",")
}

func openShared(t testing.TB, path string) *checkpoint.Saver {
	d, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return checkpoint.New(d)
}

func tempDB(t *testing.T) string { return filepath.Join(t.TempDir(), "weft.db") }

// 100 runs on one thread from 4 processes at once: no turn is lost.
func TestOwnershipAcrossProcesses(t *testing.T) {
	checkpointtest.OwnershipAcrossProcesses(t, tempDB, openShared)
}

// A run killed with SIGKILL while it owns a thread blocks it only until
// its lease expires.
func TestKilledHolder(t *testing.T) {
	checkpointtest.KilledHolder(t, tempDB, openShared)
}
