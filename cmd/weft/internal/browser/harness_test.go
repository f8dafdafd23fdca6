package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/cli"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/internal/chromium"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/server/apikey"
)

// Bounds of the harness: every wait of a test ends by one of them.
const (
	// waitTimeout bounds one browser action or wait.
	waitTimeout = 30 * time.Second
	// pageTimeout bounds a whole page's life in a test.
	pageTimeout = 4 * time.Minute
	// shutdownTimeout bounds a server's shutdown at a restart or the end.
	shutdownTimeout = 20 * time.Second
)

// repoRoot is the module's root, where the demo scripts are found.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// ------------------------------------------------------------ server

// testServer is weft serve's handler (the API with the web UI), served
// in-process over the example agents, echo and slow of the apitest
// graphs, on a SQLite database in a temporary directory.
type testServer struct {
	t *testing.T
	// URL is the server's base URL, e.g. http://127.0.0.1:41234; it stays
	// the same across Restart.
	URL string
	// Gate pauses the chat agents' streams (Hold) until Release.
	Gate *gate

	dir    string
	addr   string
	graphs map[string]server.GraphFunc
	close  func()
	keys   map[string]string

	mu  sync.Mutex
	db  *dburl.DB
	srv *server.Server
	hs  *httptest.Server
}

// serverOptions configure startServer; nil takes the defaults.
type serverOptions struct {
	// APIKeys, if set, requires one of these keys (user → key).
	APIKeys map[string]string
	// Model, if set, answers for every example agent instead of its demo
	// script (e.g. scripted.Parse of a test's own script).
	Model llm.ChatModel
	// Configure, if set, changes an orchestrator agent's configuration
	// (e.g. approvals) before it is built.
	Configure func(agent string, c *orchestrator.Config)
	// Graphs are served besides the example graphs, replacing one of the
	// same id.
	Graphs map[string]server.GraphFunc
}

// startServer starts weft serve's handler for the test and stops it when
// the test ends. It changes the working directory to the repository's
// root (the demo scripts' paths are relative to it), so tests using it
// cannot run in parallel.
func startServer(t *testing.T, opts *serverOptions) *testServer {
	t.Helper()
	if opts == nil {
		opts = &serverOptions{}
	}
	t.Chdir(repoRoot(t))
	s := &testServer{t: t, dir: t.TempDir(), Gate: newGate()}
	ctx := context.Background()
	graphs, closeGraphs, err := cli.ExampleGraphs(ctx, &cli.ExampleGraphsOptions{
		DataDir:   s.dir,
		Model:     opts.Model,
		Configure: opts.Configure,
		WrapModel: func(_ string, m llm.ChatModel) llm.ChatModel { return &gatedModel{inner: m, gate: s.Gate} },
	})
	if err != nil {
		t.Fatal(err)
	}
	graphs[apitest.EchoID] = apitest.Echo
	graphs[apitest.SlowID] = apitest.Slow
	maps.Copy(graphs, opts.Graphs)
	// The models and services live across restarts, as a model does: a
	// restart resumes where the scripts were.
	s.graphs, s.close = graphs, closeGraphs
	s.keys = opts.APIKeys
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		s.Gate.Release()
		s.close()
	})
	return s
}

func (s *testServer) start() error {
	ctx := context.Background()
	db, err := dburl.Open(ctx, filepath.Join(s.dir, "weft.db"), dburl.Options{})
	if err != nil {
		return err
	}
	so := server.Options{
		Graphs:  s.graphs,
		DB:      db,
		Version: "browser-test",
		// A restart finds the runs of the process before it without a
		// heartbeat soon, as a real restart of weft serve does after
		// WorkerTTL.
		WorkerTTL:   3 * time.Second,
		LeaseTTL:    3 * time.Second,
		ThreadFiles: cli.ExampleThreadFiles(s.dir),
	}
	if len(s.keys) > 0 {
		var keys []apikey.Key
		for user, key := range s.keys {
			keys = append(keys, apikey.Key{User: user, Key: key})
		}
		set, err := apikey.New(keys...)
		if err != nil {
			_ = db.Close()
			return err
		}
		so.Auth = set
	}
	srv, err := server.New(ctx, so)
	if err != nil {
		_ = db.Close()
		return err
	}
	h, err := cli.WithUI(srv, true)
	if err != nil {
		_ = srv.Shutdown(ctx)
		_ = db.Close()
		return err
	}
	hs := httptest.NewUnstartedServer(h)
	if s.addr != "" {
		// The same address as before the restart, so that the page's
		// origin (and its localStorage) stays the same.
		ln, err := listenAgain(s.addr)
		if err != nil {
			_ = srv.Shutdown(ctx)
			_ = db.Close()
			return err
		}
		hs.Listener.Close()
		hs.Listener = ln
	}
	hs.Start()
	s.mu.Lock()
	s.db, s.srv, s.hs = db, srv, hs
	s.addr = hs.Listener.Addr().String()
	s.URL = "http://" + s.addr
	s.mu.Unlock()
	return nil
}

// listenAgain listens on addr, which a server closed a moment ago.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("listening on %s again: %w", addr, err)
}

func (s *testServer) stop() {
	s.mu.Lock()
	srv, hs, db := s.srv, s.hs, s.db
	s.srv, s.hs, s.db = nil, nil, nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	hs.CloseClientConnections()
	if err := srv.Shutdown(ctx); err != nil {
		s.t.Logf("server shutdown: %v", err)
	}
	hs.Close()
	if err := db.Close(); err != nil {
		s.t.Errorf("closing the database: %v", err)
	}
}

// Restart stops the server as weft serve stops, and starts it again on
// the same database and address, with the same graphs (and models, whose
// scripts go on where they were).
func (s *testServer) Restart() {
	s.t.Helper()
	s.stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("restart: %v", err)
	}
}

// RestartWithKeys is Restart requiring these API keys (user → key)
// afterwards; nil turns authentication off.
func (s *testServer) RestartWithKeys(keys map[string]string) {
	s.t.Helper()
	s.stop()
	s.keys = keys
	if err := s.start(); err != nil {
		s.t.Fatalf("restart: %v", err)
	}
}

// Saver opens the test database's checkpoints, for assertions.
func (s *testServer) Saver() *checkpoint.Saver {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.Saver
}

// ------------------------------------------------------------ gate

// gate pauses model streams after their first chunk of text while it is
// held, so that a test sees a reply half written (tokens on screen before
// the run ends), or stops a run while it goes. Streams without text (a
// router's classification, a reply of tool calls alone) are not paused:
// their callers may bound them with short timeouts.
type gate struct {
	mu      sync.Mutex
	held    bool
	release chan struct{}
	waiting chan struct{} // gets a value each time a stream pauses
}

func newGate() *gate { return &gate{release: make(chan struct{}), waiting: make(chan struct{}, 64)} }

// Hold pauses the streams after their next first chunk of text.
func (g *gate) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.held {
		g.held = true
		g.release = make(chan struct{})
	}
}

// Release lets the paused streams go on, and the next ones run through.
func (g *gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		g.held = false
		close(g.release)
	}
}

// Paused waits until a stream has paused at the gate.
func (g *gate) Paused(t testing.TB) {
	t.Helper()
	select {
	case <-g.waiting:
	case <-time.After(waitTimeout):
		t.Fatal("no model stream paused at the gate")
	}
}

func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	held, release := g.held, g.release
	g.mu.Unlock()
	if !held {
		return nil
	}
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedModel is a chat model whose streams wait at the gate after their
// first chunk of text.
type gatedModel struct {
	inner llm.ChatModel
	gate  *gate
}

func (m *gatedModel) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, error) {
	return m.inner.Generate(ctx, msgs, opts...)
}

func (m *gatedModel) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		first := true
		for c, err := range m.inner.Stream(ctx, msgs, opts...) {
			if !yield(c, err) || err != nil {
				return
			}
			if first && c.Content != "" {
				first = false
				if err := m.gate.wait(ctx); err != nil {
					yield(llm.Chunk{}, err)
					return
				}
			}
		}
	}
}

func (m *gatedModel) BindTools(tools []llm.ToolSpec) llm.ChatModel {
	return &gatedModel{inner: m.inner.BindTools(tools), gate: m.gate}
}

// ------------------------------------------------------------ browser

// artifactsDir is where a failing test's screenshot and console log go.
func artifactsDir(t testing.TB) string {
	if d := os.Getenv("WEFT_ARTIFACTS_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoRoot(t), ".ci", "artifacts")
}

// pageOptions configure newPage; nil is a desktop window.
type pageOptions struct {
	// Width and Height of the viewport in CSS pixels (1280×860).
	Width, Height int64
	// Phone emulates a touch phone (mobile viewport, scale 3).
	Phone bool
	// Lang is the browser's language (en-US).
	Lang string
	// ColorScheme is the preferred color scheme: "light" (default) or "dark".
	ColorScheme string
}

// page is a browser tab of a test.
type page struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []string
}

// newPage starts a headless Chromium with a fresh profile for the test and
// returns a tab. The test skips without Chromium, unless CI=true. When the
// test fails, a screenshot and the console log are saved as artifacts.
func newPage(t *testing.T, opts *pageOptions) *page {
	t.Helper()
	if opts == nil {
		opts = &pageOptions{}
	}
	bin := chromium.Path()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is missing: CI must install it (.ci/run installs Debian's chromium); set $WEFT_CHROMIUM to its path")
		}
		t.Skip("Chromium is missing: apt-get install chromium, or set $WEFT_CHROMIUM, to run the browser tests")
	}
	w, hgt := opts.Width, opts.Height
	if w == 0 {
		w, hgt = 1280, 860
	}
	lang := opts.Lang
	if lang == "" {
		lang = "en-US"
	}
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // as root in CI
		chromedp.DisableGPU,
		chromedp.WindowSize(int(w), int(hgt)),
		chromedp.Flag("lang", lang),
		chromedp.Flag("accept-lang", lang),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	base, cancelTimeout := context.WithTimeout(context.Background(), pageTimeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(base, allocOpts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	p := &page{t: t, ctx: ctx}
	// Start the browser (without a timeout on this first run: it would
	// stop the browser).
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		cancelTimeout()
		t.Fatalf("starting Chromium (%s): %v", bin, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.console = append(p.console, m.String())
			p.mu.Unlock()
		}
	}()
	setup := []chromedp.Action[chromedp.Void]{}
	if opts.Phone {
		setup = append(setup, chromedp.EmulateViewport(w, hgt, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch))
	} else {
		setup = append(setup, chromedp.EmulateViewport(w, hgt))
	}
	scheme := opts.ColorScheme
	if scheme == "" {
		scheme = "light"
	}
	setup = append(setup, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{
				{Name: "prefers-color-scheme", Value: scheme},
				// No transitions: a screenshot shows where things end.
				{Name: "prefers-reduced-motion", Value: "reduce"},
			},
		}); err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: strings.ReplaceAll(lang, "-", "_")}); err != nil {
			return err
		}
		// navigator.language follows the Accept-Language given here.
		ua, err := chromedp.Run(ctx, chromedp.Evaluate[string]("navigator.userAgent"))
		if err != nil {
			return err
		}
		_, err = chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: lang})
		return err
	}))
	if err := p.do(setup...); err != nil {
		t.Fatalf("setting up the page: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.saveArtifacts()
		}
		cancelCtx()
		cancelAlloc()
		cancelTimeout()
	})
	return p
}

// do runs actions, bounded by waitTimeout.
func (p *page) do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// must runs actions and fails the test on an error, naming what it did.
func (p *page) must(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := p.do(actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression and returns its value.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor waits until a JavaScript expression is truthy; what says what
// it waits for, in the failure.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(waitTimeout), chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		p.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// open loads the UI at url and waits until it has loaded its assistants.
func (p *page) open(url string) {
	p.t.Helper()
	p.must("opening "+url, chromedp.Navigate(url))
	p.waitFor("the UI to be ready", `document.body.dataset.ready === "true"`)
}

// click clicks the first element matching a CSS selector.
func (p *page) click(sel string) {
	p.t.Helper()
	// The page may replace the element between finding it and clicking it
	// (a view re-rendered from the thread's saved state): find it again,
	// a bounded number of times.
	var err error
	for range 3 {
		if err = p.do(chromedp.Click(chromedp.CSS(sel))); err == nil || !strings.Contains(err.Error(), "given id") {
			break
		}
	}
	if err != nil {
		p.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// testid is the CSS selector of a data-testid.
func testid(id string) string { return `[data-testid="` + id + `"]` }

// send writes text in the composer and sends it with Enter.
func (p *page) send(text string) {
	p.t.Helper()
	p.must("writing a message",
		chromedp.Focus(chromedp.CSS(testid("composer-input"))),
		chromedp.SetValue(chromedp.CSS(testid("composer-input")), text),
		chromedp.KeyEvent("\r"),
	)
}

// fill sets the value of the input matching sel and tells the page, as
// typing does (an input event).
func (p *page) fill(sel, value string) {
	p.t.Helper()
	ok := eval[bool](p, `(() => { const el = document.querySelector(`+jsString(sel)+`); if (!el) return false;
		el.value = `+jsString(value)+`; el.dispatchEvent(new Event("input", {bubbles: true})); return true })()`)
	if !ok {
		p.t.Fatalf("no %s to fill", sel)
	}
}

// text is the textContent of the first element matching sel ("" if none).
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

// screenshot saves a full-page PNG to path.
func (p *page) screenshot(path string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// consoleLog is what the page wrote to its console so far.
func (p *page) consoleLog() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.console, "\n")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// saveArtifacts writes the page's screenshot and console log for a failed
// test.
func (p *page) saveArtifacts() {
	dir := artifactsDir(p.t)
	name := unsafeName.ReplaceAllString(p.t.Name(), "_")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Logf("artifacts: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, png, 0o644); err == nil {
			p.t.Logf("screenshot of the failure: %s", path)
		}
	} else {
		p.t.Logf("no screenshot of the failure: %v", err)
	}
	path := filepath.Join(dir, name+".console.log")
	if err := os.WriteFile(path, []byte(p.consoleLog()+"\n"), 0o644); err == nil {
		p.t.Logf("console log of the failure: %s", path)
	}
}

// ------------------------------------------------------------ API

// apiGet gets a path of the test server's API and returns the answer.
func (s *testServer) apiGet(path string) (int, string) {
	s.t.Helper()
	return s.apiDo(http.MethodGet, path, "")
}

// apiPost posts JSON to the test server's API and returns the answer.
func (s *testServer) apiPost(path, body string) (int, string) {
	s.t.Helper()
	return s.apiDo(http.MethodPost, path, body)
}

func (s *testServer) apiDo(method, path, body string) (int, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	return res.StatusCode, string(b)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
