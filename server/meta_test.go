package server_test

import (
	"net/http"
	"testing"

	"github.com/weftlabs/weft/server"
)

func TestOkAndInfo(t *testing.T) {
	s := newServer(t, server.Options{Version: "1.2.3"})
	if got := s.must(200, "GET", "/ok", nil).obj(t); got["ok"] != true {
		t.Errorf("/ok = %v", got)
	}
	info := s.must(200, "GET", "/info", nil).obj(t)
	if info["version"] != "1.2.3" {
		t.Errorf("/info = %v", info)
	}
	flags, _ := info["flags"].(map[string]any)
	if flags["assistants"] != true || flags["crons"] != true {
		t.Errorf("/info flags = %v", flags)
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	s := newServer(t, server.Options{})
	if r := s.do("GET", "/nope", nil); r.status != 404 {
		t.Errorf("unknown path: %d", r.status)
	}
	if r := s.do("PUT", "/threads/search", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("wrong method: %d", r.status)
	}
}

// agent-chat-ui calls from a browser on another origin: preflights are
// answered, and the headers the SDK reads are exposed.
func TestCORS(t *testing.T) {
	s := newServer(t, server.Options{})
	r := s.do("OPTIONS", "/threads/search", nil,
		"Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,x-api-key,last-event-id")
	if r.status != http.StatusNoContent {
		t.Fatalf("preflight: %d", r.status)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("allow origin = %q", got)
	}
	if got := r.header.Get("Access-Control-Allow-Headers"); got != "content-type,x-api-key,last-event-id" {
		t.Errorf("allow headers = %q, want the requested ones", got)
	}
	if got := r.header.Get("Access-Control-Allow-Methods"); got == "" {
		t.Error("no allowed methods")
	}
	r = s.must(200, "POST", "/threads/search", map[string]any{}, "Origin", "http://localhost:3000")
	if got := r.header.Get("Access-Control-Expose-Headers"); got != "content-location,location,x-pagination-total,x-pagination-next,retry-after" {
		t.Errorf("expose headers = %q", got)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("allow origin = %q", got)
	}

	named := newServer(t, server.Options{CORS: &server.CORSOptions{AllowOrigins: []string{"https://app.example"}, AllowCredentials: true}})
	r = named.do("GET", "/ok", nil, "Origin", "https://app.example")
	if r.header.Get("Access-Control-Allow-Origin") != "https://app.example" || r.header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("named origin: %v", r.header)
	}
	r = named.do("GET", "/ok", nil, "Origin", "https://evil.example")
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("an origin not allowed got %q", got)
	}
}
