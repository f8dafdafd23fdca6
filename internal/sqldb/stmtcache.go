package sqldb

import (
	"context"
	"database/sql"
	"sync"
)

// StmtCache keeps the statements run most on a database, prepared once per
// connection: SQLite spends more time compiling a short statement than
// running it, and a store runs the same few again and again. Statements
// beyond the cache's size (those built for one call, listing keys) run
// unprepared. The zero value is ready to use.
type StmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxCachedStmts bounds the statements a StmtCache keeps.
const maxCachedStmts = 256

// get returns query prepared on db, or nil to run it unprepared.
func (c *StmtCache) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st
	}
	if len(c.m) >= maxCachedStmts {
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

// Cached runs a transaction's statements through a StmtCache: it is an
// ExecQuerier for Std. With Ctx set, statements run under it instead of
// the context they are given (a transaction shared by several callers,
// which one caller's cancelling must not interrupt). With Bound set,
// each statement first checks that Bound has not ended, and fails with
// its error if it has: a Ctx that cannot be cancelled
// (context.WithoutCancel) and a Bound then bound the transaction between
// statements, without the driver's watching each statement (the SQLite
// driver starts a goroutine per statement run under a context that can
// be cancelled, to interrupt it).
type Cached struct {
	Tx    *sql.Tx
	DB    *sql.DB
	Cache *StmtCache
	Ctx   context.Context
	Bound context.Context
}

func (c Cached) ctx(ctx context.Context) (context.Context, error) {
	if c.Bound != nil {
		if err := c.Bound.Err(); err != nil {
			return nil, err
		}
	}
	if c.Ctx != nil {
		return c.Ctx, nil
	}
	return ctx, nil
}

// ExecContext runs a statement.
func (c Cached) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	if st := c.Cache.get(ctx, c.DB, query); st != nil {
		return c.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return c.Tx.ExecContext(ctx, query, args...)
}

// QueryContext runs a query.
func (c Cached) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	if st := c.Cache.get(ctx, c.DB, query); st != nil {
		return c.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return c.Tx.QueryContext(ctx, query, args...)
}

// PrepareContext returns the cached statement bound to the transaction:
// closing it leaves the cached one prepared.
func (c Cached) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	if st := c.Cache.get(ctx, c.DB, query); st != nil {
		return c.Tx.StmtContext(ctx, st), nil
	}
	return c.Tx.PrepareContext(ctx, query)
}
