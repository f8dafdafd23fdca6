package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/weftlabs/weft/internal/chromium"
)

// The command runs end to end and reports every figure (their values are
// for a quiet machine to measure, not for a test to judge).
func TestRun(t *testing.T) {
	if chromium.Path() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is missing: CI must install it (.ci/run installs Debian's chromium)")
		}
		t.Skip("Chromium is missing")
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"--runs", "2", "--latency", "5ms"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not the report: %v\n%s", err, out.String())
	}
	if len(r.FirstToken.Samples) != 2 {
		t.Errorf("%d first-token samples, want 2", len(r.FirstToken.Samples))
	}
	for _, s := range r.FirstToken.Samples {
		if s.FirstEventMS <= 0 || s.FirstTokenEventMS < s.FirstEventMS || s.FirstTokenScreenMS < s.FirstTokenEventMS {
			t.Errorf("sample %+v: want the first event, then the token's, then the screen", s)
		}
	}
	if r.FirstLoad.UIFiles < 5 || r.FirstLoad.UIEncodedBytes <= 0 || r.FirstLoad.UIDecodedBytes < r.FirstLoad.UIEncodedBytes {
		t.Errorf("first load %+v: want the UI's files, compressed", r.FirstLoad)
	}
	if r.LongTasks.Todos != 20 || !r.LongTasks.Supported || r.LongTasks.RunMS <= 0 {
		t.Errorf("long tasks %+v", r.LongTasks)
	}
}

// Bad flags are refused with usage, not run.
func TestFlags(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"--runs", "0"}, &out, &errs); code != 2 {
		t.Errorf("--runs 0: exit %d, want 2", code)
	}
	if code := run(context.Background(), []string{"--bogus"}, &out, &errs); code != 2 {
		t.Errorf("--bogus: exit %d, want 2", code)
	}
}
