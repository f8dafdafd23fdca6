// Package server serves graphs over HTTP with the LangGraph Server API, so
// that front ends and SDKs written for LangGraph work against weft
// unchanged: the official JS and Python SDKs, agent-chat-ui, LangGraph
// Studio.
//
// A Server is an http.Handler built from Options: the graphs to serve
// (each gets a system assistant), and the database its threads, runs,
// checkpoints and long-term store live in (SQLite or PostgreSQL, through
// checkpoint/dburl; nil keeps everything in memory).
//
//	db, err := dburl.Open(ctx, "weft.db", dburl.Options{})
//	...
//	srv, err := server.New(ctx, server.Options{
//		Graphs: map[string]server.GraphFunc{"chat": buildChat},
//		DB:     db,
//	})
//	...
//	http.ListenAndServe("127.0.0.1:2024", srv)
//
// Runs execute on a bounded pool of workers. A run owns its thread through
// a checkpoint lease (checkpoint.Saver.Acquire), so the server and a weft
// run command never write one thread at once, and several servers may
// share a PostgreSQL database. Runs on one thread execute one at a time,
// in the order they were created; a new run on a busy thread follows its
// multitask strategy (reject, interrupt, rollback, enqueue). A run left
// behind by a process that died is taken over and resumed from its last
// checkpoint. Shutdown stops taking runs and leaves what it cannot finish
// resumable. docs/server.md describes the endpoints and their semantics.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
	"github.com/weftlabs/weft/server/ratelimit"
	"github.com/weftlabs/weft/store"
	storepg "github.com/weftlabs/weft/store/postgres"
	storesqlite "github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/telemetry"
)

// GraphFunc builds a graph to serve, compiled with the server's
// checkpoint saver; st is the server's long-term store, for nodes that
// keep memories. The server calls it once, at New.
type GraphFunc = func(saver *checkpoint.Saver, st *store.Store) (*graph.Graph, error)

// Defaults of Options.
const (
	// DefaultWorkers bounds the runs executing at once.
	DefaultWorkers = 1000
	// DefaultStreamRetention is how long the events of a resumable run are
	// kept after it ends, for clients that reconnect.
	DefaultStreamRetention = 5 * time.Minute
	// DefaultWorkerTTL is how long a server process may go without a
	// heartbeat before another takes over its runs.
	DefaultWorkerTTL = 30 * time.Second
	// DefaultMaxBodyBytes bounds a request's body.
	DefaultMaxBodyBytes = api.MaxBodyBytes
)

// Options configure a Server.
type Options struct {
	// Graphs are the graphs to serve, by graph id (what clients name as
	// assistant_id or graph_id). Each gets a system assistant whose id is
	// SystemAssistantID(graph id), as LangGraph's servers make it.
	Graphs map[string]GraphFunc
	// DB holds threads, runs, assistants and checkpoints (the server's
	// tables sit beside the saver's), and the long-term store unless Store
	// is set. nil keeps everything in memory: nothing survives a restart.
	DB *dburl.DB
	// Store is the long-term store the graphs get and the /store
	// endpoints serve; nil opens one in DB (or in memory).
	Store *store.Store
	// Workers bounds the runs executing at once (0: DefaultWorkers);
	// more runs wait for a worker.
	Workers int
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// CORS configures cross-origin requests; nil allows every origin, as
	// LangGraph's servers do by default.
	CORS *CORSOptions
	// Durability is the durability of a run that does not ask for one
	// (default graph.DurabilityAsync).
	Durability graph.Durability
	// LeaseTTL is the lifetime of a run's thread lease, renewed every
	// third of it: how long a crashed process blocks its threads (0:
	// checkpoint.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// WorkerTTL is how long this process may go without a heartbeat
	// before another process takes over its runs (0: DefaultWorkerTTL); it
	// heartbeats every third of it.
	WorkerTTL time.Duration
	// StreamRetention is how long a resumable run's events are kept after
	// it ends (0: DefaultStreamRetention).
	StreamRetention time.Duration
	// Hooks are called as runs start and end, for metrics and tracing.
	Hooks RunHooks
	// Broker carries runs' events to the requests streaming them; nil
	// keeps them in this process, which then serves the streams of the
	// runs it executes. NewRedisBroker shares them, and cancels, with the
	// other processes serving the same database.
	Broker Broker
	// Version is what GET /info reports as the server's version.
	Version string

	// Auth authenticates requests: every thread, run, assistant and store
	// item then belongs to the user it names, and a request without a
	// valid key is answered 401. GET /ok, /info, /metrics and /health and
	// CORS preflights need none. nil leaves authentication off: every
	// request acts for the same user, "", so serve such a server on a
	// loopback address only.
	Auth Authenticator
	// RateLimit limits the requests of each user (without Auth, of each
	// client address); a request beyond it is answered 429 with a
	// Retry-After header. nil sets no limit.
	RateLimit ratelimit.Limiter
	// MaxBodyBytes bounds a request's body; a larger one is answered 413
	// (0: 8 MiB).
	MaxBodyBytes int64
	// MaxRuns bounds the runs this process holds at once, waiting or
	// executing; a run beyond it is answered 503 with a Retry-After
	// header. 0 sets no bound (Workers still bounds the runs executing).
	MaxRuns int
	// MaxRunsPerUser bounds the runs one user holds in this process at
	// once, waiting or executing, so that one user cannot take every
	// worker; a run beyond it is answered 429 with a Retry-After header.
	// 0 sets no bound. Without Auth every request is the same user.
	MaxRunsPerUser int
	// Telemetry records metrics and traces of requests, runs, nodes and
	// the tool calls inside them, and serves the metrics at GET /metrics;
	// nil records none.
	Telemetry *telemetry.Telemetry
	// LogRequests logs one line per request to Logger: method, route
	// pattern, status, duration, user, thread and run.
	LogRequests bool
	// ThreadFiles names the directory of the files a graph's runs wrote
	// for a thread (an orchestrator's results), which GET
	// /threads/{thread_id}/files lists and serves to the thread's owner
	// and which is deleted with the thread; nil serves none.
	ThreadFiles ThreadFilesFunc
	// Webhooks configure the webhooks runs may name ("webhook": a URL the
	// server POSTs the run to once it ends); nil calls them with the
	// defaults of WebhookOptions, to any host.
	Webhooks *WebhookOptions
	// CronInterval is how often this process looks for the crons due
	// and fires them (0: DefaultCronInterval); a negative interval fires
	// none here. Several processes may share a database: each tick is
	// claimed in it first, and fired by one of them only.
	CronInterval time.Duration
	// CronRetries bounds how many times a cron's tick whose run could not
	// be made for a reason that may pass (this process at MaxRuns, a
	// database error, a shutdown) is tried again, by any process, each
	// time after a longer while (0: DefaultCronRetries; negative:
	// never). A tick is not tried again once the cron's next tick has
	// come.
	CronRetries int
}

// RunHooks are called as runs start and end, on the run's goroutine: keep
// them quick. Nil hooks are skipped.
type RunHooks struct {
	// OnStart is called when a run starts executing.
	OnStart func(ctx context.Context, run RunInfo)
	// OnEnd is called when a run ended: status is its final status
	// (success, error, interrupted), err its failure.
	OnEnd func(ctx context.Context, run RunInfo, status string, err error)
}

// RunInfo describes a run to hooks.
type RunInfo struct {
	RunID, ThreadID, AssistantID, GraphID string
	// User is the user the run acts for ("" without authentication).
	User    string
	Attempt int
}

// Server serves graphs with the LangGraph Server API. It is an
// http.Handler.
type Server struct {
	opts  Options
	log   *slog.Logger
	saver *checkpoint.Saver
	store *store.Store
	rec   *records.Store
	// sharedLeases: the records share the database the saver keeps its
	// thread leases in, so a run's end and its thread's release go in one
	// write (manager.end).
	sharedLeases bool
	graphs       map[string]*servedGraph
	handler      http.Handler
	runs         *manager
	// doc serves the design documents' own API (docapi.go).
	doc *docAPI
	// webhooks calls the webhooks of the runs this process ends.
	webhooks *webhooks
	// assistants keeps the assistants runs were made from.
	assistants assistantCache
	// crons fires the crons due (nil when Options.CronInterval is
	// negative).
	crons *cronScheduler
	// closers release what New opened, in reverse order.
	closers []func() error
	closeMu sync.Mutex
	closed  bool
}

// servedGraph is a compiled graph and its system assistant.
type servedGraph struct {
	id          string
	g           *graph.Graph
	assistantID string
}

// New builds a Server: it opens its tables in opts.DB (migrating them),
// compiles the graphs, records their system assistants, and takes over
// the runs that processes which died left behind.
func New(ctx context.Context, opts Options) (*Server, error) {
	s := &Server{opts: opts, log: opts.Logger, graphs: map[string]*servedGraph{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	if opts.MaxRuns < 0 || opts.MaxBodyBytes < 0 || opts.Workers < 0 {
		return nil, fmt.Errorf("server: Options.MaxRuns (%d), MaxBodyBytes (%d) and Workers (%d) must not be negative; 0 takes the default", opts.MaxRuns, opts.MaxBodyBytes, opts.Workers)
	}
	if err := s.open(ctx); err != nil {
		s.closeAll()
		return nil, err
	}
	ids := make([]string, 0, len(opts.Graphs))
	for id := range opts.Graphs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if id == "" || opts.Graphs[id] == nil {
			s.closeAll()
			return nil, fmt.Errorf("server: graph %q: a graph needs an id and a GraphFunc", id)
		}
		g, err := opts.Graphs[id](s.saver, s.store)
		if err != nil {
			s.closeAll()
			return nil, fmt.Errorf("server: building graph %q: %w", id, err)
		}
		if g.Checkpointer() == nil {
			s.closeAll()
			return nil, fmt.Errorf("server: graph %q has no checkpointer: compile it with the saver its GraphFunc is given", id)
		}
		sg := &servedGraph{id: id, g: g, assistantID: SystemAssistantID(id)}
		s.graphs[id] = sg
		if _, err := s.rec.EnsureAssistant(ctx, records.Assistant{ID: sg.assistantID, GraphID: id, Name: id, Metadata: []byte(`{"created_by":"system"}`)}); err != nil {
			s.closeAll()
			return nil, fmt.Errorf("server: recording the assistant of graph %q: %w", id, err)
		}
	}
	s.doc = newDocAPI()
	s.webhooks = newWebhooks(opts.Webhooks, s.log)
	s.runs = newManager(s)
	if err := s.runs.start(ctx); err != nil {
		s.closeAll()
		return nil, err
	}
	s.handler = s.routes()
	s.startCrons()
	return s, nil
}

// open opens the saver, the records and the long-term store.
func (s *Server) open(ctx context.Context) error {
	db := s.opts.DB
	if db == nil {
		s.saver = checkpoint.NewMemory()
		rec, closeRec, err := records.OpenMemory(ctx, records.Options{})
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.rec = rec
		s.closers = append(s.closers, closeRec)
		if s.store = s.opts.Store; s.store == nil {
			st, err := store.NewMemory(storeConfig())
			if err != nil {
				return fmt.Errorf("server: long-term store: %w", err)
			}
			s.store = st
			s.closers = append(s.closers, st.Close)
		}
		return nil
	}
	s.saver = db.Saver
	var err error
	switch d := db.Driver().(type) {
	case *sqlite.Driver:
		if s.rec, err = records.OpenSQLite(ctx, d.DB(), d.WriteTx, records.Options{}); err != nil {
			return fmt.Errorf("server: %s: %w", db.Target, err)
		}
		s.closers = append(s.closers, s.rec.Close)
		s.sharedLeases = true
	case *postgres.Driver:
		if s.rec, err = records.OpenPostgres(ctx, d.Pool(), records.Options{}); err != nil {
			return fmt.Errorf("server: %s: %w", db.Target, err)
		}
		s.closers = append(s.closers, s.rec.Close)
		s.sharedLeases = true
	default:
		return fmt.Errorf("server: database %s: unsupported checkpoint driver %T", db.Target, d)
	}
	if s.store = s.opts.Store; s.store == nil {
		if s.store, err = OpenStore(ctx, db); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// OpenStore opens the long-term store a Server keeps in db, beside its
// threads, indexed with the offline lexical embedder: for a program that
// reads and writes the same items as the server, such as weft run with the
// marketing agent's memories. It shares db's connections; closing it
// leaves db open.
func OpenStore(ctx context.Context, db *dburl.DB) (*store.Store, error) {
	var b store.Backend
	var err error
	switch d := db.Driver().(type) {
	case *sqlite.Driver:
		b, err = storesqlite.NewBackend(ctx, d.DB())
	case *postgres.Driver:
		b, err = storepg.NewBackend(ctx, d.Pool(), storepg.Options{})
	default:
		return nil, fmt.Errorf("database %s: unsupported checkpoint driver %T", db.Target, d)
	}
	if err != nil {
		return nil, fmt.Errorf("long-term store in %s: %w", db.Target, err)
	}
	st, err := store.New(b, storeConfig())
	if err != nil {
		return nil, fmt.Errorf("long-term store: %w", err)
	}
	return st, nil
}

func (s *Server) closeAll() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil {
			s.log.Warn("server: closing", "err", err)
		}
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Shutdown stops the server taking runs and lets the runs executing finish
// until ctx ends. Runs still executing then are stopped without being
// marked failed: with every run still waiting, they are left pending, to
// be taken over by another server process sharing the database, or by
// this one at its next start, and resumed from their last checkpoint.
// Shutdown does not close opts.DB, which the caller opened.
func (s *Server) Shutdown(ctx context.Context) error {
	// No cron fires from now on: its run would be refused.
	s.crons.shutdown()
	err := s.runs.shutdown(ctx)
	// The runs are over (or left to resume): the document API's
	// WebSockets are told the server goes away.
	s.doc.shutdown(ctx)
	// The webhooks of the runs that ended are sent (their tries again are
	// given up) before what they read is closed.
	err = errors.Join(err, s.webhooks.shutdown(ctx))
	s.closeAll()
	return err
}

// storeConfig configures the long-term store the server opens itself:
// items are indexed whole with the offline lexical embedder, so a search
// with a query ranks them out of the box, without a model.
func storeConfig() store.Config {
	return store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(embed.DefaultLexicalDims)}}
}

// SystemAssistantID is the id of the system assistant of a graph: the
// UUID version 5 of the graph id in the namespace
// 6ba7b821-9dad-11d1-80b4-00c04fd430c8, as LangGraph's servers make it.
func SystemAssistantID(graphID string) string { return systemAssistantID(graphID) }

// newRunID makes a run id: time-ordered, so runs list in creation order.
func newRunID() string { return ids.TimeOrdered() }

// newThreadID makes the id of a thread the server creates (a client may
// name its own): time-ordered (UUID version 7) rather than random, so
// that the rows a new thread adds to the tables keyed by its id (the
// thread, its lease, its checkpoints, their writes and values) land
// next to those of the other threads created about then, in the same
// few index pages, rather than each in a page of its own: SQLite's
// single writer then appends fewer pages to its log per run, and
// PostgreSQL touches fewer pages per commit. Any UUID is a valid
// thread id to LangGraph's clients.
func newThreadID() string { return ids.TimeOrdered() }

// stringsOr returns s, or dflt when s is empty.
func stringsOr(s, dflt string) string {
	if strings.TrimSpace(s) == "" {
		return dflt
	}
	return s
}
