package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestRunPrintsOneLine runs a short thread on SQLite: one JSON line with
// every field filled in.
func TestRunPrintsOneLine(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--turns", "3", "--backends", "sqlite"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("printed %d lines; want 1:\n%s", len(lines), out.String())
	}
	var r result
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Backend != "sqlite" || r.Turns != 3 || r.Checkpoints != 15 || r.RawBytes < 3*2048 || r.StoredBytes <= 0 {
		t.Fatalf("result = %+v; want sqlite, 3 turns, 15 checkpoints, bytes counted", r)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--turns", "0"}, {"--backends", "mysql"}, {"--nope"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("run %v = %d; want 2", args, code)
		}
	}
}
