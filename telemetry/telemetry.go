// Package telemetry measures and traces what weft runs: Prometheus
// metrics of HTTP requests, runs, nodes, model calls and tool calls, and
// OpenTelemetry traces of each run, node, model call and tool call,
// following the GenAI semantic conventions.
//
// One Telemetry serves a process. The server records requests and runs
// with it (server.Options.Telemetry) and serves its metrics at /metrics;
// the code that builds models wraps each with WrapModel, the one place
// that knows a model's provider; the tool calls inside a run are seen
// through the tool.Trace that StartRun puts on the run's context.
//
//	tel, err := telemetry.New(ctx, telemetry.Options{})
//	...
//	defer tel.Shutdown(context.Background())
//	model = tel.WrapModel(model, "openai:gpt-4o-mini")
//
// Traces are exported only when the standard variables say where:
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (OTLP
// over HTTP, http/protobuf; the other OTEL_EXPORTER_OTLP_* variables, the
// OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// apply). Without them no span is recorded at all. Span content is the
// shape of the work (names, models, token counts, statuses), never a
// prompt, a reply or a tool's arguments.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/weftlabs/weft/telemetry/internal/otlphttp"
	"github.com/weftlabs/weft/tool"
)

// ScopeName is the instrumentation scope of weft's spans.
const ScopeName = "github.com/weftlabs/weft"

// ErrConfig means the OTEL_* variables ask for what weft cannot do (OTLP
// over gRPC, say) or are malformed.
var ErrConfig = otlphttp.ErrConfig

// Options configure a Telemetry.
type Options struct {
	// Registry receives the metrics; nil makes one, with the Go runtime's
	// and the process's collectors too.
	Registry *prometheus.Registry
	// TracerProvider makes the spans; nil makes one from the environment:
	// OTLP over HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, otherwise none, and no
	// span is recorded.
	TracerProvider trace.TracerProvider
	// ServiceVersion is the service.version of the spans' resource.
	ServiceVersion string
	// Logger is told when spans cannot be exported; nil means
	// slog.Default().
	Logger *slog.Logger
	// Getenv reads the OTEL_EXPORTER_OTLP_* variables; nil means
	// os.Getenv.
	Getenv func(string) string
}

// Telemetry records metrics and traces. Its methods are safe for
// concurrent use; a nil *Telemetry records nothing.
type Telemetry struct {
	reg       *prometheus.Registry
	tracer    trace.Tracer
	exporting bool
	m         *metrics
	tools     *tool.Trace
	log       *slog.Logger
	shutdown  func(context.Context) error
}

// New returns a Telemetry. It fails, wrapping ErrConfig, when the OTEL_*
// variables ask for an export weft cannot make.
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	t := &Telemetry{reg: opts.Registry, log: opts.Logger, shutdown: func(context.Context) error { return nil }}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.reg == nil {
		t.reg = prometheus.NewRegistry()
		t.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m, err := newMetrics(t.reg)
	if err != nil {
		return nil, fmt.Errorf("telemetry: registering the metrics: %w", err)
	}
	t.m = m
	tp := opts.TracerProvider
	if tp == nil {
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		cfg, on, err := otlphttp.FromEnv(getenv)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		if on {
			res, err := sdkresource.New(ctx,
				sdkresource.WithAttributes(semconv.ServiceName("weft"), semconv.ServiceVersion(opts.ServiceVersion)),
				sdkresource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
			)
			if err != nil && res == nil {
				return nil, fmt.Errorf("telemetry: %w: the resource of the spans: %w", ErrConfig, err)
			}
			sdk := sdktrace.NewTracerProvider(
				sdktrace.WithBatcher(&loggingExporter{exp: otlphttp.New(cfg), log: t.log, url: cfg.URL}),
				sdktrace.WithResource(res),
			)
			tp, t.exporting, t.shutdown = sdk, true, sdk.Shutdown
			t.log.Info("telemetry: exporting traces with OTLP over HTTP", "url", cfg.URL)
		} else {
			tp = noop.NewTracerProvider()
		}
	} else {
		_, isNoop := tp.(noop.TracerProvider)
		t.exporting = !isNoop
	}
	t.tracer = tp.Tracer(ScopeName, trace.WithInstrumentationVersion(opts.ServiceVersion), trace.WithSchemaURL(semconv.SchemaURL))
	t.tools = t.toolTrace()
	return t, nil
}

// Tracing reports whether spans are recorded (a tracer provider was given
// or the environment names an OTLP endpoint).
func (t *Telemetry) Tracing() bool { return t != nil && t.exporting }

// Registry is where the metrics are registered: add a process's own
// collectors to it.
func (t *Telemetry) Registry() *prometheus.Registry { return t.reg }

// Handler serves the metrics in the Prometheus text format.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{t.log}, ErrorHandling: promhttp.ContinueOnError})
}

// Shutdown exports the spans not yet sent, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// ObserveRequest counts an answered HTTP request: route is the pattern
// that matched ("GET /threads/{thread_id}"), or "" when none did.
func (t *Telemetry) ObserveRequest(method, route string, status int, d time.Duration) {
	if t == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	t.m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	t.m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// StreamOpened counts an event stream open until the function it returns
// is called.
func (t *Telemetry) StreamOpened() (closed func()) {
	if t == nil {
		return func() {}
	}
	t.m.streams.Inc()
	var once sync.Once
	return func() { once.Do(t.m.streams.Dec) }
}

// Reasons a request is rejected, for Rejected.
const (
	RejectUnauthenticated = "unauthenticated"
	RejectRateLimited     = "rate_limited"
	RejectTooManyRuns     = "too_many_runs"
	RejectTooManyUserRuns = "too_many_user_runs"
)

// Rejected counts a request refused before it was handled.
func (t *Telemetry) Rejected(reason string) {
	if t != nil {
		t.m.rejected.WithLabelValues(reason).Inc()
	}
}

// RateLimitFallback counts a request whose rate limit was decided in
// this process because Redis could not be asked.
func (t *Telemetry) RateLimitFallback() {
	if t != nil {
		t.m.rateLimitFallbacks.Inc()
	}
}

// loggingExporter tells the log, rather than the OpenTelemetry global
// error handler, that spans could not be exported: once, then once a
// minute with the number of failed exports, and when exports work again.
type loggingExporter struct {
	exp *otlphttp.Exporter
	log *slog.Logger
	url string

	mu      sync.Mutex
	failing bool
	failed  int
	dropped int
	lastLog time.Time
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.exp.ExportSpans(ctx, spans)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		if e.failing {
			e.log.Info("telemetry: exporting spans works again", "url", e.url, "failed_exports", e.failed, "spans_lost", e.dropped)
		}
		e.failing, e.failed, e.dropped = false, 0, 0
		return nil
	}
	if errors.Is(err, otlphttp.ErrShutdown) {
		return err
	}
	e.failed++
	e.dropped += len(spans)
	if !e.failing || time.Since(e.lastLog) >= time.Minute {
		e.log.Warn("telemetry: spans could not be exported and are lost", "url", e.url, "err", err, "failed_exports", e.failed, "spans_lost", e.dropped)
		e.lastLog = time.Now()
	}
	e.failing = true
	// Told here; the SDK's own handler would print it again.
	return nil
}

func (e *loggingExporter) Shutdown(ctx context.Context) error { return e.exp.Shutdown(ctx) }

// slogPrinter adapts a slog.Logger to promhttp's error log.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("telemetry: serving metrics: " + fmt.Sprint(v...)) }
