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
	"github.com/weftlabs/weft/internal/sqlitetest"
)

// fuzzColumns are the stored columns FuzzStoredRows overwrites.
var fuzzColumns = []sqlitetest.Column{
	{Table: "weft_checkpoints", Col: "ts", Kind: 'i'},
	{Table: "weft_checkpoints", Col: "fmt", Kind: 'i'},
	{Table: "weft_checkpoints", Col: "metadata", Kind: 't'},
	{Table: "weft_checkpoints", Col: "body", Kind: 'b'},
	{Table: "weft_checkpoints", Col: "refs", Kind: 'b'},
	{Table: "weft_checkpoints", Col: "parent_id", Kind: 't'},
	{Table: "weft_checkpoint_blobs", Col: "version", Kind: 'i'},
	{Table: "weft_checkpoint_blobs", Col: "origin", Kind: 't'},
	{Table: "weft_checkpoint_blobs", Col: "kind", Kind: 'i'},
	{Table: "weft_checkpoint_blobs", Col: "fmt", Kind: 'i'},
	{Table: "weft_checkpoint_blobs", Col: "value", Kind: 'b'},
	{Table: "weft_checkpoint_blobs", Col: "log_id", Kind: 'i'},
	{Table: "weft_checkpoint_blobs", Col: "log_len", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "log_id", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "base_version", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "base_origin", Kind: 't'},
	{Table: "weft_checkpoint_logs", Col: "base_log", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "base_len", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "length", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "depth", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "sealed", Kind: 'i'},
	{Table: "weft_checkpoint_logs", Col: "tail", Kind: 'i'},
	{Table: "weft_checkpoint_chunks", Col: "log_id", Kind: 'i'},
	{Table: "weft_checkpoint_chunks", Col: "start", Kind: 'i'},
	{Table: "weft_checkpoint_chunks", Col: "count", Kind: 'i'},
	{Table: "weft_checkpoint_chunks", Col: "fmt", Kind: 'i'},
	{Table: "weft_checkpoint_chunks", Col: "items", Kind: 'b'},
	{Table: "weft_checkpoint_chunks", Col: "sizes", Kind: 'b'},
	{Table: "weft_checkpoint_tails", Col: "slot", Kind: 'i'},
	{Table: "weft_checkpoint_tails", Col: "start", Kind: 'i'},
	{Table: "weft_checkpoint_tails", Col: "count", Kind: 'i'},
	{Table: "weft_checkpoint_tails", Col: "fmt", Kind: 'i'},
	{Table: "weft_checkpoint_tails", Col: "items", Kind: 'b'},
	{Table: "weft_checkpoint_tails", Col: "sizes", Kind: 'b'},
	{Table: "weft_checkpoint_writes", Col: "fmt", Kind: 'i'},
	{Table: "weft_checkpoint_writes", Col: "value", Kind: 'b'},
	{Table: "weft_checkpoint_writes", Col: "channel", Kind: 't'},
}

// fuzzThread writes a thread that uses every stored form: whole values in
// rows, compressed ones, values kept in the checkpoint row (an empty
// marker, a small value, log pointers), a message log based on a row with
// sealed chunks and tail slots, a fork of the log (a log based on a log
// prefix), and pending writes, several in one row.
func fuzzThread(ctx context.Context, d *sqlite.Driver) error {
	s := checkpoint.New(d)
	big := json.RawMessage(`"` + strings.Repeat("a long and repetitive message ", 40) + `"`)
	vers := func(msgs int64) map[string]int64 {
		return map[string]int64{"msgs": msgs, "big": 1, "none": 1, "small": 1}
	}
	put := func(parent, id string, vers map[string]int64, blobs ...checkpoint.Blob) error {
		cp := &checkpoint.Checkpoint{V: 1, ID: id, Versions: vers}
		meta := checkpoint.Metadata{Source: "loop", Step: len(id), Extra: map[string]any{"k": id}}
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: parent}, cp, meta, blobs)
		return err
	}
	if err := put("", "c01", vers(1),
		checkpoint.Blob{Channel: "msgs", Version: 1, Value: json.RawMessage(`["m0, long enough for a row of its own"]`)},
		checkpoint.Blob{Channel: "big", Version: 1, Value: big},
		checkpoint.Blob{Channel: "none", Version: 1, Empty: true},
		checkpoint.Blob{Channel: "small", Version: 1, Value: json.RawMessage(`{"set":true}`)}); err != nil {
		return err
	}
	// With N = 2, every second append seals the tail into a chunk.
	parent := "c01"
	for v := int64(2); v <= 6; v++ {
		id := fmt.Sprintf("c%02d", v)
		item := json.RawMessage(fmt.Sprintf(`"m%d"`, v))
		if v == 4 {
			item = big
		}
		if err := put(parent, id, vers(v),
			checkpoint.Blob{Channel: "msgs", Version: v, BaseVersion: v - 1, Appended: []json.RawMessage{item}}); err != nil {
			return err
		}
		parent = id
	}
	// A fork from c03: the log grew past its version 3 on the main line.
	if err := put("c03", "c07", vers(4),
		checkpoint.Blob{Channel: "msgs", Version: 4, BaseVersion: 3, Appended: []json.RawMessage{json.RawMessage(`"fork"`)}}); err != nil {
		return err
	}
	return s.PutWrites(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c06"}, "task1", []checkpoint.PendingWrite{
		{Channel: "msgs", Value: json.RawMessage(`"w"`)},
		{Channel: "small", Value: json.RawMessage(`true`)},
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
	// A log base that is not an array.
	seeds := []sqlitetest.Seed{{Col: 10, Row: 0, Data: []byte(`{}`)}}
	sqlitetest.FuzzColumns(f, db, fuzzColumns, seeds, func(t *testing.T, what string) {
		check := func(op string, err error) {
			if err == nil {
				return
			}
			if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), `thread "t"`) {
				t.Fatalf("%s: %s = %v, want nil or ErrCorrupt naming the thread", what, op, err)
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
