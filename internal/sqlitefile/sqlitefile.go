// Package sqlitefile prepares SQLite files for weft's packages that open
// them (checkpoint/sqlite, store/sqlite and the example services).
package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ServiceDSN is the data source name an example service opens path with
// (":memory:" for a private in-memory database): a busy timeout, so
// concurrent writers wait instead of failing; foreign keys; BEGIN
// IMMEDIATE transactions, so a transaction takes the write lock before it
// reads; and WAL for a file, so readers do not block the writer. A path
// that already holds parameters keeps them.
func ServiceDSN(path string) string {
	params := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate"
	if path != ":memory:" {
		params += "&_pragma=journal_mode(WAL)"
	}
	if !strings.HasPrefix(path, "file:") {
		path = "file:" + path
	}
	if strings.Contains(path, "?") {
		return path + "&" + params
	}
	return path + "?" + params
}

// EnsureWAL switches the database that dsn names to WAL journaling, which
// SQLite records in the file, so that the connections a pool opens on it
// afterwards find nothing to change. dsn is exactly what the caller gives
// sql.Open for its pool (a plain path, or a "file:" URI, with its
// parameters), so both name the same file however its path reads.
//
// Switching a file's journal mode takes an exclusive lock, and SQLite
// answers SQLITE_BUSY at once, without waiting in its busy handler, when
// another connection is switching the same new file at that moment: several
// processes (or pools) opening one new file together would otherwise fail
// at random, whether the switch is asked for by a journal_mode pragma in
// dsn or here. EnsureWAL retries opening and switching with a short backoff
// for up to wait, or until ctx ends. A database without a file (in memory,
// or temporary) keeps its own journal mode and is no error.
func EnsureWAL(ctx context.Context, dsn string, wait time.Duration) error {
	_, err := ensureWAL(ctx, dsn, wait)
	return err
}

// Open opens a connection pool on dsn for the caller, after EnsureWAL. A
// database without a file is one database per connection, so its pool is
// kept to one connection: the caller's writes and reads see one database.
func Open(ctx context.Context, dsn string, wait time.Duration) (*sql.DB, error) {
	fileless, err := ensureWAL(ctx, dsn, wait)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if fileless {
		db.SetMaxOpenConns(1)
	}
	return db, nil
}

// ensureWAL is EnsureWAL, also reporting whether the database has no file.
func ensureWAL(ctx context.Context, dsn string, wait time.Duration) (fileless bool, err error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	err = RetryBusy(ctx, wait, func() error {
		var mode string
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
			return err
		}
		if strings.EqualFold(mode, "wal") {
			return nil
		}
		var seq int
		var name, file string
		if err := db.QueryRowContext(ctx, "PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
			return err
		}
		if file == "" {
			fileless = true // in memory or temporary: nothing to share
			return nil
		}
		return fmt.Errorf("SQLite kept journal mode %q instead of WAL for %s", mode, file)
	})
	return fileless, err
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

// ExplainUnwritable adds to err, when it is SQLite's "read-only", "cannot
// open" or "disk full" error, what made the database at path unwritable:
// the file itself, or its directory, where SQLite must create the -wal and
// -shm files beside it. Any other error is returned as it is. It probes the
// file system only on that failure path.
func ExplainUnwritable(path string, err error) error {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return err
	}
	dir := filepath.Dir(path)
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w (the disk holding %s is full)", err, dir)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
	default:
		return err
	}
	if f, ferr := os.OpenFile(path, os.O_WRONLY, 0); ferr != nil {
		if errors.Is(ferr, fs.ErrPermission) {
			return fmt.Errorf("%w (the file %s is read-only)", err, path)
		}
	} else {
		f.Close()
	}
	probe, perr := os.CreateTemp(dir, ".weft-write-probe-*")
	if perr != nil {
		return fmt.Errorf("%w (the directory %s is not writable: SQLite creates %s-wal and %s-shm there)", err, dir, filepath.Base(path), filepath.Base(path))
	}
	probe.Close()
	os.Remove(probe.Name())
	return err
}
