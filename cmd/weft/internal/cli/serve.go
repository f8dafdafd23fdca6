package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/examples/apitest"
	guideagent "github.com/weftlabs/weft/examples/guide/agent"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/providers"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/server/webui"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/telemetry"
)

// The values of --graphs.
const (
	graphsExamples = "examples"
	graphsAPITest  = "apitest"
)

// defaultAddr is the LangGraph dev server's address.
const defaultAddr = "127.0.0.1:2024"

type serveConfig struct {
	addr, dsn, dbSource, graphs, model, tools string
	durability                                string
	toolsFrom                                 string
	workers                                   int
	insecure                                  bool
	ui                                        bool
	grace                                     time.Duration
	corsOrigins                               []string
	version                                   string
	log                                       io.Writer
	ops                                       opsConfig
	// memory gives the orchestrator agents long-term memory.
	memory bool
}

func newServeCmd(version string) *cobra.Command {
	c := serveConfig{version: version}
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--db DB] [--graphs examples|apitest] [--model PROVIDER:MODEL]",
		Short: "Serve graphs over HTTP with the LangGraph Server API",
		Long: "Serve graphs over HTTP with the LangGraph Server API, so the LangGraph SDKs and front ends\n" +
			"written for LangGraph (agent-chat-ui, LangGraph Studio) work against weft unchanged.\n\n" +
			"--graphs examples (the default) serves the example agents (" + strings.Join(examples.Names(), ", ") + "),\n" +
			"each with a system assistant named after it; the chat agents answer with --model or $" + modelEnv + ",\n" +
			"or, without one, with their offline scripted demo models (found from the repository's root).\n" +
			"--graphs apitest serves the three test graphs of the LangGraph Server API reference: echo, approval, slow.\n" +
			"The same threads are served by the design documents' own API too: POST /agent/run and /agent/run-async,\n" +
			"the session WebSocket /ws/{session_id}, /sessions, POST /approve/{chat_id} and GET /health.\n\n" +
			"Threads, runs and checkpoints are kept in " + dburl.DefaultPath + " (or --db, $" + dburl.EnvVar + "); with PostgreSQL,\n" +
			"several weft serve processes may share the database, and with --redis ($WEFT_REDIS_URL) each serves\n" +
			"the streams of the runs the others execute (behind a load balancer). SIGINT or SIGTERM stops taking\n" +
			"runs, lets the runs going finish for --shutdown-timeout, and leaves the rest to be resumed at the next\n" +
			"start.\n\n" +
			"Each API key (--api-keys FILE, $WEFT_API_KEYS) is a user, whose threads, runs and store items no\n" +
			"other key reaches. Without keys every request acts for the same user, and the server listens on\n" +
			"loopback addresses only, unless --insecure-no-auth says that anyone who reaches it may read and run\n" +
			"every thread. --rate-limit limits each user (through --redis when set); /metrics serves\n" +
			"Prometheus metrics; traces go to OTLP over HTTP when $OTEL_EXPORTER_OTLP_ENDPOINT is set.",
		Example: "  weft serve\n  weft serve --graphs apitest --addr 127.0.0.1:2091\n" +
			"  weft serve --model openai:gpt-4o-mini --db postgres://weft@db:5432/weft",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.dbSource = dbSource(cmd)
			c.toolsFrom = "--tools"
			if !cmd.Flags().Changed("tools") {
				c.tools, c.toolsFrom = os.Getenv(toolsEnv), "$"+toolsEnv
			}
			if !cmd.Flags().Changed("model") {
				c.model = os.Getenv(modelEnv)
			}
			c.log = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return serve(ctx, c)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", defaultAddr, "the address to listen on")
	f.StringVar(&c.graphs, "graphs", graphsExamples, "the graphs to serve: "+graphsExamples+" (the example agents) or "+graphsAPITest+" (the LangGraph Server API's test graphs)")
	f.StringVar(&c.model, "model", "", "the example agents' model, e.g. openai:gpt-4o-mini (default $"+modelEnv+", else their offline demo scripts)")
	f.StringVar(&c.tools, "tools", "", "how the model calls tools: "+toolsNative+" or "+toolsJSON+" (default $"+toolsEnv+", else "+toolsNative+")")
	f.StringVar(&c.durability, "durability", string(graph.DurabilityAsync), "when a run's checkpoints are saved unless it asks: async (each step, in the background), sync (each step, before the next) or exit (once, at the run's end: fewest writes; a crash restarts the run from its input)")
	f.IntVar(&c.workers, "workers", 0, fmt.Sprintf("the most runs executing at once (default %d)", server.DefaultWorkers))
	f.BoolVar(&c.memory, "memory", true, "the orchestrator agents ("+strings.Join(orchestratorAgents(), ", ")+") learn from each task, per user, in the database, and use what they learned; --memory=false serves them without")
	f.BoolVar(&c.insecure, "insecure-no-auth", false, "listen beyond loopback without API keys: anyone who reaches the server may read and run every thread")
	f.DurationVar(&c.grace, "shutdown-timeout", 30*time.Second, "how long a shutdown lets the runs going finish before it leaves them to be resumed")
	f.BoolVar(&c.ui, "ui", true, "serve the web UI at / (its files under /ui/); --ui=false serves the API alone")
	f.StringSliceVar(&c.corsOrigins, "cors-origins", nil, "origins browsers may call from (default any)")
	addDBFlag(cmd, &c.dsn, "database for threads, runs and checkpoints")
	addOpsFlags(f, &c.ops)
	return cmd
}

func serve(ctx context.Context, c serveConfig) error {
	log := slog.New(slog.NewTextHandler(c.log, nil))
	ops, tel, closeOps, err := serveOps(ctx, c, log)
	if err != nil {
		return err
	}
	defer closeOps()
	if c.ops.pprofAddr != "" {
		stop, err := servePprof(c.ops.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	mode, err := toolMode(c.tools, c.toolsFrom)
	if err != nil {
		return err
	}
	switch graph.Durability(c.durability) {
	case graph.DurabilityAsync, graph.DurabilitySync, graph.DurabilityExit:
	default:
		return fmt.Errorf("--durability %q: want async, sync or exit", c.durability)
	}
	// Listen before opening the database and building the agents, so that
	// a port already taken is told at once, before anything is created.
	ln, err := listen(c.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // after Serve, a no-op
	db, err := dburl.Open(ctx, c.dsn, dburl.Options{Source: c.dbSource})
	if err != nil {
		return err
	}
	defer db.Close()
	graphs, closeGraphs, err := servedGraphs(ctx, c, db, mode, tel, log)
	if err != nil {
		return err
	}
	defer closeGraphs()
	opts := ops
	opts.Graphs, opts.DB, opts.Workers, opts.Logger = graphs, db, c.workers, log
	if c.graphs == graphsExamples {
		// The orchestrator agents' result files, served to their threads.
		opts.ThreadFiles = ExampleThreadFiles(dataDir(db))
	}
	opts.Version, opts.Durability = versionString(c.version), graph.Durability(c.durability)
	if len(c.corsOrigins) > 0 {
		opts.CORS = &server.CORSOptions{AllowOrigins: c.corsOrigins}
	}
	srv, err := server.New(ctx, opts)
	if err != nil {
		return err
	}
	handler, err := withUI(srv, c.ui)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		return err
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	ids := slices.Sorted(maps.Keys(graphs))
	log.Info("weft serve: listening", "url", "http://"+ln.Addr().String(), "db", db.Backend+" "+db.Target, "graphs", strings.Join(ids, ","), "ui", c.ui)
	select {
	case err := <-served:
		_ = srv.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("weft serve: shutting down: no new runs; the runs going have until the timeout", "timeout", c.grace)
	sctx, cancel := context.WithTimeout(context.Background(), c.grace)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- hs.Shutdown(sctx) }()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("weft serve: runs still going were stopped; they are resumed at the next start", "err", err)
	}
	if err := <-done; err != nil {
		_ = hs.Close()
	}
	log.Info("weft serve: stopped")
	return nil
}

// listen listens on addr, --addr. A port another program holds is told
// as such, with what to do about it, since the default port, 2024, is
// LangGraph's and often taken by another server.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--addr %s: another program is already listening there (%w); stop it, or pass --addr with another port, e.g. --addr 127.0.0.1:2098", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	return ln, nil
}

// WithUI returns the handler weft serve serves: api, with the web UI
// (package webui) at / and under /ui/ when ui is true.
func WithUI(api http.Handler, ui bool) (http.Handler, error) { return withUI(api, ui) }

func withUI(api http.Handler, ui bool) (http.Handler, error) {
	if !ui {
		return api, nil
	}
	h, err := webui.New()
	if err != nil {
		return nil, err
	}
	return h.Mount(api), nil
}

// ExampleGraphsOptions configure ExampleGraphs.
type ExampleGraphsOptions struct {
	// DataDir holds the example services' data and the orchestrator's
	// results, as the directory of weft serve's SQLite database does.
	DataDir string
	// Model answers for every chat agent; nil plays each agent's offline
	// demo script, as weft serve does without --model.
	Model llm.ChatModel
	// WrapModel, if set, wraps each agent's model (the demo script's or
	// Model), e.g. to pace its stream in a test.
	WrapModel func(agent string, m llm.ChatModel) llm.ChatModel
	// Configure, if set, changes an orchestrator agent's configuration
	// (its default, as weft serve uses it) before the agent is built,
	// e.g. to turn on step approvals in a test.
	Configure func(agent string, c *orchestrator.Config)
	// Logger receives what weft serve would log; nil discards it.
	Logger *slog.Logger
}

// ExampleGraphs builds the example agents' graphs exactly as weft serve
// --graphs examples serves them, for programs that drive weft serve's
// handler in-process (the browser tests). Demo scripts are read from the
// working directory, the repository's root. close releases the agents'
// services once the graphs are no longer served.
func ExampleGraphs(ctx context.Context, opts *ExampleGraphsOptions) (graphs map[string]server.GraphFunc, close func(), err error) {
	if opts == nil {
		opts = &ExampleGraphsOptions{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return exampleGraphs(ctx, graphsConfig{model: opts.Model, wrap: opts.WrapModel, configure: opts.Configure, dataDir: opts.DataDir}, react.NativeTools, nil, log)
}

// graphsConfig is what the example graphs are built with.
type graphsConfig struct {
	model     llm.ChatModel
	wrap      func(agent string, m llm.ChatModel) llm.ChatModel
	configure func(agent string, c *orchestrator.Config)
	dataDir   string
	// memory gives the orchestrator agents their memories in the
	// server's store (weft serve's --memory).
	memory bool
}

// servedGraphs builds what --graphs names.
func servedGraphs(ctx context.Context, c serveConfig, db *dburl.DB, mode react.Mode, tel *telemetry.Telemetry, log *slog.Logger) (map[string]server.GraphFunc, func(), error) {
	out := map[string]server.GraphFunc{}
	switch c.graphs {
	case graphsAPITest:
		for id, b := range apitest.All() {
			out[id] = b
		}
		return out, func() {}, nil
	case graphsExamples:
	default:
		return nil, nil, fmt.Errorf("--graphs %q: want %s (the example agents) or %s (the LangGraph Server API's test graphs)", c.graphs, graphsExamples, graphsAPITest)
	}
	gc := graphsConfig{}
	if c.model != "" {
		m, err := providers.Open(ctx, c.model)
		if err != nil {
			return nil, nil, err
		}
		gc.model = tel.WrapModel(m, c.model)
		log.Info("weft serve: the example agents answer with " + c.model)
	}
	gc.dataDir = dataDir(db)
	gc.memory = c.memory
	if c.memory {
		log.Info("weft serve: the orchestrator agents learn from each task, per user, in " + db.Backend + " " + db.Target + " (--memory=false to serve them without)")
	}
	return exampleGraphs(ctx, gc, mode, tel, log)
}

// dataDir is where the example agents keep their data and results: beside
// an SQLite database, else in the working directory.
func dataDir(db *dburl.DB) string {
	if db.Backend == "sqlite" {
		return filepath.Dir(db.Target)
	}
	return "."
}

// exampleGraphs builds the example agents' graphs.
func exampleGraphs(ctx context.Context, gc graphsConfig, mode react.Mode, tel *telemetry.Telemetry, log *slog.Logger) (map[string]server.GraphFunc, func(), error) {
	out := map[string]server.GraphFunc{}
	model, dataDir := gc.model, gc.dataDir
	var closers []func() error
	closeAll := func() {
		for _, f := range closers {
			_ = f()
		}
	}
	for _, e := range examples.All() {
		if e.Open == nil && e.Orchestrate == nil {
			out[e.Name] = func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) { return e.Build(saver) }
			continue
		}
		m := model
		if m == nil {
			demo := e.Demo
			if mode == react.JSONFormat && e.DemoJSON != "" {
				demo = e.DemoJSON
			}
			dm, err := loopingScript(demo)
			if err != nil {
				log.Warn("weft serve: not serving "+e.Name+": no --model, and its offline demo script cannot be read (run from the repository's root, or pass --model)", "script", demo, "err", err)
				continue
			}
			log.Warn("weft serve: " + e.Name + " answers with its offline scripted demo model (" + demo + "), the same replies in turn in each conversation whatever is asked, not a real model; pass --model or set $" + modelEnv + " for one")
			m = tel.WrapModel(dm, "scripted:"+demo)
		}
		if gc.wrap != nil {
			m = gc.wrap(e.Name, m)
		}
		if e.Orchestrate != nil {
			out[e.Name] = func(saver *checkpoint.Saver, st *store.Store) (*graph.Graph, error) {
				// Its results (step results, plans, charts, reports) go
				// beside the database, as weft run puts them.
				cfg, err := e.Config()
				if err != nil {
					return nil, fmt.Errorf("agent %s: %w", e.Name, err)
				}
				cfg.Results.Dir = filepath.Join(dataDir, resultsDirName)
				if gc.configure != nil {
					gc.configure(e.Name, &cfg)
				}
				oopts := examples.OrchestrateOptions{Saver: saver, DataDir: dataDir, Mode: mode, Config: &cfg}
				if gc.memory {
					// Its memories live in the server's store, per run's
					// user; without API keys every run is the user
					// weft run names by default.
					oopts.Memory, oopts.DefaultUser, oopts.Logger = st, guideagent.DefaultUser, log
				}
				a, err := e.Orchestrate(ctx, m, oopts)
				if err != nil {
					return nil, fmt.Errorf("agent %s: %w", e.Name, err)
				}
				closers = append(closers, a.Close)
				return a.Agent.Graph, nil
			}
			continue
		}
		out[e.Name] = func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
			a, err := e.Open(ctx, m, examples.OpenOptions{Saver: saver, DataDir: dataDir, Mode: mode})
			if err != nil {
				return nil, fmt.Errorf("agent %s: %w", e.Name, err)
			}
			closers = append(closers, a.Close)
			return a.Graph, nil
		}
	}
	return out, closeAll, nil
}

// loopingScript loads a demo script to play over and over within each
// conversation: every thread hears it from its top (threadScripts), and a
// thread that goes on past its end hears it again.
func loopingScript(path string) (llm.ChatModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	doc["loop"] = true
	if data, err = yaml.Marshal(doc); err != nil {
		return nil, err
	}
	ts, err := newThreadScripts(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return threadScripted{s: ts}, nil
}
