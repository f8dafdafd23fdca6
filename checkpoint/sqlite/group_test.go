package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
)

// queued starts writers while the write lock is held, so that they all
// wait, and returns once they all queued; the caller then releases the
// lock and the next writer to take it commits them as one group.
func queued(t *testing.T, d *Driver, writers []func() error) []chan error {
	t.Helper()
	d.w.wlock <- struct{}{}
	outs := make([]chan error, len(writers))
	for i, w := range writers {
		outs[i] = make(chan error, 1)
		go func() { outs[i] <- w() }()
	}
	for {
		d.w.q.mu.Lock()
		n := len(d.w.q.waiting)
		d.w.q.mu.Unlock()
		if n == len(writers) {
			break
		}
		runtime.Gosched()
	}
	<-d.w.wlock
	return outs
}

func openScratch(t *testing.T) *Driver {
	t.Helper()
	d := openScratchFile(t, filepath.Join(t.TempDir(), "weft.db"))
	t.Cleanup(func() { d.Close() })
	return d
}

// openScratchFile opens path with a scratch table of strings; the caller
// closes it.
func openScratchFile(t *testing.T, path string) *Driver {
	t.Helper()
	d, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.Exec(`CREATE TABLE scratch (v TEXT PRIMARY KEY)`); err != nil {
		d.Close()
		t.Fatal(err)
	}
	return d
}

func scratchRows(t *testing.T, d *Driver) []string {
	t.Helper()
	rows, err := d.db.Query(`SELECT v FROM scratch`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

var errWriter = errors.New("this writer fails")

// Writers committed together keep their own outcomes: one's error rolls
// back its statements only, a writer cancelled before its turn writes
// nothing, WriteTx's writers share the group.
func TestGroupCommitKeepsEachWritersOutcome(t *testing.T) {
	d := openScratch(t)
	if _, err := d.db.Exec(`INSERT INTO scratch (v) VALUES ('z')`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	insert := func(ctx context.Context, v string, fail bool) func() error {
		return func() error {
			return d.w.Write(ctx, nil, func(tx sqlstore.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO scratch (v) VALUES ($1)`, v); err != nil {
					return err
				}
				if fail {
					return errWriter
				}
				return nil
			})
		}
	}
	writers := []func() error{
		insert(ctx, "a", false),
		insert(ctx, "b", true),
		insert(cancelled, "c", false),
		func() error {
			return d.WriteTx(ctx, func(tx Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO scratch (v) VALUES ('d')`)
				return err
			})
		},
		// A duplicate key fails at its statement; the rest go on.
		insert(ctx, "z", false),
	}
	for i := range 10 {
		writers = append(writers, insert(ctx, "n"+strconv.Itoa(i), false))
	}
	outs := queued(t, d, writers)
	// Cancelled while queued: it may leave the queue at once, or be in
	// the group already, which then skips it; either way it writes nothing.
	cancel()
	for i, out := range outs {
		err := <-out
		switch i {
		case 1:
			if !errors.Is(err, errWriter) {
				t.Errorf("the failing writer: %v", err)
			}
		case 2:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the cancelled writer: %v", err)
			}
		case 4:
			if err == nil {
				t.Error("the duplicate insert succeeded")
			}
		default:
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
	}
	want := []string{"a", "d", "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "z"}
	if diff := cmp.Diff(want, scratchRows(t, d)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// When the group's transaction itself fails, no writer of the group keeps
// anything, and every one of them is told.
func TestGroupCommitFailureFailsEveryWriter(t *testing.T) {
	d := openScratch(t)
	ctx := context.Background()
	insert := func(v string) func() error {
		return func() error {
			return d.w.Write(ctx, nil, func(tx sqlstore.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO scratch (v) VALUES ($1)`, v)
				return err
			})
		}
	}
	writers := []func() error{
		insert("a"),
		// Ends the transaction under the group's feet, as SQLite does
		// itself after some errors (a full disk).
		func() error {
			return d.WriteTx(ctx, func(tx Tx) error {
				_, err := tx.Exec(ctx, `ROLLBACK`)
				return err
			})
		},
		insert("b"),
	}
	outs := queued(t, d, writers)
	for i, out := range outs {
		if err := <-out; err == nil {
			t.Errorf("writer %d succeeded in a failed group", i)
		}
	}
	if rows := scratchRows(t, d); len(rows) != 0 {
		t.Errorf("a failed group kept %v", rows)
	}
	// The driver goes on writing.
	if err := insert("c")(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c"}, scratchRows(t, d)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
