package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/llm"
)

// DefaultTimeout bounds one tool call when neither the tool nor the node
// says otherwise (document 002: 10 s per tool).
const DefaultTimeout = 10 * time.Second

// Keys of a tool message's AdditionalKwargs (never sent to a model):
// cachedKwarg marks a message served from the cache; keyKwarg holds a
// checksum of its call (tool and canonical arguments) that lets the cache
// skip calls that differ without comparing their arguments.
const (
	cachedKwarg = "weft_cached"
	keyKwarg    = "weft_call_key"
)

// castagnoli is CRC-32C, computed in hardware on amd64 and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// NodeOptions tune the tool node.
type NodeOptions struct {
	// Timeout bounds each tool call (default DefaultTimeout); a tool's own
	// Options.Timeout takes precedence.
	Timeout time.Duration
	// Cache serves a call identical to an earlier successful one of the
	// same turn (same tool, same arguments up to key order and spacing;
	// the turn starts at the last human message) from that call's result
	// instead of running the tool again.
	Cache bool
	// MaxConcurrency caps the calls that run at once; 0 runs them all.
	MaxConcurrency int
	// Deadline, when set, bounds the whole step by the time it returns
	// for the state (an agent's total timeout); ok false means none.
	Deadline func(s graph.State) (deadline time.Time, ok bool)
}

// IsCached reports whether a tool message was served from the cache.
func IsCached(msg llm.Message) bool {
	return string(msg.AdditionalKwargs[cachedKwarg]) == "true"
}

// Node returns a graph node that runs the tool calls of the last message
// in msgs, when it is an AI message, and writes one tool message per call,
// in the calls' order. The tools are reg's snapshot pinned in the run's
// context (Registry.Pin), or its current ones. Calls run in parallel, each with its timeout; a
// failure of any kind (invalid arguments, an unknown tool, an error,
// a timeout, a panic) becomes a tool message with status "error" whose
// content tells the model what went wrong, so the node itself fails only
// when its context is cancelled.
func Node(reg *Registry, msgs *graph.MessagesChannel[llm.Message], opts NodeOptions) graph.NodeFunc {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		history := msgs.Get(s)
		if len(history) == 0 {
			return graph.Update{}, nil
		}
		last := &history[len(history)-1]
		if last.Type != llm.TypeAI || len(last.ToolCalls)+len(last.InvalidToolCalls) == 0 {
			return graph.Update{}, nil
		}
		calls := last.ToolCalls
		// One view of the tools for every call of the step: the turn's
		// pinned snapshot, or the current one.
		tools := reg.View(ctx)
		// Each call ends by its own timeout or the step's deadline,
		// whichever comes first; the node fails only when its own context
		// ends.
		var deadline time.Time
		if opts.Deadline != nil {
			if d, ok := opts.Deadline(s); ok {
				deadline = d
			}
		}
		out := make([]llm.Message, len(last.ToolCalls))
		// canon says which calls' arguments are in canonical form
		// (jsonx.Canonical, the usual case): they decode on a fast path,
		// and compare as bytes for the cache.
		canon := make([]bool, len(calls))
		keys := make([]string, len(calls))
		for i, c := range calls {
			canon[i] = jsonx.Canonical(c.Args)
			if opts.Cache {
				keys[i] = callKey(c, canon[i])
			}
		}
		// With the cache, a call identical to an earlier successful one
		// of the turn is answered with its result, and identical calls of
		// this message run once.
		var dupOf map[int]int
		var run []int
	calls:
		for i, c := range calls {
			if opts.Cache {
				if hit, ok := cachedResult(history[:len(history)-1], c, canon[i], keys[i]); ok {
					out[i] = cachedCopy(hit, c)
					continue
				}
				for _, j := range run {
					if keys[j] == keys[i] && sameCall(calls[j], canon[j], c, canon[i]) {
						if dupOf == nil {
							dupOf = map[int]int{}
						}
						dupOf[i] = j
						continue calls
					}
				}
			}
			run = append(run, i)
		}
		if len(run) == 1 {
			// One call runs on the node's goroutine.
			i := run[0]
			out[i] = callOne(ctx, tools, calls[i], opts.Timeout, deadline, canon[i])
			run = nil
		}
		var wg sync.WaitGroup
		var sem chan struct{}
		if opts.MaxConcurrency > 0 {
			sem = make(chan struct{}, opts.MaxConcurrency)
		}
		for _, i := range run {
			wg.Go(func() {
				if sem != nil {
					sem <- struct{}{}
					defer func() { <-sem }()
				}
				out[i] = callOne(ctx, tools, calls[i], opts.Timeout, deadline, canon[i])
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return graph.Update{}, err
		}
		for i, j := range dupOf {
			if !out[j].IsError() {
				out[i] = cachedCopy(out[j], calls[i])
			} else {
				// A failure is not cached: the copy reports it as its own.
				out[i] = out[j]
				out[i].ToolCallID, out[i].ID = calls[i].ID, ""
			}
		}
		if opts.Cache {
			for i := range out {
				out[i].AdditionalKwargs = withKwarg(out[i].AdditionalKwargs, keyKwarg, json.RawMessage(keys[i]))
			}
		}
		for _, bad := range last.InvalidToolCalls {
			env := failure(CodeInvalidArgs, fmt.Sprintf("the arguments of %s are not a JSON object (%s): %s. Call it again with a JSON object.", bad.Name, bad.Error, bad.Args), nil)
			out = append(out, envelopeMessage(bad.ID, bad.Name, env, false))
		}
		return msgs.Write(out...), nil
	}
}

// callOne runs call c with timeout, ending by deadline if that is sooner
// (zero: none); canonical says that its arguments are in canonical form
// (jsonx.Canonical).
//
// Inside a run that streams tools events, the call reports its start, the
// progress its tool reports (Progress) and its end: the tool message on
// success, the envelope's error code and message on failure.
func callOne(ctx context.Context, tools *Snapshot, c llm.ToolCall, timeout time.Duration, deadline time.Time, canonical bool) llm.Message {
	info := CallInfo{Name: c.Name, ID: c.ID}
	ctx, cs := startCall(ctx, info, c.Args, canonical)
	env, err := traced(ctx, traceFrom(ctx), info, func(ctx context.Context) (Result[any], error) {
		t, ok := tools.Get(c.Name)
		if !ok {
			env := failure(CodeUnknownTool, fmt.Sprintf("there is no tool named %q; the tools are %v", c.Name, tools.Names()), nil)
			return env, fmt.Errorf("%w: %s", ErrUnknownTool, c.Name)
		}
		return t.run(ctx, c.Args, timeout, deadline, canonical)
	})
	msg := envelopeMessage(c.ID, c.Name, env, err == nil)
	if cs != nil {
		if err == nil && msg.IsError() {
			// The result could not be encoded: the message says so.
			env, err = failure(CodeFailed, msg.Text(), env.Meta), ErrFailed
		}
		// Its id now rather than when the node writes it, so that the
		// end's output is the message the state gets.
		msg.ID = ids.Random()
	}
	cs.finish(ctx, env, err, msg)
	return msg
}

// envelopeMessage writes env as the tool message answering call id: the
// data (or the error) as the content the model reads, success or failure
// as the status, and the rest of the envelope in the artifact (see Result).
func envelopeMessage(id, name string, env Result[any], ok bool) llm.Message {
	a := artifact{Meta: env.Meta}
	var content string
	if ok {
		text, isString, err := dataText(env.Data)
		switch {
		case err != nil:
			ok = false
			env = failure(CodeFailed, fmt.Sprintf("the result of %s cannot be encoded as JSON: %v", name, err), env.Meta)
		case isString && readsAsJSON(text):
			a.Format = formatText
		}
		content = text
	}
	var m llm.Message
	if ok {
		m = llm.ToolResult(id, name, content)
		m.Status = llm.StatusSuccess
	} else {
		a.ErrorCode, a.Error = env.ErrorCode, env.Error
		text := env.Error
		if env.ErrorCode != "" {
			text = "error " + env.ErrorCode + ": " + env.Error
		}
		m = llm.ToolError(id, name, text)
	}
	if a.ErrorCode != "" || a.Error != "" || len(a.Meta) > 0 || a.Format != "" {
		b, err := encodeNoHTML(a)
		if err != nil {
			// Only meta can fail to encode; the model still gets its
			// answer, and the artifact says what was lost.
			b, _ = encodeNoHTML(artifact{ErrorCode: a.ErrorCode, Error: a.Error, Format: a.Format, Meta: map[string]any{"meta_error": err.Error()}})
		}
		m.Artifact = b
	}
	return m
}

// dataText is the content the model reads for a tool's data: a string as
// it is (no copy: results can be large), anything else as JSON, encoded
// as an Encoder with SetEscapeHTML(false) encodes it.
func dataText(data any) (text string, isString bool, err error) {
	switch d := data.(type) {
	case string:
		return d, true, nil
	case nil:
		return "null", false, nil
	}
	// A named string type (type Summary string) is text too.
	if v := reflect.ValueOf(data); v.Kind() == reflect.String {
		return v.String(), true, nil
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return "", false, err
	}
	return strings.TrimSuffix(sb.String(), "\n"), false, nil
}

// readsAsJSON reports whether text is also valid JSON ("42", "null",
// "{...}"), checking its first byte before it scans the rest: most text
// cannot start a JSON value.
func readsAsJSON(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	if t == "" || !strings.ContainsRune(`{["-0123456789tfn`, rune(t[0])) {
		return false
	}
	return json.Valid([]byte(t))
}

// encodeNoHTML encodes v as an Encoder with SetEscapeHTML(false) does,
// without the trailing newline.
func encodeNoHTML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func cachedCopy(hit llm.Message, c llm.ToolCall) llm.Message {
	m := llm.ToolResult(c.ID, c.Name, hit.Content)
	m.Status, m.Artifact = hit.Status, hit.Artifact
	m.AdditionalKwargs = map[string]json.RawMessage{cachedKwarg: json.RawMessage("true")}
	return m
}

// cachedResult finds the result of the turn's latest successful call
// (after the last human message in history) identical to c, whose
// arguments are canonical when canon is true and whose callKey is key.
// Tool messages whose key differs are skipped unread; a matching key is
// confirmed by comparing the calls themselves.
func cachedResult(history []llm.Message, c llm.ToolCall, canon bool, key string) (llm.Message, bool) {
	start := len(history)
	for start > 0 && history[start-1].Type != llm.TypeHuman {
		start--
	}
	turn := history[start:]
	for i := len(turn) - 1; i >= 0; i-- {
		m := turn[i]
		if m.Type != llm.TypeTool || m.IsError() || string(m.AdditionalKwargs[keyKwarg]) != key {
			continue
		}
		// Its call is in the AI message before it.
		for j := i - 1; j >= 0; j-- {
			if turn[j].Type != llm.TypeAI {
				continue
			}
			for _, prev := range turn[j].ToolCalls {
				if prev.ID == m.ToolCallID && sameCall(prev, jsonx.Canonical(prev.Args), c, canon) {
					return m, true
				}
			}
			break
		}
	}
	return llm.Message{}, false
}

// callKey is a checksum of c's tool and canonical arguments (canon says
// they are canonical already), kept as a JSON string.
func callKey(c llm.ToolCall, canon bool) string {
	sum := crc32.Update(0, castagnoli, []byte(c.Name))
	sum = crc32.Update(sum, castagnoli, []byte{0})
	sum = crc32.Update(sum, castagnoli, canonicalArgs(c.Args, canon))
	return fmt.Sprintf(`"%08x"`, sum)
}

func withKwarg(kw map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(kw)+1)
	maps.Copy(out, kw)
	out[k] = v
	return out
}

// sameCall reports whether two calls name the same tool with the same
// arguments up to key order and spacing. Arguments in canonical form (aCanon,
// bCanon) compare as bytes; others are canonicalized first.
func sameCall(a llm.ToolCall, aCanon bool, b llm.ToolCall, bCanon bool) bool {
	if a.Name != b.Name {
		return false
	}
	if aCanon && bCanon {
		return bytes.Equal(a.Args, b.Args)
	}
	return bytes.Equal(canonicalArgs(a.Args, aCanon), canonicalArgs(b.Args, bCanon))
}

// canonicalArgs returns args in canonical form: decoding and re-encoding
// sorts object keys and drops spacing; numbers keep their spelling, so
// 1 and 1.0 differ (a lost cache hit, never a wrong one). Arguments that
// are not JSON are compared as they are.
func canonicalArgs(args json.RawMessage, canon bool) []byte {
	if canon {
		return args
	}
	// Numbers keep their digits (json.Number): as float64, integers
	// beyond 2^53 would compare equal to their neighbours.
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		if b, err := json.Marshal(v); err == nil {
			return b
		}
	}
	return args
}

// LastCalls returns the tool messages that answer the calls of the last AI
// message in msgs whose tool is one of names (all when names is empty).
func LastCalls(msgs []llm.Message, names ...string) []llm.Message {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Type == llm.TypeTool {
		i--
	}
	var out []llm.Message
	for _, m := range msgs[i+1:] {
		if len(names) == 0 || slices.Contains(names, m.Name) {
			out = append(out, m)
		}
	}
	return out
}
