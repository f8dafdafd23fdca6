package sqlite

import (
	"context"
	"database/sql"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/internal/sqldb"
)

// DB returns the database the driver keeps its checkpoints in, for other
// weft stores that keep their tables in the same file (the server's
// threads and runs, the long-term store). Write through WriteTx.
func (d *Driver) DB() *sql.DB { return d.db }

// Tx runs the statements of a WriteTx writer: Exec and Query, with
// SQLite's ?N placeholders, each prepared once on the writers'
// connection. Statements run under the transaction's context, not the
// one they name: a transaction shared by several writers must not end
// because one writer's context did.
type Tx = sqldb.Tx

// WriteTx runs fn in a write transaction queued behind the driver's own
// writers: tables that share the file then take turns with checkpoint
// writes in this process, instead of waiting in SQLite's busy handler,
// which sleeps, and may commit with them. fn's error rolls back what it
// did. fn runs in a savepoint when it shares the transaction: it must not
// commit or roll back itself (nor run BEGIN, COMMIT or ROLLBACK), and may
// use savepoints of other names.
func (d *Driver) WriteTx(ctx context.Context, fn func(Tx) error) error {
	return d.w.submit(&writeReq{ctx: ctx, shared: true, fn: func(tx sqlstore.Tx) error { return fn(tx) }})
}
