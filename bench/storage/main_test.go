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
	if r.Backend != "sqlite" || r.Turns != 3 || r.Checkpoints != 15 || r.RawBytes < 3*2048 || r.StoredBytes <= 0 || r.DiskBytes <= r.StoredBytes {
		t.Fatalf("result = %+v; want sqlite, 3 turns, 15 checkpoints, bytes counted, more on disk than in columns", r)
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

// TestProseIsVariedAndRepeatable checks the synthetic conversation: the same
// seed gives the same text, and the text draws on a large vocabulary (the
// old generator had 70 words), so it compresses like prose, not like a list
// of a few dozen words.
func TestProseIsVariedAndRepeatable(t *testing.T) {
	a, b := newProse(7), newProse(7)
	var text strings.Builder
	for range 200 {
		s := a.paragraph(3)
		if s != b.paragraph(3) {
			t.Fatal("two generators with one seed differ")
		}
		text.WriteString(s)
		text.WriteByte(' ')
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(text.String()) {
		words[strings.ToLower(strings.Trim(w, ",.?"))] = true
	}
	if len(words) < 1500 {
		t.Errorf("%d distinct words in %d bytes; want a large vocabulary", len(words), text.Len())
	}
	if r := deflateRatio([]byte(text.String())); r > 3.5 {
		t.Errorf("the text deflates %.2fx; prose deflates about 2.5-3x", r)
	}
}
