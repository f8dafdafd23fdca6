// Package sqlstoretest checks that the SQL checkpoint drivers upgrade
// databases written by earlier schema versions.
package sqlstoretest

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
)

// v2thread is a thread written by weft's SQLite saver at schema version 2
// (commit 362e169), with N = 4 so that its message logs have chunks merged
// over three levels: a main line with a summary rewrite, a fork, a fork of
// the fork, a replay that reuses versions with other values (blob rows of
// another origin), triggers set and emptied, a subgraph namespace, and
// pending writes. It holds every row of the thread and what the saver read
// back for each checkpoint (List).
//
//go:embed testdata/v2thread.json.gz
var v2thread []byte

type cell struct {
	T string          `json:"t"` // i, s, b or n (NULL)
	V json.RawMessage `json:"v"`
}

type fixture struct {
	Rows   map[string][]map[string]cell `json:"rows"`
	Tuples []*checkpoint.Tuple          `json:"tuples"`
}

// Exec runs one statement on the database under test, outside the driver.
type Exec func(ctx context.Context, query string, args ...any) error

// Driver is what the upgrade test needs of a SQL driver.
type Driver interface {
	checkpoint.Driver
	Migrate(ctx context.Context) error
}

// FromV2 loads the thread of schema version 2 into a database that open
// returns migrated to version 2, migrates it, and checks that every
// checkpoint reads back exactly as version 2 read it, and that the thread
// goes on: appending to its logs, forking them, pruning and rewinding.
// store is the driver's sqlstore.Store; numbered says the database wants
// ?N placeholders.
func FromV2(t *testing.T, d Driver, store *sqlstore.Store, exec Exec, numbered bool) {
	t.Helper()
	ctx := context.Background()
	zr, err := gzip.NewReader(bytes.NewReader(v2thread))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var fx fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	if err := sqlstore.MigrateTo(ctx, store, 2); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"weft_checkpoints", "weft_checkpoint_blobs", "weft_checkpoint_logs", "weft_checkpoint_chunks", "weft_checkpoint_writes"} {
		for _, row := range fx.Rows[table] {
			cols := slices.Sorted(func(yield func(string) bool) {
				for c := range row {
					if !yield(c) {
						return
					}
				}
			})
			var args []any
			var ph []string
			for _, c := range cols {
				v, err := row[c].value()
				if err != nil {
					t.Fatalf("%s.%s: %v", table, c, err)
				}
				args = append(args, v)
				p := fmt.Sprintf("$%d", len(args))
				if numbered {
					p = "?" + p[1:]
				}
				ph = append(ph, p)
			}
			q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(ph, ", ") + ")"
			if err := exec(ctx, q, args...); err != nil {
				t.Fatalf("loading %s: %v", table, err)
			}
		}
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatalf("migrating version 2 to the current version: %v", err)
	}
	s := checkpoint.New(d)
	opts := cmp.Options{
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != rawType }, cmpopts.EquateEmpty()),
		cmp.Transformer("raw", func(m json.RawMessage) string { return string(m) }),
	}
	list := func() []*checkpoint.Tuple {
		var out []*checkpoint.Tuple
		for tp, err := range s.List(ctx, "t", checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tp)
		}
		return out
	}
	if d := cmp.Diff(fx.Tuples, list(), opts); d != "" {
		t.Fatalf("the migrated thread reads back differently (-version 2 +now):\n%s", d)
	}
	byID := map[string]*checkpoint.Tuple{}
	for _, tp := range fx.Tuples {
		byID[tp.Config.CheckpointID] = tp
	}

	// The thread goes on from its newest checkpoint and from an old one
	// whose log grew past it (a fork), appending to logs made by version
	// 2, blob-row pointers and merged chunks included.
	// 0000-0071 ends the main line, 0000-0021 is where it was forked, and
	// the newest root checkpoint ends the replay.
	mainEnd, old := byID["0000-0071"], byID["0000-0021"]
	var newest *checkpoint.Tuple
	for _, tp := range fx.Tuples {
		if tp.Config.Namespace == "" {
			newest = tp
			break
		}
	}
	if mainEnd == nil || old == nil || newest == nil {
		t.Fatal("the fixture lacks the checkpoints the test grows from")
	}
	want := map[string]string{}
	n := 0
	grow := func(from *checkpoint.Tuple, steps int) *checkpoint.Tuple {
		cur := from
		for i := range steps {
			n++
			id := fmt.Sprintf("0001-%04d", n)
			vers := map[string]int64{}
			for k, v := range cur.Checkpoint.Versions {
				vers[k] = v
			}
			next := slices.Max(slices.Collect(func(yield func(int64) bool) {
				for _, v := range vers {
					if !yield(v) {
						return
					}
				}
			})) + 1
			item := fmt.Sprintf(`{"id":"new%d","text":"%s"}`, n, strings.Repeat("y", i%5))
			vers["messages"] = next
			cp := &checkpoint.Checkpoint{V: 1, ID: id, Versions: vers, VersionsSeen: map[string]map[string]int64{}}
			blobs := []checkpoint.Blob{{Channel: "messages", Version: next, BaseVersion: cur.Checkpoint.Versions["messages"], Appended: []json.RawMessage{json.RawMessage(item)}}}
			if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: cur.Config.CheckpointID}, cp, checkpoint.Metadata{Source: "loop"}, blobs); err != nil {
				t.Fatalf("appending to the migrated thread: %v", err)
			}
			v, err := checkpoint.JoinAppended(cur.Checkpoint.Values["messages"], []json.RawMessage{json.RawMessage(item)})
			if err != nil {
				t.Fatal(err)
			}
			want[id] = string(v)
			got, err := s.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: id})
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Checkpoint.Values["messages"]) != want[id] {
				t.Fatalf("checkpoint %s on the migrated thread reads\n%s\nwant\n%s", id, got.Checkpoint.Values["messages"], want[id])
			}
			cur = got
		}
		return cur
	}
	grow(mainEnd, 40)
	grow(old, 10)
	grow(newest, 5)
	// Every checkpoint of version 2 still reads as before.
	for _, tp := range fx.Tuples {
		got, err := s.Get(ctx, tp.Config)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tp, got, opts); d != "" {
			t.Fatalf("checkpoint %s after the thread went on (-version 2 +now):\n%s", tp.Config.CheckpointID, d)
		}
	}
	// Pruning and rewinding keep what they keep exactly.
	check := func(what string) {
		t.Helper()
		for _, tp := range list() {
			id := tp.Config.CheckpointID
			if w, ok := want[id]; ok {
				if string(tp.Checkpoint.Values["messages"]) != w {
					t.Fatalf("after %s, checkpoint %s reads %s; want %s", what, id, tp.Checkpoint.Values["messages"], w)
				}
			} else if d := cmp.Diff(byID[id], tp, opts); d != "" {
				t.Fatalf("after %s, checkpoint %s (-version 2 +now):\n%s", what, id, d)
			}
		}
	}
	if _, err := s.Prune(ctx, "t", checkpoint.PruneOptions{KeepLatest: 60}); err != nil {
		t.Fatal(err)
	}
	check("Prune")
	if _, err := s.Rewind(ctx, "t", "0001-0020"); err != nil {
		t.Fatal(err)
	}
	check("Rewind")
	if got := len(list()); got == 0 {
		t.Fatal("nothing left after Rewind")
	}
}

var rawType = reflect.TypeFor[json.RawMessage]()

func (c cell) value() (any, error) {
	switch c.T {
	case "n":
		return nil, nil
	case "i":
		var n int64
		err := json.Unmarshal(c.V, &n)
		return n, err
	case "s":
		var s string
		err := json.Unmarshal(c.V, &s)
		return s, err
	case "b":
		var b []byte
		err := json.Unmarshal(c.V, &b)
		return b, err
	}
	return nil, fmt.Errorf("unknown cell type %q", c.T)
}
