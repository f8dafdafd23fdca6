package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/rag/eval"
)

// TestRunPrintsEveryFigure runs the command on a small corpus and checks
// each kind of line is there with sane values.
func TestRunPrintsEveryFigure(t *testing.T) {
	// A few queries of each language keep the run short under -race.
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "guide", "kb", "testdata", "queries.json"))
	if err != nil {
		t.Fatal(err)
	}
	var set eval.Set
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	var few eval.Set
	for _, q := range set.Queries {
		if strings.HasSuffix(q.ID, "-01") || strings.HasSuffix(q.ID, "-02") {
			few.Queries = append(few.Queries, q)
		}
	}
	queries := filepath.Join(t.TempDir(), "queries.json")
	if b, err = json.Marshal(few); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(queries, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--chunks", "300", "--searches", "20", "--queries", queries}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var line map[string]any
		if err := dec.Decode(&line); err != nil {
			t.Fatal(err)
		}
		kind := line["bench"].(string)
		kinds[kind]++
		switch kind {
		case "quality":
			if r := line["recall"].(float64); r < 0 || r > 1 {
				t.Errorf("recall %v out of range: %v", r, line)
			}
		case "build", "latency":
			if line["chunks"].(float64) != 300 {
				t.Errorf("corpus of %v chunks, want 300: %v", line["chunks"], line)
			}
		}
	}
	// kb: 3 analyzers × (lexical, score, rrf) + vector once; filler: 4 runs;
	// 4 subsets each.
	if kinds["quality"] != (3*3+1+4)*4 || kinds["build"] != 1 || kinds["latency"] != 3 {
		t.Errorf("lines per kind: %v", kinds)
	}
}
