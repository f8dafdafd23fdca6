package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/mcp"
)

// ErrToolFailed: weft mcp call ran the tool and it answered with a failure
// (isError, a timeout, arguments it refused).
var ErrToolFailed = errors.New("the tool failed")

// mcpConfigHelp describes --mcp-config for the commands that take it.
const mcpConfigHelp = "an MCP configuration file (JSON or YAML, Claude Desktop's mcpServers shape): its servers' tools, named SERVER__TOOL"

func addMCPFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "mcp-config", "", mcpConfigHelp)
}

// mcpLogger tells MCP warnings and errors (a server that died, a broken
// configuration file) on w, one line each.
func mcpLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// startMCP connects to the servers of the configuration file at path,
// their tools going into reg; with watch, the file is followed while the
// command runs. It tells each server's state on info.
func startMCP(ctx context.Context, path string, reg *tool.Registry, info io.Writer, watch bool) (*mcp.Manager, error) {
	opts := mcp.Options{Registry: reg, Logger: mcpLogger(info)}
	var m *mcp.Manager
	var err error
	if watch {
		m, err = mcp.Watch(ctx, path, opts)
	} else {
		var cfg *mcp.Config
		if cfg, err = mcp.Load(path); err == nil {
			m, err = mcp.Start(ctx, cfg, opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	for _, s := range m.Servers() {
		switch s.State {
		case mcp.StateConnected:
			fmt.Fprintf(info, "· MCP server %s: %d tools\n", s.Name, len(s.Tools))
		case mcp.StateDisabled:
			fmt.Fprintf(info, "· MCP server %s: disabled\n", s.Name)
		default:
			fmt.Fprintf(info, "· MCP server %s: %s: %v (retrying in the background)\n", s.Name, s.State, s.Err)
		}
	}
	return m, nil
}

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List and call the tools of MCP servers",
		Long: "List and call the tools of the MCP servers of a configuration file, as agents get them\n" +
			"with weft run --mcp-config. The file is JSON or YAML in the shape of Claude Desktop's:\n\n" +
			"  {\"mcpServers\": {\n" +
			"    \"fs\":    {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/data\"]},\n" +
			"    \"notes\": {\"url\": \"https://notes.example.com/mcp\", \"headers\": {\"Authorization\": \"Bearer ${NOTES_TOKEN}\"}}\n" +
			"  }}\n\n" +
			"Each tool is named SERVER__TOOL. See docs/tools.md.",
	}
	cmd.AddCommand(newMCPToolsCmd(), newMCPCallCmd())
	return cmd
}

// toolJSON is a tool in weft mcp tools --json.
type toolJSON struct {
	Name         string          `json:"name"`
	ServerTool   string          `json:"server_tool"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// serverJSON is a server in weft mcp tools --json.
type serverJSON struct {
	Server    string     `json:"server"`
	Transport string     `json:"transport"`
	State     string     `json:"state"`
	Error     string     `json:"error,omitempty"`
	Tools     []toolJSON `json:"tools"`
}

func newMCPToolsCmd() *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "tools --mcp-config FILE [--json]",
		Short:   "List each server's tools with their input schemas",
		Long:    "Connect to each server of the configuration, list its tools with the names agents see,\nthe server's own names, descriptions and JSON Schemas, and exit. A server that cannot be\nreached is listed with the reason, and the exit status is then 1.",
		Example: "  weft mcp tools --mcp-config mcp.json\n  weft mcp tools --mcp-config mcp.yaml --json | jq '.[].tools[].name'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("weft mcp tools needs --mcp-config FILE")
			}
			m, err := startMCP(cmd.Context(), path, nil, io.Discard, false)
			if err != nil {
				return err
			}
			defer m.Close()
			servers := m.Servers()
			out := cmd.OutOrStdout()
			if asJSON {
				list := make([]serverJSON, 0, len(servers))
				for _, s := range servers {
					sj := serverJSON{Server: s.Name, Transport: s.Transport, State: string(s.State), Tools: []toolJSON{}}
					if s.Err != nil {
						sj.Error = s.Err.Error()
					}
					for _, t := range s.Tools {
						sj.Tools = append(sj.Tools, toolJSON{t.Name, t.ServerTool, t.Description, t.InputSchema, t.OutputSchema})
					}
					list = append(list, sj)
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				if err := enc.Encode(list); err != nil {
					return err
				}
			} else {
				for i, s := range servers {
					if i > 0 {
						fmt.Fprintln(out)
					}
					printServer(out, s)
				}
			}
			var down []string
			for _, s := range servers {
				if s.State != mcp.StateConnected && s.State != mcp.StateDisabled {
					down = append(down, fmt.Sprintf("%s (%v)", s.Name, s.Err))
				}
			}
			if len(down) > 0 {
				return fmt.Errorf("%d of %d MCP servers unavailable: %s", len(down), len(servers), strings.Join(down, "; "))
			}
			return nil
		},
	}
	addMCPFlag(cmd, &path)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the servers and tools as JSON")
	return cmd
}

// printServer shows a server and its tools for a person.
func printServer(w io.Writer, s mcp.ServerStatus) {
	head := fmt.Sprintf("%s (%s, %s", s.Name, s.Transport, s.State)
	if s.Server != nil {
		head += ", " + strings.TrimSpace(s.Server.Name+" "+s.Server.Version)
	}
	head += ")"
	if s.State != mcp.StateConnected {
		if s.Err != nil {
			head += ": " + s.Err.Error()
		}
		fmt.Fprintln(w, head)
		return
	}
	fmt.Fprintf(w, "%s: %d tools\n", head, len(s.Tools))
	for _, t := range s.Tools {
		fmt.Fprintf(w, "  %s", t.Name)
		if t.ServerTool != strings.TrimPrefix(t.Name, s.Name+"__") {
			fmt.Fprintf(w, " (%s)", t.ServerTool)
		}
		fmt.Fprintln(w)
		if t.Description != "" {
			for _, line := range strings.Split(strings.TrimSpace(t.Description), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		fmt.Fprintf(w, "    input: %s\n", t.InputSchema)
		if len(t.OutputSchema) > 0 {
			fmt.Fprintf(w, "    output: %s\n", t.OutputSchema)
		}
	}
}

func newMCPCallCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "call --mcp-config FILE SERVER TOOL [JSON|-]",
		Short: "Call one tool and print its result",
		Long: "Call the tool TOOL (the server's name for it) of the server SERVER with the JSON object of\n" +
			"arguments (default {}; - reads it from standard input), as an agent's tool call, and print the\n" +
			"result envelope as JSON: {success, data, error_code, error, meta}. Only SERVER is started.\n\n" +
			"Exit status: 0 when the tool succeeded; 5 when it answered with a failure (isError, a\n" +
			"timeout, arguments that do not match its schema), the cause on standard error; 1 when it\n" +
			"could not be called (unknown server or tool, a server that cannot be reached).",
		Example: "  weft mcp call --mcp-config mcp.json fs read_text_file '{\"path\": \"/data/notes.md\"}'\n" +
			"  echo '{\"message\": \"hi\"}' | weft mcp call --mcp-config mcp.json everything echo -",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return errors.New("weft mcp call needs --mcp-config FILE")
			}
			server, name := args[0], args[1]
			raw := "{}"
			if len(args) == 3 {
				raw = args[2]
			}
			if raw == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("reading the arguments from standard input: %w", err)
				}
				raw = string(b)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
				return fmt.Errorf("the arguments %q are not a JSON object: want {\"name\": value, ...}", clip(raw, 80))
			}
			cfg, err := mcp.Load(path)
			if err != nil {
				return fmt.Errorf("--mcp-config: %w", err)
			}
			sc, ok := cfg.Servers[server]
			if !ok {
				return fmt.Errorf("no MCP server %q in %s; its servers: %s", server, path, strings.Join(slices.Sorted(maps.Keys(cfg.Servers)), ", "))
			}
			ctx := cmd.Context()
			m, err := mcp.Start(ctx, &mcp.Config{Servers: map[string]mcp.ServerConfig{server: sc}}, mcp.Options{Logger: mcpLogger(io.Discard)})
			if err != nil {
				return err
			}
			defer m.Close()
			st := m.Servers()[0]
			if st.State != mcp.StateConnected {
				return fmt.Errorf("MCP server %s: %s: %v", server, st.State, st.Err)
			}
			t, ok := m.Tool(server, name)
			if !ok {
				var names []string
				for _, ti := range st.Tools {
					names = append(names, ti.ServerTool)
				}
				return fmt.Errorf("MCP server %s has no tool %q; its tools: %s", server, name, strings.Join(names, ", "))
			}
			r, _ := t.Run(ctx, json.RawMessage(raw), 0)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("encoding the result: %w", err)
			}
			if _, err := cmd.OutOrStdout().Write(buf.Bytes()); err != nil {
				return err
			}
			if !r.Success {
				return fmt.Errorf("%w: %s %s: error %s: %s", ErrToolFailed, server, name, r.ErrorCode, r.Error)
			}
			return nil
		},
	}
	addMCPFlag(cmd, &path)
	return cmd
}
