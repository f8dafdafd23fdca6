package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	guideagent "github.com/weftlabs/weft/examples/guide/agent"
	guideservice "github.com/weftlabs/weft/examples/guide/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// userEnv names the variable that names the memory's user when --user is
// not given.
const userEnv = "WEFT_USER"

// reviewConfig is weft run for an agent whose graph stops for the user to
// review a plan (guide).
type reviewConfig struct {
	runConfig
	// user names whose long-term memories the agent reads and writes.
	user string
	// approve is --approve: ask, or approve each plan at once (auto,
	// none).
	approve string
	stdin   io.Reader
}

// runReviewed runs an agent that stops for plan review: the question, then
// at each stop the plan and a question on standard error, answered from
// standard input (typed or piped); --thread without a question answers the
// review a saved run waits for, from another process.
func runReviewed(ctx context.Context, e examples.Example, c reviewConfig) (err error) {
	switch c.approve {
	case approveAsk, approveAuto, approveNone:
	default:
		return fmt.Errorf("--approve %q: want %s (ask to approve the plan), %s or %s (approve it without asking)", c.approve, approveAsk, approveAuto, approveNone)
	}
	if c.question == "" && (c.thread.id == "" || c.thread.isNew) {
		return fmt.Errorf("%w: give a question, or --thread ID alone to answer the plan a saved run waits for; e.g. weft run --agent %s %q",
			errNoPrompt, e.Name, "유튜브 쇼츠를 처음 만들어 보려고 해요. 어떤 순서로 하면 될까요?")
	}
	model, db, open, closeRun, err := openAgentRun(ctx, e, c.runConfig)
	if err != nil {
		return err
	}
	defer closeRun()
	// The reflection reports from its own goroutine while the run may
	// still print: its lines are kept, and told once it is done.
	var notes heldNotes
	open.OnMemory = func(user string, saved []string, err error) {
		switch {
		case err != nil:
			notes.add("· could not update %s's memory: %v", user, err)
		case len(saved) == 0:
			notes.add("· nothing new to remember about %s", user)
		}
		for _, s := range saved {
			notes.add("· remembered about %s: %s", user, s)
		}
	}
	a, err := e.Open(ctx, model, open)
	if err != nil {
		return fmt.Errorf("agent %s: %w", e.Name, err)
	}
	// Closing waits for the background reflection: after the answer.
	defer func() {
		cerr := a.Close()
		notes.tell(c.info)
		if cerr != nil && err == nil {
			err = fmt.Errorf("agent %s: %w", e.Name, cerr)
		}
	}()
	if a.Review == nil {
		return fmt.Errorf("agent %s: it does not stop for review", e.Name)
	}
	ctx = memory.WithUser(ctx, c.user)

	c.thread.where = db.Backend + " " + db.Target
	thread, err := pickThread(ctx, db.Saver, c.thread, c.info)
	if err != nil {
		return err
	}
	answerLater := fmt.Sprintf("weft run --agent %s --thread %s%s", e.Name, shellQuote(thread), c.thread.db)
	if c.user != guideagent.DefaultUser {
		answerLater += " --user " + shellQuote(c.user)
	}
	defer func() {
		err = onInterrupt(ctx, err, fmt.Sprintf("thread %s is saved up to its last step: continue it with %s", thread, answerLater))
	}()
	snap, err := state(ctx, a.Graph, thread)
	if err != nil {
		return err
	}
	_, pending := a.Review.Pending(snap)
	switch {
	case c.question != "" && pending:
		return fmt.Errorf("thread %s waits for its plan to be reviewed; answer it first with %s (without a question)", thread, answerLater)
	case c.question == "" && !pending && len(snap.Next) == 0:
		return fmt.Errorf("thread %s is not waiting for a review; ask something new with %s \"...\"", thread, answerLater)
	}
	p := &reviewPrinter{printer: printer{out: c.out, info: c.info, json: c.mode == react.JSONFormat}}
	run := func(in graph.Update, opts *graph.RunOptions) error {
		defer p.endLine()
		ctx := ctx
		if open.Tools != nil {
			// A run sees the tools of its start, whatever the MCP servers
			// do meanwhile.
			ctx = open.Tools.Pin(ctx)
		}
		opts.StreamModes = []graph.StreamMode{graph.StreamMessages, graph.StreamUpdates}
		opts.Busy = graph.BusyWait
		opts.OnBusy = func(*checkpoint.BusyError) { fmt.Fprintf(c.info, "thread %s is busy; waiting…\n", thread) }
		opts.Metadata = map[string]any{graphIDKey: e.Name}
		for ev, err := range a.Graph.Stream(ctx, in, opts) {
			if err != nil {
				p.endLine()
				var te *react.TurnError
				if errors.As(err, &te) {
					err = te
				}
				return fmt.Errorf("agent %s: %w", e.Name, err)
			}
			p.event(ev)
		}
		return nil
	}
	if c.question != "" {
		if err := run(guideagent.Input(c.question), &graph.RunOptions{ThreadID: thread}); err != nil {
			return err
		}
	}
	answers := newLineReader(c.stdin, !isTerminal(c.stdin), c.info)
	defer answers.stop()
	for {
		if snap, err = state(ctx, a.Graph, thread); err != nil {
			return err
		}
		if len(snap.Next) == 0 {
			return nil
		}
		plan, pending := a.Review.Pending(snap)
		if !pending {
			// Stopped at the breakpoint on the loop's way back, or a
			// turn cut short: run it on, without the breakpoint.
			if err := run(graph.Update{}, &graph.RunOptions{ThreadID: thread, InterruptBefore: []string{}}); err != nil {
				return err
			}
			continue
		}
		prompt := promptTo(c.info)
		fmt.Fprintf(prompt, "\nplan (%d sub-tasks), paused at checkpoint %s:\n", len(plan), snap.Config.CheckpointID)
		for i, st := range plan {
			fmt.Fprintf(prompt, "  %d. %s\n", i+1, st)
		}
		var ans reviewAnswer
		if c.approve == approveAsk {
			ans, err = askReview(ctx, answers, prompt)
		} else {
			fmt.Fprintf(prompt, "%sapprove (--approve %s)\n", reviewPrompt, c.approve)
			ans.kind = reviewApprove
		}
		if errors.Is(err, errNoDecision) {
			return fmt.Errorf("standard input ended before the plan was approved, edited or rejected; the run is saved: answer later with %s", answerLater)
		}
		if err != nil {
			return err
		}
		opts := &graph.RunOptions{ThreadID: thread}
		switch ans.kind {
		case reviewApprove:
			fmt.Fprintln(c.info, "· approved; recommending a tool for each sub-task")
			opts.InterruptBefore = []string{}
		default:
			var u graph.Update
			switch ans.kind {
			case reviewEdit:
				u = a.Review.Edit(ans.tasks)
				fmt.Fprintf(c.info, "· plan edited to %d sub-tasks\n", len(ans.tasks))
				opts.InterruptBefore = []string{}
			case reviewFeedback:
				u = a.Review.Feedback(ans.text)
				fmt.Fprintln(c.info, "· planning again from your feedback")
			case reviewReject:
				u = a.Review.Reject(ans.text)
				fmt.Fprintln(c.info, "· plan rejected; answering without running tools")
			}
			// The answer is written as the planning node's, against the
			// checkpoint that was shown: a thread another process moved on
			// meanwhile is not overwritten.
			now, err := state(ctx, a.Graph, thread)
			if err != nil {
				return err
			}
			if now.Config.CheckpointID != snap.Config.CheckpointID {
				fmt.Fprintf(c.info, "· thread %s changed while you answered; here it is again\n", thread)
				continue
			}
			uctx, cancel := bounded(ctx)
			_, err = a.Graph.UpdateState(uctx, snap.Config, u, a.Review.AsNode)
			cancel()
			if err != nil {
				return fmt.Errorf("thread %s: recording the answer: %w", thread, err)
			}
		}
		if err := run(graph.Update{}, opts); err != nil {
			return err
		}
	}
}

// The kinds of review answers.
const (
	reviewApprove  = "approve"
	reviewEdit     = "edit"
	reviewFeedback = "feedback"
	reviewReject   = "reject"
)

// reviewAnswer is the user's answer to a plan.
type reviewAnswer struct {
	kind  string
	tasks []string
	// text is the feedback, or the reason of a rejection.
	text string
}

const reviewPrompt = "approve, edit (sub-tasks separated by ';', or feedback in words) or reject [reason]? "

// askReview reads answers until one can be used.
func askReview(ctx context.Context, answers *lineReader, w io.Writer) (reviewAnswer, error) {
	for {
		fmt.Fprint(w, reviewPrompt)
		line, err := answers.next(ctx)
		if err != nil {
			return reviewAnswer{}, err
		}
		ans, err := parseReview(line)
		if err == nil && ans.kind == reviewEdit && len(ans.tasks) == 0 && ans.text == "" {
			fmt.Fprint(w, "the new sub-tasks, separated by ';' (or feedback in words): ")
			if line, err = answers.next(ctx); err != nil {
				return reviewAnswer{}, err
			}
			ans, err = parseReview("edit " + line)
		}
		if err != nil {
			fmt.Fprintln(w, err)
			continue
		}
		if ans.kind == reviewEdit && len(ans.tasks) == 0 && ans.text == "" {
			fmt.Fprintln(w, "nothing given; the plan needs at least one sub-task")
			continue
		}
		return ans, nil
	}
}

// parseReview reads "approve", "edit A; B; C" (a new plan), "edit WORDS"
// or "feedback WORDS" (feedback the plan is made again from), "reject
// [reason]"; a first letter is enough.
func parseReview(line string) (reviewAnswer, error) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "approve", "a", "yes", "y", "ok":
		return reviewAnswer{kind: reviewApprove}, nil
	case "reject", "r", "no", "n":
		return reviewAnswer{kind: reviewReject, text: rest}, nil
	case "feedback", "f":
		if rest == "" {
			return reviewAnswer{}, errors.New("feedback takes your words: feedback use only free tools")
		}
		return reviewAnswer{kind: reviewFeedback, text: rest}, nil
	case "edit", "e":
		if !strings.Contains(rest, ";") {
			if rest == "" {
				return reviewAnswer{kind: reviewEdit}, nil
			}
			return reviewAnswer{kind: reviewFeedback, text: rest}, nil
		}
		var tasks []string
		for _, t := range strings.Split(rest, ";") {
			if t = strings.TrimSpace(t); t != "" {
				tasks = append(tasks, t)
			}
		}
		return reviewAnswer{kind: reviewEdit, tasks: tasks}, nil
	}
	return reviewAnswer{}, fmt.Errorf("please answer approve, edit or reject (got %q)", line)
}

// reviewPrinter shows a guide run: the guide's tokens on out; the route,
// the plan's progress, tool calls and their results on info.
type reviewPrinter struct {
	printer
}

func (p *reviewPrinter) note(format string, args ...any) {
	p.endLine()
	fmt.Fprintf(p.info, format+"\n", args...)
}

func (p *reviewPrinter) event(ev graph.Event) {
	if len(ev.Namespace) > 0 {
		return
	}
	switch d := ev.Data.(type) {
	case graph.MessageEvent:
		if d.Node != guideagent.GuideNode {
			return
		}
		switch m := d.Message.(type) {
		case llm.Chunk:
			if p.streamed == nil {
				p.streamed = map[string]string{}
			}
			p.streamed[d.TaskID] += m.Content
			p.token(m.Content)
		case llm.Message:
			if p.streamed[d.TaskID] != m.Text() {
				p.endLine()
				p.token(m.Text())
			}
		}
	case graph.NodeUpdate:
		switch d.Node {
		case guideagent.RouterNode:
			if complex, ok := graph.Written(d.Update, guideagent.IsComplexTask); ok {
				if complex {
					p.note("· a task of several steps: planning it")
				} else {
					p.note("· a question: answering from the knowledge base")
				}
			}
		case guideagent.PlanningNode:
			if tasks, ok := graph.Written(d.Update, guideagent.SubTasks); ok && len(tasks) > 0 {
				p.note("· planned %d sub-tasks", len(tasks))
			}
		case guideagent.GuideNode:
			// A question answered without the tool loop: the guide looked
			// the knowledge base up itself.
			if docs, ok := graph.Written(d.Update, guideagent.RetrievedDocs); ok && len(docs) > 0 {
				cites := make([]string, len(docs))
				for i, doc := range docs {
					cites[i] = fmt.Sprintf("[%d] %s", i+1, doc.Citation)
				}
				p.note("· from the knowledge base: %s", clip(strings.Join(cites, "; "), 220))
			}
		case guideagent.ReflectionNode:
			p.note("· reflecting on the conversation in the background")
		}
		for _, m := range written(d.Update) {
			p.shown(d.Node, m)
		}
	}
}

// written are the messages an update writes.
func written(u graph.Update) []llm.Message {
	var out []llm.Message
	for _, w := range u.Writes() {
		if msgs, ok := w.Value.([]llm.Message); ok && w.Channel == guideagent.Messages.Name() {
			out = append(out, msgs...)
		}
	}
	return out
}

// shown prints a message a node wrote, unless it streamed already.
func (p *reviewPrinter) shown(node string, m llm.Message) {
	fallback := m.ResponseMetadata[react.MetaFallback] == true
	switch {
	case m.Type == llm.TypeTool:
		p.note("← %s: %s", m.Name, p.summary(m))
	case m.Type != llm.TypeAI:
	case fallback && node != guideagent.GuideNode:
		// The answer the user gets when a model call failed; the cause
		// follows as the run's error.
		p.endLine()
		p.token(m.Text())
	case node == guideagent.RecommendNode:
		// In JSON mode a tool call's text is the model's raw JSON.
		if text := strings.TrimSpace(m.Text()); text != "" && !(p.json && len(m.ToolCalls) > 0) {
			p.note("· %s", clip(text, 200))
		}
		p.calls(m.ToolCalls)
		p.invalidCalls(m.InvalidToolCalls)
	}
}

// summary describes a tool result of the guide's tools in a few words:
// the citations of the passages found, the sum computed, the
// recommendation saved.
func (p *reviewPrinter) summary(m llm.Message) string {
	if m.IsError() {
		return summarize(m)
	}
	var s string
	switch m.Name {
	case guideagent.ToolRetrieveDocs:
		if r, err := tool.ResultOf[rag.Retrieved](m); err == nil {
			cites := make([]string, 0, len(r.Data.Passages))
			for _, ps := range r.Data.Passages {
				cites = append(cites, ps.Citation)
			}
			s = fmt.Sprintf("%d passages: %s", len(cites), strings.Join(cites, "; "))
			if len(cites) == 0 {
				s = "no passage matches"
			}
		}
	case guideagent.ToolWebSearch:
		if r, err := tool.ResultOf[guideagent.WebResults](m); err == nil {
			urls := make([]string, 0, len(r.Data.Results))
			for _, w := range r.Data.Results {
				urls = append(urls, w.URL)
			}
			s = fmt.Sprintf("%d results: %s", len(urls), strings.Join(urls, "; "))
		}
	case guideagent.ToolCalculator:
		if r, err := tool.ResultOf[guideagent.CalcResult](m); err == nil {
			s = r.Data.Expression + " = " + guideservice.Format(r.Data.Result)
		}
	case guideagent.ToolGetTime:
		if r, err := tool.ResultOf[guideservice.Now](m); err == nil {
			s = fmt.Sprintf("%s, %s (%s)", r.Data.Time, r.Data.Weekday, r.Data.Timezone)
		}
	case guideagent.ToolSaveRecommendation:
		if r, err := tool.ResultOf[guideagent.SaveInput](m); err == nil {
			s = r.Data.SubTask + " → " + r.Data.Recommendation
		}
	case guideagent.ToolReadMemory:
		if r, err := tool.ResultOf[[]memory.Memory[memory.Fact]](m); err == nil {
			texts := make([]string, 0, len(r.Data))
			for _, mem := range r.Data {
				texts = append(texts, mem.Content.Text())
			}
			s = fmt.Sprintf("%d memories: %s", len(texts), strings.Join(texts, "; "))
			if len(texts) == 0 {
				s = "nothing remembered yet"
			}
		}
	case guideagent.ToolWriteMemory:
		if r, err := tool.ResultOf[memory.ManageResult](m); err == nil {
			s = r.Data.Action
		}
	}
	if s == "" {
		return summarize(m)
	}
	return "ok " + clip(s, 220)
}
