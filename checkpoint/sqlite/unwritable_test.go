package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/graph"
)

// lockDir makes dir unwritable for this process: by its mode for an
// ordinary user, by the immutable attribute for root (whom modes do not
// stop). It undoes that when the test ends.
func lockDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Fatalf("running as root, the test makes %s immutable with chattr +i, which failed: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
}

// A database that cannot be written is refused when it is opened, before
// any run could act, and the error says whether the file or its directory
// is the cause.
func TestOpenNamesWhatIsUnwritable(t *testing.T) {
	ctx := context.Background()

	t.Run("directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "weft.db")
		lockDir(t, dir)
		_, err := sqlite.Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded in a directory that cannot be written")
		}
		if !strings.Contains(err.Error(), "the directory "+dir+" is not writable") {
			t.Errorf("error does not name the directory %s as the cause: %v", dir, err)
		}
	})

	t.Run("directory of an existing file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "weft.db")
		d, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		// A clean close removes -wal and -shm; SQLite must create them again.
		for _, f := range []string{path + "-wal", path + "-shm"} {
			os.Remove(f)
		}
		lockDir(t, dir)
		_, err = sqlite.Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded although SQLite cannot create its -wal and -shm files")
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is not writable") {
			t.Errorf("error does not name the file and the unwritable directory: %v", err)
		}
	})
}

// A full disk (here: SQLite's page limit, max_page_count, which fails
// writes with the same SQLITE_FULL) fails a run before its first node:
// its input checkpoint cannot be written. The error names the file and
// says that the disk holding it is full. (Durability "exit" writes no
// input checkpoint; on a full disk its run fails on the lease it takes
// first, since every commit must grow the WAL file, which max_page_count
// does not limit.)
func TestFullDiskFailsTheRunBeforeItsFirstNode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "weft.db")
	d, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	err = db.QueryRow("PRAGMA page_count").Scan(&pages)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The file may not grow by a page.
	d, err = sqlite.OpenWithPragmas(ctx, path, sqlite.Options{}, []string{fmt.Sprintf("max_page_count(%d)", pages)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	Text := graph.Value[string]("text")
	var ran atomic.Bool
	g, err := graph.New(Text).
		AddNode("book", func(ctx context.Context, s graph.State) (graph.Update, error) {
			ran.Store(true)
			return Text.Write("booked"), nil
		}, nil).
		AddEdge(graph.START, "book").
		Compile(&graph.CompileOptions{Checkpointer: checkpoint.New(d)})
	if err != nil {
		t.Fatal(err)
	}
	// An input too large for the pages the file has, even compressed.
	rnd := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 300_000)
	for i := range b {
		b[i] = 'a' + byte(rnd.IntN(26))
	}
	in := Text.Write(string(b))
	dir, _ := filepath.Abs(filepath.Dir(path))
	for _, dur := range []graph.Durability{graph.DurabilityAsync, graph.DurabilitySync} {
		_, err := g.Invoke(ctx, in, &graph.RunOptions{ThreadID: "t-" + string(dur), Durability: dur})
		var se *sqlite3.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3lib.SQLITE_FULL {
			t.Fatalf("durability %s: Invoke = %v; want SQLite's SQLITE_FULL", dur, err)
		}
		for _, want := range []string{path, "the disk holding " + dir + " is full"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("durability %s: %q does not say %q", dur, err, want)
			}
		}
		if ran.Load() {
			t.Fatalf("durability %s: the node ran although its input checkpoint could not be written", dur)
		}
	}
}
