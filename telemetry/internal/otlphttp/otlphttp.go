// Package otlphttp exports spans with OTLP over HTTP (http/protobuf),
// configured by the standard OTEL_EXPORTER_OTLP_* environment variables.
//
// It exists so that weft does not link gRPC: the OpenTelemetry project's
// otlptracehttp exporter imports the OTLP collector package, which brings
// gRPC, grpc-gateway and genproto, about 47 MB of binary, for an exporter
// that speaks plain HTTP. This one marshals the OTLP messages (the
// protobuf types of go.opentelemetry.io/proto/otlp, which import no gRPC)
// and posts them.
package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// DefaultTimeout bounds one export, as the OTLP specification's default.
const DefaultTimeout = 10 * time.Second

// ErrConfig means the OTEL_* variables ask for what this exporter cannot
// do, or are malformed.
var ErrConfig = errors.New("otlp: invalid configuration")

// Config is where and how spans are sent.
type Config struct {
	// URL is the traces endpoint, e.g. http://collector:4318/v1/traces.
	URL string
	// Headers are sent with every export (an API key, say).
	Headers map[string]string
	// Timeout bounds one export, retries included.
	Timeout time.Duration
	// Gzip compresses the body.
	Gzip bool
	// TLS is the client's TLS configuration for https URLs; nil uses the
	// system's roots.
	TLS *tls.Config
}

// FromEnv reads the configuration from the standard variables. ok is false
// when export is off: no OTEL_EXPORTER_OTLP_ENDPOINT nor
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_TRACES_EXPORTER=none, or
// OTEL_SDK_DISABLED=true. A protocol other than http/protobuf, an exporter
// other than otlp, or a malformed value is an error wrapping ErrConfig.
func FromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return Config{}, false, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return Config{}, false, nil
	case "", "otlp":
	default:
		return Config{}, false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%s; weft exports traces with otlp (or none)", ErrConfig, e)
	}
	// A signal-specific variable wins over the general one.
	get := func(name string) (string, string) {
		specific := "OTEL_EXPORTER_OTLP_TRACES_" + name
		if v := strings.TrimSpace(getenv(specific)); v != "" {
			return v, specific
		}
		general := "OTEL_EXPORTER_OTLP_" + name
		return strings.TrimSpace(getenv(general)), general
	}
	if v, name := get("PROTOCOL"); v != "" && v != "http/protobuf" {
		return Config{}, false, fmt.Errorf("%w: %s=%s; weft exports OTLP over HTTP only: set it to http/protobuf, and the endpoint to the collector's HTTP port (4318)", ErrConfig, name, v)
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		cfg.URL = v
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		cfg.URL = strings.TrimSuffix(v, "/") + "/v1/traces"
	} else {
		return Config{}, false, nil
	}
	u, perr := url.Parse(cfg.URL)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, false, fmt.Errorf("%w: the OTLP endpoint %q is not an http:// or https:// URL", ErrConfig, cfg.URL)
	}
	if v, name := get("HEADERS"); v != "" {
		if cfg.Headers, err = parseHeaders(v); err != nil {
			return Config{}, false, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
	}
	cfg.Timeout = DefaultTimeout
	if v, name := get("TIMEOUT"); v != "" {
		ms, perr := strconv.Atoi(v)
		if perr != nil || ms <= 0 {
			return Config{}, false, fmt.Errorf("%w: %s=%s; expected a positive number of milliseconds", ErrConfig, name, v)
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		cfg.Gzip = true
	default:
		return Config{}, false, fmt.Errorf("%w: %s=%s; expected gzip or none", ErrConfig, name, v)
	}
	ca, _ := get("CERTIFICATE")
	cert, certName := get("CLIENT_CERTIFICATE")
	key, _ := get("CLIENT_KEY")
	if ca != "" || cert != "" || key != "" {
		t := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca != "" {
			pem, rerr := os.ReadFile(ca)
			if rerr != nil {
				return Config{}, false, fmt.Errorf("%w: the OTLP CA certificate: %w", ErrConfig, rerr)
			}
			t.RootCAs = x509.NewCertPool()
			if !t.RootCAs.AppendCertsFromPEM(pem) {
				return Config{}, false, fmt.Errorf("%w: the OTLP CA certificate %s holds no PEM certificate", ErrConfig, ca)
			}
		}
		if (cert == "") != (key == "") {
			return Config{}, false, fmt.Errorf("%w: %s and the client key go together; set both or neither", ErrConfig, certName)
		}
		if cert != "" {
			pair, lerr := tls.LoadX509KeyPair(cert, key)
			if lerr != nil {
				return Config{}, false, fmt.Errorf("%w: the OTLP client certificate: %w", ErrConfig, lerr)
			}
			t.Certificates = []tls.Certificate{pair}
		}
		cfg.TLS = t
	}
	return cfg, true, nil
}

// parseHeaders reads "k1=v1,k2=v2" with URL-encoded values, the
// specification's form.
func parseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %d is not key=value", len(out)+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %s is not URL-encoded: %w", k, err)
		}
		out[k] = dv
	}
	return out, nil
}

// Exporter posts spans to an OTLP/HTTP endpoint. It implements
// sdktrace.SpanExporter.
type Exporter struct {
	cfg    Config
	client *http.Client

	mu     sync.Mutex
	closed bool
}

// New returns an exporter sending to cfg.URL.
func New(cfg Config) *Exporter {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	return &Exporter{cfg: cfg, client: &http.Client{Transport: tr}}
}

// ErrShutdown is returned by an export after Shutdown.
var ErrShutdown = errors.New("otlp: exporter shut down")

// ExportSpans implements sdktrace.SpanExporter: it sends spans in one
// request, retrying what the endpoint says to retry (429, 502, 503, 504,
// and connection failures) within the timeout.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return ErrShutdown
	}
	if len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(Marshal(spans))
	if err != nil {
		return fmt.Errorf("otlp: encoding %d spans: %w", len(spans), err)
	}
	encoding := ""
	if e.cfg.Gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("otlp: compressing: %w", err)
		}
		body, encoding = b.Bytes(), "gzip"
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	delay := 100 * time.Millisecond
	for {
		retry, wait, err := e.post(ctx, body, encoding)
		if err == nil || !retry {
			return err
		}
		if wait <= 0 {
			wait = delay
			delay = min(delay*2, 5*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// post sends one request; retry says whether a failure may succeed later,
// wait how long the endpoint asked to wait (0: not said).
func (e *Exporter) post(ctx context.Context, body []byte, encoding string) (retry bool, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("otlp: %w", err)
	}
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("otlp: sending spans to %s: %w", e.cfg.URL, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp: %s answered %s: %s", e.cfg.URL, resp.Status, bytes.TrimSpace(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return true, wait, err
	}
	return false, 0, err
}

// Shutdown implements sdktrace.SpanExporter: later exports fail.
func (e *Exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.client.CloseIdleConnections()
	return nil
}

// Marshal converts spans to an OTLP TracesData, which has the wire form
// of the collector's ExportTraceServiceRequest: spans grouped by resource,
// then by instrumentation scope, in the order they came.
func Marshal(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	out := &tracepb.TracesData{}
	byRes := map[*sdkresource.Resource]*tracepb.ResourceSpans{}
	type scopeKey struct {
		res                *sdkresource.Resource
		name, version, url string
	}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rs := byRes[res]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}}
			if res != nil {
				rs.Resource.Attributes = keyValues(res.Attributes())
				rs.SchemaUrl = res.SchemaURL()
			}
			byRes[res] = rs
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		is := s.InstrumentationScope()
		k := scopeKey{res, is.Name, is.Version, is.SchemaURL}
		ss := byScope[k]
		if ss == nil {
			ss = &tracepb.ScopeSpans{
				Scope:     &commonpb.InstrumentationScope{Name: is.Name, Version: is.Version, Attributes: keyValues(is.Attributes.ToSlice())},
				SchemaUrl: is.SchemaURL,
			}
			byScope[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return out
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK),
		Name:                   s.Name(),
		Kind:                   spanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(max(s.DroppedAttributes(), 0)),
		DroppedEventsCount:     uint32(max(s.DroppedEvents(), 0)),
		DroppedLinksCount:      uint32(max(s.DroppedLinks(), 0)),
		Status:                 status(s.Status()),
	}
	if parent := s.Parent(); parent.SpanID().IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
		if parent.IsRemote() {
			p.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano: unixNano(ev.Time), Name: ev.Name,
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: uint32(max(ev.DroppedAttributeCount, 0)),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: uint32(max(l.DroppedAttributeCount, 0)),
			Flags: uint32(l.SpanContext.TraceFlags()),
		})
	}
	return p
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(t.UnixNano(), 0))
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func status(s sdktrace.Status) *tracepb.Status {
	out := &tracepb.Status{Message: s.Description}
	switch s.Code {
	case codes.Ok:
		out.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		out.Code = tracepb.Status_STATUS_CODE_ERROR
	default:
		out.Code = tracepb.Status_STATUS_CODE_UNSET
	}
	return out
}

func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(a.Key), Value: anyValue(a.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
		})
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), func(i int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
		})
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
		})
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), func(s string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
		})
	}
	// A type this exporter does not know yet travels as its text.
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

func array[T any](vs []T, f func(T) *commonpb.AnyValue) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = f(v)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
