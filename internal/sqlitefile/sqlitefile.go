// Package sqlitefile prepares SQLite files for weft's packages that open
// them (checkpoint/sqlite, store/sqlite and the example services).
package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// EnsureWAL switches the file at path to WAL journaling, which SQLite
// records in the file, so that connections opened on it afterwards with
// journal_mode(WAL) find nothing to change.
//
// Switching a file's journal mode takes an exclusive lock, and SQLite
// answers SQLITE_BUSY at once, without waiting in its busy handler, when
// another connection is switching the same new file at that moment: several
// processes (or pools) opening one new file together would otherwise fail
// at random. EnsureWAL retries the switch with a short backoff for up to
// wait, or until ctx ends. path is a plain file path or a "file:" URI.
func EnsureWAL(ctx context.Context, path string, wait time.Duration) error {
	if !strings.HasPrefix(path, "file:") {
		path = "file:" + path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", path+sep+"_pragma=busy_timeout("+strconv.FormatInt(wait.Milliseconds(), 10)+")")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return RetryBusy(ctx, wait, func() error {
		var mode string
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("SQLite kept journal mode %q instead of WAL", mode)
		}
		return nil
	})
}

// RetryBusy calls fn until it returns something other than SQLITE_BUSY,
// with a backoff from 1 ms to 50 ms, for up to wait or until ctx ends; it
// returns fn's last error. It is for the steps SQLite fails with
// SQLITE_BUSY without consulting its busy timeout, such as opening a
// connection whose journal_mode pragma races another connection's.
func RetryBusy(ctx context.Context, wait time.Duration, fn func() error) error {
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		err := fn()
		if err == nil || !IsBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// IsBusy reports whether err is SQLite's SQLITE_BUSY, in any of its
// extended forms.
func IsBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}
