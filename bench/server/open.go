package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// openResult is the output of the open-streams mode.
type openResult struct {
	URL     string `json:"url"`
	Mode    string `json:"mode"`
	Streams int    `json:"streams"`
	// Opened counts streams whose first event arrived; Running those whose
	// run started (a values event), at the end of the hold. OpenS is the
	// time to open them all, SettleS the wait after that for their runs to
	// start (bounded by --settle).
	Opened  int     `json:"opened"`
	Running int     `json:"running"`
	Errors  int     `json:"errors"`
	OpenS   float64 `json:"open_s"`
	SettleS float64 `json:"settle_s"`
	HoldS   float64 `json:"hold_s"`

	RSSMBServerBefore       *float64  `json:"rss_mb_server_before"`
	RSSMBServerOpen         *float64  `json:"rss_mb_server_open"`
	RSSMBServerPeak         *float64  `json:"rss_mb_server_peak"`
	RSSMBLargestProcessPeak *float64  `json:"rss_mb_largest_process_peak"`
	RSSMBServerAfterClose   *float64  `json:"rss_mb_server_after_close"`
	ServerPIDs              int       `json:"server_pids"`
	GeneratorRSSMB          *float64  `json:"generator_rss_mb"`
	FileLimit               uint64    `json:"nofile_limit"`
	LoadAvgBefore           []float64 `json:"loadavg_before"`
	LoadAvgAfter            []float64 `json:"loadavg_after"`
	ErrorSamples            []string  `json:"error_samples"`
}

func openStreams(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	n := cfg.openStreams
	body, err := json.Marshal(map[string]any{
		"assistant_id":  "slow",
		"input":         map[string]any{"delay_ms": cfg.delayMS, "tag": "open"},
		"stream_mode":   []string{"values"},
		"on_disconnect": "cancel",
	})
	if err != nil {
		fmt.Fprintf(stderr, "server: %v\n", err)
		return 1
	}
	// Small buffers: thousands of connections mostly sit idle.
	hc := newHTTPClient(cfg.parallel+16, 2<<10, cfg.sourceAddrs)
	defer hc.CloseIdleConnections()
	sampler := newRSSSampler(cfg.pids)
	out := openResult{URL: cfg.url, Mode: "open-streams", Streams: n, FileLimit: fileLimit(), LoadAvgBefore: loadAvg()}
	out.RSSMBServerBefore = sampler.sampleMB()
	var errs errorLog

	// Threads first, so that opening the streams is all that is measured.
	tids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(cfg.parallel, n) {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				tctx, cancel := context.WithTimeout(ctx, cfg.timeout)
				tid, err := createThread(tctx, hc, cfg.url, &buf)
				cancel()
				if err != nil {
					errs.add(err)
					continue
				}
				tids[i] = tid
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(stderr, "server: %d threads created; opening streams\n", n-errs.count())

	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() { sampler.poll(pollCtx, 100*time.Millisecond); close(polled) }()

	// Each stream lives until closeAll; a semaphore bounds how many are
	// being set up (request sent, first event not yet read) at a time.
	closeCtx, closeAll := context.WithCancel(ctx)
	defer closeAll()
	var (
		opened, running atomic.Int64
		closing         atomic.Bool
		setup           sync.WaitGroup
		streams         sync.WaitGroup
	)
	sem := make(chan struct{}, cfg.parallel)
	start := time.Now()
	for _, tid := range tids {
		if tid == "" {
			continue
		}
		setup.Add(1)
		streams.Add(1)
		sem <- struct{}{}
		go func() {
			defer streams.Done()
			set := sync.OnceFunc(func() { <-sem; setup.Done() })
			defer set()
			err := holdStream(closeCtx, hc, cfg, tid, body, func() { opened.Add(1); set() }, func() { running.Add(1) })
			if err != nil && !closing.Load() {
				errs.add(err)
			}
		}()
	}
	setup.Wait()
	out.OpenS = round(time.Since(start).Seconds(), 2)
	out.Opened = int(opened.Load())
	// A stream opens at its first event; its run may start a little later
	// (or, on a server with few workers, much later).
	settle := time.Now().Add(cfg.settle)
	for opened.Load() > 0 && running.Load() < opened.Load() && time.Now().Before(settle) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	out.SettleS = round(time.Since(start).Seconds()-out.OpenS, 2)
	fmt.Fprintf(stderr, "server: %d streams open after %.1f s, %d running after %.1f s more; holding them %v\n", out.Opened, out.OpenS, running.Load(), out.SettleS, cfg.hold)

	holdStart := time.Now()
	if out.Opened > 0 {
		select {
		case <-time.After(cfg.hold):
		case <-ctx.Done():
		}
	}
	out.HoldS = round(time.Since(holdStart).Seconds(), 2)
	out.RSSMBServerOpen = sampler.sampleMB()
	out.Running = int(running.Load())
	out.GeneratorRSSMB = selfRSSMB()
	stopPoll()
	<-polled
	out.RSSMBServerPeak, out.RSSMBLargestProcessPeak = sampler.peaks()

	closing.Store(true)
	closeAll()
	streams.Wait()
	// Let the server see the disconnects and cancel the runs.
	time.Sleep(2 * time.Second)
	out.RSSMBServerAfterClose = sampler.sampleMB()
	out.ServerPIDs = len(sampler.pids)
	out.Errors = errs.count()
	out.ErrorSamples = errs.sampled()
	out.LoadAvgAfter = loadAvg()
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "server: %v\n", err)
		return 1
	}
	if out.Errors > 0 || out.Opened < n {
		return 1
	}
	return 0
}

// holdStream opens one stream and reads it until ctx ends, calling opened
// at its first event and started at its first values event. Setting it up
// is bounded by cfg.timeout; holding it is not.
func holdStream(ctx context.Context, hc *http.Client, cfg config, tid string, body []byte, opened, started func()) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first atomic.Bool
	timer := time.AfterFunc(cfg.timeout, func() {
		if !first.Load() {
			cancel()
		}
	})
	defer timer.Stop()
	resp, err := post(sctx, hc, cfg.url+"/threads/"+tid+"/runs/stream", body, "text/event-stream")
	if err != nil {
		if !first.Load() && sctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("no answer within %v", cfg.timeout)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError("POST /threads/{id}/runs/stream", resp.StatusCode, resp.Body)
	}
	sse := newSSEReader(resp.Body, 2<<10)
	gotValues := false
	for {
		err := sse.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil // closed by us
			}
			if !first.Load() && sctx.Err() != nil {
				return fmt.Errorf("no event within %v", cfg.timeout)
			}
			if err == io.EOF {
				return errEarlyEnd
			}
			return err
		}
		if !first.Swap(true) {
			opened()
		}
		switch string(sse.event) {
		case "error":
			return fmt.Errorf("stream error event: %s", sse.data)
		case "values":
			if !gotValues {
				gotValues = true
				started()
			}
		}
	}
}

// selfRSSMB returns the generator's own RSS in MB.
func selfRSSMB() *float64 {
	kb, ok := vmRSSKB(os.Getpid())
	if !ok {
		return nil
	}
	return mb(kb)
}
