package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus series weft exports. Labels name only what
// the code decides (routes, graphs, nodes, models, tools, statuses), never
// users or ids, so the number of series stays bounded.
type metrics struct {
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	streams      prometheus.Gauge

	runs        *prometheus.CounterVec
	runsActive  prometheus.Gauge
	runDuration *prometheus.HistogramVec
	rejected    *prometheus.CounterVec

	nodeDuration *prometheus.HistogramVec

	modelCalls    *prometheus.CounterVec
	modelTokens   *prometheus.CounterVec
	modelDuration *prometheus.HistogramVec

	toolCalls    *prometheus.CounterVec
	toolErrors   *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec

	rateLimitFallbacks prometheus.Counter
}

// Buckets, in seconds: requests and tool calls are quick, runs and model
// calls can take minutes.
var (
	fastBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	slowBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_http_request_duration_seconds", Buckets: fastBuckets,
			Help: "Time to answer an HTTP request, by method and route pattern (a stream counts until it ends).",
		}, []string{"method", "route"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "weft_http_streams_active",
			Help: "Server-sent event streams open now.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_runs_total",
			Help: "Runs ended, by graph and final status (success, error, interrupted).",
		}, []string{"graph", "status"}),
		runsActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "weft_runs_active",
			Help: "Runs executing now in this process.",
		}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_run_duration_seconds", Buckets: slowBuckets,
			Help: "Time a run executed, from its start to its end, by graph and final status.",
		}, []string{"graph", "status"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_requests_rejected_total",
			Help: "Requests refused before they were handled, by reason (unauthenticated, rate_limited, too_many_runs).",
		}, []string{"reason"}),
		nodeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_node_duration_seconds", Buckets: slowBuckets,
			Help: "Time a node's task ran, by graph, node and outcome (success, error, interrupted).",
		}, []string{"graph", "node", "status"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_model_calls_total",
			Help: "Model calls, by provider, model and outcome (success, error).",
		}, []string{"provider", "model", "status"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_model_tokens_total",
			Help: "Tokens the models read (input) and wrote (output), as the providers report them.",
		}, []string{"provider", "model", "type"}),
		modelDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_model_call_duration_seconds", Buckets: slowBuckets,
			Help: "Time a model call took, to the end of its stream.",
		}, []string{"provider", "model"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tool_calls_total",
			Help: "Tool calls, by tool and outcome (success, error).",
		}, []string{"tool", "status"}),
		toolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tool_errors_total",
			Help: "Tool calls that failed, by tool and error code (invalid_arguments, unknown_tool, timeout, panic, tool_error or the tool's own).",
		}, []string{"tool", "code"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_tool_call_duration_seconds", Buckets: fastBuckets,
			Help: "Time a tool call took.",
		}, []string{"tool"}),
		rateLimitFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_ratelimit_fallbacks_total",
			Help: "Requests whose rate limit was decided in this process because Redis could not be asked.",
		}),
	}
	for _, c := range []prometheus.Collector{
		m.httpRequests, m.httpDuration, m.streams,
		m.runs, m.runsActive, m.runDuration, m.rejected,
		m.nodeDuration,
		m.modelCalls, m.modelTokens, m.modelDuration,
		m.toolCalls, m.toolErrors, m.toolDuration,
		m.rateLimitFallbacks,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
