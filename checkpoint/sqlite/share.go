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
// which sleeps, and may commit with them. fn's error rolls back what it
// did. fn runs in a savepoint when it shares the transaction: it must not
// commit or roll back itself, and may use savepoints of other names.
func (d *Driver) WriteTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.w.submit(&writeReq{ctx: ctx, raw: fn})
}
