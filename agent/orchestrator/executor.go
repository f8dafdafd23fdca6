package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/tool"
)

// Executor is a domain executor (document 003: data, insight, content,
// operations): a group of tools that runs the todos assigned to it.
//
// By default a todo runs its recommended tool with its parameters; when
// that fails, a ReAct sub-agent over the executor's tools tries (unless
// Config.Execution.ReactFallback is off). Run replaces both.
type Executor struct {
	// Name is what plans call it ("data").
	Name string
	// Description says what it does, for the planner.
	Description string
	// Tools are its tools. A tool belongs to one executor.
	Tools []*tool.Tool
	// Run, when set, runs a step instead of the default. It returns the
	// result's data, or an error for a failed step.
	Run func(ctx context.Context, step Step) (Result, error)
}

type inputsKey struct{}

// Inputs returns, inside a tool or an Executor.Run called for a todo, the
// results of the todo's dependencies by todo id: how a tool that writes a
// report reads the analyses before it, without graph state.
func Inputs(ctx context.Context) map[string]Result {
	m, _ := ctx.Value(inputsKey{}).(map[string]Result)
	return m
}

// InputData decodes the data of every dependency result whose tool is
// toolName into a T, in dependency order (by todo id), for a tool that
// reads the results of another tool before it. Results of other tools are
// skipped; data that does not decode is an error naming the todo.
func InputData[T any](ctx context.Context, toolName string) ([]T, error) {
	in := Inputs(ctx)
	var out []T
	for _, id := range sortedKeys(in) {
		r := in[id]
		if r.Tool != toolName || r.Status != StatusDone || len(r.Data) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(r.Data, &v); err != nil {
			return nil, fmt.Errorf("the result of %s (%s) is not what %s returns: %w", id, r.Tool, toolName, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// withInputs puts a step's dependency results into ctx for Inputs.
func withInputs(ctx context.Context, in map[string]Result) context.Context {
	return context.WithValue(ctx, inputsKey{}, in)
}

// failureIn checks a successful-looking tool result for the marks of a
// failure (document 001's is_tool_call_successful): an "isError": true
// field at the top of its data, or one of the patterns in its text. It
// returns what it found, or "".
func failureIn(data json.RawMessage, patterns []string) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) == nil {
		for _, k := range []string{"isError", "is_error"} {
			if string(top[k]) == "true" {
				return fmt.Sprintf("the result says %s: true", k)
			}
		}
	}
	text := strings.ToLower(string(data))
	for _, p := range patterns {
		if strings.Contains(text, strings.ToLower(p)) {
			return fmt.Sprintf("the result contains the error pattern %q", p)
		}
	}
	return ""
}
