package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

func newThreadsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "threads",
		Short: "List, show, trace and delete the saved conversations (threads)",
		Long: "The conversations of weft run and the runs of examples/approval are threads of checkpoints in\n" +
			"the database (" + dburl.DefaultPath + ", or --db, $" + dburl.EnvVar + "). These commands read them through the example\n" +
			"graph that wrote them, found by the thread's channels and nodes; --json prints JSON for scripts.",
		Example: "  weft threads list\n  weft threads show 3f2a...\n  weft threads history 3f2a... --limit 5\n" +
			"  weft threads delete 3f2a...\n  weft threads list --json | jq -r '.[].thread_id'",
	}
	cmd.AddCommand(newThreadsListCmd(), newThreadsShowCmd(), newThreadsHistoryCmd(), newThreadsDeleteCmd())
	return cmd
}

// threadsFlags are the flags every threads command has.
type threadsFlags struct {
	dsn  string
	json bool
}

func (f *threadsFlags) add(cmd *cobra.Command) {
	addDBFlag(cmd, &f.dsn, "database of the threads")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON, for scripts")
}

// threadsDB is the database and the example graphs, opened over it, that
// read its threads.
type threadsDB struct {
	db     *dburl.DB
	graphs []namedGraph
	// dbArg repeats --db in commands shown to the user.
	dbArg string
}

type namedGraph struct {
	example examples.Example
	g       *graph.Graph
}

func openThreadsDB(ctx context.Context, cmd *cobra.Command, f *threadsFlags) (*threadsDB, error) {
	db, err := openDB(ctx, cmd, f.dsn)
	if err != nil {
		return nil, err
	}
	t := &threadsDB{db: db, dbArg: dbArg(cmd, f.dsn)}
	for _, e := range examples.All() {
		g, err := e.Build(db.Saver)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("building graph %s: %w", e.Name, err)
		}
		t.graphs = append(t.graphs, namedGraph{e, g})
	}
	return t, nil
}

// threadView is what threads list, show and history print of one
// checkpoint of a thread (--json prints it as is).
type threadView struct {
	ThreadID string `json:"thread_id"`
	// Graph is the example graph whose state the thread holds; empty
	// when none fits, and then Values are the stored channels and Next is
	// unknown.
	Graph        string    `json:"graph"`
	CheckpointID string    `json:"checkpoint_id"`
	UpdatedAt    time.Time `json:"updated_at"`
	Step         int       `json:"step"`
	Source       string    `json:"source"`
	// Next names the nodes that run when the thread goes on.
	Next []string `json:"next"`
	// Interrupts are the questions the thread waits to have answered.
	Interrupts []graph.Interruption `json:"interrupts"`
	// Error is why the thread's last run failed (a turn that ended in a
	// fallback answer, say); empty when it did not.
	Error string `json:"error,omitempty"`
	// Summary is the thread's latest human message, shortened.
	Summary string                     `json:"summary"`
	Values  map[string]json.RawMessage `json:"values,omitempty"`
}

// timeLayout is how the threads commands print a checkpoint's time.
const timeLayout = "2006-01-02 15:04:05"

// bounded is ctx with the CLI's bound on database reads.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, saverTimeout)
}

// latest reads thread's newest checkpoint; a thread without one is
// errNoThread, which is also checkpoint.ErrNotFound.
func (t *threadsDB) latest(ctx context.Context, thread string) (*checkpoint.Tuple, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	tp, err := t.db.Saver.Get(ctx, checkpoint.Config{ThreadID: thread})
	if err != nil {
		return nil, fmt.Errorf("reading thread %s: %w", thread, err)
	}
	if tp == nil {
		return nil, fmt.Errorf("%w %q in %s %s; see the saved ones with: weft threads list%s",
			notFound{errNoThread}, thread, t.db.Backend, t.db.Target, t.dbArg)
	}
	return tp, nil
}

// fit finds the example graph that wrote tp: the one its run metadata
// names (weft run stamps graphIDKey), else the first whose nodes include
// every node that ran. Either way the graph's state must hold every stored
// channel. It returns nil when no graph fits.
func (t *threadsDB) fit(ctx context.Context, tp *checkpoint.Tuple) (*namedGraph, graph.StateSnapshot) {
	var channels, nodes []string
	for ch := range tp.Checkpoint.Values {
		if !internalName(ch) {
			channels = append(channels, ch)
		}
	}
	for n := range tp.Checkpoint.VersionsSeen {
		if !internalName(n) {
			nodes = append(nodes, n)
		}
	}
	read := func(ng *namedGraph) (graph.StateSnapshot, bool) {
		ctx, cancel := bounded(ctx)
		defer cancel()
		snap, err := ng.g.GetState(ctx, checkpoint.Config{ThreadID: tp.Config.ThreadID}, nil)
		return snap, err == nil && subset(channels, snap.Values.Keys())
	}
	if name, ok := tp.Metadata.Extra[graphIDKey].(string); ok {
		for i := range t.graphs {
			if ng := &t.graphs[i]; ng.example.Name == name {
				if snap, ok := read(ng); ok {
					return ng, snap
				}
			}
		}
	}
	for i := range t.graphs {
		ng := &t.graphs[i]
		if !subset(nodes, ng.g.Nodes()) {
			continue
		}
		if snap, ok := read(ng); ok {
			return ng, snap
		}
	}
	return nil, graph.StateSnapshot{}
}

// internalName reports whether a channel or node name is the runtime's.
func internalName(s string) bool {
	return strings.HasPrefix(s, "__") || strings.HasPrefix(s, "branch:to:") || strings.HasPrefix(s, "join:")
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// view describes thread's latest checkpoint.
func (t *threadsDB) view(ctx context.Context, tp *checkpoint.Tuple) (threadView, error) {
	ng, snap := t.fit(ctx, tp)
	if ng == nil {
		return rawView(tp)
	}
	v, err := snapshotView(snap)
	v.Graph = ng.example.Name
	return v, err
}

// snapshotView describes a checkpoint read through its graph.
func snapshotView(snap graph.StateSnapshot) (threadView, error) {
	v := threadView{
		ThreadID: snap.Config.ThreadID, CheckpointID: snap.Config.CheckpointID,
		UpdatedAt: snap.CreatedAt, Step: snap.Metadata.Step, Source: snap.Metadata.Source,
		Next: snap.Next, Interrupts: snap.Interrupts,
	}
	for _, task := range snap.Tasks {
		if task.Error != "" {
			v.Error = task.Error
			break
		}
	}
	b, err := json.Marshal(snap.Values)
	if err == nil {
		err = json.Unmarshal(b, &v.Values)
	}
	if err != nil {
		return v, fmt.Errorf("thread %s: encoding its state: %w", v.ThreadID, err)
	}
	v.Summary = summaryOf(v.Values)
	return v, nil
}

// rawView describes a checkpoint no example graph fits: its stored
// channels and the interrupts among its pending writes.
func rawView(tp *checkpoint.Tuple) (threadView, error) {
	v := threadView{
		ThreadID: tp.Config.ThreadID, CheckpointID: tp.Config.CheckpointID,
		UpdatedAt: tp.Checkpoint.TS, Step: tp.Metadata.Step, Source: tp.Metadata.Source,
		Interrupts: []graph.Interruption{}, Values: map[string]json.RawMessage{},
	}
	for ch, val := range tp.Checkpoint.Values {
		if !internalName(ch) {
			v.Values[ch] = val
		}
	}
	for _, w := range tp.PendingWrites {
		if w.Channel != checkpoint.InterruptChannel {
			continue
		}
		var ins []graph.Interruption
		if err := json.Unmarshal(w.Value, &ins); err != nil {
			return v, fmt.Errorf("thread %s: reading its interrupts: %w", v.ThreadID, err)
		}
		v.Interrupts = append(v.Interrupts, ins...)
	}
	v.Summary = summaryOf(v.Values)
	return v, nil
}

// summaryOf is the latest human message of a conversation, else the
// first text value of the state (the approval example's goal).
func summaryOf(values map[string]json.RawMessage) string {
	if msgs := messagesOf(values); len(msgs) > 0 {
		for _, m := range slices.Backward(msgs) {
			if m.Type == llm.TypeHuman {
				return clip(m.Text(), 60)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		var s string
		if json.Unmarshal(values[k], &s) == nil && s != "" {
			return clip(s, 60)
		}
	}
	return ""
}

// messagesOf decodes the conversation in the state's messages channel.
func messagesOf(values map[string]json.RawMessage) []llm.Message {
	var msgs []llm.Message
	if raw, ok := values["messages"]; !ok || json.Unmarshal(raw, &msgs) != nil {
		return nil
	}
	return msgs
}

// status says in a few words where the thread stands.
func (v threadView) status() string {
	switch {
	case len(v.Interrupts) > 0:
		return "waiting for an answer"
	case v.Error != "":
		return "failed"
	case v.Graph == "":
		return "unknown graph"
	case len(v.Next) > 0:
		return "next: " + strings.Join(v.Next, ", ")
	}
	return "done"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newThreadsListCmd() *cobra.Command {
	var f threadsFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the threads, most recently updated first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all threads) or more", limit)
			}
			ctx := cmd.Context()
			t, err := openThreadsDB(ctx, cmd, &f)
			if err != nil {
				return err
			}
			defer t.db.Close()
			views := []threadView{}
			lctx, cancel := bounded(ctx)
			defer cancel()
			var infos []checkpoint.ThreadInfo
			for info, err := range t.db.Saver.ListThreads(lctx, checkpoint.ThreadFilter{Limit: limit}) {
				if err != nil {
					return fmt.Errorf("listing threads: %w", err)
				}
				infos = append(infos, info)
			}
			for _, info := range infos {
				tp, err := t.latest(ctx, info.ThreadID)
				if err != nil {
					return err
				}
				v, err := t.view(ctx, tp)
				if err != nil {
					return err
				}
				v.Values = nil
				views = append(views, v)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSON(out, views)
			}
			if len(views) == 0 {
				_, err := fmt.Fprintf(out, "no threads in %s %s\n", t.db.Backend, t.db.Target)
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "THREAD\tUPDATED\tGRAPH\tSTATUS\tLAST MESSAGE")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ThreadID, v.UpdatedAt.Local().Format(timeLayout), cmp.Or(v.Graph, "?"), v.status(), v.Summary)
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, "list at most this many threads; 0 lists all")
	return cmd
}

func newThreadsShowCmd() *cobra.Command {
	var f threadsFlags
	cmd := &cobra.Command{
		Use:   "show THREAD",
		Short: "Show a thread's latest state: its conversation, what runs next, the questions it waits on",
		Args:  threadArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := openThreadsDB(ctx, cmd, &f)
			if err != nil {
				return err
			}
			defer t.db.Close()
			tp, err := t.latest(ctx, args[0])
			if err != nil {
				return err
			}
			v, err := t.view(ctx, tp)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return t.printView(cmd.OutOrStdout(), v)
		},
	}
	f.add(cmd)
	return cmd
}

// threadArgs checks a threads command's thread ids.
func threadArgs(least, most int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < least || most > 0 && len(args) > most {
			return fmt.Errorf("threads %s takes %s, got %d arguments; see them with: weft threads list", cmd.Name(),
				map[bool]string{true: "one thread id", false: "thread ids"}[most == 1], len(args))
		}
		return nil
	}
}

// printView prints a thread's state for a reader.
func (t *threadsDB) printView(w io.Writer, v threadView) error {
	fmt.Fprintf(w, "thread      %s\n", v.ThreadID)
	fmt.Fprintf(w, "graph       %s\n", cmp.Or(v.Graph, "unknown: no example graph has this thread's channels and nodes"))
	fmt.Fprintf(w, "updated     %s (step %d, %s, checkpoint %s)\n", v.UpdatedAt.Local().Format(timeLayout), v.Step, v.Source, v.CheckpointID)
	if v.Graph != "" {
		fmt.Fprintf(w, "next        %s\n", cmp.Or(strings.Join(v.Next, ", "), "nothing: the run finished"))
	}
	if v.Error != "" {
		fmt.Fprintf(w, "failed      %s\n", clip(v.Error, 300))
	}
	for _, in := range v.Interrupts {
		b, _ := json.Marshal(in.Value)
		fmt.Fprintf(w, "waiting     %s (interrupt %s)\n", clip(string(b), 300), in.ID)
	}
	if hint := t.continueCmd(v); hint != "" {
		fmt.Fprintf(w, "continue    %s\n", hint)
	}
	msgs := messagesOf(v.Values)
	if len(msgs) > 0 {
		fmt.Fprintln(w, "\nmessages")
		for _, m := range msgs {
			printMessage(w, m)
		}
	}
	var rest []string
	for k := range v.Values {
		if k != "messages" || msgs == nil {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		slices.Sort(rest)
		fmt.Fprintln(w, "\nstate")
		for _, k := range rest {
			fmt.Fprintf(w, "  %s: %s\n", k, clip(string(v.Values[k]), 300))
		}
	}
	return nil
}

// continueCmd is the command that goes on with the thread, if any.
func (t *threadsDB) continueCmd(v threadView) string {
	for _, ng := range t.graphs {
		if ng.example.Name != v.Graph {
			continue
		}
		if ng.example.Orchestrate != nil && len(v.Interrupts) > 0 {
			// The run waits at an approval point: --thread alone answers it.
			return fmt.Sprintf("weft run --agent %s --thread %s%s", v.Graph, shellQuote(v.ThreadID), t.dbArg)
		}
		if ng.example.Reviews && len(v.Next) > 0 && v.Error == "" {
			// Paused for the review of its plan (or in its tool loop):
			// --thread alone answers it, or runs it on.
			return fmt.Sprintf("weft run --agent %s --thread %s%s", v.Graph, shellQuote(v.ThreadID), t.dbArg)
		}
		if ng.example.Open != nil || ng.example.Orchestrate != nil {
			return fmt.Sprintf("weft run --agent %s --thread %s%s \"...\"", v.Graph, shellQuote(v.ThreadID), t.dbArg)
		}
		if len(v.Interrupts) > 0 && v.Graph == "approval" {
			return fmt.Sprintf("go run ./examples/approval --thread %s%s", shellQuote(v.ThreadID), t.dbArg)
		}
	}
	return ""
}

// printMessage prints one message of a conversation on a line or a few.
func printMessage(w io.Writer, m llm.Message) {
	switch m.Type {
	case llm.TypeTool:
		fmt.Fprintf(w, "  tool %s: %s\n", m.Name, summarize(m))
		return
	case llm.TypeAI:
		if text := m.Text(); text != "" {
			fmt.Fprintf(w, "  ai: %s\n", indent(text))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "  ai → %s(%s)\n", c.Name, clip(string(c.Args), 200))
		}
		return
	}
	fmt.Fprintf(w, "  %s: %s\n", m.Type, indent(m.Text()))
}

// indent keeps a multi-line text under its message.
func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = "    " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func newThreadsHistoryCmd() *cobra.Command {
	var f threadsFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "history THREAD",
		Short: "List a thread's checkpoints, newest first: each step, what ran next, the conversation's length",
		Args:  threadArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all checkpoints) or more", limit)
			}
			ctx := cmd.Context()
			t, err := openThreadsDB(ctx, cmd, &f)
			if err != nil {
				return err
			}
			defer t.db.Close()
			tp, err := t.latest(ctx, args[0])
			if err != nil {
				return err
			}
			ng, _ := t.fit(ctx, tp)
			if ng == nil {
				return fmt.Errorf("thread %s: no example graph has its channels and nodes, so its history cannot be read; weft threads show %s prints what is stored", args[0], shellQuote(args[0]))
			}
			hctx, cancel := bounded(ctx)
			defer cancel()
			views := []threadView{}
			for snap, err := range ng.g.GetStateHistory(hctx, args[0], &graph.HistoryOptions{Limit: limit}) {
				if err != nil {
					return fmt.Errorf("reading the history of thread %s: %w", args[0], err)
				}
				v, err := snapshotView(snap)
				if err != nil {
					return err
				}
				v.Graph = ng.example.Name
				views = append(views, v)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSON(out, views)
			}
			fmt.Fprintf(out, "thread %s (graph %s), newest first\n", args[0], ng.example.Name)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "STEP\tSOURCE\tTIME\tNEXT\tMESSAGES\tCHECKPOINT")
			for _, v := range views {
				next := strings.Join(v.Next, ", ")
				if len(v.Interrupts) > 0 {
					next += " (waiting for an answer)"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", v.Step, v.Source, v.UpdatedAt.Local().Format(timeLayout), cmp.Or(next, "-"), len(messagesOf(v.Values)), v.CheckpointID)
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many checkpoints; 0 shows all")
	return cmd
}

func newThreadsDeleteCmd() *cobra.Command {
	var f threadsFlags
	cmd := &cobra.Command{
		Use:   "delete THREAD...",
		Short: "Delete threads with all their checkpoints",
		Args:  threadArgs(1, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := openThreadsDB(ctx, cmd, &f)
			if err != nil {
				return err
			}
			defer t.db.Close()
			// Every id is checked first: a mistyped one deletes nothing.
			for _, id := range args {
				if _, err := t.latest(ctx, id); err != nil {
					return err
				}
			}
			var deleted []string
			for _, id := range args {
				dctx, cancel := bounded(ctx)
				err := t.db.Saver.DeleteThread(dctx, id)
				cancel()
				if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
					return fmt.Errorf("deleting thread %s: %w", id, err)
				}
				deleted = append(deleted, id)
				if !f.json {
					fmt.Fprintf(cmd.OutOrStdout(), "deleted thread %s\n", id)
				}
			}
			if f.json {
				return writeJSON(cmd.OutOrStdout(), map[string][]string{"deleted": deleted})
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
