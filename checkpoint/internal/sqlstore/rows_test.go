package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
)

var updateRows = flag.Bool("update-rows", false, "rewrite testdata/rows.golden from this build")

type write = func(context.Context, *checkpoint.Saver) error

// rowsScript writes a history that takes every path of Put and PutWrites
// (SnapshotEvery is 4): values inline and in blob rows, one and several
// per checkpoint; a fork that reuses version numbers with other large
// values; message lists started from a small list, from a blob row and
// from nothing, growing past sealed chunks, with an append too large for
// a tail slot; a fork of a log and forks nested past the deepest log;
// pending writes of every shape, given twice; a checkpoint put twice.
func rowsScript(thread string) []write {
	var out []write
	ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(ns, parent, id string, versions map[string]int64, blobs ...checkpoint.Blob) {
		out = append(out, func(ctx context.Context, s *checkpoint.Saver) error {
			_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: parent},
				&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: id, TS: ts, Versions: versions, VersionsSeen: map[string]map[string]int64{"n": {"m": 1}}},
				checkpoint.Metadata{Source: "loop", Step: len(id)}, blobs)
			return err
		})
	}
	writes := func(id, task string, ws ...checkpoint.PendingWrite) {
		out = append(out, func(ctx context.Context, s *checkpoint.Saver) error {
			return s.PutWrites(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: id}, task, ws)
		})
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	full := func(ch string, v int64, s string) checkpoint.Blob {
		return checkpoint.Blob{Channel: ch, Version: v, Value: raw(s)}
	}
	app := func(ch string, v, base int64, items ...string) checkpoint.Blob {
		b := checkpoint.Blob{Channel: ch, Version: v, BaseVersion: base, Appended: []json.RawMessage{}}
		for _, it := range items {
			b.Appended = append(b.Appended, raw(it))
		}
		return b
	}
	big := func(tag string) string { return `"` + tag + strings.Repeat(" large", 12) + `"` }
	huge := `"` + strings.Repeat("x", 2000) + `"`
	w := func(ch, v string) checkpoint.PendingWrite {
		pw := checkpoint.PendingWrite{Channel: ch}
		if v != "" {
			pw.Value = raw(v)
		}
		return pw
	}

	put("", "", "c01", map[string]int64{"a": 1, "b": 1, "m": 1, "l": 1, "e": 1},
		full("a", 1, big("a1")), full("b", 1, big("b1")), full("m", 1, `[{"t":"m0"},{"t":"m0 again, longer than inline"}]`), full("l", 1, `["x"]`), checkpoint.Blob{Channel: "e", Version: 1, Empty: true})
	writes("c01", "t1", w("m", `[1]`), w(checkpoint.ErrorChannel, `"e"`), w("b", `2`), w("branch", ""))
	writes("c01", "t1", w("m", `[9]`), w(checkpoint.ErrorChannel, `"e2"`))
	writes("c01", "t2", w("m", `[2]`))
	writes("c01", "t2", w("m", `[3]`))
	writes("c01", checkpoint.NullTaskID, w(checkpoint.ResumeChannel, `"r"`))
	parent := "c01"
	for i := 2; i <= 9; i++ {
		id := fmt.Sprintf("c%02d", i)
		v := int64(i)
		blobs := []checkpoint.Blob{app("m", v, v-1, fmt.Sprintf(`{"t":"m%d"}`, i)), app("l", v, v-1, fmt.Sprintf(`"l%d"`, i))}
		switch {
		case i == 4:
			blobs = append(blobs, checkpoint.Blob{Channel: "z", Version: v, Empty: true})
		case i == 5:
			// The first append, too large for a tail slot.
			blobs = append(blobs, app("z", v, v-1, huge))
		case i > 5:
			blobs = append(blobs, app("z", v, v-1, fmt.Sprintf(`"z%d"`, i)))
		}
		versions := map[string]int64{"a": 1, "b": 1, "m": v, "l": v, "e": 1}
		if i >= 4 {
			versions["z"] = v
		}
		put("", parent, id, versions, blobs...)
		writes(id, "t", w("m", fmt.Sprintf(`[%d]`, i)))
		parent = id
	}
	// The same checkpoint again.
	put("", "c08", "c09", map[string]int64{"a": 1, "b": 1, "m": 9, "l": 9, "e": 1, "z": 9}, app("m", 9, 8, `{"t":"m9"}`), app("l", 9, 8, `"l9"`), app("z", 9, 8, `"z9"`))
	// Forks reusing version numbers, with other large values in two
	// channels (one already taken at its version, one not), and forks of
	// forks, past the deepest log.
	fparent := "c03"
	for d := 1; d <= 6; d++ {
		id := fmt.Sprintf("f%d", d)
		v := int64(3 + d)
		put("", fparent, id, map[string]int64{"a": 2, "b": int64(1 + d), "m": v, "l": v, "e": 1},
			full("a", 2, big(id+"a")), full("b", int64(1+d), big(id+"b")), app("m", v, v-1, fmt.Sprintf(`{"t":"%s"}`, id)), app("l", v, v-1, `"`+id+`"`))
		writes(id, "t", w(checkpoint.InterruptChannel, `[{"v":1}]`), w("m", `[0]`))
		fparent = id
	}
	// A fork with one large value, at a version already taken.
	put("", "c03", "g1", map[string]int64{"a": 2, "b": 1, "m": 3, "l": 3, "e": 1}, full("a", 2, big("g1")))
	// A subgraph, and a log started from nothing.
	put("sub:1", "", "s1", map[string]int64{"k": 1, "m": 1}, full("k", 1, big("k")), checkpoint.Blob{Channel: "m", Version: 1, Empty: true})
	put("sub:1", "s1", "s2", map[string]int64{"k": 1, "m": 2}, app("m", 2, 1, `"s"`))
	return out
}

// dumpRows returns every row of every table of the thread, sorted, with
// the thread id column left out.
func dumpRows(t *testing.T, db *sql.DB, thread string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range []string{"weft_checkpoints", "weft_checkpoint_blobs", "weft_checkpoint_logs", "weft_checkpoint_chunks", "weft_checkpoint_tails", "weft_checkpoint_writes"} {
		rows, err := db.Query(`SELECT * FROM `+table+` WHERE thread_id = ?1`, thread)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for i, c := range cols {
				if c == "thread_id" {
					continue
				}
				parts = append(parts, fmt.Sprintf("%s=%q", c, fmt.Sprint(vals[i])))
			}
			out[table] = append(out[table], strings.Join(parts, " "))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		slices.Sort(out[table])
	}
	return out
}

// TestStoredRows pins what the writes store, row by row, to
// testdata/rows.golden, written by the build before writes were batched
// and their statements cut: made one at a time, in one batch, or in
// batches of three, fenced by a lease or not, the same writes store the
// same rows.
func TestStoredRows(t *testing.T) {
	ctx := context.Background()
	c, s := newCounted(t, sqlstore.Options{SnapshotEvery: 4})
	golden := filepath.Join("testdata", "rows.golden")
	modes := []struct {
		thread string
		size   int
		// leased: the writes are fenced by a lease of the thread.
		leased bool
	}{{"single", 1, false}, {"batch1", 1000, false}, {"batch3", 3, false}, {"leased", 1, true}, {"leased3", 3, true}}
	var got map[string][]string
	for _, m := range modes {
		ctx := ctx
		if m.leased {
			l, err := s.Acquire(ctx, m.thread, checkpoint.LeaseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			ctx = checkpoint.WithLease(ctx, l)
		}
		script := rowsScript(m.thread)
		for start := 0; start < len(script); start += m.size {
			part := script[start:min(start+m.size, len(script))]
			run := func(ctx context.Context) error {
				for i, w := range part {
					if err := w(ctx, s); err != nil {
						return fmt.Errorf("write %d: %w", start+i, err)
					}
				}
				return nil
			}
			var err error
			if m.size == 1 {
				err = run(ctx)
			} else {
				err = s.Batch(ctx, m.thread, run)
			}
			if err != nil {
				t.Fatalf("%s: %v", m.thread, err)
			}
		}
		rows := dumpRows(t, c.db, m.thread)
		if got == nil {
			got = rows
		} else if d := cmp.Diff(got, rows); d != "" {
			t.Fatalf("%s stored other rows than one at a time (-one at a time +%s):\n%s", m.thread, m.thread, d)
		}
	}
	b, err := json.MarshalIndent(got, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if *updateRows {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update-rows writes it)", err)
	}
	var wantRows map[string][]string
	if err := json.Unmarshal(want, &wantRows); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantRows, got); d != "" {
		t.Fatalf("stored rows differ from %s (-golden +now):\n%s", golden, d)
	}
}
