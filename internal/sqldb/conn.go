package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Tx runs statements in a transaction: what a store that shares a
// writer's transaction needs (checkpoint/sqlite's WriteTx).
type Tx interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Conn runs statements directly on one driver connection, below
// database/sql: each statement is prepared once on the connection and
// then executed through the driver's StmtExecContext and
// StmtQueryContext, with its arguments converted into a reused slice.
// database/sql's per-statement work (a *sql.Stmt bound to the
// transaction for each statement, taking and releasing the connection,
// the conversion of the arguments into a new slice, the Result and Rows
// wrappers and their context watching) is left out, which matters where
// one connection runs every write of a process one after the other
// (checkpoint/sqlite's writers' connection).
//
// A Conn is not safe for concurrent use: its owner runs it under a lock,
// inside (*sql.Conn).Raw, which lends it the driver connection (Use).
type Conn struct {
	dc    driver.Conn
	stmts map[string]*connStmt
	args  []driver.NamedValue
}

// connStmt is a statement prepared on a Conn.
type connStmt struct {
	st    driver.Stmt
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
	// busy is set while Rows of the statement are open: running the same
	// query again meanwhile (a query nested in its own loop) takes a
	// statement of its own.
	busy bool
}

// maxConnStmts bounds the statements a Conn keeps prepared; beyond it
// (statements built for one call, listing keys) each is prepared for
// its call and closed after it.
const maxConnStmts = 256

// errNotSupported is the error for a driver connection that cannot run
// prepared statements with a context.
var errNotSupported = errors.New("sqldb: the driver connection does not implement ConnPrepareContext, StmtExecContext and StmtQueryContext")

// Use binds c to dc, the driver connection (*sql.Conn).Raw lends, for the
// length of the Raw call. The statements c keeps belong to dc: when dc is
// another connection than last time (the last was lost), they are
// dropped (that connection closed them with itself).
func (c *Conn) Use(dc any) error {
	d, ok := dc.(driver.Conn)
	if !ok {
		return fmt.Errorf("sqldb: %T is not a driver connection", dc)
	}
	if _, ok := d.(driver.ConnPrepareContext); !ok {
		return errNotSupported
	}
	if c.dc != d {
		c.stmts = nil
		c.dc = d
	}
	return nil
}

// Close closes the statements c keeps, before its connection closes:
// SQLite does not free a connection whose statements are still open.
// Call it inside (*sql.Conn).Raw (after Use).
func (c *Conn) Close() error {
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.st.Close())
		delete(c.stmts, q)
	}
	c.dc = nil
	return errors.Join(errs...)
}

// Tx returns c as a Tx (also a sqlstore.Tx: ExecBatch) whose statements
// run under ctx, whatever context they are given, after checking that
// bound, if not nil, has not ended: a ctx that cannot be cancelled
// (context.WithoutCancel) with a bound bounds a transaction between
// statements without the driver's watching each one (the SQLite driver
// starts a goroutine per statement run under a context that can be
// cancelled, to interrupt it). See Cached, which does the same through
// database/sql.
func (c *Conn) Tx(ctx, bound context.Context) ConnTx {
	return ConnTx{c: c, ctx: ctx, bound: bound}
}

// ConnTx runs statements on a Conn; see Conn.Tx.
type ConnTx struct {
	c     *Conn
	ctx   context.Context
	bound context.Context
}

// Exec runs a statement and returns the number of rows it changed.
func (t ConnTx) Exec(_ context.Context, query string, args ...any) (int64, error) {
	if t.bound != nil {
		if err := t.bound.Err(); err != nil {
			return 0, err
		}
	}
	s, once, err := t.c.stmt(t.ctx, query)
	if err != nil {
		return 0, err
	}
	if once {
		defer s.st.Close()
	}
	nv, err := t.c.bind(args)
	if err != nil {
		return 0, err
	}
	res, err := s.exec.ExecContext(t.ctx, nv)
	t.c.unbind()
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query runs a query. Its Rows must be closed before the statement runs
// again.
func (t ConnTx) Query(_ context.Context, query string, args ...any) (Rows, error) {
	if t.bound != nil {
		if err := t.bound.Err(); err != nil {
			return nil, err
		}
	}
	s, once, err := t.c.stmt(t.ctx, query)
	if err != nil {
		return nil, err
	}
	nv, err := t.c.bind(args)
	if err != nil {
		if once {
			s.st.Close()
		}
		return nil, err
	}
	dr, err := s.query.QueryContext(t.ctx, nv)
	t.c.unbind()
	if err != nil {
		if once {
			s.st.Close()
		}
		return nil, err
	}
	r := &connRows{dr: dr, s: s, once: once}
	n := len(dr.Columns())
	if n <= len(r.inline) {
		r.vals = r.inline[:n]
	} else {
		r.vals = make([]driver.Value, n)
	}
	s.busy = true
	return r, nil
}

// ExecBatch runs statements in order, each prepared once.
func (t ConnTx) ExecBatch(ctx context.Context, stmts []Stmt) error {
	for _, st := range stmts {
		if _, err := t.Exec(ctx, st.Query, st.Args...); err != nil {
			return err
		}
	}
	return nil
}

// stmt returns query prepared on c's connection; once reports a
// statement prepared for this call only, which the caller closes.
func (c *Conn) stmt(ctx context.Context, query string) (s *connStmt, once bool, err error) {
	if c.dc == nil {
		return nil, false, errors.New("sqldb: Conn used outside (*sql.Conn).Raw")
	}
	if s := c.stmts[query]; s != nil && !s.busy {
		return s, false, nil
	}
	st, err := c.dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	exec, ok1 := st.(driver.StmtExecContext)
	q, ok2 := st.(driver.StmtQueryContext)
	if !ok1 || !ok2 {
		st.Close()
		return nil, false, errNotSupported
	}
	s = &connStmt{st: st, exec: exec, query: q}
	if _, kept := c.stmts[query]; kept || len(c.stmts) >= maxConnStmts {
		return s, true, nil
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*connStmt)
	}
	c.stmts[query] = s
	return s, false, nil
}

// bind converts args into c's reused slice of driver values, as
// database/sql does for a driver without its own conversion
// (driver.DefaultParameterConverter).
func (c *Conn) bind(args []any) ([]driver.NamedValue, error) {
	nv := c.args[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			c.args = nv
			c.unbind()
			return nil, fmt.Errorf("sqldb: converting argument $%d type: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	c.args = nv
	return nv, nil
}

// unbind drops the arguments' references once the driver has bound them.
func (c *Conn) unbind() {
	clear(c.args)
	c.args = c.args[:0]
}

// driverValue converts an argument into a driver value: the types a
// driver takes as they are, the common others without reflection, and
// the rest as database/sql does.
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case nil, int64, float64, bool, string, []byte, time.Time:
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return nil, fmt.Errorf("uint64 values with high bit set are not supported")
		}
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// connRows is the result of a ConnTx query.
type connRows struct {
	dr     driver.Rows
	s      *connStmt
	once   bool
	vals   []driver.Value
	inline [8]driver.Value
	// ok is set while vals hold a row.
	ok     bool
	closed bool
	err    error
}

func (r *connRows) Next() bool {
	if r.closed {
		return false
	}
	if err := r.dr.Next(r.vals); err != nil {
		if err != io.EOF {
			r.err = err
		}
		r.close()
		return false
	}
	r.ok = true
	return true
}

// Scan copies the current row's columns into dest, converting as
// database/sql's Rows.Scan does (convertAssign).
func (r *connRows) Scan(dest ...any) error {
	if r.closed || !r.ok {
		return errors.New("sqldb: Scan called without calling Next")
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sqldb: expected %d destination arguments in Scan, not %d", len(r.vals), len(dest))
	}
	for i, v := range r.vals {
		if err := convertAssign(dest[i], v); err != nil {
			return fmt.Errorf("sqldb: Scan error on column index %d, name %q: %w", i, r.dr.Columns()[i], err)
		}
	}
	return nil
}

func (r *connRows) Err() error { return r.err }

func (r *connRows) Close() { r.close() }

// close closes the driver's rows and gives the statement back.
func (r *connRows) close() {
	if r.closed {
		return
	}
	r.closed = true
	r.ok = false
	if err := r.dr.Close(); err != nil && r.err == nil {
		r.err = err
	}
	clear(r.vals)
	if r.once {
		r.s.st.Close()
	} else {
		r.s.busy = false
	}
}

// Bounded returns t with its statements bounded by bound as well (see
// Conn.Tx).
func (t ConnTx) Bounded(bound context.Context) ConnTx {
	t.bound = bound
	return t
}
