// Package sqlstore is the SQL core of the store backends (store/sqlite and
// store/postgres): every query and every decoding of a stored row, written
// once over a small database interface that each backend implements for its
// client library, with a Dialect for what differs between the databases
// (placeholders, column types, JSON filters, TTL arithmetic, row locking).
//
// Items live in store_items, vectors in store_vectors (little-endian
// float32 bytes), and store_generations counts writes per namespace prefix
// so every process knows when its cached vectors are stale.
package sqlstore

import (
	"context"

	"github.com/weftlabs/weft/internal/sqldb"
)

// Mode is the kind of transaction DB.Begin opens.
type Mode int

// Transaction modes.
const (
	// ReadWrite is a transaction that writes.
	ReadWrite Mode = iota
	// ReadOnly sees one consistent view and writes nothing.
	ReadOnly
	// Migration holds the backend's migration lock, so processes migrating
	// the same database at once run one after another.
	Migration
)

// Querier runs statements, in a transaction or on their own.
type Querier interface {
	// Exec runs a statement and returns the number of rows it changed. A
	// statement without arguments may hold several statements.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Tx is a transaction.
type Tx interface {
	Querier
	// ExecBatch runs statements in order, sending them together where the
	// database allows (one round trip in PostgreSQL).
	ExecBatch(ctx context.Context, stmts []Stmt) error
}

// DB is what a backend provides over its client library. Its Querier
// methods run each statement on its own.
type DB interface {
	Querier
	// Begin runs fn in a transaction of the given mode, committing when fn
	// returns nil and rolling back otherwise.
	Begin(ctx context.Context, mode Mode, fn func(Tx) error) error
}

// Stmt is a statement with its arguments.
type Stmt = sqldb.Stmt

// Rows is the result of a query.
type Rows = sqldb.Rows
