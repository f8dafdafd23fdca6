package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/internal/sqldb"
)

// The driver's checkpointer copies the log into the database and makes it
// start over, so a file written far past walRestartFrames pages keeps a
// log of about that length: without it (the pool's connections never
// checkpoint on their own), the log would hold every page ever written.
func TestWALStartsOverUnderSteadyWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 100 MiB")
	}
	d := openScratch(t)
	ctx := context.Background()
	if _, err := d.db.Exec(`CREATE TABLE big (k INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	// Each write replaces a 64 KiB row: 16 or more pages appended to the
	// log. 6 × walRestartFrames pages in all, from 4 writers at once.
	blob := []byte(strings.Repeat("x", 64<<10))
	const writers = 4
	perWriter := 6 * walRestartFrames / 16 / writers
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				err := d.WriteTx(ctx, func(tx Tx) error {
					_, err := tx.Exec(context.Background(), `INSERT OR REPLACE INTO big (k, v) VALUES (?, ?)`, w*perWriter+i%8, blob)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	info, err := os.Stat(d.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The log file keeps the largest size the log ever had.
	written := int64(6 * walRestartFrames * 4096)
	if info.Size() >= written*2/3 {
		t.Fatalf("the log file grew to %d bytes for about %d written: it never started over", info.Size(), written)
	}
}

// Close gives the writers' connection back before closing the pool, so
// that SQLite, closing its last connection, copies the log into the
// database and removes it; a connection kept would keep the log.
func TestCloseRemovesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	d := openScratchFile(t, path)
	for i := range 10 {
		if err := d.WriteTx(context.Background(), func(tx Tx) error {
			_, err := tx.Exec(context.Background(), `INSERT INTO scratch (v) VALUES (?)`, strconv.Itoa(i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no log while open: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the log is still there after Close: %v", err)
	}
	d2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	var n int
	if err := d2.db.QueryRow(`SELECT count(*) FROM scratch`).Scan(&n); err != nil || n != 10 {
		t.Fatalf("after reopening: %d rows (%v), want 10", n, err)
	}
}

// A writer whose connection was lost (closed under it) gets a new one.
func TestWriterConnectionReplaced(t *testing.T) {
	d := openScratch(t)
	write := func(v string) error { return writeScratch(d, v) }
	if err := write("a"); err != nil {
		t.Fatal(err)
	}
	d.w.wlock <- struct{}{}
	d.w.wconn.Close()
	<-d.w.wlock
	if err := write("b"); err != nil {
		t.Fatalf("after the writers' connection was closed: %v", err)
	}
	if got := scratchRows(t, d); strings.Join(got, ",") != "a,b" {
		t.Fatalf("rows %v, want a,b", got)
	}
}

// Closing twice is harmless, as closing a *sql.DB twice is.
func TestCloseTwice(t *testing.T) {
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// Writes made on the pool that DB returns rather than through WriteTx (the
// long-term store's, which weft serve keeps in the same file: store/sqlite
// over Driver.DB) keep the log bounded too: the pool's connections
// checkpoint after their commits as SQLite's connections do, since no
// commit of theirs tells the driver's checkpointer.
func TestWALBoundedUnderPoolWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 32 MiB")
	}
	d := openScratch(t)
	if _, err := d.DB().Exec(`CREATE TABLE big (k INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	// Each write replaces a 64 KiB row: 16 or more pages appended to the
	// log; 2 × walRestartFrames pages in all.
	blob := []byte(strings.Repeat("x", 64<<10))
	for i := range 2 * walRestartFrames / 16 {
		if _, err := d.DB().Exec(`INSERT OR REPLACE INTO big (k, v) VALUES (?, ?)`, i%8, blob); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(d.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if written := int64(2 * walRestartFrames * 4096); info.Size() >= written/2 {
		t.Fatalf("the log file grew to %d bytes for about %d written through the pool: it never started over", info.Size(), written)
	}
	// The writers' own connection still leaves the log to the
	// checkpointer.
	if err := d.WriteTx(context.Background(), func(tx Tx) error {
		var pages int
		if _, err := sqldb.QueryRow(context.Background(), tx, `PRAGMA wal_autocheckpoint`, nil, &pages); err != nil {
			return err
		}
		if pages != 0 {
			t.Errorf("the writers' connection checkpoints every %d pages, want never (0)", pages)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A write that takes its turn while Close runs, after Close gave the
// writers' connection back and before it closed the pool, fails, as a
// write after Close does: it must not take a connection of its own,
// which Close would never give back (the log would stay, and every later
// write would go on committing on it after Close).
func TestWriteWhileClosing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	d := openScratchFile(t, path)
	write := func(v string) error {
		return d.WriteTx(context.Background(), func(tx Tx) error {
			_, err := tx.Exec(context.Background(), `INSERT INTO scratch (v) VALUES (?)`, v)
			return err
		})
	}
	if err := write("a"); err != nil {
		t.Fatal(err)
	}
	// Close, with a write between its two steps.
	if err := d.w.close(); err != nil {
		t.Fatal(err)
	}
	werr := write("b")
	if err := d.db.Close(); err != nil {
		t.Fatal(err)
	}
	if werr == nil {
		t.Error("a write made while the driver closed succeeded")
	}
	if err := write("c"); err == nil {
		t.Error("a write made after Close succeeded")
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the log is still there after Close: %v", err)
	}
}

// After a failed COMMIT the writers' connection is closed, not given back
// to the pool where its open transaction would fail whoever took it next,
// and the next write takes another.
func TestDroppedWriterConnectionIsClosed(t *testing.T) {
	d := openScratch(t)
	write := func(v string) error { return writeScratch(d, v) }
	if err := write("a"); err != nil {
		t.Fatal(err)
	}
	open := d.db.Stats().OpenConnections
	d.w.wlock <- struct{}{}
	old := d.w.wconn
	d.w.dropWriterConn()
	<-d.w.wlock
	if got := d.db.Stats().OpenConnections; got != open-1 {
		t.Fatalf("open connections %d after dropping the writers' one, want %d: it went back to the pool", got, open-1)
	}
	if err := write("b"); err != nil {
		t.Fatalf("a write after the drop: %v", err)
	}
	if d.w.wconn == nil || d.w.wconn == old {
		t.Fatal("the next write did not take a new connection")
	}
	if got := scratchRows(t, d); strings.Join(got, ",") != "a,b" {
		t.Fatalf("rows %v, want a,b", got)
	}
}

// writeScratch adds a row to openScratch's table through WriteTx.
func writeScratch(d *Driver, v string) error {
	return d.WriteTx(context.Background(), func(tx Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO scratch (v) VALUES (?)`, v)
		return err
	})
}

// A COMMIT that fails drops the writers' connection, its statements with
// it, and the writer is told; nothing it wrote is kept, and the next
// write takes another connection. (SQLite refuses to commit while a
// writing statement is unfinished: here an INSERT … RETURNING whose rows
// the writer left open.)
func TestFailedCommitDropsTheWritersConnection(t *testing.T) {
	d := openScratch(t)
	if err := writeScratch(d, "a"); err != nil {
		t.Fatal(err)
	}
	old := d.w.wconn
	err := d.WriteTx(context.Background(), func(tx Tx) error {
		rows, err := tx.Query(context.Background(), `INSERT INTO scratch (v) VALUES ('x'), ('y') RETURNING v`)
		if err != nil {
			return err
		}
		if !rows.Next() {
			return rows.Err()
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "statements in progress") {
		t.Fatalf("the write with a statement unfinished: %v, want COMMIT's failure", err)
	}
	if d.w.wconn != nil {
		t.Fatal("the writers' connection was kept after its COMMIT failed")
	}
	if err := writeScratch(d, "b"); err != nil {
		t.Fatalf("a write after the failed COMMIT: %v", err)
	}
	if d.w.wconn == nil || d.w.wconn == old {
		t.Fatal("the next write did not take a new connection")
	}
	if got := scratchRows(t, d); strings.Join(got, ",") != "a,b" {
		t.Fatalf("rows %v, want a,b", got)
	}
}
