package records

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"
)

// The records' writes are group-committed: callers queue their writes and
// wait, and a committer runs every write queued at that moment in one
// transaction. Each caller returns only once its write is committed, so
// nothing is acknowledged before it is durable, but a server with many
// runs pays one commit (one turn at SQLite's write lock, one WAL flush in
// PostgreSQL) for many writes.
//
// A write that fails must leave the others. Most fail before they change
// anything (a thread not found, busy, another owner's): their error is
// their answer and the transaction goes on. A write that fails after it
// may have changed rows (a statement that changed some, or a statement
// that failed: PostgreSQL then refuses the rest of the transaction) spoils
// it: the transaction is rolled back, that write runs alone in a
// transaction of its own, and the others are tried again together. The
// writes of a batch were all waiting at once, so any order of them is an
// order they could have run in. No savepoint per write: in SQLite each
// would copy every page the write touches to the sub-journal (a file once
// it passes 64 KiB), in PostgreSQL cost two round trips.
//
// With several committers (PostgreSQL), each has a queue of its own and a
// write goes to the committer its key (the thread it writes) names: the
// writes of one thread are committed one transaction after the other.
// Two committers' transactions then never lock the same thread's or run's
// rows; otherwise one transaction holding a run's row (say, a run marked
// running) while it waits for a thread's row that another holds (the
// run's end, in another committer's batch) deadlocks until PostgreSQL's
// deadlock_timeout (1 s by default) aborts one, and every write of the
// aborted batch is tried again alone: a stall of a second or more for
// every run in those batches.

// maxBatch bounds the writes of one transaction.
const maxBatch = 128

// writeOp is a queued write.
type writeOp struct {
	ctx  context.Context
	fn   func(Tx) error
	done chan error
}

// batcher runs queued writes in shared transactions.
type batcher struct {
	db      DB
	timeout time.Duration
	// lanes are the committers' queues, one each.
	lanes   []chan *writeOp
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
}

func newBatcher(db DB, committers int, timeout time.Duration) *batcher {
	b := &batcher{db: db, timeout: timeout, stop: make(chan struct{})}
	b.lanes = make([]chan *writeOp, max(committers, 1))
	for i := range b.lanes {
		b.lanes[i] = make(chan *writeOp, 4*maxBatch)
		b.wg.Add(1)
		go b.loop(b.lanes[i])
	}
	return b
}

// lane is the index of the committer of the writes keyed key.
func (b *batcher) lane(key string) int {
	if len(b.lanes) == 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(b.lanes)))
}

// ErrClosed means the store was closed while a write waited, or before.
var ErrClosed = errors.New("records: the store is closed")

// do queues fn, a write of the thread key (or, "", of none), and waits
// until it is committed, or failed.
func (b *batcher) do(ctx context.Context, key string, fn func(Tx) error) error {
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case b.lanes[b.lane(key)] <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return ErrClosed
	}
	select {
	case err := <-op.done:
		return err
	case <-b.stop:
		// The committers answer what they took before stopping; what
		// none took (queued as the store closed) is closed.
		b.wg.Wait()
		select {
		case err := <-op.done:
			return err
		default:
			return ErrClosed
		}
	}
}

func (b *batcher) close() {
	b.stopped.Do(func() { close(b.stop) })
	b.wg.Wait()
	for _, q := range b.lanes {
	drain:
		for {
			select {
			case op := <-q:
				op.done <- ErrClosed
			default:
				break drain
			}
		}
	}
}

func (b *batcher) loop(q chan *writeOp) {
	defer b.wg.Done()
	batch := make([]*writeOp, 0, maxBatch)
	for {
		select {
		case op := <-q:
			batch = append(batch[:0], op)
		case <-b.stop:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case op := <-q:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		b.commit(batch)
		clear(batch)
	}
}

// maxSpoilt bounds how many times a batch is tried again without a write
// that spoilt it; past that, each write runs alone.
const maxSpoilt = 3

// errSpoilt rolls back a batch's transaction that a failed write spoilt.
var errSpoilt = errors.New("records: a write of the batch failed after it changed rows")

// commit runs a batch in one transaction; when the transaction itself
// fails, each write is tried again alone, so that one write's trouble
// (or a commit refused) is that write's answer only.
func (b *batcher) commit(batch []*writeOp) {
	live := batch[:0:0]
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.done <- err
			continue
		}
		live = append(live, op)
	}
	for try := 0; len(live) > 1 && try <= maxSpoilt; try++ {
		errs, spoilt, err := b.together(live)
		if err == nil {
			for i, op := range live {
				op.done <- errs[i]
			}
			return
		}
		if spoilt < 0 {
			break
		}
		op := live[spoilt]
		op.done <- b.db.Write(op.ctx, op.fn)
		live = append(live[:spoilt:spoilt], live[spoilt+1:]...)
	}
	for _, op := range live {
		op.done <- b.db.Write(op.ctx, op.fn)
	}
}

// together runs writes in one transaction and returns each one's answer.
// When one failed after it may have changed rows, the transaction is
// rolled back and spoilt is its index (else -1); err is the
// transaction's failure.
func (b *batcher) together(ops []*writeOp) (errs []error, spoilt int, err error) {
	// The shared transaction has a deadline of its own; each write's
	// statements keep their caller's.
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	errs, spoilt = make([]error, len(ops)), -1
	err = b.db.Write(ctx, func(tx Tx) error {
		// One watch for the writes in turn: each is done with it when
		// its fn returns.
		t := &watchedTx{tx: tx}
		for i, op := range ops {
			t.changed = false
			if errs[i] = op.fn(t); errs[i] != nil && t.changed {
				spoilt = i
				return errSpoilt
			}
		}
		return nil
	})
	return errs, spoilt, err
}

// watchedTx is a Tx that notes whether its statements may have changed
// the transaction: a statement that changed rows, or one that failed.
type watchedTx struct {
	tx      Tx
	changed bool
}

func (t *watchedTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	n, err := t.tx.Exec(ctx, query, args...)
	if n != 0 || err != nil {
		t.changed = true
	}
	return n, err
}

func (t *watchedTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := t.tx.Query(ctx, query, args...)
	if err != nil {
		t.changed = true
		return nil, err
	}
	return watchedRows{Rows: rows, tx: t}, nil
}

// watchedRows notes a query that failed while its rows were read.
type watchedRows struct {
	Rows
	tx *watchedTx
}

func (r watchedRows) Err() error {
	err := r.Rows.Err()
	if err != nil {
		r.tx.changed = true
	}
	return err
}
