package sqlite

import (
	"context"
	"database/sql"
)

// DB returns the database the driver keeps its checkpoints in, for other
// weft stores that keep their tables in the same file (the server's
// threads and runs, the long-term store). Write through WriteTx.
func (d *Driver) DB() *sql.DB { return d.db }

// WriteTx runs fn in a write transaction queued behind the driver's own
// writers: tables that share the file then take turns with checkpoint
// writes in this process, instead of waiting in SQLite's busy handler,
// which sleeps. fn's error rolls the transaction back.
func (d *Driver) WriteTx(ctx context.Context, fn func(*sql.Tx) error) error {
	select {
	case d.w.wlock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.w.wlock }()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
