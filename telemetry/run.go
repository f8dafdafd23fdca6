package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/tool"
)

// RunInfo describes a run to StartRun.
type RunInfo struct {
	RunID, ThreadID, AssistantID string
	// GraphID is the graph the run executes: the agent's name in spans, a
	// label of the metrics.
	GraphID string
	// User is the user the run acts for ("" without authentication).
	User    string
	Attempt int
	// Parent is the trace context of the request that created the run
	// (its W3C traceparent, ParentFromHeader): the run's span is a child
	// of it, so a front end's trace goes on through the run, its nodes
	// and its model and tool calls. The zero SpanContext starts a trace.
	Parent trace.SpanContext
}

// ParentFromHeader reads the W3C trace context (traceparent and
// tracestate) of an HTTP request, for RunInfo.Parent of a run the request
// creates. A header that is missing or malformed gives the zero
// SpanContext: the run starts a trace of its own.
func ParentFromHeader(h http.Header) trace.SpanContext {
	if h.Get("traceparent") == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h))
	return trace.SpanContextFromContext(ctx)
}

// StreamModes are the stream modes Run.Observe reads: the caller adds
// them to the modes of the run it observes (and keeps their events from
// clients that did not ask for them).
var StreamModes = []graph.StreamMode{graph.StreamTasks}

// Run is the telemetry of one run: its span (the parent of its nodes'
// spans, which are the parents of the model and tool calls they make),
// its duration and its outcome. A nil *Run records nothing.
type Run struct {
	t     *Telemetry
	info  RunInfo
	span  trace.Span
	start time.Time

	mu    sync.Mutex
	tasks map[string]*taskSpan // executing tasks, by task id
	ended bool
}

type taskSpan struct {
	span  trace.Span
	node  string
	start time.Time
}

type runKey struct{}

// StartRun starts a run's span and returns the context to run the graph
// with: it carries the span, and a tool.Trace that records the run's tool
// calls. End the Run when the run ended.
func (t *Telemetry) StartRun(ctx context.Context, info RunInfo) (context.Context, *Run) {
	if t == nil {
		return ctx, nil
	}
	r := &Run{t: t, info: info, start: time.Now(), tasks: map[string]*taskSpan{}}
	if info.Parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, info.Parent)
	}
	ctx, r.span = t.tracer.Start(ctx, "invoke_agent "+info.GraphID,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(r.start),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(info.GraphID),
			semconv.GenAIAgentID(info.AssistantID),
			semconv.GenAIConversationID(info.ThreadID),
			attribute.String("weft.run.id", info.RunID),
			attribute.Int("weft.run.attempt", info.Attempt),
		))
	if info.User != "" {
		r.span.SetAttributes(semconv.UserID(info.User))
	}
	t.m.runsActive.Inc()
	ctx = context.WithValue(ctx, runKey{}, r)
	return tool.WithTrace(ctx, t.tools), r
}

// Observe reads an event of the run's stream: a task's start and its
// result make the node's span and its duration.
func (r *Run) Observe(ev graph.Event) {
	if r == nil || ev.Mode != graph.StreamTasks {
		return
	}
	if ts, ok := ev.TaskStart(); ok {
		r.taskStarted(ev.Namespace, ts)
	} else if tr, ok := ev.TaskResult(); ok {
		r.taskEnded(tr)
	}
}

func (r *Run) taskStarted(ns []string, ts graph.TaskStart) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	// A subgraph's task is the child of the task that runs the subgraph,
	// the last part of its namespace ("node:task_id").
	parent := r.span
	if len(ns) > 0 {
		if _, id, ok := strings.Cut(ns[len(ns)-1], ":"); ok {
			if p := r.tasks[id]; p != nil {
				parent = p.span
			}
		}
	}
	_, span := r.t.tracer.Start(trace.ContextWithSpan(context.Background(), parent), ts.Name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(now),
		trace.WithAttributes(
			attribute.String("weft.node.name", ts.Name),
			attribute.String("weft.task.id", ts.ID),
			attribute.Int("weft.step", ts.Step),
		))
	if len(ns) > 0 {
		span.SetAttributes(attribute.String("weft.namespace", strings.Join(ns, "|")))
	}
	r.tasks[ts.ID] = &taskSpan{span: span, node: ts.Name, start: now}
}

// Node outcomes, a label of weft_node_duration_seconds.
const (
	nodeSuccess     = "success"
	nodeError       = "error"
	nodeInterrupted = "interrupted"
	nodeCancelled   = "cancelled"
)

func (r *Run) taskEnded(tr graph.TaskResult) {
	now := time.Now()
	r.mu.Lock()
	ts := r.tasks[tr.ID]
	delete(r.tasks, tr.ID)
	r.mu.Unlock()
	if ts == nil {
		return
	}
	status := nodeSuccess
	switch {
	case tr.Error != "":
		status = nodeError
		ts.span.SetStatus(codes.Error, tr.Error)
	case len(tr.Interrupts) > 0:
		status = nodeInterrupted
		ts.span.SetAttributes(attribute.Bool("weft.interrupted", true))
	}
	r.endTask(ts, status, now)
}

func (r *Run) endTask(ts *taskSpan, status string, now time.Time) {
	endSpan(ts.span, now)
	r.t.m.nodeDuration.WithLabelValues(r.info.GraphID, ts.node, status).Observe(now.Sub(ts.start).Seconds())
}

// End records how the run ended: status is its final status (success,
// error, interrupted), err its failure. Tasks still open (a run cancelled
// mid-step) end as cancelled. Later calls do nothing.
func (r *Run) End(status string, err error) {
	if r == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	r.ended = true
	open := r.tasks
	r.tasks = nil
	r.mu.Unlock()
	for _, ts := range open {
		ts.span.SetStatus(codes.Error, "the run ended before the task")
		r.endTask(ts, nodeCancelled, now)
	}
	r.span.SetAttributes(attribute.String("weft.run.status", status))
	if err != nil && status == "error" {
		r.span.SetStatus(codes.Error, err.Error())
		r.span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
	endSpan(r.span, now)
	m := r.t.m
	m.runsActive.Dec()
	m.runs.WithLabelValues(r.info.GraphID, status).Inc()
	m.runDuration.WithLabelValues(r.info.GraphID, status).Observe(now.Sub(r.start).Seconds())
}

// spanContext returns ctx with the span of the task running on it as its
// span, when ctx is a node's context inside an observed run (and carries
// no span deeper than the run's): model and tool spans are then children
// of their node's span.
func spanContext(ctx context.Context) context.Context {
	r, _ := ctx.Value(runKey{}).(*Run)
	if r == nil {
		return ctx
	}
	if trace.SpanFromContext(ctx).SpanContext().SpanID() != r.span.SpanContext().SpanID() {
		return ctx
	}
	ti, ok := graph.CurrentTask(ctx)
	if !ok {
		return ctx
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ts := r.tasks[ti.TaskID]; ts != nil {
		return trace.ContextWithSpan(ctx, ts.span)
	}
	// A subgraph's task whose events the run does not stream: the nearest
	// enclosing task in its namespace.
	parts := strings.Split(ti.Namespace, "|")
	for i := len(parts) - 1; i >= 0; i-- {
		if _, id, ok := strings.Cut(parts[i], ":"); ok {
			if ts := r.tasks[id]; ts != nil {
				return trace.ContextWithSpan(ctx, ts.span)
			}
		}
	}
	return ctx
}

type toolStartKey struct{}

// toolTrace records tool calls as execute_tool spans and metrics.
func (t *Telemetry) toolTrace() *tool.Trace {
	return &tool.Trace{
		CallStart: func(ctx context.Context, c tool.CallInfo) context.Context {
			kv := []attribute.KeyValue{
				semconv.GenAIOperationNameExecuteTool,
				semconv.GenAIToolName(c.Name),
				semconv.GenAIToolTypeKey.String("function"),
			}
			if c.ID != "" {
				kv = append(kv, semconv.GenAIToolCallID(c.ID))
			}
			ctx, _ = t.tracer.Start(spanContext(ctx), "execute_tool "+c.Name,
				trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kv...))
			return context.WithValue(ctx, toolStartKey{}, time.Now())
		},
		CallDone: func(ctx context.Context, c tool.CallInfo, res tool.Result[any], err error) {
			var d time.Duration
			if start, ok := ctx.Value(toolStartKey{}).(time.Time); ok {
				d = time.Since(start)
			}
			span := trace.SpanFromContext(ctx)
			status := "success"
			if err != nil || !res.Success {
				status = "error"
				code := res.ErrorCode
				if code == "" {
					code = tool.CodeFailed
				}
				t.m.toolErrors.WithLabelValues(c.Name, code).Inc()
				// The code, not the message: a message may quote the
				// arguments.
				span.SetStatus(codes.Error, code)
				span.SetAttributes(semconv.ErrorTypeKey.String(code))
			}
			t.m.toolCalls.WithLabelValues(c.Name, status).Inc()
			t.m.toolDuration.WithLabelValues(c.Name).Observe(d.Seconds())
			span.End()
		},
	}
}

// endSpan ends span at now. A span that records nothing (no traces are
// exported) is ended without the timestamp option, which it would ignore
// and which costs allocations on every run.
func endSpan(span trace.Span, now time.Time) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.End(trace.WithTimestamp(now))
}
