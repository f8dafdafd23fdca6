package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// StructuredMethod is how Structured asks a model for JSON.
type StructuredMethod string

// The structured-output methods.
const (
	// StructuredToolCall offers one tool whose parameters are the schema
	// and forces a call to it; every tool-calling model supports it.
	StructuredToolCall StructuredMethod = "tool_call"
	// StructuredJSONSchema passes the schema as the response format
	// (OpenAI's json_schema, Anthropic's output format).
	StructuredJSONSchema StructuredMethod = "json_schema"
	// StructuredPrompt asks for the JSON in words: the schema goes into
	// the system message, and the JSON is read from the reply's text. It
	// is for models with neither tool calling nor response formats (many
	// small local models); nothing is bound to the model.
	StructuredPrompt StructuredMethod = "prompt"
)

// StructuredOptions tune Structured.
type StructuredOptions struct {
	// Name names the tool or format; empty uses the Go type's name.
	Name string
	// Description tells the model what the output is for.
	Description string
	// Method defaults to StructuredToolCall.
	Method StructuredMethod
	// Call is passed to every model call.
	Call CallOptions
	// TypeSchemas give the schemas of Go types within T, where the
	// derived one says too little (a string type whose values are an
	// enum, say); see jsonschema.ForOptions.
	TypeSchemas map[reflect.Type]*jsonschema.Schema
}

// StructuredOutputError reports a reply that did not match the schema
// after the repair attempt. It matches ErrInvalidOutput.
type StructuredOutputError struct {
	// Type is the Go type asked for.
	Type string
	// Attempts is the number of model calls made.
	Attempts int
	// Output is the last reply's JSON text (or its text, if it had none).
	Output string
	// Err is why the last reply was rejected.
	Err error
}

// Error says why the output was rejected, and shows its start.
func (e *StructuredOutputError) Error() string {
	return fmt.Sprintf("llm: structured output for %s invalid after %d attempts: %v; last output: %s", e.Type, e.Attempts, e.Err, abbreviate([]byte(e.Output)))
}

// Unwrap returns ErrInvalidOutput and the last rejection.
func (e *StructuredOutputError) Unwrap() []error { return []error{ErrInvalidOutput, e.Err} }

// Structured asks model for a reply to msgs as a T. The JSON Schema of T is
// derived with jsonschema.For (field names from json tags, descriptions
// from jsonschema tags); the reply is validated against it and decoded. An
// invalid reply is sent back once with the validation error for the model
// to repair; a second invalid reply fails with *StructuredOutputError.
// Errors of the model call itself are returned as they are.
//
// A T whose schema is not an object (a slice, a string) is wrapped in an
// object with one property, "value", since tools take objects. opts may be
// nil for the defaults.
func Structured[T any](ctx context.Context, model ChatModel, msgs []Message, opts *StructuredOptions) (T, error) {
	var zero T
	var o StructuredOptions
	if opts != nil {
		o = *opts
	}
	typeName := reflect.TypeFor[T]().String()
	schema, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: o.TypeSchemas})
	if err != nil {
		return zero, fmt.Errorf("llm: structured output: JSON Schema of %s: %w", typeName, err)
	}
	wrapped := schema.Type != "object"
	if wrapped {
		schema = &jsonschema.Schema{
			Type:                 "object",
			Properties:           map[string]*jsonschema.Schema{"value": schema},
			Required:             []string{"value"},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		}
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return zero, fmt.Errorf("llm: structured output: JSON Schema of %s: %w", typeName, err)
	}
	schemaJSON, err := json.Marshal(schema)
	if err != nil {
		return zero, fmt.Errorf("llm: structured output: JSON Schema of %s: %w", typeName, err)
	}
	name := o.Name
	if name == "" {
		name = formatName(reflect.TypeFor[T]().Name())
	}
	desc := o.Description
	if desc == "" {
		desc = "Return the answer in this structure."
	}
	call := o.Call
	m := model
	switch o.Method {
	case "", StructuredToolCall:
		m = model.BindTools([]ToolSpec{{Name: name, Description: desc, Parameters: schemaJSON}})
		call.ToolChoice = ToolChoice(name)
	case StructuredJSONSchema:
		call.ResponseFormat = &ResponseFormat{Name: name, Schema: schemaJSON}
	case StructuredPrompt:
		msgs = withFormatPrompt(msgs, fmt.Sprintf("Reply with only one JSON object, and no other text, that matches this JSON Schema (%s: %s):\n%s", name, desc, schemaJSON))
	default:
		return zero, fmt.Errorf("%w: structured output method %q (want %q, %q or %q)", ErrUnsupported, o.Method, StructuredToolCall, StructuredJSONSchema, StructuredPrompt)
	}

	conv := slices.Clone(msgs)
	const attempts = 2
	var last error
	var lastOut string
	for attempt := 1; attempt <= attempts; attempt++ {
		reply, err := m.Generate(ctx, conv, call)
		if err != nil {
			return zero, err
		}
		raw, err := extractJSON(reply, name)
		if err == nil {
			var v T
			if v, err = decodeValidated[T](raw, resolved, wrapped); err == nil {
				return v, nil
			}
		}
		last, lastOut = err, raw
		if lastOut == "" {
			lastOut = reply.Text()
		}
		conv = append(conv, reply)
		conv = append(conv, repairMessages(reply, name, err)...)
	}
	return zero, &StructuredOutputError{Type: typeName, Attempts: attempts, Output: lastOut, Err: last}
}

// withFormatPrompt adds instruction to the conversation's system message:
// joined to a first system message (models follow one system message best,
// and some accept it only first), else as a new first message.
func withFormatPrompt(msgs []Message, instruction string) []Message {
	if len(msgs) > 0 && msgs[0].Type == TypeSystem {
		return append([]Message{System(msgs[0].Text() + "\n\n" + instruction)}, msgs[1:]...)
	}
	return append([]Message{System(instruction)}, msgs...)
}

// formatName makes a Go type name a valid tool name.
func formatName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "output"
	}
	return string(b[:min(len(b), 64)])
}

var errNoJSON = errors.New("the reply holds no JSON")

// extractJSON finds the structured output in a reply: the arguments of a
// call to the named tool (or of its only call), else JSON in its text.
func extractJSON(reply Message, name string) (string, error) {
	for _, tc := range reply.ToolCalls {
		if tc.Name == name || len(reply.ToolCalls) == 1 {
			return string(tc.Args), nil
		}
	}
	for _, bad := range reply.InvalidToolCalls {
		return bad.Args, fmt.Errorf("the arguments of %s are not a JSON object: %s", bad.Name, bad.Error)
	}
	text := strings.TrimSpace(reply.Text())
	// Models often fence JSON in Markdown.
	if rest, ok := strings.CutPrefix(text, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		if body, _, ok := strings.Cut(rest, "```"); ok {
			text = strings.TrimSpace(body)
		}
	}
	if text == "" {
		return "", fmt.Errorf("%w: it has neither a call to %s nor JSON text", errNoJSON, name)
	}
	// Models without tool calling often wrap the object in a sentence.
	if !json.Valid([]byte(text)) {
		if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i && json.Valid([]byte(text[i:j+1])) {
			text = text[i : j+1]
		}
	}
	return text, nil
}

func decodeValidated[T any](raw string, schema *jsonschema.Resolved, wrapped bool) (T, error) {
	var zero T
	var inst any
	if err := json.Unmarshal([]byte(raw), &inst); err != nil {
		return zero, fmt.Errorf("not valid JSON: %w", err)
	}
	if err := schema.Validate(inst); err != nil {
		return zero, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	if wrapped {
		var w struct {
			Value T `json:"value"`
		}
		if err := dec.Decode(&w); err != nil {
			return zero, err
		}
		return w.Value, nil
	}
	var v T
	if err := dec.Decode(&v); err != nil {
		return zero, err
	}
	return v, nil
}

// repairMessages tell the model what was wrong with reply: a tool error for
// each of its tool calls (every call needs an answer), or else a human
// message.
func repairMessages(reply Message, name string, err error) []Message {
	text := fmt.Sprintf("The output does not match the required schema: %v. Try again with output that matches the schema exactly.", err)
	var out []Message
	for _, tc := range reply.ToolCalls {
		out = append(out, ToolError(tc.ID, tc.Name, text))
	}
	for _, tc := range reply.InvalidToolCalls {
		out = append(out, ToolError(tc.ID, tc.Name, text))
	}
	if len(out) == 0 {
		out = append(out, Human(text))
	}
	return out
}
