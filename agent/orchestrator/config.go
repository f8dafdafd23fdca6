package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/internal/yamlstrict"
)

// ErrInvalidConfig is matched by every error about a configuration: an
// unknown key, a value of the wrong type or out of range, a tool that no
// executor has. The error names the key.
var ErrInvalidConfig = errors.New("orchestrator: invalid configuration")

// Config is what document 003 keeps in YAML: the approval switches, the
// model of each layer, the tools' executors and estimates, the prompts.
// DefaultConfig gives the defaults; LoadConfig reads a file over them.
type Config struct {
	// Name names the agent (its graph's name).
	Name string `yaml:"name"`
	// Approvals switch the approval points on and off.
	Approvals Approvals `yaml:"approvals"`
	// Models names the model of each layer, for a caller that opens
	// models by name (the weft command): "openai:gpt-4o-mini". Empty
	// names use Default; an empty Default uses the caller's model.
	Models ModelNames `yaml:"models"`
	// Intents is the intent hierarchy the cognitive layer classifies
	// into: domain → its categories (document 003's table by default).
	Intents map[string][]string `yaml:"intents"`
	// Tools configures tools by name: which executor runs it and what a
	// call is expected to take and cost. A tool missing here keeps the
	// executor it was given and the default estimate.
	Tools map[string]ToolConfig `yaml:"tools"`
	// Planning bounds plans.
	Planning PlanningConfig `yaml:"planning"`
	// Execution tunes the execution layer.
	Execution ExecutionConfig `yaml:"execution"`
	// Response tunes the response layer.
	Response ResponseConfig `yaml:"response"`
	// Memory holds the thresholds of the memory hooks (document 001).
	Memory MemoryConfig `yaml:"memory"`
	// Context is how much conversation the prompts see.
	Context ContextConfig `yaml:"context"`
	// Results is where results and reports are saved.
	Results ResultsConfig `yaml:"results"`
	// Prompts are the system prompts of the layers and the fixed texts
	// of the answers the model does not write.
	Prompts Prompts `yaml:"prompts"`
}

// Approvals are document 001's approval switches: one global switch and
// one per approval point. A point asks a person only when both its
// switch and the global one are on; otherwise it decides by itself
// (clarification: proceed; plan and step: accept; error: the todo stays
// failed and its dependents are skipped; pause: never pauses).
type Approvals struct {
	// Enabled is the global switch (ENABLE_HITL); default on.
	Enabled bool `yaml:"enabled"`
	// Clarification asks the user's intent when the request is
	// ambiguous; default on.
	Clarification bool `yaml:"clarification"`
	// Plan asks to accept, edit or reject the plan; default on.
	Plan bool `yaml:"plan"`
	// Step asks to accept, edit or skip each todo before it runs;
	// default off (document 001's light mode).
	Step bool `yaml:"step"`
	// Error asks to retry, skip or abort when a todo fails; default on.
	Error bool `yaml:"error"`
	// Pause stops before every wave of todos to verify, modify or delete
	// the coming work; default off. A Pauser requests single pauses.
	Pause bool `yaml:"pause"`
}

// ModelNames names a model per layer.
type ModelNames struct {
	Default   string `yaml:"default"`
	Cognitive string `yaml:"cognitive"`
	Planning  string `yaml:"planning"`
	Execution string `yaml:"execution"`
	Response  string `yaml:"response"`
}

// ToolConfig configures one tool.
type ToolConfig struct {
	// Executor moves the tool to another executor.
	Executor string `yaml:"executor"`
	// Seconds and Cost are what one call is expected to take and cost,
	// for the plan's estimate (defaults: 1 second, 0).
	Seconds float64 `yaml:"seconds"`
	Cost    float64 `yaml:"cost"`
	// Disabled hides the tool from planning and execution.
	Disabled bool `yaml:"disabled"`
}

// PlanningConfig bounds plans.
type PlanningConfig struct {
	// MaxTodos caps a plan's todos (default 30).
	MaxTodos int `yaml:"max_todos"`
}

// The preparation modes of step preparation (document 001).
const (
	// PrepareLight ranks the retrieved tools only.
	PrepareLight = "light"
	// PrepareDetailed also asks the model for the tool's parameters and
	// computes the missing required fields and a readiness score.
	PrepareDetailed = "detailed"
	// PrepareAuto is detailed when step approvals are on, light
	// otherwise, as document 001 does.
	PrepareAuto = "auto"
)

// ExecutionConfig tunes the execution layer.
type ExecutionConfig struct {
	// Preparation is PrepareLight, PrepareDetailed or PrepareAuto
	// (default).
	Preparation string `yaml:"preparation"`
	// TopTools is how many tools step preparation retrieves (default 5).
	TopTools int `yaml:"top_tools"`
	// ReactFallback runs a ReAct sub-agent over the executor's tools
	// when the recommended tool fails (default on).
	ReactFallback bool `yaml:"react_fallback"`
	// ReactMaxSteps caps the sub-agent's model steps (default 4).
	ReactMaxSteps int `yaml:"react_max_steps"`
	// ToolTimeout bounds one tool call (default 30s).
	ToolTimeout time.Duration `yaml:"tool_timeout"`
	// TodoTimeout bounds one todo, fallback included (default 2m).
	TodoTimeout time.Duration `yaml:"todo_timeout"`
	// MaxParallel caps the todos that run at once; 0 runs every ready
	// todo at once.
	MaxParallel int `yaml:"max_parallel"`
	// ErrorPatterns are texts that mark a tool result as a failure even
	// when the tool reported success (document 001's
	// is_tool_call_successful), matched without regard to case.
	ErrorPatterns []string `yaml:"error_patterns"`
}

// ResponseConfig tunes the response layer.
type ResponseConfig struct {
	// NextActions asks the model for suggested next actions (default on).
	NextActions bool `yaml:"next_actions"`
	// Charts draws the charts results offer as SVG attachments (default
	// on).
	Charts bool `yaml:"charts"`
	// MaxResultChars caps each result's JSON in the answer's prompt
	// (default 4000).
	MaxResultChars int `yaml:"max_result_chars"`
}

// MemoryConfig holds document 001's memory thresholds.
type MemoryConfig struct {
	// ReuseCount and ReuseConfidence: a past clarification is applied
	// without asking when reused at least ReuseCount times (default 5)
	// with at least ReuseConfidence (default 0.9).
	ReuseCount      int     `yaml:"reuse_count"`
	ReuseConfidence float64 `yaml:"reuse_confidence"`
	// AcceptProbability: a step is approved without asking when memory
	// predicts acceptance with a higher probability (default 0.8).
	AcceptProbability float64 `yaml:"accept_probability"`
	// Timeout bounds each call to a memory hook (default 5s).
	Timeout time.Duration `yaml:"timeout"`
}

// ContextConfig is how much conversation the prompts see.
type ContextConfig struct {
	// Messages is how many of the latest messages (default 10).
	Messages int `yaml:"messages"`
}

// ResultsConfig is where results are saved.
type ResultsConfig struct {
	// Dir is the results directory: each task's step results (JSON and
	// Markdown), plan, charts and final report go in
	// DIR/THREAD/task-N. Empty saves nothing.
	Dir string `yaml:"dir"`
}

// Prompts are the layers' system prompts and fixed texts. Empty ones
// take the defaults.
type Prompts struct {
	Cognitive   string `yaml:"cognitive"`
	Planning    string `yaml:"planning"`
	Preparation string `yaml:"preparation"`
	Execution   string `yaml:"execution"`
	Response    string `yaml:"response"`
	Chat        string `yaml:"chat"`
	NextActions string `yaml:"next_actions"`
	// Rejected answers a rejected plan; %s is the reason (may be empty).
	Rejected string `yaml:"rejected"`
	// NothingDone answers a task none of whose todos succeeded.
	NothingDone string `yaml:"nothing_done"`
	// ClarificationAdded joins a clarification to the request; %s is
	// the answer.
	ClarificationAdded string `yaml:"clarification_added"`
	// DefaultQuestion is asked when the request is ambiguous and the
	// model gave no question.
	DefaultQuestion string `yaml:"default_question"`
}

// DefaultErrorPatterns are document 001's error patterns.
var DefaultErrorPatterns = []string{
	"input validation error",
	`"iserror": true`,
	"400 bad request",
	"500 internal server error",
	"tool execution failed",
}

// DefaultIntents is document 003's intent hierarchy.
func DefaultIntents() map[string][]string {
	return map[string][]string{
		"ANALYSIS":  {"sentiment", "keyword", "trend", "performance", "competitor"},
		"CONTENT":   {"report", "video", "ad"},
		"OPERATION": {"sales", "inventory", "dashboard"},
		"INQUIRY":   {"general"},
	}
}

// DefaultConfig returns the configuration every field of which has its
// default.
func DefaultConfig() Config {
	return Config{
		Name:      "orchestrator",
		Approvals: Approvals{Enabled: true, Clarification: true, Plan: true, Error: true},
		Intents:   DefaultIntents(),
		Planning:  PlanningConfig{MaxTodos: 30},
		Execution: ExecutionConfig{
			Preparation:   PrepareAuto,
			TopTools:      5,
			ReactFallback: true,
			ReactMaxSteps: 4,
			ToolTimeout:   30 * time.Second,
			TodoTimeout:   2 * time.Minute,
			ErrorPatterns: slices.Clone(DefaultErrorPatterns),
		},
		Response: ResponseConfig{NextActions: true, Charts: true, MaxResultChars: 4000},
		Memory:   MemoryConfig{ReuseCount: 5, ReuseConfidence: 0.9, AcceptProbability: 0.8, Timeout: 5 * time.Second},
		Context:  ContextConfig{Messages: 10},
		Prompts:  defaultPrompts(),
	}
}

// LoadConfig reads a YAML configuration file over DefaultConfig. Unknown
// keys, values of the wrong type and values out of range are errors that
// name the key (and match ErrInvalidConfig); all are reported at once.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("orchestrator: configuration: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig is LoadConfig for YAML already read.
func ParseConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	// Lists and maps given in the file replace the defaults whole.
	if err := yamlstrict.Decode(data, &c); err != nil {
		return Config{}, configError(err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// configError makes a decoding error match ErrInvalidConfig.
func configError(err error) error {
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}

// Validate checks the values' ranges; each problem names its key.
func (c *Config) Validate() error {
	var probs []string
	bad := func(key, format string, args ...any) {
		probs = append(probs, key+": "+fmt.Sprintf(format, args...))
	}
	switch c.Execution.Preparation {
	case PrepareLight, PrepareDetailed, PrepareAuto:
	default:
		bad("execution.preparation", "%q is not one of %s, %s, %s", c.Execution.Preparation, PrepareLight, PrepareDetailed, PrepareAuto)
	}
	if c.Execution.TopTools < 1 {
		bad("execution.top_tools", "%d: want at least 1", c.Execution.TopTools)
	}
	if c.Execution.ReactMaxSteps < 1 {
		bad("execution.react_max_steps", "%d: want at least 1", c.Execution.ReactMaxSteps)
	}
	if c.Execution.ToolTimeout <= 0 {
		bad("execution.tool_timeout", "%v: want a positive duration", c.Execution.ToolTimeout)
	}
	if c.Execution.TodoTimeout <= 0 {
		bad("execution.todo_timeout", "%v: want a positive duration", c.Execution.TodoTimeout)
	}
	if c.Execution.MaxParallel < 0 {
		bad("execution.max_parallel", "%d: want 0 (no cap) or more", c.Execution.MaxParallel)
	}
	for i, p := range c.Execution.ErrorPatterns {
		if strings.TrimSpace(p) == "" {
			bad(fmt.Sprintf("execution.error_patterns[%d]", i), "empty pattern")
		}
	}
	if c.Planning.MaxTodos < 1 {
		bad("planning.max_todos", "%d: want at least 1", c.Planning.MaxTodos)
	}
	if c.Response.MaxResultChars < 100 {
		bad("response.max_result_chars", "%d: want at least 100", c.Response.MaxResultChars)
	}
	if c.Memory.ReuseCount < 1 {
		bad("memory.reuse_count", "%d: want at least 1", c.Memory.ReuseCount)
	}
	if c.Memory.ReuseConfidence < 0 || c.Memory.ReuseConfidence > 1 {
		bad("memory.reuse_confidence", "%v: want a number from 0 to 1", c.Memory.ReuseConfidence)
	}
	if c.Memory.AcceptProbability < 0 || c.Memory.AcceptProbability > 1 {
		bad("memory.accept_probability", "%v: want a number from 0 to 1", c.Memory.AcceptProbability)
	}
	if c.Memory.Timeout <= 0 {
		bad("memory.timeout", "%v: want a positive duration", c.Memory.Timeout)
	}
	if c.Context.Messages < 1 {
		bad("context.messages", "%d: want at least 1", c.Context.Messages)
	}
	if len(c.Intents) == 0 {
		bad("intents", "empty: want at least one domain")
	}
	for _, d := range sortedKeys(c.Intents) {
		if strings.TrimSpace(d) == "" {
			bad("intents", "an empty domain name")
		}
		for i, cat := range c.Intents[d] {
			if strings.TrimSpace(cat) == "" {
				bad(fmt.Sprintf("intents.%s[%d]", d, i), "empty category")
			}
		}
	}
	for _, name := range sortedKeys(c.Tools) {
		t := c.Tools[name]
		if t.Seconds < 0 {
			bad("tools."+name+".seconds", "%v: want 0 or more", t.Seconds)
		}
		if t.Cost < 0 {
			bad("tools."+name+".cost", "%v: want 0 or more", t.Cost)
		}
	}
	if n, other := formatVerbs(c.Prompts.Rejected); c.Prompts.Rejected != "" && (n > 1 || other != "") {
		bad("prompts.rejected", "%swant at most one %%s (the reason), and %%%% for a percent sign", other)
	}
	if n, other := formatVerbs(c.Prompts.ClarificationAdded); c.Prompts.ClarificationAdded != "" && (n != 1 || other != "") {
		bad("prompts.clarification_added", "%swant exactly one %%s (the answer), and %%%% for a percent sign", other)
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(probs, "; "))
	}
	return nil
}

// formatVerbs counts the %s verbs of a fixed text that is a format string,
// and names the first other verb ("%d: "), if any: the text is printed
// with fmt, so any other verb would show as %!d(string=...).
func formatVerbs(text string) (s int, other string) {
	for i := 0; i < len(text); i++ {
		if text[i] != '%' {
			continue
		}
		if i+1 == len(text) {
			return s, "a lone %: "
		}
		i++
		switch text[i] {
		case '%':
		case 's':
			s++
		default:
			if other == "" {
				r, _ := utf8.DecodeRuneInString(text[i:])
				other = "%" + string(r) + ": "
			}
		}
	}
	return s, other
}

// askAt reports whether the approval point asks a person.
func (a Approvals) askAt(point bool) bool { return a.Enabled && point }

// detailed reports whether step preparation runs in detailed mode.
func (c *Config) detailed() bool {
	switch c.Execution.Preparation {
	case PrepareDetailed:
		return true
	case PrepareAuto:
		return c.Approvals.askAt(c.Approvals.Step)
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
