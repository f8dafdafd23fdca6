package checkpointtest

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// processCPU returns the CPU time this process used so far, user and
// system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRuns measures whole runs of a graph over savers: each run is on
// a thread of its own, with async durability (a server's default), from
// clients goroutines at once. build makes the graph over a saver. It runs
// one sub-benchmark over s and one over the same driver with Saver.Batch
// hidden (unbatched), so that a run's writes are made one at a time, and
// reports runs/s and the process's CPU time per run (cpu-µs/run) besides
// the usual figures.
func BenchmarkRuns(b *testing.B, s *checkpoint.Saver, clients int, build func(*checkpoint.Saver) (*graph.Graph, error), input func(i int64) graph.Update) {
	savers := []struct {
		name string
		s    *checkpoint.Saver
	}{
		{"batched", s},
		{"unbatched", checkpoint.New(struct{ checkpoint.Driver }{s.Driver()})},
	}
	for _, sv := range savers {
		if sv.name == "batched" && !s.CanBatch() {
			continue
		}
		b.Run(fmt.Sprintf("%s/clients=%d", sv.name, clients), func(b *testing.B) {
			g, err := build(sv.s)
			if err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			prefix := fmt.Sprintf("bench-%s-%d-%d", sv.name, b.N, time.Now().UnixNano())
			b.ReportAllocs()
			b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
			start, cpu0 := time.Now(), processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					opts := graph.RunOptions{ThreadID: fmt.Sprint(prefix, "-", i), Durability: graph.DurabilityAsync}
					if _, err := g.Invoke(context.Background(), input(i), &opts); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
			// CPU time is steadier than runs/s on a shared machine.
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
		})
	}
}
