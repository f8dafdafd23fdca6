package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteErrorShapes(t *testing.T) {
	type threadReq struct {
		Metadata map[string]any `json:"metadata"`
	}
	decode := func(body string) error {
		r := httptest.NewRequest("POST", "/threads", strings.NewReader(body))
		var req threadReq
		return DecodeBody(httptest.NewRecorder(), r, 0, &req)
	}
	tests := []struct {
		name        string
		err         error
		status      int
		contentType string
		body        string
	}{
		{"malformed", decode("{not json"), 400, "text/plain;charset=UTF-8", MalformedJSON},
		{"wrong type names the field", decode(`{"metadata": 5}`), 400, "application/json",
			`{"error":{"issues":[{"code":"invalid_type","expected":"object","received":"number","path":["metadata"],"message":"Expected object, received number"}],"name":"ZodError"},"success":false}`},
		{"not found", NotFound("Thread with ID %s not found", "x"), 404, "text/plain;charset=UTF-8", "Thread with ID x not found"},
		{"conflict", Conflict("Thread already exists"), 409, "text/plain;charset=UTF-8", "Thread already exists"},
		{"missing field", Invalid(TypeIssue("string", "undefined", "assistant_id")), 400, "application/json",
			`{"error":{"issues":[{"code":"invalid_type","expected":"string","received":"undefined","path":["assistant_id"],"message":"Required"}],"name":"ZodError"},"success":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteError(w, tt.err)
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Content-Type"); got != tt.contentType {
				t.Errorf("content type = %q, want %q", got, tt.contentType)
			}
			if diff := cmp.Diff(tt.body, w.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeBodyEmptyAndTooLarge(t *testing.T) {
	var v struct{ A int }
	v.A = 7
	r := httptest.NewRequest("POST", "/", strings.NewReader("  "))
	if err := DecodeBody(httptest.NewRecorder(), r, 0, &v); err != nil || v.A != 7 {
		t.Fatalf("empty body: err %v, value %v; want nil and untouched", err, v)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(`{"A": 1, "pad": "`+strings.Repeat("x", 100)+`"}`))
	err := DecodeBody(httptest.NewRecorder(), r, 50, &v)
	w := httptest.NewRecorder()
	WriteError(w, err)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: status %d (%v), want 413", w.Code, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"metadata":{"a":1},"limit":3,"ids":["x"]}`))
	f.Add([]byte(`{"metadata":5}`))
	f.Add([]byte(`[1,2`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var v struct {
			Metadata map[string]any `json:"metadata"`
			Limit    int            `json:"limit"`
			IDs      []string       `json:"ids"`
		}
		err := Decode(body, &v)
		if err == nil {
			return
		}
		w := httptest.NewRecorder()
		WriteError(w, err)
		if w.Code != 400 {
			t.Fatalf("bad body %q answered %d, want 400", body, w.Code)
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("error body is not JSON: %s", w.Body)
		}
	})
}

// TestDecodeBodyAnnouncedButNotSent checks that a body announced far
// larger than it is (a client sending a Content-Length and then little)
// costs memory for what arrived, not for what was announced.
func TestDecodeBodyAnnouncedButNotSent(t *testing.T) {
	const announced = 4 << 20
	r := httptest.NewRequest("POST", "/threads", strings.NewReader(`{"metadata":`))
	r.ContentLength = announced
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var dst map[string]any
	err := DecodeBody(httptest.NewRecorder(), r, 8<<20, &dst)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a body cut short decoded without an error")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > announced/4 {
		t.Errorf("reading a 12-byte body announced as %d bytes allocated %d bytes", announced, grew)
	}
}
