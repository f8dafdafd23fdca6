package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weftlabs/weft/bench/internal/dag20"
)

// The benchmark prints a line per latency with every figure filled in;
// its DAG has the shape the docs describe.
func TestRunPrintsLines(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--runs", "1", "--latency", "1ms,0s", "--backends", "memory,sqlite"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("printed %d lines, want 4:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		var r result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Todos != 20 || r.CriticalPath != 7 || r.Runs != 1 || r.ExecMS <= 0 || r.RunMS < r.ExecMS || r.Durability != "async" {
			t.Errorf("result %+v", r)
		}
		if (r.LatencyMS > 0) != (r.ExecRatio > 0) || r.IdealMS != 7*r.LatencyMS {
			t.Errorf("result %+v: ratio and ideal do not follow the latency", r)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--runs", "0"}, {"--latency", "soon"}, {"--backends", "mysql"}, {"--durability", "never"}, {"--nope"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("run %v = %d; want 2", args, code)
		}
	}
}

// The plan's DAG: 20 todos, every todo after the first level depending on
// the level before, so the critical path is the number of levels.
func TestPlanShape(t *testing.T) {
	msg, n := plan()
	var p struct {
		Todos []struct {
			ID        string   `json:"id"`
			DependsOn []string `json:"depends_on"`
		} `json:"todos"`
	}
	if err := json.Unmarshal([]byte(msg.Text()), &p); err != nil {
		t.Fatal(err)
	}
	if n != 20 || len(p.Todos) != 20 {
		t.Fatalf("%d todos", n)
	}
	depth := map[string]int{}
	deepest := 0
	for _, td := range p.Todos {
		d := 1
		for _, dep := range td.DependsOn {
			d = max(d, depth[dep]+1)
		}
		depth[td.ID] = d
		deepest = max(deepest, d)
	}
	if deepest != len(dag20.Levels) {
		t.Errorf("critical path %d, want %d", deepest, len(dag20.Levels))
	}
}
