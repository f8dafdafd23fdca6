package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"
)

// ListThreads implements Driver.
func (m *MemoryDriver) ListThreads(ctx context.Context, filter ThreadFilter) iter.Seq2[ThreadInfo, error] {
	return func(yield func(ThreadInfo, error) bool) {
		m.mu.RLock()
		var out []ThreadInfo
		for id, t := range m.threads {
			list := t.byNS[""]
			if len(list) == 0 {
				continue
			}
			c := list[len(list)-1]
			if !MatchMetadata(c.meta, filter.Metadata) {
				continue
			}
			out = append(out, ThreadInfo{
				ThreadID:  id,
				Latest:    Config{ThreadID: id, CheckpointID: c.cp.ID},
				Metadata:  cloneMeta(c.meta),
				UpdatedAt: c.cp.TS,
			})
		}
		m.mu.RUnlock()
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i], out[j]
			if a.Latest.CheckpointID != b.Latest.CheckpointID {
				return a.Latest.CheckpointID > b.Latest.CheckpointID
			}
			return a.ThreadID > b.ThreadID
		})
		if filter.Limit > 0 && len(out) > filter.Limit {
			out = out[:filter.Limit]
		}
		for _, ti := range out {
			if err := ctx.Err(); err != nil {
				yield(ThreadInfo{}, err)
				return
			}
			if !yield(ti, nil) {
				return
			}
		}
	}
}

// CopyThread implements Driver.
func (m *MemoryDriver) CopyThread(ctx context.Context, from, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, th := range []string{from, to} {
		if err := m.fenceLocked(ctx, th); err != nil {
			return err
		}
	}
	src := m.threads[from]
	if src == nil || !src.hasCheckpoints() {
		return fmt.Errorf("%w: thread %q has no checkpoint to copy", ErrNotFound, from)
	}
	if dst := m.threads[to]; dst != nil && dst.hasCheckpoints() {
		return fmt.Errorf("%w: cannot copy thread %q to %q: the destination already has checkpoints", ErrInvalid, from, to)
	}
	dst := &memThread{
		byNS:   make(map[string][]*memCheckpoint, len(src.byNS)),
		blobs:  make(map[blobKey]json.RawMessage, len(src.blobs)),
		writes: make(map[writesKey][]PendingWrite, len(src.writes)),
	}
	for ns, list := range src.byNS {
		cl := make([]*memCheckpoint, len(list))
		for i, c := range list {
			cc := *c
			cc.cp = c.cp.Clone()
			cc.meta = cloneMeta(c.meta)
			cl[i] = &cc
		}
		dst.byNS[ns] = cl
	}
	// Stored values are never changed in place, so they can be shared.
	for k, v := range src.blobs {
		dst.blobs[k] = v
	}
	for k, v := range src.writes {
		dst.writes[k] = slices.Clone(v)
	}
	m.threads[to] = dst
	return nil
}

func (t *memThread) hasCheckpoints() bool {
	for _, list := range t.byNS {
		if len(list) > 0 {
			return true
		}
	}
	return false
}

// Prune implements Driver.
func (m *MemoryDriver) Prune(ctx context.Context, threadID string, opts PruneOptions) (int, error) {
	return m.dropCheckpoints(ctx, threadID, nil, func(ns string, list []*memCheckpoint) []bool {
		ids := make([]string, len(list))
		times := make([]time.Time, len(list))
		for i, c := range list {
			ids[i], times[i] = c.cp.ID, c.cp.TS
		}
		return PruneKeeps(opts, ns, ids, times)
	})
}

// Rewind implements Driver.
func (m *MemoryDriver) Rewind(ctx context.Context, threadID, checkpointID string) (int, error) {
	check := func(t *memThread) error {
		if checkpointID != "" {
			found := false
			if t != nil {
				for _, list := range t.byNS {
					if _, ok := searchCheckpoint(list, checkpointID); ok {
						found = true
						break
					}
				}
			}
			if !found {
				return fmt.Errorf("%w: rewind: thread %q has no checkpoint %q", ErrNotFound, threadID, checkpointID)
			}
		}
		if t != nil {
			// Writes to checkpoints never stored go too.
			for k := range t.writes {
				if k.id > checkpointID {
					delete(t.writes, k)
				}
			}
		}
		return nil
	}
	return m.dropCheckpoints(ctx, threadID, check, func(ns string, list []*memCheckpoint) []bool {
		keep := make([]bool, len(list))
		for i, c := range list {
			keep[i] = checkpointID != "" && c.cp.ID <= checkpointID
		}
		return keep
	})
}

// dropCheckpoints deletes the checkpoints of each namespace that keep
// does not keep, with their pending writes and the values no kept
// checkpoint names, and returns how many it deleted. check, if not nil,
// may refuse the thread first, under the same lock.
func (m *MemoryDriver) dropCheckpoints(ctx context.Context, threadID string, check func(*memThread) error, keeps func(ns string, list []*memCheckpoint) []bool) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(ctx, threadID); err != nil {
		return 0, err
	}
	t := m.threads[threadID]
	if check != nil {
		if err := check(t); err != nil {
			return 0, err
		}
	}
	if t == nil {
		return 0, nil
	}
	deleted := 0
	for ns, list := range t.byNS {
		keep := keeps(ns, list)
		var kept []*memCheckpoint
		for i, c := range list {
			if keep[i] {
				kept = append(kept, c)
				continue
			}
			delete(t.writes, writesKey{ns, c.cp.ID})
			deleted++
		}
		if len(kept) == 0 {
			delete(t.byNS, ns)
			continue
		}
		t.byNS[ns] = kept
	}
	// Values are stored whole here, so a value is needed exactly when a
	// kept checkpoint names its version.
	used := make(map[blobKey]bool)
	for ns, list := range t.byNS {
		for _, c := range list {
			for ch, v := range c.cp.Versions {
				used[t.blobKeyOf(ns, c, ch, v)] = true
			}
		}
	}
	for k := range t.blobs {
		if !used[k] {
			delete(t.blobs, k)
		}
	}
	return deleted, nil
}
