package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/promtest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/telemetry"
	"github.com/weftlabs/weft/tool"
)

func newTelemetry(t *testing.T) (*telemetry.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tel, err := telemetry.New(context.Background(), telemetry.Options{Registry: prometheus.NewRegistry(), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	return tel, exp
}

// scrape reads /metrics by series.
func scrape(t *testing.T, tel *telemetry.Telemetry) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return promtest.Parse(t, rec.Body.Bytes())
}

type lookupIn struct {
	Query string `json:"query"`
}

func reply(text string, in, out int64, calls ...llm.ToolCall) llm.Message {
	m := llm.AI(text, calls...)
	m.Usage = &llm.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	return m
}

func spansByName(spans tracetest.SpanStubs) map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// runGraph streams g the way the server does, observing its events.
func runGraph(t *testing.T, tel *telemetry.Telemetry, g *graph.Graph, in graph.Update, info telemetry.RunInfo) error {
	t.Helper()
	ctx, run := tel.StartRun(context.Background(), info)
	var runErr error
	for ev, err := range g.Stream(ctx, in, &graph.RunOptions{StreamModes: append([]graph.StreamMode{graph.StreamValues}, telemetry.StreamModes...)}) {
		if err != nil {
			runErr = err
			break
		}
		run.Observe(ev)
	}
	status := "success"
	if runErr != nil {
		status = "error"
	}
	run.End(status, runErr)
	return runErr
}

// A ReAct run makes one trace: the run, its nodes as children, the model
// calls under the agent node and the tool call under the tools node, with
// the GenAI conventions' attributes; and the metrics count it all.
func TestRunTrace(t *testing.T) {
	tel, exp := newTelemetry(t)
	model := tel.WrapModel(scripted.New(
		reply("", 10, 3, llm.ToolCall{ID: "call_1", Name: "lookup", Args: json.RawMessage(`{"query":"go"}`)}),
		reply("Go is a language.", 20, 5),
	), "scripted:career.yaml")
	lookup := tool.New("lookup", "Looks things up.", func(_ context.Context, in lookupIn) (string, error) { return "a language", nil })
	reg, err := tool.NewRegistry(lookup)
	if err != nil {
		t.Fatal(err)
	}
	g, err := react.New(model, reg, react.Options{})
	if err != nil {
		t.Fatal(err)
	}
	info := telemetry.RunInfo{RunID: "run-1", ThreadID: "thread-1", AssistantID: "asst-1", GraphID: "career", User: "alice"}
	if err := runGraph(t, tel, g, react.Messages.Write(llm.Human("what is go?")), info); err != nil {
		t.Fatal(err)
	}
	spans := spansByName(exp.GetSpans())
	root := spans["invoke_agent career"]
	if len(root) != 1 {
		t.Fatalf("spans: %v; want one invoke_agent career", keys(spans))
	}
	r := root[0]
	wantRoot := map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "career", "gen_ai.agent.id": "asst-1",
		"gen_ai.conversation.id": "thread-1", "weft.run.id": "run-1", "weft.run.attempt": int64(0),
		"user.id": "alice", "weft.run.status": "success",
	}
	for k, v := range wantRoot {
		if got := attrMap(r.Attributes)[k]; got != v {
			t.Errorf("run span %s = %v; want %v", k, got, v)
		}
	}
	agents, tools := spans["agent"], spans["tools"]
	if len(agents) != 2 || len(tools) != 1 {
		t.Fatalf("node spans: %d agent, %d tools; want 2 and 1 (spans %v)", len(agents), len(tools), keys(spans))
	}
	isAgent := map[string]bool{}
	for _, s := range append(agents, tools...) {
		if s.Parent.SpanID() != r.SpanContext.SpanID() {
			t.Errorf("node span %s is not a child of the run's", s.Name)
		}
		isAgent[s.SpanContext.SpanID().String()] = s.Name == "agent"
	}
	chats := spans["chat career.yaml"]
	if len(chats) != 2 {
		t.Fatalf("model spans: %v; want two chat career.yaml", keys(spans))
	}
	wantTokens := [][2]int64{{10, 3}, {20, 5}}
	for i, c := range chats {
		if !isAgent[c.Parent.SpanID().String()] {
			t.Errorf("model span %d is not a child of an agent node span", i)
		}
		a := attrMap(c.Attributes)
		if a["gen_ai.operation.name"] != "chat" || a["gen_ai.provider.name"] != "weft.scripted" || a["gen_ai.request.model"] != "career.yaml" {
			t.Errorf("model span %d attributes %v", i, a)
		}
		if a["gen_ai.usage.input_tokens"] != wantTokens[i][0] || a["gen_ai.usage.output_tokens"] != wantTokens[i][1] {
			t.Errorf("model span %d tokens %v/%v; want %v", i, a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"], wantTokens[i])
		}
		if a["gen_ai.response.model"] != scripted.ModelName {
			t.Errorf("model span %d response model %v", i, a["gen_ai.response.model"])
		}
	}
	calls := spans["execute_tool lookup"]
	if len(calls) != 1 {
		t.Fatalf("tool spans: %v", keys(spans))
	}
	c := calls[0]
	if c.Parent.SpanID() != tools[0].SpanContext.SpanID() {
		t.Errorf("the tool span is not a child of the tools node span")
	}
	if a := attrMap(c.Attributes); a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "lookup" || a["gen_ai.tool.call.id"] != "call_1" {
		t.Errorf("tool span attributes %v", a)
	}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() != r.SpanContext.TraceID() {
			t.Errorf("span %s is in another trace", s.Name)
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "what is go") || strings.Contains(kv.Value.String(), "a language") {
				t.Errorf("span %s records content: %s=%s", s.Name, kv.Key, kv.Value.String())
			}
		}
	}

	m := scrape(t, tel)
	promtest.Expect(t, m, map[string]float64{
		`weft_runs_total{graph="career",status="success"}`: 1,
		`weft_runs_active`: 0,
		`weft_run_duration_seconds_count{graph="career",status="success"}`:                      1,
		`weft_node_duration_seconds_count{graph="career",node="agent",status="success"}`:        2,
		`weft_node_duration_seconds_count{graph="career",node="tools",status="success"}`:        1,
		`weft_model_calls_total{model="career.yaml",provider="weft.scripted",status="success"}`: 2,
		`weft_model_tokens_total{model="career.yaml",provider="weft.scripted",type="input"}`:    30,
		`weft_model_tokens_total{model="career.yaml",provider="weft.scripted",type="output"}`:   8,
		`weft_model_call_duration_seconds_count{model="career.yaml",provider="weft.scripted"}`:  2,
		`weft_tool_calls_total{status="success",tool="lookup"}`:                                 1,
		`weft_tool_call_duration_seconds_count{tool="lookup"}`:                                  1,
	})
}

func keys(m map[string][]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Failures are told: a failing tool, a failing model, a failing node and
// run end their spans in error and count as errors.
func TestFailures(t *testing.T) {
	tel, exp := newTelemetry(t)
	// The tool fails twice, the agent then gives up with its fallback.
	broken := tool.New("broken", "fails", func(context.Context, lookupIn) (string, error) {
		return "", errors.New("backend down")
	})
	reg, err := tool.NewRegistry(broken)
	if err != nil {
		t.Fatal(err)
	}
	model := tel.WrapModel(scripted.New(
		reply("", 1, 1, llm.ToolCall{ID: "a", Name: "broken", Args: json.RawMessage(`{"query":"x"}`)}),
		reply("", 1, 1, llm.ToolCall{ID: "b", Name: "broken", Args: json.RawMessage(`{"query":"y"}`)}),
	), "openai:gpt-test")
	g, err := react.New(model, reg, react.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runGraph(t, tel, g, react.Messages.Write(llm.Human("go")), telemetry.RunInfo{GraphID: "career"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range spansByName(exp.GetSpans())["execute_tool broken"] {
		if s.Status.Code != codes.Error || s.Status.Description != tool.CodeFailed {
			t.Errorf("failed tool span status %+v; want error %s", s.Status, tool.CodeFailed)
		}
	}

	// A node that fails fails the run.
	exp.Reset()
	b := graph.New(react.Messages)
	b.AddNode("explode", func(context.Context, graph.State) (graph.Update, error) { return graph.Update{}, errors.New("kaput") }, nil)
	b.AddEdge(graph.START, "explode")
	bad, err := b.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := runGraph(t, tel, bad, react.Messages.Write(llm.Human("go")), telemetry.RunInfo{GraphID: "bad"}); err == nil {
		t.Fatal("the failing graph succeeded")
	}
	spans := spansByName(exp.GetSpans())
	if n := spans["explode"]; len(n) != 1 || n[0].Status.Code != codes.Error || !strings.Contains(n[0].Status.Description, "kaput") {
		t.Errorf("failed node span %+v", n)
	}
	if r := spans["invoke_agent bad"]; len(r) != 1 || r[0].Status.Code != codes.Error {
		t.Errorf("failed run span %+v", r)
	}

	// A model that fails.
	failing := tel.WrapModel(scripted.NewScript(scripted.Options{}, scripted.Response{Err: errors.New("overloaded")}), "anthropic:claude-test")
	if _, err := failing.Generate(context.Background(), []llm.Message{llm.Human("hi")}); err == nil {
		t.Fatal("the failing model succeeded")
	}

	promtest.Expect(t, scrape(t, tel), map[string]float64{
		`weft_tool_calls_total{status="error",tool="broken"}`:                             2,
		`weft_tool_errors_total{code="tool_error",tool="broken"}`:                         2,
		`weft_runs_total{graph="bad",status="error"}`:                                     1,
		`weft_node_duration_seconds_count{graph="bad",node="explode",status="error"}`:     1,
		`weft_model_calls_total{model="claude-test",provider="anthropic",status="error"}`: 1,
		`weft_model_calls_total{model="gpt-test",provider="openai",status="success"}`:     2,
		`weft_model_tokens_total{model="gpt-test",provider="openai",type="input"}`:        2,
	})
}

// A run that ends while a task still runs (cancelled, shut down) ends the
// task's span as cancelled; events after the end are ignored.
func TestRunEndsOpenTasks(t *testing.T) {
	tel, exp := newTelemetry(t)
	_, run := tel.StartRun(context.Background(), telemetry.RunInfo{GraphID: "slow"})
	run.Observe(graph.Event{Mode: graph.StreamTasks, Data: graph.TaskStart{ID: "t1", Name: "wait"}})
	run.End("interrupted", context.Canceled)
	run.End("success", nil) // once only
	run.Observe(graph.Event{Mode: graph.StreamTasks, Data: graph.TaskStart{ID: "t2", Name: "late"}})
	spans := spansByName(exp.GetSpans())
	if w := spans["wait"]; len(w) != 1 || w[0].Status.Code != codes.Error {
		t.Errorf("open task span %+v; want ended in error", w)
	}
	if len(spans["late"]) != 0 || len(spans["invoke_agent slow"]) != 1 {
		t.Errorf("spans %v", keys(spans))
	}
	promtest.Expect(t, scrape(t, tel), map[string]float64{
		`weft_runs_total{graph="slow",status="interrupted"}`:                            1,
		`weft_node_duration_seconds_count{graph="slow",node="wait",status="cancelled"}`: 1,
	})
}

// A nil Telemetry records nothing and never fails.
func TestNilTelemetry(t *testing.T) {
	var tel *telemetry.Telemetry
	ctx, run := tel.StartRun(context.Background(), telemetry.RunInfo{})
	run.Observe(graph.Event{Mode: graph.StreamTasks, Data: graph.TaskStart{ID: "t"}})
	run.End("success", nil)
	m := scripted.New(llm.AI("hi"))
	if tel.WrapModel(m, "x") != llm.ChatModel(m) {
		t.Error("a nil Telemetry wraps models")
	}
	tel.ObserveRequest("GET", "/ok", 200, time.Millisecond)
	tel.StreamOpened()()
	tel.Rejected(telemetry.RejectRateLimited)
	if ctx == nil || tel.Tracing() || tel.Shutdown(context.Background()) != nil {
		t.Error("nil Telemetry")
	}
}

func TestHTTPMetrics(t *testing.T) {
	tel, _ := newTelemetry(t)
	tel.ObserveRequest("POST", "POST /threads/{thread_id}/runs/stream", 200, time.Second)
	tel.ObserveRequest("GET", "", 404, time.Millisecond)
	closeA := tel.StreamOpened()
	closeB := tel.StreamOpened()
	closeB()
	closeB() // once only
	tel.Rejected(telemetry.RejectUnauthenticated)
	tel.RateLimitFallback()
	promtest.Expect(t, scrape(t, tel), map[string]float64{
		`weft_http_requests_total{method="POST",route="POST /threads/{thread_id}/runs/stream",status="200"}`:    1,
		`weft_http_requests_total{method="GET",route="unmatched",status="404"}`:                                 1,
		`weft_http_request_duration_seconds_count{method="POST",route="POST /threads/{thread_id}/runs/stream"}`: 1,
		`weft_http_streams_active`:                               1,
		`weft_requests_rejected_total{reason="unauthenticated"}`: 1,
		`weft_ratelimit_fallbacks_total`:                         1,
	})
	closeA()
	promtest.Expect(t, scrape(t, tel), map[string]float64{`weft_http_streams_active`: 0})
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach the collector; an
// export that fails is logged, not lost silently; without it nothing is
// recorded; gRPC is refused clearly.
func TestExportFromEnvironment(t *testing.T) {
	var mu sync.Mutex
	var got int
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/v1/traces" && len(b) > 0 {
			got++
		}
	}))
	defer col.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL}
	var logs strings.Builder
	tel, err := telemetry.New(context.Background(), telemetry.Options{
		Registry: prometheus.NewRegistry(), Getenv: func(k string) string { return env[k] },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Tracing() {
		t.Fatal("an endpoint is set, yet no tracing")
	}
	_, run := tel.StartRun(context.Background(), telemetry.RunInfo{GraphID: "echo"})
	run.End("success", nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if got != 1 {
		t.Errorf("%d exports reached the collector; want 1", got)
	}
	mu.Unlock()

	// A collector that is gone: the loss is logged.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = dead.URL
	env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "200"
	tel, err = telemetry.New(context.Background(), telemetry.Options{
		Registry: prometheus.NewRegistry(), Getenv: func(k string) string { return env[k] },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, run = tel.StartRun(context.Background(), telemetry.RunInfo{GraphID: "echo"})
	run.End("success", nil)
	_ = tel.Shutdown(context.Background())
	if !strings.Contains(logs.String(), "spans could not be exported") {
		t.Errorf("a failed export is not logged:\n%s", logs.String())
	}

	tel, err = telemetry.New(context.Background(), telemetry.Options{Registry: prometheus.NewRegistry(), Getenv: func(string) string { return "" }})
	if err != nil || tel.Tracing() {
		t.Errorf("no endpoint: Tracing() = %v, %v; want off", tel.Tracing(), err)
	}
	grpc := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
	if _, err := telemetry.New(context.Background(), telemetry.Options{Getenv: func(k string) string { return grpc[k] }}); !errors.Is(err, telemetry.ErrConfig) {
		t.Errorf("gRPC = %v; want ErrConfig", err)
	}
}
