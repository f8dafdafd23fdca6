package webui_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftlabs/weft/server/webui"
)

func newHandler(t *testing.T) *webui.Handler {
	t.Helper()
	h, err := webui.New()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestIndexAndAssets(t *testing.T) {
	h := newHandler(t)
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`},
		{"/ui/app.js", "text/javascript; charset=utf-8", "export"},
		{"/ui/style.css", "text/css; charset=utf-8", "--accent"},
	} {
		rec := get(t, h, tc.path, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d", tc.path, rec.Code)
		}
		if got := rec.Header().Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		if !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("GET %s lacks %q", tc.path, tc.contains)
		}
		if got := rec.Header().Get("Content-Security-Policy"); got != webui.ContentSecurityPolicy {
			t.Errorf("GET %s: CSP %q", tc.path, got)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tc.path)
		}
	}
}

// The policy lets nothing but the page's own origin in: no inline
// script, no other host.
func TestCSPIsStrict(t *testing.T) {
	csp := webui.ContentSecurityPolicy
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "data:", "*"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP allows %s: %s", bad, csp)
		}
	}
	for _, want := range []string{"default-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP lacks %s: %s", want, csp)
		}
	}
}

func TestGzipAndETag(t *testing.T) {
	h := newHandler(t)
	plain := get(t, h, "/ui/app.js", nil)
	zipped := get(t, h, "/ui/app.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if zipped.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip for Accept-Encoding gzip: %v", zipped.Header())
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain.Body.Bytes()) {
		t.Error("the gzip body does not decompress to the file")
	}
	if zipped.Body.Len() >= plain.Body.Len() {
		t.Errorf("gzip body %d bytes, plain %d", zipped.Body.Len(), plain.Body.Len())
	}
	if get(t, h, "/ui/app.js", map[string]string{"Accept-Encoding": "gzip;q=0"}).Header().Get("Content-Encoding") != "" {
		t.Error("gzip sent although refused with q=0")
	}
	etag := zipped.Header().Get("ETag")
	if etag == "" || etag == plain.Header().Get("ETag") {
		t.Fatalf("ETags plain %q, gzip %q: want two different ones", plain.Header().Get("ETag"), etag)
	}
	again := get(t, h, "/ui/app.js", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag})
	if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Errorf("revalidation = %d with %d bytes, want 304 without a body", again.Code, again.Body.Len())
	}
	if get(t, h, "/ui/app.js", map[string]string{"If-None-Match": `"other"`}).Code != http.StatusOK {
		t.Error("a stale ETag got no body")
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	h := newHandler(t)
	for _, p := range []string{"/ui/nope.js", "/ui/index.html", "/ui/", "/ui/../go.mod"} {
		if rec := get(t, h, p, nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/ui/app.js", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST = %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

// Mount serves the UI at / and /ui/ and leaves every other path, and
// other methods at /, to the API.
func TestMountLeavesTheAPIAlone(t *testing.T) {
	h := newHandler(t)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-API", "1")
		w.WriteHeader(http.StatusTeapot)
	})
	m := h.Mount(api)
	for _, tc := range []struct {
		method, path string
		api          bool
	}{
		{"GET", "/", false},
		{"HEAD", "/", false},
		{"GET", "/ui/app.js", false},
		{"POST", "/", true},
		{"GET", "/ok", true},
		{"GET", "/info", true},
		{"POST", "/threads/search", true},
		{"GET", "/threads/00000000-0000-0000-0000-000000000000/state", true},
		{"GET", "/assistants/x", true},
		{"GET", "/uix", true},
	} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if got := rec.Header().Get("X-API") == "1"; got != tc.api {
			t.Errorf("%s %s went to the API: %v, want %v (status %d)", tc.method, tc.path, got, tc.api, rec.Code)
		}
	}
}

// The first load stays within the budget of 200 KB compressed.
func TestFirstLoadBudget(t *testing.T) {
	h := newHandler(t)
	total := 0
	for _, p := range h.Files() {
		if strings.HasSuffix(p, ".png") {
			continue
		}
		total += get(t, h, p, map[string]string{"Accept-Encoding": "gzip"}).Body.Len()
	}
	if total > 200*1024 {
		t.Errorf("the UI's files are %d bytes compressed, over 200 KB", total)
	}
	t.Logf("the UI's files: %d bytes compressed", total)
}

func FuzzHeaders(f *testing.F) {
	f.Add("gzip", `"abc"`)
	f.Add("gzip;q=0, br", `W/"x", *`)
	f.Add(",,;;", ",")
	h, err := webui.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, enc, inm string) {
		rec := get(t, h, "/ui/app.js", map[string]string{"Accept-Encoding": enc, "If-None-Match": inm})
		if rec.Code != http.StatusOK && rec.Code != http.StatusNotModified {
			t.Errorf("status %d for Accept-Encoding %q, If-None-Match %q", rec.Code, enc, inm)
		}
	})
}
