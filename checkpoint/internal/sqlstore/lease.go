package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// Thread leases live in weft_thread_leases (schema version 2): one row per
// thread that a run owns or owned, with its owner token and its expiry in
// Unix nanoseconds by the store's clock (Dialect.Now).

// LeaseSchemaSQL returns the migration that adds weft_thread_leases, with
// the column types of one database: text, 64-bit and small integers.
func LeaseSchemaSQL(text, integer, small string) []string {
	r := strings.NewReplacer("TEXT", text, "INT8", integer, "INT2", small)
	return []string{r.Replace(`CREATE TABLE weft_thread_leases (
	thread_id TEXT NOT NULL PRIMARY KEY,
	owner TEXT NOT NULL,
	run_id TEXT NOT NULL,
	acquired_at INT8 NOT NULL,
	expires_at INT8 NOT NULL,
	cancel_requested INT2 NOT NULL DEFAULT 0
)`)}
}

// now returns the SQL for the current time in Unix nanoseconds: the
// dialect's expression (the server's clock), or the next argument, set to
// the local clock.
func (s *Store) now(args *[]any) string {
	if s.d.Now != "" {
		return s.d.Now
	}
	*args = append(*args, time.Now().UnixNano())
	return fmt.Sprintf("$%d", len(*args))
}

// AcquireLease implements checkpoint.LeaseDriver with one upsert that
// takes the row only when it is expired or already the owner's.
func (s *Store) AcquireLease(ctx context.Context, threadID string, req checkpoint.LeaseRequest) error {
	args := []any{threadID, req.Owner, req.RunID, req.TTL.Nanoseconds()}
	now := s.now(&args)
	n, err := s.writeOne(ctx, threadID, s.d.q(`INSERT INTO weft_thread_leases (thread_id, owner, run_id, acquired_at, expires_at, cancel_requested)
VALUES ($1, $2, $3, `+now+`, `+now+` + $4, 0)
ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, run_id = excluded.run_id,
acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, cancel_requested = 0
WHERE weft_thread_leases.expires_at <= excluded.acquired_at OR weft_thread_leases.owner = excluded.owner`), args)
	if err != nil {
		return fmt.Errorf("checkpoint: taking the lease of thread %q: %w", threadID, err)
	}
	if n > 0 {
		return nil
	}
	// Busy: say who holds it. The holder may have changed since; this is
	// for the message only.
	be := &checkpoint.BusyError{ThreadID: threadID}
	err = s.db.Read(ctx, func(tx Tx) error {
		var exp int64
		found, err := queryRow(ctx, tx, s.d.q(`SELECT owner, run_id, expires_at FROM weft_thread_leases WHERE thread_id = $1`),
			[]any{threadID}, &be.Owner, &be.RunID, &exp)
		if found {
			be.ExpiresAt = time.Unix(0, exp).UTC()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: reading the lease of thread %q: %w", threadID, err)
	}
	return be
}

// RenewLease implements checkpoint.LeaseDriver.
func (s *Store) RenewLease(ctx context.Context, threadID, owner string, ttl time.Duration) (checkpoint.LeaseState, error) {
	args := []any{threadID, owner, ttl.Nanoseconds()}
	now := s.now(&args)
	var cancel int64
	n, err := s.writeOne(ctx, threadID, s.d.q(`UPDATE weft_thread_leases SET expires_at = `+now+` + $3
WHERE thread_id = $1 AND owner = $2 RETURNING cancel_requested`), args, &cancel)
	if err != nil {
		return checkpoint.LeaseState{}, fmt.Errorf("checkpoint: renewing the lease of thread %q: %w", threadID, err)
	}
	if n == 0 {
		return checkpoint.LeaseState{}, fmt.Errorf("%w: thread %q: another run took the lease", checkpoint.ErrLeaseLost, threadID)
	}
	return checkpoint.LeaseState{CancelRequested: cancel != 0}, nil
}

// ReleaseLease implements checkpoint.LeaseDriver.
func (s *Store) ReleaseLease(ctx context.Context, threadID, owner string) error {
	if _, err := s.writeOne(ctx, threadID, s.d.q(`DELETE FROM weft_thread_leases WHERE thread_id = $1 AND owner = $2`), []any{threadID, owner}); err != nil {
		return fmt.Errorf("checkpoint: releasing the lease of thread %q: %w", threadID, err)
	}
	return nil
}

// RequestLeaseCancel implements checkpoint.LeaseDriver.
func (s *Store) RequestLeaseCancel(ctx context.Context, threadID string) (bool, error) {
	args := []any{threadID}
	now := s.now(&args)
	n, err := s.writeOne(ctx, threadID, s.d.q(`UPDATE weft_thread_leases SET cancel_requested = 1 WHERE thread_id = $1 AND expires_at > `+now), args)
	if err != nil {
		return false, fmt.Errorf("checkpoint: asking the holder of thread %q to cancel: %w", threadID, err)
	}
	return n > 0, nil
}

// fence returns a WITH clause that names the lease row of the thread ($1)
// when it still belongs to the owner in parameter ownerParam. A fenced
// write selects from it in the first query of its transaction, so the
// check costs no statement of its own; the row is locked (Dialect.LockRow)
// until the transaction ends, so a takeover waits for the write to commit
// instead of slipping in between.
func (s *Store) fence(ownerParam string) string {
	return `WITH fence AS (SELECT 1 AS f FROM weft_thread_leases WHERE thread_id = $1 AND owner = ` + ownerParam + s.d.LockRow + `) `
}

// checkFence refuses a whole-thread operation whose lease (FenceOwner of
// each thread) is gone, locking each lease row until the transaction ends
// as a fenced Put does.
func (s *Store) checkFence(ctx context.Context, tx Tx, threadIDs ...string) error {
	for _, th := range threadIDs {
		owner, fenced := checkpoint.FenceOwner(ctx, th)
		if !fenced {
			continue
		}
		if err := s.checkOwner(ctx, tx, th, owner); err != nil {
			return err
		}
	}
	return nil
}

// checkOwner refuses a write whose lease of threadID is no longer owner's,
// locking the lease row until the transaction ends as a fenced Put does.
func (s *Store) checkOwner(ctx context.Context, tx Tx, threadID, owner string) error {
	var one int64
	held, err := queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_thread_leases WHERE thread_id = $1 AND owner = $2`+s.d.LockRow), []any{threadID, owner}, &one)
	if err != nil {
		return err
	}
	if !held {
		return leaseLost(threadID)
	}
	return nil
}

// leaseLost is the error of a fenced write whose lease is gone.
func leaseLost(threadID string) error {
	return fmt.Errorf("%w: thread %q is no longer owned by this run; nothing was written", checkpoint.ErrLeaseLost, threadID)
}
