package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/graph"
)

// batchWrite is one write of a script, made on any thread.
type batchWrite func(ctx context.Context, s *checkpoint.Saver, thread string) error

// batchScript is a history written the way a run writes it, with the
// cases a batch must get right: a first checkpoint, small and large
// values, a message list growing past a sealed chunk, pending writes
// with special channels between regular ones, a task's regular writes
// given twice (stored once), a checkpoint put twice under one id, a
// fork from an older checkpoint and a subgraph namespace.
func batchScript() []batchWrite {
	var out []batchWrite
	put := func(ns, parent string, c *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs ...checkpoint.Blob) {
		out = append(out, func(ctx context.Context, s *checkpoint.Saver, thread string) error {
			_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: parent}, c.Clone(), meta, blobs)
			return err
		})
	}
	writes := func(ns, id, task string, ws ...checkpoint.PendingWrite) {
		out = append(out, func(ctx context.Context, s *checkpoint.Saver, thread string) error {
			return s.PutWrites(ctx, checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: id}, task, ws)
		})
	}
	w := func(ch, v string) checkpoint.PendingWrite {
		pw := checkpoint.PendingWrite{Channel: ch}
		if v != "" {
			pw.Value = json.RawMessage(v)
		}
		return pw
	}
	ids := &idGen{}
	big := `"` + strings.Repeat("large value ", 20) + `"`
	first := ids.next()
	put("", "", cp(first, map[string]int64{"__start__": 1}, nil), checkpoint.Metadata{Source: "input", Step: -1},
		full("__start__", 1, `{"messages":[{"text":"hi"}]}`))
	writes("", first, "start-task", w("messages", `[{"text":"hi"}]`), w("branch:to:a", ""))
	parent := first
	var fork string
	for step := 0; step < 40; step++ {
		id := ids.next()
		v := int64(step + 2)
		versions := map[string]int64{"__start__": 1, "messages": v, "counter": v, "big": 2 + v/10}
		blobs := []checkpoint.Blob{full("counter", v, fmt.Sprint(step))}
		if step == 0 {
			blobs = append(blobs, full("messages", v, `[{"text":"hi"}]`))
		} else {
			blobs = append(blobs, appended("messages", v, v-1, fmt.Sprintf(`{"text":"message %d"}`, step)))
		}
		if step%10 == 0 {
			blobs = append(blobs, full("big", 2+v/10, big[:len(big)-1]+fmt.Sprint(step)+`"`))
		}
		seen := map[string]map[string]int64{"a": {"messages": v - 1}}
		put("", parent, cp(id, versions, seen, "messages"), checkpoint.Metadata{Source: "loop", Step: step}, blobs...)
		task := fmt.Sprintf("task-%d", step)
		switch step % 4 {
		case 0:
			writes("", id, task, w("messages", fmt.Sprintf(`[{"text":"reply %d"}]`, step)))
		case 1:
			// Special channels between regular writes: two regular rows.
			writes("", id, task, w("messages", `[{"text":"x"}]`), w(checkpoint.ErrorChannel, `"failed once"`), w("counter", "1"), w("branch:to:b", ""))
		case 2:
			// A task's regular writes again: stored once; its error replaced.
			writes("", id, task, w("messages", `[{"text":"first"}]`), w(checkpoint.ErrorChannel, `"first"`))
			writes("", id, task, w("messages", `[{"text":"second"}]`), w(checkpoint.ErrorChannel, `"second"`))
		case 3:
			writes("", id, task, w(checkpoint.InterruptChannel, `[{"value":"ask"}]`))
			writes("", id, checkpoint.NullTaskID, w(checkpoint.ResumeChannel, `"yes"`))
		}
		if step == 20 {
			// The same id again, with another value: the later one counts.
			put("", parent, cp(id, versions, seen, "messages"), checkpoint.Metadata{Source: "loop", Step: step, Extra: map[string]any{"again": true}}, blobs...)
		}
		if step == 25 {
			fork = parent
		}
		parent = id
	}
	// A fork of an older checkpoint reusing version numbers, and a
	// subgraph's checkpoints.
	forked := ids.next()
	put("", fork, cp(forked, map[string]int64{"__start__": 1, "messages": 27, "counter": 27, "big": 4}, nil), checkpoint.Metadata{Source: "fork", Step: 25},
		appended("messages", 27, 26, `{"text":"on the fork"}`), full("counter", 27, `"forked"`))
	sub := ids.next()
	put("sub:1", "", cp(sub, map[string]int64{"s": 1}, nil), checkpoint.Metadata{Parents: map[string]string{"": parent}}, full("s", 1, big))
	writes("sub:1", sub, "sub-task", w("s", `"next"`))
	return out
}

// testBatch checks Saver.Batch: writes made in batches store exactly what
// the same writes store one at a time; a batch whose write fails stores
// nothing (with a driver that cannot batch, the writes before the failing
// one are stored, as fn made them); a batch whose lease is lost stores
// nothing and tells ErrLeaseLost, and so do a task's pending writes made
// alone; a batch is for its own thread only.
func testBatch(t *testing.T, s *checkpoint.Saver) {
	script := batchScript()
	// Both fenced by a lease, as a run's writes are: in a batch only
	// the first write checks it.
	leased := func(thread string) context.Context {
		return checkpoint.WithLease(bg, acquire(t, s, thread, checkpoint.LeaseOptions{}))
	}
	// Thread ids of one length, so stored sizes compare too.
	const single, batched = "one-by-one", "in-batches"
	sctx := leased(single)
	for i, w := range script {
		if err := w(sctx, s, single); err != nil {
			t.Fatalf("write %d one at a time: %v", i, err)
		}
	}
	bctx := leased(batched)
	for start, size := 0, 1; start < len(script); start, size = start+size, size%7+1 {
		part := script[start:min(start+size, len(script))]
		err := s.Batch(bctx, batched, func(ctx context.Context) error {
			for i, w := range part {
				if err := w(ctx, s, batched); err != nil {
					return fmt.Errorf("write %d: %w", start+i, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("batch of writes %d to %d: %v", start, start+len(part)-1, err)
		}
	}
	want := dump(t, s, single)
	if len(want) < 40 {
		t.Fatalf("the script stored %d checkpoints; want more than 40", len(want))
	}
	if d := diffTuples(retarget(want, batched), dump(t, s, batched)); d != "" {
		t.Fatalf("batched writes read back differently from the same writes one at a time (-one at a time +batched):\n%s", d)
	}
	// What is stored, row by row, where the driver can tell.
	if st, ok := s.Driver().(interface {
		Stats(context.Context, string) (sqlstore.Stats, error)
	}); ok {
		a, err := st.Stats(bg, single)
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.Stats(bg, batched)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(a, b); d != "" {
			t.Fatalf("batched writes stored other rows than one at a time (-one at a time +batched):\n%s", d)
		}
	}

	// A write that fails in the middle of a batch.
	ids := &idGen{n: 100}
	a, b, c := ids.next(), ids.next(), ids.next()
	putA := func(ctx context.Context, thread string) error {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread}, cp(a, map[string]int64{"x": 1}, nil), checkpoint.Metadata{Source: "input", Step: -1}, []checkpoint.Blob{full("x", 1, `"a"`)})
		return err
	}
	putC := func(ctx context.Context, thread string) error {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: b}, cp(c, map[string]int64{"x": 3}, nil), checkpoint.Metadata{Source: "loop", Step: 1}, []checkpoint.Blob{full("x", 3, `"c"`)})
		return err
	}
	for _, tc := range []struct {
		name string
		// swallow: fn does not return the bad write's error, and goes on.
		swallow bool
		bad     func(ctx context.Context, thread string) error
	}{
		// Refused by the Saver before the driver sees it.
		{"saver", false, func(ctx context.Context, thread string) error {
			return s.PutWrites(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: a}, "t", []checkpoint.PendingWrite{{Channel: "x", Value: json.RawMessage(`{not json`)}})
		}},
		// Refused by the driver, after the batch wrote: items appended
		// to a version that is not stored.
		{"driver", true, func(ctx context.Context, thread string) error {
			_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: a}, cp(b, map[string]int64{"x": 2, "m": 5}, nil), checkpoint.Metadata{Source: "loop", Step: 0},
				[]checkpoint.Blob{full("x", 2, `"b"`), appended("m", 5, 4, `"item"`)})
			return err
		}},
	} {
		thread := "fails-" + tc.name
		var badErr, laterErr error
		err := s.Batch(bg, thread, func(ctx context.Context) error {
			if err := putA(ctx, thread); err != nil {
				return err
			}
			badErr = tc.bad(ctx, thread)
			if badErr == nil || !tc.swallow {
				return badErr
			}
			// The error is not passed on: the batch fails anyway, and
			// refuses later writes.
			laterErr = putC(ctx, thread)
			return nil
		})
		if !errors.Is(badErr, checkpoint.ErrInvalid) {
			t.Fatalf("%s: the bad write returned %v; want ErrInvalid", tc.name, badErr)
		}
		stored := dump(t, s, thread)
		switch {
		case s.CanBatch():
			// The first failure is the batch's, and nothing is stored,
			// not even what came before it or after it.
			if !errors.Is(err, badErr) {
				t.Fatalf("%s: Batch returned %v; want the failed write's error %v", tc.name, err, badErr)
			}
			if tc.swallow && laterErr == nil {
				t.Fatalf("%s: a write after the failed one in the same batch succeeded", tc.name)
			}
			if len(stored) != 0 {
				t.Fatalf("%s: a failed batch stored %d checkpoints; want none", tc.name, len(stored))
			}
		default:
			// Without batching each write is stored when made.
			if len(stored) == 0 || stored[len(stored)-1].Config.CheckpointID != a {
				t.Fatalf("%s: without batching, the write before the failed one is not stored: %v", tc.name, stored)
			}
		}
	}

	// A batch whose lease was taken over stores nothing.
	lease := acquire(t, s, "lost", checkpoint.LeaseOptions{})
	takeOver(t, s, "lost")
	err := s.Batch(checkpoint.WithLease(bg, lease), "lost", func(ctx context.Context) error {
		if err := putA(ctx, "lost"); err != nil {
			return err
		}
		return putC(ctx, "lost")
	})
	wantErr(t, err, checkpoint.ErrLeaseLost, "batch after the lease was taken over")
	if got := dump(t, s, "lost"); len(got) != 0 {
		t.Fatalf("a batch without its lease stored %d checkpoints", len(got))
	}
	if !errors.Is(lease.Err(), checkpoint.ErrLeaseLost) {
		t.Fatalf("the lease's Err after a refused batch = %v; want ErrLeaseLost", lease.Err())
	}

	// A task's writes alone, the statement that checks the lease and
	// inserts: refused once the lease is gone.
	lease = acquire(t, s, "lost-writes", checkpoint.LeaseOptions{})
	lctx := checkpoint.WithLease(bg, lease)
	if err := putA(lctx, "lost-writes"); err != nil {
		t.Fatal(err)
	}
	takeOver(t, s, "lost-writes")
	err = s.PutWrites(lctx, checkpoint.Config{ThreadID: "lost-writes", CheckpointID: a}, "task", []checkpoint.PendingWrite{{Channel: "x", Value: json.RawMessage(`1`)}})
	wantErr(t, err, checkpoint.ErrLeaseLost, "pending writes after the lease was taken over")
	if got := mustGet(t, s, "lost-writes", "", a); len(got.PendingWrites) != 0 {
		t.Fatalf("pending writes without the lease were stored: %v", got.PendingWrites)
	}

	if !s.CanBatch() {
		return
	}
	// A batch is one thread's; its context does not outlive it.
	var kept context.Context
	err = s.Batch(bg, "mine", func(ctx context.Context) error {
		kept = ctx
		return putA(ctx, "other")
	})
	wantErr(t, err, checkpoint.ErrInvalid, "a write of another thread in a batch")
	wantErr(t, putA(kept, "mine"), checkpoint.ErrInvalid, "a write with the context of an ended batch")
	if got := dump(t, s, "mine"); len(got) != 0 {
		t.Fatalf("writes refused after their batch stored %d checkpoints", len(got))
	}
	wantErr(t, s.Batch(bg, "", func(context.Context) error { return nil }), checkpoint.ErrInvalid, "a batch without a thread")
	wantErr(t, s.Batch(bg, "mine", nil), checkpoint.ErrInvalid, "a batch without a function")
	// Nor does a lease of another thread go in it (it would be taken
	// only if the batch commits).
	err = s.Batch(bg, "mine", func(ctx context.Context) error {
		_, err := s.Acquire(ctx, "not-mine", checkpoint.LeaseOptions{})
		return err
	})
	wantErr(t, err, checkpoint.ErrInvalid, "taking the lease of another thread in a batch")
	acquire(t, s, "not-mine", checkpoint.LeaseOptions{})
}

// testGraphBatched runs a graph with async durability, whose writes the
// run batches when the saver can, and the same graph over the same store
// without batching: the stored histories match, step for step.
func testGraphBatched(t *testing.T, s *checkpoint.Saver) {
	// The same driver, without its BatchDriver method.
	unbatched := checkpoint.New(struct{ checkpoint.Driver }{s.Driver()})
	if unbatched.CanBatch() {
		t.Fatal("a saver over a driver without WriteBatch says it can batch")
	}
	run := func(s *checkpoint.Saver, thread string) []*checkpoint.Tuple {
		var calls atomic.Int64
		// Messages with ids of their own: the ids given are kept.
		node := func(name string) graph.NodeFunc {
			return func(ctx context.Context, _ graph.State) (graph.Update, error) {
				id := fmt.Sprint(name, calls.Add(1))
				return Messages.Write(Msg{ID: id, Text: id}), nil
			}
		}
		g, err := graph.New(Messages).AddNode("a", node("a"), nil).AddNode("b", node("b"), nil).
			AddEdge(graph.START, "a").AddEdge("a", "b").Compile(&graph.CompileOptions{Checkpointer: s})
		if err != nil {
			t.Fatal(err)
		}
		opts := graph.RunOptions{ThreadID: thread, Durability: graph.DurabilityAsync}
		for i := range 5 {
			if _, err := g.Invoke(bg, Messages.Write(Msg{ID: fmt.Sprint("in", i), Text: fmt.Sprint("turn ", i)}), &opts); err != nil {
				t.Fatalf("run %d on %q: %v", i, thread, err)
			}
		}
		return dump(t, s, thread)
	}
	got := run(s, "batched")
	want := run(unbatched, "unbatch")
	if len(got) != len(want) || len(got) < 15 {
		t.Fatalf("batched runs stored %d checkpoints, unbatched %d; want the same, at least 15", len(got), len(want))
	}
	// Ids, times and task ids differ between the two; what each
	// checkpoint holds must not.
	for i := range got {
		g, w := got[i], want[i]
		if d := cmp.Diff(w.Checkpoint.Values, g.Checkpoint.Values, tupleOpts); d != "" {
			t.Fatalf("checkpoint %d values differ (-unbatched +batched):\n%s", i, d)
		}
		if d := cmp.Diff(w.Checkpoint.Versions, g.Checkpoint.Versions); d != "" {
			t.Fatalf("checkpoint %d versions differ (-unbatched +batched):\n%s", i, d)
		}
		if w.Metadata.Source != g.Metadata.Source || w.Metadata.Step != g.Metadata.Step || (w.Parent == nil) != (g.Parent == nil) {
			t.Fatalf("checkpoint %d: batched %+v parent %v, unbatched %+v parent %v", i, g.Metadata, g.Parent, w.Metadata, w.Parent)
		}
		if len(w.PendingWrites) != len(g.PendingWrites) {
			t.Fatalf("checkpoint %d: batched has %d pending writes, unbatched %d", i, len(g.PendingWrites), len(w.PendingWrites))
		}
		for j := range w.PendingWrites {
			if w.PendingWrites[j].Channel != g.PendingWrites[j].Channel || string(w.PendingWrites[j].Value) != string(g.PendingWrites[j].Value) {
				t.Fatalf("checkpoint %d pending write %d: batched %+v, unbatched %+v", i, j, g.PendingWrites[j], w.PendingWrites[j])
			}
		}
	}
}
