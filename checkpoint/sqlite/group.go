package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/internal/sqldb"
)

// Group commit. SQLite has one writer at a time, and a commit costs more
// than the few statements of a checkpoint write: it appends every page
// the transaction changed to the WAL. Writers of this process that arrive
// while another writes queue up, and the next to take the write lock runs
// all of them in one transaction, each inside a savepoint of its own: a
// writer's error rolls back its own statements only, and the pages they
// share (the same B-tree leaves) are written once per commit instead of
// once per writer. A writer alone runs as before, without a savepoint.
//
// A failure of the transaction itself (its commit, a savepoint, an error
// after which SQLite rolled the whole transaction back, such as a full
// disk) fails every writer of the group: nothing any of them wrote is
// kept, and each is told.

// maxGroup bounds the writers committed together, so one commit stays
// short.
const maxGroup = 64

// groupTimeout bounds a group's transaction: its statements run under it
// rather than under one writer's context, whose cancelling would make
// SQLite roll back the whole group's transaction.
const groupTimeout = 30 * time.Second

// groupSavepoint names the savepoint each writer of a group runs in.
const groupSavepoint = "weft_group_writer"

// writeReq is one writer waiting for its turn.
type writeReq struct {
	ctx context.Context
	// fn, or raw for WriteTx's callers, runs the writer's statements.
	fn   func(sqlstore.Tx) error
	raw  func(*sql.Tx) error
	err  error
	done chan struct{}
}

// queue holds the writers waiting for the write lock.
type queue struct {
	mu      sync.Mutex
	waiting []*writeReq
}

// submit runs r in a write transaction, alone or with the writers queued
// with it, and returns its error.
func (s *sqlDB) submit(r *writeReq) error {
	r.done = make(chan struct{})
	s.q.mu.Lock()
	s.q.waiting = append(s.q.waiting, r)
	s.q.mu.Unlock()
	for {
		select {
		case <-r.done:
			return r.err
		case s.wlock <- struct{}{}:
			s.q.mu.Lock()
			n := min(len(s.q.waiting), maxGroup)
			group := append([]*writeReq(nil), s.q.waiting[:n]...)
			s.q.waiting = append(s.q.waiting[:0], s.q.waiting[n:]...)
			s.q.mu.Unlock()
			if len(group) > 0 {
				s.runGroup(group)
			}
			<-s.wlock
			// r was in this group or an earlier one; or, behind a full
			// group, it waits for the next.
		case <-r.ctx.Done():
			s.q.mu.Lock()
			for i, w := range s.q.waiting {
				if w == r {
					s.q.waiting = append(s.q.waiting[:i], s.q.waiting[i+1:]...)
					s.q.mu.Unlock()
					return r.ctx.Err()
				}
			}
			s.q.mu.Unlock()
			// A group holds it already: its outcome is decided there.
			<-r.done
			return r.err
		}
	}
}

// runGroup runs writers in one transaction and tells each its outcome.
func (s *sqlDB) runGroup(group []*writeReq) {
	defer func() {
		for _, r := range group {
			close(r.done)
		}
	}()
	if len(group) == 1 {
		r := group[0]
		r.err = s.runAlone(r)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	// The group's statements, its BEGIN and its COMMIT included, run
	// under a context that cannot be cancelled, so that neither the driver
	// nor database/sql watches each one with a goroutine of its own; the
	// group's deadline is checked before each (sqldb.Cached's Bound), and
	// a statement waiting for another process's lock is bounded by
	// busy_timeout.
	stmtCtx := context.WithoutCancel(ctx)
	tx, err := s.beginWrite(stmtCtx)
	if err != nil {
		for _, r := range group {
			r.err = err
		}
		return
	}
	failed := func(err error) {
		tx.Rollback()
		for _, r := range group {
			if r.err == nil {
				r.err = err
			}
		}
	}
	// The savepoints' statements are prepared once, as the writers' are,
	// rather than parsed again for each writer.
	sp := sqldb.Cached{Tx: tx, DB: s.db, Cache: &s.stmts, Ctx: stmtCtx}
	ran := false
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if err := ctx.Err(); err != nil {
			failed(err)
			return
		}
		if _, err := sp.ExecContext(stmtCtx, "SAVEPOINT "+groupSavepoint); err != nil {
			failed(err)
			return
		}
		if r.err = s.call(ctx, tx, r); r.err != nil {
			if _, err := sp.ExecContext(stmtCtx, "ROLLBACK TO "+groupSavepoint); err != nil {
				// SQLite rolled the whole transaction back.
				failed(err)
				return
			}
		} else {
			ran = true
		}
		if _, err := sp.ExecContext(stmtCtx, "RELEASE "+groupSavepoint); err != nil {
			failed(err)
			return
		}
	}
	if !ran {
		tx.Rollback()
		return
	}
	if err := s.commit(tx); err != nil {
		failed(err)
	}
}

// runAlone runs one writer in a transaction of its own, bounded by its
// own context.
func (s *sqlDB) runAlone(r *writeReq) error {
	// As in a group, the transaction's statements are not watched for
	// the writer's cancelling: it is checked before each.
	if err := r.ctx.Err(); err != nil {
		return err
	}
	tx, err := s.beginWrite(context.WithoutCancel(r.ctx))
	if err != nil {
		return err
	}
	if err := s.call(r.ctx, tx, r); err != nil {
		tx.Rollback()
		return err
	}
	return s.commit(tx)
}

// commit commits a write transaction: after a failure it drops the
// writers' connection (dropWriterConn), after a success it tells the
// checkpointer.
func (s *sqlDB) commit(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		s.dropWriterConn()
		return err
	}
	s.committed()
	return nil
}

// call runs r's statements in tx, bounded by ctx whatever context they
// name.
func (s *sqlDB) call(ctx context.Context, tx *sql.Tx, r *writeReq) error {
	if r.raw != nil {
		return r.raw(tx)
	}
	return r.fn(sqldb.Std{Q: sqldb.Cached{Tx: tx, DB: s.db, Cache: &s.stmts, Ctx: context.WithoutCancel(ctx), Bound: ctx}})
}
