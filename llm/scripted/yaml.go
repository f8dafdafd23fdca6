package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/weftlabs/weft/llm"
)

type yamlScript struct {
	Loop      bool           `yaml:"loop"`
	Responses []yamlResponse `yaml:"responses"`
}

type yamlResponse struct {
	ID        string         `yaml:"id"`
	Content   string         `yaml:"content"`
	ToolCalls []yamlToolCall `yaml:"tool_calls"`
	Error     string         `yaml:"error"`
}

type yamlToolCall struct {
	ID   string    `yaml:"id"`
	Name string    `yaml:"name"`
	Args yaml.Node `yaml:"args"`
}

// Load reads a script from a YAML file (see the package documentation).
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse reads a script from YAML: a list of responses, or a mapping with
// "responses" and "loop". Unknown keys are errors, so a misspelt
// "tool_calls" does not pass silently.
func Parse(data []byte) (*Model, error) {
	var probe yaml.Node
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	var s yamlScript
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var err error
	switch {
	case len(probe.Content) == 0:
		return nil, fmt.Errorf("scripted: the script is empty (want a list of responses)")
	case probe.Content[0].Kind == yaml.SequenceNode:
		err = dec.Decode(&s.Responses)
	case probe.Content[0].Kind == yaml.MappingNode:
		err = dec.Decode(&s)
	default:
		return nil, fmt.Errorf("scripted: the script must be a list of responses or a mapping with \"responses\"")
	}
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	if len(s.Responses) == 0 {
		return nil, fmt.Errorf("scripted: the script has no responses")
	}
	rs := make([]Response, len(s.Responses))
	for i, r := range s.Responses {
		if r.Error != "" {
			if r.Content != "" || len(r.ToolCalls) > 0 {
				return nil, fmt.Errorf("scripted: response %d has an error and a reply; give one or the other", i+1)
			}
			rs[i] = Response{Err: fmt.Errorf("%w: %s", ErrScripted, r.Error)}
			continue
		}
		msg := llm.AI(r.Content)
		msg.ID = r.ID
		for j, tc := range r.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("scripted: response %d, tool call %d: no name", i+1, j+1)
			}
			args, err := argsJSON(&tc.Args)
			if err != nil {
				return nil, fmt.Errorf("scripted: response %d, tool call %d (%s), line %d: %w", i+1, j+1, tc.Name, tc.Args.Line, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Args: args})
		}
		rs[i] = Response{Message: msg}
	}
	return NewScript(Options{Loop: s.Loop}, rs...), nil
}

// argsJSON converts a tool call's YAML arguments, a mapping or a string of
// JSON, to a JSON object.
func argsJSON(n *yaml.Node) (json.RawMessage, error) {
	switch n.Kind {
	case 0:
		return json.RawMessage("{}"), nil
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return json.RawMessage("{}"), nil
		}
		return llm.ParseArgs(n.Value)
	case yaml.MappingNode:
		var v map[string]any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("args cannot be JSON: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("args must be a mapping (or a string of JSON)")
}
