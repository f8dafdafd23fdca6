package checkpointtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// processEnv, set in a re-executed test binary, holds the child's part as
// JSON (a childSpec).
const processEnv = "WEFT_CHECKPOINTTEST_PROCESS"

// Opener opens a saver on a database target (a file path or a connection
// string) that several processes share.
type Opener func(t testing.TB, target string) *checkpoint.Saver

type childSpec struct {
	Role   string            `json:"role"` // "runs" or "hold"
	Target string            `json:"target"`
	Thread string            `json:"thread"`
	Busy   graph.BusyPolicy  `json:"busy,omitempty"`
	Dur    graph.Durability  `json:"durability,omitempty"`
	Proc   int               `json:"proc"`
	Runs   int               `json:"runs,omitempty"`
	Extra  map[string]string `json:"extra,omitempty"`
}

// childResult is one run's outcome, printed by a child on a line of its
// own after resultPrefix.
type childResult struct {
	ID     string `json:"id"`
	Result string `json:"result"` // "ok", "busy" or the error
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

const resultPrefix = "CHECKPOINTTEST-RESULT "

// child reports whether this process is a child, and if so plays its
// part.
func child(t *testing.T, open Opener) bool {
	raw := os.Getenv(processEnv)
	if raw == "" {
		return false
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatalf("%s: %v", processEnv, err)
	}
	s := open(t, spec.Target)
	switch spec.Role {
	case "runs":
		childRuns(t, s, spec)
	case "hold":
		childHold(t, s, spec)
	default:
		t.Fatalf("unknown child role %q", spec.Role)
	}
	return true
}

// childRuns waits for "go" on stdin, then starts its runs at once.
func childRuns(t *testing.T, s *checkpoint.Saver, spec childSpec) {
	g := OwnershipGraph(t, s)
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start signal: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg, 4*waitBound)
	defer cancel()
	results := make([]childResult, spec.Runs)
	var wg sync.WaitGroup
	for i := range spec.Runs {
		wg.Go(func() {
			id := fmt.Sprintf("p%dr%d", spec.Proc, i)
			r := childResult{ID: id, Start: time.Now().UnixNano()}
			_, err := g.Invoke(ctx, RunInput(id), &graph.RunOptions{ThreadID: spec.Thread, Busy: spec.Busy, Durability: spec.Dur})
			r.End = time.Now().UnixNano()
			switch {
			case err == nil:
				r.Result = "ok"
			case errors.Is(err, checkpoint.ErrThreadBusy) && spec.Busy != graph.BusyWait:
				r.Result = "busy"
			default:
				r.Result = err.Error()
			}
			results[i] = r
		})
	}
	wg.Wait()
	for _, r := range results {
		b, _ := json.Marshal(r)
		fmt.Println(resultPrefix + string(b))
	}
}

// childHold starts a run whose first node says HOLDING and never returns:
// the process is killed while it owns the thread.
func childHold(t *testing.T, s *checkpoint.Saver, spec childSpec) {
	ttl, err := time.ParseDuration(spec.Extra["ttl"])
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.New(Turns, who).AddNode(
		"a", func(ctx context.Context, st graph.State) (graph.Update, error) {
			fmt.Println("HOLDING")
			select {}
		}, nil).AddNode(

		"b", func(ctx context.Context, st graph.State) (graph.Update, error) { return graph.Update{}, nil }, nil).AddNode(

		"c", func(ctx context.Context, st graph.State) (graph.Update, error) { return graph.Update{}, nil }, nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(&graph.CompileOptions{Checkpointer: s})

	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(bg, RunInput("dead"), &graph.RunOptions{ThreadID: spec.Thread, LeaseTTL: ttl, Durability: graph.DurabilitySync})
	t.Fatalf("the holding run returned: %v", err)
}

// startChild re-executes the running test in a child process with spec.
func startChild(t *testing.T, spec childSpec) (*exec.Cmd, io.WriteCloser, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), processEnv+"="+string(b))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Never leave a child behind.
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	return cmd, stdin, sc, stderr
}

// readUntil reads lines until one equals want; it reports the lines seen.
func readUntil(sc *bufio.Scanner, want string) (bool, []string) {
	var seen []string
	for sc.Scan() {
		if sc.Text() == want {
			return true, seen
		}
		seen = append(seen, sc.Text())
	}
	return false, seen
}

// OwnershipAcrossProcesses runs 100 invocations of OwnershipGraph on one
// thread at once, 25 from each of 4 processes (the test binary run again),
// in both busy modes. Every run that reports success has its whole turn in
// the thread's final state; in fail mode every other run got
// ErrThreadBusy and wrote nothing; in wait mode all succeed. It logs the
// throughput in runs per second.
//
// Call it from a top-level test, which the child processes run again:
// there it plays the child's part. target is called only in the parent.
func OwnershipAcrossProcesses(t *testing.T, target func(t *testing.T) string, open Opener) {
	if child(t, open) {
		return
	}
	tgt := target(t)
	s := open(t, tgt)
	g := OwnershipGraph(t, s)
	const procs, runs = 4, 25
	for _, busy := range []graph.BusyPolicy{graph.BusyFail, graph.BusyWait} {
		thread := "procs-" + string(busy)
		// In wait mode the 100 runs take turns: durability "exit" (one
		// save per run) keeps the test quick under -race. Durability
		// modes are covered by GraphOneWriterPerThread.
		dur := graph.DurabilityAsync
		if busy == graph.BusyWait {
			dur = graph.DurabilityExit
		}
		type proc struct {
			cmd    *exec.Cmd
			stdin  io.WriteCloser
			sc     *bufio.Scanner
			stderr *strings.Builder
		}
		var ps []proc
		for i := range procs {
			cmd, stdin, sc, stderr := startChild(t, childSpec{Role: "runs", Target: tgt, Thread: thread, Busy: busy, Dur: dur, Proc: i, Runs: runs})
			ps = append(ps, proc{cmd, stdin, sc, stderr})
		}
		for i, p := range ps {
			if ok, seen := readUntil(p.sc, "READY"); !ok {
				p.cmd.Wait()
				t.Fatalf("child %d did not start: %v\n%s", i, seen, p.stderr)
			}
		}
		for _, p := range ps {
			fmt.Fprintln(p.stdin, "go")
		}
		var ok, failed []string
		var first, last int64
		for i, p := range ps {
			n := 0
			var other []string
			for p.sc.Scan() {
				line := p.sc.Text()
				rest, isResult := strings.CutPrefix(line, resultPrefix)
				if !isResult {
					other = append(other, line)
					continue
				}
				var r childResult
				if err := json.Unmarshal([]byte(rest), &r); err != nil {
					t.Fatal(err)
				}
				n++
				if first == 0 || r.Start < first {
					first = r.Start
				}
				last = max(last, r.End)
				switch r.Result {
				case "ok":
					ok = append(ok, r.ID)
				case "busy":
					failed = append(failed, r.ID)
				default:
					t.Errorf("run %s: %s", r.ID, r.Result)
				}
			}
			if err := p.cmd.Wait(); err != nil || n != runs {
				t.Fatalf("child %d: %v, %d results of %d\n%s\n%s", i, err, n, runs, strings.Join(other, "\n"), p.stderr)
			}
		}
		if len(ok) == 0 {
			t.Fatalf("%s mode: no run succeeded", busy)
		}
		if busy == graph.BusyWait && len(ok) != procs*runs {
			t.Fatalf("wait mode: %d of %d runs succeeded; want all", len(ok), procs*runs)
		}
		st, err := g.GetState(bg, checkpoint.Config{ThreadID: thread}, nil)
		if err != nil {
			t.Fatal(err)
		}
		CheckTurns(t, Turns.Get(st.Values), ok, failed)
		secs := time.Duration(last - first).Seconds()
		t.Logf("%s mode, durability %s: %d runs from %d processes answered in %.2fs (%.1f runs/s): %d succeeded (%.1f/s), %d got ErrThreadBusy",
			busy, dur, procs*runs, procs, secs, float64(procs*runs)/secs, len(ok), float64(len(ok))/secs, len(failed))
	}
}

// KilledHolder kills (SIGKILL) a child process while its run owns a
// thread, then runs on the thread here: the run waits for the dead
// holder's lease to expire and takes the thread over.
//
// Call it from a top-level test, which the child process runs again.
func KilledHolder(t *testing.T, target func(t *testing.T) string, open Opener) {
	if child(t, open) {
		return
	}
	tgt := target(t)
	s := open(t, tgt)
	// Long enough that the thread is still held when this process tries
	// it, short enough to keep the test quick.
	const ttl = 4 * time.Second
	cmd, _, sc, stderr := startChild(t, childSpec{Role: "hold", Target: tgt, Thread: "k", Extra: map[string]string{"ttl": ttl.String()}})
	if ok, seen := readUntil(sc, "HOLDING"); !ok {
		cmd.Wait()
		t.Fatalf("the child never held the thread: %v\n%s", seen, stderr)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	g := OwnershipGraph(t, s)
	_, err := g.Invoke(bg, RunInput("next"), &graph.RunOptions{ThreadID: "k"})
	if !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("a fail-fast run right after the kill: %v; want ErrThreadBusy (the dead holder's lease has not expired)", err)
	}
	ctx, cancel := context.WithTimeout(bg, waitBound)
	defer cancel()
	if _, err := g.Invoke(ctx, RunInput("next"), &graph.RunOptions{ThreadID: "k", Busy: graph.BusyWait}); err != nil {
		t.Fatalf("the run after the holder was killed: %v", err)
	}
	st, err := g.GetState(bg, checkpoint.Config{ThreadID: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	turns := Turns.Get(st.Values)
	want := "[next:in next:a next:b next:c]"
	if len(turns) < 4 || fmt.Sprint(turns[len(turns)-4:]) != want {
		t.Fatalf("final turns %v; want them to end with %s", turns, want)
	}
}
