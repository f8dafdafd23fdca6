package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// NewRaw builds a tool whose arguments' JSON Schema is given rather than
// derived from a Go type: a tool of another system (an MCP server's) whose
// schema is kept as it is, byte for byte up to spacing, so that the model
// sees what the tool's owner wrote. fn receives the arguments as JSON and
// returns the data of the envelope (a string is what the model reads, other
// data is sent as JSON), or an error: a *Error chooses the envelope's code.
//
// schema must be a JSON object schema ("type": "object"). When
// github.com/google/jsonschema-go can resolve it (JSON Schema 2020-12, and
// the common parts of draft-07), the arguments are validated against it
// before fn runs, every violation reported at once, as for New; a schema it
// cannot resolve (a remote $ref, keywords of older drafts) is still sent
// to the model, and the arguments are left for fn's owner to check.
// Options.Schema does not apply: there is no derived schema to adjust.
func NewRaw(name, description string, schema json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (any, error), opts ...Options) *Tool {
	t := &Tool{name: name, description: description, out: reflect.TypeFor[any]()}
	for _, o := range opts {
		t.opts = o
	}
	fail := func(format string, args ...any) *Tool {
		t.err = fmt.Errorf("%w: tool %q: "+format, append([]any{ErrInvalidTool, name}, args...)...)
		return t
	}
	switch {
	case name == "":
		t.err = fmt.Errorf("%w: a tool has an empty name", ErrInvalidTool)
		return t
	case fn == nil:
		return fail("nil function")
	case t.opts.Schema != nil:
		return fail("Options.Schema adjusts a schema derived from Go types; NewRaw takes the schema as it is")
	case t.opts.Handler != nil && t.opts.Then == "":
		return fail("a Handler without Then, the name of its node")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return fail("its input schema is not JSON: %v", err)
	}
	var head struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(compact.Bytes(), &head); err != nil {
		return fail("its input schema is not a JSON object: %s", clipSchema(compact.Bytes()))
	}
	if head.Type != "object" {
		return fail(`its input schema has type %v; tools take a JSON object ("type": "object")`, head.Type)
	}
	t.params = compact.Bytes()
	var s jsonschema.Schema
	if json.Unmarshal(t.params, &s) == nil {
		if r, err := s.Resolve(nil); err == nil && t.splitSchema(&s) == nil {
			t.schema = r
		} else {
			t.parts, t.required, t.known = nil, nil, nil
		}
	}
	t.call = func(ctx context.Context, args json.RawMessage, _ any) (any, error) {
		return fn(ctx, args)
	}
	return t
}

// clipSchema shortens a schema for an error message.
func clipSchema(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
