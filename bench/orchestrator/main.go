// Command orchestrator measures the orchestrator agent (agent/orchestrator):
// how close its parallel dispatch of a plan's todos comes to the plan's
// critical path, and its own cost per todo.
//
// The plan is a DAG of 20 todos in 7 levels (2, 3, 5, 4, 3, 2 and 1 todos;
// each todo depends on one to three todos of the level before), so its
// critical path is 7 todos long. Every todo runs a stub tool that waits a
// fixed latency. A scripted model plays the model (its replies take no
// time) and every approval point is off, so what is measured is the graph
// runtime, the orchestrator's nodes and the checkpoints.
//
// For each backend (memory, SQLite, PostgreSQL) and each latency it prints
// one JSON line:
//
//	{"case","backend","durability","todos","critical_path","latency_ms","runs",
//	 "exec_ms","ideal_ms","exec_ratio","run_ms","run_ratio","per_todo_ms","exec_min_ms","exec_max_ms"}
//
// exec_ms is the median time from the execution layer's start to the
// response layer's start (every todo dispatched, run and collected), as
// the run's events tell it; ideal_ms is the critical path × the latency,
// exec_ratio their quotient. run_ms is the median whole run: Invoke to
// its return, cognitive, planning and response layers included, and every
// checkpoint saved (the run returns once its saves are done); run_ratio
// is run_ms / ideal_ms. per_todo_ms is the orchestrator's own time per
// todo, (run_ms − ideal_ms) / todos: runtime, checkpoints and the
// scripted model's (negligible) replies.
//
// Usage:
//
//	go run ./bench/orchestrator [--runs 7] [--latency 10ms,0s] [--backends memory,sqlite,postgres] [--durability async] [--postgres URL]
//
// PostgreSQL runs on a database the command creates and drops on the
// server at --postgres (default $WEFT_DATABASE_URL, else the local
// server); without a server it is skipped with a note on stderr.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/bench/internal/dag20"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// result is one output line.
type result struct {
	Case         string  `json:"case"`
	Backend      string  `json:"backend"`
	Durability   string  `json:"durability"`
	Todos        int     `json:"todos"`
	CriticalPath int     `json:"critical_path"`
	LatencyMS    float64 `json:"latency_ms"`
	Runs         int     `json:"runs"`
	ExecMS       float64 `json:"exec_ms"`
	IdealMS      float64 `json:"ideal_ms"`
	ExecRatio    float64 `json:"exec_ratio,omitempty"`
	RunMS        float64 `json:"run_ms"`
	RunRatio     float64 `json:"run_ratio,omitempty"`
	PerTodoMS    float64 `json:"per_todo_ms"`
	ExecMinMS    float64 `json:"exec_min_ms"`
	ExecMaxMS    float64 `json:"exec_max_ms"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("orchestrator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 7, "measured runs per line (one warm-up run more is discarded)")
	latFlag := fs.String("latency", "10ms,0s", "comma-separated stub tool latencies")
	backendsFlag := fs.String("backends", "memory,sqlite,postgres", "comma-separated savers: memory, sqlite, postgres")
	pgURL := fs.String("postgres", defaultPostgres(), "PostgreSQL server to create the benchmark database on")
	durFlag := fs.String("durability", "async", "when checkpoints are saved: async (the default of a run), sync or exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dur := graph.Durability(*durFlag)
	switch dur {
	case graph.DurabilityAsync, graph.DurabilitySync, graph.DurabilityExit:
	default:
		fmt.Fprintf(stderr, "orchestrator: --durability %q: want async, sync or exit\n", *durFlag)
		return 2
	}
	if *runs < 1 {
		fmt.Fprintln(stderr, "orchestrator: --runs takes a positive number")
		return 2
	}
	var lats []time.Duration
	for _, s := range strings.Split(*latFlag, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			fmt.Fprintf(stderr, "orchestrator: --latency takes durations such as 10ms, got %q\n", s)
			return 2
		}
		lats = append(lats, d)
	}
	code := 0
	for _, backend := range strings.Split(*backendsFlag, ",") {
		backend = strings.TrimSpace(backend)
		var (
			saver   *checkpoint.Saver
			cleanup = func() {}
		)
		switch backend {
		case "memory":
			saver = checkpoint.NewMemory()
		case "sqlite":
			dir, err := os.MkdirTemp("", "weft-bench-orchestrator-")
			if err != nil {
				fmt.Fprintln(stderr, "orchestrator:", err)
				return 1
			}
			d, err := sqlite.Open(ctx, filepath.Join(dir, "weft.db"))
			if err != nil {
				os.RemoveAll(dir)
				fmt.Fprintln(stderr, "orchestrator: sqlite:", err)
				return 1
			}
			saver, cleanup = checkpoint.New(d), func() { d.Close(); os.RemoveAll(dir) }
		case "postgres":
			d, drop, err := openPostgres(ctx, *pgURL)
			if err != nil {
				fmt.Fprintf(stderr, "orchestrator: skipping postgres: %v\n", err)
				continue
			}
			saver, cleanup = checkpoint.New(d), func() { d.Close(); drop() }
		default:
			fmt.Fprintf(stderr, "orchestrator: unknown backend %q (known: memory, sqlite, postgres)\n", backend)
			return 2
		}
		for _, lat := range lats {
			res, err := measure(ctx, backend, saver, lat, *runs, dur)
			if err != nil {
				fmt.Fprintf(stderr, "orchestrator: %s, latency %v: %v\n", backend, lat, err)
				code = 1
				continue
			}
			line, _ := json.Marshal(res)
			fmt.Fprintln(stdout, string(line))
		}
		cleanup()
	}
	return code
}

func defaultPostgres() string {
	if u := os.Getenv("WEFT_DATABASE_URL"); strings.HasPrefix(u, "postgres") {
		return u
	}
	return pgtest.DefaultURL
}

// openPostgres creates a database of its own on the server at admin.
func openPostgres(ctx context.Context, admin string) (*postgres.Driver, func(), error) {
	dbURL, drop, err := pgtest.CreateDatabase(ctx, admin, "weft_bench_orch_")
	if err != nil {
		return nil, nil, err
	}
	d, err := postgres.Open(ctx, dbURL)
	if err != nil {
		drop()
		return nil, nil, err
	}
	return d, func() { drop() }, nil
}

// plan is the model's plan: the DAG of levels, a todo per stub call.
func plan() (llm.Message, int) {
	p, n := dag20.PlanJSON("benchmark DAG")
	return llm.AI(p), n
}

// measure runs the plan runs+1 times on fresh threads and keeps the
// medians of the last runs.
func measure(ctx context.Context, backend string, saver *checkpoint.Saver, latency time.Duration, runs int, dur graph.Durability) (result, error) {
	cognition := llm.AI(dag20.Cognition)
	planMsg, todos := plan()
	var execs, totals []float64
	for i := range runs + 1 {
		model := scripted.New(cognition, planMsg, llm.AI("done"))
		a, err := dag20.Agent(saver, model, latency)
		if err != nil {
			return result{}, err
		}
		thread := fmt.Sprintf("bench-%s-%d-%d", backend, latency.Milliseconds(), i)
		var execStart, execEnd time.Time
		done := 0
		start := time.Now()
		for ev, err := range a.Graph.Stream(ctx, orchestrator.Input("run the benchmark plan", ""), &graph.RunOptions{ThreadID: thread,
			StreamModes: []graph.StreamMode{graph.StreamCustom}, Durability: dur}) {
			if err != nil {
				return result{}, err
			}
			e, _ := graph.CustomAs[events.Event](ev)
			switch e := e.(type) {
			case events.LayerStart:
				switch e.Layer {
				case events.LayerExecution:
					execStart = time.Now()
				case events.LayerResponse:
					execEnd = time.Now()
				}
			case events.TodoProgress:
				if e.Status == string(orchestrator.StatusDone) {
					done++
				}
			}
		}
		total := time.Since(start)
		if done != todos {
			return result{}, fmt.Errorf("%d of %d todos done", done, todos)
		}
		if i == 0 {
			continue // warm-up
		}
		execs = append(execs, ms(execEnd.Sub(execStart)))
		totals = append(totals, ms(total))
	}
	slices.Sort(execs)
	slices.Sort(totals)
	r := result{Case: fmt.Sprintf("dag%d_%s", todos, latency), Backend: backend, Durability: string(dur), Todos: todos, CriticalPath: len(dag20.Levels),
		LatencyMS: ms(latency), Runs: runs, ExecMS: median(execs), RunMS: median(totals), ExecMinMS: execs[0], ExecMaxMS: execs[len(execs)-1]}
	r.IdealMS = float64(r.CriticalPath) * r.LatencyMS
	if r.IdealMS > 0 {
		r.ExecRatio = round(r.ExecMS / r.IdealMS)
		r.RunRatio = round(r.RunMS / r.IdealMS)
	}
	r.PerTodoMS = round((r.RunMS - r.IdealMS) / float64(todos))
	return r, nil
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return round((xs[n/2-1] + xs[n/2]) / 2)
}
