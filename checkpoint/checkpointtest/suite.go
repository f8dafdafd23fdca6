// Package checkpointtest is the conformance suite every checkpoint backend
// passes: the in-memory driver, SQLite and PostgreSQL run it unchanged.
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) *checkpoint.Saver {
//			d, err := mydriver.Open(...)
//			...
//			t.Cleanup(func() { d.Close() })
//			return checkpoint.New(d)
//		})
//	}
//
// It checks the Saver contract (put, get and list; values stored as deltas
// reading back exactly at every checkpoint; pending-write rules; thread
// management, pruning and rewinding, and their thread ownership;
// concurrent writers; bad input that leaves stored data alone; thread
// leases: busy, wait, expiry, fencing, cancel; writes made in one batch) and runs small graphs of
// package graph on the saver: interrupt and resume, pending writes after a
// failure, fork/replay, a rewind in a long conversation, and concurrent
// runs on one thread.
package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weftlabs/weft/checkpoint"
)

// Run runs the suite. newSaver must return a saver with nothing stored;
// it is called once per subtest.
func Run(t *testing.T, newSaver func(t *testing.T) *checkpoint.Saver) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s *checkpoint.Saver)
	}{
		{"PutGet", testPutGet},
		{"List", testList},
		{"DeltaHistory", testDeltaHistory},
		{"ForkReusesVersions", testForkReusesVersions},
		{"SnapshotCadence", testSnapshotCadence},
		{"PendingWrites", testPendingWrites},
		{"ListThreads", testListThreads},
		{"CopyThread", testCopyThread},
		{"DeleteThread", testDeleteThread},
		{"Prune", testPrune},
		{"Rewind", testRewind},
		{"RestoreWrites", testRestoreWrites},
		{"PatchMetadata", testPatchMetadata},
		{"PruneSubgraphs", testPruneSubgraphs},
		{"RestoreWritesApart", testRestoreWritesApart},
		{"ThreadOpsOwnership", testThreadOpsOwnership},
		{"ConcurrentWriters", testConcurrentWriters},
		{"BadInput", testBadInput},
		{"GraphInterruptResume", testGraphInterruptResume},
		{"GraphPendingWritesAfterFailure", testGraphPendingWrites},
		{"GraphForkReplay", testGraphForkReplay},
		{"GraphRewind", testGraphRewind},
		{"LeaseBusy", testLeaseBusy},
		{"LeaseWaitRelease", testLeaseWaitRelease},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseFencing", testLeaseFencing},
		{"LeaseCancel", testLeaseCancel},
		{"LeaseReleaseWith", testLeaseReleaseWith},
		{"LeaseAdopt", testLeaseAdopt},
		{"GraphOneWriterPerThread", testGraphOneWriterPerThread},
		{"GraphUpdateStateBusy", testGraphUpdateStateBusy},
		{"GraphLeaseLoss", testGraphLeaseLoss},
		{"Batch", testBatch},
		{"GraphBatched", testGraphBatched},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newSaver(t))
		})
	}
}

// ---------------------------------------------------------------- helpers

var bg = context.Background()

// cp builds a checkpoint.
func cp(id string, versions map[string]int64, seen map[string]map[string]int64, updated ...string) *checkpoint.Checkpoint {
	if versions == nil {
		versions = map[string]int64{}
	}
	if seen == nil {
		seen = map[string]map[string]int64{}
	}
	return &checkpoint.Checkpoint{
		V:               checkpoint.FormatVersion,
		ID:              id,
		TS:              time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(len(id)) * time.Nanosecond),
		Versions:        versions,
		VersionsSeen:    seen,
		UpdatedChannels: updated,
	}
}

// idGen makes time-ordered ids for a test.
type idGen struct{ n int }

func (g *idGen) next() string {
	g.n++
	return fmt.Sprintf("%08d", g.n)
}

func full(ch string, v int64, value string) checkpoint.Blob {
	return checkpoint.Blob{Channel: ch, Version: v, Value: json.RawMessage(value)}
}

func appended(ch string, v, base int64, items ...string) checkpoint.Blob {
	b := checkpoint.Blob{Channel: ch, Version: v, BaseVersion: base, Appended: []json.RawMessage{}}
	for _, it := range items {
		b.Appended = append(b.Appended, json.RawMessage(it))
	}
	return b
}

func mustPut(t *testing.T, s *checkpoint.Saver, thread, ns, parent string, c *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs ...checkpoint.Blob) checkpoint.Config {
	t.Helper()
	cfg, err := s.Put(bg, checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: parent}, c, meta, blobs)
	if err != nil {
		t.Fatalf("Put %s in thread %q ns %q: %v", c.ID, thread, ns, err)
	}
	want := checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: c.ID}
	if cfg != want {
		t.Fatalf("Put returned %+v, want %+v", cfg, want)
	}
	return cfg
}

func mustGet(t *testing.T, s *checkpoint.Saver, thread, ns, id string) *checkpoint.Tuple {
	t.Helper()
	tp, err := s.Get(bg, checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: id})
	if err != nil {
		t.Fatalf("Get %q/%q/%q: %v", thread, ns, id, err)
	}
	if tp == nil {
		t.Fatalf("Get %q/%q/%q: no checkpoint", thread, ns, id)
	}
	return tp
}

func collect[T any](t *testing.T, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("iterating: %v", err)
		}
		out = append(out, v)
	}
	return out
}

func ids(tps []*checkpoint.Tuple) []string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.Config.CheckpointID
	}
	return out
}

// values renders a checkpoint's values as strings, for readable diffs.
func values(tp *checkpoint.Tuple) map[string]string {
	out := map[string]string{}
	for k, v := range tp.Checkpoint.Values {
		out[k] = string(v)
	}
	return out
}

// dump reads everything stored for a thread, for before/after comparisons.
func dump(t *testing.T, s *checkpoint.Saver, thread string) []*checkpoint.Tuple {
	t.Helper()
	return collect(t, s.List(bg, thread, checkpoint.ListOptions{}))
}

// tupleOpts compares tuples: an empty list of pending writes equals none,
// and an empty updated-channels list equals none (the in-memory driver does
// not tell them apart).
var tupleOpts = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != rawType }, cmpopts.EquateEmpty()),
	// A value of nil (a write without one) is not the JSON null.
	cmp.Transformer("raw", func(m json.RawMessage) string {
		if m == nil {
			return "<no value>"
		}
		return string(m)
	}),
}

var rawType = reflect.TypeFor[json.RawMessage]()

func diffTuples(a, b []*checkpoint.Tuple) string { return cmp.Diff(a, b, tupleOpts) }

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}
