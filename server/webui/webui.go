// Package webui is weft's web UI: a chat with streamed answers, tool calls,
// past threads, interrupts, time travel and the orchestrator's plan, todo
// and approval views, in plain JavaScript modules and CSS embedded in the
// binary. It talks only to the LangGraph Server API of package server,
// from the same origin.
//
// Handler serves the page at "/" and its files under "/ui/"; Mount puts it
// in front of the API handler so that `weft serve` answers both:
//
//	srv, err := server.New(ctx, opts)
//	...
//	ui, err := webui.New()
//	...
//	http.ListenAndServe("127.0.0.1:2024", ui.Mount(srv))
//
// Every file is compressed once, when New builds the Handler, and served
// gzip-encoded to clients that accept it, with an ETag so that a reload
// revalidates instead of downloading again. The page runs under a strict
// Content-Security-Policy: scripts, styles, images and connections from
// its own origin only, no inline scripts or styles, no frames.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is the path under which the UI's files are served.
const Prefix = "/ui/"

// ContentSecurityPolicy is the policy every answer of the Handler carries:
// only the page's own origin may provide scripts, styles, images, fonts
// and connections; no plugins, no frames, no <base>. Images may also come
// from blob: URLs the page made itself: a thread's result images are
// fetched with the API key (which an <img src> cannot send) and shown
// from a blob.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// asset is one file, ready to serve. The file itself is read from the
// embedded files when it is served plain: ReadFile would copy it into the
// heap, to keep for the rare client that takes no gzip.
type asset struct {
	contentType string
	path        string // in static
	size        int64
	gz          []byte
	etag        string // of the file; the gzip encoding's adds "-gz"
}

// Handler serves the web UI: index.html at "/" and the other files under
// Prefix. It answers GET and HEAD; anything else is a 405.
type Handler struct {
	assets map[string]*asset // by path below static/, e.g. "app.js"
}

// New builds a Handler from the embedded files, compressing each once.
func New() (*Handler, error) {
	h := &Handler{assets: map[string]*asset{}}
	// One compressor for every file: each of gzip's best-compression
	// writers allocates about 1 MB of tables, garbage once New returns.
	zw, err := gzip.NewWriterLevel(io.Discard, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	copyBuf := make([]byte, 32<<10)
	err = fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := static.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		var buf bytes.Buffer
		zw.Reset(&buf)
		sum := sha256.New()
		n, err := io.CopyBuffer(io.MultiWriter(zw, sum), f, copyBuf)
		if err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		h.assets[name] = &asset{
			contentType: contentType(name),
			path:        p,
			size:        n,
			gz:          bytes.Clone(buf.Bytes()),
			etag:        hex.EncodeToString(sum.Sum(nil)[:12]),
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webui: reading the embedded files: %w", err)
	}
	if h.assets["index.html"] == nil {
		return nil, fmt.Errorf("webui: the embedded files lack index.html")
	}
	return h, nil
}

// contentType is the media type of a file by its extension.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".json":
		return "application/json"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Files returns the paths of the UI's files, as served (e.g. "/ui/app.js";
// index.html is "/").
func (h *Handler) Files() []string {
	out := make([]string, 0, len(h.assets))
	for name := range h.assets {
		if name == "index.html" {
			out = append(out, "/")
			continue
		}
		out = append(out, Prefix+name)
	}
	return out
}

// ServeHTTP serves "/" and the files under Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	var name string
	switch {
	case r.URL.Path == "/":
		name = "index.html"
	case strings.HasPrefix(r.URL.Path, Prefix):
		name = strings.TrimPrefix(r.URL.Path, Prefix)
	}
	a := h.assets[name]
	if a == nil || name == "index.html" && r.URL.Path != "/" {
		http.Error(w, "not found: the web UI has no file "+r.URL.Path, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the web UI's files are read with GET", http.StatusMethodNotAllowed)
		return
	}
	zipped, etag := acceptsGzip(r.Header.Get("Accept-Encoding")), `"`+a.etag+`"`
	hd.Add("Vary", "Accept-Encoding")
	size := a.size
	if zipped {
		size, etag = int64(len(a.gz)), `"`+a.etag+`-gz"`
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("ETag", etag)
	// Revalidate on every load: the modules import one another by plain
	// names, so a stale copy of one beside a new copy of another would
	// break the page. A revalidation costs a 304 without a body.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", a.contentType)
	if matchesETag(r.Header.Get("If-None-Match"), etag) {
		hd.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var body io.Reader = bytes.NewReader(a.gz)
	if !zipped {
		f, err := static.Open(a.path)
		if err != nil {
			// New opened every file it lists: not expected.
			hd.Del("Content-Encoding")
			http.Error(w, "webui: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		body = f
	}
	hd.Set("Content-Length", strconv.FormatInt(size, 10))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, body)
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// matchesETag reports whether an If-None-Match header names etag.
func matchesETag(header, etag string) bool {
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if part == etag || part == "*" {
			return true
		}
	}
	return false
}

// Mount returns a handler that serves the UI at "/" and under Prefix, and
// passes every other request to api. No API route is shadowed: the
// LangGraph Server API has no route at "/" or under Prefix.
func (h *Handler) Mount(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", h)
	mux.Handle(Prefix, h)
	mux.Handle("/", api)
	return mux
}
