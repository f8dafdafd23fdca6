package tool

import "context"

// Trace holds hooks called around tool calls, for tracing and metrics.
// WithTrace attaches it to a context; every call made with that context,
// by the tool node or by Tool.Run, calls its hooks. Like
// net/http/httptrace's ClientTrace, it lets the code that runs a graph
// observe the tools deep inside it without an option threaded through
// every agent. Nil hooks are skipped.
type Trace struct {
	// CallStart is called as a call starts. The context it returns, when
	// not nil, is the call's: a span started there is the parent of what
	// the tool does.
	CallStart func(ctx context.Context, call CallInfo) context.Context
	// CallDone is called when the call ended, with the context CallStart
	// returned, the call's envelope and its error: nil on success, else
	// wrapping ErrUnknownTool, ErrInvalidArgs, ErrTimeout, ErrPanic or
	// ErrFailed.
	CallDone func(ctx context.Context, call CallInfo, res Result[any], err error)
}

// CallInfo describes a tool call to a Trace.
type CallInfo struct {
	// Name is the tool's name.
	Name string
	// ID is the model's id of the call ("" for Tool.Run).
	ID string
}

type traceKey struct{}

// WithTrace returns a context whose tool calls call t's hooks. A trace
// set on a context that has one replaces it.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// traceFrom returns the Trace of ctx, or nil.
func traceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// traced calls run between t's hooks (t may be nil).
func traced(ctx context.Context, t *Trace, c CallInfo, run func(ctx context.Context) (Result[any], error)) (Result[any], error) {
	if t == nil {
		return run(ctx)
	}
	if t.CallStart != nil {
		if c2 := t.CallStart(ctx, c); c2 != nil {
			ctx = c2
		}
	}
	res, err := run(ctx)
	if t.CallDone != nil {
		t.CallDone(ctx, c, res, err)
	}
	return res, err
}
