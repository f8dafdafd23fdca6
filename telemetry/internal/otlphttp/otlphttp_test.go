package otlphttp

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		ok      bool
		wantErr string
	}{
		{name: "nothing set", env: nil},
		{name: "headers alone do not turn export on", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b"}},
		{
			name: "endpoint", ok: true,
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			want: Config{URL: "http://collector:4318/v1/traces", Timeout: DefaultTimeout},
		},
		{
			name: "traces endpoint wins, used as is", ok: true,
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces.example/api/otlp",
				"OTEL_EXPORTER_OTLP_HEADERS":         "x-key=a%20b, tenant=t1",
				"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":  "2500",
				"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
				"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/protobuf",
			},
			want: Config{URL: "https://traces.example/api/otlp", Headers: map[string]string{"x-key": "a b", "tenant": "t1"}, Timeout: 2500 * time.Millisecond, Gzip: true},
		},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc; weft exports OTLP over HTTP only"},
		{name: "json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, wantErr: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"},
		{name: "zipkin", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "OTEL_TRACES_EXPORTER=zipkin"},
		{name: "bad url", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, wantErr: "not an http:// or https:// URL"},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, wantErr: "OTEL_EXPORTER_OTLP_TIMEOUT=10s"},
		{name: "bad compression", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, wantErr: "expected gzip or none"},
		{name: "bad headers", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, wantErr: "OTEL_EXPORTER_OTLP_HEADERS"},
		{name: "missing CA", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, wantErr: "CA certificate"},
		{name: "cert without key", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem"}, wantErr: "set both or neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := FromEnv(env(tt.env))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv = %v; want ErrConfig saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.ok {
				t.Fatalf("FromEnv = %v, %v; want ok %v", ok, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// collector is an OTLP/HTTP endpoint that records what it receives.
type collector struct {
	mu       sync.Mutex
	requests []*http.Request
	data     []*tracepb.TracesData
	// fail answers the first requests with these statuses.
	fail []int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r)
	if len(c.fail) > 0 {
		st := c.fail[0]
		c.fail = c.fail[1:]
		http.Error(w, "try later", st)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var td tracepb.TracesData
	if err := proto.Unmarshal(b, &td); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	c.data = append(c.data, &td)
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			out[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var s []string
			for _, e := range v.ArrayValue.Values {
				s = append(s, e.GetStringValue())
			}
			out[kv.Key] = s
		}
	}
	return out
}

// Spans reach the endpoint as OTLP protobuf: names, parents, kinds,
// attributes of every type, events, status, the resource and the scope,
// with the configured headers, gzipped.
func TestExport(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	exp := New(Config{URL: srv.URL + "/v1/traces", Headers: map[string]string{"x-key": "k"}, Gzip: true})
	res := sdkresource.NewSchemaless(attribute.String("service.name", "weft-test"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	ctx, parent := tp.Tracer("weft", trace.WithInstrumentationVersion("v1")).Start(context.Background(), "invoke_agent echo")
	_, child := tp.Tracer("weft").Start(ctx, "chat gpt-test", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.Int64("gen_ai.usage.input_tokens", 12),
		attribute.Float64("gen_ai.request.temperature", 0.5),
		attribute.Bool("cached", false),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}),
	))
	child.AddEvent("first token")
	child.SetStatus(codes.Error, "boom")
	child.End()
	parent.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.data) != 2 {
		t.Fatalf("%d exports received; want 2 (one per span, synchronous)", len(col.data))
	}
	r := col.requests[0]
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("x-key") != "k" {
		t.Errorf("request %s %v", r.URL.Path, r.Header)
	}
	rs := col.data[0].ResourceSpans[0]
	if got := attrs(rs.Resource.Attributes)["service.name"]; got != "weft-test" {
		t.Errorf("resource service.name = %v", got)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "weft" {
		t.Errorf("scope %v", ss.Scope)
	}
	c := ss.Spans[0]
	p := col.data[1].ResourceSpans[0].ScopeSpans[0].Spans[0]
	if c.Name != "chat gpt-test" || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Name != "invoke_agent echo" {
		t.Errorf("spans %q %v, %q", c.Name, c.Kind, p.Name)
	}
	if string(c.ParentSpanId) != string(p.SpanId) || string(c.TraceId) != string(p.TraceId) || len(p.ParentSpanId) != 0 {
		t.Errorf("the child's parent is %x, the parent %x", c.ParentSpanId, p.SpanId)
	}
	want := map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": int64(12), "gen_ai.request.temperature": 0.5,
		"cached": false, "gen_ai.response.finish_reasons": []string{"stop"},
	}
	if diff := cmp.Diff(want, attrs(c.Attributes)); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	if c.Status.Code != tracepb.Status_STATUS_CODE_ERROR || c.Status.Message != "boom" {
		t.Errorf("status %v", c.Status)
	}
	if len(c.Events) != 1 || c.Events[0].Name != "first token" {
		t.Errorf("events %v", c.Events)
	}
	if c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("times %d..%d", c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
}

func oneSpan(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder{&got}))
	_, s := tp.Tracer("t").Start(context.Background(), "s")
	s.End()
	return got
}

type recorder struct{ got *[]sdktrace.ReadOnlySpan }

func (r recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r recorder) OnEnd(s sdktrace.ReadOnlySpan)                   { *r.got = append(*r.got, s) }
func (r recorder) Shutdown(context.Context) error                  { return nil }
func (r recorder) ForceFlush(context.Context) error                { return nil }

// A busy endpoint is retried; a refusal is not; shutdown stops exports.
func TestExportRetries(t *testing.T) {
	col := &collector{fail: []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	exp := New(Config{URL: srv.URL, Timeout: time.Minute})
	if err := exp.ExportSpans(context.Background(), oneSpan(t)); err != nil {
		t.Fatalf("export after two busy answers = %v", err)
	}
	if n := len(col.requests); n != 3 {
		t.Errorf("%d requests; want 3", n)
	}

	col.fail = []int{http.StatusBadRequest}
	if err := exp.ExportSpans(context.Background(), oneSpan(t)); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("export refused with 400 = %v; want the error", err)
	}
	if n := len(col.requests); n != 4 {
		t.Errorf("a 400 was retried: %d requests", n)
	}
	_ = exp.Shutdown(context.Background())
	if err := exp.ExportSpans(context.Background(), oneSpan(t)); !errors.Is(err, ErrShutdown) {
		t.Errorf("export after shutdown = %v", err)
	}
}

// An endpoint that stays busy is given up at the timeout.
func TestExportTimeout(t *testing.T) {
	col := &collector{fail: make([]int, 1000)}
	for i := range col.fail {
		col.fail[i] = http.StatusServiceUnavailable
	}
	srv := httptest.NewServer(col)
	defer srv.Close()
	exp := New(Config{URL: srv.URL, Timeout: 300 * time.Millisecond})
	err := exp.ExportSpans(context.Background(), oneSpan(t))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("export to an endpoint always busy = %v; want it to give up at the deadline", err)
	}
}
