package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/tool"
)

// Defaults of Options.
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultCallTimeout     = 30 * time.Second
	DefaultRefreshInterval = time.Minute
	DefaultWatchInterval   = 2 * time.Second
	DefaultMinBackoff      = 500 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
)

// ErrClosed: the manager was closed.
var ErrClosed = errors.New("mcp: manager closed")

// Options tune a Manager. The zero value uses the defaults.
type Options struct {
	// Registry receives the servers' tools; nil makes a new one
	// (Manager.Registry). Other tools may share it: a name taken by one
	// of them is not given to an MCP tool (the clash is logged).
	Registry *tool.Registry
	// OnChange is called after every change the manager makes to the
	// registry (tools added, updated or removed, with the registry's
	// version after it), from the first tools on: a tool-retrieval index
	// follows the registry by applying each change (see Change). Calls
	// come one at a time, in the order of the changes, from the
	// manager's goroutines; a slow OnChange delays later changes, never
	// tool calls.
	OnChange func(tool.Change)
	// ConnectTimeout bounds starting a server, its initialization and a
	// listing of its tools (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// CallTimeout bounds a tool call of a server whose configuration
	// sets no timeout (default DefaultCallTimeout); the caller's own
	// timeout (the agent's per-tool timeout) may end it sooner.
	CallTimeout time.Duration
	// RefreshInterval is how often each server's tools are listed again,
	// for servers that do not send notifications/tools/list_changed
	// (default DefaultRefreshInterval; negative: never).
	RefreshInterval time.Duration
	// WatchInterval is how often Watch checks the configuration file
	// (default DefaultWatchInterval).
	WatchInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait before reconnecting a
	// server that died or could not be started; it doubles with each
	// failure (defaults DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
	// Logger tells of connections, failures and changes (default
	// slog.Default()).
	Logger *slog.Logger
	// ServerStderr, when set, receives what stdio servers write to their
	// standard error, as it comes. The last lines are kept in any case
	// and told in the error of a server that stopped.
	ServerStderr io.Writer
	// ElicitationHandler answers servers that ask the user for input
	// during a call (elicitation/create); nil does not offer elicitation.
	ElicitationHandler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// OAuthHandler, when set, returns the OAuth handler authorizing the
	// requests to the HTTP server named server (nil: none).
	OAuthHandler func(server string) auth.OAuthHandler
	// ProtocolVersion, when set, is the MCP version the client asks for
	// (default: the SDK's latest, falling back to what a server speaks).
	ProtocolVersion string
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.WatchInterval <= 0 {
		o.WatchInterval = DefaultWatchInterval
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Manager connects to MCP servers and keeps their tools in a tool.Registry
// as ordinary weft tools, following the servers' changes; see the package
// documentation. Its methods are safe for concurrent use.
type Manager struct {
	opts Options
	reg  *tool.Registry
	// life is the context of the servers' goroutines, cancelled by Close.
	life   context.Context
	cancel context.CancelFunc
	// applyMu orders changes to the registry and their OnChange calls.
	applyMu sync.Mutex

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
	watch   chan struct{} // closed when the file watcher ends; nil without
}

// Start connects to cfg's servers (all at once, each within
// Options.ConnectTimeout) and registers their tools; it returns when every
// server has connected or failed once, or ctx ends. A server that failed
// is retried in the background, with backoff, and its tools appear when it
// connects; Servers tells each one's state. The manager runs until Close.
func Start(ctx context.Context, cfg *Config, opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	reg := opts.Registry
	if reg == nil {
		reg, _ = tool.NewRegistry()
	}
	if cfg == nil {
		cfg = &Config{}
	}
	for name, sc := range cfg.Servers {
		if err := checkServerName(name); err != nil {
			return nil, err
		}
		if _, err := sc.normalized(name); err != nil {
			return nil, err
		}
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{opts: opts, reg: reg, life: life, cancel: cancel, servers: map[string]*server{}}
	var started []*server
	m.mu.Lock()
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		if s := m.startLocked(name, cfg.Servers[name], nil); s != nil {
			started = append(started, s)
		}
	}
	m.mu.Unlock()
	for _, s := range started {
		select {
		case <-s.firstTry:
		case <-ctx.Done():
			m.Close()
			return nil, ctx.Err()
		}
	}
	return m, nil
}

// Registry returns the registry the tools are in.
func (m *Manager) Registry() *tool.Registry { return m.reg }

// Reload makes the servers those of cfg: servers no longer there are
// stopped and their tools removed, new ones are started, and servers whose
// configuration changed are restarted with it (their tools stay registered,
// answering CodeUnavailable, until the server is listed again). It does not
// wait for connections. An invalid server configuration fails Reload
// without changing anything.
func (m *Manager) Reload(cfg *Config) error {
	if cfg == nil {
		cfg = &Config{}
	}
	for name, sc := range cfg.Servers {
		if err := checkServerName(name); err != nil {
			return err
		}
		if _, err := sc.normalized(name); err != nil {
			return err
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	var stop []*server
	for name, s := range m.servers {
		sc, ok := cfg.Servers[name]
		if !ok {
			// Its tools answer CodeRemoved from now on.
			delete(m.servers, name)
			stop = append(stop, s)
		} else if !reflect.DeepEqual(s.cfg, mustNormalize(name, sc)) {
			// Its tools answer CodeUnavailable until its successor is
			// connected.
			stop = append(stop, s)
		}
	}
	m.mu.Unlock()
	// Stopped servers hand their tools to their successors, or remove them
	// (a server now disabled has no successor to hand them to).
	for _, s := range stop {
		s.stop()
		m.mu.Lock()
		sc, stays := cfg.Servers[s.name]
		if stays && !m.closed {
			m.opts.Logger.Info("mcp: restarting server with its new configuration", "server", s.name)
			next := m.startLocked(s.name, sc, s)
			m.mu.Unlock()
			if next != nil {
				continue
			}
		} else {
			m.mu.Unlock()
		}
		if !stays {
			m.opts.Logger.Info("mcp: server removed from the configuration", "server", s.name)
		}
		m.removeTools(s)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		if _, ok := m.servers[name]; !ok {
			m.opts.Logger.Info("mcp: server added to the configuration", "server", name)
			m.startLocked(name, cfg.Servers[name], nil)
		}
	}
	return nil
}

// startLocked starts the server name (m.mu held) and returns it, unless it
// is disabled (nil); prev, a stopped server of the same name, hands over its
// tools to a server that starts. The tools of a prev whose successor is
// disabled are its caller's to remove, once m.mu is released (OnChange may
// call back into the manager).
func (m *Manager) startLocked(name string, sc ServerConfig, prev *server) *server {
	sc = mustNormalize(name, sc)
	s := &server{
		m:        m,
		name:     name,
		cfg:      sc,
		state:    StateConnecting,
		tools:    map[string]*entry{},
		poke:     make(chan struct{}, 1),
		firstTry: make(chan struct{}),
		done:     make(chan struct{}),
		stderr:   &tail{limit: 4096, also: m.opts.ServerStderr},
	}
	if prev != nil && !sc.Disabled {
		for k, e := range prev.tools {
			stale := *e
			stale.sig = "" // rebuilt with the new configuration at the first listing
			s.tools[k] = &stale
		}
	}
	m.servers[name] = s
	if sc.Disabled {
		s.state = StateDisabled
		close(s.firstTry)
		close(s.done)
		return nil
	}
	ctx, cancel := context.WithCancel(m.life)
	s.cancel = cancel
	go s.run(ctx)
	return s
}

// Close stops every server (closing their sessions and processes) and
// removes their tools from the registry.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	servers := slices.Collect(maps.Values(m.servers))
	watch := m.watch
	m.mu.Unlock()
	m.cancel()
	if watch != nil {
		<-watch
	}
	var all []*server
	for _, s := range servers {
		s.stop()
		all = append(all, s)
	}
	var removed []string
	for _, s := range all {
		s.mu.Lock()
		for k := range s.tools {
			removed = append(removed, k)
		}
		s.tools, s.order = map[string]*entry{}, nil
		s.mu.Unlock()
	}
	slices.Sort(removed)
	m.apply(tool.Change{Removed: removed})
	return nil
}

// removeTools takes a stopped server's tools out of the registry.
func (m *Manager) removeTools(s *server) {
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.tools))
	s.tools, s.order = map[string]*entry{}, nil
	s.mu.Unlock()
	m.apply(tool.Change{Removed: names})
}

// apply changes the registry and tells OnChange; only names the manager
// registered are removed or updated.
func (m *Manager) apply(c tool.Change) (tool.Change, error) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if c.Empty() {
		return c, nil
	}
	c, err := m.reg.Apply(c)
	if err != nil {
		m.opts.Logger.Error("mcp: the tool registry refused a change", "error", err)
		return c, err
	}
	if m.opts.OnChange != nil {
		m.opts.OnChange(c)
	}
	return c, nil
}

// State is a server's connection state.
type State string

// The states.
const (
	// StateConnecting: starting, or restarting after its configuration
	// changed.
	StateConnecting State = "connecting"
	// StateConnected: its tools are listed and can be called.
	StateConnected State = "connected"
	// StateUnavailable: it died or could not be started; it is being
	// reconnected with backoff, and its tools answer CodeUnavailable.
	StateUnavailable State = "unavailable"
	// StateDisabled: its configuration says "disabled": true.
	StateDisabled State = "disabled"
)

// ServerStatus describes one server.
type ServerStatus struct {
	// Name is the server's name in the configuration.
	Name string
	// Transport is Stdio or HTTP.
	Transport string
	// State is the connection state.
	State State
	// Err is why the server is unavailable (the last failure).
	Err error
	// Server names the server's implementation, once connected.
	Server *mcp.Implementation
	// Tools are the server's tools as last listed, in the server's order.
	Tools []ToolInfo
}

// ToolInfo describes one tool of a server.
type ToolInfo struct {
	// Name is the tool's name in the registry (ToolName).
	Name string
	// ServerTool is the server's own name for it.
	ServerTool string
	// Description is what the model reads about it.
	Description string
	// InputSchema and OutputSchema are its JSON Schemas as the server
	// sent them (OutputSchema may be empty).
	InputSchema, OutputSchema json.RawMessage
	// Tool is the weft tool.
	Tool *tool.Tool
}

// Servers describes the servers, by name.
func (m *Manager) Servers() []ServerStatus {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, name := range slices.Sorted(maps.Keys(m.servers)) {
		servers = append(servers, m.servers[name])
	}
	m.mu.Unlock()
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = s.status()
	}
	return out
}

// Tool returns the tool a server calls name.
func (m *Manager) Tool(server, name string) (*tool.Tool, bool) {
	m.mu.Lock()
	s := m.servers[server]
	m.mu.Unlock()
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.tools {
		if e.original == name && e.sig != "" {
			return e.tool, true
		}
	}
	return nil, false
}

// call runs a tool of server for the weft tool's function.
func (m *Manager) call(ctx context.Context, serverName, exposed, name string, args json.RawMessage) (any, error) {
	m.mu.Lock()
	s := m.servers[serverName]
	m.mu.Unlock()
	if s == nil {
		return nil, &tool.Error{Code: CodeRemoved, Message: fmt.Sprintf("MCP server %s was removed from the configuration; use another tool", serverName), Meta: map[string]any{MetaServer: serverName, MetaTool: name}}
	}
	return s.call(ctx, exposed, name, args)
}

// entry is one listed tool of a server.
type entry struct {
	original string
	info     *mcp.Tool
	tool     *tool.Tool
	// sig is the listed tool as JSON, to notice a change; empty for an
	// entry to rebuild.
	sig string
}

// server is one configured server and the goroutine that keeps it
// connected.
type server struct {
	m    *Manager
	name string
	cfg  ServerConfig

	mu      sync.Mutex
	session *mcp.ClientSession
	state   State
	err     error
	impl    *mcp.Implementation
	// tools by registered name; written by the server's goroutine only.
	tools map[string]*entry
	order []string

	// progress maps the progress token of each call in flight that asked
	// for progress (tool.ReportsProgress) to its context.
	progress sync.Map

	poke     chan struct{}
	firstTry chan struct{}
	done     chan struct{}
	cancel   context.CancelFunc
	stderr   *tail
}

// stop ends the server's goroutine and closes its session.
func (s *server) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	<-s.done
}

// signal asks the server's goroutine to list the tools again.
func (s *server) signal() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.name, Transport: s.cfg.Type, State: s.state, Err: s.err, Server: s.impl}
	for _, k := range s.order {
		e := s.tools[k]
		if e == nil || e.sig == "" {
			continue
		}
		in, _ := inputSchema(e.info)
		var out json.RawMessage
		if e.info.OutputSchema != nil {
			out, _ = json.Marshal(e.info.OutputSchema)
		}
		st.Tools = append(st.Tools, ToolInfo{Name: k, ServerTool: e.original, Description: description(e.info), InputSchema: in, OutputSchema: out, Tool: e.tool})
	}
	return st
}

func (s *server) setState(st State, cs *mcp.ClientSession, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.session, s.err = st, cs, err
	if cs != nil {
		if r := cs.InitializeResult(); r != nil {
			s.impl = r.ServerInfo
		}
	}
}

// run keeps the server connected until ctx ends.
func (s *server) run(ctx context.Context) {
	defer close(s.done)
	first := true
	tried := func() {
		if first {
			first = false
			close(s.firstTry)
		}
	}
	defer tried()
	log := s.m.opts.Logger.With("server", s.name)
	failures := 0
	for ctx.Err() == nil {
		cs, err := s.connect(ctx)
		if err == nil {
			err = s.list(ctx, cs)
			if err != nil {
				cs.Close()
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			err = s.withStderr(err)
			wait := s.backoff(failures)
			// The first failure is told; the retries that fail alike are
			// for debugging.
			level := slog.LevelWarn
			if failures > 1 {
				level = slog.LevelDebug
			}
			log.Log(ctx, level, "mcp: server unavailable; reconnecting", "error", err, "retry_in", wait.Round(time.Millisecond))
			s.setState(StateUnavailable, nil, err)
			tried()
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			continue
		}
		failures = 0
		s.setState(StateConnected, cs, nil)
		log.Info("mcp: server connected", "tools", s.toolCount())
		tried()
		lost := s.serve(ctx, cs)
		if ctx.Err() != nil {
			break
		}
		lost = s.withStderr(lost)
		s.setState(StateUnavailable, nil, lost)
		failures = 1
		wait := s.backoff(failures)
		log.Warn("mcp: server connection lost; reconnecting", "error", lost, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	s.setState(StateUnavailable, nil, ErrClosed)
}

// serve waits on a connected session, listing its tools again when the
// server says they changed, when a call failed, and every
// RefreshInterval; it returns why the session ended (nil when ctx ended).
func (s *server) serve(ctx context.Context, cs *mcp.ClientSession) error {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	var tick <-chan time.Time
	if iv := s.m.opts.RefreshInterval; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			cs.Close()
			<-ended
			return nil
		case err := <-ended:
			// The session ended by itself, but what it started (the
			// SDK's subscription listener, keep-alives) stops only
			// when it is closed.
			cs.Close()
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return fmt.Errorf("connection lost: %w", err)
		case <-s.poke:
		case <-tick:
		}
		if err := s.list(ctx, cs); err != nil && !isRPCError(err) {
			// The transport failed: start again.
			cs.Close()
			<-ended
			return fmt.Errorf("listing tools: %w", err)
		} else if err != nil {
			s.m.opts.Logger.Warn("mcp: listing tools failed", "server", s.name, "error", err)
		}
	}
}

func isRPCError(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc)
}

func (s *server) toolCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

// backoff is the wait before the n-th retry: MinBackoff doubled n-1 times,
// at most MaxBackoff, less up to a fifth at random so that servers that
// failed together do not retry together.
func (s *server) backoff(n int) time.Duration {
	o := s.m.opts
	d := o.MinBackoff
	for i := 1; i < n && d < o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, o.MaxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// withStderr adds the last lines a stdio server wrote to err.
func (s *server) withStderr(err error) error {
	if t := s.stderr.String(); t != "" {
		return fmt.Errorf("%w; its stderr ends with: %s", err, t)
	}
	return err
}

// connect starts the server and initializes a session, within
// ConnectTimeout.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, error) {
	o := s.m.opts
	client := mcp.NewClient(&mcp.Implementation{Name: "weft", Version: clientVersion()}, &mcp.ClientOptions{
		// weft has no roots to offer; a server such as the filesystem
		// server then keeps the directories of its command line.
		Capabilities:       &mcp.ClientCapabilities{},
		ElicitationHandler: o.ElicitationHandler,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.signal()
		},
		ProgressNotificationHandler: s.onProgress,
	})
	var t mcp.Transport
	switch s.cfg.Type {
	case Stdio:
		s.stderr.Reset()
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = stdioEnv(s.cfg.Env)
		cmd.Dir = s.cfg.Cwd
		cmd.Stderr = s.stderr
		// A server's children that keep its stderr open must not hold up
		// its shutdown.
		cmd.WaitDelay = 2 * time.Second
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	case HTTP:
		st := &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{Transport: headerTransport{s.cfg.Headers}}}
		if o.OAuthHandler != nil {
			st.OAuthHandler = o.OAuthHandler(s.name)
		}
		t = st
	}
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	var copts *mcp.ClientSessionOptions
	if o.ProtocolVersion != "" {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion}
	}
	cs, err := client.Connect(cctx, t, copts)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("connecting: no answer within %v: %w", o.ConnectTimeout, err)
		}
		return nil, fmt.Errorf("connecting: %w", err)
	}
	return cs, nil
}

// headerTransport adds configured headers to every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// stdioEnv is the environment of a stdio server: StdioEnv's variables of
// weft's, then env.
func stdioEnv(env map[string]string) []string {
	var out []string
	for _, k := range StdioEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, over := env[k]; !over {
				out = append(out, k+"="+v)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// list lists the server's tools and applies what changed to the registry.
func (s *server) list(ctx context.Context, cs *mcp.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, s.m.opts.ConnectTimeout)
	defer cancel()
	var listed []*mcp.Tool
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			return fmt.Errorf("listing tools: %w", err)
		}
		listed = append(listed, t)
	}
	log := s.m.opts.Logger.With("server", s.name)
	next := map[string]*entry{}
	var order []string
	var c tool.Change
	for _, t := range listed {
		if t.Name == "" {
			log.Warn("mcp: skipping a tool without a name")
			continue
		}
		exposed := ToolName(s.name, t.Name)
		if prev, dup := next[exposed]; dup {
			log.Error("mcp: two tools of the server get the same name; keeping the first", "name", exposed, "tool", t.Name, "kept", prev.original)
			continue
		}
		sig, _ := json.Marshal(t)
		old := s.tools[exposed]
		if old != nil && old.sig == string(sig) {
			next[exposed] = old
			order = append(order, exposed)
			continue
		}
		wt, err := s.build(exposed, t)
		if err != nil {
			log.Error("mcp: skipping a tool weft cannot use", "tool", t.Name, "error", err)
			continue
		}
		if old == nil {
			if _, taken := s.m.reg.Get(exposed); taken {
				log.Error("mcp: a tool of that name is registered already; skipping", "name", exposed)
				continue
			}
			c.Added = append(c.Added, wt)
		} else {
			c.Updated = append(c.Updated, wt)
		}
		next[exposed] = &entry{original: t.Name, info: t, tool: wt, sig: string(sig)}
		order = append(order, exposed)
	}
	for k := range s.tools {
		if _, ok := next[k]; !ok {
			c.Removed = append(c.Removed, k)
		}
	}
	slices.Sort(c.Removed)
	// Calls see the new listing before the registry does, so that a tool
	// gone from the registry answers CodeRemoved, never the server's
	// error for a tool it no longer has.
	s.mu.Lock()
	prevTools, prevOrder := s.tools, s.order
	s.tools, s.order = next, order
	s.mu.Unlock()
	if _, err := s.m.apply(c); err != nil {
		// The registry is unchanged: keep the old view, and try again at
		// the next listing.
		s.mu.Lock()
		s.tools, s.order = prevTools, prevOrder
		s.mu.Unlock()
		return nil
	}
	if !c.Empty() {
		log.Info("mcp: tools changed", "added", len(c.Added), "updated", len(c.Updated), "removed", len(c.Removed))
	}
	return nil
}

// build makes the weft tool for a listed tool.
func (s *server) build(exposed string, t *mcp.Tool) (*tool.Tool, error) {
	schema, err := inputSchema(t)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var opts tool.Options
	if s.cfg.Timeout > 0 {
		opts.Timeout = s.cfg.Timeout
	}
	m, server, name := s.m, s.name, t.Name
	wt := tool.NewRaw(exposed, description(t), schema, func(ctx context.Context, args json.RawMessage) (any, error) {
		return m.call(ctx, server, exposed, name, args)
	}, opts)
	return wt, wt.Err()
}

// call calls the tool name (registered as exposed) with args.
func (s *server) call(ctx context.Context, exposed, name string, args json.RawMessage) (any, error) {
	s.mu.Lock()
	cs, state, lastErr := s.session, s.state, s.err
	e := s.tools[exposed]
	timeout := s.cfg.Timeout
	s.mu.Unlock()
	meta := map[string]any{MetaServer: s.name, MetaTool: name}
	if cs == nil {
		msg := fmt.Sprintf("MCP server %s is unavailable (%s", s.name, state)
		if lastErr != nil {
			msg += ": " + lastErr.Error()
		}
		msg += "); it is being reconnected: try again later, or use another tool"
		if state == StateDisabled {
			msg = fmt.Sprintf("MCP server %s is disabled in the configuration; use another tool", s.name)
		}
		return nil, &tool.Error{Code: CodeUnavailable, Message: msg, Meta: meta}
	}
	if e == nil || e.original != name {
		return nil, &tool.Error{Code: CodeRemoved, Message: fmt.Sprintf("MCP server %s no longer offers tool %s; use another tool", s.name, name), Meta: meta}
	}
	if timeout <= 0 {
		timeout = s.m.opts.CallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if tool.ReportsProgress(ctx) {
		// The run streams tool events: the server's progress
		// notifications for this call become the call's progress.
		token := ids.Random()
		params.SetProgressToken(token)
		s.progress.Store(token, ctx)
		defer s.progress.Delete(token)
	}
	res, err := cs.CallTool(cctx, params)
	if err != nil {
		var rpc *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case cctx.Err() != nil:
			return nil, &tool.Error{Code: tool.CodeTimeout, Message: fmt.Sprintf("MCP server %s did not answer tool %s within %v", s.name, name, timeout), Meta: meta, Err: context.DeadlineExceeded}
		case errors.As(err, &rpc):
			// The server may have dropped the tool without saying so: the
			// next listing tells.
			s.signal()
			meta[MetaRPCCode] = rpc.Code
			return nil, &tool.Error{Code: CodeProtocol, Message: fmt.Sprintf("MCP server %s refused the call of %s: %s", s.name, name, rpc.Message), Meta: meta, Err: err}
		default:
			// The connection failed: the server's goroutine checks it.
			s.signal()
			return nil, &tool.Error{Code: CodeUnavailable, Message: fmt.Sprintf("MCP server %s is unavailable (%v); it is being reconnected: try again later, or use another tool", s.name, err), Meta: meta, Err: err}
		}
	}
	data, meta, err := result(s.name, name, res)
	if err != nil {
		return nil, err
	}
	for k, v := range meta {
		tool.SetMeta(ctx, k, v)
	}
	return data, nil
}

// onProgress passes a progress notification on to the call it is about,
// as tool.Progress {"progress", "total"?, "message"?}: MCP's own fields.
// A notification for a call that already ended, or that never asked for
// progress, is dropped.
func (s *server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	c, ok := s.progress.Load(token)
	if !ok {
		return
	}
	p := map[string]any{"progress": req.Params.Progress}
	if req.Params.Total != 0 {
		p["total"] = req.Params.Total
	}
	if req.Params.Message != "" {
		p["message"] = req.Params.Message
	}
	tool.Progress(c.(context.Context), p)
}

// normalized returns sc with its Type told by its fields, checked.
func (sc ServerConfig) normalized(name string) (ServerConfig, error) {
	if sc.Type == "" {
		sc.Type = Stdio
		if sc.URL != "" {
			sc.Type = HTTP
		}
	}
	return sc, sc.check("mcpServers." + name)
}

func mustNormalize(name string, sc ServerConfig) ServerConfig {
	n, _ := sc.normalized(name)
	return n
}

// tail keeps the last bytes written to it, and copies them on.
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	also  io.Writer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.also != nil {
		t.also.Write(p)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

// String returns the last few lines, on one line.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := slices.DeleteFunc(splitLines(string(t.buf)), func(s string) bool { return s == "" })
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += " | "
		}
		out += l
	}
	return out
}

func (t *tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.buf[:0]
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, trimCR(s[:i]))
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

func trimCR(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\r' {
		return s[:n-1]
	}
	return s
}
