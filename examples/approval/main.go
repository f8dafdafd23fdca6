// Command approval is the first weft example to run: a planner that stops
// and asks you to approve its plan before carrying it out.
//
//	go run ./examples/approval "plan a team offsite"
//
// The graph (package planner) plans, then stops at an interrupt. This
// program shows the plan, asks "approve, edit or reject?", and resumes the
// run from its checkpoint with your answer, printing each node as it
// finishes. Answers may be piped in:
//
//	printf 'approve\n' | go run ./examples/approval "plan a team offsite"
//	printf 'edit\nbook a cabin, buy snacks\n' | go run ./examples/approval "plan a team offsite"
//	printf 'reject too expensive\n' | go run ./examples/approval "plan a team offsite"
//
// and --yes approves without asking.
//
// Runs are saved in an SQLite file (weft.db in the current directory, or
// --db / WEFT_DATABASE_URL, which may name a PostgreSQL database), so a run
// paused for approval can be resumed later by another process:
//
//	go run ./examples/approval --thread 5b0c… # answer the pending question
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/examples/approval/planner"
	"github.com/weftlabs/weft/graph"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errNoAnswer means standard input ended before the question was answered.
var errNoAnswer = errors.New("no answer: standard input ended before the plan was approved, edited or rejected; " +
	"type or pipe an answer (approve, edit or reject), or pass --yes to approve without asking")

// run is the program; it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	yes := fs.Bool("yes", false, "approve the plan without asking")
	dsn := fs.String("db", os.Getenv(dburl.EnvVar), "where runs are saved: an SQLite file, sqlite:PATH or postgres://... (default $"+dburl.EnvVar+", else "+dburl.DefaultPath+")")
	resume := fs.String("thread", "", "resume this thread, paused for approval by an earlier run")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: approval [--yes] [--db DSN] "goal"`)
		fmt.Fprintln(fs.Output(), `       approval [--yes] [--db DSN] --thread ID`)
		fs.PrintDefaults()
	}
	goal, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if goal == "" && *resume == "" {
		fmt.Fprintln(stderr, "approval: say what to plan, for example:")
		fmt.Fprintln(stderr, `  go run ./examples/approval "plan a team offsite"`)
		return 2
	}
	if goal != "" && *resume != "" {
		fmt.Fprintln(stderr, "approval: give a goal to start a run, or --thread to resume one, not both")
		return 2
	}

	// again repeats the database flag in the command printed to resume,
	// so a run saved elsewhere than the default is found again.
	again, source := "", ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "db" {
			again, source = " --db "+shellQuote(*dsn), "--db"
		}
	})
	if source == "" && os.Getenv(dburl.EnvVar) != "" {
		source = "$" + dburl.EnvVar
	}
	db, err := dburl.Open(ctx, *dsn, dburl.Options{Source: source})
	if err != nil {
		return fail(stderr, err)
	}
	defer db.Close()
	g, err := planner.Build(db.Saver)
	if err != nil {
		fmt.Fprintln(stderr, "approval:", err)
		return 1
	}

	thread := *resume
	cfg := checkpoint.Config{ThreadID: thread}
	if thread == "" {
		thread = uuid.NewString()
		cfg.ThreadID = thread
		fmt.Fprintf(stdout, "thread %s: planning %q (saved in %s %s)\n", thread, goal, db.Backend, db.Target)
		if err := stream(ctx, g, planner.Input(goal), thread, stdout); err != nil {
			return fail(stderr, err)
		}
	}

	answers := newAnswers(stdin, !isTerminal(stdin))
	for resuming := *resume != ""; ; resuming = false {
		// The thread's saved state says whether the run waits for an
		// answer, and from which checkpoint it resumes.
		snap, err := g.GetState(ctx, cfg, nil)
		if err != nil {
			return fail(stderr, err)
		}
		if resuming {
			if snap.Config.CheckpointID == "" {
				fmt.Fprintf(stderr, "approval: thread %s is not in %s %s; start a run with a goal instead\n", thread, db.Backend, db.Target)
				return 1
			}
			if len(snap.Interrupts) == 0 {
				fmt.Fprintf(stdout, "thread %s is not waiting for approval; its summary: %s\n", thread, planner.Summary.Get(snap.Values))
				return 0
			}
			fmt.Fprintf(stdout, "thread %s: resuming from %s %s\n", thread, db.Backend, db.Target)
		}
		if len(snap.Interrupts) == 0 {
			fmt.Fprintf(stdout, "summary: %s\n", planner.Summary.Get(snap.Values))
			return 0
		}
		q, err := planner.QuestionOf(snap.Interrupts[0].Value)
		if err != nil {
			return fail(stderr, err)
		}
		showQuestion(stdout, q, snap.Config.CheckpointID)
		var d planner.Decision
		if *yes {
			fmt.Fprintln(stdout, "approve, edit or reject? approve (--yes)")
			d = planner.Decision{Action: planner.Approve}
		} else if d, err = ask(ctx, answers, stdout); err != nil {
			if errors.Is(err, errNoAnswer) {
				fmt.Fprintf(stderr, "approval: %v\nThe run is saved; answer later with: go run ./examples/approval --thread %s%s\n", err, thread, again)
				return 1
			}
			return fail(stderr, err)
		}
		fmt.Fprintf(stdout, "resuming thread %s from checkpoint %s\n", thread, snap.Config.CheckpointID)
		if err := stream(ctx, g, graph.Resume(d), thread, stdout); err != nil {
			return fail(stderr, err)
		}
	}
}

// fail reports err and returns the exit code for it: 130, as shells do,
// when Ctrl-C stopped the program.
func fail(stderr io.Writer, err error) int {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "approval: interrupted; nothing more was run")
		return 130
	}
	fmt.Fprintln(stderr, "approval:", err)
	return 1
}

// shellQuote quotes s for a POSIX shell unless every character of it is
// one that needs no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@,+=%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// parseArgs takes flags before and after the goal; the goal's words may
// come quoted or not.
func parseArgs(fs *flag.FlagSet, args []string) (string, error) {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		args = fs.Args()
		if len(args) == 0 {
			return strings.TrimSpace(strings.Join(words, " ")), nil
		}
		words, args = append(words, args[0]), args[1:]
	}
}

// stream runs the graph and prints each node as it finishes.
func stream(ctx context.Context, g *graph.Graph, in graph.Update, thread string, out io.Writer) error {
	// Another process answering the same thread goes first; this one
	// waits its turn and says so.
	opts := graph.RunOptions{ThreadID: thread, StreamModes: []graph.StreamMode{graph.StreamUpdates}, Busy: graph.BusyWait,
		OnBusy: func(*checkpoint.BusyError) { fmt.Fprintf(os.Stderr, "thread %s is busy; waiting…\n", thread) }}
	for ev, err := range g.Stream(ctx, in, &opts) {
		if err != nil {
			return err
		}
		u, ok := ev.Update()
		if !ok || u.Node == "__interrupt__" {
			continue
		}
		if d := describe(u); d != "" {
			fmt.Fprintf(out, "  ✓ %-10s %s\n", u.Node, d)
		} else {
			fmt.Fprintf(out, "  ✓ %s\n", u.Node)
		}
	}
	return nil
}

// describe says in a few words what a node wrote.
func describe(u graph.NodeUpdate) string {
	var parts []string
	for _, w := range u.Update.Writes() {
		switch v := w.Value.(type) {
		case []string:
			switch {
			case w.Channel != planner.Plan.Name():
				parts = append(parts, strings.Join(v, "; "))
			case u.Node == planner.NodePlan:
				parts = append(parts, fmt.Sprintf("%d steps", len(v)))
			}
		case string:
			if w.Channel == planner.Feedback.Name() {
				parts = append(parts, v)
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ")
}

func showQuestion(out io.Writer, q planner.PlanQuestion, checkpointID string) {
	if q.Problem != "" {
		fmt.Fprintf(out, "the last answer could not be used: %s\n", q.Problem)
	}
	fmt.Fprintf(out, "\nplan for %q:\n", q.Goal)
	for i, st := range q.Plan {
		fmt.Fprintf(out, "  %d. %s\n", i+1, st)
	}
	fmt.Fprintf(out, "\npaused for approval at checkpoint %s\n", checkpointID)
}

// ask reads answers until one is usable.
func ask(ctx context.Context, answers *answers, out io.Writer) (planner.Decision, error) {
	for {
		fmt.Fprint(out, "approve, edit or reject? ")
		line, err := answers.next(ctx, out)
		if err != nil {
			return planner.Decision{}, err
		}
		d, err := parseDecision(line)
		if err != nil {
			fmt.Fprintln(out, err)
			continue
		}
		if d.Action == planner.Edit && len(d.Steps) == 0 {
			fmt.Fprint(out, "new steps, comma-separated: ")
			line, err := answers.next(ctx, out)
			if err != nil {
				return planner.Decision{}, err
			}
			if d.Steps = splitSteps(line); len(d.Steps) == 0 {
				fmt.Fprintln(out, "no steps given; the plan needs at least one")
				continue
			}
		}
		return d, nil
	}
}

// parseDecision reads "approve", "edit [step, step...]" or "reject
// [reason]"; a first letter is enough.
func parseDecision(line string) (planner.Decision, error) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "approve", "a", "yes", "y":
		return planner.Decision{Action: planner.Approve, Reason: rest}, nil
	case "edit", "e":
		return planner.Decision{Action: planner.Edit, Steps: splitSteps(rest)}, nil
	case "reject", "r", "no", "n":
		return planner.Decision{Action: planner.Reject, Reason: rest}, nil
	}
	return planner.Decision{}, fmt.Errorf("please answer approve, edit or reject (got %q)", strings.TrimSpace(line))
}

func splitSteps(s string) []string { return planner.CleanSteps(strings.Split(s, ",")) }

// answers reads lines from standard input in the background, so that
// Ctrl-C still ends the program while it waits for one.
type answers struct {
	lines chan string
	echo  bool
	start func()
}

func newAnswers(r io.Reader, echo bool) *answers {
	a := &answers{lines: make(chan string), echo: echo}
	started := false
	a.start = func() {
		if started {
			return
		}
		started = true
		go func() {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				a.lines <- sc.Text()
			}
			close(a.lines)
		}()
	}
	return a
}

// next returns the next line; when input is not a terminal it echoes the
// line, so the transcript reads as if it had been typed.
func (a *answers) next(ctx context.Context, out io.Writer) (string, error) {
	a.start()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return "", ctx.Err()
	case line, ok := <-a.lines:
		if !ok {
			fmt.Fprintln(out)
			return "", errNoAnswer
		}
		if a.echo {
			fmt.Fprintln(out, line)
		}
		return line, nil
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
