package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type event struct{ Name, Data, ID string }

func readAll(t *testing.T, in string, size int) ([]event, error) {
	t.Helper()
	s := newSSEReader(strings.NewReader(in), size)
	var got []event
	for {
		err := s.next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, event{string(s.event), string(s.data), string(s.id)})
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		in   string
		want []event
	}{
		{
			name: "pretty-printed data over many lines, id after the data (the reference server)",
			in:   "event: metadata\ndata: {\ndata:   \"run_id\": \"r\"\ndata: }\nid: 0\n\nevent: values\ndata: {}\nid: 1\n\n",
			want: []event{{"metadata", "{\n  \"run_id\": \"r\"\n}", "0"}, {"values", "{}", "1"}},
		},
		{
			name: "CRLF line endings, comments, no space after the colon",
			in:   ": keep-alive\r\n\r\nevent:custom\r\ndata:{\"a\":1}\r\n\r\n",
			want: []event{{"custom", `{"a":1}`, ""}},
		},
		{
			name: "the last event without a blank line after it",
			in:   "event: values\ndata: 1\n\nevent: end\ndata: 2",
			want: []event{{"values", "1", ""}, {"end", "2", ""}},
		},
		{
			name: "a line longer than the read buffer",
			in:   "event: values\ndata: " + long + "\n\n",
			want: []event{{"values", long, ""}},
		},
		{
			name: "a bare id and blank lines are not events",
			in:   "\n\nid: 7\n\nevent: values\ndata: {}\n\n",
			want: []event{{"values", "{}", "7"}},
		},
		{name: "empty", in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in, 16)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeServer answers POST /threads and streams echo (as the reference
// server writes it: pretty-printed JSON, id lines) or holds a slow run
// open until the client leaves.
type fakeServer struct {
	breakEcho string // "", "error-event", "wrong-values", "500", "truncated" (the connection ends mid-stream) or "hang" (the stream stops until the client leaves)
	framing   string // "" (chunked, flushed per event), "length" (Content-Length) or "close" (Connection: close)

	threads     atomic.Int64
	disconnects atomic.Int64
	mu          sync.Mutex
	bodies      []map[string]any
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.framing == "close" {
		w.Header().Set("Connection", "close")
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/threads":
		n := f.threads.Add(1)
		fmt.Fprintf(w, `{"thread_id":"t%d","status":"idle","metadata":{"load":true}}`, n)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/runs/stream"):
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		if f.breakEcho == "500" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		var out io.Writer = w
		if f.framing == "length" {
			var buf bytes.Buffer
			out = &buf
			defer func() {
				w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
				w.Write(buf.Bytes())
			}()
		}
		id := 0
		send := func(name string, data any) {
			b, _ := json.MarshalIndent(data, "", "  ")
			fmt.Fprintf(out, "event: %s\n", name)
			for _, line := range bytes.Split(b, []byte("\n")) {
				fmt.Fprintf(out, "data: %s\n", line)
			}
			fmt.Fprintf(out, "id: %d\n\n", id)
			id++
			if out == w {
				w.(http.Flusher).Flush()
			}
		}
		send("metadata", map[string]any{"run_id": "r", "attempt": 1})
		if body["assistant_id"] == "slow" {
			send("values", body["input"])
			<-r.Context().Done()
			f.disconnects.Add(1)
			return
		}
		text := body["input"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"].(string)
		human := map[string]any{"type": "human", "content": text, "id": "h"}
		send("values", map[string]any{"messages": []any{human}})
		switch f.breakEcho {
		case "truncated":
			panic(http.ErrAbortHandler) // the connection ends without the chunked stream's end
		case "hang":
			<-r.Context().Done()
			return
		}
		for _, tok := range strings.SplitAfter(text, " ") {
			send("messages", []any{map[string]any{"type": "ai", "content": tok, "id": "run-1"}, map[string]any{"langgraph_node": "echo"}})
		}
		switch f.breakEcho {
		case "error-event":
			send("error", map[string]any{"error": "Error", "message": "node failed"})
		case "wrong-values":
			send("values", map[string]any{"messages": []any{human, map[string]any{"type": "ai", "content": "something else"}}})
		default:
			send("values", map[string]any{"messages": []any{human, map[string]any{"type": "ai", "content": text, "id": "run-1"}}})
		}
	default:
		http.NotFound(w, r)
	}
}

func runJSON[T any](t *testing.T, args ...string) (T, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	var res T
	if code != 2 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("output %q is not one JSON object: %v (stderr %s)", out.String(), err, errOut.String())
		}
	}
	return res, code, errOut.String()
}

func TestRunsAgainstAGoodServer(t *testing.T) {
	// Each client keeps one connection alive from run to run, unless the
	// server closes it after each answer.
	for _, tt := range []struct {
		framing string
		conns   int64
	}{{"", 3}, {"length", 3}, {"close", 12}} {
		t.Run("framing="+tt.framing, func(t *testing.T) {
			f := &fakeServer{framing: tt.framing}
			srv := httptest.NewUnstartedServer(f)
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			res, code, stderr := runJSON[loadResult](t, "--url", srv.URL, "--clients", "3", "--runs-per-client", "2", "--pid", strconv.Itoa(os.Getpid()))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if res.Runs != 6 || res.OK != 6 || res.Errors != 0 || res.EventsPerRun == nil || *res.EventsPerRun != 11 {
				t.Errorf("result %+v: want 6 runs, 6 ok, 0 errors, 11 events per run (8 words)", res)
			}
			if res.P50MS == nil || res.P99MS == nil || res.MaxMS == nil || *res.P50MS > *res.MaxMS {
				t.Errorf("latencies p50 %v p99 %v max %v: want all set, p50 <= max", res.P50MS, res.P99MS, res.MaxMS)
			}
			if res.ServerPIDs < 1 || res.RSSMBServerBefore == nil || res.RSSMBServerPeak == nil || *res.RSSMBServerPeak <= 0 {
				t.Errorf("RSS of the test's own process group: pids %d, before %v, peak %v", res.ServerPIDs, res.RSSMBServerBefore, res.RSSMBServerPeak)
			}
			if f.threads.Load() != 6 {
				t.Errorf("threads created: %d, want one per run", f.threads.Load())
			}
			if got := conns.Load(); got != tt.conns {
				t.Errorf("connections: %d, want %d", got, tt.conns)
			}
			want := map[string]any{
				"assistant_id": "echo",
				"input":        map[string]any{"messages": []any{map[string]any{"role": "user", "content": "w0 w1 w2 w3 w4 w5 w6 w7"}}},
				"stream_mode":  []any{"values", "messages-tuple"},
			}
			if diff := cmp.Diff(want, f.bodies[0]); diff != "" {
				t.Errorf("stream request (-want +got):\n%s", diff)
			}
		})
	}
	// Without --pid there is no server to measure: nulls, as load.mjs prints.
	srv := httptest.NewServer(&fakeServer{})
	defer srv.Close()
	res, _, _ := runJSON[loadResult](t, "--url", srv.URL, "--clients", "1")
	if res.RSSMBServerBefore != nil || res.RSSMBServerPeak != nil || res.ServerPIDs != 0 {
		t.Errorf("without --pid: before %v, peak %v, pids %d; want nulls", res.RSSMBServerBefore, res.RSSMBServerPeak, res.ServerPIDs)
	}
}

func TestRunsCountFailures(t *testing.T) {
	for _, brk := range []struct{ mode, sample string }{
		{"error-event", "stream error event"},
		{"wrong-values", "unexpected final values"},
		{"500", "HTTP 500"},
		{"truncated", "after 2 events: the connection ended"},
	} {
		t.Run(brk.mode, func(t *testing.T) {
			srv := httptest.NewServer(&fakeServer{breakEcho: brk.mode})
			defer srv.Close()
			res, code, _ := runJSON[loadResult](t, "--url", srv.URL, "--clients", "2", "--runs-per-client", "2")
			if code != 1 || res.OK != 0 || res.Errors != 4 {
				t.Errorf("exit %d, ok %d, errors %d; want 1, 0, 4", code, res.OK, res.Errors)
			}
			if len(res.ErrorSamples) != 1 || !strings.Contains(res.ErrorSamples[0], brk.sample) {
				t.Errorf("error samples %q; want one naming %q", res.ErrorSamples, brk.sample)
			}
		})
	}
}

// TestRunsTimeout: a run the server does not finish fails at --timeout.
func TestRunsTimeout(t *testing.T) {
	srv := httptest.NewServer(&fakeServer{breakEcho: "hang"})
	defer srv.Close()
	res, code, _ := runJSON[loadResult](t, "--url", srv.URL, "--clients", "2", "--timeout", "300ms")
	if code != 1 || res.OK != 0 || res.Errors != 2 {
		t.Errorf("exit %d, ok %d, errors %d; want 1, 0, 2", code, res.OK, res.Errors)
	}
	for _, e := range res.ErrorSamples {
		if !strings.Contains(e, "the run took longer than --timeout 300ms: reading the stream after 2 events") {
			t.Errorf("error sample %q; want it about the timeout", e)
		}
	}
}

func TestOpenStreams(t *testing.T) {
	f := &fakeServer{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	res, code, stderr := runJSON[openResult](t, "--url", srv.URL, "--open-streams", "40", "--parallel", "8", "--hold", "0s", "--pid", strconv.Itoa(os.Getpid()))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if res.Streams != 40 || res.Opened != 40 || res.Running != 40 || res.Errors != 0 {
		t.Errorf("result %+v: want 40 streams open and running, no errors", res)
	}
	if res.RSSMBServerOpen == nil || res.GeneratorRSSMB == nil {
		t.Errorf("RSS while open %v, generator %v: want both", res.RSSMBServerOpen, res.GeneratorRSSMB)
	}
	if got := f.disconnects.Load(); got != 40 {
		t.Errorf("the server saw %d streams closed, want 40", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.bodies[0]; b["assistant_id"] != "slow" || b["on_disconnect"] != "cancel" {
		t.Errorf("stream request %v: want the slow graph, on_disconnect cancel", b)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--clients", "0"},
		{"--runs-per-client", "0"},
		{"--url", "127.0.0.1:2024"},
		{"--url", "http://"},
		{"--url", "http://[::1"},
		{"--pid", "abc"},
		{"--source-addrs", "not-an-ip"},
		{"--open-streams", "100000000"},
		{"--nope"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("run %v = %d; want 2", args, code)
		}
	}
}

// BenchmarkSSEReader reads one echo stream as the reference server writes
// it (8 words: 11 events of pretty-printed JSON): the generator's cost per
// run, which must stay far below a server's.
func BenchmarkSSEReader(b *testing.B) {
	f := &fakeServer{}
	rec := httptest.NewRecorder()
	body := `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"w0 w1 w2 w3 w4 w5 w6 w7"}]},"stream_mode":["values","messages-tuple"]}`
	f.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/threads/t/runs/stream", strings.NewReader(body)))
	stream := rec.Body.Bytes()
	s := newSSEReader(nil, 16<<10)
	r := bytes.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		s.reset(r)
		n := 0
		for s.next() == nil {
			n++
		}
		if n != 11 {
			b.Fatalf("%d events, want 11", n)
		}
	}
}
