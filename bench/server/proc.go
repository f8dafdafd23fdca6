package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"strconv"
	"sync"
	"time"
)

// The server's memory is read from /proc, as load.mjs does: VmRSS from
// /proc/PID/status, summed over every process in the process groups of the
// --pid processes (the reference server is a CLI, a tsx watcher and the
// server itself).

// pgidOf returns the process group of pid, from /proc/PID/stat.
func pgidOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces and parentheses: the fields that
	// matter follow the last ')': state, ppid, pgrp.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	return g, err == nil
}

// groupPIDs returns roots and every process sharing a process group with
// one of them, except a group the generator is in itself: a server started
// in the background of a script shares the script's group, which holds the
// generator too, so then only the root counts.
func groupPIDs(roots []int) []int {
	if len(roots) == 0 {
		return nil
	}
	own, _ := pgidOf(os.Getpid())
	groups := map[int]bool{}
	seen := map[int]bool{}
	var pids []int
	for _, r := range roots {
		if g, ok := pgidOf(r); ok && g != own {
			groups[g] = true
		}
		if !seen[r] {
			seen[r] = true
			pids = append(pids, r)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || seen[pid] {
			continue
		}
		if g, ok := pgidOf(pid); ok && groups[g] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids
}

// vmRSSKB returns a process's resident set size in kB.
func vmRSSKB(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	i := bytes.Index(b, []byte("VmRSS:"))
	if i < 0 {
		return 0, false // a zombie or a kernel thread
	}
	f := bytes.Fields(b[i+len("VmRSS:"):])
	if len(f) == 0 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	return kb, err == nil
}

// rssSampler tracks the summed RSS of a set of processes and its peak.
type rssSampler struct {
	pids []int

	mu        sync.Mutex
	peakKB    int64
	largestKB int64 // the largest single process seen
}

func newRSSSampler(roots []int) *rssSampler {
	return &rssSampler{pids: groupPIDs(roots)}
}

// sampleMB returns the summed RSS in MB (one decimal), or nil when no
// process could be read, and updates the peaks.
func (s *rssSampler) sampleMB() *float64 {
	var sum int64
	seen := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pids {
		kb, ok := vmRSSKB(p)
		if !ok {
			continue
		}
		sum += kb
		seen++
		s.largestKB = max(s.largestKB, kb)
	}
	if seen == 0 {
		return nil
	}
	s.peakKB = max(s.peakKB, sum)
	return mb(sum)
}

// poll samples every interval until ctx ends, so the peak is known.
func (s *rssSampler) poll(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sampleMB()
		}
	}
}

// peaks returns the peak of the sum and of the largest process, in MB, or
// nils when there are no processes to watch.
func (s *rssSampler) peaks() (sum, largest *float64) {
	if len(s.pids) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return mb(s.peakKB), mb(s.largestKB)
}

func mb(kb int64) *float64 {
	v := math.Round(float64(kb)/102.4) / 10
	return &v
}

// loadAvg returns the 1, 5 and 15 minute load averages, or nil.
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(string(f[i]), 64)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}
