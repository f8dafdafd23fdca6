package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// response is document 003's response layer (document 001's synthesis):
// the model writes the answer over the successful results only, streamed
// as tokens; a format is chosen; the charts and documents the results
// offer are saved as attachments with a final Markdown report; next
// actions are suggested.
func (a *Agent) response(ctx context.Context, s graph.State) (graph.Update, error) {
	emit(ctx, events.LayerStart{Layer: events.LayerResponse, Node: NodeResponse})
	outcome := Outcome.Get(s)
	if outcome == "" {
		outcome = OutcomeDone
	}
	request := RequestText.Get(s)
	todos := Todos.Get(s)
	results := Results.Get(s)
	var ok, failed, skipped []Result
	for _, id := range sortedResultIDs(todos, results) {
		switch r := results[id]; r.Status {
		case StatusDone:
			ok = append(ok, r)
		case StatusFailed:
			failed = append(failed, r)
		case StatusSkipped:
			skipped = append(skipped, r)
		}
	}
	// Todos that never got a result (a rejected plan) count as skipped.
	for _, t := range todos {
		if _, has := results[t.ID]; !has && t.Status != StatusDone {
			skipped = append(skipped, Result{TodoID: t.ID, Status: StatusSkipped, Tool: t.Tool, Error: t.Reason})
		}
	}

	var answer string
	var err error
	switch {
	case outcome == OutcomeRejected:
		reason := ""
		if r := Reason.Get(s); r != "" {
			reason = " (" + r + ")"
		}
		answer = fmt.Sprintf(a.cfg.Prompts.Rejected, reason)
		emit(ctx, events.Token{Text: answer})
	case outcome == OutcomeChat:
		msgs := []llm.Message{llm.System(a.cfg.Prompts.Chat), a.requestPrompt(s, request)}
		answer, err = a.streamAnswer(ctx, a.models.Response, msgs)
	case len(ok) == 0:
		answer = a.nothingDone(failed, skipped)
		emit(ctx, events.Token{Text: answer})
	default:
		msgs := []llm.Message{llm.System(a.cfg.Prompts.Response), a.requestPrompt(s, request, a.resultsPrompt(todos, ok, failed, skipped))}
		answer, err = a.streamAnswer(ctx, a.models.Response, msgs)
	}
	if err != nil {
		return graph.Update{}, a.fail(ctx, "response_error", fmt.Errorf("writing the answer: %w", err))
	}

	resp := &Response{Text: answer, Outcome: outcome}
	dir := a.TaskDir(threadOf(ctx), Task.Get(s))
	if dir != "" {
		resp.Attachments = a.attachments(ctx, dir, todos, ok)
	}
	resp.Format = a.format(CognitiveResult.Get(s), outcome, answer, resp.Attachments)
	if a.cfg.Response.NextActions && outcome != OutcomeRejected && outcome != OutcomeChat {
		resp.NextActions = a.nextActions(ctx, s, request, answer)
	}
	if dir != "" && outcome != OutcomeChat {
		files := saveFiles(ctx, NodeResponse, dir, map[string][]byte{"report.md": []byte(reportMarkdown(request, resp, PlanState.Get(s), todos, results, dir))})
		if len(files) > 0 {
			resp.Report = files[0]
		}
	}

	msg := react.OwnID(llm.AI(answer))
	msg.ResponseMetadata = llm.ResponseMetadata{metaNewTask: outcome != OutcomeChat, metaTask: Task.Get(s), "format": resp.Format}
	emit(ctx, events.Complete{Format: resp.Format, Text: answer, Attachments: resp.Attachments, NextActions: resp.NextActions, Report: resp.Report,
		Succeeded: len(ok), Failed: len(failed), Skipped: len(skipped)})
	end := events.End{Status: events.EndDone, Message: fmt.Sprintf("%d succeeded, %d failed, %d skipped", len(ok), len(failed), len(skipped))}
	switch outcome {
	case OutcomeRejected:
		end = events.End{Status: events.EndRejected, Message: "the plan was rejected"}
	case OutcomeAborted:
		end.Status = events.EndAborted
	case OutcomeChat:
		end.Message = "answered without tools"
	}
	emit(ctx, end)
	a.recordTask(ctx, s, answer, outcome)
	return ResponseResult.Write(resp).And(
		Messages.Write(msg),
		Trace.Write([]TraceEntry{a.trace(s, events.LayerResponse, NodeResponse, "", "answered", fmt.Sprintf("%s, %s, %d attachments", outcome, resp.Format, len(resp.Attachments)))}),
	), nil
}

// streamAnswer streams the model's answer as tokens (the messages stream
// and token events) and returns its text.
func (a *Agent) streamAnswer(ctx context.Context, model llm.ChatModel, msgs []llm.Message) (string, error) {
	var chunks []llm.Chunk
	for c, err := range model.Stream(ctx, msgs) {
		if err != nil {
			return "", err
		}
		graph.StreamMessage(ctx, c)
		if c.Content != "" {
			emit(ctx, events.Token{Text: c.Content})
		}
		chunks = append(chunks, c)
	}
	return strings.TrimSpace(llm.Merge(chunks...).Message().Text()), nil
}

// resultsPrompt lists the successful results for the answer, and names
// what failed or was skipped without its content.
func (a *Agent) resultsPrompt(todos []Todo, ok, failed, skipped []Result) string {
	title := map[string]string{}
	for _, t := range todos {
		title[t.ID] = t.Title
	}
	var b strings.Builder
	b.WriteString("Results of the steps that succeeded:\n")
	for _, r := range ok {
		fmt.Fprintf(&b, "\n[%s] %s (tool %s)\n", r.TodoID, title[r.TodoID], r.Tool)
		if r.Text != "" {
			fmt.Fprintf(&b, "summary: %s\n", clip(r.Text, 1000))
		}
		if doc, ok := metaAs[Document](r.Meta, MetaDocument); ok && doc.Markdown != "" {
			fmt.Fprintf(&b, "document %q (attached to the answer as a file):\n%s\n", doc.Title, clip(doc.Markdown, a.cfg.Response.MaxResultChars))
			continue
		}
		fmt.Fprintf(&b, "data: %s\n", clip(compact(r.Data), a.cfg.Response.MaxResultChars))
	}
	if len(failed)+len(skipped) > 0 {
		b.WriteString("\nSteps without a result (do not guess their results):\n")
		for _, r := range append(failed, skipped...) {
			fmt.Fprintf(&b, "- [%s] %s: %s (%s)\n", r.TodoID, title[r.TodoID], r.Status, clip(r.Error, 200))
		}
	}
	return b.String()
}

// nothingDone is the answer when no todo succeeded.
func (a *Agent) nothingDone(failed, skipped []Result) string {
	var b strings.Builder
	b.WriteString(a.cfg.Prompts.NothingDone)
	for _, r := range append(failed, skipped...) {
		fmt.Fprintf(&b, "\n- %s: %s", r.TodoID, r.Status)
		if r.Error != "" {
			fmt.Fprintf(&b, " (%s)", clip(r.Error, 200))
		}
	}
	return b.String()
}

// metaAs reads a result's metadata entry as a T (it is a map after the
// result went through a checkpoint).
func metaAs[T any](meta map[string]any, key string) (T, bool) {
	var v T
	raw, ok := meta[key]
	if !ok {
		return v, false
	}
	if t, ok := raw.(T); ok {
		return t, true
	}
	data, err := json.Marshal(raw)
	if err != nil || json.Unmarshal(data, &v) != nil {
		return v, false
	}
	return v, true
}

// attachments saves the charts and documents the successful results offer.
func (a *Agent) attachments(ctx context.Context, dir string, todos []Todo, ok []Result) []events.Attachment {
	title := map[string]string{}
	for _, t := range todos {
		title[t.ID] = t.Title
	}
	var out []events.Attachment
	for _, r := range ok {
		if c, has := metaAs[Chart](r.Meta, MetaChart); has && a.cfg.Response.Charts {
			svg, err := c.SVG()
			if err != nil {
				emit(ctx, events.Status{Message: fmt.Sprintf("chart of %s not drawn: %v", r.TodoID, err), Node: NodeResponse})
			} else {
				name := "chart_" + safeName(r.TodoID) + ".svg"
				for _, p := range saveFiles(ctx, NodeResponse, dir, map[string][]byte{name: svg}) {
					out = append(out, events.Attachment{Name: name, MediaType: "image/svg+xml", Path: p, Description: cmpStr(c.Title, title[r.TodoID])})
				}
			}
		}
		if d, has := metaAs[Document](r.Meta, MetaDocument); has && strings.TrimSpace(d.Markdown) != "" {
			name := "document_" + safeName(r.TodoID) + ".md"
			for _, p := range saveFiles(ctx, NodeResponse, dir, map[string][]byte{name: []byte(d.Markdown)}) {
				out = append(out, events.Attachment{Name: name, MediaType: "text/markdown", Path: p, Description: cmpStr(d.Title, title[r.TodoID])})
			}
		}
	}
	return out
}

// format is document 003's format decider, over the formats the project
// can produce: text; Markdown for a report or content request, or an
// answer written in Markdown; mixed when attachments come with it.
func (a *Agent) format(c *Cognition, outcome, answer string, atts []events.Attachment) string {
	switch {
	case outcome == OutcomeRejected || outcome == OutcomeChat:
		return FormatText
	case len(atts) > 0:
		return FormatMixed
	case c != nil && (strings.EqualFold(c.Intent.Domain, "CONTENT") || strings.EqualFold(c.Intent.Category, "report")):
		return FormatMarkdown
	case strings.Contains(answer, "\n#") || strings.HasPrefix(answer, "#") || strings.Contains(answer, "\n- ") || strings.Contains(answer, "\n|"):
		return FormatMarkdown
	}
	return FormatText
}

type nextActionList struct {
	Actions []string `json:"actions" jsonschema:"up to three short requests the user could make next"`
}

// nextActions asks the model for next actions; a failure is told and
// leaves none.
func (a *Agent) nextActions(ctx context.Context, s graph.State, request, answer string) []string {
	msgs := []llm.Message{llm.System(a.cfg.Prompts.NextActions), llm.Human(fmt.Sprintf("Request:\n%s\n\nAnswer given:\n%s", request, clip(answer, 4000)))}
	opts := &llm.StructuredOptions{Name: "next_actions", Description: "Suggested next actions.", Method: a.structuredMethod()}
	list, err := structured(ctx, a.models.Response, msgs, opts, func(l nextActionList) error {
		if len(l.Actions) > 5 {
			return fmt.Errorf("%d actions: give at most 5", len(l.Actions))
		}
		for i, s := range l.Actions {
			if strings.TrimSpace(s) == "" {
				return fmt.Errorf("actions[%d] is empty", i)
			}
		}
		return nil
	})
	if err != nil {
		emit(ctx, events.Status{Message: "no next actions: " + err.Error(), Node: NodeResponse})
		return nil
	}
	return list.Actions
}

// recordTask hands the finished task to the recorder, within its time
// bound; a failure is told, never fatal.
func (a *Agent) recordTask(ctx context.Context, s graph.State, answer, outcome string) {
	user := a.userOf(ctx, s)
	if a.memory.Recorder == nil || user == "" {
		return
	}
	rec := TaskRecord{User: user, Thread: threadOf(ctx), Task: Task.Get(s), Request: RequestText.Get(s), Cognition: CognitiveResult.Get(s),
		Plan: PlanState.Get(s), Results: Results.Get(s), Answer: answer, Outcome: outcome}
	for _, r := range ApprovalHistory.Get(s) {
		if r.Task == rec.Task {
			rec.Approvals = append(rec.Approvals, r)
		}
	}
	for _, e := range Trace.Get(s) {
		if e.Task == rec.Task {
			rec.Trace = append(rec.Trace, e)
		}
	}
	if o := OriginalPlan.Get(s); o != nil && rec.Plan != nil && rec.Plan.Revision > 1 {
		rec.OriginalPlan = o
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Memory.Timeout)
	defer cancel()
	if err := a.memory.Recorder.RecordTask(ctx, rec); err != nil {
		emit(ctx, events.Status{Message: fmt.Sprintf("%s (recording the task): %v", memoryHookFailures, err), Node: NodeResponse})
	}
}
