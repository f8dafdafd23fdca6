package checkpoint

import (
	"context"
	"fmt"
	"time"
)

// memLease is a thread's lease in a MemoryDriver.
type memLease struct {
	owner, runID    string
	expires         time.Time
	cancelRequested bool
}

// fenceLocked refuses a write fenced by a lease (FenceOwner) that no
// longer holds the thread. m.mu must be held.
func (m *MemoryDriver) fenceLocked(ctx context.Context, threadID string) error {
	owner, ok := FenceOwner(ctx, threadID)
	if !ok {
		return nil
	}
	if l := m.leases[threadID]; l == nil || l.owner != owner {
		return fmt.Errorf("%w: thread %q is no longer owned by this run; nothing was written", ErrLeaseLost, threadID)
	}
	return nil
}

// AcquireLease implements LeaseDriver.
func (m *MemoryDriver) AcquireLease(ctx context.Context, threadID string, req LeaseRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if l := m.leases[threadID]; l != nil && l.owner != req.Owner && now.Before(l.expires) {
		return &BusyError{ThreadID: threadID, Owner: l.owner, RunID: l.runID, ExpiresAt: l.expires}
	}
	if m.leases == nil {
		m.leases = make(map[string]*memLease)
	}
	m.leases[threadID] = &memLease{owner: req.Owner, runID: req.RunID, expires: now.Add(req.TTL)}
	return nil
}

// RenewLease implements LeaseDriver.
func (m *MemoryDriver) RenewLease(ctx context.Context, threadID, owner string, ttl time.Duration) (LeaseState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[threadID]
	if l == nil || l.owner != owner {
		return LeaseState{}, fmt.Errorf("%w: thread %q: another run took the lease", ErrLeaseLost, threadID)
	}
	l.expires = time.Now().Add(ttl)
	return LeaseState{CancelRequested: l.cancelRequested}, nil
}

// ReleaseLease implements LeaseDriver.
func (m *MemoryDriver) ReleaseLease(ctx context.Context, threadID, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.leases[threadID]; l != nil && l.owner == owner {
		delete(m.leases, threadID)
	}
	return nil
}

// RequestLeaseCancel implements LeaseDriver.
func (m *MemoryDriver) RequestLeaseCancel(ctx context.Context, threadID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[threadID]
	if l == nil || !time.Now().Before(l.expires) {
		return false, nil
	}
	l.cancelRequested = true
	return true, nil
}
