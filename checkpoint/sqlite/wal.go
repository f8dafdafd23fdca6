package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weftlabs/weft/internal/sqldb"
)

// WAL checkpoints. SQLite appends every commit to the write-ahead log
// (the -wal file) and copies the log back into the database file in a
// checkpoint. Left to itself, SQLite runs that checkpoint inside the
// commit that takes the log past 1,000 pages: it reads the pages back,
// writes them to the database file and syncs both files to disk, all
// while holding the write lock, and every writer of the process waits
// (a server's runs stall for the length of two disk flushes).
//
// Here the connection the driver's writes run on (wconn) never
// checkpoints on its own (wal_autocheckpoint 0). A goroutine of the
// driver does it instead,
// after commits, at most every walCheckpointPause, in SQLite's PASSIVE
// mode, which runs beside writers: the copy and the disk flushes happen
// while writers go on appending. A log that keeps growing under writers
// is never all copied, though, and SQLite starts the log over from its
// beginning only when a writer finds it all copied. So once the log
// holds walRestartFrames pages, the goroutine takes the write lock for
// one more PASSIVE checkpoint, which has only the pages appended since
// the last one to copy, and the next writer starts the log over. The log
// stays bounded as it was, and the write lock is held for a small part
// of the copying it used to be held for.

// walRestartFrames is the log length, in pages, past which the
// checkpointer finishes a checkpoint under the write lock so that the
// log starts over: 16 MiB of 4 KiB pages. SQLite's own threshold is
// 1,000 pages; a longer log holds the writers up less often, each time
// for about as long (two disk flushes of the pages appended since the
// last checkpoint).
const walRestartFrames = 4096

// walCheckpointPause is the least time between two checkpoints.
const walCheckpointPause = 100 * time.Millisecond

// walCheckpointTimeout bounds one checkpoint.
const walCheckpointTimeout = 30 * time.Second

// walCheckpointer runs the driver's checkpoints (see above).
type walCheckpointer struct {
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// committed tells the checkpointer that a write transaction committed.
func (s *sqlDB) committed() {
	if s.ckpt == nil {
		return
	}
	select {
	case s.ckpt.kick <- struct{}{}:
	default:
	}
}

// startCheckpointer starts the checkpoint goroutine.
func (s *sqlDB) startCheckpointer() {
	s.ckpt = &walCheckpointer{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.checkpointLoop()
}

// stopCheckpointer stops the checkpoint goroutine and waits for it; a
// second call waits only.
func (s *sqlDB) stopCheckpointer() {
	if s.ckpt == nil {
		return
	}
	s.ckpt.stopped.Do(func() { close(s.ckpt.stop) })
	<-s.ckpt.done
}

// walFailureLogEvery is how often a checkpoint that keeps failing is
// logged again.
const walFailureLogEvery = time.Minute

func (s *sqlDB) checkpointLoop() {
	defer close(s.ckpt.done)
	pause := time.NewTimer(0)
	defer pause.Stop()
	var failing int
	var logged time.Time
	for {
		select {
		case <-s.ckpt.stop:
			return
		case <-s.ckpt.kick:
		}
		// A failure is logged when it starts and then once a minute while
		// it lasts (a checkpoint is tried after every commit), and the
		// recovery once.
		if err := s.checkpointOnce(); err != nil {
			failing++
			if failing == 1 || time.Since(logged) >= walFailureLogEvery {
				slog.Warn("checkpoint/sqlite: WAL checkpoint failed; the log grows until one succeeds", "file", s.path, "failures", failing, "err", err)
				logged = time.Now()
			}
		} else if failing > 0 {
			slog.Info("checkpoint/sqlite: WAL checkpoint succeeded again", "file", s.path, "failures", failing)
			failing = 0
		}
		pause.Reset(walCheckpointPause)
		select {
		case <-s.ckpt.stop:
			return
		case <-pause.C:
		}
	}
}

// checkpointOnce copies the log into the database beside the writers,
// and finishes under the write lock when the log is long enough to start
// over.
func (s *sqlDB) checkpointOnce() error {
	logFrames, copied, err := s.passiveCheckpoint()
	if err != nil || logFrames < walRestartFrames {
		return err
	}
	if logFrames-copied > walRestartFrames/2 && logFrames < 2*walRestartFrames {
		// Readers held the copy back; try again beside the writers
		// before holding them up.
		return nil
	}
	select {
	case s.wlock <- struct{}{}:
	case <-s.ckpt.stop:
		return nil
	}
	defer func() { <-s.wlock }()
	_, _, err = s.passiveCheckpoint()
	return err
}

// passiveCheckpoint runs one PASSIVE checkpoint and returns the pages in
// the log and those of them copied into the database.
func (s *sqlDB) passiveCheckpoint() (logFrames, copied int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), walCheckpointTimeout)
	defer cancel()
	var busy int64
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied); err != nil {
		return 0, 0, s.explain(err)
	}
	return logFrames, copied, nil
}

// inWriteTx runs body in a write transaction on the writers'
// connection, with its statements run under ctx, and commits it if body
// says so; it returns body's error, or the transaction's. It runs under
// wlock.
//
// Every write of the process runs on this one connection: SQLite keeps
// a page cache per connection and empties it when another connection
// has written since, so a connection that only this process's writers
// use finds the pages its last transaction wrote still in memory.
//
// The transaction runs on the driver's connection directly, inside
// (*sql.Conn).Raw: its BEGIN, statements, savepoints and COMMIT are
// statements prepared once on the connection (sqldb.Conn), without
// database/sql's transaction and per-statement wrappers. The writers run
// one after the other, so what each statement costs besides SQLite's own
// work limits how many runs a second a server commits.
func (s *sqlDB) inWriteTx(ctx context.Context, body func(sqldb.ConnTx) (commit bool, err error)) error {
	if s.closed {
		return fmt.Errorf("checkpoint/sqlite: %s: %w", s.path, errClosed)
	}
	for retried := false; ; retried = true {
		if err := s.takeWriterConn(ctx); err != nil {
			return err
		}
		var txErr error
		began, committed, drop := false, false, false
		err := s.wconn.Raw(func(dc any) error {
			if err := s.raw.Use(dc); err != nil {
				txErr = err
				return nil
			}
			tx := s.raw.Tx(ctx, nil)
			// BEGIN IMMEDIATE, as the pool's DSN asks (_txlock): the
			// write lock is taken at the start, so two writers never
			// deadlock upgrading read locks.
			if _, err := tx.Exec(ctx, "BEGIN IMMEDIATE"); err != nil {
				txErr = err
				return nil
			}
			began = true
			commit, err := body(tx)
			if err != nil || !commit {
				// A ROLLBACK's failure is ignored, as database/sql's
				// Tx.Rollback's was: after an error that rolled the
				// transaction back already (a full disk), SQLite
				// fails it for want of a transaction.
				_, rerr := tx.Exec(ctx, "ROLLBACK")
				txErr = err
				drop = errors.Is(err, driver.ErrBadConn) || errors.Is(rerr, driver.ErrBadConn)
			} else if _, err := tx.Exec(ctx, "COMMIT"); err != nil {
				// SQLite may leave the transaction open (a full disk,
				// an I/O error), and every later BEGIN on the
				// connection would fail.
				txErr = err
				drop = true
			} else {
				committed = true
			}
			if drop {
				// Closed with its statements; returning
				// driver.ErrBadConn tells database/sql to close the
				// connection rather than give it back to the pool.
				s.raw.Close()
				return driver.ErrBadConn
			}
			return nil
		})
		if drop {
			s.wconn.Close()
			s.wconn = nil
			return txErr
		}
		if committed {
			s.committed()
		}
		if err == nil || began {
			return txErr
		}
		// The connection was lost before the transaction began (closed
		// under the writers): take another, once.
		if retried || !(errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
			return err
		}
		s.dropWriterConn()
	}
}

// takeWriterConn takes the writers' connection from the pool when there
// is none: the first time, and again when it was lost or dropped. It
// runs under wlock.
func (s *sqlDB) takeWriterConn(ctx context.Context) error {
	if s.wconn != nil {
		return nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	// The writers' commits leave the log to the checkpointer. The pool's
	// other connections checkpoint after their commits as SQLite's do:
	// writes made on the pool DB returns (the long-term store's) do not
	// tell the checkpointer, and would otherwise grow the log for good.
	if _, err := c.ExecContext(ctx, "PRAGMA wal_autocheckpoint(0)"); err != nil {
		c.Close()
		return err
	}
	s.wconn = c
	return nil
}

// dropWriterConn discards the writers' connection: the connection and
// the statements prepared on it are closed, not given back to the pool
// (a driver.ErrBadConn from Raw tells database/sql so); the next write
// takes another. It runs under wlock.
func (s *sqlDB) dropWriterConn() {
	if s.wconn == nil {
		return
	}
	s.wconn.Raw(func(dc any) error {
		if s.raw.Use(dc) == nil {
			s.raw.Close()
		}
		return driver.ErrBadConn
	})
	s.wconn.Close()
	s.wconn = nil
}

// errClosed is the error of a write that comes once the driver closes.
var errClosed = errors.New("the database is closed")

// close stops the checkpointer, waits for the writer in progress and
// gives the writer's connection back, so that closing the pool closes
// it (and SQLite, closing its last connection, copies the log into the
// database and removes it).
func (s *sqlDB) close() error {
	s.stopCheckpointer()
	select {
	case s.wlock <- struct{}{}:
		defer func() { <-s.wlock }()
	case <-time.After(groupTimeout + 5*time.Second):
		return fmt.Errorf("checkpoint/sqlite: closing %s: a write still runs after %s", s.path, groupTimeout+5*time.Second)
	}
	// A writer that takes its turn after this one, before the pool is
	// closed, must not take a connection that nothing would give back.
	s.closed = true
	if s.wconn == nil {
		return nil
	}
	// The statements prepared on the connection first: SQLite does not
	// free a connection whose statements are open.
	err := s.wconn.Raw(func(dc any) error {
		if err := s.raw.Use(dc); err != nil {
			return err
		}
		return s.raw.Close()
	})
	if errors.Is(err, sql.ErrConnDone) {
		// Lost already.
		err = nil
	}
	err = errors.Join(err, s.wconn.Close())
	s.wconn = nil
	return err
}
