package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// keptUpTo is the part of a dump a rewind to id keeps: every checkpoint,
// in every namespace, whose id is not greater.
func keptUpTo(tps []*checkpoint.Tuple, id string) []*checkpoint.Tuple {
	var out []*checkpoint.Tuple
	for _, tp := range tps {
		if id != "" && tp.Config.CheckpointID <= id {
			out = append(out, tp)
		}
	}
	return out
}

// Rewind deletes the checkpoints after the one it is given, in every
// namespace, with their pending writes; the kept ones read back exactly
// as before, values built from deltas included, and the thread goes on
// from the rewound checkpoint.
func testRewind(t *testing.T, s *checkpoint.Saver) {
	h := newHistory(t, s, "r")
	cur := h.step(nil, []string{msg(0, "m")}, false)
	var mid *node
	var subID string
	// N is 32 by default: the log that starts after the rewrite at step 10
	// seals its tail at step 42, so the rewind to step 30 cuts a sealed
	// chunk.
	for i := 1; i < 60; i++ {
		cur = h.step(cur, []string{msg(i, "m")}, i == 10)
		if i == 30 {
			mid = cur
		}
		if i == 20 || i == 50 {
			// A subgraph checkpoint before and after the rewind point.
			mustPut(t, s, "r", "sub:"+fmt.Sprint(i), "", cp(cur.id+"-sub", map[string]int64{"s": 1}, nil), checkpoint.Metadata{Parents: map[string]string{"": cur.id}}, full("s", 1, `"sub"`))
			if subID == "" {
				subID = cur.id + "-sub"
			}
		}
	}
	for _, id := range []string{mid.id, cur.id} {
		if err := s.PutWrites(bg, checkpoint.Config{ThreadID: "r", CheckpointID: id}, "task", []checkpoint.PendingWrite{{Channel: "messages", Value: []byte(`"w"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Writes to a checkpoint that was never stored (a run that failed
	// before saving it).
	if err := s.PutWrites(bg, checkpoint.Config{ThreadID: "r", CheckpointID: "zzzz-orphan"}, "task", []checkpoint.PendingWrite{{Channel: "x", Value: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	buildThread(t, s, "other")
	other := dump(t, s, "other")
	before := dump(t, s, "r")
	want := keptUpTo(before, mid.id)

	n, err := s.Rewind(bg, "r", mid.id)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(before)-len(want) {
		t.Fatalf("Rewind deleted %d checkpoints; want %d", n, len(before)-len(want))
	}
	if d := diffTuples(want, dump(t, s, "r")); d != "" {
		t.Fatalf("after Rewind (-want +got):\n%s", d)
	}
	if d := diffTuples(other, dump(t, s, "other")); d != "" {
		t.Fatalf("Rewind changed another thread (-want +got):\n%s", d)
	}
	// The writes to the checkpoint never stored went too.
	mustPut(t, s, "r", "", mid.id, cp("zzzz-orphan", nil, nil), checkpoint.Metadata{})
	if got := mustGet(t, s, "r", "", "zzzz-orphan").PendingWrites; len(got) != 0 {
		t.Fatalf("a checkpoint put after Rewind has the pending writes made before it: %v", got)
	}
	if _, err := s.Rewind(bg, "r", mid.id); err != nil {
		t.Fatal(err)
	}
	logs := func() int64 {
		d, ok := s.Driver().(chunked)
		if !ok {
			return 0
		}
		st, err := d.Stats(bg, "r")
		if err != nil {
			t.Fatal(err)
		}
		return st.Logs
	}
	logsBefore := logs()
	// The thread goes on from the rewound checkpoint, appending to its
	// log as if nothing had come after it.
	h.want = map[string]map[string]string{}
	for _, tp := range want {
		if tp.Config.Namespace == "" {
			h.want[tp.Config.CheckpointID] = h.render(h.nodes[tp.Config.CheckpointID])
		}
	}
	next := mid
	for i := range 30 {
		next = h.step(next, []string{msg(i, "again")}, false)
	}
	h.check()
	if got := logs(); got != logsBefore {
		t.Fatalf("continuing after Rewind made %d message logs; want the %d it had (the rewound log goes on)", got, logsBefore)
	}

	// A checkpoint the thread does not have deletes nothing.
	before = dump(t, s, "r")
	_, err = s.Rewind(bg, "r", "nope")
	wantErr(t, err, checkpoint.ErrNotFound, "Rewind to a checkpoint the thread does not have")
	if d := diffTuples(before, dump(t, s, "r")); d != "" {
		t.Fatalf("a failed Rewind changed the thread (-want +got):\n%s", d)
	}
	// A subgraph's checkpoint cuts the thread when it was made: what
	// came after it goes, in every namespace; it and all before it stay.
	n, err = s.Rewind(bg, "r", subID)
	if err != nil {
		t.Fatal(err)
	}
	if want := keptUpTo(before, subID); n != len(before)-len(want) {
		t.Fatalf("Rewind to a subgraph checkpoint deleted %d checkpoints; want %d", n, len(before)-len(want))
	} else if d := diffTuples(want, dump(t, s, "r")); d != "" {
		t.Fatalf("after Rewind to a subgraph checkpoint (-want +got):\n%s", d)
	}
	before = dump(t, s, "r")
	// No checkpoint id: the whole thread goes.
	n, err = s.Rewind(bg, "r", "")
	if err != nil || n != len(before) {
		t.Fatalf("Rewind to nothing = %d, %v; want %d, nil", n, err, len(before))
	}
	if got := dump(t, s, "r"); len(got) != 0 {
		t.Fatalf("%d checkpoints left after Rewind to nothing", len(got))
	}
	for _, ti := range collect(t, s.ListThreads(bg, checkpoint.ThreadFilter{})) {
		if ti.ThreadID == "r" {
			t.Fatal("a thread rewound to nothing is still listed")
		}
	}
	// Starting again from nothing works, deltas included.
	buildThread(t, s, "r")
	_, err = s.Rewind(bg, "", "x")
	wantErr(t, err, checkpoint.ErrInvalid, "Rewind without a thread")
}

// A long conversation through the graph runtime (message lists stored as
// appended items), rewound into its middle as a server's rollback would,
// goes on from there with exactly the state it had then.
func testGraphRewind(t *testing.T, s *checkpoint.Saver) {
	var turns int
	g, err := graph.New(Messages).
		AddNode("answer", func(ctx context.Context, st graph.State) (graph.Update, error) {
			turns++
			last := Messages.Get(st)[len(Messages.Get(st))-1]
			return Messages.Write(Msg{Text: fmt.Sprintf("re:%s:%d", last.Text, turns)}), nil
		}, nil).
		AddEdge(graph.START, "answer").
		Compile(&graph.CompileOptions{Checkpointer: s})
	if err != nil {
		t.Fatal(err)
	}
	opts := &graph.RunOptions{ThreadID: "chat"}
	say := func(text string) graph.State {
		t.Helper()
		st, err := g.Invoke(bg, Messages.Write(Msg{Text: text}), opts)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var mark checkpoint.Config
	var markTexts string
	// Two messages a turn: the log's tail is sealed every 16 turns.
	for i := range 40 {
		st := say(fmt.Sprintf("q%d", i))
		if i == 25 {
			snap, err := g.GetState(bg, checkpoint.Config{ThreadID: "chat"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			mark, markTexts = snap.Config, texts(st)
		}
	}
	// A run that is rolled back: it holds the thread's lease, as a
	// server's run does, and the rollback runs under it.
	l, err := s.Acquire(bg, "chat", checkpoint.LeaseOptions{RunID: "rolled-back"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := checkpoint.WithLease(bg, l)
	if _, err := g.Invoke(ctx, Messages.Write(Msg{Text: "doomed"}), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewind(ctx, "chat", mark.CheckpointID); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(bg, checkpoint.Config{ThreadID: "chat"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Config.CheckpointID != mark.CheckpointID || texts(snap.Values) != markTexts {
		t.Fatalf("after the rewind the thread is at %s with %s; want %s with %s", snap.Config.CheckpointID, texts(snap.Values), mark.CheckpointID, markTexts)
	}
	st := say("after")
	want := markTexts + ",after,re:after:" + fmt.Sprint(turns)
	if got := texts(st); got != want {
		t.Fatalf("the thread after the rewind goes on as %s; want %s", got, want)
	}
	for i := range 20 {
		st = say(fmt.Sprintf("more%d", i))
	}
	if got := Messages.Get(st); len(got) != 2*(26+1+20) {
		t.Fatalf("%d messages after going on; want %d", len(got), 2*(26+1+20))
	}
	// Every checkpoint of the history still reads back whole.
	for snap, err := range g.GetStateHistory(bg, "chat", nil) {
		if err != nil {
			t.Fatal(err)
		}
		if msgs := Messages.Get(snap.Values); len(msgs) > 0 && strings.Contains(texts(snap.Values), "doomed") {
			t.Fatalf("checkpoint %s still holds the rolled-back turn", snap.Config.CheckpointID)
		}
	}
}

// The operations on whole threads own the thread while they run: while
// another run holds it they fail with a *BusyError and change nothing;
// with that run's lease in their context they are fenced by it; and with
// a lost lease they fail with ErrLeaseLost and change nothing.
func testThreadOpsOwnership(t *testing.T, s *checkpoint.Saver) {
	// Short threads: what counts is who may change them.
	buildThreadN(t, s, "t", 8)
	buildThreadN(t, s, "u", 8)
	latest := mustGet(t, s, "t", "", "").Config.CheckpointID
	ops := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"DeleteThread", func(ctx context.Context) error { return s.DeleteThread(ctx, "t") }},
		{"Prune", func(ctx context.Context) error {
			_, err := s.Prune(ctx, "t", checkpoint.PruneOptions{KeepLatest: 3})
			return err
		}},
		{"Rewind", func(ctx context.Context) error { _, err := s.Rewind(ctx, "t", latest); return err }},
		{"CopyThread from it", func(ctx context.Context) error { return s.CopyThread(ctx, "t", "copy") }},
		{"CopyThread onto it", func(ctx context.Context) error { return s.CopyThread(ctx, "u", "t") }},
	}
	holder := acquire(t, s, "t", checkpoint.LeaseOptions{RunID: "holder"})
	before := map[string][]*checkpoint.Tuple{"t": dump(t, s, "t"), "u": dump(t, s, "u"), "copy": nil}
	unchanged := func(what string) {
		t.Helper()
		for th, tps := range before {
			if d := diffTuples(tps, dump(t, s, th)); d != "" {
				t.Fatalf("%s changed thread %q (-before +after):\n%s", what, th, d)
			}
		}
	}
	for _, op := range ops {
		err := op.fn(bg)
		var be *checkpoint.BusyError
		if !errors.As(err, &be) || !errors.Is(err, checkpoint.ErrThreadBusy) || be.ThreadID != "t" || be.RunID != "holder" {
			t.Fatalf("%s while another run holds the thread = %v; want a *BusyError naming thread \"t\" and run \"holder\"", op.name, err)
		}
		unchanged(op.name + " on a busy thread")
	}
	// An operation that failed busy took no lease: the thread's other
	// side is free again.
	acquire(t, s, "u", checkpoint.LeaseOptions{}).Release(bg)

	// Under the holder's lease, they run, fenced by it.
	ctx := checkpoint.WithLease(bg, holder)
	if err := s.CopyThread(ctx, "t", "copy"); err != nil {
		t.Fatalf("CopyThread under the holder's lease: %v", err)
	}
	if _, err := s.Prune(ctx, "t", checkpoint.PruneOptions{KeepLatest: 6}); err != nil {
		t.Fatalf("Prune under the holder's lease: %v", err)
	}
	if _, err := s.Rewind(ctx, "t", latest); err != nil {
		t.Fatalf("Rewind under the holder's lease: %v", err)
	}
	if holder.Err() != nil {
		t.Fatalf("the holder's lease after the operations: %v", holder.Err())
	}
	// The copy's lease, taken for the copy, was given back.
	acquire(t, s, "copy", checkpoint.LeaseOptions{}).Release(bg)

	// The holder's lease vanishes (as when it expired): under it, every
	// operation fails and changes nothing.
	if err := s.Driver().ReleaseLease(bg, "t", holder.Owner()); err != nil {
		t.Fatal(err)
	}
	before = map[string][]*checkpoint.Tuple{"t": dump(t, s, "t"), "u": dump(t, s, "u"), "copy2": nil}
	ops[3].fn = func(ctx context.Context) error { return s.CopyThread(ctx, "t", "copy2") }
	for _, op := range ops {
		err := op.fn(ctx)
		wantErr(t, err, checkpoint.ErrLeaseLost, op.name+" under a lost lease")
		unchanged(op.name + " under a lost lease")
	}
	if !errors.Is(holder.Err(), checkpoint.ErrLeaseLost) {
		t.Fatalf("the lost lease's Err = %v; want ErrLeaseLost", holder.Err())
	}
	// Free threads: the operations take and give back the lease
	// themselves.
	if err := s.DeleteThread(bg, "u"); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "u", checkpoint.LeaseOptions{}).Release(bg)
}

// testRestoreWrites: RestoreWrites makes a checkpoint's pending writes
// what a Tuple read earlier: writes made since go, special writes replaced
// since come back, in their order, and nothing else changes.
func testRestoreWrites(t *testing.T, s *checkpoint.Saver) {
	mustPut(t, s, "rw", "", "", cp("c1", nil, nil), checkpoint.Metadata{})
	c1 := checkpoint.Config{ThreadID: "rw", CheckpointID: "c1"}
	pw := func(ch, v string) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{Channel: ch, Value: json.RawMessage(v)}
	}
	put := func(cfg checkpoint.Config, task string, ws ...checkpoint.PendingWrite) {
		t.Helper()
		if err := s.PutWrites(bg, cfg, task, ws); err != nil {
			t.Fatalf("PutWrites %s: %v", task, err)
		}
	}
	// The writes of a step that stopped at an interrupt: a task that
	// finished, the interrupted one, a failed one.
	put(c1, "task-a", pw("x", `1`), pw("y", `"a"`))
	put(c1, "task-c", pw(checkpoint.InterruptChannel, `[{"id":"i1","value":"?"}]`))
	put(c1, "task-b", pw(checkpoint.ErrorChannel, `"boom"`))
	put(c1, "task-d", pw("x", `1`), checkpoint.PendingWrite{Channel: "none"}, pw(checkpoint.ErrorChannel, `"e"`), pw("z", `null`))
	before := mustGet(t, s, "rw", "", "c1").PendingWrites
	if len(before) != 8 {
		t.Fatalf("before: %d pending writes, want 8: %v", len(before), before)
	}
	// What a run resuming it writes: resume values, the interrupted
	// task's writes, a special write replaced, another task's.
	put(c1, checkpoint.NullTaskID, pw(checkpoint.ResumeChannel, `"yes"`))
	put(c1, "task-c", pw(checkpoint.ResumeChannel, `["yes"]`), pw("x", `2`))
	put(c1, "task-b", pw(checkpoint.ErrorChannel, `"boom again"`))
	put(c1, "task-e", pw("w", `{"k":[1,2]}`))
	// Another checkpoint's writes, which stay as they are.
	mustPut(t, s, "rw", "", "c1", cp("c2", nil, nil), checkpoint.Metadata{})
	c2 := checkpoint.Config{ThreadID: "rw", CheckpointID: "c2"}
	put(c2, "task-f", pw("x", `5`))
	after := mustGet(t, s, "rw", "", "c1").PendingWrites
	if len(after) != 12 {
		t.Fatalf("after the resume: %d pending writes, want 12: %v", len(after), after)
	}

	if err := s.RestoreWrites(bg, c1, before); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, mustGet(t, s, "rw", "", "c1").PendingWrites, tupleOpts); d != "" {
		t.Fatalf("restored writes (-want +got):\n%s", d)
	}
	if got := mustGet(t, s, "rw", "", "c2").PendingWrites; len(got) != 1 || got[0].TaskID != "task-f" {
		t.Fatalf("another checkpoint's writes after the restore: %v", got)
	}
	// Restored, they behave as written: a task's regular writes are
	// stored once, a special write replaces.
	put(c1, "task-a", pw("x", `3`))
	put(c1, "task-b", pw(checkpoint.ErrorChannel, `"third"`))
	again := mustGet(t, s, "rw", "", "c1").PendingWrites
	if len(again) != len(before) || string(again[0].Value) != `1` || string(again[3].Value) != `"third"` {
		t.Fatalf("writes after the restore: %v", again)
	}
	// Any set round-trips, the later one too; none deletes them all.
	if err := s.RestoreWrites(bg, c1, after); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(after, mustGet(t, s, "rw", "", "c1").PendingWrites, tupleOpts); d != "" {
		t.Fatalf("restored later writes (-want +got):\n%s", d)
	}
	if err := s.RestoreWrites(bg, c1, nil); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "rw", "", "c1").PendingWrites; len(got) != 0 {
		t.Fatalf("after restoring none: %v", got)
	}

	err := s.RestoreWrites(bg, checkpoint.Config{ThreadID: "rw", CheckpointID: "c9"}, before)
	wantErr(t, err, checkpoint.ErrNotFound, "RestoreWrites of a checkpoint that does not exist")
	err = s.RestoreWrites(bg, checkpoint.Config{ThreadID: "rw"}, before)
	wantErr(t, err, checkpoint.ErrInvalid, "RestoreWrites without a checkpoint id")
	err = s.RestoreWrites(bg, c1, []checkpoint.PendingWrite{pw("x", `1`)})
	wantErr(t, err, checkpoint.ErrInvalid, "RestoreWrites of a write without a task id")
	// Another run holds the thread: nothing is changed.
	put(c1, "task-a", pw("x", `1`))
	l := acquire(t, s, "rw", checkpoint.LeaseOptions{})
	defer l.Release(bg)
	err = s.RestoreWrites(bg, c1, nil)
	wantErr(t, err, checkpoint.ErrThreadBusy, "RestoreWrites while another run holds the thread")
	if got := mustGet(t, s, "rw", "", "c1").PendingWrites; len(got) != 1 {
		t.Fatalf("a refused restore changed the writes: %v", got)
	}
	// Under that run's lease it is fenced, and goes through.
	if err := s.RestoreWrites(checkpoint.WithLease(bg, l), c1, before); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "rw", "", "c1").PendingWrites; len(got) != len(before) {
		t.Fatalf("restore under the lease: %v", got)
	}
}

// testPatchMetadata: PatchMetadata sets keys of a checkpoint's caller
// metadata, the latest one's when no id is given, keeps the others, and
// what it sets is read and filtered on as if it had been put.
func testPatchMetadata(t *testing.T, s *checkpoint.Saver) {
	mustPut(t, s, "pm", "", "", cp("c1", nil, nil), checkpoint.Metadata{Source: "input", Step: -1, Extra: map[string]any{"run_id": "r1"}})
	mustPut(t, s, "pm", "", "c1", cp("c2", nil, nil), checkpoint.Metadata{Source: "loop", Step: 0, Extra: map[string]any{"run_id": "r1", "keep": "k"}})
	got, err := s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm"}, map[string]any{"tag": "good", "keep": nil, "score": 4, "nested": map[string]any{"a": []int{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (checkpoint.Config{ThreadID: "pm", CheckpointID: "c2"}); got != want {
		t.Fatalf("PatchMetadata patched %+v, want the latest, %+v", got, want)
	}
	meta := mustGet(t, s, "pm", "", "c2").Metadata
	want := checkpoint.Metadata{Source: "loop", Step: 0, Extra: map[string]any{
		"run_id": "r1", "keep": nil, "tag": "good", "score": float64(4), "nested": map[string]any{"a": []any{float64(1), float64(2)}},
	}}
	if d := cmp.Diff(want, meta); d != "" {
		t.Fatalf("patched metadata (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"run_id": "r1"}, mustGet(t, s, "pm", "", "c1").Metadata.Extra); d != "" {
		t.Fatalf("the other checkpoint's metadata (-want +got):\n%s", d)
	}
	// An older checkpoint, named.
	if _, err := s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm", CheckpointID: "c1"}, map[string]any{"tag": "first"}); err != nil {
		t.Fatal(err)
	}
	var tagged []string
	for tp, err := range s.List(bg, "pm", checkpoint.ListOptions{Filter: map[string]any{"tag": "good"}}) {
		if err != nil {
			t.Fatal(err)
		}
		tagged = append(tagged, tp.Config.CheckpointID)
	}
	if d := cmp.Diff([]string{"c2"}, tagged); d != "" {
		t.Fatalf("listed by the patched key (-want +got):\n%s", d)
	}

	_, err = s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm"}, map[string]any{"step": 9})
	wantErr(t, err, checkpoint.ErrInvalid, "PatchMetadata of a checkpoint's own field")
	_, err = s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm"}, map[string]any{"f": func() {}})
	wantErr(t, err, checkpoint.ErrInvalid, "PatchMetadata with a value that is not JSON")
	_, err = s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm-none"}, map[string]any{"tag": "x"})
	wantErr(t, err, checkpoint.ErrNotFound, "PatchMetadata of a thread with no checkpoint")
	_, err = s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm", CheckpointID: "c9"}, map[string]any{"tag": "x"})
	wantErr(t, err, checkpoint.ErrNotFound, "PatchMetadata of a checkpoint that does not exist")
	l := acquire(t, s, "pm", checkpoint.LeaseOptions{})
	defer l.Release(bg)
	_, err = s.PatchMetadata(bg, checkpoint.Config{ThreadID: "pm"}, map[string]any{"tag": "busy"})
	wantErr(t, err, checkpoint.ErrThreadBusy, "PatchMetadata while another run holds the thread")
	if tag := mustGet(t, s, "pm", "", "c2").Metadata.Extra["tag"]; tag != "good" {
		t.Fatalf("a refused patch changed the metadata: tag = %v", tag)
	}
}

// testRestoreWritesApart: RestoreWrites keeps the given order exactly when
// one task's writes are not next to each other in it, regular ones among
// them: every write comes back, none is taken for one stored already.
func testRestoreWritesApart(t *testing.T, s *checkpoint.Saver) {
	mustPut(t, s, "rwa", "", "", cp("c1", nil, nil), checkpoint.Metadata{})
	c1 := checkpoint.Config{ThreadID: "rwa", CheckpointID: "c1"}
	w := func(task, ch, v string) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{TaskID: task, Channel: ch, Value: json.RawMessage(v)}
	}
	cases := [][]checkpoint.PendingWrite{
		{w("task-a", "x", `1`), w("task-b", "y", `2`), w("task-a", "z", `3`)},
		{w("task-a", "x", `1`), w("task-a", "y", `2`), w("task-b", "y", `3`), w("task-a", checkpoint.ErrorChannel, `"e"`), w("task-a", "z", `4`), w("task-a", "x", `5`)},
		{w("task-a", "x", `1`), w("task-a", checkpoint.InterruptChannel, `[]`), w("task-a", "y", `2`), w("task-b", "y", `3`), w("task-a", "z", `4`)},
	}
	for i, want := range cases {
		if err := s.RestoreWrites(bg, c1, want); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := cmp.Diff(want, mustGet(t, s, "rwa", "", "c1").PendingWrites, tupleOpts); d != "" {
			t.Errorf("case %d: restored writes (-want +got):\n%s", i, d)
		}
	}
	// Restored, a task's regular writes count as stored: a task run again
	// adds none.
	if err := s.PutWrites(bg, c1, "task-a", []checkpoint.PendingWrite{w("", "x", `9`)}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cases[len(cases)-1], mustGet(t, s, "rwa", "", "c1").PendingWrites, tupleOpts); d != "" {
		t.Errorf("after task-a wrote again (-want +got):\n%s", d)
	}
	// What no Tuple reads, and no driver could store as given, is refused
	// as PutWrites refuses it, with nothing changed: a value that is not
	// JSON, and a task's special channel written twice (the second one
	// replaces the first in a store).
	bad := map[string][]checkpoint.PendingWrite{
		"a value that is not JSON": {w("task-a", "x", `1`), w("task-b", "y", `{"a":`)},
		"a task's __error__ twice": {w("task-a", checkpoint.ErrorChannel, `"a"`), w("task-b", "y", `1`), w("task-a", checkpoint.ErrorChannel, `"b"`)},
	}
	for what, ws := range bad {
		err := s.RestoreWrites(bg, c1, ws)
		wantErr(t, err, checkpoint.ErrInvalid, "RestoreWrites of "+what)
		if d := cmp.Diff(cases[len(cases)-1], mustGet(t, s, "rwa", "", "c1").PendingWrites, tupleOpts); d != "" {
			t.Errorf("after a refused RestoreWrites of %s (-want +got):\n%s", what, d)
		}
	}
}
