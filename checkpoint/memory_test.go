package checkpoint_test

// Unit tests of the Saver and the in-memory driver. Each case names the
// LangGraph checkpointer test (libs/checkpoint/tests) whose behaviour it
// mirrors; the code is weft's own.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
)

var mtCtx = context.Background()

// mtCP returns a checkpoint whose channels have the given versions.
func mtCP(id string, versions map[string]int64) *checkpoint.Checkpoint {
	return &checkpoint.Checkpoint{
		V:            checkpoint.FormatVersion,
		ID:           id,
		TS:           time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Versions:     versions,
		VersionsSeen: map[string]map[string]int64{"node": {"a": 1}},
	}
}

func mtBlob(ch string, v int64, value string) checkpoint.Blob {
	return checkpoint.Blob{Channel: ch, Version: v, Value: json.RawMessage(value)}
}

func mtPut(t *testing.T, s *checkpoint.Saver, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs ...checkpoint.Blob) checkpoint.Config {
	t.Helper()
	out, err := s.Put(mtCtx, cfg, cp, meta, blobs)
	if err != nil {
		t.Fatalf("Put %s: %v", cp.ID, err)
	}
	return out
}

func mtGet(t *testing.T, s *checkpoint.Saver, cfg checkpoint.Config) *checkpoint.Tuple {
	t.Helper()
	tp, err := s.Get(mtCtx, cfg)
	if err != nil {
		t.Fatalf("Get %s: %v", cfg, err)
	}
	return tp
}

func mtValues(tp *checkpoint.Tuple) map[string]string {
	out := map[string]string{}
	for k, v := range tp.Checkpoint.Values {
		out[k] = string(v)
	}
	return out
}

func mtList(t *testing.T, s *checkpoint.Saver, thread string, o checkpoint.ListOptions) []string {
	t.Helper()
	var ids []string
	for tp, err := range s.List(mtCtx, thread, o) {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		ids = append(ids, tp.Config.CheckpointID)
	}
	return ids
}

// mtChain saves three checkpoints on thread "t", each the parent of the next,
// and returns their ids oldest first.
func mtChain(t *testing.T, s *checkpoint.Saver) []string {
	t.Helper()
	var ids []string
	parent := ""
	for i, src := range []string{"input", "loop", "loop"} {
		id := checkpoint.NewID()
		cp := mtCP(id, map[string]int64{"x": int64(i + 1)})
		cfg := mtPut(t, s, checkpoint.Config{ThreadID: "t", CheckpointID: parent}, cp,
			checkpoint.Metadata{Source: src, Step: i - 1, Extra: map[string]any{"user": fmt.Sprint("u", i%2)}},
			mtBlob("x", int64(i+1), fmt.Sprint(i*10)))
		parent = cfg.CheckpointID
		ids = append(ids, id)
	}
	return ids
}

// Mirrors test_memory.py::test_memory_saver (put / get_tuple): the latest
// checkpoint of a thread, or one by id, comes back with its values rebuilt
// from the blobs of each channel's version, its metadata and its parent;
// an unknown thread gives nothing, an unknown id ErrNotFound.
func TestMemoryPutGet(t *testing.T) {
	s := checkpoint.NewMemory()
	ids := mtChain(t, s)

	latest := mtGet(t, s, checkpoint.Config{ThreadID: "t"})
	if latest.Config != (checkpoint.Config{ThreadID: "t", CheckpointID: ids[2]}) {
		t.Errorf("latest config = %v", latest.Config)
	}
	if latest.Parent == nil || latest.Parent.CheckpointID != ids[1] {
		t.Errorf("latest parent = %v, want %s", latest.Parent, ids[1])
	}
	if d := cmp.Diff(map[string]string{"x": "20"}, mtValues(latest)); d != "" {
		t.Errorf("latest mtValues (-want +got):\n%s", d)
	}
	if d := cmp.Diff(checkpoint.Metadata{Source: "loop", Step: 1, Extra: map[string]any{"user": "u0"}}, latest.Metadata); d != "" {
		t.Errorf("latest metadata (-want +got):\n%s", d)
	}

	first := mtGet(t, s, checkpoint.Config{ThreadID: "t", CheckpointID: ids[0]})
	if first.Checkpoint.ID != ids[0] || first.Parent != nil {
		t.Errorf("first = %v (parent %v), want %s with no parent", first.Config, first.Parent, ids[0])
	}
	if d := cmp.Diff(map[string]string{"x": "0"}, mtValues(first)); d != "" {
		t.Errorf("first mtValues (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]map[string]int64{"node": {"a": 1}}, first.Checkpoint.VersionsSeen); d != "" {
		t.Errorf("versions seen (-want +got):\n%s", d)
	}

	if tp, err := s.Get(mtCtx, checkpoint.Config{ThreadID: "nobody"}); tp != nil || err != nil {
		t.Errorf("unknown thread: %v, %v; want nil, nil", tp, err)
	}
	if _, err := s.Get(mtCtx, checkpoint.Config{ThreadID: "t", CheckpointID: checkpoint.NewID()}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("unknown id: err = %v, want ErrNotFound", err)
	}
	if tp, err := s.Get(mtCtx, checkpoint.Config{ThreadID: "t", Namespace: "sub:1"}); tp != nil || err != nil {
		t.Errorf("unknown namespace: %v, %v; want nil, nil", tp, err)
	}
}

// Mirrors test_memory.py::test_memory_saver (stored copies): what a caller
// does to a checkpoint or metadata after Put, or to a tuple or value after
// Get, does not change what the saver holds. (Blob values belong to the
// saver once Put: see Blob.) A blob marked Empty leaves the channel
// without a value.
func TestMemoryStoresCopies(t *testing.T) {
	s := checkpoint.NewMemory()
	id := checkpoint.NewID()
	cp := mtCP(id, map[string]int64{"x": 1, "gone": 1})
	meta := checkpoint.Metadata{Source: "loop", Extra: map[string]any{"k": "v"}}
	val := json.RawMessage(`"one"`)
	mtPut(t, s, checkpoint.Config{ThreadID: "t"}, cp, meta,
		checkpoint.Blob{Channel: "x", Version: 1, Value: val},
		checkpoint.Blob{Channel: "gone", Version: 1, Empty: true})
	cp.Versions["x"] = 99
	cp.VersionsSeen["node"]["a"] = 99
	meta.Extra["k"] = "changed"

	tp := mtGet(t, s, checkpoint.Config{ThreadID: "t"})
	if d := cmp.Diff(map[string]string{"x": `"one"`}, mtValues(tp)); d != "" {
		t.Errorf("mtValues (-want +got):\n%s", d)
	}
	if tp.Checkpoint.Versions["x"] != 1 || tp.Checkpoint.VersionsSeen["node"]["a"] != 1 || tp.Metadata.Extra["k"] != "v" {
		t.Errorf("stored checkpoint changed with the caller's copy: %+v %+v", tp.Checkpoint, tp.Metadata)
	}
	tp.Checkpoint.Versions["x"] = 7
	tp.Metadata.Extra["k"] = "again"
	tp.Checkpoint.Values["x"][1] = 'X'
	tp2 := mtGet(t, s, checkpoint.Config{ThreadID: "t"})
	if tp2.Checkpoint.Versions["x"] != 1 || tp2.Metadata.Extra["k"] != "v" {
		t.Errorf("stored checkpoint changed through a tuple from Get")
	}
	if d := cmp.Diff(map[string]string{"x": `"one"`}, mtValues(tp2)); d != "" {
		t.Errorf("stored value changed through a value from Get (-want +got):\n%s", d)
	}
}

// Mirrors test_memory.py::test_search: List is newest first; Limit caps
// it, Before pages back from an id, Filter matches source, step and extra
// metadata (numbers compare by value, as after a JSON round trip), and
// Namespace restricts to one namespace while nil lists them all.
func TestMemoryList(t *testing.T) {
	s := checkpoint.NewMemory()
	ids := mtChain(t, s)
	subID := checkpoint.NewID()
	mtPut(t, s, checkpoint.Config{ThreadID: "t", Namespace: "sub:1"}, mtCP(subID, nil), checkpoint.Metadata{Source: "loop", Step: 0, Parents: map[string]string{"": ids[2]}})
	mtPut(t, s, checkpoint.Config{ThreadID: "other"}, mtCP(checkpoint.NewID(), nil), checkpoint.Metadata{Source: "input", Step: -1})

	root := ""
	sub := "sub:1"
	for _, tc := range []struct {
		name string
		o    checkpoint.ListOptions
		want []string
	}{
		{"all namespaces", checkpoint.ListOptions{}, []string{subID, ids[2], ids[1], ids[0]}},
		{"root only", checkpoint.ListOptions{Namespace: &root}, []string{ids[2], ids[1], ids[0]}},
		{"subgraph only", checkpoint.ListOptions{Namespace: &sub}, []string{subID}},
		{"limit", checkpoint.ListOptions{Namespace: &root, Limit: 2}, []string{ids[2], ids[1]}},
		{"before", checkpoint.ListOptions{Namespace: &root, Before: ids[2]}, []string{ids[1], ids[0]}},
		{"before and limit", checkpoint.ListOptions{Namespace: &root, Before: ids[2], Limit: 1}, []string{ids[1]}},
		{"filter source", checkpoint.ListOptions{Filter: map[string]any{"source": "input"}}, []string{ids[0]}},
		{"filter several keys", checkpoint.ListOptions{Filter: map[string]any{"source": "loop", "user": "u1"}}, []string{ids[1]}},
		{"filter step as float", checkpoint.ListOptions{Filter: map[string]any{"step": 1.0}}, []string{ids[2]}},
		{"filter step int", checkpoint.ListOptions{Namespace: &root, Filter: map[string]any{"step": 0}}, []string{ids[1]}},
		{"filter matches nothing", checkpoint.ListOptions{Filter: map[string]any{"user": "nobody"}}, nil},
		{"filter on missing key", checkpoint.ListOptions{Filter: map[string]any{"absent": "x"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, mtList(t, s, "t", tc.o)); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
		})
	}
	if got := mtList(t, s, "nobody", checkpoint.ListOptions{}); got != nil {
		t.Errorf("unknown thread lists %v", got)
	}
	// Stopping early is allowed.
	for range s.List(mtCtx, "t", checkpoint.ListOptions{}) {
		break
	}
}

// Mirrors test_memory.py::test_memory_saver (put_writes): pending writes
// are kept per checkpoint and task. A task's regular writes are stored
// once: a second call for the same task keeps the first ones (a task run
// again after a resume must not double them), while writes to the special
// channels (__error__, __interrupt__, __resume__, __scheduled__) replace
// the task's earlier write to that channel.
func TestMemoryPutWrites(t *testing.T) {
	s := checkpoint.NewMemory()
	ids := mtChain(t, s)
	cfg := checkpoint.Config{ThreadID: "t", CheckpointID: ids[2]}
	w := func(ch, v string) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{Channel: ch, Value: json.RawMessage(v)}
	}
	steps := []struct {
		task   string
		writes []checkpoint.PendingWrite
	}{
		{"t1", []checkpoint.PendingWrite{w(checkpoint.InterruptChannel, `["q1"]`)}},
		{"t2", []checkpoint.PendingWrite{w("value", `2`), w("value", `3`)}},
		{"t1", []checkpoint.PendingWrite{w(checkpoint.InterruptChannel, `["q2"]`), w(checkpoint.ResumeChannel, `["a1"]`)}},
		{"t2", []checkpoint.PendingWrite{w("value", `99`)}},
		{"t1", []checkpoint.PendingWrite{w("value", `5`), w(checkpoint.ResumeChannel, `["a1","a2"]`)}},
		{"t3", []checkpoint.PendingWrite{w(checkpoint.ErrorChannel, `"boom"`)}},
		{"t3", []checkpoint.PendingWrite{w(checkpoint.ErrorChannel, `"boom again"`)}},
	}
	for _, st := range steps {
		if err := s.PutWrites(mtCtx, cfg, st.task, st.writes); err != nil {
			t.Fatal(err)
		}
	}
	type row struct{ Task, Channel, Value string }
	var got []row
	for _, pw := range mtGet(t, s, cfg).PendingWrites {
		got = append(got, row{pw.TaskID, pw.Channel, string(pw.Value)})
	}
	want := []row{
		{"t1", checkpoint.InterruptChannel, `["q2"]`},
		{"t2", "value", `2`},
		{"t2", "value", `3`},
		{"t1", checkpoint.ResumeChannel, `["a1","a2"]`},
		{"t1", "value", `5`},
		{"t3", checkpoint.ErrorChannel, `"boom again"`},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pending writes (-want +got):\n%s", d)
	}
	// Writes belong to their checkpoint only.
	if pw := mtGet(t, s, checkpoint.Config{ThreadID: "t", CheckpointID: ids[1]}).PendingWrites; len(pw) != 0 {
		t.Errorf("another checkpoint has writes %v", pw)
	}
	for _, ch := range []string{checkpoint.ErrorChannel, checkpoint.InterruptChannel, checkpoint.ResumeChannel, checkpoint.ScheduledChannel} {
		if !checkpoint.IsSpecialChannel(ch) {
			t.Errorf("%s is not special", ch)
		}
	}
	if checkpoint.IsSpecialChannel("value") || checkpoint.IsSpecialChannel(checkpoint.TasksChannel) {
		t.Error("a regular channel counts as special")
	}
}

// Mirrors test_pregel.py::test_checkpoint_recovery (delete_thread):
// DeleteThread removes a thread's checkpoints, blobs and writes in every
// namespace, and nothing of other threads.
func TestMemoryDeleteThread(t *testing.T) {
	s := checkpoint.NewMemory()
	ids := mtChain(t, s)
	mtPut(t, s, checkpoint.Config{ThreadID: "t", Namespace: "sub:1"}, mtCP(checkpoint.NewID(), nil), checkpoint.Metadata{})
	if err := s.PutWrites(mtCtx, checkpoint.Config{ThreadID: "t", CheckpointID: ids[2]}, "task", []checkpoint.PendingWrite{{Channel: "x", Value: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	otherID := checkpoint.NewID()
	mtPut(t, s, checkpoint.Config{ThreadID: "u"}, mtCP(otherID, map[string]int64{"x": 1}), checkpoint.Metadata{}, mtBlob("x", 1, `"kept"`))

	if err := s.DeleteThread(mtCtx, "t"); err != nil {
		t.Fatal(err)
	}
	if got := mtList(t, s, "t", checkpoint.ListOptions{}); got != nil {
		t.Errorf("deleted thread still lists %v", got)
	}
	if tp := mtGet(t, s, checkpoint.Config{ThreadID: "t"}); tp != nil {
		t.Errorf("deleted thread still has %v", tp.Config)
	}
	if _, err := s.Get(mtCtx, checkpoint.Config{ThreadID: "t", CheckpointID: ids[0]}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("deleted checkpoint by id: err = %v, want ErrNotFound", err)
	}
	u := mtGet(t, s, checkpoint.Config{ThreadID: "u"})
	if u == nil || u.Checkpoint.ID != otherID || string(u.Checkpoint.Values["x"]) != `"kept"` {
		t.Errorf("other thread changed: %+v", u)
	}
	if err := s.DeleteThread(mtCtx, "never-existed"); err != nil {
		t.Errorf("deleting an unknown thread: %v", err)
	}
}

// Mirrors test_conformance_delta.py::test_delta_channel_conformance: a blob given as items
// appended to the value at BaseVersion is stored as the joined list, and
// every checkpoint reads back the whole value of its own version.
func TestMemoryAppendedBlobs(t *testing.T) {
	s := checkpoint.NewMemory()
	id1, id2, id3 := checkpoint.NewID(), checkpoint.NewID(), checkpoint.NewID()
	c1 := mtPut(t, s, checkpoint.Config{ThreadID: "t"}, mtCP(id1, map[string]int64{"msgs": 1}), checkpoint.Metadata{},
		mtBlob("msgs", 1, `["a"]`))
	c2 := mtPut(t, s, c1, mtCP(id2, map[string]int64{"msgs": 2}), checkpoint.Metadata{},
		checkpoint.Blob{Channel: "msgs", Version: 2, BaseVersion: 1, Appended: []json.RawMessage{json.RawMessage(`"b"`), json.RawMessage(`{"c":1}`)}})
	mtPut(t, s, c2, mtCP(id3, map[string]int64{"msgs": 3}), checkpoint.Metadata{},
		checkpoint.Blob{Channel: "msgs", Version: 3, BaseVersion: 2, Appended: []json.RawMessage{}})

	for id, want := range map[string]string{id1: `["a"]`, id2: `["a","b",{"c":1}]`, id3: `["a","b",{"c":1}]`} {
		tp := mtGet(t, s, checkpoint.Config{ThreadID: "t", CheckpointID: id})
		if got := string(tp.Checkpoint.Values["msgs"]); got != want {
			t.Errorf("checkpoint %s: msgs = %s, want %s", id, got, want)
		}
	}

	// Items appended to a version that was never stored are refused.
	_, err := s.Put(mtCtx, checkpoint.Config{ThreadID: "t2"}, mtCP(checkpoint.NewID(), map[string]int64{"msgs": 1}), checkpoint.Metadata{},
		[]checkpoint.Blob{{Channel: "msgs", Version: 1, BaseVersion: 7, Appended: []json.RawMessage{json.RawMessage(`1`)}}})
	if !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("append to a missing base: err = %v, want ErrInvalid", err)
	}

	// A base that is not a list cannot take appended items.
	bad := mtPut(t, s, checkpoint.Config{ThreadID: "b"}, mtCP(checkpoint.NewID(), map[string]int64{"v": 1}), checkpoint.Metadata{}, mtBlob("v", 1, `{"not":"a list"}`))
	_, err = s.Put(mtCtx, bad, mtCP(checkpoint.NewID(), map[string]int64{"v": 2}), checkpoint.Metadata{},
		[]checkpoint.Blob{{Channel: "v", Version: 2, BaseVersion: 1, Appended: []json.RawMessage{json.RawMessage(`1`)}}})
	if !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("append to a non-list: err = %v, want ErrInvalid", err)
	}
}

// Mirrors test_conformance_delta.py::test_delta_channel_conformance (reassembly): JoinAppended rebuilds a
// JSON array from a base array and items, treating a missing or null base
// as empty.
func TestJoinAppended(t *testing.T) {
	items := []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`"two"`)}
	for _, tc := range []struct{ base, want string }{
		{``, `[1,"two"]`},
		{`null`, `[1,"two"]`},
		{`[]`, `[1,"two"]`},
		{` [ ] `, `[1,"two"]`},
		{`[0]`, `[0,1,"two"]`},
		{`[{"a":[1]}]`, `[{"a":[1]},1,"two"]`},
	} {
		got, err := checkpoint.JoinAppended(json.RawMessage(tc.base), items)
		if err != nil {
			t.Errorf("base %q: %v", tc.base, err)
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got); err != nil {
			t.Errorf("base %q: result %s is not JSON: %v", tc.base, got, err)
		} else if compact.String() != tc.want {
			t.Errorf("base %q: got %s, want %s", tc.base, got, tc.want)
		}
	}
	if got, err := checkpoint.JoinAppended(json.RawMessage(`[1]`), nil); err != nil || string(got) != `[1]` {
		t.Errorf("no items: %s, %v", got, err)
	}
	for _, base := range []string{`{}`, `"s"`, `1`} {
		if _, err := checkpoint.JoinAppended(json.RawMessage(base), items); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("base %s: err = %v, want ErrInvalid", base, err)
		}
	}
}

// Mirrors test_pregel.py::test_checkpoint_errors (bad checkpointer input):
// the Saver refuses what it cannot store with ErrInvalid before the driver
// sees it.
func TestSaverRejectsBadInput(t *testing.T) {
	s := checkpoint.NewMemory()
	ids := mtChain(t, s)
	ok := checkpoint.Config{ThreadID: "t"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"mtGet without thread", func() error { _, err := s.Get(mtCtx, checkpoint.Config{}); return err }()},
		{"mtPut without thread", func() error {
			_, err := s.Put(mtCtx, checkpoint.Config{}, mtCP(checkpoint.NewID(), nil), checkpoint.Metadata{}, nil)
			return err
		}()},
		{"mtPut nil checkpoint", func() error { _, err := s.Put(mtCtx, ok, nil, checkpoint.Metadata{}, nil); return err }()},
		{"mtPut checkpoint without id", func() error { _, err := s.Put(mtCtx, ok, mtCP("", nil), checkpoint.Metadata{}, nil); return err }()},
		{"mtBlob without channel", func() error {
			_, err := s.Put(mtCtx, ok, mtCP(checkpoint.NewID(), nil), checkpoint.Metadata{}, []checkpoint.Blob{mtBlob("", 1, `1`)})
			return err
		}()},
		{"mtBlob without value", func() error {
			_, err := s.Put(mtCtx, ok, mtCP(checkpoint.NewID(), nil), checkpoint.Metadata{}, []checkpoint.Blob{{Channel: "x", Version: 1}})
			return err
		}()},
		{"writes without thread", s.PutWrites(mtCtx, checkpoint.Config{CheckpointID: ids[0]}, "task", nil)},
		{"writes without checkpoint", s.PutWrites(mtCtx, ok, "task", nil)},
		{"writes without task", s.PutWrites(mtCtx, checkpoint.Config{ThreadID: "t", CheckpointID: ids[0]}, "", nil)},
		{"delete without thread", s.DeleteThread(mtCtx, "")},
		{"mtList without thread", func() error {
			for _, err := range s.List(mtCtx, "", checkpoint.ListOptions{}) {
				return err
			}
			return nil
		}()},
		{"mtList with negative limit", func() error {
			for _, err := range s.List(mtCtx, "t", checkpoint.ListOptions{Limit: -1}) {
				return err
			}
			return nil
		}()},
	} {
		if !errors.Is(tc.err, checkpoint.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, tc.err)
		}
	}
	// Nothing was stored by the refused calls.
	if got := mtList(t, s, "t", checkpoint.ListOptions{}); len(got) != 3 {
		t.Errorf("thread t has %d checkpoints after refused calls, want 3", len(got))
	}
}

// No direct LangGraph test: mirrors the uuid6 ordering its savers rely on. Ids
// from NewID sort as strings in creation order, which is what "latest" and
// "newest first" mean.
func TestNewIDIsTimeOrdered(t *testing.T) {
	prev := checkpoint.NewID()
	for range 1000 {
		id := checkpoint.NewID()
		if id <= prev {
			t.Fatalf("NewID %s after %s is not larger", id, prev)
		}
		prev = id
	}
}

// Mirrors test_memory.py::test_combined_metadata: MatchMetadata compares
// the source, the step and extra keys, with numbers equal by value.
func TestMatchMetadata(t *testing.T) {
	meta := checkpoint.Metadata{Source: "loop", Step: 2, Extra: map[string]any{"run": "r1", "n": 3, "tags": []any{"a"}}}
	for _, tc := range []struct {
		filter map[string]any
		want   bool
	}{
		{nil, true},
		{map[string]any{"source": "loop"}, true},
		{map[string]any{"source": "input"}, false},
		{map[string]any{"step": 2}, true},
		{map[string]any{"step": float64(2)}, true},
		{map[string]any{"step": int64(3)}, false},
		{map[string]any{"run": "r1", "n": 3.0}, true},
		{map[string]any{"tags": []string{"a"}}, true},
		{map[string]any{"run": "r2"}, false},
		{map[string]any{"missing": nil}, false},
	} {
		if got := checkpoint.MatchMetadata(meta, tc.filter); got != tc.want {
			t.Errorf("MatchMetadata(%v) = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

// BenchmarkLeaseAcquireRelease is what owning a thread adds to a run on
// the in-memory saver.
func BenchmarkLeaseAcquireRelease(b *testing.B) {
	s := checkpoint.NewMemory()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := s.Acquire(ctx, "t", checkpoint.LeaseOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
