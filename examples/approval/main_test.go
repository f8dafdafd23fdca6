package main

import (
	"path/filepath"
	"regexp"

	"context"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"io"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  []string // in the output, in this order
		// wantErr is in standard error.
		wantErr string
	}{
		{
			name:  "piped approve",
			args:  []string{"plan a team offsite"},
			stdin: "approve\n",
			want: []string{
				"thread ", `planning "plan a team offsite"`,
				"✓ plan       5 steps",
				"  1. pick the dates",
				"paused for approval at checkpoint ",
				"approve, edit or reject? approve\n",
				"resuming thread ", " from checkpoint ",
				"✓ approve    approved",
				"✓ execute    done: ",
				"✓ summarize",
				`summary: 5 of 5 steps done for "plan a team offsite" (approved)`,
				"  - done: pick the dates\n  - done: book a venue\n",
			},
		},
		{
			name:  "edit on the next line after a bad answer",
			args:  []string{"plan", "a", "team", "offsite"},
			stdin: "maybe\nedit\nbook a cabin, , buy snacks\n",
			want: []string{
				`please answer approve, edit or reject (got "maybe")`,
				"new steps, comma-separated: book a cabin, , buy snacks\n",
				"✓ approve    approved, edited to 2 steps",
				"summary: 2 of 2 steps done",
				"  - done: book a cabin\n  - done: buy snacks\n",
			},
		},
		{
			name:  "edit inline",
			args:  []string{"plan a team offsite"},
			stdin: "e book a cabin, buy snacks\n",
			want:  []string{"summary: 2 of 2 steps done", "  - done: book a cabin\n  - done: buy snacks\n"},
		},
		{
			name:  "reject",
			args:  []string{"plan a team offsite"},
			stdin: "reject too expensive\n",
			want:  []string{"✓ approve    rejected: too expensive", `summary: plan for "plan a team offsite" rejected; nothing was done`},
		},
		{
			name:  "yes after the goal",
			args:  []string{"ship the release", "--yes"},
			stdin: "",
			want:  []string{"approve, edit or reject? approve (--yes)", "summary: 4 of 4 steps done"},
		},
		{
			name:    "no answer",
			args:    []string{"plan a team offsite"},
			stdin:   "",
			code:    1,
			want:    []string{"approve, edit or reject? "},
			wantErr: "no answer: standard input ended",
		},
		{
			name:    "edit without steps",
			args:    []string{"plan a team offsite"},
			stdin:   "edit\n",
			code:    1,
			wantErr: "no answer",
		},
		{
			name:    "no goal",
			args:    nil,
			code:    2,
			wantErr: "say what to plan",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tempDB(t)
			var out, errOut strings.Builder
			code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errOut)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tt.code, errOut.String())
			}
			rest := out.String()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out.String())
				}
				rest = rest[i+len(w):]
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tt.wantErr)
			}
			if tt.code == 0 && strings.Contains(out.String(), "summary: ") && strings.Count(out.String(), "resuming thread ") != 1 {
				t.Errorf("want exactly one resume:\n%s", out.String())
			}
		})
	}
}

func TestParseDecision(t *testing.T) {
	for _, bad := range []string{"", "   ", "maybe", "approved!"} {
		if _, err := parseDecision(bad); err == nil {
			t.Errorf("parseDecision(%q) accepted it", bad)
		}
	}
}

// cancelOnPrompt cancels the run as soon as the question is asked, as
// Ctrl-C at the prompt would.
type cancelOnPrompt struct {
	strings.Builder
	cancel context.CancelFunc
}

func (w *cancelOnPrompt) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "approve, edit or reject? ") {
		w.cancel()
	}
	return w.Builder.Write(p)
}

func TestInterruptedAtPrompt(t *testing.T) {
	tempDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin, stdinW := io.Pipe() // never answers
	defer stdinW.Close()
	out := &cancelOnPrompt{cancel: cancel}
	var errOut strings.Builder
	if code := run(ctx, []string{"plan a team offsite"}, stdin, out, &errOut); code != 130 {
		t.Errorf("exit code %d, want 130; stderr: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "interrupted") {
		t.Errorf("stderr = %q", errOut.String())
	}
	if strings.Contains(out.String(), "resuming") {
		t.Errorf("resumed after the interrupt:\n%s", out.String())
	}
}

// A run saved in the database --db names says to answer later with the
// same --db, and a bad --db is named as such.
func TestAnswerLaterKeepsDB(t *testing.T) {
	t.Setenv(dburl.EnvVar, "")
	db := filepath.Join(t.TempDir(), "plans it.db")
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"--db", db, "plan a team offsite"}, strings.NewReader(""), &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1 (no answer); stderr: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`answer later with: go run ./examples/approval --thread ([0-9a-f-]{36}) --db '(.*)'\n`).FindStringSubmatch(errOut.String())
	if m == nil || m[2] != db {
		t.Fatalf("the hint does not repeat --db %q; stderr: %s", db, errOut.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"--thread", m[1], "--db", db, "--yes"}, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(out.String(), "summary: 5 of 5 steps done") {
		t.Errorf("answering with the hint's flags: code %d, output:\n%s", code, out.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"--db", "postgres://", "plan"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.HasPrefix(errOut.String(), "approval: --db: ") {
		t.Errorf("--db postgres://: code %d, stderr: %s", code, errOut.String())
	}
}

// tempDB points the program's default database at a fresh SQLite file.
func tempDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "weft.db")
	t.Setenv(dburl.EnvVar, path)
	return path
}

// A run left waiting for approval is saved; a later process resumes it
// with --thread and the answer, and the plan is carried out once.
func TestResumeInLaterProcess(t *testing.T) {
	tempDB(t)
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"plan a team offsite"}, strings.NewReader(""), &out, &errOut); code != 1 {
		t.Fatalf("first run: exit code %d, want 1 (no answer); stderr: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`--thread ([0-9a-f-]{36})`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("first run did not say how to resume; stderr: %s", errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"--thread", m[1]}, strings.NewReader("approve\n"), &out, &errOut); code != 0 {
		t.Fatalf("resume: exit code %d; stderr: %s", code, errOut.String())
	}
	if got := out.String(); !strings.Contains(got, "summary: 5 of 5 steps done") || strings.Contains(got, "✓ plan") {
		t.Errorf("resume output (the plan must not be made again):\n%s", got)
	}
	out.Reset()
	if code := run(context.Background(), []string{"--thread", m[1]}, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(out.String(), "not waiting for approval") {
		t.Errorf("third run: code %d, output:\n%s", code, out.String())
	}
	if code := run(context.Background(), []string{"--thread", "no-such-thread"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is not in sqlite") {
		t.Errorf("unknown thread: code %d, stderr: %s", code, errOut.String())
	}
}
