// Package sqldb holds what weft's SQL cores (checkpoint/internal/sqlstore
// and store/internal/sqlstore) share: the small interfaces they run
// statements through, the one-row query they both make, and two adapters
// of SQLite to those interfaces: Std over database/sql, and Conn on a
// driver connection directly, below database/sql's per-statement work
// (checkpoint/sqlite's single writer).
package sqldb

import (
	"context"
	"database/sql"
)

// Rows is the result of a query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Stmt is a statement with its arguments.
type Stmt struct {
	Query string
	Args  []any
}

// Querier runs queries.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// QueryRow runs a query expected to return at most one row and scans it
// into dest. It reports whether there was a row.
func QueryRow(ctx context.Context, q Querier, query string, args []any, dest ...any) (bool, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	return true, rows.Err()
}

// ExecQuerier is what *sql.DB, *sql.Tx and *sql.Conn share.
type ExecQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// Std runs statements through database/sql: on a pool, a transaction or
// a connection.
type Std struct{ Q ExecQuerier }

// Exec runs a statement and returns the number of rows it changed.
func (s Std) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.Q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query runs a query.
func (s Std) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rs, err := s.Q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return stdRows{rs}, nil
}

// ExecBatch runs statements in order, preparing each distinct statement
// once: a write repeats the same few statements for every item.
func (s Std) ExecBatch(ctx context.Context, stmts []Stmt) error {
	if len(stmts) == 1 {
		_, err := s.Q.ExecContext(ctx, stmts[0].Query, stmts[0].Args...)
		return err
	}
	prepared := map[string]*sql.Stmt{}
	defer func() {
		for _, p := range prepared {
			p.Close()
		}
	}()
	for _, st := range stmts {
		p := prepared[st.Query]
		if p == nil {
			var err error
			if p, err = s.Q.PrepareContext(ctx, st.Query); err != nil {
				return err
			}
			prepared[st.Query] = p
		}
		if _, err := p.ExecContext(ctx, st.Args...); err != nil {
			return err
		}
	}
	return nil
}

type stdRows struct{ *sql.Rows }

func (r stdRows) Close() { r.Rows.Close() }
