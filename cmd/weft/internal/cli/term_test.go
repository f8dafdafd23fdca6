package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// On a terminal the status line shows while the agent is quiet and is
// cleared before anything else is written, on either stream.
func TestStatusLineClearsBeforeOutput(t *testing.T) {
	var screen bytes.Buffer // stdout and stderr on one terminal
	start := time.Now()
	s := &statusLine{w: &screen, spin: true, after: time.Second, since: start, active: true}
	out, info := &outWriter{s, &screen}, &infoWriter{s}

	s.draw(start.Add(time.Second / 2))
	if screen.Len() != 0 {
		t.Fatalf("status shown before the agent was quiet for a second: %q", screen.String())
	}
	s.draw(start.Add(2 * time.Second))
	if got := screen.String(); got != "\r\033[K⠋ thinking… 2s" {
		t.Fatalf("status line = %q", got)
	}
	fmt.Fprint(out, "답변")
	if got := screen.String(); !strings.HasSuffix(got, "\r\033[K답변") {
		t.Errorf("the answer is not written on a cleared line: %q", got)
	}
	// While the answer streams, the status line stays away.
	n := screen.Len()
	s.draw(time.Now().Add(time.Hour))
	if screen.Len() != n {
		t.Errorf("status drawn over the answer: %q", screen.String()[n:])
	}
	// After a progress line the agent works again: the status returns,
	// labelled, and is cleared before the next line.
	fmt.Fprint(info, "→ get_learning_path({})\n")
	s.draw(time.Now().Add(time.Hour))
	fmt.Fprint(info, "← get_learning_path: ok\n")
	if got := screen.String()[n:]; !strings.Contains(got, "→ get_learning_path({})\n\r\033[K⠙ running tools… ") || !strings.HasSuffix(got, "s\r\033[K← get_learning_path: ok\n") {
		t.Errorf("screen after the tool call:\n%q", got)
	}
}

// Colour marks tool calls, results and failures, and never the answer.
func TestColorLines(t *testing.T) {
	for in, want := range map[string]string{
		"→ f({})\n":                        ansiCyan + "→ f({})" + ansiReset + "\n",
		"← f: ok {items: 2}\n":             ansiGreen + "← f: ok {items: 2}" + ansiReset + "\n",
		"← f: error NOT_FOUND: no such\n":  ansiRed + "← f: error NOT_FOUND: no such" + ansiReset + "\n",
		"thread t (continue it with ..)\n": ansiDim + "thread t (continue it with ..)" + ansiReset + "\n",
		"plain text\n":                     "plain text\n",
	} {
		if got := colorLines(in); got != want {
			t.Errorf("colorLines(%q) = %q, want %q", in, got, want)
		}
	}
}

// Nothing decorates output that is not a terminal: a pipe, a file, a
// buffer. NO_COLOR turns colour off on a terminal too.
func TestTerminalOnlyOnATTY(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.SetErr(&bytes.Buffer{})
	if got := newTerminal(cmd); got != (terminal{}) {
		t.Errorf("a buffer is decorated: %+v", got)
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.SetErr(f)
	if got := newTerminal(cmd); got != (terminal{}) {
		t.Errorf("a file is decorated: %+v", got)
	}
	var b bytes.Buffer
	out, info, stop := terminal{}.wrap(&b, &b)
	fmt.Fprint(info, "→ f({})\n")
	fmt.Fprint(out, "answer\n")
	stop()
	if b.String() != "→ f({})\nanswer\n" {
		t.Errorf("undecorated output = %q", b.String())
	}
	if tty, err := os.Open("/dev/tty"); err == nil {
		defer tty.Close()
		cmd.SetErr(tty)
		t.Setenv("NO_COLOR", "1")
		if got := newTerminal(cmd); got != (terminal{status: true}) {
			t.Errorf("on a terminal with NO_COLOR: %+v, want status without colour", got)
		}
	}
}
