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
// transaction, each inside a savepoint of its own so that one that fails
// leaves the others. Each caller returns only once its write is committed,
// so nothing is acknowledged before it is durable, but a server with many
// runs pays one commit (one turn at SQLite's write lock, one WAL flush in
// PostgreSQL) for many writes.
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
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		op := live[0]
		op.done <- b.db.Write(op.ctx, op.fn)
		return
	}
	// The shared transaction has a deadline of its own; each write's
	// statements keep their caller's.
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	errs := make([]error, len(live))
	err := b.db.Write(ctx, func(tx Tx) error {
		for i, op := range live {
			var broken bool
			errs[i], broken = savepoint(op.ctx, tx, op.fn)
			if broken {
				return errs[i]
			}
		}
		return nil
	})
	if err != nil {
		for _, op := range live {
			op.done <- b.db.Write(op.ctx, op.fn)
		}
		return
	}
	for i, op := range live {
		op.done <- errs[i]
	}
}

// savepoint runs fn inside a savepoint of tx: its writes are undone when
// it fails, and the transaction goes on. broken reports a transaction
// that cannot go on (the savepoint itself failed).
func savepoint(ctx context.Context, tx Tx, fn func(Tx) error) (err error, broken bool) {
	if _, err := tx.Exec(ctx, "SAVEPOINT weft_write"); err != nil {
		return err, true
	}
	if err := fn(tx); err != nil {
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT weft_write"); rerr != nil {
			return errors.Join(err, rerr), true
		}
		if _, rerr := tx.Exec(ctx, "RELEASE SAVEPOINT weft_write"); rerr != nil {
			return errors.Join(err, rerr), true
		}
		return err, false
	}
	if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT weft_write"); err != nil {
		return err, true
	}
	return nil, false
}
