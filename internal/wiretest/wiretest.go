// Package wiretest is a loopback HTTP server for tests of code that calls a
// model provider (the providers themselves, the agents over them): it
// answers requests with scripted handlers in turn and records what it was
// sent.
package wiretest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is a request the server received.
type Request struct {
	Method, Path string
	Query        string
	Header       http.Header
	// Body is the decoded JSON body.
	Body map[string]any
}

// Server answers the n-th request with the n-th handler (the last one
// answers all further requests).
type Server struct {
	*httptest.Server
	t        testing.TB
	mu       sync.Mutex
	handlers []http.HandlerFunc
	reqs     []Request
}

// New starts a server, closed when the test ends.
func New(t testing.TB, handlers ...http.HandlerFunc) *Server {
	s := &Server{t: t, handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			s.t.Errorf("request body is not JSON: %v: %s", err, raw)
		}
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if len(s.handlers) == 0 {
		http.Error(w, "no handler", http.StatusInternalServerError)
		return
	}
	s.handlers[min(n, len(s.handlers)-1)](w, r)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// JSON answers with a status, a JSON body and headers given as name, value
// pairs.
func JSON(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Text answers with a status and a plain-text body (a proxy's error page).
func Text(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Event is one server-sent event; Name may be empty.
type Event struct{ Name, Data string }

// SSE answers with a stream of events, flushing after each. With hold, it
// then keeps the connection open until the client goes away.
func SSE(hold bool, events ...Event) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, events)
		if hold {
			<-r.Context().Done()
		}
	}
}

// SSEGated answers with the first n events, then waits for gate to close
// (or the client to go away) before it sends the rest: a provider whose
// events come as the test says.
func SSEGated(gate <-chan struct{}, n int, events ...Event) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, events[:n])
		select {
		case <-gate:
			writeEvents(w, events[n:])
		case <-r.Context().Done():
		}
	}
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func writeEvents(w http.ResponseWriter, events []Event) {
	f := w.(http.Flusher)
	for _, e := range events {
		if e.Name != "" {
			fmt.Fprintf(w, "event: %s\n", e.Name)
		}
		fmt.Fprintf(w, "data: %s\n\n", e.Data)
		f.Flush()
	}
}

// Endless answers with status 200, the content type and prefix, then
// bytes 'x' without end, until the client goes away: a body no client
// should read whole.
func Endless(contentType, prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, prefix); err != nil {
			return
		}
		block := []byte(strings.Repeat("x", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(block); err != nil {
				return
			}
		}
	}
}

// Answer is a transport that answers every request with status 200, its
// content type and body, without a network: for fuzzing what a client
// makes of a body.
type Answer struct {
	ContentType string
	Body        []byte
}

// RoundTrip implements http.RoundTripper.
func (a Answer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {a.ContentType}},
		Body:    io.NopCloser(bytes.NewReader(a.Body)),
		Request: req,
	}, nil
}

// Hang never answers; it returns when the client goes away.
func Hang() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
}

// Sleeps records the waits of a retry policy without spending them.
type Sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep is a llm.RetryPolicy.Sleep.
func (s *Sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Waits returns the waits so far.
func (s *Sleeps) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}
