package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/checkpointtest"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore/sqlstoretest"
	"github.com/weftlabs/weft/checkpoint/sqlite"
)

func newSaver(t *testing.T) *checkpoint.Saver {
	t.Helper()
	d, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return checkpoint.New(d)
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, newSaver)
}

// TestMigrateConcurrently opens one new file from several connections at
// once, as processes starting together would: the schema is made once.
func TestMigrateConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			d, err := sqlite.Open(context.Background(), path)
			if err == nil {
				err = d.Migrate(context.Background())
				d.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, version int
	if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM weft_schema_migrations WHERE component = 'checkpoint'`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	// One row per schema version, each applied once.
	if want := len(sqlite.Dialect.Migrations); rows != want || version != want {
		t.Fatalf("weft_schema_migrations has %d rows up to version %d; want %d rows, up to version %d", rows, version, want, want)
	}
}

// A file name with characters a URI would read specially ('#', '%')
// opens that file and no other, in WAL mode.
func TestPathWithURICharacters(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"run#1.db", "100%41.db", "a b.db"} {
		d, err := sqlite.Open(context.Background(), filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("Open(%q): %v", name, err)
		}
		d.Close()
		db, err := sql.Open("sqlite", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("%s: journal_mode %q, %v; want wal", name, mode, err)
		}
		db.Close()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.Contains(e.Name(), "-wal") && !strings.Contains(e.Name(), "-shm") {
			names = append(names, e.Name())
		}
	}
	if want := []string{"100%41.db", "a b.db", "run#1.db"}; strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("files %q, want exactly %q", names, want)
	}
}

// TestCorruptRow damages stored rows behind the driver's back: reading
// them fails with ErrCorrupt naming the thread, checkpoint and channel.
func TestCorruptRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "weft.db")
	// N = 2: the second append seals the tail into a chunk.
	d, err := sqlite.OpenOptions(ctx, path, sqlite.Options{SnapshotEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := checkpoint.New(d)
	long := `"` + strings.Repeat("a", 40) + `"`
	put := func(parent, id string, msgs int64, blobs ...checkpoint.Blob) {
		t.Helper()
		cp := &checkpoint.Checkpoint{V: 1, ID: id, Versions: map[string]int64{"msgs": msgs, "plan": 1}}
		if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: parent}, cp, checkpoint.Metadata{}, blobs); err != nil {
			t.Fatal(err)
		}
	}
	appendItem := func(v int64, item string) checkpoint.Blob {
		return checkpoint.Blob{Channel: "msgs", Version: v, BaseVersion: v - 1, Appended: []json.RawMessage{json.RawMessage(item)}}
	}
	// Values longer than the inline limit, so they have rows of their own.
	put("", "c1", 1, checkpoint.Blob{Channel: "msgs", Version: 1, Value: json.RawMessage(`[` + long + `]`)},
		checkpoint.Blob{Channel: "plan", Version: 1, Value: json.RawMessage(`{"p":` + long + `}`)})
	put("c1", "c2", 2, appendItem(2, `"b"`)) // the tail's first slot
	put("c2", "c3", 3, appendItem(3, `"c"`)) // sealed into a chunk with b
	put("c3", "c4", 4, appendItem(4, `"d"`)) // a slot of the next tail
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		name, stmt, id, what string
	}{
		{"chunk damaged", `UPDATE weft_checkpoint_chunks SET sizes = X'ff'`, "c3", `channel "msgs"`},
		{"item size 2^63", `UPDATE weft_checkpoint_chunks SET sizes = X'80808080808080808001', items = X'2262'`, "c3", `channel "msgs"`},
		{"chunk items damaged", `UPDATE weft_checkpoint_chunks SET sizes = X'01', items = X'7b'`, "c3", `channel "msgs"`},
		{"tail slot damaged", `UPDATE weft_checkpoint_tails SET sizes = X'ff'`, "c4", `channel "msgs"`},
		{"tail items damaged", `UPDATE weft_checkpoint_tails SET sizes = X'01', items = X'7b'`, "c4", `channel "msgs"`},
		{"log base not an array", `UPDATE weft_checkpoint_blobs SET value = X'7b7d' WHERE channel = 'msgs' AND version = 1`, "c2", `channel "msgs"`},
		{"log missing", `UPDATE weft_checkpoint_logs SET log_id = 7`, "c2", `channel "msgs"`},
		{"value not JSON", `UPDATE weft_checkpoint_blobs SET value = X'7b7b' WHERE channel = 'plan'`, "c1", `channel "plan"`},
		{"unknown format", `UPDATE weft_checkpoint_blobs SET fmt = 9 WHERE channel = 'plan'`, "c1", `channel "plan"`},
		{"refs damaged", `UPDATE weft_checkpoints SET refs = X'7b2261223a5b315d7d' WHERE checkpoint_id = 'c2'`, "c2", `blob references`},
		{"body damaged", `UPDATE weft_checkpoints SET body = X'00' WHERE checkpoint_id = 'c2'`, "c2", `checkpoint body`},
	} {
		if _, err := db.Exec(c.stmt); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: c.id})
		if !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("%s: Get = %v; want ErrCorrupt", c.name, err)
		}
		for _, want := range []string{`thread "t"`, `checkpoint "` + c.id + `"`, c.what} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %s", c.name, err, want)
			}
		}
	}
}

// A database written by schema version 2 (merged chunks, log pointers in
// blob rows) is migrated in place and reads back exactly as before; its
// threads go on.
func TestUpgradeFromV2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "weft.db")
	d, err := sqlite.OpenOptions(ctx, path, sqlite.Options{SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sqlstoretest.FromV2(t, d, d.Store, func(ctx context.Context, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}, true)
}
