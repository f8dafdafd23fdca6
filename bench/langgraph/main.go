// Command langgraph runs the graph shapes of LangGraph's own benchmark suite
// (libs/langgraph/bench in the LangGraph repository) on weft, side by side
// with ../shared/bench/langgraphjs/bench.mjs, which runs the same cases on
// LangGraph.js.
//
// Each case drains the updates stream of a run with durability exit, a fresh
// thread id per run and a recursion limit of 1e9, as LangGraph's harness
// does. The graph and its input are built before each run, outside the timed
// region. The first run is a discarded warm-up; then --runs N timed runs.
//
// Usage:
//
//	go run ./bench/langgraph [--runs N] [--cases a,b,c] [--cpuprofile FILE] [--memprofile FILE] [--trace FILE] [--list]
//
// It prints one JSON object per case, as bench.mjs does, plus allocation
// figures averaged over the timed runs:
//
//	{"case","runs","events","median_ms","min_ms","max_ms","allocs_per_op","bytes_per_op"}
//
// A case whose event count differs from LangGraph.js's makes the command
// exit 1 (after printing its line); an unknown case name exits 2.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/graph"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// result is one output line; the first six fields match bench.mjs.
type result struct {
	Case        string  `json:"case"`
	Runs        int     `json:"runs"`
	Events      int     `json:"events"`
	MedianMS    float64 `json:"median_ms"`
	MinMS       float64 `json:"min_ms"`
	MaxMS       float64 `json:"max_ms"`
	AllocsPerOp uint64  `json:"allocs_per_op"`
	BytesPerOp  uint64  `json:"bytes_per_op"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("langgraph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 7, "timed runs per case, after one discarded warm-up run")
	only := fs.String("cases", "", "comma-separated case names to run (default: all, in the order of bench.mjs)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the selected cases to `file`")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the selected cases to `file`")
	traceFile := fs.String("trace", "", "write an execution trace of the selected cases to `file` (go tool trace)")
	list := fs.Bool("list", false, "print the case names, one per line, and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "langgraph: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *runs < 1 {
		fmt.Fprintf(stderr, "langgraph: --runs must be at least 1, got %d\n", *runs)
		return 2
	}
	selected, err := selectCases(cases(false), *only)
	if err != nil {
		fmt.Fprintf(stderr, "langgraph: %v\n", err)
		return 2
	}
	if *list {
		for _, c := range selected {
			fmt.Fprintln(stdout, c.name)
		}
		return 0
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "langgraph: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "langgraph: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			f, err := os.Create(*memProfile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(stderr, "langgraph: memprofile: %v\n", err)
			}
		}()
	}

	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			fmt.Fprintf(stderr, "langgraph: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			fmt.Fprintf(stderr, "langgraph: %v\n", err)
			return 1
		}
		defer trace.Stop()
	}

	status := 0
	enc := json.NewEncoder(stdout)
	for _, c := range selected {
		res, err := measure(ctx, c, *runs)
		if err != nil {
			fmt.Fprintf(stderr, "langgraph: case %s: %v\n", c.name, err)
			return 1
		}
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "langgraph: %v\n", err)
			return 1
		}
		if res.Events != c.events {
			fmt.Fprintf(stderr, "langgraph: case %s streamed %d events; LangGraph.js streams %d\n", c.name, res.Events, c.events)
			status = 1
		}
	}
	return status
}

// selectCases picks the cases named in the comma-separated list, in the
// list's order; an empty list selects all.
func selectCases(all []benchCase, list string) ([]benchCase, error) {
	if list == "" {
		return all, nil
	}
	var out []benchCase
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(c benchCase) bool { return c.name == name })
		if i < 0 {
			names := make([]string, len(all))
			for j, c := range all {
				names[j] = c.name
			}
			return nil, fmt.Errorf("unknown case %q; valid cases: %s", name, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// measure runs a case once to warm up, then runs times, and reports the
// times of the timed runs and their allocations per run.
func measure(ctx context.Context, c benchCase, runs int) (result, error) {
	times := make([]float64, 0, runs)
	var events int
	var allocs, bytes uint64
	var before, after runtime.MemStats
	// Start each case from a collected heap, as go test -bench does before
	// every benchmark, so one case's garbage is not collected on the next
	// case's clock. Runs within a case are not separated: each pays for its
	// own garbage, as in the peer's harness.
	runtime.GC()
	for i := range runs + 1 {
		g, in, err := c.build()
		if err != nil {
			return result{}, fmt.Errorf("building the graph: %w", err)
		}
		timed := i > 0
		if timed {
			runtime.ReadMemStats(&before)
		}
		// Each run is a region of the --trace output, named by its case.
		region := trace.StartRegion(ctx, c.name)
		t0 := time.Now()
		n, err := drain(ctx, g, in)
		elapsed := time.Since(t0)
		region.End()
		if timed {
			runtime.ReadMemStats(&after)
			allocs += after.Mallocs - before.Mallocs
			bytes += after.TotalAlloc - before.TotalAlloc
			times = append(times, float64(elapsed.Nanoseconds())/1e6)
		}
		if err != nil {
			return result{}, fmt.Errorf("run %d: %w", i, err)
		}
		events = n
	}
	slices.Sort(times)
	return result{
		Case:        c.name,
		Runs:        runs,
		Events:      events,
		MedianMS:    round3(times[len(times)/2]),
		MinMS:       round3(times[0]),
		MaxMS:       round3(times[len(times)-1]),
		AllocsPerOp: allocs / uint64(runs),
		BytesPerOp:  bytes / uint64(runs),
	}, nil
}

// round3 rounds to three decimals, like JavaScript's toFixed(3).
func round3(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// drain streams one run of g in updates mode and counts its events.
func drain(ctx context.Context, g *graph.Graph, in graph.Update) (int, error) {
	n := 0
	opts := graph.RunOptions{
		ThreadID:       uuid.NewString(),
		RecursionLimit: 1_000_000_000,
		StreamModes:    []graph.StreamMode{graph.StreamUpdates},
		Durability:     graph.DurabilityExit,
	}
	for _, err := range g.Stream(ctx, in, &opts) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
