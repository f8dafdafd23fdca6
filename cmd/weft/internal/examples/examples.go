// Package examples names the example graphs that the weft command can
// build and draw, and the example agents it can run.
package examples

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/examples/approval/planner"
	careeragent "github.com/weftlabs/weft/examples/career/agent"
	careerservice "github.com/weftlabs/weft/examples/career/service"
	guideagent "github.com/weftlabs/weft/examples/guide/agent"
	guideservice "github.com/weftlabs/weft/examples/guide/service"
	marketingagent "github.com/weftlabs/weft/examples/marketing/agent"
	marketingservice "github.com/weftlabs/weft/examples/marketing/service"
	travelagent "github.com/weftlabs/weft/examples/travel/agent"
	travelservice "github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/hooks"
	"github.com/weftlabs/weft/store"
	storesqlite "github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/tool"
)

// Example is an example graph the weft command knows by name.
type Example struct {
	// Name is what the user types: weft graph draw NAME.
	Name string
	// Summary says what the graph does, in one line.
	Summary string
	// Build compiles a fresh copy of the graph over saver, which may be
	// nil. An agent's graph is built over a model without replies and a
	// service with no data: it can be drawn and its saved threads read
	// (weft threads), not run.
	Build func(saver *checkpoint.Saver) (*graph.Graph, error)
	// Open starts the example as a chat agent over model; nil for graphs
	// that are not chat agents.
	Open func(ctx context.Context, model llm.ChatModel, opts OpenOptions) (*Agent, error)
	// Demo is the scripted model script that runs the agent offline,
	// relative to the module root.
	Demo string
	// DemoJSON is the script that runs the agent offline in
	// react.JSONFormat, relative to the module root.
	DemoJSON string
	// Reviews is true for an agent whose graph stops for the user to
	// review a plan (its Agent has a Review): weft run then reads the
	// answers from standard input.
	Reviews bool
	// Orchestrate starts the example as an orchestrator agent (document
	// 003's layers, with approval points) over model; nil for the others.
	Orchestrate func(ctx context.Context, model llm.ChatModel, opts OrchestrateOptions) (*OrchestratorAgent, error)
	// Config returns an orchestrator agent's default configuration.
	Config func() (orchestrator.Config, error)
}

// OrchestrateOptions configure an agent opened by Example.Orchestrate.
type OrchestrateOptions struct {
	// Saver keeps the agent's threads; the approval points need one.
	Saver *checkpoint.Saver
	// DataDir is the directory of the SQLite file of the example's
	// service; "" uses a private in-memory database.
	DataDir string
	// Mode is how the models are asked for structured output and tools.
	Mode react.Mode
	// Config replaces the example's default configuration.
	Config *orchestrator.Config
	// Models override the model passed to Orchestrate per layer.
	Models orchestrator.Models
	// Memory, when set, is where the agent keeps what its tasks teach
	// (document 001's plan, tool, clarification, behaviour and workflow
	// memories, per user: memory.Experience behind memory/hooks): the
	// long-term store of the threads' database, so memories survive
	// restarts. The writes are made in the background after each answer.
	// nil runs the agent without long-term memory.
	Memory *store.Store
	// DefaultUser is the memory's user for a task that names none: not
	// the run (graph.RunOptions.User), nor its input.
	DefaultUser string
	// OnMemory, if set, is told of each background write of memory once
	// it ended: err is nil when it was written, else why not.
	OnMemory func(j hooks.Job, err error)
	// Logger receives memory's failures (default slog.Default()).
	Logger *slog.Logger
}

// OrchestratorAgent is an example orchestrator agent.
type OrchestratorAgent struct {
	Agent *orchestrator.Agent
	// Close releases the agent's services.
	Close func() error
}

// OpenOptions configure an agent opened by Example.Open. The zero value
// opens an agent that keeps no conversations, keeps its service's data in
// memory and uses the model's tool calling.
type OpenOptions struct {
	// Saver keeps the agent's conversations by thread; nil keeps none.
	Saver *checkpoint.Saver
	// DataDir is the directory of the SQLite file that holds the
	// example service's data; "" uses a private in-memory database.
	DataDir string
	// Mode is how the model asks for tools: react.NativeTools (the
	// model's tool calling) or react.JSONFormat (document 002's JSON
	// reply, for models without tool calling). In JSONFormat the router's
	// classifier is asked for its decision as JSON text too.
	Mode react.Mode
	// Tools, when set, is the registry the agent uses: its own tools are
	// added to it, beside the tools it holds (MCP servers' tools, kept
	// current by tool/mcp while the agent runs).
	Tools *tool.Registry
	// OnMemory, if set, is told what an agent with long-term memory
	// (guide) learned about a user in the background after a turn: the
	// memories it saved, or why it could not.
	OnMemory func(user string, saved []string, err error)
}

// Agent is an example agent opened for chat.
type Agent struct {
	// Graph is the agent's graph (router.Router.Graph): the route node,
	// plain chat and the ReAct agent's nodes. Its input is a human message
	// (router.Input); it is the one path by which a message is answered,
	// for weft run and weft serve alike, and it reads the threads it
	// wrote.
	Graph *graph.Graph
	// Router built Graph; it counts its decisions (Stats). Nil for an
	// agent without agent/router's route node (guide).
	Router *router.Router
	// Review, for an agent whose graph stops for the user to review a
	// plan (guide), says how to read the plan and answer it; nil for
	// the others.
	Review *Review
	// Close releases the agent's services; for guide it first waits for
	// the background reflection to write what it learned.
	Close func() error
}

// Review is how an agent's graph asks the user to review a plan: it stops
// at a breakpoint before the plan runs, and takes the user's answer as an
// update made with UpdateState as AsNode, or approval (running on with the
// zero update and no breakpoint).
type Review struct {
	// Pending returns the plan a thread's latest state waits for the user
	// to review, and whether it waits. A thread stopped at the breakpoint
	// for another reason (the graph's loop came back to the node) does
	// not wait: it is run on.
	Pending func(graph.StateSnapshot) ([]string, bool)
	// AsNode is the node the answers are written as.
	AsNode string
	// Edit replaces the plan with the user's sub-tasks; Feedback has the
	// plan made again from the user's words (the graph stops again to
	// show it); Reject drops it.
	Edit     func(subTasks []string) graph.Update
	Feedback func(text string) graph.Update
	Reject   func(reason string) graph.Update
}

// ErrUnknown means no example has the name asked for.
var ErrUnknown = errors.New("unknown example graph")

// All returns the examples, sorted by name. The list is built anew on each
// call, so callers may change it.
func All() []Example {
	return []Example{
		{
			Name:    "approval",
			Summary: "a planner that asks a human to approve, edit or reject its plan, then runs the steps in parallel (examples/approval)",
			Build:   planner.Build,
		},
		{
			Name:     "career",
			Summary:  "DreamPath, a career counsellor: a router in front of a ReAct agent over mentoring, learning-path and job tools (examples/career)",
			Build:    func(s *checkpoint.Saver) (*graph.Graph, error) { return buildGraph(openCareer, s) },
			Open:     openCareer,
			Demo:     "examples/career/demo.yaml",
			DemoJSON: "examples/career/demo-json.yaml",
		},
		{
			Name:     "guide",
			Summary:  "the workflow guide of document 004: routes, plans and stops for approval, recommends a tool per sub-task from a knowledge base with long-term memory, writes a cited guide and learns preferences (examples/guide)",
			Build:    func(s *checkpoint.Saver) (*graph.Graph, error) { return buildGraph(openGuide, s) },
			Open:     openGuide,
			Demo:     "examples/guide/demo.yaml",
			DemoJSON: "examples/guide/demo-json.yaml",
			Reviews:  true,
		},
		{
			Name:        "marketing",
			Summary:     "the marketing agent of document 003: clarify, plan, approve, run todos in parallel over campaign, review and inventory tools, report (examples/marketing)",
			Build:       buildMarketing,
			Orchestrate: openMarketing,
			Config:      marketingagent.DefaultConfig,
			Demo:        "examples/marketing/demo.yaml",
			DemoJSON:    "examples/marketing/demo.yaml",
		},
		{
			Name:     "travel",
			Summary:  "MateTrip, a travel planner: a router in front of a ReAct agent over place tools whose post-processing nodes keep last_recommended_places current (examples/travel)",
			Build:    func(s *checkpoint.Saver) (*graph.Graph, error) { return buildGraph(openTravel, s) },
			Open:     openTravel,
			Demo:     "examples/travel/demo.yaml",
			DemoJSON: "examples/travel/demo-json.yaml",
		},
	}
}

// buildGraph opens an agent over a model with an empty script, only to
// draw it or read its threads, and releases its service.
func buildGraph(open func(context.Context, llm.ChatModel, OpenOptions) (*Agent, error), saver *checkpoint.Saver) (*graph.Graph, error) {
	a, err := open(context.Background(), scripted.New(), OpenOptions{Saver: saver})
	if err != nil {
		return nil, err
	}
	return a.Graph, a.Close()
}

// serviceDB is where an example service keeps its data: weft-NAME.db in
// dataDir, seeded with its sample data on first use, so what a
// conversation does (a booking) is still there when it continues; or a
// private in-memory database when dataDir is empty.
func serviceDB(dataDir, name string) string {
	if dataDir == "" {
		return ":memory:"
	}
	return filepath.Join(dataDir, "weft-"+name+".db")
}

func openCareer(ctx context.Context, model llm.ChatModel, opts OpenOptions) (*Agent, error) {
	svc, err := careerservice.Open(ctx, serviceDB(opts.DataDir, "career"))
	if err != nil {
		return nil, fmt.Errorf("career service: %w", err)
	}
	a, err := careeragent.New(model, svc, careeragent.Options{Checkpointer: opts.Saver, Mode: opts.Mode, Tools: opts.Tools})
	if err != nil {
		svc.Close()
		return nil, err
	}
	return &Agent{Graph: a.Graph, Router: a.Router, Close: svc.Close}, nil
}

func openTravel(ctx context.Context, model llm.ChatModel, opts OpenOptions) (*Agent, error) {
	svc, err := travelservice.Open(ctx, serviceDB(opts.DataDir, "travel"))
	if err != nil {
		return nil, fmt.Errorf("travel service: %w", err)
	}
	a, err := travelagent.New(model, svc, travelagent.Options{Checkpointer: opts.Saver, Mode: opts.Mode, Tools: opts.Tools})
	if err != nil {
		svc.Close()
		return nil, err
	}
	return &Agent{Graph: a.Graph, Router: a.Router, Close: svc.Close}, nil
}

// guideMemoryTimeout bounds how long closing the guide waits for its
// background reflection: the answer is out by then, and what is not
// learned in time is kept for memory.Reflector.Replay.
const guideMemoryTimeout = 2 * time.Minute

// searxngEnv names the SearXNG instance the guide's web_search tool uses;
// unset, the guide has no web search.
const searxngEnv = "WEFT_SEARXNG_URL"

func openGuide(ctx context.Context, model llm.ChatModel, opts OpenOptions) (*Agent, error) {
	// The users' memories live beside the conversations, as the other
	// examples' service data does; in memory when there is no directory.
	var mem *store.Store
	cfg := store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}}
	var err error
	if opts.DataDir == "" {
		mem, err = store.NewMemory(cfg)
	} else {
		mem, err = storesqlite.Open(ctx, serviceDB(opts.DataDir, "guide"), cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("guide memory: %w", err)
	}
	gopts := guideagent.Options{Checkpointer: opts.Saver, Mode: opts.Mode, Memory: mem, Tools: opts.Tools}
	if u := os.Getenv(searxngEnv); u != "" {
		gopts.WebSearch = guideservice.SearXNG{URL: u}
	}
	var a *guideagent.Agent
	if opts.OnMemory != nil {
		gopts.OnReflect = func(user string, r memory.Result, err error) {
			var saved []string
			for _, id := range append(r.Inserted, r.Updated...) {
				if m, gerr := a.Facts.Get(context.WithoutCancel(ctx), user, id); gerr == nil {
					saved = append(saved, m.Content.Text())
				}
			}
			opts.OnMemory(user, saved, err)
		}
	}
	if a, err = guideagent.New(ctx, model, gopts); err != nil {
		mem.Close()
		return nil, err
	}
	return &Agent{
		Graph: a.Graph,
		Review: &Review{
			Pending: func(snap graph.StateSnapshot) ([]string, bool) {
				return guideagent.SubTasks.Get(snap.Values), guideagent.AwaitingApproval(snap)
			},
			AsNode:   guideagent.PlanningNode,
			Edit:     guideagent.EditPlan,
			Feedback: guideagent.Feedback,
			Reject:   guideagent.Reject,
		},
		Close: func() error {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), guideMemoryTimeout)
			defer cancel()
			return errors.Join(a.Close(cctx), mem.Close())
		},
	}, nil
}

// memoryCloseTimeout bounds how long closing an orchestrator agent waits
// for the memory writes still queued: the answers are out by then, and
// what is not written in time is told and dropped.
const memoryCloseTimeout = time.Minute

func openMarketing(ctx context.Context, model llm.ChatModel, opts OrchestrateOptions) (*OrchestratorAgent, error) {
	var bg *hooks.Background
	mopts := marketingagent.Options{
		Config:       opts.Config,
		Models:       opts.Models,
		Checkpointer: opts.Saver,
		Mode:         opts.Mode,
		DefaultUser:  opts.DefaultUser,
	}
	if opts.Memory != nil {
		exp, err := memory.NewExperience(opts.Memory, memory.ExperienceOptions{})
		if err != nil {
			return nil, fmt.Errorf("marketing memory: %w", err)
		}
		if bg, err = hooks.NewBackground(exp, &hooks.BackgroundOptions{OnDone: opts.OnMemory, Logger: opts.Logger}); err != nil {
			return nil, fmt.Errorf("marketing memory: %w", err)
		}
		mopts.Memory = bg.Hooks()
	}
	closeMemory := func() error {
		if bg == nil {
			return nil
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), memoryCloseTimeout)
		defer cancel()
		return bg.Close(cctx)
	}
	svc, err := marketingservice.Open(ctx, serviceDB(opts.DataDir, "marketing"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("marketing service: %w", err), closeMemory())
	}
	a, err := marketingagent.New(ctx, model, svc, mopts)
	if err != nil {
		return nil, errors.Join(err, closeMemory(), svc.Close())
	}
	// The memory writes still queued are made before the service closes.
	return &OrchestratorAgent{Agent: a, Close: func() error { return errors.Join(closeMemory(), svc.Close()) }}, nil
}

// buildMarketing builds the marketing agent's graph over a model without
// replies and an in-memory service, to draw it or read its threads.
func buildMarketing(saver *checkpoint.Saver) (*graph.Graph, error) {
	a, err := openMarketing(context.Background(), scripted.New(), OrchestrateOptions{Saver: saver})
	if err != nil {
		return nil, err
	}
	return a.Agent.Graph, a.Close()
}

// Names returns the examples' names, sorted.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, e := range all {
		names[i] = e.Name
	}
	return names
}

// Agents returns the names of the examples that run as agents: chat
// agents and orchestrator agents.
func Agents() []string {
	var names []string
	for _, e := range All() {
		if e.Open != nil || e.Orchestrate != nil {
			names = append(names, e.Name)
		}
	}
	return names
}

// Lookup returns the example called name; for an unknown name its error
// wraps ErrUnknown and lists the known names.
func Lookup(name string) (Example, error) {
	for _, e := range All() {
		if e.Name == name {
			return e, nil
		}
	}
	return Example{}, fmt.Errorf("%w %q; known graphs: %s", ErrUnknown, name, strings.Join(Names(), ", "))
}
