package sqlitefile_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/weftlabs/weft/internal/sqlitefile"
)

// Many pools opening one new file at once all find it in WAL mode; none
// sees SQLITE_BUSY.
func TestEnsureWALConcurrently(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		path := filepath.Join(t.TempDir(), "f.db")
		errs := make(chan error, 6)
		for range 6 {
			go func() { errs <- sqlitefile.EnsureWAL(ctx, path, 10*time.Second) }()
		}
		for range 6 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		err = db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		db.Close()
		if err != nil || mode != "wal" {
			t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
		}
	}
}

// RetryBusy returns other errors at once and gives up on SQLITE_BUSY
// after its wait.
func TestRetryBusy(t *testing.T) {
	ctx := context.Background()
	other := errors.New("not busy")
	calls := 0
	if err := sqlitefile.RetryBusy(ctx, time.Second, func() error { calls++; return other }); err != other || calls != 1 {
		t.Errorf("RetryBusy(other) = %v after %d calls; want the error after 1", err, calls)
	}
	// A real SQLITE_BUSY: a second connection asks for the write lock
	// another holds, with no busy timeout of its own.
	path := filepath.Join(t.TempDir(), "busy.db")
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	other2, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other2.Close()
	calls = 0
	err = sqlitefile.RetryBusy(ctx, 30*time.Millisecond, func() error {
		calls++
		_, err := other2.ExecContext(ctx, "CREATE TABLE t (a)")
		return err
	})
	if !sqlitefile.IsBusy(err) || calls < 2 {
		t.Errorf("RetryBusy on a held lock = %v after %d calls; want SQLITE_BUSY after several tries", err, calls)
	}
	conn.ExecContext(ctx, "ROLLBACK")
}

// A database without a file keeps its own journal mode; that is no error.
func TestEnsureWALInMemory(t *testing.T) {
	for _, dsn := range []string{":memory:", "file::memory:", "file:mem1?mode=memory&cache=shared", ""} {
		if err := sqlitefile.EnsureWAL(context.Background(), dsn, time.Second); err != nil {
			t.Errorf("EnsureWAL(%q) = %v, want nil", dsn, err)
		}
	}
}
