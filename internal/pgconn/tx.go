package pgconn

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Stmt is a statement with its arguments.
type Stmt struct {
	Query string
	Args  []any
}

// Tx is a transaction on one connection whose statements are pipelined:
// the statements queued (BEGIN, locks, writes whose results nobody reads)
// go out with the next Exec or Query, or with COMMIT, in one round trip
// (a pgx batch). An error of a queued statement is returned by the call
// that sent it; PostgreSQL skips what follows it in the pipeline, and the
// transaction fails as a whole.
type Tx struct {
	c       *pgx.Conn
	pending []Stmt
	// lead counts the statements RunTx queued (begin and its lead),
	// which need not be sent if no other statement follows.
	lead int
	// sends counts the round trips that sent statements: once one has,
	// the transaction may have begun.
	sends int
}

// ErrRolledBack reports a COMMIT that PostgreSQL answered by rolling the
// transaction back: one of its statements had failed, and the error was
// not returned.
var ErrRolledBack = errors.New("the transaction was rolled back at COMMIT: one of its statements had failed")

// RunTx runs fn in a transaction on a connection of pool's: begin (such
// as "BEGIN" or "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") and
// lead go out with fn's first statement, and COMMIT with what fn left
// queued. fn's error, or a failed statement, rolls the transaction back;
// the rollback waits at most cleanup, even if ctx has no deadline, and a
// connection whose rollback fails or does not answer in time is closed,
// never returned to the pool in an unknown state.
func RunTx(ctx context.Context, pool *pgxpool.Pool, cleanup time.Duration, begin string, lead []Stmt, fn func(*Tx) error) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	t := &Tx{c: conn.Conn(), pending: make([]Stmt, 0, 8)}
	t.Queue(begin)
	t.pending = append(t.pending, lead...)
	t.lead = len(t.pending)
	defer func() {
		if err != nil && t.sends > 0 {
			t.rollback(ctx, cleanup)
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	return t.commit(ctx)
}

// Queue queues a statement to go out with the next one.
func (t *Tx) Queue(query string, args ...any) {
	t.pending = append(t.pending, Stmt{Query: query, Args: args})
}

// Queued is the number of statements queued and not sent.
func (t *Tx) Queued() int { return len(t.pending) }

// Sends is the number of round trips that sent statements so far.
func (t *Tx) Sends() int { return t.sends }

// Unqueue drops the statements queued after the first n.
func (t *Tx) Unqueue(n int) { t.pending = t.pending[:n] }

// Exec runs a statement after the queued ones.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	if len(t.pending) == 0 {
		t.sends++
		return t.c.Exec(ctx, query, args...)
	}
	tags, err := t.ExecAll(ctx, []Stmt{{Query: query, Args: args}})
	if tags == nil {
		return pgconn.CommandTag{}, err
	}
	return tags[0], err
}

// ExecAll runs statements after the queued ones, in one round trip, and
// returns each one's command tag. The first that fails is the error, and
// PostgreSQL skips what follows it.
func (t *Tx) ExecAll(ctx context.Context, stmts []Stmt) ([]pgconn.CommandTag, error) {
	if len(stmts) == 0 {
		return nil, nil
	}
	br, err := t.send(ctx, stmts)
	if err != nil {
		return nil, err
	}
	tags := make([]pgconn.CommandTag, len(stmts))
	for i := range tags {
		if tags[i], err = br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return tags, br.Close()
}

// Query runs a query after the queued ones.
func (t *Tx) Query(ctx context.Context, query string, args ...any) (pgx.Rows, error) {
	if len(t.pending) == 0 {
		t.sends++
		return t.c.Query(ctx, query, args...)
	}
	br, err := t.send(ctx, []Stmt{{Query: query, Args: args}})
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		rows.Close()
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// send sends the queued statements and stmts in one batch, and reads the
// results of the queued ones, leaving stmts' to the caller. On an error
// the batch is read to its end.
func (t *Tx) send(ctx context.Context, stmts []Stmt) (pgx.BatchResults, error) {
	var b pgx.Batch
	for _, st := range t.pending {
		b.Queue(st.Query, st.Args...)
	}
	for _, st := range stmts {
		b.Queue(st.Query, st.Args...)
	}
	queued := len(t.pending)
	t.pending = t.pending[:0]
	t.sends++
	br := t.c.SendBatch(ctx, &b)
	for range queued {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

// commit sends what is queued with COMMIT; a transaction of no statement
// but its lead is not sent at all.
func (t *Tx) commit(ctx context.Context) error {
	if t.sends == 0 && len(t.pending) == t.lead {
		return nil
	}
	tag, err := t.Exec(ctx, "COMMIT")
	if err == nil && tag.String() == "ROLLBACK" {
		return ErrRolledBack
	}
	return err
}

// rollback ends a failed transaction. It must not wait for a connection
// that stopped answering: past timeout the connection is closed, and the
// server rolls the transaction back when it notices.
func (t *Tx) rollback(ctx context.Context, timeout time.Duration) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := t.c.Exec(rctx, "ROLLBACK"); err != nil {
		t.c.PgConn().Close(rctx)
	}
}

// batchRows are a query's rows read from a batch: closing them reads the
// rest of the batch, whose error Err then reports. They close themselves
// when Next finds no more rows.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
