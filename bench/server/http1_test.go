package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// pipeServer answers the h1Client's requests over net.Pipe connections
// from a script: answers[i] is the raw answer to the i-th request (counted
// over all connections), written in pieces split at "|", each one Write,
// so that the client's reads see those pieces one at a time; a piece
// "<close>" closes the connection there. A request past the script is
// answered by closing the connection.
type pipeServer struct {
	answers []string

	mu       sync.Mutex
	next     int
	requests []*http.Request
	bodies   []string
	wg       sync.WaitGroup
}

func (s *pipeServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	s.wg.Go(func() { s.serve(server) })
	return client, nil
}

func (s *pipeServer) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		s.mu.Lock()
		i := s.next
		s.next++
		s.requests = append(s.requests, req)
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
		if i >= len(s.answers) {
			return
		}
		for piece := range strings.SplitSeq(s.answers[i], "|") {
			if piece == "<close>" {
				return
			}
			if _, err := conn.Write([]byte(piece)); err != nil {
				return
			}
		}
	}
}

// do sends one request and reads its whole answer.
func do(c *h1Client, body string) (int, string, error) {
	status, err := c.post([]byte("/base/threads"), []byte(body), "text/event-stream")
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		c.close()
		return status, string(b), err
	}
	c.finish()
	return status, string(b), nil
}

func TestH1Client(t *testing.T) {
	const (
		nodeHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n"
		chunked  = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		ok2      = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	)
	type want struct {
		status int
		body   string
		err    string // a part of the error, if one is expected
	}
	tests := []struct {
		name    string
		answers []string
		want    []want // one per request
		dials   int
	}{
		{
			name: "chunked and kept alive, as Node writes it, split anywhere",
			answers: []string{
				nodeHead + "|5\r\nhel|lo\r\n|6;ext=1\r\n world\r|\n0\r\n|X-Trailer: t\r\n\r\n",
				nodeHead + "5\r\nhello\r\n0\r\n\r\n",
			},
			want:  []want{{200, "hello world", ""}, {200, "hello", ""}},
			dials: 1,
		},
		{
			name:    "Content-Length, kept alive",
			answers: []string{"HTTP/1.1 201 Created\r\ncontent-length:  5 \r\n\r\nhel|lo", ok2},
			want:    []want{{201, "hello", ""}, {200, "ok", ""}},
			dials:   1,
		},
		{
			name:    "Connection: close",
			answers: []string{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok|<close>", ok2},
			want:    []want{{200, "ok", ""}, {200, "ok", ""}},
			dials:   2,
		},
		{
			name:    "HTTP/1.0, the body ends with the connection",
			answers: []string{"HTTP/1.0 200 OK\r\n\r\nuntil |the end|<close>", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", ok2},
			want:    []want{{200, "until the end", ""}, {200, "ok", ""}, {200, "ok", ""}},
			dials:   2,
		},
		{
			name:    "interim answers and an answer without a body",
			answers: []string{"HTTP/1.1 100 Continue\r\n\r\n|HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n" + ok2, "HTTP/1.1 204 No Content\r\n\r\n", ok2},
			want:    []want{{200, "ok", ""}, {204, "", ""}, {200, "ok", ""}},
			dials:   1,
		},
		{
			name:    "both framings: chunked is read, the connection is not reused",
			answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", ok2},
			want:    []want{{200, "ok", ""}, {200, "ok", ""}},
			dials:   2,
		},
		{
			name:    "a connection closed without an answer is an error, and the request is not sent again",
			answers: []string{ok2, "<close>", ok2},
			want:    []want{{200, "ok", ""}, {err: "closed the connection without answering"}, {200, "ok", ""}},
			dials:   2,
		},
		{
			name:    "the connection ends inside a chunk",
			answers: []string{chunked + "5\r\nhe|<close>"},
			want:    []want{{200, "he", "inside a chunk: unexpected EOF"}},
			dials:   1,
		},
		{
			name:    "the connection ends between chunks",
			answers: []string{chunked + "5\r\nhello\r\n|<close>"},
			want:    []want{{200, "hello", "between chunks: unexpected EOF"}},
			dials:   1,
		},
		{
			name:    "the connection ends before Content-Length",
			answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello|<close>"},
			want:    []want{{200, "hello", "5 bytes before the body's end"}},
			dials:   1,
		},
		{
			name:    "the connection ends inside the head",
			answers: []string{"HTTP/1.1 200 OK\r\nContent-Le|<close>"},
			want:    []want{{err: "reading the answer's headers: unexpected EOF"}},
			dials:   1,
		},
		{
			name:    "not HTTP",
			answers: []string{"hello\r\n\r\n"},
			want:    []want{{err: "not an HTTP/1.x status line"}},
			dials:   1,
		},
		{
			name:    "a bad chunk size",
			answers: []string{chunked + "zz\r\n"},
			want:    []want{{200, "", "bad chunk size line"}},
			dials:   1,
		},
		{
			name:    "a chunk longer than its size",
			answers: []string{chunked + "3\r\nhello\r\n0\r\n\r\n"},
			want:    []want{{200, "hel", "chunk longer than its size"}},
			dials:   1,
		},
		{
			name:    "an unsupported transfer coding",
			answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"},
			want:    []want{{err: `unsupported Transfer-Encoding "gzip, chunked"`}},
			dials:   1,
		},
		{
			name:    "a bad Content-Length",
			answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"},
			want:    []want{{err: `bad Content-Length "3"`}},
			dials:   1,
		},
		{
			name:    "a header without a colon",
			answers: []string{"HTTP/1.1 200 OK\r\nnonsense\r\n\r\n"},
			want:    []want{{err: `bad header line "nonsense"`}},
			dials:   1,
		},
		{
			name:    "switching protocols",
			answers: []string{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"},
			want:    []want{{err: "switched protocols"}},
			dials:   1,
		},
		{
			name:    "a head longer than the buffer",
			answers: []string{"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("x", 5000) + "\r\n\r\n"},
			want:    []want{{err: "head is longer than 4096 bytes"}},
			dials:   1,
		},
	}
	base, err := url.Parse("http://user:pw@example.test/base")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &pipeServer{answers: tt.answers}
			c := newH1Client(base, s.dial, 4096)
			for i, w := range tt.want {
				status, body, err := do(c, `{"n":1}`)
				if w.err == "" && err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if w.err != "" && (err == nil || !strings.Contains(err.Error(), w.err)) {
					t.Fatalf("request %d: error %v, want one holding %q", i, err, w.err)
				}
				if status != w.status || body != w.body {
					t.Errorf("request %d: HTTP %d %q, want HTTP %d %q", i, status, body, w.status, w.body)
				}
			}
			c.close()
			s.wg.Wait()
			if c.dials != tt.dials {
				t.Errorf("%d connections, want %d", c.dials, tt.dials)
			}
		})
	}
}

// TestH1ClientRequest reads the client's request with net/http's server
// parser: the server must see what net/http's Transport would have sent.
func TestH1ClientRequest(t *testing.T) {
	s := &pipeServer{answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}}
	base, err := url.Parse("http://user:pw@example.test:2024/base")
	if err != nil {
		t.Fatal(err)
	}
	c := newH1Client(base, s.dial, 4096)
	if _, _, err := do(c, `{"metadata":{"load":true}}`); err != nil {
		t.Fatal(err)
	}
	c.close()
	s.wg.Wait()
	r := s.requests[0]
	user, pw, _ := r.BasicAuth()
	if r.Method != "POST" || r.URL.Path != "/base/threads" || r.Host != "example.test:2024" || user != "user" || pw != "pw" ||
		r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "text/event-stream" ||
		r.ContentLength != 26 || s.bodies[0] != `{"metadata":{"load":true}}` {
		t.Errorf("request %s %s host %q auth %q:%q headers %v body %q", r.Method, r.URL, r.Host, user, pw, r.Header, s.bodies[0])
	}
}

// TestH1ClientIdle: a connection kept idle for longer than maxIdle is
// replaced before the next request, which the server may have closed.
func TestH1ClientIdle(t *testing.T) {
	s := &pipeServer{answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}}
	base, _ := url.Parse("http://example.test")
	c := newH1Client(base, s.dial, 4096)
	for i := range 3 {
		if _, _, err := do(c, "{}"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i == 1 {
			c.idleSince = c.idleSince.Add(-maxIdle - time.Millisecond)
		}
	}
	c.close()
	s.wg.Wait()
	if c.dials != 2 {
		t.Errorf("%d connections, want 2: a new one after the idle time", c.dials)
	}
}

// TestH1ClientDeadline: a server that never answers fails the request at
// the client's deadline, and the connection is not retried.
func TestH1ClientDeadline(t *testing.T) {
	s := &pipeServer{answers: []string{""}} // reads the request, answers nothing
	base, _ := url.Parse("http://example.test")
	c := newH1Client(base, s.dial, 4096)
	c.deadline = time.Now().Add(50 * time.Millisecond)
	_, err := c.post([]byte("/threads"), []byte("{}"), "application/json")
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("error %v, want a deadline exceeded", err)
	}
	c.close()
	s.wg.Wait()
	if c.dials != 1 {
		t.Errorf("%d connections, want 1", c.dials)
	}
}

// nodeLikeServer answers as the reference server's Node HTTP server does:
// every answer chunked on a kept-alive connection, each SSE event a chunk
// of its own in a write of its own, the last chunk in a write after them.
// The answers' content is fakeServer's.
func nodeLikeServer(t *testing.T, f *fakeServer) (url string, conns func() int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		open    []net.Conn
		wg      sync.WaitGroup
		accepts int
	)
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, conn)
			accepts++
			mu.Unlock()
			wg.Go(func() { serveNodeLike(conn, f) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return accepts }
}

func serveNodeLike(conn net.Conn, f *fakeServer) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, httptest.NewRequest(req.Method, req.URL.Path, bytes.NewReader(body)))
		head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nDate: Fri, 27 Nov 2026 00:00:00 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n",
			rec.Code, http.StatusText(rec.Code), rec.Header().Get("Content-Type"))
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		for ev := range strings.SplitAfterSeq(rec.Body.String(), "\n\n") {
			if ev == "" {
				continue
			}
			if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(ev), ev); err != nil {
				return
			}
		}
		if _, err := io.WriteString(conn, "0\r\n\r\n"); err != nil {
			return
		}
	}
}

func TestRunsAgainstANodeLikeServer(t *testing.T) {
	f := &fakeServer{framing: "length"}
	url, conns := nodeLikeServer(t, f)
	res, code, stderr := runJSON[loadResult](t, "--url", url, "--clients", "3", "--runs-per-client", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if res.OK != 6 || res.Errors != 0 || res.EventsPerRun == nil || *res.EventsPerRun != 11 {
		t.Errorf("result %+v: want 6 ok, 0 errors, 11 events per run", res)
	}
	if got := conns(); got != 3 {
		t.Errorf("%d connections, want one per client", got)
	}
	// An error event and a bad status are told apart from a good run.
	f.breakEcho = "error-event"
	res, code, _ = runJSON[loadResult](t, "--url", url, "--clients", "1")
	if code != 1 || res.Errors != 1 || len(res.ErrorSamples) != 1 || !strings.Contains(res.ErrorSamples[0], "stream error event") {
		t.Errorf("with an error event: exit %d, %+v", code, res)
	}
	f.breakEcho = "500"
	res, code, _ = runJSON[loadResult](t, "--url", url, "--clients", "1")
	if code != 1 || res.Errors != 1 || len(res.ErrorSamples) != 1 || !strings.Contains(res.ErrorSamples[0], "HTTP 500: boom") {
		t.Errorf("with HTTP 500: exit %d, %+v", code, res)
	}
}

// cannedConn answers each request written to it with the next of answers,
// in turn, from memory.
type cannedConn struct {
	net.Conn // nil: only what h1Client calls is implemented
	answers  [][]byte
	next     int
	r        bytes.Reader
}

func (c *cannedConn) Write(p []byte) (int, error) {
	c.r.Reset(c.answers[c.next%len(c.answers)])
	c.next++
	return len(p), nil
}

func (c *cannedConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *cannedConn) SetDeadline(time.Time) error { return nil }
func (c *cannedConn) Close() error                { return nil }

// BenchmarkLoadClientRun is one run of a client (a thread created, an echo
// run streamed, read and checked) against answers from memory, chunked as
// the reference server writes them: the generator's CPU per run outside
// the kernel.
func BenchmarkLoadClientRun(b *testing.B) {
	f := &fakeServer{framing: "length"}
	var answers [][]byte
	for _, req := range []*http.Request{
		httptest.NewRequest("POST", "/threads", strings.NewReader(string(threadBody))),
		httptest.NewRequest("POST", "/threads/t1/runs/stream", strings.NewReader(`{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"w0 w1 w2 w3 w4 w5 w6 w7"}]},"stream_mode":["values","messages-tuple"]}`)),
	} {
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, req)
		var a bytes.Buffer
		fmt.Fprintf(&a, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n", rec.Header().Get("Content-Type"))
		for ev := range strings.SplitAfterSeq(rec.Body.String(), "\n\n") {
			if ev == "" {
				continue
			}
			fmt.Fprintf(&a, "%x\r\n%s\r\n", len(ev), ev)
		}
		a.WriteString("0\r\n\r\n")
		answers = append(answers, a.Bytes())
	}
	conn := &cannedConn{answers: answers}
	base, _ := url.Parse("http://127.0.0.1:2024")
	c := &loadClient{
		h:       newH1Client(base, func(context.Context, string, string) (net.Conn, error) { return conn, nil }, 64<<10),
		timeout: time.Minute,
		body:    []byte(`{}`),
		text:    "w0 w1 w2 w3 w4 w5 w6 w7",
		sse:     newSSEReader(nil, 16<<10),
	}
	b.ReportAllocs()
	for b.Loop() {
		if n, err := c.oneRun(); err != nil || n != 11 {
			b.Fatalf("%d events, %v", n, err)
		}
	}
}

// TestH1ClientTLS: an https URL is spoken over TLS, verifying the
// server's certificate, and the connection is kept alive.
func TestH1ClientTLS(t *testing.T) {
	srv := httptest.NewTLSServer(&fakeServer{})
	defer srv.Close()
	base, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := newH1Client(base, newDialer(nil), 4096)
	defer c.close()
	if _, err := c.post([]byte("/threads"), threadBody, "application/json"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a certificate nobody signed: error %v, want one about the certificate", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c.tlsConfig.RootCAs = pool
	for i := range 2 {
		status, err := c.post([]byte("/threads"), threadBody, "application/json")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(c)
		if err != nil || status != 200 || !strings.Contains(string(body), `"thread_id":"t`) {
			t.Fatalf("request %d: HTTP %d %q %v", i, status, body, err)
		}
		c.finish()
	}
	if c.dials != 2 {
		t.Errorf("%d connections, want 2: the refused one, then one kept alive", c.dials)
	}
}
