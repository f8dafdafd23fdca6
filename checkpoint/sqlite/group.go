package sqlite

import (
	"context"
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
//
// The transaction runs on the writers' connection's driver connection
// directly (inWriteTx, wal.go): the writers run one after the other, so
// the Go work around each statement limits the process's writes as much
// as SQLite's own does.

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
	fn  func(sqlstore.Tx) error
	// shared marks WriteTx's writers, whose statements are not bounded by
	// their context once their turn came (they ran on a *sql.Tx under a
	// context that could not be cancelled before, and their stores expect
	// it); the driver's own writers' are (sqldb.Cached's Bound).
	shared bool
	err    error
	done   chan struct{}
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
	// under a context that cannot be cancelled, so that the driver does
	// not watch each one with a goroutine of its own; the group's
	// deadline is checked before each (sqldb.Conn.Tx's bound), and a
	// statement waiting for another process's lock is bounded by
	// busy_timeout.
	err := s.inWriteTx(context.WithoutCancel(ctx), func(tx sqldb.ConnTx) (bool, error) {
		ran := false
		for _, r := range group {
			if err := r.ctx.Err(); err != nil {
				r.err = err
				continue
			}
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if _, err := tx.Exec(ctx, "SAVEPOINT "+groupSavepoint); err != nil {
				return false, err
			}
			if r.err = s.call(ctx, tx, r); r.err != nil {
				if _, err := tx.Exec(ctx, "ROLLBACK TO "+groupSavepoint); err != nil {
					// SQLite rolled the whole transaction back.
					return false, err
				}
			} else {
				ran = true
			}
			if _, err := tx.Exec(ctx, "RELEASE "+groupSavepoint); err != nil {
				return false, err
			}
		}
		return ran, nil
	})
	if err != nil {
		// The transaction failed: nothing any writer wrote is kept.
		for _, r := range group {
			if r.err == nil {
				r.err = err
			}
		}
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
	var werr error
	err := s.inWriteTx(context.WithoutCancel(r.ctx), func(tx sqldb.ConnTx) (bool, error) {
		werr = s.call(r.ctx, tx, r)
		return werr == nil, nil
	})
	if werr != nil {
		return werr
	}
	return err
}

// call runs r's statements in tx, bounded by ctx (unless r is shared)
// whatever context they name.
func (s *sqlDB) call(ctx context.Context, tx sqldb.ConnTx, r *writeReq) error {
	if r.shared {
		return r.fn(tx)
	}
	return r.fn(tx.Bounded(ctx))
}
