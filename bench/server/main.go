// Command server is a load generator for servers that speak the LangGraph
// Server API and serve the test graphs of ../shared/bench/server/GRAPHS.md:
// weft (`weft serve --graphs apitest`) and the reference JS server
// (../shared/bench/server/start-reference.sh).
//
// It does what ../shared/bench/server/load.mjs does, without being the
// bottleneck: load.mjs, which drives the JS SDK, tops out near 430 to 830
// runs/s on a 2-core machine even against a trivial server.
//
// # Runs
//
//	go run ./bench/server --url URL [--clients 200] [--runs-per-client 1] [--pid PID[,PID...]] [--words 8]
//
// Each of --clients concurrent clients does --runs-per-client runs, one
// after the other: it creates a thread (POST /threads) and streams one run
// of the echo graph (POST /threads/{id}/runs/stream, stream_mode values and
// messages-tuple) on an input of --words words, reading the SSE stream to
// its end: 11 events for 8 words (metadata, values, 8 messages, values).
// A run is ok when the stream had no error event and its last values event
// holds the human message and the echoed AI message. Latency is the thread
// creation plus the whole stream.
//
// The generator shares the machine with the server, so every bit of CPU it
// spends per run is taken from the server. Each client therefore keeps one
// HTTP/1.1 connection alive and drives it from its own goroutine with a
// small client of its own (http1.go) instead of net/http's Transport, whose
// reading and writing goroutines per connection cost a hand-off per
// request and answer: each request is one write, each answer is read
// through a 64 KiB buffer (a run's burst of messages events is one read),
// and only the last values event is decoded. That cut the generator's CPU
// per run against weft by about 37% (median 0.27 ms to 0.17 ms, 200
// clients x 20 runs, alternated with the net/http version on a busy
// machine; docs/benchmarks.md). The client reads answers framed by Content-Length, chunked
// transfer coding (the reference's Node server) or the connection's end,
// honours Connection: close, replaces a connection idle for over a second
// (a server may have closed it) and never sends a request twice; any other
// answer is an error.
//
// It prints one JSON line with load.mjs's fields, then the generator's own:
//
//	{"url","clients","runs","ok","errors","wall_s","runs_per_s","p50_ms","p90_ms","p99_ms","max_ms",
//	 "events_per_run","rss_mb_server_before","rss_mb_server","rss_mb_server_peak",
//	 "rss_mb_largest_process_peak","server_pids","error_samples",
//	 "generator","generator_cpu_s","loadavg_before","loadavg_after"}
//
// # Open streams
//
//	go run ./bench/server --url URL --open-streams 5000 [--hold 10s] [--delay-ms 600000] [--pid PID]
//
// It creates --open-streams threads, then opens one stream per thread on a
// run of the slow graph that sleeps --delay-ms (stream_mode values,
// on_disconnect cancel), --parallel at a time. A stream counts as open at
// its first event and as running at its first values event. Once every
// stream is open and every run has started (or --settle has passed) it
// holds them all for --hold, polling the server's RSS, then closes them
// (the server then cancels the runs). It prints:
//
//	{"url","mode","streams","opened","running","errors","open_s","settle_s","hold_s",
//	 "rss_mb_server_before","rss_mb_server_open","rss_mb_server_peak",
//	 "rss_mb_largest_process_peak","rss_mb_server_after_close","server_pids",
//	 "generator_rss_mb","nofile_limit","loadavg_before","loadavg_after","error_samples"}
//
// Each stream holds a file descriptor in the generator and one in the
// server. Go raises the soft open-file limit to the hard one at start, so
// the generator refuses to start when the hard limit is below what it
// needs (raise it with `ulimit -Hn`); a server started from the same shell
// has the same limit. Each connection to one server address takes a local
// port from net.ipv4.ip_local_port_range (28,232 ports by default); past
// that, --source-addrs spreads connections over several loopback addresses.
//
// # Common flags
//
// Server RSS is VmRSS from /proc/PID/status summed over the process groups
// of the --pid processes, polled every 100 ms for the peak (the reference
// server: --pid "$(cat .run/reference.pid)"). Without --pid the RSS fields
// are null. --timeout bounds each run or stream. The load averages are
// /proc/loadavg's three figures, to tell a busy machine from a slow server.
//
// It exits 1 when a run or stream failed, 2 on bad flags.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	url           string
	clients       int
	runsPerClient int
	words         int
	pids          []int
	timeout       time.Duration
	openStreams   int
	hold          time.Duration
	settle        time.Duration
	delayMS       int
	parallel      int
	sourceAddrs   []net.IP
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:2024", "the server's base URL")
	fs.IntVar(&cfg.clients, "clients", 200, "concurrent clients")
	fs.IntVar(&cfg.runsPerClient, "runs-per-client", 1, "runs each client does, one after the other")
	fs.IntVar(&cfg.words, "words", 8, "words in each run's input: one messages event per word")
	pids := fs.String("pid", "", "comma-separated server process ids: RSS is summed over their process groups")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "bound on each run (thread creation and stream) or open stream")
	fs.IntVar(&cfg.openStreams, "open-streams", 0, "hold this many streams open at once instead of doing runs")
	fs.DurationVar(&cfg.hold, "hold", 10*time.Second, "with --open-streams: how long to hold every stream open")
	fs.DurationVar(&cfg.settle, "settle", 30*time.Second, "with --open-streams: how long to wait, once every stream is open, for every run to start")
	fs.IntVar(&cfg.delayMS, "delay-ms", 600000, "with --open-streams: how long each slow run sleeps, in ms")
	fs.IntVar(&cfg.parallel, "parallel", 100, "with --open-streams: threads created and streams being opened at a time")
	cpuProfile := fs.String("cpuprofile", "", "write the generator's CPU profile to `file`")
	sources := fs.String("source-addrs", "", "comma-separated local IP addresses to spread connections over (default: the system's choice)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "server: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	cfg.url = strings.TrimRight(cfg.url, "/")
	if !strings.HasPrefix(cfg.url, "http://") && !strings.HasPrefix(cfg.url, "https://") {
		return bad("--url must be an http:// or https:// URL, got %q", cfg.url)
	}
	if u, err := url.Parse(cfg.url); err != nil || u.Host == "" {
		return bad("--url must be an http:// or https:// URL with a host, got %q", cfg.url)
	}
	switch {
	case cfg.clients < 1:
		return bad("--clients must be at least 1, got %d", cfg.clients)
	case cfg.runsPerClient < 1:
		return bad("--runs-per-client must be at least 1, got %d", cfg.runsPerClient)
	case cfg.words < 1:
		return bad("--words must be at least 1, got %d", cfg.words)
	case cfg.timeout <= 0:
		return bad("--timeout must be positive, got %v", cfg.timeout)
	case cfg.openStreams < 0:
		return bad("--open-streams must not be negative, got %d", cfg.openStreams)
	case cfg.hold < 0:
		return bad("--hold must not be negative, got %v", cfg.hold)
	case cfg.settle < 0:
		return bad("--settle must not be negative, got %v", cfg.settle)
	case cfg.delayMS < 1:
		return bad("--delay-ms must be at least 1, got %d", cfg.delayMS)
	case cfg.parallel < 1:
		return bad("--parallel must be at least 1, got %d", cfg.parallel)
	}
	for _, p := range splitList(*pids) {
		pid, err := strconv.Atoi(p)
		if err != nil || pid < 1 {
			return bad("--pid takes process ids, got %q", p)
		}
		cfg.pids = append(cfg.pids, pid)
	}
	for _, a := range splitList(*sources) {
		ip := net.ParseIP(a)
		if ip == nil {
			return bad("--source-addrs takes IP addresses, got %q", a)
		}
		cfg.sourceAddrs = append(cfg.sourceAddrs, ip)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return bad("--cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return bad("--cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.openStreams > 0 {
		// Each stream holds a descriptor; keep room for the rest.
		if lim := fileLimit(); lim != 0 && uint64(cfg.openStreams)+256 > lim {
			return bad("--open-streams %d needs about %d open files, the limit is %d: raise it (ulimit -n / ulimit -Hn)", cfg.openStreams, cfg.openStreams+256, lim)
		}
		return openStreams(ctx, cfg, stdout, stderr)
	}
	return loadRuns(ctx, cfg, stdout, stderr)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// newDialer returns a dial function that dials from sources in turn, if
// any, else from the system's choice.
func newDialer(sources []net.IP) dialFunc {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if len(sources) == 0 {
		return d.DialContext
	}
	var n atomic.Uint64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		dd := *d
		dd.LocalAddr = &net.TCPAddr{IP: sources[n.Add(1)%uint64(len(sources))]}
		return dd.DialContext(ctx, network, addr)
	}
}

// newHTTPClient returns a client whose transport keeps up to idle
// connections alive to the server, gives each connection read and write
// buffers of bufSize bytes, and dials from sources in turn, if any.
func newHTTPClient(idle, bufSize int, sources []net.IP) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil, // a benchmark talks to the server, not a proxy
		DialContext:         newDialer(sources),
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     bufSize,
		ReadBufferSize:      bufSize,
	}}
}

// loadResult is the output of the runs mode; its first fields are load.mjs's.
type loadResult struct {
	URL                     string    `json:"url"`
	Clients                 int       `json:"clients"`
	Runs                    int       `json:"runs"`
	OK                      int       `json:"ok"`
	Errors                  int       `json:"errors"`
	WallS                   float64   `json:"wall_s"`
	RunsPerS                float64   `json:"runs_per_s"`
	P50MS                   *int64    `json:"p50_ms"`
	P90MS                   *int64    `json:"p90_ms"`
	P99MS                   *int64    `json:"p99_ms"`
	MaxMS                   *int64    `json:"max_ms"`
	EventsPerRun            *float64  `json:"events_per_run"`
	RSSMBServerBefore       *float64  `json:"rss_mb_server_before"`
	RSSMBServer             *float64  `json:"rss_mb_server"`
	RSSMBServerPeak         *float64  `json:"rss_mb_server_peak"`
	RSSMBLargestProcessPeak *float64  `json:"rss_mb_largest_process_peak"`
	ServerPIDs              int       `json:"server_pids"`
	ErrorSamples            []string  `json:"error_samples"`
	Generator               string    `json:"generator"`
	GeneratorCPUS           float64   `json:"generator_cpu_s"`
	LoadAvgBefore           []float64 `json:"loadavg_before"`
	LoadAvgAfter            []float64 `json:"loadavg_after"`
}

// errorLog counts errors and keeps a few distinct samples.
type errorLog struct {
	mu      sync.Mutex
	n       int
	samples []string
}

func (l *errorLog) add(err error) {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.samples) < 5 && !slices.Contains(l.samples, msg) {
		l.samples = append(l.samples, msg)
	}
}

func (l *errorLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *errorLog) sampled() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.samples...)
}

func loadRuns(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	words := make([]string, cfg.words)
	for i := range words {
		words[i] = "w" + strconv.Itoa(i)
	}
	text := strings.Join(words, " ")
	body, err := json.Marshal(map[string]any{
		"assistant_id": "echo",
		"input":        map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}},
		"stream_mode":  []string{"values", "messages-tuple"},
	})
	if err != nil {
		fmt.Fprintf(stderr, "server: %v\n", err)
		return 1
	}
	base, err := url.Parse(cfg.url) // checked by run
	if err != nil {
		fmt.Fprintf(stderr, "server: --url: %v\n", err)
		return 2
	}
	dial := newDialer(cfg.sourceAddrs)

	sampler := newRSSSampler(cfg.pids)
	out := loadResult{URL: cfg.url, Clients: cfg.clients, Runs: cfg.clients * cfg.runsPerClient, Generator: "go", LoadAvgBefore: loadAvg()}
	out.RSSMBServerBefore = sampler.sampleMB()
	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() { sampler.poll(pollCtx, 100*time.Millisecond); close(polled) }()

	var (
		errs      errorLog
		mu        sync.Mutex
		latencies []time.Duration
		events    int
	)
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 64 KiB: a run's burst of messages events is one read.
			c := &loadClient{h: newH1Client(base, dial, 64<<10), prefix: base.EscapedPath(), timeout: cfg.timeout, body: body, text: text, sse: newSSEReader(nil, 16<<10)}
			defer c.h.close()
			var lat []time.Duration
			n := 0
			for range cfg.runsPerClient {
				if err := ctx.Err(); err != nil {
					errs.add(err)
					continue
				}
				t0 := time.Now()
				ev, err := c.oneRun()
				if err != nil {
					errs.add(err)
					continue
				}
				lat = append(lat, time.Since(t0))
				n += ev
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			events += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	out.GeneratorCPUS = round(cpuTime().Seconds()-cpu0.Seconds(), 2)
	stopPoll()
	<-polled
	out.RSSMBServer = sampler.sampleMB()
	out.RSSMBServerPeak, out.RSSMBLargestProcessPeak = sampler.peaks()
	out.ServerPIDs = len(sampler.pids)

	slices.Sort(latencies)
	out.OK = len(latencies)
	out.Errors = errs.count()
	out.ErrorSamples = errs.sampled()
	out.WallS = round(wall.Seconds(), 2)
	out.RunsPerS = round(float64(out.OK)/wall.Seconds(), 1)
	if n := len(latencies); n > 0 {
		pct := func(p float64) *int64 {
			v := latencies[min(n-1, int(math.Floor(p/100*float64(n))))]
			ms := int64(math.Round(float64(v) / float64(time.Millisecond)))
			return &ms
		}
		out.P50MS, out.P90MS, out.P99MS = pct(50), pct(90), pct(99)
		maxMS := int64(math.Round(float64(latencies[n-1]) / float64(time.Millisecond)))
		out.MaxMS = &maxMS
		epr := round(float64(events)/float64(n), 1)
		out.EventsPerRun = &epr
	}
	out.LoadAvgAfter = loadAvg()
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "server: %v\n", err)
		return 1
	}
	if out.Errors > 0 {
		return 1
	}
	return 0
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// loadClient is one client of the runs mode, on a connection of its own;
// its buffers are reused from run to run.
type loadClient struct {
	h       *h1Client
	prefix  string // the URL's path, before every request's
	timeout time.Duration
	body    []byte // the stream request, the same for every run
	text    string // the input the echo graph must echo
	sse     *sseReader
	path    []byte // a request's path
	buf     []byte // a thread creation's answer
	values  []byte // the last values event's data
}

var threadBody = []byte(`{"metadata":{"load":true}}`)

// oneRun creates a thread and streams one echo run on it within
// c.timeout, returning the number of events read.
func (c *loadClient) oneRun() (int, error) {
	c.h.deadline = time.Now().Add(c.timeout)
	n, err := c.run()
	if err != nil {
		c.h.close() // whatever is left of the answer is not read
		// A read or write past the deadline, or a dial cut short by it.
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the run took longer than --timeout %v: %w", c.timeout, err)
		}
	}
	return n, err
}

func (c *loadClient) run() (int, error) {
	tid, err := c.createThread()
	if err != nil {
		return 0, err
	}
	c.path = append(append(append(append(c.path[:0], c.prefix...), "/threads/"...), tid...), "/runs/stream"...)
	status, err := c.h.post(c.path, c.body, "text/event-stream")
	if err != nil {
		return 0, fmt.Errorf("POST /threads/{id}/runs/stream: %w", err)
	}
	if status != http.StatusOK {
		return 0, statusError("POST /threads/{id}/runs/stream", status, c.h)
	}
	c.sse.reset(c.h)
	n := 0
	c.values = c.values[:0]
	for {
		err := c.sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("reading the stream after %d events: %w", n, err)
		}
		n++
		switch string(c.sse.event) {
		case "error":
			return n, fmt.Errorf("stream error event: %s", c.sse.data)
		case "values":
			c.values = append(c.values[:0], c.sse.data...)
		}
	}
	c.h.finish()
	var final struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(c.values, &final); err != nil {
		return n, fmt.Errorf("the last values event is not the echo state (%d events): %w", n, err)
	}
	if len(final.Messages) != 2 || final.Messages[1].Content != c.text {
		return n, fmt.Errorf("unexpected final values (%d messages)", len(final.Messages))
	}
	return n, nil
}

// maxThreadAnswer bounds the answer to a thread creation.
const maxThreadAnswer = 1 << 20

// createThread creates a thread and returns its id.
func (c *loadClient) createThread() (string, error) {
	c.path = append(append(c.path[:0], c.prefix...), "/threads"...)
	status, err := c.h.post(c.path, threadBody, "application/json")
	if err != nil {
		return "", fmt.Errorf("POST /threads: %w", err)
	}
	if status != http.StatusOK {
		return "", statusError("POST /threads", status, c.h)
	}
	c.buf = c.buf[:0]
	for {
		if len(c.buf) == cap(c.buf) {
			if len(c.buf) >= maxThreadAnswer {
				return "", fmt.Errorf("POST /threads: the answer is longer than %d bytes", maxThreadAnswer)
			}
			c.buf = slices.Grow(c.buf, max(512, len(c.buf)))
		}
		n, err := c.h.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("POST /threads: reading the answer: %w", err)
		}
	}
	c.h.finish()
	return threadID(c.buf)
}

// createThread creates a thread through hc and returns its id; buf is
// reused for the answer.
func createThread(ctx context.Context, hc *http.Client, url string, buf *bytes.Buffer) (string, error) {
	resp, err := post(ctx, hc, url+"/threads", threadBody, "application/json")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", statusError("POST /threads", resp.StatusCode, resp.Body)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxThreadAnswer)); err != nil {
		return "", fmt.Errorf("POST /threads: reading the answer: %w", err)
	}
	return threadID(buf.Bytes())
}

// threadID returns the thread_id of a thread creation's answer.
func threadID(answer []byte) (string, error) {
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(answer, &th); err != nil || th.ThreadID == "" {
		return "", fmt.Errorf("POST /threads: no thread_id in %.200q", answer)
	}
	return th.ThreadID, nil
}

func post(ctx context.Context, hc *http.Client, url string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	return hc.Do(req)
}

// statusError reads a little of a failed answer's body into an error.
func statusError(what string, status int, body io.Reader) error {
	b, _ := io.ReadAll(io.LimitReader(body, 300))
	return fmt.Errorf("%s: HTTP %d: %s", what, status, bytes.TrimSpace(b))
}

// errEarlyEnd is a stream that ended while it should have stayed open.
var errEarlyEnd = errors.New("the stream ended before it was closed")
