// Package tool turns Go functions into tools a model can call, and runs
// them in a graph.
//
// A tool is a typed function, func(ctx, In) (Out, error). Its JSON Schema is
// derived from In (github.com/google/jsonschema-go: field names from json
// tags, descriptions from jsonschema tags), and the model's arguments are
// validated against it before the function runs: invalid arguments come
// back to the model as a tool error it can correct, naming every violation
// at once. [Options].Schema adds what Go types cannot say (enums, bounds),
// so that the schema states what the function enforces.
//
// Every tool answers in one envelope, [Result]: success, typed data, error
// code and message, metadata (document 000's ToolResult). In the tool
// message the model reads the data (or the error), and the rest travels in
// the message's status and artifact, as in LangChain's ToolMessage. Code
// after the tool reads it typed, with [ResultOf], never through untyped
// maps.
//
// [Node] is the graph node that runs an AI message's tool calls in
// parallel, each with its own timeout, and [Wire] adds it to a graph
// together with the post-processing node each tool declares, routing by
// tool name (document 000's route_after_tools) so that no one writes node
// names or edges by hand.
package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/llm"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrInvalidTool: a tool cannot be built or registered as declared
	// (no name, a schema that cannot be derived, a duplicate name).
	ErrInvalidTool = errors.New("tool: invalid tool")
	// ErrInvalidArgs: the model's arguments do not match the tool's schema.
	ErrInvalidArgs = errors.New("tool: invalid arguments")
	// ErrUnknownTool: the model called a tool that is not registered.
	ErrUnknownTool = errors.New("tool: unknown tool")
	// ErrTimeout: the tool did not finish within its timeout.
	ErrTimeout = errors.New("tool: timeout")
	// ErrPanic: the tool panicked; the panic was recovered.
	ErrPanic = errors.New("tool: panic")
	// ErrFailed: the tool's function returned an error.
	ErrFailed = errors.New("tool: failed")
	// ErrInvalidResult: a tool message does not hold a result envelope
	// of the expected type.
	ErrInvalidResult = errors.New("tool: invalid result")
)

// Error codes of the result envelope set by the tool layer itself. A tool
// function sets its own code by returning an *Error.
const (
	CodeInvalidArgs = "invalid_arguments"
	CodeUnknownTool = "unknown_tool"
	CodeTimeout     = "timeout"
	CodePanic       = "panic"
	CodeFailed      = "tool_error"
)

// Error is an error a tool function returns to choose the envelope's
// error code and metadata. It matches ErrFailed.
type Error struct {
	// Code is the envelope's error_code ("NOT_FOUND", "NO_RESULTS").
	Code string
	// Message is the envelope's error, what the model reads.
	Message string
	// Meta is merged into the envelope's meta.
	Meta map[string]any
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the code and message.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns ErrFailed and the cause.
func (e *Error) Unwrap() []error { return []error{ErrFailed, e.Err} }

// Result is the envelope every tool answers with (document 000's
// ToolResult): whether the call succeeded, the tool's typed data, an error
// code and message, and metadata. Code after a tool reads it typed with
// ResultOf.
//
// In the tool message the envelope is split the way LangChain's ToolMessage
// splits a result, so that the model reads only what it needs and no value
// is copied: the content is what the model reads, the tool's data (a
// string as it is, other data as JSON) or, on failure, "error CODE:
// message"; the status is "success" or "error"; and the artifact, which
// is never sent to a model, holds the rest as JSON, {"error_code",
// "error", "meta"}, omitted when all are empty.
type Result[Out any] struct {
	Success   bool           `json:"success"`
	Data      Out            `json:"data"`
	ErrorCode string         `json:"error_code,omitempty"`
	Error     string         `json:"error,omitempty"`
	Meta      map[string]any `json:"meta,omitempty"`
}

// artifact is the part of the envelope a tool message keeps in its
// artifact.
type artifact struct {
	ErrorCode string         `json:"error_code,omitempty"`
	Error     string         `json:"error,omitempty"`
	Meta      map[string]any `json:"meta,omitempty"`
	// Format is "text" when the content is a string result that reads
	// as JSON too ("42", "null"), so readers of untyped data take it as
	// the string it is; empty otherwise.
	Format string `json:"format,omitempty"`
}

// formatText is artifact.Format for text that reads as JSON.
const formatText = "text"

// ResultOf reads back the envelope of a tool message written by the tool
// node, with its data as an Out. A failed call reads too: Success is false
// and Data is zero. A string Out (or a named string type) is the content as
// it is; any other Out is decoded from the content's JSON, except that for
// json.RawMessage and any a string tool's text reads as a string: the tool
// node marks text that would read as JSON, and content that is not JSON is
// text.
// It fails with ErrInvalidResult when msg is not a tool message, its
// artifact is not an envelope's, or its content is not an Out.
func ResultOf[Out any](msg llm.Message) (Result[Out], error) {
	var r Result[Out]
	if msg.Type != llm.TypeTool {
		return r, fmt.Errorf("%w: message %q is a %s message, not a tool message", ErrInvalidResult, msg.ID, msg.Type)
	}
	var format string
	if len(msg.Artifact) > 0 {
		var a artifact
		if err := json.Unmarshal(msg.Artifact, &a); err != nil {
			return r, fmt.Errorf("%w: the artifact of tool message %q (tool %s) is not a result envelope {error_code, error, meta}: %w", ErrInvalidResult, msg.ID, msg.Name, err)
		}
		r.ErrorCode, r.Error, r.Meta, format = a.ErrorCode, a.Error, a.Meta, a.Format
	}
	r.Success = !msg.IsError()
	if !r.Success {
		if r.Error == "" {
			r.Error = msg.Text()
		}
		return r, nil
	}
	content := msg.Text()
	// Only untyped readers need to know whether the content is text.
	isText := func() bool { return format == formatText || !json.Valid([]byte(content)) }
	switch d := any(&r.Data).(type) {
	case *string:
		*d = content
		return r, nil
	case *json.RawMessage:
		if isText() {
			*d, _ = json.Marshal(content)
			return r, nil
		}
	case *any:
		if isText() {
			*d = content
			return r, nil
		}
	default:
		// A named string type (type Summary string) is text too.
		if v := reflect.ValueOf(&r.Data).Elem(); v.Kind() == reflect.String {
			v.SetString(content)
			return r, nil
		}
	}
	if err := json.Unmarshal([]byte(content), &r.Data); err != nil {
		return r, fmt.Errorf("%w: the data of tool %s (message %q) is not a %s: %w", ErrInvalidResult, msg.Name, msg.ID, reflect.TypeFor[Out](), err)
	}
	return r, nil
}

// Options tune a tool.
type Options struct {
	// Timeout bounds one call of this tool; zero uses the tool node's
	// timeout. At the timeout the function's context is cancelled; see
	// Isolate for functions that may not notice.
	Timeout time.Duration
	// Isolate runs the function on a goroutine of its own, so that a call
	// is answered with a timeout error at its deadline even when the
	// function ignores its context (a blocking call that takes none,
	// CPU-bound work); the abandoned call finishes in the background and
	// its result is dropped. By default the function runs on the calling
	// goroutine, as Go code that takes a context usually expects: its
	// context carries the deadline, and a function that ignores it
	// overruns the timeout. Isolation costs a goroutine hand-off per call
	// (microseconds), which matters only for very cheap tools.
	Isolate bool
	// Then names the post-processing node that runs after this tool
	// (document 000's handle_* nodes); Wire adds it and routes to it.
	// Several tools may name the same node; one of them declares Handler.
	Then string
	// Handler is the post-processing node's body; see Handle and
	// HandleNode.
	Handler *Handler
	// Schema, when set, adjusts the JSON Schema derived from In before
	// the tool uses it, to state what Go types cannot: the values a
	// string may take (Enum), bounds on numbers (Minimum, Maximum), on
	// lists (MinItems) and on strings (MinLength, Pattern). The schema
	// must state what the function enforces, as far as JSON Schema can,
	// so that arguments valid against it are not then rejected; the model
	// sees it, and the arguments are validated against it.
	Schema func(s *jsonschema.Schema)
}

// Tool is a callable tool: a name, a description, a JSON Schema for its
// arguments, and a function. Build one with New.
type Tool struct {
	name, description string
	params            json.RawMessage
	schema            *jsonschema.Resolved
	// parts validate one property each, to report every violation (see
	// validate); required and known list the properties the schema
	// requires and allows (nil known: any).
	parts    []schemaPart
	required []string
	known    map[string]bool
	out      reflect.Type
	call     func(ctx context.Context, args json.RawMessage, decoded any) (any, error)
	// valid, when set, reports that decoded arguments surely satisfy
	// schema, so validating them can be skipped (see fieldsDecoder).
	valid func(decoded any) bool
	opts  Options
	err   error
}

// New builds a tool from fn. The arguments' JSON Schema is derived from In,
// which must be a struct (or a map): tools take JSON objects. A problem with
// the declaration is kept and reported by Err and by Registry.Add, so tools
// can be declared as package variables.
func New[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...Options) *Tool {
	t := &Tool{name: name, description: description, out: reflect.TypeFor[Out]()}
	for _, o := range opts {
		t.opts = o
	}
	switch {
	case name == "":
		t.err = fmt.Errorf("%w: a tool has an empty name", ErrInvalidTool)
		return t
	case fn == nil:
		t.err = fmt.Errorf("%w: tool %q has a nil function", ErrInvalidTool, name)
		return t
	case t.opts.Handler != nil && t.opts.Then == "":
		t.err = fmt.Errorf("%w: tool %q declares a Handler without Then, the name of its node", ErrInvalidTool, name)
		return t
	}
	schema, err := jsonschema.For[In](nil)
	if err == nil && schema.Type != "object" {
		err = fmt.Errorf("the schema of %s has type %q; tools take a struct (a JSON object)", reflect.TypeFor[In](), schema.Type)
	}
	if err == nil && t.opts.Schema != nil {
		t.opts.Schema(schema)
	}
	var resolved *jsonschema.Resolved
	if err == nil {
		resolved, err = schema.Resolve(nil)
	}
	if err == nil {
		err = t.splitSchema(schema)
	}
	var params []byte
	if err == nil {
		params, err = json.Marshal(schema)
	}
	if err != nil {
		t.err = fmt.Errorf("%w: tool %q: JSON Schema of its input: %w", ErrInvalidTool, name, err)
		return t
	}
	t.params, t.schema = params, resolved
	fields := newFieldsDecoder(reflect.TypeFor[In]())
	// The fields decoder knows the schema For derives; one adjusted by
	// Options.Schema is checked by the validator.
	if fields != nil && t.opts.Schema == nil {
		t.valid = fields.valid
	}
	// decoded, when not nil, is args decoded as an any: a struct of plain
	// fields is filled from it rather than from the JSON again.
	t.call = func(ctx context.Context, args json.RawMessage, decoded any) (any, error) {
		var in In
		if decoded != nil && fields != nil && fields.decode(decoded, reflect.ValueOf(&in).Elem()) {
			return fn(ctx, in)
		}
		in = *new(In)
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidArgs, err)
		}
		return fn(ctx, in)
	}
	return t
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Err reports a problem with the tool's declaration, or nil.
func (t *Tool) Err() error { return t.err }

// Options returns the options the tool was built with.
func (t *Tool) Options() Options { return t.opts }

// Spec describes the tool to a model.
func (t *Tool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: t.name, Description: t.description, Parameters: t.params}
}

type metaKey struct{}

type metaBox struct {
	mu sync.Mutex
	m  map[string]any
	// closed is set when the call's result is taken: an abandoned
	// (Isolate) call that goes on setting metadata changes nothing.
	closed bool
}

// SetMeta records a metadata entry for the envelope of the tool call ctx
// belongs to (a source, a count, a cache hint). Outside a tool call it does
// nothing.
func SetMeta(ctx context.Context, key string, value any) {
	b, _ := ctx.Value(metaKey{}).(*metaBox)
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if b.m == nil {
		b.m = map[string]any{}
	}
	b.m[key] = value
}

// Validate checks args against the tool's schema as Run does, without
// calling the tool: for arguments a person edited, checked before they
// run. The error wraps ErrInvalidArgs and, for schema violations,
// Violations naming every problem.
func (t *Tool) Validate(args json.RawMessage) error {
	if t.err != nil {
		return t.err
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return fmt.Errorf("%w: tool %s: the arguments are not JSON: %w", ErrInvalidArgs, t.name, err)
	}
	if err := t.validate(inst); err != nil {
		return fmt.Errorf("%w: tool %s: %w", ErrInvalidArgs, t.name, err)
	}
	return nil
}

// Required lists the properties the tool's schema requires.
func (t *Tool) Required() []string { return slices.Clone(t.required) }

// Run validates args against the tool's schema and calls it with at most
// timeout to finish (zero: no limit beyond ctx). It never panics: a panic in
// the function is recovered. The envelope is always filled; on failure the
// error says why, wrapping ErrInvalidArgs, ErrTimeout, ErrPanic or
// ErrFailed (or ErrInvalidTool for a tool that was declared wrong).
//
// The function runs on the calling goroutine with the deadline in its
// context, unless the tool is declared with Options.Isolate: then a
// function that ignores its context is abandoned at the timeout, its
// goroutine finishing in the background and its result dropped.
//
// Run inside a graph node whose run streams tools events, the call
// reports its start, its progress (Progress) and its end, with the
// envelope's data as its output; it has no tool call id.
func (t *Tool) Run(ctx context.Context, args json.RawMessage, timeout time.Duration) (Result[any], error) {
	info := CallInfo{Name: t.name}
	ctx, cs := startCall(ctx, info, args, false)
	env, err := traced(ctx, traceFrom(ctx), info, func(ctx context.Context) (Result[any], error) {
		return t.run(ctx, args, timeout, time.Time{}, false)
	})
	var out any
	if cs != nil && err == nil {
		out = snapshot(env.Data)
	}
	cs.finish(ctx, env, err, out)
	return env, err
}

// run is Run, ending the call by deadline too if that is sooner (zero:
// none); canonical says that jsonx.Canonical accepted args (the tool node
// checks every call's), so they are not checked again.
func (t *Tool) run(ctx context.Context, args json.RawMessage, timeout time.Duration, deadline time.Time, canonical bool) (Result[any], error) {
	if t.err != nil {
		return failure(CodeFailed, t.err.Error(), nil), t.err
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	// Arguments in canonical form (the usual case) decode without
	// encoding/json's two passes over them.
	var inst any
	decoded := canonical
	if canonical {
		inst = jsonx.DecodeCanonicalChecked(args)
	} else {
		inst, decoded = jsonx.DecodeCanonical(args)
	}
	if !decoded {
		if err := json.Unmarshal(args, &inst); err != nil {
			err = fmt.Errorf("%w: tool %s: the arguments are not JSON: %w", ErrInvalidArgs, t.name, err)
			return failure(CodeInvalidArgs, invalidArgsText(t, err), nil), err
		}
	}
	// A struct In is filled from what was decoded here, when it can be.
	var fast any
	if decoded {
		fast = inst
	}
	// A struct of plain fields checks its own arguments, without the
	// general validator's allocations; anything it is unsure of is
	// validated.
	// A NewRaw tool whose schema could not be resolved has none to check.
	if t.schema != nil && (t.valid == nil || !decoded || !t.valid(inst)) {
		if err := t.validate(inst); err != nil {
			err = fmt.Errorf("%w: tool %s: %w", ErrInvalidArgs, t.name, err)
			return failure(CodeInvalidArgs, invalidArgsText(t, err), nil), err
		}
	}
	if t.opts.Timeout > 0 {
		timeout = t.opts.Timeout
	}
	// One context carries the sooner of the two ends.
	d := deadline
	if timeout > 0 {
		if own := time.Now().Add(timeout); d.IsZero() || own.Before(d) {
			d = own
		} else {
			timeout = 0 // the step's deadline, not the tool's timeout
		}
	}
	if !d.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	box := &metaBox{}
	ctx = context.WithValue(ctx, metaKey{}, box)
	var o outcome
	if t.opts.Isolate {
		done := make(chan outcome, 1)
		go func() { done <- t.protected(ctx, args, fast) }()
		select {
		case o = <-done:
		case <-ctx.Done():
			// Prefer a result that raced the deadline.
			select {
			case o = <-done:
			default:
				o.err = ctx.Err()
			}
		}
	} else {
		o = t.protected(ctx, args, fast)
	}
	box.mu.Lock()
	meta := box.m
	box.closed = true
	box.mu.Unlock()
	if o.err == nil {
		return Result[any]{Success: true, Data: o.v, Meta: meta}, nil
	}
	// A function that gave up at its deadline may report it in words of
	// its own ("lookup failed: context deadline exceeded" without %w):
	// when the call's context ran out, that is a timeout too, unless the
	// function chose its error (a *tool.Error).
	if _, chosen := errors.AsType[*Error](o.err); !chosen && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(o.err, context.DeadlineExceeded) {
		o.err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, o.err)
	}
	return classify(t.name, o.err, meta, timeout)
}

// outcome is what a call of the function returned.
type outcome struct {
	v   any
	err error
}

// protected calls the function, turning a panic into an ErrPanic error.
func (t *Tool) protected(ctx context.Context, args json.RawMessage, fast any) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("%w: tool %s: %v\n%s", ErrPanic, t.name, p, debug.Stack())}
		}
	}()
	v, err := t.call(ctx, args, fast)
	return outcome{v, err}
}

func classify(name string, err error, meta map[string]any, timeout time.Duration) (Result[any], error) {
	var te *Error
	switch {
	case errors.Is(err, ErrPanic):
		return failure(CodePanic, fmt.Sprintf("tool %s crashed; try another approach", name), meta), err
	case errors.Is(err, ErrInvalidArgs):
		return failure(CodeInvalidArgs, fmt.Sprintf("tool %s: %v", name, err), meta), err
	case errors.As(err, &te):
		for k, v := range te.Meta {
			if meta == nil {
				meta = map[string]any{}
			}
			meta[k] = v
		}
		msg := te.Message
		if msg == "" && te.Err != nil {
			msg = te.Err.Error()
		}
		return failure(te.Code, msg, meta), fmt.Errorf("tool %s: %w", name, err)
	case errors.Is(err, context.DeadlineExceeded):
		text := fmt.Sprintf("tool %s timed out", name)
		if timeout > 0 {
			text = fmt.Sprintf("tool %s did not finish within %v", name, timeout)
		}
		return failure(CodeTimeout, text, meta), fmt.Errorf("%w: %s: %w", ErrTimeout, name, err)
	default:
		return failure(CodeFailed, err.Error(), meta), fmt.Errorf("%w: %s: %w", ErrFailed, name, err)
	}
}

func failure(code, text string, meta map[string]any) Result[any] {
	return Result[any]{ErrorCode: code, Error: text, Meta: meta}
}

func invalidArgsText(t *Tool, err error) string {
	return fmt.Sprintf("%v. Call %s again with arguments that match its schema: %s", err, t.name, t.params)
}

// schemaPart validates one property of the arguments.
type schemaPart struct {
	name   string
	schema *jsonschema.Resolved
}

// splitSchema prepares validate's per-property checks of an object schema.
func (t *Tool) splitSchema(s *jsonschema.Schema) error {
	t.required = s.Required
	if s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil {
		t.known = make(map[string]bool, len(s.Properties))
		for name := range s.Properties {
			t.known[name] = true
		}
	}
	names := slices.Clone(s.PropertyOrder)
	for name := range s.Properties {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		sub, ok := s.Properties[name]
		if !ok {
			continue
		}
		one := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{name: sub}, Defs: s.Defs, Definitions: s.Definitions}
		r, err := one.Resolve(nil)
		if err != nil {
			return fmt.Errorf("property %s: %w", name, err)
		}
		t.parts = append(t.parts, schemaPart{name, r})
	}
	return nil
}

// validate checks decoded arguments against the schema. When they fail,
// the error lists every violation it can tell apart (the validator stops
// at the first): unknown properties, missing required ones, and each
// property whose value is wrong, so one retry can fix them all.
func (t *Tool) validate(inst any) error {
	err := t.schema.Validate(inst)
	if err == nil {
		return nil
	}
	obj, ok := inst.(map[string]any)
	if !ok {
		return err
	}
	var v Violations
	if t.known != nil {
		var unknown []string
		for k := range obj {
			if !t.known[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			v = append(v, fmt.Sprintf("unexpected properties %q (allowed: %q)", unknown, slices.Sorted(maps.Keys(t.known))))
		}
	}
	var missing []string
	for _, name := range t.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		v = append(v, fmt.Sprintf("missing required properties %q", missing))
	}
	for _, p := range t.parts {
		val, ok := obj[p.name]
		if !ok {
			continue
		}
		if err := p.schema.Validate(map[string]any{p.name: val}); err != nil {
			v = append(v, err.Error())
		}
	}
	if len(v) == 0 {
		// A rule the parts do not cover (such as minProperties).
		return err
	}
	return v
}

// Violations lists everything wrong with a call's arguments; the error of
// a failed validation wraps it (errors.As).
type Violations []string

func (v Violations) Error() string {
	if len(v) == 1 {
		return v[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems: ", len(v))
	for i, s := range v {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "(%d) %s", i+1, s)
	}
	return b.String()
}
