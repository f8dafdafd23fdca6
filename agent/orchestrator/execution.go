package orchestrator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// dispatcher is document 003's execution_dispatcher. It skips the todos
// whose dependencies failed or were skipped, finds the ready ones (every
// dependency done), and sends each to execute_todo in one step (Send),
// so independent todos run at the same time. It stops first for a pause
// when one is due, and goes through step preparation and approval when
// steps are approved or prepared in detail. With nothing left to run it
// hands off to the response.
func (a *Agent) dispatcher(ctx context.Context, s graph.State) (graph.Update, error) {
	todos := Todos.Get(s)
	wave := Wave.Get(s) + 1
	var u graph.Update
	if Wave.Get(s) == 0 && PausedWave.Get(s) == 0 {
		emit(ctx, events.LayerStart{Layer: events.LayerExecution, Node: NodeDispatcher})
		if p := PlanState.Get(s); p != nil {
			emit(ctx, events.Status{Message: fmt.Sprintf("execution strategy: %s", p.Strategy), Node: NodeDispatcher, Total: len(todos)})
		}
	}
	if skipped := cascade(todos); len(skipped) > 0 {
		for _, t := range skipped {
			emit(ctx, a.progress(t, ""))
		}
		todos = withChanges(todos, skipped...)
		u = u.And(Todos.Write(skipped), Results.Write(skippedResults(skipped, a.now())),
			Trace.Write(a.traceTodos(s, NodeDispatcher, "skipped", skipped)))
	}
	ready := readyTodos(todos)
	if len(ready) == 0 {
		// Nothing can run: every todo ended. (A pending todo left here
		// would wait forever; it is skipped, so the task still ends.)
		var blocked []Todo
		for _, t := range todos {
			if !t.Status.Ended() {
				blocked = append(blocked, t.With(func(n *Todo) { n.Status = StatusSkipped; n.Reason = "blocked: its dependencies never finished" }))
			}
		}
		if len(blocked) > 0 {
			u = u.And(Todos.Write(blocked), Results.Write(skippedResults(blocked, a.now())))
		}
		return u.Goto(NodeResponse), nil
	}
	if n := a.cfg.Execution.MaxParallel; n > 0 && len(ready) > n {
		ready = ready[:n]
	}
	if a.asks && PausedWave.Get(s) != wave && (a.cfg.Approvals.askAt(a.cfg.Approvals.Pause) || a.pauseRequested(ctx)) {
		return u.Goto(NodePause), nil
	}
	if a.cfg.detailed() || (a.asks && a.cfg.Approvals.askAt(a.cfg.Approvals.Step)) {
		return u.Goto(NodePreparation), nil
	}
	steps := make([]Step, len(ready))
	for i, t := range ready {
		steps[i] = a.prepare(ctx, s, t, false)
	}
	return u.And(a.dispatch(s, steps, wave)), nil
}

func (a *Agent) pauseRequested(ctx context.Context) bool {
	return a.pauser != nil && a.pauser.PauseRequested(ctx, threadOf(ctx))
}

// cascade returns the skipped versions of the pending todos that can
// never run: a todo they depend on failed (and was decided) or was
// skipped, directly or through others.
func cascade(todos []Todo) []Todo {
	status := make(map[string]Status, len(todos))
	for _, t := range todos {
		status[t.ID] = t.Status
		if t.Status == StatusFailed && !t.Decided {
			status[t.ID] = StatusRunning // waits for its decision
		}
	}
	var out []Todo
	for changed := true; changed; {
		changed = false
		for _, t := range todos {
			if status[t.ID] != StatusPending {
				continue
			}
			for _, d := range t.DependsOn {
				if st := status[d]; st == StatusFailed || st == StatusSkipped {
					n := t.With(func(n *Todo) {
						n.Status = StatusSkipped
						n.Reason = fmt.Sprintf("its dependency %s %s", d, st)
					})
					out = append(out, n)
					status[t.ID] = StatusSkipped
					changed = true
					break
				}
			}
		}
	}
	return out
}

// readyTodos returns the pending todos whose dependencies are all done,
// in plan order.
func readyTodos(todos []Todo) []Todo {
	done := map[string]bool{}
	for _, t := range todos {
		if t.Status == StatusDone {
			done[t.ID] = true
		}
	}
	var ready []Todo
	for _, t := range todos {
		if t.Status != StatusPending {
			continue
		}
		ok := true
		for _, d := range t.DependsOn {
			ok = ok && done[d]
		}
		if ok {
			ready = append(ready, t)
		}
	}
	return ready
}

// skippedResults records skipped todos as results, so the response knows
// what was not done and why.
func skippedResults(todos []Todo, now time.Time) map[string]Result {
	out := make(map[string]Result, len(todos))
	for _, t := range todos {
		out[t.ID] = Result{TodoID: t.ID, Status: StatusSkipped, Tool: t.Tool, Error: t.Reason, Attempt: t.Attempt, Started: now.UTC(), Ended: now.UTC()}
	}
	return out
}

func (a *Agent) traceTodos(s graph.State, node, event string, todos []Todo) []TraceEntry {
	out := make([]TraceEntry, len(todos))
	for i, t := range todos {
		out[i] = a.trace(s, events.LayerExecution, node, t.ID, event, t.Reason)
	}
	return out
}

// dispatch sends each step to execute_todo, marking its todo running.
func (a *Agent) dispatch(s graph.State, steps []Step, wave int) graph.Update {
	running := make([]Todo, len(steps))
	sends := make([]graph.Send, len(steps))
	for i, st := range steps {
		t := st.Todo.With(func(n *Todo) {
			n.Status = StatusRunning
			n.Attempt++
			n.Reason = ""
			n.Decided = false
		})
		st.Todo = t
		running[i] = t
		sends[i] = graph.Send{Node: NodeExecuteTodo, Arg: StepInput.Write(st)}
	}
	return Todos.Write(running).And(
		Wave.Write(wave),
		Prepared.Write(nil),
		Trace.Write(a.traceTodos(s, NodeDispatcher, "dispatched", running)),
		graph.SendTo(sends...),
	)
}

// prepare is document 001's step preparation for one todo: the top tools
// for it (retrieved, then boosted and avoided by tool memory); in
// detailed mode also the model's parameters, the missing required fields
// and a readiness score; and memory's acceptance prediction.
func (a *Agent) prepare(ctx context.Context, s graph.State, t Todo, detailed bool) Step {
	st := Step{Todo: t, Tool: t.Tool, Params: t.Params, Mode: PrepareLight, Task: Task.Get(s), Inputs: map[string]Result{}}
	results := Results.Get(s)
	for _, d := range t.DependsOn {
		if r, ok := results[d]; ok {
			st.Inputs[d] = r
		}
	}
	var notes []string
	user := a.userOf(ctx, s)
	e := a.executors[t.Executor]
	if e != nil && len(e.names) > 0 {
		ranked, err := a.retriever.RetrieveTools(ctx, RetrieveRequest{User: user, Query: t.Title, Among: e.names, K: a.cfg.Execution.TopTools})
		if err != nil {
			notes = append(notes, a.toldNote(ctx, t, "tool retrieval failed: "+err.Error()))
		}
		avoid := map[string]bool{}
		if a.memory.Tools != nil && user != "" {
			mctx, cancel := context.WithTimeout(ctx, a.cfg.Memory.Timeout)
			adv, err := a.memory.Tools.ToolAdvice(mctx, user, t.Title)
			cancel()
			if err != nil {
				notes = append(notes, a.toldNote(ctx, t, memoryHookFailures+" (tool advice): "+err.Error()))
			}
			for i := range ranked {
				ranked[i].Score += adv.Boost[ranked[i].Name]
			}
			for _, n := range adv.Avoid {
				avoid[n] = true
			}
			slices.SortStableFunc(ranked, func(x, y ScoredTool) int { return cmp.Compare(y.Score, x.Score) })
		}
		for _, r := range ranked {
			if !avoid[r.Name] {
				st.Tools = append(st.Tools, r)
			}
		}
		if avoid[t.Tool] {
			note := "tool memory advises against " + t.Tool + " (it failed repeatedly for similar steps)"
			if detailed && len(st.Tools) > 0 {
				// A tool switched in detailed mode gets parameters from
				// the model below; the plan's are for the other tool.
				st.Tool, st.Params = st.Tools[0].Name, json.RawMessage("{}")
				note += ": using " + st.Tool + " instead"
			} else {
				note += "; light preparation runs the plan's tool all the same"
			}
			notes = append(notes, a.toldNote(ctx, t, note))
		}
	}
	if detailed {
		st.Mode = PrepareDetailed
		if ts := a.tools[st.Tool]; ts != nil {
			st.Schema = ts.tool.Spec().Parameters
			if note := a.proposeParams(ctx, s, &st, ts); note != "" {
				notes = append(notes, a.toldNote(ctx, t, note))
			}
			st.Missing = missing(st.Params, ts.required)
			st.Readiness = 1
			if n := len(ts.required); n > 0 {
				st.Readiness = float64(n-len(st.Missing)) / float64(n)
			}
		}
	}
	if a.memory.Acceptance != nil && user != "" && a.asks && a.cfg.Approvals.askAt(a.cfg.Approvals.Step) {
		mctx, cancel := context.WithTimeout(ctx, a.cfg.Memory.Timeout)
		p, known, err := a.memory.Acceptance.PredictAcceptance(mctx, user, st)
		cancel()
		switch {
		case err != nil:
			notes = append(notes, a.toldNote(ctx, t, memoryHookFailures+" (acceptance prediction): "+err.Error()))
		case known:
			st.Predicted = &p
		}
	}
	st.Note = strings.Join(notes, "; ")
	return st
}

// toldNote is a note of step preparation that is also told in a status
// event: a failure, which the step's note alone would hide when no person
// sees the step (light mode, step approval off).
func (a *Agent) toldNote(ctx context.Context, t Todo, note string) string {
	emit(ctx, events.Status{Message: fmt.Sprintf("preparing %s: %s", t.ID, note), Node: NodePreparation})
	return note
}

// proposeParams asks the execution model for the tool's parameters
// (detailed mode). What it proposes goes over the plan's parameters; when
// the tool refuses the result, the plan's stay, and the note says why.
func (a *Agent) proposeParams(ctx context.Context, s graph.State, st *Step, ts *toolState) string {
	var inputs strings.Builder
	for _, id := range sortedKeys(st.Inputs) {
		r := st.Inputs[id]
		fmt.Fprintf(&inputs, "- %s (%s): %s\n", id, r.Tool, clip(string(r.Data), 1500))
	}
	spec := ts.tool.Spec()
	prompt := fmt.Sprintf("Step: %s\nTool: %s: %s\nParameters schema: %s\nParameters in the plan: %s\n",
		st.Todo.Title, spec.Name, spec.Description, compact(spec.Parameters), compact(st.Params))
	if inputs.Len() > 0 {
		prompt += "Results of the steps before it:\n" + inputs.String()
	}
	msgs := []llm.Message{llm.System(a.cfg.Prompts.Preparation), llm.Human(prompt)}
	opts := &llm.StructuredOptions{Name: "parameters", Description: "The tool's parameters for this step.", Method: a.structuredMethod()}
	proposed, err := llm.Structured[map[string]any](ctx, a.models.Execution, msgs, opts)
	if err != nil {
		return "the model proposed no parameters: " + err.Error()
	}
	merged := map[string]any{}
	_ = json.Unmarshal(st.Params, &merged)
	maps.Copy(merged, proposed)
	raw, _ := json.Marshal(merged)
	if err := ts.tool.Validate(raw); err != nil {
		return "the tool refuses the model's parameters, so the plan's stay: " + err.Error()
	}
	st.Params = raw
	return ""
}

// missing lists the required properties params lacks.
func missing(params json.RawMessage, required []string) []string {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(params, &obj)
	var out []string
	for _, r := range required {
		if v, ok := obj[r]; !ok || string(v) == "null" {
			out = append(out, r)
		}
	}
	return out
}

// preparation is document 001's step_preparation for the wave's ready
// todos, one after another in plan order (so a scripted model's replies
// come in a known order).
func (a *Agent) preparation(ctx context.Context, s graph.State) (graph.Update, error) {
	ready := readyTodos(Todos.Get(s))
	if n := a.cfg.Execution.MaxParallel; n > 0 && len(ready) > n {
		ready = ready[:n]
	}
	steps := make([]Step, len(ready))
	for i, t := range ready {
		steps[i] = a.prepare(ctx, s, t, a.cfg.detailed())
	}
	return Prepared.Write(steps).Goto(NodeStepApproval), nil
}

// stepApproval is the step approval point (document 001's step_approval
// and process_step_feedback), for each prepared step in turn: accept runs
// it; edit replaces its parameters, checked against the tool's schema
// (asked again when the tool refuses them); skip does not run it. A step
// memory predicts to be accepted with a probability above the threshold
// is approved without asking. The approved steps are then dispatched
// together.
func (a *Agent) stepApproval(ctx context.Context, s graph.State) (graph.Update, error) {
	steps := Prepared.Get(s)
	asking := a.asks && a.cfg.Approvals.askAt(a.cfg.Approvals.Step)
	var approved []Step
	var skipped []Todo
	var records []ApprovalRecord
	var byMemory []string
	record := func(st Step, action Action, by, reason string) {
		records = append(records, ApprovalRecord{Task: st.Task, Kind: KindStep, Action: action, By: by, TodoID: st.Todo.ID, Reason: reason, Time: a.now().UTC()})
	}
	for _, st := range steps {
		switch {
		case !asking:
			record(st, ActionAccept, "auto", "")
			approved = append(approved, st)
			continue
		case st.Predicted != nil && *st.Predicted > a.cfg.Memory.AcceptProbability:
			reason := fmt.Sprintf("predicted acceptance %.2f", *st.Predicted)
			record(st, ActionAccept, "memory", reason)
			byMemory = append(byMemory, fmt.Sprintf("step %s approved by memory: %s", st.Todo.ID, reason))
			approved = append(approved, st)
			continue
		}
		// The person sees the tool's description and schema (light mode
		// prepared the step without them), to edit its parameters.
		shown := st
		if ts := a.tools[st.Tool]; ts != nil {
			spec := ts.tool.Spec()
			shown.Description = spec.Description
			if len(shown.Schema) == 0 {
				shown.Schema = spec.Parameters
			}
		}
		req := Request{Kind: KindStep, Message: fmt.Sprintf("Run %s: %s with %s?", st.Todo.ID, st.Todo.Title, st.Tool),
			Actions: []Action{ActionAccept, ActionEdit, ActionSkip}, Step: &shown}
	asking:
		for {
			d, err := ask(ctx, req)
			if err != nil {
				return graph.Update{}, err
			}
			switch d.Action {
			case ActionAccept:
				if len(st.Missing) > 0 {
					req.Problem = fmt.Sprintf("required parameters %s have no value: edit them or skip the step", strings.Join(st.Missing, ", "))
					continue
				}
				record(st, ActionAccept, "user", d.Reason)
				approved = append(approved, st)
				break asking
			case ActionEdit:
				ts := a.tools[st.Tool]
				if len(bytes.TrimSpace(d.Params)) == 0 {
					req.Problem = `edit needs the parameters: {"action": "edit", "params": {...}}`
					continue
				}
				if ts == nil {
					req.Problem = "the step has no tool whose parameters could be edited"
					continue
				}
				if err := ts.tool.Validate(d.Params); err != nil {
					req.Problem = "the edited parameters do not fit the tool's schema: " + err.Error()
					continue
				}
				params := slices.Clone(d.Params)
				st.Params = params
				st.Missing = nil
				st.Readiness = 1
				st.Todo = st.Todo.With(func(n *Todo) { n.Params = params; n.Tool = st.Tool })
				record(st, ActionEdit, "user", d.Reason)
				approved = append(approved, st)
				break asking
			case ActionSkip:
				reason := "skipped by the user"
				if r := strings.TrimSpace(d.Reason); r != "" {
					reason += ": " + r
				}
				t := st.Todo.With(func(n *Todo) { n.Status = StatusSkipped; n.Reason = reason })
				skipped = append(skipped, t)
				record(st, ActionSkip, "user", d.Reason)
				break asking
			default:
				req.Problem = fmt.Sprintf("unknown action %q: answer %s", d.Action, actionList(req.Actions))
			}
		}
	}
	// Told only now: until its last question is answered the node runs
	// again from its top at each resume.
	for _, m := range byMemory {
		emit(ctx, events.Status{Message: m, Node: NodeStepApproval})
	}
	for _, t := range skipped {
		emit(ctx, a.progress(t, ""))
	}
	u := ApprovalHistory.Write(records)
	if len(skipped) > 0 {
		u = u.And(Todos.Write(skipped), Results.Write(skippedResults(skipped, a.now())), Trace.Write(a.traceTodos(s, NodeStepApproval, "skipped", skipped)))
	}
	if len(approved) == 0 {
		return u.And(Prepared.Write(nil)).Goto(NodeCollector), nil
	}
	return u.And(a.dispatch(s, approved, Wave.Get(s)+1)), nil
}

// executeTodo is document 003's execute_todo: one task per todo, started
// by a Send with the prepared step. It runs the step on its executor,
// saves the result's files, and writes the todo's new version and its
// result.
func (a *Agent) executeTodo(ctx context.Context, s graph.State) (graph.Update, error) {
	st := StepInput.Get(s)
	t := st.Todo
	emit(ctx, a.progress(t, ""))
	started := a.now().UTC()
	rctx, cancel := context.WithTimeout(withInputs(ctx, st.Inputs), a.cfg.Execution.TodoTimeout)
	r := a.run(rctx, st)
	cancel()
	if err := ctx.Err(); err != nil {
		// The run is being stopped: nothing is recorded, and the todo
		// runs again when the thread is resumed.
		return graph.Update{}, err
	}
	r.TodoID, r.Attempt, r.Started, r.Ended = t.ID, t.Attempt, started, a.now().UTC()
	final := t.With(func(n *Todo) {
		n.Status = r.Status
		n.Reason = ""
		if r.Status == StatusFailed {
			n.Reason = r.Error
		}
	})
	r.Files = a.saveStep(ctx, threadOf(ctx), st.Task, final, r)
	emit(ctx, a.progress(final, r.Method))
	tr := TraceEntry{Task: st.Task, Layer: events.LayerExecution, Node: NodeExecuteTodo, TodoID: t.ID, Event: string(r.Status),
		Detail: clip(cmp.Or(r.Error, r.Method+" "+r.Tool), 300), Tool: r.Tool, Method: r.Method, Attempt: r.Attempt, Time: a.now().UTC()}
	return Todos.Write([]Todo{final}).And(Results.Write(map[string]Result{t.ID: r}), Trace.Write([]TraceEntry{tr})), nil
}

// run runs a step: the executor's own Run, or the recommended tool with
// its parameters, checked for the marks of a failure, and when that fails
// the ReAct fallback over the executor's tools.
func (a *Agent) run(ctx context.Context, st Step) Result {
	e := a.executors[st.Todo.Executor]
	if e == nil {
		return Result{Status: StatusFailed, ErrorCode: "unknown_executor", Error: fmt.Sprintf("no executor %q", st.Todo.Executor)}
	}
	if e.Run != nil {
		r, err := e.Run(ctx, st)
		r.Method = cmp.Or(r.Method, "executor")
		r.Status = StatusDone
		if err != nil {
			r.Status, r.Error = StatusFailed, err.Error()
			r.ErrorCode = cmp.Or(r.ErrorCode, "executor_error")
		} else if why := failureIn(r.Data, a.cfg.Execution.ErrorPatterns); why != "" {
			r.Status, r.ErrorCode, r.Error = StatusFailed, "error_pattern", why
		}
		return r
	}
	r := a.runTool(ctx, st)
	if r.Status == StatusDone || e.react == nil || ctx.Err() != nil {
		return r
	}
	fb := a.fallback(ctx, e, st, r)
	if fb.Status == StatusDone {
		return fb
	}
	r.Error = fmt.Sprintf("%s; the ReAct fallback failed too: %s", r.Error, fb.Error)
	r.ToolsUsed = append(r.ToolsUsed, fb.ToolsUsed...)
	r.Text = fb.Text
	return r
}

// runTool runs the step's tool with its parameters.
func (a *Agent) runTool(ctx context.Context, st Step) Result {
	r := Result{Tool: st.Tool, Method: "tool", Params: st.Params, ToolsUsed: []string{st.Tool}}
	ts := a.tools[st.Tool]
	if ts == nil {
		r.Status, r.ErrorCode, r.Error = StatusFailed, tool.CodeUnknownTool, fmt.Sprintf("no tool %q", st.Tool)
		return r
	}
	env, err := ts.tool.Run(ctx, st.Params, a.cfg.Execution.ToolTimeout)
	r.Meta = env.Meta
	if err != nil {
		r.Status, r.ErrorCode, r.Error = StatusFailed, env.ErrorCode, env.Error
		return r
	}
	data, jerr := json.Marshal(env.Data)
	if jerr != nil {
		r.Status, r.ErrorCode, r.Error = StatusFailed, "invalid_result", "the tool's data is not JSON: "+jerr.Error()
		return r
	}
	r.Data = data
	if why := failureIn(data, a.cfg.Execution.ErrorPatterns); why != "" {
		r.Status, r.ErrorCode, r.Error = StatusFailed, "error_pattern", why
		return r
	}
	r.Status = StatusDone
	return r
}

// fallback runs the ReAct sub-agent over the executor's tools on the step
// (document 001's autonomous ReAct execution). It succeeds when the
// sub-agent answered and its last tool call succeeded.
func (a *Agent) fallback(ctx context.Context, e *executorState, st Step, failed Result) Result {
	r := Result{Method: "react"}
	var b strings.Builder
	fmt.Fprintf(&b, "Step: %s\n", st.Todo.Title)
	fmt.Fprintf(&b, "The recommended tool %s with parameters %s failed: %s\n", st.Tool, compact(st.Params), failed.Error)
	if len(st.Inputs) > 0 {
		b.WriteString("Results of the steps before it:\n")
		for _, id := range sortedKeys(st.Inputs) {
			in := st.Inputs[id]
			fmt.Fprintf(&b, "- %s (%s): %s\n", id, in.Tool, clip(string(in.Data), 1500))
		}
	}
	b.WriteString("Carry out the step with the tools.")
	final, err := e.react.Invoke(ctx, react.Messages.Write(llm.Human(b.String())), nil)
	if err != nil {
		r.Status, r.ErrorCode, r.Error = StatusFailed, "react_error", err.Error()
		return r
	}
	msgs := react.Messages.Get(final)
	out := react.OutcomeOf(msgs)
	r.Text, r.ToolsUsed = out.Answer, out.ToolsUsed
	if out.Fallback {
		r.Status, r.ErrorCode, r.Error = StatusFailed, "react_"+string(out.Stop), "the sub-agent gave no answer: "+string(out.Stop)
		if out.Err != nil {
			r.Error = out.Err.Error()
		}
		return r
	}
	// The last tool result of the turn is the step's data.
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Type == llm.TypeHuman {
			break
		}
		if m.Type != llm.TypeTool {
			continue
		}
		env, err := tool.ResultOf[json.RawMessage](m)
		if err != nil || !env.Success {
			r.Status, r.ErrorCode, r.Error = StatusFailed, cmp.Or(env.ErrorCode, "tool_error"), cmp.Or(env.Error, fmt.Sprint(err))
			r.Tool = m.Name
			return r
		}
		r.Tool, r.Data, r.Meta = m.Name, env.Data, env.Meta
		if why := failureIn(env.Data, a.cfg.Execution.ErrorPatterns); why != "" {
			r.Status, r.ErrorCode, r.Error = StatusFailed, "error_pattern", why
			return r
		}
		r.Status = StatusDone
		return r
	}
	r.Status, r.ErrorCode, r.Error = StatusFailed, "no_tool_call", "the sub-agent answered without calling a tool"
	return r
}

// collector is document 003's execution_collector (document 001's
// step_completion and check_continue): it reports progress, sends a
// failure to the error approval point, and loops back to the dispatcher
// until every todo is done, failed or skipped.
func (a *Agent) collector(ctx context.Context, s graph.State) (graph.Update, error) {
	todos := Todos.Get(s)
	ended, total := counts(todos)
	emit(ctx, events.Status{Message: fmt.Sprintf("%d/%d todos ended", ended, total), Node: NodeCollector, Done: ended, Total: total})
	emit(ctx, sessionState(threadOf(ctx), Task.Get(s), events.LayerExecution, todos))
	var undecided []Todo
	for _, t := range todos {
		if t.Status == StatusFailed && !t.Decided {
			undecided = append(undecided, t)
		}
	}
	var u graph.Update
	if len(undecided) > 0 {
		if a.asks && a.cfg.Approvals.askAt(a.cfg.Approvals.Error) {
			return u.Goto(NodeErrorApproval), nil
		}
		decided := make([]Todo, len(undecided))
		for i, t := range undecided {
			decided[i] = t.With(func(n *Todo) { n.Decided = true })
		}
		u = Todos.Write(decided).And(ApprovalHistory.Write(a.errorRecords(Task.Get(s), decided, ActionSkip, "auto")))
	}
	if ended == total {
		return u.Goto(NodeResponse), nil
	}
	return u.Goto(NodeDispatcher), nil
}

func (a *Agent) errorRecords(task int, todos []Todo, action Action, by string) []ApprovalRecord {
	out := make([]ApprovalRecord, len(todos))
	for i, t := range todos {
		out[i] = ApprovalRecord{Task: task, Kind: KindError, Action: action, By: by, TodoID: t.ID, Reason: t.Reason, Time: a.now().UTC()}
	}
	return out
}

// errorApproval is document 003's error interrupt, for each failed todo
// in turn: retry runs it again, skip leaves it (its dependents are
// skipped), abort stops the execution and goes to the response with what
// succeeded.
func (a *Agent) errorApproval(ctx context.Context, s graph.State) (graph.Update, error) {
	todos := Todos.Get(s)
	results := Results.Get(s)
	var changed []Todo
	var records []ApprovalRecord
	for _, t := range todos {
		if t.Status != StatusFailed || t.Decided {
			continue
		}
		req := Request{Kind: KindError, Message: fmt.Sprintf("%s (%s) failed: %s", t.ID, t.Title, clip(t.Reason, 300)),
			Actions: []Action{ActionRetry, ActionSkip, ActionAbort}, Failure: &FailureRequest{Todo: t, Result: results[t.ID]}}
	asking:
		for {
			d, err := ask(ctx, req)
			if err != nil {
				return graph.Update{}, err
			}
			rec := ApprovalRecord{Task: Task.Get(s), Kind: KindError, Action: d.Action, By: "user", TodoID: t.ID, Reason: d.Reason, Time: a.now().UTC()}
			switch d.Action {
			case ActionRetry:
				n := t.With(func(n *Todo) { n.Status = StatusPending; n.Reason = ""; n.Decided = false })
				changed, records = append(changed, n), append(records, rec)
				break asking
			case ActionSkip:
				n := t.With(func(n *Todo) {
					n.Status = StatusSkipped
					n.Reason = "skipped after failing: " + t.Reason
					n.Decided = true
				})
				changed, records = append(changed, n), append(records, rec)
				break asking
			case ActionAbort:
				changed = append(changed, t.With(func(n *Todo) { n.Decided = true }))
				current := withChanges(todos, changed...)
				var aborted []Todo
				for _, o := range current {
					if !o.Status.Ended() {
						n := o.With(func(n *Todo) { n.Status = StatusSkipped; n.Reason = "aborted by the user" })
						aborted = append(aborted, n)
					}
				}
				changed = append(changed, aborted...)
				records = append(records, rec)
				a.tellChanges(ctx, changed)
				return Todos.Write(changed).And(
					Results.Write(skippedResults(aborted, a.now())),
					ApprovalHistory.Write(records),
					Outcome.Write(OutcomeAborted),
					Reason.Write(strings.TrimSpace(d.Reason)),
					Trace.Write(a.traceTodos(s, NodeErrorApproval, "aborted", aborted)),
				).Goto(NodeResponse), nil
			default:
				req.Problem = fmt.Sprintf("unknown action %q: answer %s", d.Action, actionList(req.Actions))
			}
		}
	}
	var skipped []Todo
	for _, t := range changed {
		if t.Status == StatusSkipped {
			skipped = append(skipped, t)
		}
	}
	a.tellChanges(ctx, changed)
	return Todos.Write(changed).And(
		Results.Write(skippedResults(skipped, a.now())),
		ApprovalHistory.Write(records),
		Trace.Write(a.traceTodos(s, NodeErrorApproval, "decided", changed)),
	).Goto(NodeDispatcher), nil
}

// tellChanges sends a todo_progress event for each todo an approval point
// changed; a point tells them once it has asked its last question, since
// until then it runs again from its top at each resume.
func (a *Agent) tellChanges(ctx context.Context, todos []Todo) {
	for _, t := range todos {
		if t.Status != StatusFailed { // a decided failure is no change of status
			emit(ctx, a.progress(t, ""))
		}
	}
}

// pause is document 003's pause during execution, before a wave: verify
// goes on as planned; modify replaces pending todos (checked again as a
// plan); delete skips pending todos.
func (a *Agent) pause(ctx context.Context, s graph.State) (graph.Update, error) {
	todos := Todos.Get(s)
	wave := Wave.Get(s) + 1
	var next []string
	for _, t := range readyTodos(todos) {
		next = append(next, t.ID)
	}
	req := Request{Kind: KindPause, Message: fmt.Sprintf("Paused before %d todos (%s): verify, modify or delete the coming work.", len(next), strings.Join(next, ", ")),
		Actions: []Action{ActionVerify, ActionModify, ActionDelete}, Pause: &PauseRequest{Todos: todos, Next: next}}
	record := func(action Action, reason string) graph.Update {
		return ApprovalHistory.Write([]ApprovalRecord{{Task: Task.Get(s), Kind: KindPause, Action: action, By: "user", Reason: reason, Time: a.now().UTC()}}).And(
			PausedWave.Write(wave), Trace.Write([]TraceEntry{a.trace(s, events.LayerExecution, NodePause, "", "pause_"+string(action), clip(reason, 200))}))
	}
	for {
		d, err := ask(ctx, req)
		if err != nil {
			return graph.Update{}, err
		}
		switch d.Action {
		case ActionVerify:
			return record(ActionVerify, d.Reason).Goto(NodeDispatcher), nil
		case ActionModify:
			changed, err := a.modified(todos, d.Todos)
			if err != nil {
				req.Problem = err.Error()
				continue
			}
			for _, t := range changed {
				emit(ctx, a.progress(t, ""))
			}
			return Todos.Write(changed).And(record(ActionModify, d.Reason)).Goto(NodeDispatcher), nil
		case ActionDelete:
			deleted, err := deletions(todos, d.Delete)
			if err != nil {
				req.Problem = err.Error()
				continue
			}
			for _, t := range deleted {
				emit(ctx, a.progress(t, ""))
			}
			return Todos.Write(deleted).And(Results.Write(skippedResults(deleted, a.now())), record(ActionDelete, strings.Join(d.Delete, ","))).Goto(NodeDispatcher), nil
		default:
			req.Problem = fmt.Sprintf("unknown action %q: answer %s", d.Action, actionList(req.Actions))
		}
	}
}

// errNotPending is why a pause's answer names a todo it cannot change.
var errNotPending = errors.New("only pending todos can be changed")

// modified checks the pause's modified todos: each replaces the pending
// todo with its id (its next version), and the plan with them must pass
// the plan's checks.
func (a *Agent) modified(todos, edits []Todo) ([]Todo, error) {
	if len(edits) == 0 {
		return nil, errors.New(`modify needs the changed todos: {"action": "modify", "todos": [...]}`)
	}
	byID := map[string]Todo{}
	for _, t := range todos {
		byID[t.ID] = t
	}
	var changed []Todo
	for _, e := range edits {
		t, ok := byID[e.ID]
		switch {
		case !ok:
			return nil, fmt.Errorf("no todo %q", e.ID)
		case t.Status != StatusPending:
			return nil, fmt.Errorf("todo %s is %s: %w", e.ID, t.Status, errNotPending)
		}
		n := t.With(func(n *Todo) {
			n.Title = cmp.Or(strings.TrimSpace(e.Title), t.Title)
			n.Executor = cmp.Or(strings.TrimSpace(e.Executor), t.Executor)
			n.Tool = cmp.Or(strings.TrimSpace(e.Tool), t.Tool)
			if len(e.Params) > 0 {
				n.Params = slices.Clone(e.Params)
			}
			if e.DependsOn != nil {
				n.DependsOn = slices.Clone(e.DependsOn)
			}
		})
		changed = append(changed, n)
	}
	check := slices.Clone(withChanges(todos, changed...))
	if _, _, err := a.checkTodos(check); err != nil {
		return nil, err
	}
	return changed, nil
}

// deletions returns the skipped versions of the pending todos ids names.
func deletions(todos []Todo, ids []string) ([]Todo, error) {
	if len(ids) == 0 {
		return nil, errors.New(`delete needs the ids of the todos to drop: {"action": "delete", "delete": ["t3"]}`)
	}
	byID := map[string]Todo{}
	for _, t := range todos {
		byID[t.ID] = t
	}
	var out []Todo
	for _, id := range ids {
		t, ok := byID[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("no todo %q", id)
		case t.Status != StatusPending:
			return nil, fmt.Errorf("todo %s is %s: %w", id, t.Status, errNotPending)
		}
		out = append(out, t.With(func(n *Todo) { n.Status = StatusSkipped; n.Reason = "deleted by the user" }))
	}
	return out, nil
}
