package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
)

// TaskDir is where a task's files go: Config.Results.Dir/THREAD/task-N,
// the thread id made a file name of its own (letters, digits, '-' and '_'
// kept, other bytes written %XX: thread "a/b" is a%2Fb), "run" for a run
// without a thread; "" when results are not saved.
func (a *Agent) TaskDir(thread string, task int) string {
	if a.cfg.Results.Dir == "" {
		return ""
	}
	return filepath.Join(ThreadDir(a.cfg.Results.Dir, thread), fmt.Sprintf("task-%d", task))
}

// ThreadDir is the directory under the results directory dir that holds a
// thread's task-N directories: dir/THREAD, the thread id made a file name
// of its own as TaskDir makes it ("run" for a run without a thread). A
// server finds a thread's files there (server.Options.ThreadFiles); ""
// when dir is "".
func ThreadDir(dir, thread string) string {
	if dir == "" {
		return ""
	}
	if thread == "" {
		thread = "run"
	}
	return filepath.Join(dir, safeName(thread))
}

// safeName makes s a file name that stays inside its directory and is
// s's alone: letters, digits, '-' and '_' are kept, every other byte is
// written %XX ("a:b" is a%3Ab, ".." is %2E%2E), so that two thread or todo
// ids never share a name; a name that would pass maxName bytes is cut and
// ends in a hash of s.
func safeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '-' || r == '_' || r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteString(s[i : i+n])
		} else {
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		i += n
	}
	name := b.String()
	if len(name) > maxName {
		sum := sha256.Sum256([]byte(s))
		cut := maxName - 17
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "-" + hex.EncodeToString(sum[:8])
	}
	if name == "" {
		return "_"
	}
	return name
}

// maxName bounds the names safeName makes, well below the 255 bytes file
// systems allow, leaving room for "step_" and the status.
const maxName = 120

// writeFile writes data to dir/name whole or not at all (a temporary
// file renamed into place), so a crash never leaves half a file.
func writeFile(dir, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := cmpErr(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// saveFiles writes each name → data under dir, reporting a failure on the
// stream; it returns the paths written.
func saveFiles(ctx context.Context, node, dir string, files map[string][]byte) []string {
	var paths []string
	for _, name := range sortedKeys(files) {
		p, err := writeFile(dir, name, files[name])
		if err != nil {
			emit(ctx, events.Status{Message: fmt.Sprintf("could not save %s: %v", name, err), Node: node})
			continue
		}
		paths = append(paths, p)
	}
	return paths
}

// savePlan saves the plan as plan.json and plan.md; it returns the
// directory, or "" when results are not saved.
func (a *Agent) savePlan(ctx context.Context, s graph.State, p *Plan) string {
	dir := a.TaskDir(threadOf(ctx), p.Task)
	if dir == "" {
		return ""
	}
	data, _ := json.MarshalIndent(p, "", "  ")
	saveFiles(ctx, NodePlanning, dir, map[string][]byte{"plan.json": data, "plan.md": []byte(planMarkdown(p))})
	return dir
}

// planMarkdown renders a plan: summary, strategy, estimate, the todos and
// the drawing.
func planMarkdown(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan (revision %d)\n\n", p.Revision)
	fmt.Fprintf(&b, "**Request:** %s\n\n", p.Request)
	if p.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", p.Summary)
	}
	fmt.Fprintf(&b, "- strategy: %s\n- estimate: %.1f s one after another, %.1f s along the critical path (%s), cost %.4f\n\n",
		p.Strategy, p.Estimate.Seconds, p.Estimate.CriticalSeconds, strings.Join(p.Estimate.CriticalPath, " → "), p.Estimate.Cost)
	b.WriteString("| id | todo | executor | tool | depends on |\n|---|---|---|---|---|\n")
	for _, t := range p.Todos {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.ID, cell(t.Title), t.Executor, t.Tool, strings.Join(t.DependsOn, ", "))
	}
	fmt.Fprintf(&b, "\n```mermaid\n%s```\n", p.Mermaid)
	return b.String()
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// saveStep saves a todo's result as JSON and Markdown (document 001's
// step_NN_STATUS files), numbered by the todo's place in the plan.
func (a *Agent) saveStep(ctx context.Context, thread string, task int, t Todo, r Result) []string {
	dir := a.TaskDir(thread, task)
	if dir == "" {
		return nil
	}
	base := fmt.Sprintf("step_%s_%s", safeName(t.ID), t.Status)
	data, _ := json.MarshalIndent(struct {
		Todo   Todo   `json:"todo"`
		Result Result `json:"result"`
	}{t, r}, "", "  ")
	return saveFiles(ctx, NodeExecuteTodo, dir, map[string][]byte{base + ".json": data, base + ".md": []byte(stepMarkdown(t, r))})
}

// stepMarkdown renders a todo's result.
func stepMarkdown(t Todo, r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %s\n\n", t.ID, t.Title)
	fmt.Fprintf(&b, "- status: **%s**\n- executor: %s\n- tool: %s (%s)\n- attempt: %d\n", r.Status, t.Executor, r.Tool, r.Method, r.Attempt)
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, "- started: %s, took %s\n", r.Started.Format("2006-01-02 15:04:05.000 MST"), r.Ended.Sub(r.Started).Round(1e6))
	}
	if len(r.ToolsUsed) > 0 {
		fmt.Fprintf(&b, "- tools used: %s\n", strings.Join(r.ToolsUsed, ", "))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "\n## Error\n\n%s %s\n", r.ErrorCode, r.Error)
	}
	if len(r.Params) > 0 {
		fmt.Fprintf(&b, "\n## Parameters\n\n```json\n%s\n```\n", indent(r.Params))
	}
	if r.Text != "" {
		fmt.Fprintf(&b, "\n## Summary\n\n%s\n", r.Text)
	}
	if len(r.Data) > 0 {
		fmt.Fprintf(&b, "\n## Result\n\n```json\n%s\n```\n", clip(indent(r.Data), 20000))
	}
	return b.String()
}

func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// reportMarkdown is the task's final report (document 001's final result
// file): the request, the answer, the attachments, what each todo did and
// the plan.
func reportMarkdown(request string, resp *Response, plan *Plan, todos []Todo, results map[string]Result, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", oneLine(request))
	fmt.Fprintf(&b, "%s\n", strings.TrimSpace(resp.Text))
	if len(resp.Attachments) > 0 {
		b.WriteString("\n## Attachments\n\n")
		for _, at := range resp.Attachments {
			rel := at.Path
			if r, err := filepath.Rel(dir, at.Path); err == nil {
				rel = filepath.ToSlash(r)
			}
			if strings.HasPrefix(at.MediaType, "image/") {
				fmt.Fprintf(&b, "![%s](%s)\n\n", at.Description, rel)
			} else {
				fmt.Fprintf(&b, "- [%s](%s)\n", cmpStr(at.Description, at.Name), rel)
			}
		}
	}
	if len(resp.NextActions) > 0 {
		b.WriteString("\n## Next actions\n\n")
		for _, n := range resp.NextActions {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	if len(todos) > 0 {
		b.WriteString("\n## Todos\n\n| id | todo | status | tool | time |\n|---|---|---|---|---|\n")
		for _, t := range todos {
			r := results[t.ID]
			took := ""
			if !r.Started.IsZero() && !r.Ended.IsZero() {
				took = r.Ended.Sub(r.Started).Round(1e6).String()
			}
			status := string(t.Status)
			if t.Reason != "" {
				status += ": " + t.Reason
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.ID, cell(t.Title), cell(status), cmpStr(r.Tool, t.Tool), took)
		}
	}
	if plan != nil {
		fmt.Fprintf(&b, "\n## Plan\n\n%s · %s\n\n```mermaid\n%s```\n", plan.Strategy, cmpStr(plan.Summary, "-"), Mermaid(todos))
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, 120)
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sortedResultIDs lists the ids of results in plan order, then the rest.
func sortedResultIDs(todos []Todo, results map[string]Result) []string {
	var ids []string
	for _, t := range todos {
		if _, ok := results[t.ID]; ok {
			ids = append(ids, t.ID)
		}
	}
	for _, id := range sortedKeys(results) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
