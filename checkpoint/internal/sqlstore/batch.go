package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/weftlabs/weft/checkpoint"
)

// Batches (checkpoint.BatchDriver). WriteBatch opens one write
// transaction and puts it in the context it gives its function; every
// write of the same Store made with that context (Put, PutWrites, the
// whole-thread operations) finds it there (Store.write) and runs its
// statements in it instead of opening a transaction of its own. The
// batch remembers what its writes learnt, so later writes in it need not
// ask again: which leases it checked (the check holds to the commit: the
// lease row is locked, Dialect.LockRow, or the database has one writer).

// batchKey is the context key of the open batch.
type batchKey struct{}

// batch is one open WriteBatch transaction.
type batch struct {
	s    *Store
	keys []string

	// mu makes the batch's writes take turns; the transaction runs one
	// statement at a time.
	mu sync.Mutex
	tx Tx
	// ended is set when WriteBatch returned: the transaction is gone.
	ended bool
	// err is the first write of the batch that failed: the transaction
	// will roll back, so later writes are refused.
	err error
	// fenced maps a thread to the owner whose lease this transaction
	// checked.
	fenced map[string]string
	// unchecked maps a thread to the owner whose lease a write of this
	// transaction relied on without checking it (PutWrites): a later
	// fenced query of the batch checks it, or the batch does before it
	// commits.
	unchecked map[string]string
	// refs holds the refs column of the checkpoints this transaction
	// stored (Put), by namespace and id: a child put in the same batch
	// inherits from its parent without reading it back.
	refs map[[2]string][]byte
}

// errBatchFailed is returned by writes made in a batch after one of its
// writes failed.
var errBatchFailed = errors.New("checkpoint: an earlier write of this batch failed; the batch stores nothing")

// WriteBatch implements checkpoint.BatchDriver.
func (s *Store) WriteBatch(ctx context.Context, threadID string, fn func(context.Context) error) error {
	if b := s.batchOf(ctx); b != nil {
		// A batch inside a batch of the same store: its writes join the
		// open transaction, and it commits with it.
		if !slices.Contains(b.keys, threadID) {
			return fmt.Errorf("%w: a batch of thread %q cannot be opened inside a batch of thread %q", checkpoint.ErrInvalid, threadID, b.keys[0])
		}
		return fn(ctx)
	}
	keys := []string{threadID}
	return s.db.Write(ctx, keys, func(tx Tx) error {
		b := &batch{s: s, keys: keys, tx: tx}
		err := fn(context.WithValue(ctx, batchKey{}, b))
		b.mu.Lock()
		defer b.mu.Unlock()
		b.ended = true
		if b.err != nil {
			// The first failure, even when fn went on.
			return b.err
		}
		if err != nil {
			return err
		}
		for th, owner := range b.unchecked {
			if err := s.checkOwner(ctx, tx, th, owner); err != nil {
				return err
			}
		}
		return nil
	})
}

// batchOf returns the open batch of this store in ctx, or nil.
func (s *Store) batchOf(ctx context.Context) *batch {
	if b, ok := ctx.Value(batchKey{}).(*batch); ok && b.s == s {
		return b
	}
	return nil
}

// write runs fn in a write transaction holding keys' locks: the batch's
// when ctx has one of this store (b is then that batch), else a
// transaction of its own (b is nil).
func (s *Store) write(ctx context.Context, keys []string, fn func(tx Tx, b *batch) error) error {
	b := s.batchOf(ctx)
	if b == nil {
		return s.db.Write(ctx, keys, func(tx Tx) error { return fn(tx, nil) })
	}
	for _, k := range keys {
		if !slices.Contains(b.keys, k) {
			return fmt.Errorf("%w: a write of thread %q cannot join a batch of thread %q", checkpoint.ErrInvalid, k, b.keys[0])
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.ended:
		return fmt.Errorf("%w: a write was made with the context of a batch that has ended", checkpoint.ErrInvalid)
	case b.err != nil:
		return fmt.Errorf("%w (%w)", errBatchFailed, b.err)
	}
	if err := fn(b.tx, b); err != nil {
		b.err = err
		return err
	}
	return nil
}

// writeOne runs one statement on threadID's lease as DB.WriteOne does,
// or in ctx's batch, which must be threadID's (see write): outside it,
// the statement would wait for the batch's lock, and its effect would not
// follow the batch's.
func (s *Store) writeOne(ctx context.Context, threadID, query string, args []any, dest ...any) (n int64, err error) {
	if s.batchOf(ctx) == nil {
		return s.db.WriteOne(ctx, query, args, dest...)
	}
	err = s.write(ctx, []string{threadID}, func(tx Tx, b *batch) error {
		// The lease may change hands: the batch's next fenced write
		// checks it again.
		b.fenced = nil
		n, err = ExecOne(ctx, tx, query, args, dest...)
		return err
	})
	return n, err
}

// fenceOwner is checkpoint.FenceOwner for a write in transaction b (nil
// outside a batch): fenced is false when b already checked that lease.
func (b *batch) fenceOwner(ctx context.Context, threadID string) (owner string, fenced bool) {
	owner, fenced = checkpoint.FenceOwner(ctx, threadID)
	if fenced && b != nil && b.fenced != nil {
		if o, ok := b.fenced[threadID]; ok && o == owner {
			return owner, false
		}
	}
	return owner, fenced
}

// checked records that the transaction found threadID's lease held by
// owner.
func (b *batch) checked(threadID, owner string) {
	if b == nil {
		return
	}
	if b.fenced == nil {
		b.fenced = map[string]string{}
	}
	b.fenced[threadID] = owner
	if b.unchecked[threadID] == owner {
		delete(b.unchecked, threadID)
	}
}

// relyOn records that a write of the transaction relies on threadID's
// lease being owner's without having checked it: the batch checks it
// before it commits, unless a later fenced write does.
func (b *batch) relyOn(threadID, owner string) {
	if b.unchecked == nil {
		b.unchecked = map[string]string{}
	}
	b.unchecked[threadID] = owner
}

// refsOf returns the refs column a Put of this batch stored for
// checkpoint id of namespace ns (nil for no entries), and whether one did.
func (b *batch) refsOf(ns, id string) ([]byte, bool) {
	if b == nil {
		return nil, false
	}
	raw, ok := b.refs[[2]string{ns, id}]
	return raw, ok
}

// remember records the refs column a Put stored.
func (b *batch) remember(ns, id string, raw []byte) {
	if b == nil {
		return
	}
	if b.refs == nil {
		b.refs = map[[2]string][]byte{}
	}
	b.refs[[2]string{ns, id}] = raw
}

// forget drops what the batch knows of stored checkpoints: a whole-thread
// operation changed them.
func (b *batch) forget() {
	if b != nil {
		b.refs = nil
	}
}
