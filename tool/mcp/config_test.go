package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	t.Setenv("WEFT_TEST_TOKEN", "s3cret")
	t.Setenv("WEFT_TEST_EMPTY", "")
	json := `{
	  "mcpServers": {
	    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME_DIR:-/data}"], "env": {"TOKEN": "${WEFT_TEST_TOKEN}"}},
	    "notes": {"url": "https://notes.example.com/mcp", "headers": {"Authorization": "Bearer ${WEFT_TEST_TOKEN}"}, "timeout": 90},
	    "slow-one": {"type": "stdio", "command": "./server", "cwd": "/srv", "timeout": "2m", "disabled": true},
	    "typed": {"type": "streamable-http", "url": "http://127.0.0.1:3001/mcp", "headers": {"X-Empty": "${WEFT_TEST_EMPTY:-none}"}}
	  }
	}`
	yaml := `
mcpServers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", "${HOME_DIR:-/data}"]
    env:
      TOKEN: ${WEFT_TEST_TOKEN}
  notes:
    url: https://notes.example.com/mcp
    headers:
      Authorization: Bearer ${WEFT_TEST_TOKEN}
    timeout: 90
  slow-one:
    type: stdio
    command: ./server
    cwd: /srv
    timeout: 2m
    disabled: true
  typed:
    type: streamable-http
    url: http://127.0.0.1:3001/mcp
    headers: {X-Empty: "${WEFT_TEST_EMPTY:-none}"}
`
	want := &Config{Servers: map[string]ServerConfig{
		"fs":       {Type: Stdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/data"}, Env: map[string]string{"TOKEN": "s3cret"}},
		"notes":    {Type: HTTP, URL: "https://notes.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}, Timeout: 90 * time.Second},
		"slow-one": {Type: Stdio, Command: "./server", Cwd: "/srv", Timeout: 2 * time.Minute, Disabled: true},
		"typed":    {Type: HTTP, URL: "http://127.0.0.1:3001/mcp", Headers: map[string]string{"X-Empty": "none"}},
	}}
	for format, src := range map[string]string{"json": json, "yaml": yaml} {
		got, err := Parse([]byte(src), format)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", format, diff)
		}
	}

	// Load picks the format by the file's extension.
	dir := t.TempDir()
	for name, src := range map[string]string{"a.json": json, "b.yaml": yaml, "c.yml": yaml} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if got, err := Parse([]byte(`{"mcpServers": {}}`), "json"); err != nil || len(got.Servers) != 0 {
		t.Errorf("no servers: %v, %v", got, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	os.Unsetenv("WEFT_TEST_UNSET")
	for _, tc := range []struct {
		name, src string
		// mention must all appear in the error: the key and what is wanted.
		mention []string
	}{
		{"not json", `{"mcpServers": `, []string{"not JSON"}},
		{"a list", `[]`, []string{"a list", "mcpServers"}},
		{"no mcpServers", `{"servers": {}}`, []string{`unknown key "servers"`}},
		{"missing mcpServers", `{}`, []string{"no mcpServers key"}},
		{"servers not an object", `{"mcpServers": [1]}`, []string{"mcpServers is a list"}},
		{"unknown server key", `{"mcpServers": {"fs": {"comand": "npx"}}}`, []string{"mcpServers.fs", `unknown key "comand"`, "command"}},
		{"server not an object", `{"mcpServers": {"fs": "npx"}}`, []string{"mcpServers.fs", `the string "npx"`}},
		{"args not strings", `{"mcpServers": {"fs": {"command": "x", "args": ["-p", 3000]}}}`, []string{"mcpServers.fs.args[1]", "the number 3000", "want a string"}},
		{"args not a list", `{"mcpServers": {"fs": {"command": "x", "args": "-p"}}}`, []string{"mcpServers.fs.args", "want a list of strings"}},
		{"env not an object", `{"mcpServers": {"fs": {"command": "x", "env": ["A=1"]}}}`, []string{"mcpServers.fs.env", "want an object of strings"}},
		{"env value a number", `{"mcpServers": {"fs": {"command": "x", "env": {"PORT": 3000}}}}`, []string{"mcpServers.fs.env.PORT", "the number 3000"}},
		{"neither command nor url", `{"mcpServers": {"fs": {"args": ["a"]}}}`, []string{"mcpServers.fs", "no command"}},
		{"both command and url", `{"mcpServers": {"fs": {"command": "x", "url": "http://h/mcp"}}}`, []string{"mcpServers.fs", "both command", "keep one"}},
		{"stdio with headers", `{"mcpServers": {"fs": {"command": "x", "headers": {"A": "b"}}}}`, []string{"mcpServers.fs", "url and headers are for HTTP servers"}},
		{"http with args", `{"mcpServers": {"fs": {"url": "http://h/mcp", "args": ["a"]}}}`, []string{"mcpServers.fs", "for stdio servers"}},
		{"bad url", `{"mcpServers": {"web": {"url": "ftp://h/mcp"}}}`, []string{"mcpServers.web.url", "http://"}},
		{"sse", `{"mcpServers": {"web": {"type": "sse", "url": "http://h/sse"}}}`, []string{"mcpServers.web.type", "not supported"}},
		{"unknown type", `{"mcpServers": {"web": {"type": "ws", "url": "http://h/mcp"}}}`, []string{"mcpServers.web.type", `"ws"`, "stdio or http"}},
		{"type stdio with url", `{"mcpServers": {"web": {"type": "stdio", "url": "http://h/mcp"}}}`, []string{"mcpServers.web", "no command"}},
		{"bad timeout", `{"mcpServers": {"fs": {"command": "x", "timeout": "soon"}}}`, []string{"mcpServers.fs.timeout", "soon"}},
		{"negative timeout", `{"mcpServers": {"fs": {"command": "x", "timeout": -1}}}`, []string{"mcpServers.fs.timeout", "positive"}},
		{"disabled not a bool", `{"mcpServers": {"fs": {"command": "x", "disabled": "yes"}}}`, []string{"mcpServers.fs.disabled", "true or false"}},
		{"unset variable", `{"mcpServers": {"fs": {"command": "x", "env": {"T": "${WEFT_TEST_UNSET}"}}}}`, []string{"mcpServers.fs.env.T", "WEFT_TEST_UNSET is not set"}},
		{"unclosed reference", `{"mcpServers": {"fs": {"command": "${HOME"}}}`, []string{"mcpServers.fs.command", "without a closing"}},
		{"bad reference", `{"mcpServers": {"fs": {"command": "${1X}"}}}`, []string{"mcpServers.fs.command", "${1X}"}},
		{"server name with a space", `{"mcpServers": {"my server": {"command": "x"}}}`, []string{`"my server"`, "letters, digits"}},
		{"server name with __", `{"mcpServers": {"a__b": {"command": "x"}}}`, []string{`"a__b"`, `"__"`}},
		{"server name ending in _", `{"mcpServers": {"a_": {"command": "x"}}}`, []string{`"a_"`}},
		{"server name too long", `{"mcpServers": {"` + strings.Repeat("a", 33) + `": {"command": "x"}}}`, []string{"1 to 32"}},
	} {
		_, err := Parse([]byte(tc.src), "json")
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", tc.name, err)
			continue
		}
		for _, m := range tc.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, m)
			}
		}
	}
	// YAML reports the same errors, and its own syntax errors.
	if _, err := Parse([]byte("mcpServers:\n  fs:\n    comand: npx\n"), "yaml"); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `unknown key "comand"`) {
		t.Errorf("yaml unknown key: %v", err)
	}
	if _, err := Parse([]byte("mcpServers:\n  fs: {command: [\n"), "yaml"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("yaml syntax: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

var toolNameRule = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "fs__read_file"},
		{"everything", "get-sum", "everything__get-sum"},
		{"a", "b__c", "a__b__c"},
		{"notes", "notes.search", "notes__notes_search_" + hash8("notes.search")},
		{"notes", "notes_search", "notes__notes_search"},
		{"kr", "검색", "kr_____" + hash8("검색")},
		{"srv", long, "srv__" + long[:64-5-9] + "_" + hash8(long)},
	} {
		got := ToolName(tc.server, tc.tool)
		if got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if !toolNameRule.MatchString(got) {
			t.Errorf("ToolName(%q, %q) = %q breaks ^[a-zA-Z0-9_-]{1,64}$", tc.server, tc.tool, got)
		}
	}
	// The longest server name still leaves room, and long names that
	// share a beginning stay apart.
	server := strings.Repeat("s", MaxServerName)
	a, b := ToolName(server, long+"a"), ToolName(server, long+"b")
	if a == b || len(a) != 64 || !toolNameRule.MatchString(a) {
		t.Errorf("long names: %q and %q", a, b)
	}
}

func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// Parse never panics, and what it accepts is a configuration a manager can
// start from.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "${HOME:-/}"}}}}`,
		`{"mcpServers": {"web": {"url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}, "timeout": 1.5}}}`,
		"mcpServers:\n  a: {command: x, timeout: 2m, disabled: true}\n",
		`{"mcpServers": null}`,
		`{"mcpServers": {"a": {"type": "sse", "url": "http://h"}}}`,
	} {
		f.Add([]byte(s), s[0] == '{')
	}
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		format := "yaml"
		if isJSON {
			format = "json"
		}
		cfg, err := Parse(data, format)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		for name, sc := range cfg.Servers {
			if err := checkServerName(name); err != nil {
				t.Fatalf("accepted server name %q: %v", name, err)
			}
			if _, err := sc.normalized(name); err != nil {
				t.Fatalf("accepted server %q that does not check: %v", name, err)
			}
		}
	})
}
