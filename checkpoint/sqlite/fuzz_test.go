package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/sqlite"
)

// fuzzColumns are the stored columns FuzzStoredRows overwrites. Each keeps
// the type its schema gives it (as PostgreSQL enforces): integers stay
// integers and bytes stay bytes, whatever their contents.
var fuzzColumns = []struct {
	table, col string
	kind       byte // 'i' integer, 'b' bytes, 't' text
}{
	{"weft_checkpoints", "ts", 'i'},
	{"weft_checkpoints", "fmt", 'i'},
	{"weft_checkpoints", "metadata", 't'},
	{"weft_checkpoints", "body", 'b'},
	{"weft_checkpoints", "refs", 'b'},
	{"weft_checkpoints", "parent_id", 't'},
	{"weft_checkpoint_blobs", "version", 'i'},
	{"weft_checkpoint_blobs", "origin", 't'},
	{"weft_checkpoint_blobs", "kind", 'i'},
	{"weft_checkpoint_blobs", "fmt", 'i'},
	{"weft_checkpoint_blobs", "value", 'b'},
	{"weft_checkpoint_blobs", "log_id", 'i'},
	{"weft_checkpoint_blobs", "log_len", 'i'},
	{"weft_checkpoint_logs", "log_id", 'i'},
	{"weft_checkpoint_logs", "base_version", 'i'},
	{"weft_checkpoint_logs", "base_origin", 't'},
	{"weft_checkpoint_logs", "length", 'i'},
	{"weft_checkpoint_logs", "depth", 'i'},
	{"weft_checkpoint_chunks", "log_id", 'i'},
	{"weft_checkpoint_chunks", "start", 'i'},
	{"weft_checkpoint_chunks", "count", 'i'},
	{"weft_checkpoint_chunks", "fmt", 'i'},
	{"weft_checkpoint_chunks", "items", 'b'},
	{"weft_checkpoint_chunks", "sizes", 'b'},
	{"weft_checkpoint_writes", "fmt", 'i'},
	{"weft_checkpoint_writes", "value", 'b'},
	{"weft_checkpoint_writes", "channel", 't'},
}

// fuzzThread writes a thread that uses every stored form: whole values,
// compressed values, an empty marker, a message log with merged chunks, a
// fork of the log (a log with a base), and pending writes.
func fuzzThread(ctx context.Context, d *sqlite.Driver) error {
	s := checkpoint.New(d)
	big := json.RawMessage(`"` + strings.Repeat("a long and repetitive message ", 40) + `"`)
	put := func(parent, id string, vers map[string]int64, blobs ...checkpoint.Blob) error {
		cp := &checkpoint.Checkpoint{V: 1, ID: id, Versions: vers}
		meta := checkpoint.Metadata{Source: "loop", Step: len(id), Extra: map[string]any{"k": id}}
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: parent}, cp, meta, blobs)
		return err
	}
	if err := put("", "c01", map[string]int64{"msgs": 1, "big": 1, "none": 1},
		checkpoint.Blob{Channel: "msgs", Version: 1, Value: json.RawMessage(`["m0"]`)},
		checkpoint.Blob{Channel: "big", Version: 1, Value: big},
		checkpoint.Blob{Channel: "none", Version: 1, Empty: true}); err != nil {
		return err
	}
	parent := "c01"
	for v := int64(2); v <= 6; v++ {
		id := fmt.Sprintf("c%02d", v)
		item := json.RawMessage(fmt.Sprintf(`"m%d"`, v))
		if v == 4 {
			item = big
		}
		if err := put(parent, id, map[string]int64{"msgs": v, "big": 1, "none": 1},
			checkpoint.Blob{Channel: "msgs", Version: v, BaseVersion: v - 1, Appended: []json.RawMessage{item}}); err != nil {
			return err
		}
		parent = id
	}
	// A fork from c03: the log grew past its version 3 on the main line.
	if err := put("c03", "c07", map[string]int64{"msgs": 4, "big": 1, "none": 1},
		checkpoint.Blob{Channel: "msgs", Version: 4, BaseVersion: 3, Appended: []json.RawMessage{json.RawMessage(`"fork"`)}}); err != nil {
		return err
	}
	return s.PutWrites(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c06"}, "task1", []checkpoint.PendingWrite{
		{Channel: "msgs", Value: json.RawMessage(`"w"`)},
		{Channel: checkpoint.ErrorChannel, Value: big},
	})
}

// FuzzStoredRows overwrites one stored column of a real thread with
// arbitrary contents and reads the thread back every way the driver can:
// reading never panics, and fails only with ErrCorrupt naming the thread.
func FuzzStoredRows(f *testing.F) {
	ctx := context.Background()
	path := filepath.Join(f.TempDir(), "weft.db")
	d, err := sqlite.OpenOptions(ctx, path, sqlite.Options{SnapshotEvery: 2})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	if err := fuzzThread(ctx, d); err != nil {
		f.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	// The rowids of each table, to address a row by a small number.
	rowids := map[string][]int64{}
	for _, c := range fuzzColumns {
		if rowids[c.table] != nil {
			continue
		}
		rs, err := db.Query(`SELECT rowid FROM ` + c.table + ` ORDER BY rowid`)
		if err != nil {
			f.Fatal(err)
		}
		for rs.Next() {
			var id int64
			rs.Scan(&id)
			rowids[c.table] = append(rowids[c.table], id)
		}
		rs.Close()
	}
	for i := range fuzzColumns {
		f.Add(uint8(i), uint8(0), int64(1<<62), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
		f.Add(uint8(i), uint8(1), int64(-1), []byte(`{"cv":{"msgs":3}}`))
	}
	f.Add(uint8(10), uint8(0), int64(0), []byte(`{}`)) // a log base that is not an array
	f.Fuzz(func(t *testing.T, col, row uint8, n int64, data []byte) {
		c := fuzzColumns[int(col)%len(fuzzColumns)]
		ids := rowids[c.table]
		id := ids[int(row)%len(ids)]
		var old any
		if err := db.QueryRow(`SELECT `+c.col+` FROM `+c.table+` WHERE rowid = ?`, id).Scan(&old); err != nil {
			t.Fatal(err)
		}
		var v any = data
		switch c.kind {
		case 'i':
			v = n
		case 't':
			v = string(data)
		}
		if _, err := db.Exec(`UPDATE `+c.table+` SET `+c.col+` = ? WHERE rowid = ?`, v, id); err != nil {
			return // a key the table already has
		}
		defer func() {
			if _, err := db.Exec(`UPDATE `+c.table+` SET `+c.col+` = ? WHERE rowid = ?`, old, id); err != nil {
				t.Fatal(err)
			}
		}()
		check := func(op string, err error) {
			if err == nil {
				return
			}
			if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), `thread "t"`) {
				t.Fatalf("%s.%s = %v: %s = %v, want nil or ErrCorrupt naming the thread", c.table, c.col, v, op, err)
			}
		}
		_, err := d.Get(ctx, checkpoint.Config{ThreadID: "t"})
		check("Get", err)
		for i := 1; i <= 7; i++ {
			_, err := d.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: fmt.Sprintf("c%02d", i)})
			check("Get", err)
		}
		for _, err := range d.List(ctx, "t", checkpoint.ListOptions{}) {
			check("List", err)
		}
		for _, err := range d.ListThreads(ctx, checkpoint.ThreadFilter{}) {
			check("ListThreads", err)
		}
	})
}
