// Package mcp gives agents the tools of MCP (Model Context Protocol)
// servers, as ordinary weft tools in a tool.Registry, and keeps them
// current while the agents run (document 001's automatic tool detection).
// It is built on the official Go SDK, github.com/modelcontextprotocol/go-sdk.
//
// # Configuration
//
// Servers are configured as in Claude Desktop, Cursor and Claude Code: a
// JSON or YAML file with an "mcpServers" map of name to {command, args,
// env} for a server run as a child process (stdio), or {url, headers} for
// one reached over streamable HTTP. Load and Parse read it; unknown keys
// and wrong values are errors naming the key. See Config and ServerConfig.
//
// # Tools
//
// Each listed tool becomes a *tool.Tool named SERVER__TOOL (ToolName), so
// that tools of different servers never share a name, and every name fits
// the rule of OpenAI and Anthropic, ^[a-zA-Z0-9_-]{1,64}$. Its input
// schema is the server's, kept as it is (tool.NewRaw), and its description
// the server's. A call's answer fills weft's envelope (tool.Result):
// structured content is the data when the server sends some, otherwise the
// text of the content blocks (non-text blocks are placeholders for the
// model and kept whole in meta, MetaContent); isError is a failure with
// CodeToolError and the content's text; meta names the server and its tool
// (MetaServer, MetaTool).
//
// # Live detection
//
// A Manager (Start, or Watch for a configuration file) keeps one
// connection per server. It lists a server's tools again when the server
// sends notifications/tools/list_changed and every
// Options.RefreshInterval, and applies what changed to the registry as one
// tool.Change (added, updated, removed), which Options.OnChange receives
// too: that is how a tool-retrieval index follows the servers. Watch also
// polls the configuration file, starting, stopping and restarting servers
// as they are added, removed or changed in it.
//
// A server that dies or cannot be started is retried with backoff
// (Options.MinBackoff to MaxBackoff); its tools stay registered meanwhile
// and answer at once with CodeUnavailable, naming the server and why.
// Every call is bounded by the server's timeout (or Options.CallTimeout,
// 30 s), and starting a server by Options.ConnectTimeout.
//
// An agent turn that should see one set of tools from start to end runs
// under registry.Pin(ctx) (see tool.Registry).
package mcp

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"runtime/debug"
	"time"
)

// clientVersion is weft's version, as the client tells servers.
func clientVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/weftlabs/weft" {
				return d.Version
			}
		}
		if v := info.Main.Version; info.Main.Path == "github.com/weftlabs/weft" && v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
}

// Watch loads the configuration file at path, starts its servers (as
// Start) and then checks the file every Options.WatchInterval: when its
// content changes, the servers are made those of the new configuration
// (Reload). A file that no longer reads or parses is logged, once per
// content, and the servers stay as they are. The first load must succeed.
func Watch(ctx context.Context, path string, opts Options) (*Manager, error) {
	// The content watched from is the content started with: read twice,
	// a change between the reads would be taken as seen and never applied.
	cfg, data, err := load(path)
	if err != nil {
		return nil, err
	}
	m, err := Start(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.watch = make(chan struct{})
	m.mu.Unlock()
	go m.watchFile(path, sha256.Sum256(data))
	return m, nil
}

// watchFile polls path until the manager closes. Reading the file and
// comparing its hash, rather than subscribing to file events, keeps to the
// standard library and sees every way a file is replaced (editors that
// write a new file and rename it, mounted volumes), at the cost of reading
// a small file every few seconds.
func (m *Manager) watchFile(path string, last [32]byte) {
	defer close(m.watch)
	t := time.NewTicker(m.opts.WatchInterval)
	defer t.Stop()
	// reported is the content whose problem was logged last, so that a
	// broken file is told once, not at every poll.
	var reported [32]byte
	for {
		select {
		case <-m.life.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if sum := sha256.Sum256([]byte(err.Error())); sum != reported {
				m.opts.Logger.Error("mcp: cannot read the configuration file; keeping the servers as they are", "path", path, "error", err)
				reported = sum
			}
			continue
		}
		sum := sha256.Sum256(data)
		if sum == last {
			continue
		}
		cfg, err := Parse(data, formatOf(path))
		if err != nil {
			if sum != reported {
				m.opts.Logger.Error("mcp: the configuration file is invalid; keeping the servers as they are", "path", path, "error", err)
				reported = sum
			}
			continue
		}
		last = sum
		m.opts.Logger.Info("mcp: configuration file changed", "path", path)
		if err := m.Reload(cfg); err != nil && !errors.Is(err, ErrClosed) {
			m.opts.Logger.Error("mcp: cannot apply the configuration", "path", path, "error", err)
		}
	}
}
