package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// jsEvents is what bench.mjs streams per case on LangGraph.js, in its order
// (/work/notes/langgraphjs-baseline.jsonl).
var jsEvents = []struct {
	name   string
	events int
}{
	{"sequential_10", 10},
	{"sequential_1000", 1000},
	{"fanout_to_subgraph_10x", 10},
	{"fanout_to_subgraph_10x_checkpoint", 10},
	{"fanout_to_subgraph_100x", 100},
	{"fanout_to_subgraph_100x_checkpoint", 100},
	{"react_agent_10x", 21},
	{"react_agent_10x_checkpoint", 21},
	{"react_agent_100x", 201},
	{"react_agent_100x_checkpoint", 201},
	{"wide_dict_25x300", 36},
	{"wide_dict_25x300_checkpoint", 36},
	{"wide_dict_15x600", 42},
	{"wide_dict_15x600_checkpoint", 42},
	{"wide_dict_9x1200", 42},
	{"wide_dict_9x1200_checkpoint", 42},
}

func TestCasesMatchLangGraphJS(t *testing.T) {
	for _, small := range []bool{false, true} {
		cs := cases(small)
		if len(cs) != len(jsEvents) {
			t.Fatalf("small=%v: %d cases, bench.mjs has %d", small, len(cs), len(jsEvents))
		}
		for i, want := range jsEvents {
			if cs[i].name != want.name {
				t.Errorf("small=%v: case %d is %q, bench.mjs has %q", small, i, cs[i].name, want.name)
			}
			if !small && cs[i].events != want.events {
				t.Errorf("case %s expects %d events, LangGraph.js streams %d", want.name, cs[i].events, want.events)
			}
		}
	}
}

// TestSmallCases runs every case once (a warm-up and one timed run, as
// --runs 1 does) on small sizes, and checks the events it streams.
func TestSmallCases(t *testing.T) {
	for _, c := range cases(true) {
		t.Run(c.name, func(t *testing.T) {
			res, err := measure(context.Background(), c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Events != c.events {
				t.Errorf("streamed %d events, want %d", res.Events, c.events)
			}
			if res.Runs != 1 || res.MinMS > res.MedianMS || res.MedianMS > res.MaxMS || res.AllocsPerOp == 0 {
				t.Errorf("implausible result %+v", res)
			}
		})
	}
}

func TestOutputLine(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"--runs", "1", "--cases", "sequential_10"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line, got %q", out.String())
	}
	// The keys of bench.mjs's line, in its order, then the allocation figures.
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"case", "runs", "events", "median_ms", "min_ms", "max_ms", "allocs_per_op", "bytes_per_op"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	var res result
	if err := json.Unmarshal([]byte(lines[0]), &res); err != nil {
		t.Fatal(err)
	}
	if res.Case != "sequential_10" || res.Runs != 1 || res.Events != 10 {
		t.Errorf("line %s", lines[0])
	}
}

func TestBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"--cases", "sequential_10,nope"}, &out, &errs); code != 2 {
		t.Errorf("unknown case: exit %d, want 2", code)
	}
	if msg := errs.String(); !strings.Contains(msg, `"nope"`) || !strings.Contains(msg, "wide_dict_9x1200_checkpoint") {
		t.Errorf("unknown case message does not name the case and list the valid ones: %s", msg)
	}
	if out.Len() != 0 {
		t.Errorf("unknown case ran something: %s", out.String())
	}
	errs.Reset()
	if code := run(context.Background(), []string{"--runs", "0"}, &out, &errs); code != 2 {
		t.Errorf("--runs 0: exit %d, want 2", code)
	}
}

func TestList(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"--list"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	names := strings.Fields(out.String())
	if len(names) != len(jsEvents) || names[0] != jsEvents[0].name || names[len(names)-1] != jsEvents[len(jsEvents)-1].name {
		t.Errorf("--list printed %q", out.String())
	}
}

// TestFanoutSubjectsAsInBenchMJS checks that fanout does bench.mjs's work:
// each subject is a list of 1,000 one-letter strings (stored as such in the
// parent's checkpoint), which the subgraph joins with commas.
func TestFanoutSubjectsAsInBenchMJS(t *testing.T) {
	g, in, err := fanoutToSubgraph(3, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Invoke(context.Background(), in, &graph.RunOptions{ThreadID: "fanout"})
	if err != nil {
		t.Fatal(err)
	}
	subjects := fanSubjects.Get(st)
	if len(subjects) != 3 {
		t.Fatalf("%d subjects, want 3", len(subjects))
	}
	for _, s := range subjects {
		if len(s) != 1000 || len(s[0]) != 1 {
			t.Fatalf("a subject is %d strings of %d letters; want 1,000 one-letter strings", len(s), len(s[0]))
		}
	}
	jokes := fanJokes.Get(st)
	if len(jokes) != 3 {
		t.Fatalf("%d jokes, want 3", len(jokes))
	}
	// "Joke about " + 1,000 letters joined by commas + " - hohoho" + ten " a".
	want := len("Joke about ") + 1999 + len(" - hohoho") + 20
	for _, j := range jokes {
		if len(j) != want || !strings.HasPrefix(j, "Joke about ") || j[12] != ',' {
			t.Errorf("joke of %d bytes starting %.20q; want %d bytes, letters joined by commas", len(j), j, want)
		}
	}
}
