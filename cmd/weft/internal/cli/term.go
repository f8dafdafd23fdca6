package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// terminal is how a run decorates its output when standard error is a
// terminal: a status line while the agent works, and colour. Neither is
// ever written to a pipe or a file, so scripts and tests see plain text.
type terminal struct {
	// status draws a spinner on standard error while nothing is printed.
	status bool
	// color colours the lines on standard error.
	color bool
}

// newTerminal decorates when the command's standard error is a terminal;
// colour also needs NO_COLOR unset or empty (https://no-color.org).
func newTerminal(cmd *cobra.Command) terminal {
	tty := isTerminal(cmd.ErrOrStderr())
	return terminal{status: tty, color: tty && os.Getenv("NO_COLOR") == ""}
}

// spinnerEvery is how often the spinner turns; spinnerAfter is how long
// the agent must be quiet before it shows, so quick steps do not flicker.
const (
	spinnerEvery = 100 * time.Millisecond
	spinnerAfter = 250 * time.Millisecond
)

// wrap returns writers for the run's output (out) and its progress lines
// (info), and a stop function to call when the run ends. The status line
// shows whenever the agent is working and nothing is being printed: from
// the start, and after each progress line (a tool call, a tool's result),
// until the answer's text or the next line comes; it is cleared before
// anything is written.
func (t terminal) wrap(out, info io.Writer) (io.Writer, io.Writer, func()) {
	if !t.status && !t.color {
		return out, info, func() {}
	}
	s := &statusLine{w: info, color: t.color, spin: t.status, after: spinnerAfter, since: time.Now(), active: true}
	if !t.status {
		return out, &infoWriter{s}, func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(spinnerEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				s.draw(now)
			}
		}
	})
	stop := func() {
		close(done)
		wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.clear()
		s.active = false
	}
	return &outWriter{s, out}, &infoWriter{s}, stop
}

// statusLine is the spinner on standard error and the writers that clear
// it. Its mutex orders the spinner's drawing with every write.
type statusLine struct {
	mu sync.Mutex
	w  io.Writer
	// color colours progress lines; spin draws the spinner.
	color, spin bool
	// after is how long the agent is quiet before the spinner shows.
	after time.Duration
	// active is true while the agent works and prints nothing; since is
	// when that began, label what it is doing.
	active bool
	since  time.Time
	label  string
	// shown is true while the status line is on screen.
	shown bool
	frame int
}

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// draw shows the status line at time now, if the agent has been quiet
// long enough.
func (s *statusLine) draw(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.spin || !s.active || now.Sub(s.since) < s.after {
		return
	}
	label := s.label
	if label == "" {
		label = "thinking…"
	}
	line := fmt.Sprintf("%c %s %ds", spinnerFrames[s.frame%len(spinnerFrames)], label, int(now.Sub(s.since).Seconds()))
	if s.color {
		line = ansiDim + line + ansiReset
	}
	s.frame++
	// \r\033[K: back to the line's start and clear it.
	fmt.Fprint(s.w, "\r\033[K"+line)
	s.shown = true
}

// clear erases the status line; s.mu is held.
func (s *statusLine) clear() {
	if s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

// outWriter writes the answer: the spinner stops until the next progress
// line.
type outWriter struct {
	s *statusLine
	w io.Writer
}

func (o *outWriter) Write(p []byte) (int, error) {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	o.s.clear()
	o.s.active = false
	return o.w.Write(p)
}

// infoWriter writes progress lines, coloured; after a whole line the
// agent is working again, so the spinner may show.
type infoWriter struct{ s *statusLine }

func (i *infoWriter) Write(p []byte) (int, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	text := p
	if s.color {
		text = []byte(colorLines(string(p)))
	}
	if _, err := s.w.Write(text); err != nil {
		return 0, err
	}
	if bytes.HasSuffix(p, []byte("\n")) {
		s.active, s.since = true, time.Now()
		s.label = "thinking…"
		if bytes.HasPrefix(p, []byte("→ ")) {
			s.label = "running tools…"
		}
	}
	return len(p), nil
}

// ANSI SGR sequences.
const (
	ansiReset = "\033[0m"
	ansiDim   = "\033[2m"
	ansiRed   = "\033[31m"
	ansiGreen = "\033[32m"
	ansiCyan  = "\033[36m"
)

// colorLines colours each progress line by what it says: tool calls cyan,
// results green (red when the tool failed), notes dim.
func colorLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		if body == "" {
			continue
		}
		var c string
		switch {
		case strings.HasPrefix(body, "→ "):
			c = ansiCyan
		case strings.HasPrefix(body, "← ") && strings.Contains(body, ": error"):
			c = ansiRed
		case strings.HasPrefix(body, "← "):
			c = ansiGreen
		case strings.HasPrefix(body, "thread "), strings.HasPrefix(body, "· "):
			c = ansiDim
		default:
			continue
		}
		lines[i] = c + body + ansiReset + l[len(body):]
	}
	return strings.Join(lines, "")
}

// promptTo returns the writer for a question put to the user on info:
// while the question waits for an answer the spinner stays off, so it
// never draws over the question (it shows again after the next whole
// progress line).
func promptTo(info io.Writer) io.Writer {
	if iw, ok := info.(*infoWriter); ok {
		return &promptWriter{iw.s}
	}
	return info
}

type promptWriter struct{ s *statusLine }

func (p *promptWriter) Write(b []byte) (int, error) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.active = false
	return s.w.Write(b)
}
