package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrInvalidConfig: a configuration cannot be used; the error names the
// key and what was expected.
var ErrInvalidConfig = errors.New("mcp: invalid configuration")

// Transports a server is reached by.
const (
	// Stdio runs the server as a child process and speaks to it over its
	// standard input and output.
	Stdio = "stdio"
	// HTTP speaks to a running server over streamable HTTP.
	HTTP = "http"
)

// MaxServerName is the longest server name: it prefixes the names of the
// server's tools, which must stay within 64 characters.
const MaxServerName = 32

// Config is the servers weft connects to: the "mcpServers" map of the
// configuration files of Claude Desktop, Cursor and Claude Code, as JSON
// or YAML.
//
//	{"mcpServers": {
//	  "fs":    {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"]},
//	  "notes": {"url": "https://notes.example.com/mcp", "headers": {"Authorization": "Bearer ${NOTES_TOKEN}"}}
//	}}
type Config struct {
	// Servers are the servers by name.
	Servers map[string]ServerConfig
}

// ServerConfig is one server: a command to run (stdio) or a URL
// (streamable HTTP).
type ServerConfig struct {
	// Type is Stdio or HTTP; a file may leave it out, and it is then told
	// by Command or URL.
	Type string
	// Command and Args start a stdio server.
	Command string
	Args    []string
	// Env adds variables to the few of weft's environment a stdio server
	// gets (see StdioEnv).
	Env map[string]string
	// Cwd is the stdio server's working directory ("": weft's).
	Cwd string
	// URL is a streamable HTTP server's endpoint.
	URL string
	// Headers are sent with every HTTP request (an Authorization token).
	Headers map[string]string
	// Timeout bounds each call of the server's tools, and then takes
	// precedence over the agent's tool timeout; zero uses
	// Options.CallTimeout as a bound that the agent's own may shorten.
	Timeout time.Duration
	// Disabled servers are not connected.
	Disabled bool
}

// StdioEnv names the variables of weft's environment that a stdio server
// gets, besides its Env: as in Claude Desktop and the MCP TypeScript SDK,
// a server does not see weft's other variables (API keys). Env values can
// pass any of them on: "${GITHUB_TOKEN}".
var StdioEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// serverKeys are the keys a server entry may have.
var serverKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "timeout", "disabled"}

// Load reads a configuration file: YAML when its name ends in .yaml or
// .yml, JSON otherwise.
func Load(path string) (*Config, error) {
	cfg, _, err := load(path)
	return cfg, err
}

// load is Load that also returns the bytes it parsed.
func load(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg, err := Parse(data, formatOf(path))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, data, nil
}

// formatOf is the format of the file at path: "yaml" for .yaml and .yml,
// "json" otherwise.
func formatOf(path string) string {
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		return "yaml"
	}
	return "json"
}

// Parse reads a configuration in format "json" or "yaml". Unknown keys and
// values of the wrong kind are errors (wrapping ErrInvalidConfig) that name
// the key. In command, args, cwd, url and the values of env and headers,
// ${VAR} is replaced by the environment variable VAR, and ${VAR:-default}
// by its value or default when it is unset or empty (as Claude Code does);
// an unset variable without a default is an error.
func Parse(data []byte, format string) (*Config, error) {
	var doc any
	switch format {
	case "json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("%w: not JSON: %w", ErrInvalidConfig, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%w: not JSON: more than one value", ErrInvalidConfig)
		}
	case "yaml":
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%w: not YAML: %w", ErrInvalidConfig, err)
		}
	default:
		return nil, fmt.Errorf("%w: format %q; want json or yaml", ErrInvalidConfig, format)
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the configuration is %s; want an object with the key mcpServers", ErrInvalidConfig, kind(doc))
	}
	for k := range top {
		if k != "mcpServers" {
			return nil, fmt.Errorf("%w: unknown key %q; the configuration has one key, mcpServers", ErrInvalidConfig, k)
		}
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, fmt.Errorf("%w: no mcpServers key; want {\"mcpServers\": {\"NAME\": {\"command\": ...} or {\"url\": ...}}}", ErrInvalidConfig)
	}
	cfg := &Config{Servers: map[string]ServerConfig{}}
	if raw == nil {
		return cfg, nil
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: mcpServers is %s; want an object of servers by name", ErrInvalidConfig, kind(raw))
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := checkServerName(name); err != nil {
			return nil, err
		}
		sc, err := parseServer("mcpServers."+name, servers[name])
		if err != nil {
			return nil, err
		}
		cfg.Servers[name] = sc
	}
	return cfg, nil
}

// checkServerName accepts names that keep "SERVER__TOOL" unambiguous: the
// first "__" of a tool's name ends its server's name.
func checkServerName(name string) error {
	ok := name != "" && len(name) <= MaxServerName && !strings.Contains(name, "__") && !strings.HasSuffix(name, "_") && name[0] != '_' && name[0] != '-'
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%w: mcpServers: server name %q: want 1 to %d letters, digits, '-' or '_', starting with a letter or digit, without \"__\" or a final '_' (it prefixes its tools' names: NAME__TOOL)", ErrInvalidConfig, name, MaxServerName)
	}
	return nil
}

func parseServer(at string, v any) (ServerConfig, error) {
	var sc ServerConfig
	m, ok := v.(map[string]any)
	if !ok {
		return sc, fmt.Errorf("%w: %s is %s; want an object with command (stdio) or url (HTTP)", ErrInvalidConfig, at, kind(v))
	}
	for k := range m {
		if !slices.Contains(serverKeys, k) {
			return sc, fmt.Errorf("%w: %s: unknown key %q; known keys: %s", ErrInvalidConfig, at, k, strings.Join(serverKeys, ", "))
		}
	}
	var err error
	str := func(key string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = stringAt(at+"."+key, m[key], true)
		return s
	}
	sc.Type = str("type")
	sc.Command = str("command")
	sc.Cwd = str("cwd")
	sc.URL = str("url")
	if err != nil {
		return sc, err
	}
	if sc.Args, err = stringList(at+".args", m["args"]); err != nil {
		return sc, err
	}
	if sc.Env, err = stringMap(at+".env", m["env"]); err != nil {
		return sc, err
	}
	if sc.Headers, err = stringMap(at+".headers", m["headers"]); err != nil {
		return sc, err
	}
	if sc.Timeout, err = duration(at+".timeout", m["timeout"]); err != nil {
		return sc, err
	}
	if d, ok := m["disabled"]; ok {
		b, isBool := d.(bool)
		if !isBool {
			return sc, fmt.Errorf("%w: %s.disabled is %s; want true or false", ErrInvalidConfig, at, kind(d))
		}
		sc.Disabled = b
	}
	if sc.Command != "" && sc.URL != "" {
		return sc, fmt.Errorf("%w: %s has both command (a stdio server) and url (an HTTP server); keep one", ErrInvalidConfig, at)
	}
	switch sc.Type {
	case "":
		if sc.URL != "" {
			sc.Type = HTTP
		} else {
			sc.Type = Stdio
		}
	case Stdio:
	case HTTP, "streamable-http", "streamableHttp", "streamable_http":
		sc.Type = HTTP
	case "sse":
		return sc, fmt.Errorf("%w: %s.type: the HTTP+SSE transport (deprecated in MCP 2025-03-26) is not supported; use the server's streamable HTTP endpoint with type http", ErrInvalidConfig, at)
	default:
		return sc, fmt.Errorf("%w: %s.type %q; want stdio or http (streamable HTTP)", ErrInvalidConfig, at, sc.Type)
	}
	return sc, sc.check(at)
}

// check reports what does not fit the server's transport.
func (sc ServerConfig) check(at string) error {
	switch sc.Type {
	case Stdio:
		if sc.Command == "" {
			return fmt.Errorf("%w: %s: no command; a server has a command to run (stdio) or a url (HTTP)", ErrInvalidConfig, at)
		}
		if sc.URL != "" || sc.Headers != nil {
			return fmt.Errorf("%w: %s: url and headers are for HTTP servers, and this one has a command (stdio)", ErrInvalidConfig, at)
		}
	case HTTP:
		if sc.URL == "" {
			return fmt.Errorf("%w: %s: no url; an HTTP server needs one", ErrInvalidConfig, at)
		}
		if sc.Command != "" || sc.Args != nil || sc.Env != nil || sc.Cwd != "" {
			return fmt.Errorf("%w: %s: command, args, env and cwd are for stdio servers, and this one has a url (HTTP)", ErrInvalidConfig, at)
		}
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: %s.url %q: want an http:// or https:// URL", ErrInvalidConfig, at, sc.URL)
		}
	default:
		return fmt.Errorf("%w: %s: type %q; want %s or %s", ErrInvalidConfig, at, sc.Type, Stdio, HTTP)
	}
	if sc.Timeout < 0 {
		return fmt.Errorf("%w: %s.timeout %v is negative", ErrInvalidConfig, at, sc.Timeout)
	}
	return nil
}

func stringAt(at string, v any, expandVars bool) (string, error) {
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s is %s; want a string (quote it)", ErrInvalidConfig, at, kind(v))
	}
	if !expandVars {
		return s, nil
	}
	return expand(at, s)
}

func stringList(at string, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %s; want a list of strings", ErrInvalidConfig, at, kind(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, err := stringAt(fmt.Sprintf("%s[%d]", at, i), e, true)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func stringMap(at string, v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %s; want an object of strings", ErrInvalidConfig, at, kind(v))
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s, err := stringAt(at+"."+k, m[k], true)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// duration reads a timeout: a number of seconds (Cline's "timeout": 60) or
// a Go duration ("90s", "2m").
func duration(at string, v any) (time.Duration, error) {
	var secs float64
	switch x := v.(type) {
	case nil:
		return 0, nil
	case string:
		d, err := time.ParseDuration(x)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%w: %s %q; want a positive duration such as \"30s\", or a number of seconds", ErrInvalidConfig, at, x)
		}
		return d, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, fmt.Errorf("%w: %s %s: %w", ErrInvalidConfig, at, x, err)
		}
		secs = f
	case int:
		secs = float64(x)
	case float64:
		secs = x
	default:
		return 0, fmt.Errorf("%w: %s is %s; want a number of seconds or a duration such as \"30s\"", ErrInvalidConfig, at, kind(v))
	}
	if !(secs > 0) || secs > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("%w: %s %v; want a positive number of seconds", ErrInvalidConfig, at, secs)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// expand replaces ${VAR} and ${VAR:-default} in s.
func expand(at, s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("%w: %s: %q has \"${\" without a closing \"}\"", ErrInvalidConfig, at, s)
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("%w: %s: ${%s} is not a variable reference; want ${NAME} or ${NAME:-default}", ErrInvalidConfig, at, ref)
		}
		val, set := os.LookupEnv(name)
		switch {
		case hasDef && val == "":
			val = def
		case !set:
			return "", fmt.Errorf("%w: %s: environment variable %s is not set (write ${%s:-default} for a default)", ErrInvalidConfig, at, name, name)
		}
		b.WriteString(val)
		s = s[i+j+1:]
	}
}

func validVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// kind names the JSON kind of a decoded value, for errors.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case json.Number, int, int64, uint64, float64:
		return fmt.Sprintf("the number %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
