package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	guideagent "github.com/weftlabs/weft/examples/guide/agent"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/providers"
	"github.com/weftlabs/weft/tool"
)

// modelEnv names the variable that selects the model when --model is not given.
const modelEnv = "WEFT_MODEL"

// toolsEnv names the variable that selects how the model calls tools when
// --tools is not given.
const toolsEnv = "WEFT_TOOLS"

// The values of --tools.
const (
	toolsNative = "native"
	toolsJSON   = "json"
)

// toolMode reads the --tools value (from is where it came from, for the
// error); "" is native.
func toolMode(v, from string) (react.Mode, error) {
	switch v {
	case "", toolsNative:
		return react.NativeTools, nil
	case toolsJSON:
		return react.JSONFormat, nil
	}
	return 0, fmt.Errorf("%s %q: want %s (the model's tool calling) or %s (a JSON reply format, for models without tool calling)", from, v, toolsNative, toolsJSON)
}

func newRunCmd() *cobra.Command {
	var agentName, modelName, threadID, newThread, dsn, tools, mcpConfig, user string
	var approve, configPath, resultsDir string
	withMemory := true
	cmd := &cobra.Command{
		Use:   "run --agent NAME [--model PROVIDER:MODEL] [--tools native|json] [--thread ID | --new-thread ID] QUESTION|-",
		Short: "Ask an example agent a question, streaming its answer and tool calls",
		Long: "Ask an example agent a question. The answer streams to standard output token by token;\n" +
			"each tool call (→) and its result (←) is shown on standard error as it happens.\n\n" +
			"Agents: " + strings.Join(examples.Agents(), ", ") + ".\n\n" +
			"The model is --model or $" + modelEnv + ": openai:MODEL (OPENAI_API_KEY, OPENAI_BASE_URL),\n" +
			"anthropic:MODEL (ANTHROPIC_API_KEY), ollama:MODEL (OLLAMA_HOST), azure:DEPLOYMENT,\n" +
			"or scripted:PATH, a script of replies that runs offline.\n\n" +
			"--tools json (or $" + toolsEnv + "=json) is for models without tool calling, such as many small\n" +
			"Ollama models: the tools are described in the prompt and the model replies with one JSON object,\n" +
			"{\"thought\", \"action\", \"action_input\"}, calling one tool at a time or FINISH to answer;\n" +
			"the router's classifier is asked for its decision as JSON text too.\n" +
			"The default, --tools native, uses the model's tool calling.\n\n" +
			"The question is the arguments, or standard input when it is - or a pipe (for long questions).\n\n" +
			"Conversations are kept in " + dburl.DefaultPath + " (or --db, $" + dburl.EnvVar + "). Each run prints its thread id;\n" +
			"--thread ID continues that conversation (an unknown id is an error, not a new conversation),\n" +
			"--new-thread ID starts one under an id of your choice. weft threads lists, shows and deletes them.\n" +
			"Ctrl-C stops the run (exit status 130) and prints how to continue its thread.\n\n" +
			"--mcp-config FILE gives the agent the tools of the MCP servers in FILE (JSON or YAML, Claude\n" +
			"Desktop's mcpServers shape) besides its own, named SERVER__TOOL; see weft mcp --help.\n\n" +
			"The guide agent (document 004) plans a task and stops for you to approve, edit or reject the\n" +
			"plan before any tool runs: the answers come from standard input, typed or piped (the question\n" +
			"is then the arguments only), and --thread ID without a question answers the plan a saved run\n" +
			"waits for. --user names whose long-term memories (preferences) it reads and writes.\n\n" +
			"The orchestrator agents (" + strings.Join(orchestratorAgents(), ", ") + ") learn from each task for --user, in the database beside\n" +
			"the conversations, after the answer: a clarification reused 5 times is applied without asking, a step\n" +
			"the user keeps accepting is approved by itself, a tool that keeps failing is advised against.\n" +
			"--memory=false runs without.",
		Example: "  weft run --agent career --model scripted:examples/career/demo.yaml \"UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?\"\n" +
			"  weft run --agent career --tools json --model scripted:examples/career/demo-json.yaml \"UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?\"\n" +
			"  weft run --agent travel --model openai:gpt-4o-mini \"제주 인기 관광지 3곳을 추천하고 동선도 짜 주세요\"\n" +
			"  weft run --agent career --thread 3f2a... \"그 멘토링 예약해 주세요. 제 아이디는 user-1이에요\"\n" +
			"  weft run --agent career --new-thread jimin \"UX 디자이너가 되고 싶어요\"\n" +
			"  weft run --agent travel --model openai:gpt-4o-mini - < question.txt\n" +
			"  weft run --agent career --model openai:gpt-4o-mini --mcp-config mcp.json \"...\"\n" +
			"  echo approve | weft run --agent guide --user jimin --model scripted:examples/guide/demo.yaml \"유튜브 쇼츠를 만들고 싶어요\"",
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := lookupAgent(agentName)
			if err != nil {
				return err
			}
			if e.Orchestrate == nil {
				for _, f := range []string{"config", "results"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s is for the orchestrator agents (%s), not %s", f, strings.Join(orchestratorAgents(), ", "), e.Name)
					}
				}
			}
			if e.Orchestrate == nil && !e.Reviews && cmd.Flags().Changed("approve") {
				return fmt.Errorf("--approve is for the agents that stop for approval (%s), not %s", strings.Join(approvingAgents(), ", "), e.Name)
			}
			if cmd.Flags().Changed("user") && !e.Reviews && e.Orchestrate == nil {
				return fmt.Errorf("--user names whose long-term memories an agent keeps; %s keeps none", e.Name)
			}
			if cmd.Flags().Changed("memory") && e.Orchestrate == nil {
				return fmt.Errorf("--memory is for the orchestrator agents (%s), not %s", strings.Join(orchestratorAgents(), ", "), e.Name)
			}
			userGiven := cmd.Flags().Changed("user")
			if !userGiven {
				user = cmp.Or(os.Getenv(userEnv), guideagent.DefaultUser)
			}
			if strings.TrimSpace(user) == "" {
				return errors.New("--user is empty: name whose memories to use, e.g. --user jimin")
			}
			var question string
			if e.Orchestrate != nil || e.Reviews {
				// Standard input carries the answers at the approval
				// points: the request is the arguments only, and --thread
				// without one answers the approval a saved run waits for.
				question = strings.TrimSpace(strings.Join(args, " "))
			} else if question, err = readPrompt(args, cmd.InOrStdin()); err != nil {
				return err
			}
			from := "--tools"
			if !cmd.Flags().Changed("tools") {
				tools, from = os.Getenv(toolsEnv), "$"+toolsEnv
			}
			mode, err := toolMode(tools, from)
			if err != nil {
				return err
			}
			out, info, stop := newTerminal(cmd).wrap(cmd.OutOrStdout(), cmd.ErrOrStderr())
			defer stop()
			rc := runConfig{
				agent:     agentName,
				model:     modelName,
				mode:      mode,
				thread:    threadChoice{id: cmp.Or(newThread, threadID), isNew: newThread != "", db: dbArg(cmd, dsn)},
				dsn:       dsn,
				dbSource:  dbSource(cmd),
				question:  question,
				mcpConfig: mcpConfig,
				out:       out,
				info:      info,
			}
			if e.Orchestrate != nil {
				if mcpConfig != "" {
					return fmt.Errorf("--mcp-config works with the ReAct agents, not with %s (an orchestrator agent)", e.Name)
				}
				return runOrchestrated(cmd.Context(), e, orchestrateConfig{runConfig: rc, approve: approve, configPath: configPath, resultsDir: resultsDir,
					stdin: cmd.InOrStdin(), user: user, userGiven: userGiven || os.Getenv(userEnv) != "", memory: withMemory})
			}
			if e.Reviews {
				return runReviewed(cmd.Context(), e, reviewConfig{runConfig: rc, user: user, approve: approve, stdin: cmd.InOrStdin()})
			}
			return run(cmd.Context(), rc)
		},
	}
	f := cmd.Flags()
	f.StringVar(&agentName, "agent", "", "the agent to ask: "+strings.Join(examples.Agents(), ", "))
	f.StringVar(&modelName, "model", "", "the model, e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, ollama:qwen2.5:7b, scripted:PATH (default $"+modelEnv+")")
	f.StringVar(&tools, "tools", "", "how the model calls tools: "+toolsNative+" (its tool calling) or "+toolsJSON+" (a JSON reply format, for models without tool calling) (default $"+toolsEnv+", else "+toolsNative+")")
	f.StringVar(&threadID, "thread", "", "continue the saved conversation with this id (default: a new one, printed)")
	f.StringVar(&newThread, "new-thread", "", "start a new conversation under this id")
	cmd.MarkFlagsMutuallyExclusive("thread", "new-thread")
	addDBFlag(cmd, &dsn, "database for conversations")
	f.StringVar(&approve, "approve", approveAsk, "orchestrator agents and guide: "+approveAsk+" (ask at each approval point; answers may be piped), "+approveAuto+" (answer each at once: accept, proceed, skip a failed todo) or "+approveNone+" (no approval points)")
	f.StringVar(&configPath, "config", "", "orchestrator agents: a YAML configuration replacing the agent's own (approvals, models per layer, tools, prompts)")
	f.StringVar(&resultsDir, "results", "", "orchestrator agents: where step results, plans, charts and reports are saved (default "+resultsDirName+" beside the database)")
	addMCPFlag(cmd, &mcpConfig)
	f.StringVar(&user, "user", "", "guide and orchestrator agents: whose long-term memories to read and write (default $"+userEnv+", else "+guideagent.DefaultUser+")")
	f.BoolVar(&withMemory, "memory", true, "orchestrator agents: learn from each task, per --user, in the database (past clarifications, step approvals, tool outcomes, plans), and use what was learned; --memory=false runs without")
	return cmd
}

// approvingAgents names the examples that stop for approval: the
// orchestrator agents and those that review a plan.
func approvingAgents() []string {
	var names []string
	for _, e := range examples.All() {
		if e.Orchestrate != nil || e.Reviews {
			names = append(names, e.Name)
		}
	}
	return names
}

// orchestratorAgents names the examples that run as orchestrator agents.
func orchestratorAgents() []string {
	var names []string
	for _, e := range examples.All() {
		if e.Orchestrate != nil {
			names = append(names, e.Name)
		}
	}
	return names
}

type runConfig struct {
	agent, model, dsn, dbSource, question, mcpConfig string
	thread                                           threadChoice
	mode                                             react.Mode
	out, info                                        io.Writer
}

func run(ctx context.Context, c runConfig) (err error) {
	e, err := lookupAgent(c.agent)
	if err != nil {
		return err
	}
	model, db, open, closeRun, err := openAgentRun(ctx, e, c)
	if err != nil {
		return err
	}
	defer closeRun()
	a, err := e.Open(ctx, model, open)
	if err != nil {
		return fmt.Errorf("agent %s: %w", e.Name, err)
	}
	defer a.Close()
	if open.Tools != nil {
		// The turn sees the tools of its start, whatever the servers do
		// meanwhile.
		ctx = open.Tools.Pin(ctx)
	}

	c.thread.where = db.Backend + " " + db.Target
	thread, err := pickThread(ctx, db.Saver, c.thread, c.info)
	if err != nil {
		return err
	}
	defer func() { err = onInterrupt(ctx, err, continueHint(e.Name, thread, c.thread.db)) }()
	// The whole turn owns the thread, waiting for a run in another
	// process to finish with it: two turns never interleave.
	lease, err := db.Saver.Acquire(ctx, thread, checkpoint.LeaseOptions{Wait: true, OnWait: func(*checkpoint.BusyError) {
		fmt.Fprintf(c.info, "thread %s is busy; waiting…\n", thread)
	}})
	if err != nil {
		return fmt.Errorf("thread %s: %w", thread, err)
	}
	defer lease.Release(context.WithoutCancel(ctx))
	ctx = checkpoint.WithLease(ctx, lease)
	p := &printer{out: c.out, info: c.info, json: c.mode == react.JSONFormat}
	// The agent's graph answers (the router in front of the agent, as
	// weft serve runs it); the command only shows what happens.
	opts := &graph.RunOptions{
		ThreadID:    thread,
		StreamModes: []graph.StreamMode{graph.StreamMessages, graph.StreamUpdates},
		// The thread says which graph wrote it, for weft threads.
		Metadata: map[string]any{graphIDKey: e.Name},
	}
	for ev, err := range a.Graph.Stream(ctx, router.Input(c.question), opts) {
		if err != nil {
			p.endLine()
			var te *react.TurnError
			if errors.As(err, &te) {
				// A fallback answer was shown for the user on out; the
				// cause goes to the error output, with an exit code of
				// its own.
				err = te
			}
			return fmt.Errorf("agent %s: %w", e.Name, err)
		}
		if u, ok := ev.Update(); ok && u.Node == router.RouteNode {
			if rt, ok := graph.Written(u.Update, router.RoutingChannel); ok && rt.Route == router.Chat {
				fmt.Fprintln(c.info, "· plain chat, no tools")
			}
		}
		p.event(ev)
	}
	p.endLine()
	return nil
}

// graphIDKey is the run metadata key naming the example graph that wrote a
// thread, as the LangGraph server stamps its runs' checkpoints.
const graphIDKey = "graph_id"

// openRun opens what a run needs: the model (--model, else $WEFT_MODEL,
// else fallback; without any, an error that says how to name one) and the
// database; it returns the directory where the example's service keeps its
// data, beside the conversations (for PostgreSQL, the current directory).
// openAgentRun opens what a chat agent's run needs: its model and
// database (openRun) and, with --mcp-config, the MCP servers' tools in the
// registry the agent adds its own to, following the servers and the file
// while the command lasts. closeRun closes them, MCP first.
func openAgentRun(ctx context.Context, e examples.Example, c runConfig) (model llm.ChatModel, db *dburl.DB, open examples.OpenOptions, closeRun func(), err error) {
	model, db, dataDir, err := openRun(ctx, e, c, "")
	if err != nil {
		return nil, nil, open, nil, err
	}
	open = examples.OpenOptions{Saver: db.Saver, DataDir: dataDir, Mode: c.mode}
	if c.mcpConfig == "" {
		return model, db, open, func() { db.Close() }, nil
	}
	open.Tools, _ = tool.NewRegistry()
	m, err := startMCP(ctx, c.mcpConfig, open.Tools, c.info, true)
	if err != nil {
		db.Close()
		return nil, nil, open, nil, err
	}
	return model, db, open, func() { m.Close(); db.Close() }, nil
}

// heldNotes keeps the lines a background job (memory, reflection) tells
// from its own goroutine while the run may still print, to tell them once
// the run is done.
type heldNotes struct {
	mu    sync.Mutex
	lines []string
}

func (n *heldNotes) add(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, fmt.Sprintf(format, args...))
}

// tell writes the lines held so far to w.
func (n *heldNotes) tell(w io.Writer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.lines {
		fmt.Fprintln(w, l)
	}
}

func openRun(ctx context.Context, e examples.Example, c runConfig, fallback string) (llm.ChatModel, *dburl.DB, string, error) {
	name := cmp.Or(c.model, os.Getenv(modelEnv), fallback)
	if name == "" {
		demo := e.Demo
		if c.mode == react.JSONFormat && e.DemoJSON != "" {
			demo = e.DemoJSON
		}
		return nil, nil, "", fmt.Errorf("no model: pass --model openai:gpt-4o-mini (needs OPENAI_API_KEY), --model anthropic:claude-sonnet-4-5 (needs ANTHROPIC_API_KEY), --model ollama:qwen2.5:7b (a local Ollama, OLLAMA_HOST) or --model scripted:%s (offline), or set %s", demo, modelEnv)
	}
	model, err := providers.Open(ctx, name)
	if err != nil {
		return nil, nil, "", err // it names the model already
	}
	db, err := dburl.Open(ctx, c.dsn, dburl.Options{Source: c.dbSource})
	if err != nil {
		return nil, nil, "", err
	}
	dataDir := "."
	if db.Backend == "sqlite" {
		dataDir = filepath.Dir(db.Target)
	}
	return model, db, dataDir, nil
}

// Exit codes of the weft command, documented in README.md.
const (
	// ExitError: the command failed (bad flags, configuration, database).
	ExitError = 1
	// ExitModelFailed: no model answer, because the model call failed
	// (the provider's error, a timeout bound, an invalid response); a
	// fallback answer was printed and the cause told on standard error.
	ExitModelFailed = 3
	// ExitNoAnswer: the agent ended its turn with a fallback answer for
	// another reason (its tools kept failing, the turn's time ran out, the
	// model's replies could not be used).
	ExitNoAnswer = 4
	// ExitToolFailed: weft mcp call ran the tool and it answered with a
	// failure (isError, a timeout, arguments it refused); the result was
	// printed and the cause told on standard error.
	ExitToolFailed = 5
	// ExitInterrupted: the user pressed Ctrl-C (SIGINT); 128 + 2, as
	// shells report it. How to continue the thread was told on stderr.
	ExitInterrupted = 130
)

// ExitCode is the process's exit code after err (0 for nil).
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.Is(err, react.ErrModelFailed), errors.Is(err, orchestrator.ErrModelFailed):
		return ExitModelFailed
	case errors.Is(err, react.ErrNoAnswer), errors.Is(err, orchestrator.ErrInvalidPlan), errors.Is(err, llm.ErrInvalidOutput):
		return ExitNoAnswer
	case errors.Is(err, ErrToolFailed):
		return ExitToolFailed
	}
	return ExitError
}

func lookupAgent(name string) (examples.Example, error) {
	known := strings.Join(examples.Agents(), ", ")
	if name == "" {
		return examples.Example{}, fmt.Errorf("no agent: pass --agent with one of: %s", known)
	}
	e, err := examples.Lookup(name)
	if err != nil || (e.Open == nil && e.Orchestrate == nil) {
		return examples.Example{}, fmt.Errorf("unknown agent %q; known agents: %s", name, known)
	}
	return e, nil
}

// printer shows a run as it happens: the agent's tokens on out, tool calls
// and results on info, one line each.
type printer struct {
	out, info io.Writer
	// midLine is true when tokens were printed without a newline after.
	midLine bool
	// chunks are the agent node's token chunks of the current step, merged
	// when the node finishes to show the tool calls it asked for.
	chunks []llm.Chunk
	// streamed holds, by task, the text shown as tokens, so the message
	// the task then writes is not printed again (streamed chunks need not
	// carry the message's id).
	streamed map[string]string
	// json is true when the agent runs in react.JSONFormat: its tokens
	// are a JSON object, of which only the answer is shown, and its tool
	// calls are read from the message the agent node writes.
	json bool
	// answer finds the answer in the agent node's JSON as it streams.
	answer answerStream
}

func (p *printer) token(s string) {
	if s == "" {
		return
	}
	fmt.Fprint(p.out, s)
	p.midLine = !strings.HasSuffix(s, "\n")
}

func (p *printer) endLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

func (p *printer) event(ev graph.Event) {
	if len(ev.Namespace) > 0 {
		return
	}
	switch d := ev.Data.(type) {
	case graph.MessageEvent:
		switch m := d.Message.(type) {
		case llm.Chunk:
			if d.Node != react.AgentNode && d.Node != router.ChatNode {
				return
			}
			if p.json && d.Node == react.AgentNode {
				p.token(p.answer.Write(m.Content))
				return
			}
			if p.streamed == nil {
				p.streamed = map[string]string{}
			}
			p.streamed[d.TaskID] += m.Content
			if d.Node == react.AgentNode {
				p.chunks = append(p.chunks, m)
			}
			p.token(m.Content)
		case llm.Message:
			if p.json && d.Node == react.AgentNode {
				// Shown from the node's update, which holds the message
				// whether or not it was also streamed.
				return
			}
			p.message(m, d.TaskID)
		}
	case graph.NodeUpdate:
		if p.json && d.Node == react.AgentNode {
			p.jsonStep(d.Update)
			return
		}
		if d.Node == react.AgentNode && len(p.chunks) > 0 {
			msg := llm.Merge(p.chunks...).Message()
			p.chunks = nil
			p.calls(msg.ToolCalls)
			p.invalidCalls(msg.InvalidToolCalls)
		}
	}
}

// jsonStep shows what the agent node wrote in react.JSONFormat: the tool
// call it parsed from the model's JSON, or the answer, of which the part
// not streamed yet.
func (p *printer) jsonStep(u graph.Update) {
	shown := p.answer.Answer()
	p.answer = answerStream{}
	for _, w := range u.Writes() {
		msgs, ok := w.Value.([]llm.Message)
		if !ok || w.Channel != react.Messages.Name() {
			continue
		}
		for _, m := range msgs {
			if m.Type != llm.TypeAI {
				continue
			}
			if len(m.ToolCalls) > 0 {
				p.calls(m.ToolCalls)
				continue
			}
			text := m.Text()
			if rest, ok := strings.CutPrefix(text, shown); ok {
				p.token(rest)
			} else {
				// The streamed text was not the answer (a reply that did not
				// parse, then a fallback answer): the answer on its own line.
				p.endLine()
				p.token(text)
			}
		}
	}
}

func (p *printer) message(m llm.Message, task string) {
	switch m.Type {
	case llm.TypeTool:
		p.endLine()
		fmt.Fprintf(p.info, "← %s: %s\n", m.Name, summarize(m))
	case llm.TypeAI:
		text, ok := p.streamed[task]
		if ok && text == m.Text() {
			return
		}
		if text != "" {
			// Part of a reply streamed before it failed: the fallback
			// answer goes on a line of its own, not glued to it.
			p.endLine()
		}
		// Not streamed as tokens: a fallback answer, or a model that
		// does not stream.
		p.token(m.Text())
		p.calls(m.ToolCalls)
		p.invalidCalls(m.InvalidToolCalls)
	}
}

// invalidCalls shows calls whose arguments are not JSON, raw, so the error
// result that follows has its call.
func (p *printer) invalidCalls(calls []llm.InvalidToolCall) {
	for _, c := range calls {
		p.endLine()
		fmt.Fprintf(p.info, "→ %s(%s) [arguments are not JSON]\n", c.Name, clip(c.Args, 200))
	}
}

func (p *printer) calls(calls []llm.ToolCall) {
	for _, c := range calls {
		p.endLine()
		args := c.Args
		// Arguments parsed from a model's text keep its spacing.
		var compact bytes.Buffer
		if json.Compact(&compact, args) == nil {
			args = compact.Bytes()
		}
		fmt.Fprintf(p.info, "→ %s(%s)\n", c.Name, clip(string(args), 200))
	}
}

// summarize describes a tool result in a few words: the error, or what
// the data holds (its lists' lengths, its name or title).
func summarize(m llm.Message) string {
	r, err := tool.ResultOf[json.RawMessage](m)
	if err != nil {
		return clip(m.Content, 120)
	}
	if !r.Success {
		if r.ErrorCode != "" {
			return "error " + r.ErrorCode + ": " + clip(r.Error, 160)
		}
		return "error: " + clip(r.Error, 160)
	}
	if tool.IsCached(m) {
		return "ok (cached) " + describe(r.Data)
	}
	return "ok " + describe(r.Data)
}

func describe(data json.RawMessage) string {
	var list []json.RawMessage
	if json.Unmarshal(data, &list) == nil {
		return fmt.Sprintf("[%d items]", len(list))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return clip(string(data), 120)
	}
	var parts []string
	for _, k := range []string{"name", "title", "career", "id", "status"} {
		var s string
		if json.Unmarshal(obj[k], &s) == nil && s != "" {
			parts = append(parts, k+" "+s)
			break
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if json.Unmarshal(obj[k], &list) == nil && list != nil {
			parts = append(parts, fmt.Sprintf("%s: %d", k, len(list)))
		}
		list = nil
	}
	if len(parts) == 0 {
		return fmt.Sprintf("{%d fields}", len(obj))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
