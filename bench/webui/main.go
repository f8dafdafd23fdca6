// Command webui measures weft's web UI (package server/webui) in headless
// Chromium, driven with chromedp, against weft serve's handler in this
// process (the API with the UI mounted, on a temporary SQLite database):
//
//   - first token: the time from sending a message (the composer's
//     submit) to the reply's first word on screen, against the time to the
//     server's first server-sent event and to the first event carrying a
//     token, as the page's fetch receives them (the page's fetch is
//     wrapped to timestamp the stream's chunks). The echo graph replies by
//     streaming the message back.
//   - first load: the bytes transferred to load the page until it is
//     ready (Resource Timing: transferSize, encodedBodySize; the UI's own
//     files apart from the API calls it makes at start), with a cold cache.
//     Target: under 200 KB compressed.
//   - long tasks: tasks over 50 ms in the browser's performance timeline
//     (PerformanceObserver "longtask") while an orchestrator runs a plan of
//     20 todos (7 levels, a stub tool that waits --latency per todo) and the
//     page follows its events: the run panel, the graph, the elapsed times.
//
// It prints one JSON object. Measure on a quiet machine: the figures of a
// loaded one say little.
//
// Usage:
//
//	go run ./bench/webui [--runs 5] [--latency 50ms] [--chromium /usr/bin/chromium]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weftlabs/weft/bench/internal/dag20"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/chromium"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/server/webui"
	"github.com/weftlabs/weft/store"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// report is the printed JSON.
type report struct {
	Runs       int        `json:"runs"`
	FirstToken firstToken `json:"first_token"`
	FirstLoad  firstLoad  `json:"first_load"`
	LongTasks  longTasks  `json:"long_tasks"`
	Chromium   string     `json:"chromium"`
	Note       string     `json:"note"`
}

type firstToken struct {
	// Medians over the runs, in milliseconds from the composer's submit.
	FirstEventMS       float64 `json:"first_event_ms"`
	FirstTokenEventMS  float64 `json:"first_token_event_ms"`
	FirstTokenScreenMS float64 `json:"first_token_screen_ms"`
	// ScreenAfterEventMS is the median of each run's screen − token event:
	// the page's own share.
	ScreenAfterEventMS float64   `json:"screen_after_event_ms"`
	Samples            []sample  `json:"samples"`
	Max                []float64 `json:"max_ms"`
}

type sample struct {
	FirstEventMS       float64 `json:"first_event_ms"`
	FirstTokenEventMS  float64 `json:"first_token_event_ms"`
	FirstTokenScreenMS float64 `json:"first_token_screen_ms"`
}

type firstLoad struct {
	// UI files: the page and its scripts, styles and icon.
	UITransferBytes int `json:"ui_transfer_bytes"`
	UIEncodedBytes  int `json:"ui_encoded_bytes"`
	UIDecodedBytes  int `json:"ui_decoded_bytes"`
	UIFiles         int `json:"ui_files"`
	// API calls the page makes while loading.
	APITransferBytes int     `json:"api_transfer_bytes"`
	APICalls         int     `json:"api_calls"`
	TargetBytes      int     `json:"target_bytes"`
	UnderTarget      bool    `json:"under_target"`
	ReadyMS          float64 `json:"ready_ms"`
}

type longTasks struct {
	Todos       int       `json:"todos"`
	LatencyMS   float64   `json:"latency_ms"`
	RunMS       float64   `json:"run_ms"`
	Count       int       `json:"count"`
	MaxMS       float64   `json:"max_ms"`
	TotalMS     float64   `json:"total_ms"`
	DurationsMS []float64 `json:"durations_ms"`
	Supported   bool      `json:"longtask_supported"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 5, "messages sent for the first-token figures (the median is reported)")
	latency := fs.Duration("latency", 50*time.Millisecond, "each todo's stub tool latency in the 20-todo plan")
	chromiumFlag := fs.String("chromium", "", "Chromium's path (default $WEFT_CHROMIUM, /usr/bin/chromium, or chromium on the PATH)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *runs < 1 {
		fmt.Fprintln(stderr, "webui: --runs must be at least 1")
		return 2
	}
	bin := *chromiumFlag
	if bin == "" {
		bin = chromium.Path()
	}
	if bin == "" {
		fmt.Fprintln(stderr, "webui: Chromium not found: apt-get install chromium, or pass --chromium")
		return 1
	}
	out, err := measure(ctx, bin, *runs, *latency)
	if err != nil {
		fmt.Fprintln(stderr, "webui:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "webui:", err)
		return 1
	}
	return 0
}

// plan20 is an orchestrator over a stub tool and a scripted model that
// plans the 20 todos for every request.
func plan20(latency time.Duration) server.GraphFunc {
	return func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		plan, _ := dag20.PlanJSON("a plan of 20 todos in 7 levels")
		answer := "## Done\n\nEvery todo of the plan ran.\n\n| level | todos |\n|---|---|\n"
		for i, n := range dag20.Levels {
			answer += fmt.Sprintf("| %d | %d |\n", i+1, n)
		}
		model := scripted.NewScript(scripted.Options{Loop: true},
			scripted.Response{Message: llm.AI(dag20.Cognition)},
			scripted.Response{Message: llm.AI(plan)},
			scripted.Response{Message: llm.AI(answer)},
		)
		a, err := dag20.Agent(saver, model, latency)
		if err != nil {
			return nil, err
		}
		return a.Graph, nil
	}
}

// serve starts weft serve's handler (the API with the UI) on a loopback
// port over a temporary SQLite database.
func serve(ctx context.Context, dir string, latency time.Duration) (string, func(), error) {
	db, err := dburl.Open(ctx, filepath.Join(dir, "weft.db"), dburl.Options{})
	if err != nil {
		return "", nil, err
	}
	srv, err := server.New(ctx, server.Options{
		Graphs: map[string]server.GraphFunc{apitest.EchoID: apitest.Echo, "plan20": plan20(latency)},
		DB:     db,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		db.Close()
		return "", nil, err
	}
	ui, err := webui.New()
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: ui.Mount(srv), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		_ = srv.Shutdown(sctx)
		_ = db.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// browser is a headless Chromium tab.
type browser struct {
	ctx    context.Context
	cancel func()
}

func newBrowser(ctx context.Context, bin, profile string) (*browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		cancelCtx()
		cancelAlloc()
		return nil, fmt.Errorf("starting Chromium (%s): %w", bin, err)
	}
	return &browser{ctx: bctx, cancel: func() { cancelCtx(); cancelAlloc() }}, nil
}

// eval evaluates an expression (awaiting a promise) within a minute.
func eval[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// waitFor polls a JavaScript expression until it is truthy.
func (b *browser) waitFor(what, expr string) error {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// pick selects the assistant of a graph and starts a new conversation.
const pickJS = `(graph) => { const s = document.getElementById("assistant");
	const o = [...s.options].find(o => o.dataset.graph === graph);
	if (!o) return false; s.value = o.value; s.dispatchEvent(new Event("change")); return true }`

// probeJS wraps the page's fetch to timestamp a run stream's chunks (the
// first bytes, and the first carrying a token of a reply), records the
// composer's submit, and watches the reply's first word on screen. All
// times are performance.now().
const probeJS = `(() => {
	const p = window.__probe = {submit: 0, firstEvent: 0, firstTokenEvent: 0, firstScreen: 0};
	const orig = window.__origFetch || (window.__origFetch = window.fetch);
	window.fetch = async (input, init) => {
		const res = await orig(input, init);
		const url = typeof input === "string" ? input : input.url;
		if (!/\/runs\/stream$/.test(url) || !res.body) return res;
		const dec = new TextDecoder();
		const body = res.body.pipeThrough(new TransformStream({transform(chunk, ctl) {
			const now = performance.now();
			if (!p.firstEvent) p.firstEvent = now;
			if (!p.firstTokenEvent && /event: messages/.test(dec.decode(chunk, {stream: true}))) p.firstTokenEvent = now;
			ctl.enqueue(chunk);
		}}));
		return new Response(body, {status: res.status, statusText: res.statusText, headers: res.headers});
	};
	document.getElementById("composer").addEventListener("submit", () => { if (!p.submit) p.submit = performance.now(); }, {capture: true, once: true});
	const before = document.querySelectorAll('[data-testid="msg-ai"]').length;
	const obs = new MutationObserver(() => {
		const ais = document.querySelectorAll('[data-testid="msg-ai"]');
		if (ais.length > before && ais[ais.length - 1].querySelector(".body")?.textContent.trim()) {
			p.firstScreen = performance.now();
			obs.disconnect();
		}
	});
	obs.observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true});
	return true;
})()`

// send types text in the composer and submits it with Enter.
func (b *browser) send(text string) error {
	return b.do(
		chromedp.Focus(chromedp.CSS(`[data-testid="composer-input"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="composer-input"]`), text),
		chromedp.KeyEvent("\r"),
	)
}

func measure(ctx context.Context, bin string, runs int, latency time.Duration) (*report, error) {
	dir, err := os.MkdirTemp("", "weft-bench-webui-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	base, stop, err := serve(ctx, dir, latency)
	if err != nil {
		return nil, err
	}
	defer stop()
	b, err := newBrowser(ctx, bin, filepath.Join(dir, "profile"))
	if err != nil {
		return nil, err
	}
	defer b.cancel()
	out := &report{Runs: runs, Chromium: bin, Note: "figures of this machine at this moment: measure on a quiet machine"}

	// First load, with a cold cache (a fresh profile).
	if err := b.do(chromedp.Navigate(base + "/")); err != nil {
		return nil, err
	}
	if err := b.waitFor("the page to be ready", `document.body.dataset.ready === "true"`); err != nil {
		return nil, err
	}
	type entry struct {
		Name     string  `json:"name"`
		Transfer int     `json:"transfer"`
		Encoded  int     `json:"encoded"`
		Decoded  int     `json:"decoded"`
		End      float64 `json:"end"`
	}
	entries, err := eval[[]entry](b, `[performance.getEntriesByType("navigation")[0], ...performance.getEntriesByType("resource")].map(e => ({
		name: new URL(e.name).pathname, transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize, end: e.responseEnd}))`)
	if err != nil {
		return nil, err
	}
	fl := &out.FirstLoad
	fl.TargetBytes = 200 * 1024
	for _, e := range entries {
		if e.Name == "/" || len(e.Name) > 4 && e.Name[:4] == "/ui/" {
			fl.UIFiles++
			fl.UITransferBytes += e.Transfer
			fl.UIEncodedBytes += e.Encoded
			fl.UIDecodedBytes += e.Decoded
		} else {
			fl.APICalls++
			fl.APITransferBytes += e.Transfer
		}
	}
	fl.UnderTarget = fl.UITransferBytes < fl.TargetBytes
	if fl.ReadyMS, err = eval[float64](b, `performance.now()`); err != nil {
		return nil, err
	}
	fl.ReadyMS = round(fl.ReadyMS)

	// First token, over the echo graph: a new conversation each time.
	if ok, err := eval[bool](b, `(`+pickJS+`)("echo")`); err != nil || !ok {
		return nil, fmt.Errorf("picking echo: %v", err)
	}
	var samples []sample
	for i := range runs {
		if i > 0 {
			if err := b.do(chromedp.Click(chromedp.CSS(`[data-testid="new-thread"]`))); err != nil {
				return nil, err
			}
		}
		if _, err := eval[bool](b, probeJS); err != nil {
			return nil, err
		}
		if err := b.send(fmt.Sprintf("measure the first token, message %d of %d", i+1, runs)); err != nil {
			return nil, err
		}
		if err := b.waitFor("the reply on screen", `window.__probe.firstScreen > 0 && document.getElementById("stop").hidden`); err != nil {
			return nil, err
		}
		p, err := eval[map[string]float64](b, `window.__probe`)
		if err != nil {
			return nil, err
		}
		samples = append(samples, sample{
			FirstEventMS:       round(p["firstEvent"] - p["submit"]),
			FirstTokenEventMS:  round(p["firstTokenEvent"] - p["submit"]),
			FirstTokenScreenMS: round(p["firstScreen"] - p["submit"]),
		})
	}
	ft := &out.FirstToken
	ft.Samples = samples
	pick := func(f func(sample) float64) []float64 {
		var xs []float64
		for _, s := range samples {
			xs = append(xs, f(s))
		}
		return xs
	}
	ft.FirstEventMS = median(pick(func(s sample) float64 { return s.FirstEventMS }))
	ft.FirstTokenEventMS = median(pick(func(s sample) float64 { return s.FirstTokenEventMS }))
	ft.FirstTokenScreenMS = median(pick(func(s sample) float64 { return s.FirstTokenScreenMS }))
	ft.ScreenAfterEventMS = median(pick(func(s sample) float64 { return round(s.FirstTokenScreenMS - s.FirstTokenEventMS) }))
	ft.Max = []float64{slices.Max(pick(func(s sample) float64 { return s.FirstEventMS })), slices.Max(pick(func(s sample) float64 { return s.FirstTokenEventMS })), slices.Max(pick(func(s sample) float64 { return s.FirstTokenScreenMS }))}

	// Long tasks while the 20-todo plan runs.
	if ok, err := eval[bool](b, `(`+pickJS+`)("plan20")`); err != nil || !ok {
		return nil, fmt.Errorf("picking plan20: %v", err)
	}
	if err := b.do(chromedp.Click(chromedp.CSS(`[data-testid="new-thread"]`))); err != nil {
		return nil, err
	}
	supported, err := eval[bool](b, `(() => { window.__long = []; const ok = PerformanceObserver.supportedEntryTypes.includes("longtask");
		if (ok) { window.__longObs = new PerformanceObserver(l => { for (const e of l.getEntries()) window.__long.push(e.duration); }); window.__longObs.observe({type: "longtask"}); }
		window.__runStart = performance.now(); return ok })()`)
	if err != nil {
		return nil, err
	}
	if err := b.send("run the plan of 20 todos"); err != nil {
		return nil, err
	}
	if err := b.waitFor("the 20 todos done", `document.querySelectorAll('[data-testid="orch-todos"] > li[data-status="done"]').length === 20 &&
		document.querySelector('[data-testid="orch-run-status"]')?.dataset.state === "done" && document.getElementById("stop").hidden`); err != nil {
		return nil, err
	}
	// The observer's last entries are delivered in a task of their own.
	lt, err := eval[map[string]any](b, `new Promise(r => setTimeout(() => { if (window.__longObs) window.__longObs.disconnect(); r({durations: window.__long, run: performance.now() - window.__runStart}); }, 100))`)
	if err != nil {
		return nil, err
	}
	_, todos := dag20.PlanJSON("")
	l := &out.LongTasks
	l.Todos, l.LatencyMS, l.Supported = todos, float64(latency)/float64(time.Millisecond), supported
	l.RunMS = round(lt["run"].(float64))
	l.DurationsMS = []float64{}
	for _, d := range lt["durations"].([]any) {
		ms := round(d.(float64))
		l.DurationsMS = append(l.DurationsMS, ms)
		l.Count++
		l.TotalMS = round(l.TotalMS + ms)
		l.MaxMS = max(l.MaxMS, ms)
	}
	return out, nil
}

func round(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return round((s[len(s)/2-1] + s[len(s)/2]) / 2)
}
