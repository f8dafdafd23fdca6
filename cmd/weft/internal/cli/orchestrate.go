package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	guideagent "github.com/weftlabs/weft/examples/guide/agent"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/providers"
	"github.com/weftlabs/weft/memory/hooks"
	"github.com/weftlabs/weft/server"
)

// The values of --approve.
const (
	// approveAsk asks at each approval point the configuration switches
	// on, in the terminal or from piped answers.
	approveAsk = "ask"
	// approveAuto stops at each approval point and answers it at once:
	// accept, proceed, skip a failed todo, go on after a pause.
	approveAuto = "auto"
	// approveNone switches the approval points off: the agent decides
	// at each by itself and never stops.
	approveNone = "none"
)

// resultsDirName is where an orchestrator agent saves its results,
// beside the database.
const resultsDirName = "weft-results"

// errNoDecision means standard input ended before an approval point was
// answered; the thread waits, saved.
var errNoDecision = errors.New("standard input ended before the approval point was answered")

// orchestrateConfig is weft run for an orchestrator agent.
type orchestrateConfig struct {
	runConfig
	approve, configPath, resultsDir string
	stdin                           io.Reader
	// user is whose memories the tasks use; userGiven says --user (or
	// $WEFT_USER) named them, rather than the default.
	user      string
	userGiven bool
	// memory turns long-term memory on.
	memory bool
}

// runOrchestrated runs an orchestrator agent: a request through
// clarification, planning, approval and execution, stopping at each
// approval point to ask, or --thread alone to answer a pending one.
func runOrchestrated(ctx context.Context, e examples.Example, c orchestrateConfig) (err error) {
	switch c.approve {
	case approveAsk, approveAuto, approveNone:
	default:
		return fmt.Errorf("--approve %q: want %s (ask at each approval point), %s (answer each at once: accept, proceed, skip) or %s (no approval points)",
			c.approve, approveAsk, approveAuto, approveNone)
	}
	if c.question == "" && (c.thread.id == "" || c.thread.isNew) {
		return fmt.Errorf("%w: give a request, or --thread ID alone to answer the approval a saved run waits for; e.g. weft run --agent %s %q",
			errNoPrompt, e.Name, "지난 분기 채널별 성과를 분석하고 다음 달 캠페인 안을 보고서로 만들어 줘")
	}
	cfg, err := e.Config()
	if err != nil {
		return err
	}
	if c.configPath != "" {
		if cfg, err = orchestrator.LoadConfig(c.configPath); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
	}
	if c.approve == approveNone {
		cfg.Approvals.Enabled = false
	}
	model, db, dataDir, err := openRun(ctx, e, c.runConfig, cfg.Models.Default)
	if err != nil {
		return err
	}
	defer db.Close()
	var models orchestrator.Models
	for _, m := range []struct {
		key, name string
		to        *llm.ChatModel
	}{
		{"models.cognitive", cfg.Models.Cognitive, &models.Cognitive},
		{"models.planning", cfg.Models.Planning, &models.Planning},
		{"models.execution", cfg.Models.Execution, &models.Execution},
		{"models.response", cfg.Models.Response, &models.Response},
	} {
		if m.name == "" {
			continue
		}
		if *m.to, err = providers.Open(ctx, m.name); err != nil {
			return fmt.Errorf("configuration %s: %w", m.key, err)
		}
	}
	cfg.Results.Dir = c.resultsDir
	if cfg.Results.Dir == "" {
		cfg.Results.Dir = filepath.Join(dataDir, resultsDirName)
	}
	oopts := examples.OrchestrateOptions{Saver: db.Saver, DataDir: dataDir, Mode: c.mode, Config: &cfg, Models: models}
	// What the tasks teach is written after each answer, in the
	// background; its notes are kept and told once the agent closed.
	var notes heldNotes
	if c.memory {
		st, err := server.OpenStore(ctx, db)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		defer st.Close()
		oopts.Memory = st
		// Failures are told here, in the notes: not logged twice.
		oopts.Logger = slog.New(slog.DiscardHandler)
		oopts.OnMemory = func(j hooks.Job, err error) {
			switch {
			case err != nil:
				notes.add("· memory: could not record the %s for %s: %v", j.Kind, j.User, err)
			case j.Kind == "task":
				notes.add("· memory: learned from task %d for %s", j.Task, j.User)
			}
		}
	}
	agent, err := e.Orchestrate(ctx, model, oopts)
	if err != nil {
		return fmt.Errorf("agent %s: %w", e.Name, err)
	}
	defer func() {
		// Closing writes what is still queued for memory.
		cerr := agent.Close()
		notes.tell(c.info)
		if cerr != nil && err == nil {
			err = fmt.Errorf("agent %s: %w", e.Name, cerr)
		}
	}()
	g := agent.Agent.Graph

	c.thread.where = db.Backend + " " + db.Target
	thread, err := pickThread(ctx, db.Saver, c.thread, c.info)
	if err != nil {
		return err
	}
	snap, err := state(ctx, g, thread)
	if err != nil {
		return err
	}
	// A thread waiting for an answer is answered for the user it runs for.
	if owner := orchestrator.User.Get(snap.Values); c.question == "" && owner != "" {
		if c.userGiven && owner != c.user {
			return fmt.Errorf("thread %s runs for user %s, not %s: answer it with --user %s", thread, owner, c.user, shellQuote(owner))
		}
		c.user = owner
	}
	answerLater := fmt.Sprintf("weft run --agent %s --thread %s%s", e.Name, shellQuote(thread), c.thread.db)
	if c.user != guideagent.DefaultUser {
		answerLater += " --user " + shellQuote(c.user)
	}
	defer func() {
		err = onInterrupt(ctx, err, fmt.Sprintf("thread %s is saved up to its last step: continue it with %s", thread, answerLater))
	}()
	switch {
	case c.question != "" && len(snap.Interrupts) > 0:
		return fmt.Errorf("thread %s waits for an answer at an approval point; answer it first with %s (without a request)", thread, answerLater)
	case c.question == "" && len(snap.Interrupts) == 0:
		return fmt.Errorf("thread %s is not waiting for an answer; ask something new with %s \"...\"", thread, answerLater)
	}
	p := &orchPrinter{out: c.out, info: c.info, started: map[string]time.Time{}}
	run := func(in graph.Update) error {
		defer p.endLine()
		opts := &graph.RunOptions{ThreadID: thread, StreamModes: []graph.StreamMode{graph.StreamCustom}, Busy: graph.BusyWait,
			Metadata: map[string]any{graphIDKey: e.Name},
			OnBusy:   func(*checkpoint.BusyError) { fmt.Fprintf(c.info, "thread %s is busy; waiting…\n", thread) },
			// The memory's user, for every run of the thread here.
			User: c.user}
		for ev, err := range g.Stream(ctx, in, opts) {
			if err != nil {
				return fmt.Errorf("agent %s: %w", e.Name, err)
			}
			if e, ok := graph.CustomAs[events.Event](ev); ok {
				p.event(e)
			}
		}
		return nil
	}
	if c.question != "" {
		if err := run(orchestrator.Input(c.question, c.user)); err != nil {
			return err
		}
	}
	answers := newLineReader(c.stdin, !isTerminal(c.stdin), c.info)
	defer answers.stop()
	for {
		if snap, err = state(ctx, g, thread); err != nil {
			return err
		}
		if len(snap.Interrupts) == 0 {
			return nil
		}
		req, err := graph.InterruptValue[orchestrator.Request](snap.Interrupts[0])
		if err != nil {
			return fmt.Errorf("thread %s: the approval it waits for: %w", thread, err)
		}
		showRequest(c.info, req, agent.Agent, thread)
		d, err := decide(ctx, req, c.approve, answers, c.info)
		if errors.Is(err, errNoDecision) {
			return fmt.Errorf("%w; the run is saved: answer later with %s", err, answerLater)
		}
		if err != nil {
			return err
		}
		if err := run(graph.Resume(d)); err != nil {
			return err
		}
	}
}

// state reads a thread's latest state, within the CLI's bound.
func state(ctx context.Context, g *graph.Graph, thread string) (graph.StateSnapshot, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: thread}, nil)
	if err != nil {
		return snap, fmt.Errorf("reading thread %s: %w", thread, err)
	}
	return snap, nil
}

// orchPrinter shows an orchestrator run as it happens: the answer's
// tokens on out; layers, each todo's changes of state and notes on info.
type orchPrinter struct {
	out, info io.Writer
	midLine   bool
	started   map[string]time.Time
}

func (p *orchPrinter) endLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

func (p *orchPrinter) note(format string, args ...any) {
	p.endLine()
	fmt.Fprintf(p.info, format+"\n", args...)
}

func (p *orchPrinter) event(ev events.Event) {
	switch e := ev.(type) {
	case events.LayerStart:
		p.note("· %s", e.Layer)
	case events.Status:
		p.note("· %s", e.Message)
	case events.TodoProgress:
		what := e.Executor
		if e.Tool != "" {
			what += " · " + e.Tool
		}
		switch e.Status {
		case "running":
			p.started[e.TodoID] = e.Time
			p.note("→ %s %s [%s]", e.TodoID, e.Title, what)
		case "done":
			via := ""
			if e.Method == "react" {
				via = ", by the ReAct fallback"
			}
			p.note("← %s done (%s%s)", e.TodoID, took(p.started[e.TodoID], e.Time), via)
		case "failed":
			p.note("← %s: error: %s", e.TodoID, clip(e.Reason, 200))
		case "skipped":
			p.note("· %s skipped: %s", e.TodoID, clip(e.Reason, 200))
		default:
			p.note("· %s %s", e.TodoID, e.Status)
		}
	case events.Token:
		if e.Text != "" {
			fmt.Fprint(p.out, e.Text)
			p.midLine = !strings.HasSuffix(e.Text, "\n")
		}
	case events.Complete:
		p.endLine()
		for _, a := range e.Attachments {
			p.note("· attachment %s (%s): %s", a.Name, a.Description, a.Path)
		}
		if e.Report != "" {
			p.note("· report: %s", e.Report)
		}
		if len(e.NextActions) > 0 {
			p.note("· next: %s", strings.Join(e.NextActions, " | "))
		}
	case events.End:
		if e.Status == events.EndFailed {
			p.note("· failed: %s", e.Message)
		}
	}
}

func took(from, to time.Time) string {
	d := to.Sub(from)
	switch {
	case from.IsZero() || d < 0:
		return "?"
	case d < time.Millisecond:
		return "<1ms"
	}
	return d.Round(time.Millisecond).String()
}

// showRequest describes an approval point for a person.
func showRequest(w io.Writer, r orchestrator.Request, a *orchestrator.Agent, thread string) {
	fmt.Fprintln(w)
	if r.Problem != "" {
		fmt.Fprintf(w, "the last answer could not be used: %s\n", r.Problem)
	}
	switch r.Kind {
	case orchestrator.KindClarification:
		c := r.Clarification
		fmt.Fprintf(w, "question: %s\n", r.Message)
		if c != nil {
			for _, p := range c.Past {
				fmt.Fprintf(w, "  past answer %s: %q (reused %d×, confidence %.2f)\n", p.ID, p.Answer, p.ReuseCount, p.Confidence)
			}
		}
	case orchestrator.KindPlan:
		p := r.Plan
		if p == nil {
			break
		}
		fmt.Fprintf(w, "plan (revision %d): %s\n", p.Revision, p.Summary)
		fmt.Fprintf(w, "strategy %s · estimate %.0fs one after another, %.0fs with independent todos at once\n", p.Strategy, p.Estimate.Seconds, p.Estimate.CriticalSeconds)
		byID := map[string]orchestrator.Todo{}
		for _, t := range p.Todos {
			byID[t.ID] = t
		}
		for i, level := range p.Levels {
			for j, id := range level {
				t := byID[id]
				head := "         "
				if j == 0 {
					head = fmt.Sprintf("  wave %d ", i+1)
				}
				deps := ""
				if len(t.DependsOn) > 0 {
					deps = " ← " + strings.Join(t.DependsOn, ", ")
				}
				fmt.Fprintf(w, "%s%s %s [%s · %s %s]%s\n", head, t.ID, t.Title, t.Executor, t.Tool, compactJSON(t.Params), deps)
			}
		}
		if dir := a.TaskDir(thread, p.Task); dir != "" {
			fmt.Fprintf(w, "  (the plan and its Mermaid drawing: %s)\n", filepath.Join(dir, "plan.md"))
		}
	case orchestrator.KindStep:
		st := r.Step
		if st == nil {
			break
		}
		fmt.Fprintf(w, "step %s: %s\n", st.Todo.ID, st.Todo.Title)
		fmt.Fprintf(w, "  tool %s %s (%s preparation", st.Tool, compactJSON(st.Params), st.Mode)
		if st.Mode == orchestrator.PrepareDetailed {
			fmt.Fprintf(w, ", readiness %.0f%%", st.Readiness*100)
		}
		fmt.Fprintln(w, ")")
		var tools []string
		for _, t := range st.Tools {
			tools = append(tools, fmt.Sprintf("%s %.2f", t.Name, t.Score))
		}
		if len(tools) > 0 {
			fmt.Fprintf(w, "  top tools: %s\n", strings.Join(tools, ", "))
		}
		if len(st.Missing) > 0 {
			fmt.Fprintf(w, "  missing: %s\n", strings.Join(st.Missing, ", "))
		}
		if st.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", st.Note)
		}
	case orchestrator.KindError:
		fmt.Fprintf(w, "%s\n", r.Message)
	case orchestrator.KindPause:
		fmt.Fprintf(w, "%s\n", r.Message)
		if r.Pause != nil {
			for _, t := range r.Pause.Todos {
				fmt.Fprintf(w, "  %s %s: %s [%s %s]\n", t.ID, t.Status, t.Title, t.Tool, compactJSON(t.Params))
			}
		}
	default:
		fmt.Fprintf(w, "%s\n", r.Message)
	}
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return clip(string(b), 160)
}

// prompts are what each approval point asks, and the answers it takes.
var prompts = map[orchestrator.Kind]string{
	orchestrator.KindClarification: "answer the question (or: proceed, reuse [ID]): ",
	orchestrator.KindPlan:          "accept, edit JSON (the plan's todos, or @FILE), or reject [reason]? ",
	orchestrator.KindStep:          "accept, edit JSON (the tool's parameters, or @FILE), or skip [reason]? ",
	orchestrator.KindError:         "retry, skip or abort [reason]? ",
	orchestrator.KindPause:         "verify, delete ID..., or modify JSON (changed todos, or @FILE)? ",
}

// autoAnswers are --approve auto's answers.
var autoAnswers = map[orchestrator.Kind]orchestrator.Action{
	orchestrator.KindClarification: orchestrator.ActionProceedAnyway,
	orchestrator.KindPlan:          orchestrator.ActionAccept,
	orchestrator.KindStep:          orchestrator.ActionAccept,
	orchestrator.KindError:         orchestrator.ActionSkip,
	orchestrator.KindPause:         orchestrator.ActionVerify,
}

// decide gets a decision for r: at once with --approve auto, else from
// the answers until one parses.
func decide(ctx context.Context, r orchestrator.Request, approve string, answers *lineReader, w io.Writer) (orchestrator.Decision, error) {
	prompt := prompts[r.Kind]
	if prompt == "" {
		prompt = strings.Join(actionNames(r.Actions), ", ") + "? "
	}
	if approve == approveAuto {
		a := autoAnswers[r.Kind]
		if a == "" {
			a = r.Actions[0]
		}
		fmt.Fprintf(w, "%s%s (--approve auto)\n", prompt, a)
		return orchestrator.Decision{Action: a}, nil
	}
	for {
		fmt.Fprint(w, prompt)
		line, err := answers.next(ctx)
		if err != nil {
			return orchestrator.Decision{}, err
		}
		d, err := parseDecision(r.Kind, line)
		if err != nil {
			fmt.Fprintln(w, err)
			continue
		}
		return d, nil
	}
}

func actionNames(as []orchestrator.Action) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}

// parseDecision reads a typed answer at an approval point of kind. A
// first letter is enough for the actions; JSON may be given inline or as
// @FILE.
func parseDecision(kind orchestrator.Kind, line string) (orchestrator.Decision, error) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	word, rest = strings.ToLower(word), strings.TrimSpace(rest)
	is := func(names ...string) bool {
		for _, n := range names {
			if word == n {
				return true
			}
		}
		return false
	}
	var d orchestrator.Decision
	switch kind {
	case orchestrator.KindClarification:
		switch {
		case line == "":
			return d, errors.New("type your answer, or proceed, or reuse [ID]")
		case is("proceed", "p", "proceed_anyway"):
			return orchestrator.Decision{Action: orchestrator.ActionProceedAnyway}, nil
		case is("reuse", "reuse_past"):
			return orchestrator.Decision{Action: orchestrator.ActionReusePast, PastID: rest}, nil
		case is("clarify"):
			return orchestrator.Decision{Action: orchestrator.ActionClarify, Answer: rest}, nil
		}
		return orchestrator.Decision{Action: orchestrator.ActionClarify, Answer: line}, nil
	case orchestrator.KindPlan:
		switch {
		case is("accept", "a", "yes", "y", "approve"):
			return orchestrator.Decision{Action: orchestrator.ActionAccept, Reason: rest}, nil
		case is("reject", "r", "no", "n"):
			return orchestrator.Decision{Action: orchestrator.ActionReject, Reason: rest}, nil
		case is("edit", "e"):
			raw, err := jsonArg(rest)
			if err != nil {
				return d, err
			}
			var plan orchestrator.EditedPlan
			if strings.HasPrefix(strings.TrimSpace(string(raw)), "[") {
				err = json.Unmarshal(raw, &plan.Todos)
			} else {
				err = json.Unmarshal(raw, &plan)
			}
			if err != nil {
				return d, fmt.Errorf(`the edited plan is not {"todos": [...]} or a list of todos: %v`, err)
			}
			return orchestrator.Decision{Action: orchestrator.ActionEdit, Plan: &plan}, nil
		}
		return d, fmt.Errorf("please answer accept, edit JSON or reject (got %q)", line)
	case orchestrator.KindStep:
		switch {
		case is("accept", "a", "yes", "y"):
			return orchestrator.Decision{Action: orchestrator.ActionAccept}, nil
		case is("skip", "s"):
			return orchestrator.Decision{Action: orchestrator.ActionSkip, Reason: rest}, nil
		case is("edit", "e"):
			raw, err := jsonArg(rest)
			if err != nil {
				return d, err
			}
			return orchestrator.Decision{Action: orchestrator.ActionEdit, Params: raw}, nil
		}
		return d, fmt.Errorf("please answer accept, edit JSON or skip (got %q)", line)
	case orchestrator.KindError:
		switch {
		case is("retry", "r"):
			return orchestrator.Decision{Action: orchestrator.ActionRetry}, nil
		case is("skip", "s"):
			return orchestrator.Decision{Action: orchestrator.ActionSkip, Reason: rest}, nil
		case is("abort", "a"):
			return orchestrator.Decision{Action: orchestrator.ActionAbort, Reason: rest}, nil
		}
		return d, fmt.Errorf("please answer retry, skip or abort (got %q)", line)
	case orchestrator.KindPause:
		switch {
		case is("verify", "v", "continue", "c", "ok"):
			return orchestrator.Decision{Action: orchestrator.ActionVerify}, nil
		case is("delete", "d"):
			ids := strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' })
			if len(ids) == 0 {
				return d, errors.New("delete takes the ids of the todos to drop: delete t3 t4")
			}
			return orchestrator.Decision{Action: orchestrator.ActionDelete, Delete: ids}, nil
		case is("modify", "m"):
			raw, err := jsonArg(rest)
			if err != nil {
				return d, err
			}
			var todos []orchestrator.Todo
			if strings.HasPrefix(strings.TrimSpace(string(raw)), "[") {
				err = json.Unmarshal(raw, &todos)
			} else {
				var one orchestrator.Todo
				err = json.Unmarshal(raw, &one)
				todos = []orchestrator.Todo{one}
			}
			if err != nil {
				return d, fmt.Errorf("the changed todos are not a todo or a list of todos: %v", err)
			}
			return orchestrator.Decision{Action: orchestrator.ActionModify, Todos: todos}, nil
		}
		return d, fmt.Errorf("please answer verify, delete ID... or modify JSON (got %q)", line)
	}
	return d, fmt.Errorf("an approval point of kind %q this command does not know", kind)
}

// jsonArg reads a JSON argument given inline or as @FILE.
func jsonArg(s string) (json.RawMessage, error) {
	if path, ok := strings.CutPrefix(s, "@"); ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		s = string(data)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("give the JSON on the same line, or @FILE")
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("not JSON: %s", clip(s, 80))
	}
	return json.RawMessage(s), nil
}

// lineReader reads answers line by line from standard input in the
// background, so that Ctrl-C still ends the command while it waits.
type lineReader struct {
	r     io.Reader
	lines chan string
	done  chan struct{}
	// echo writes each line read to w: piped answers then read in the
	// transcript as if typed.
	echo    bool
	w       io.Writer
	started bool
}

func newLineReader(r io.Reader, echo bool, w io.Writer) *lineReader {
	return &lineReader{r: r, lines: make(chan string), done: make(chan struct{}), echo: echo, w: w}
}

// stop lets the background reader end when nothing reads its lines any
// more.
func (l *lineReader) stop() { close(l.done) }

func (l *lineReader) next(ctx context.Context) (string, error) {
	if !l.started {
		l.started = true
		go func() {
			sc := bufio.NewScanner(l.r)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			defer close(l.lines)
			for sc.Scan() {
				select {
				case l.lines <- sc.Text():
				case <-l.done:
					return
				}
			}
		}()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(l.w)
		return "", ctx.Err()
	case line, ok := <-l.lines:
		if !ok {
			fmt.Fprintln(l.w)
			return "", errNoDecision
		}
		if l.echo {
			fmt.Fprintln(l.w, line)
		}
		return line, nil
	}
}
