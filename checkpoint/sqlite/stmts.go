package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the statements run most, prepared once per connection:
// SQLite spends more time compiling a short statement than running it,
// and every checkpoint write runs several (statement compiling was a
// fifth of a busy server's CPU). Statements beyond the cache's size (those
// built for one call, listing keys) run unprepared.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxStmts bounds the statements kept.
const maxStmts = 256

// get returns query prepared, or nil to run it unprepared.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st
	}
	if len(c.m) >= maxStmts {
		return nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		// Run unprepared, and let that report the error.
		return nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st
}

// cachedTx runs a transaction's statements through the cache; it is the
// sqldb.ExecQuerier the store's transactions use. With ctx set, statements
// run under it instead of the one they are given (a group's writers).
type cachedTx struct {
	tx  *sql.Tx
	s   *sqlDB
	ctx context.Context
}

func (t cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if t.ctx != nil {
		ctx = t.ctx
	}
	if st := t.s.stmts.get(ctx, t.s.db, query); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if t.ctx != nil {
		ctx = t.ctx
	}
	if st := t.s.stmts.get(ctx, t.s.db, query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

// PrepareContext returns the cached statement bound to the transaction:
// closing it leaves the cached one prepared.
func (t cachedTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if t.ctx != nil {
		ctx = t.ctx
	}
	if st := t.s.stmts.get(ctx, t.s.db, query); st != nil {
		return t.tx.StmtContext(ctx, st), nil
	}
	return t.tx.PrepareContext(ctx, query)
}
