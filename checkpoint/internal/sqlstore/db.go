// Package sqlstore is the storage format shared by the SQL checkpoint
// drivers (checkpoint/sqlite and checkpoint/postgres): the schema, its
// migrations, and every query, written once over a small database interface
// that each driver implements for its client library.
//
// The layout is described in docs/persistence.md. In short:
//
//   - weft_checkpoints holds one row per checkpoint: its parent, time,
//     metadata, the channel versions as a small JSON body without values,
//     and (refs) the values small enough to keep in the row: empty
//     channels, values of a few bytes, and pointers into message logs.
//   - weft_checkpoint_blobs holds one row per larger channel value.
//   - weft_checkpoint_logs, weft_checkpoint_chunks and weft_checkpoint_tails
//     hold append-only channels (messages): a log is an optional base
//     value plus items appended to it. An append goes to the log's open
//     tail, one slot row each, and every N appends the tail is sealed into
//     one chunk, which is never rewritten; the slots are then reused. Each
//     item is kept once, and a read of a log's first n items reads about
//     n/N chunks and at most N-1 slots.
//   - weft_checkpoint_writes holds pending writes.
//   - weft_schema_migrations records applied schema versions.
package sqlstore

import (
	"context"

	"github.com/weftlabs/weft/internal/sqldb"
)

// DB is what a driver provides: transactions over its client library.
type DB interface {
	// Write runs fn in a transaction that holds a write lock for each of
	// keys (thread ids, or a fixed name for migrations), so that writers of
	// the same key, in this process or another, run one at a time. fn's
	// error rolls the transaction back.
	Write(ctx context.Context, keys []string, fn func(Tx) error) error
	// Read runs fn in a transaction that sees one consistent snapshot.
	Read(ctx context.Context, fn func(Tx) error) error
	// WriteOne runs one writing statement, atomic by itself, in one round
	// trip where the database allows (thread leases use it). With dest it
	// scans the statement's first returned row into dest; it returns the
	// rows changed, or returned (0 or 1) with dest. Unlike Write it takes
	// no key lock.
	WriteOne(ctx context.Context, query string, args []any, dest ...any) (int64, error)
}

// ExecOne runs a statement inside tx as DB.WriteOne describes, for
// drivers whose WriteOne is a transaction of one statement.
func ExecOne(ctx context.Context, tx Tx, query string, args []any, dest ...any) (int64, error) {
	if len(dest) == 0 {
		return tx.Exec(ctx, query, args...)
	}
	found, err := queryRow(ctx, tx, query, args, dest...)
	if err != nil || !found {
		return 0, err
	}
	return 1, nil
}

// Tx runs statements inside a transaction. Queries use $1, $2... for
// arguments; the Dialect rewrites them where the database wants another
// form.
type Tx interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// ExecBatch runs statements in order, sending them together where the
	// database allows (one round trip in PostgreSQL).
	ExecBatch(ctx context.Context, stmts []Stmt) error
}

// execAller is a Tx that runs several statements in one round trip and
// returns the rows each changed (PostgreSQL's pipeline).
type execAller interface {
	ExecAll(ctx context.Context, stmts []Stmt) ([]int64, error)
}

// execAll runs statements in order and returns the rows each changed: in
// one round trip where tx can, else one after the other.
func execAll(ctx context.Context, tx Tx, stmts []Stmt) ([]int64, error) {
	if m, ok := tx.(execAller); ok {
		return m.ExecAll(ctx, stmts)
	}
	ns := make([]int64, len(stmts))
	for i, st := range stmts {
		n, err := tx.Exec(ctx, st.Query, st.Args...)
		if err != nil {
			return nil, err
		}
		ns[i] = n
	}
	return ns, nil
}

// Stmt is a statement with its arguments.
type Stmt = sqldb.Stmt

// Rows is the result of a query.
type Rows = sqldb.Rows

// queryRow runs a query expected to return at most one row; see
// sqldb.QueryRow.
var queryRow = sqldb.QueryRow
