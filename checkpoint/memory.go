package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"sync"
)

// MemoryDriver keeps checkpoints in process memory. Values are kept as the
// JSON the graph produced, so nothing a node does to a value after a step
// changes what was saved. A channel value is stored once per version.
type MemoryDriver struct {
	mu      sync.RWMutex
	threads map[string]*memThread
	// leases holds thread leases (see LeaseDriver), under mu so that a
	// fenced write checks its lease in the same critical section.
	leases map[string]*memLease
}

type memThread struct {
	// checkpoints per namespace, in id order (oldest first).
	byNS   map[string][]*memCheckpoint
	blobs  map[blobKey]json.RawMessage
	writes map[writesKey][]PendingWrite
}

type blobKey struct {
	ns, channel string
	version     int64
	// origin is empty, or the id of the checkpoint that stored the value
	// when another branch of history already had a different value at the
	// same version (replays and forks reuse version numbers).
	origin string
}

type writesKey struct{ ns, id string }

type memCheckpoint struct {
	cp     *Checkpoint // Values nil: rebuilt from blobs on read
	meta   Metadata
	parent string
	// refs holds the blobKey origin of channels whose value at this
	// checkpoint's version is not the first one stored for that version.
	refs map[string]string
}

// blobKeyOf returns the key of channel ch's value at version v as
// checkpoint c sees it.
func (t *memThread) blobKeyOf(ns string, c *memCheckpoint, ch string, v int64) blobKey {
	return blobKey{ns, ch, v, c.refs[ch]}
}

// NewMemoryDriver returns an empty in-memory driver.
func NewMemoryDriver() *MemoryDriver {
	return &MemoryDriver{threads: make(map[string]*memThread)}
}

// Get implements Driver.
func (m *MemoryDriver) Get(ctx context.Context, cfg Config) (*Tuple, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.threads[cfg.ThreadID]
	if t == nil {
		return nil, nil
	}
	list := t.byNS[cfg.Namespace]
	if len(list) == 0 {
		return nil, nil
	}
	var c *memCheckpoint
	if cfg.CheckpointID == "" {
		c = list[len(list)-1]
	} else {
		i, ok := searchCheckpoint(list, cfg.CheckpointID)
		if !ok {
			return nil, nil
		}
		c = list[i]
	}
	return t.tuple(cfg.ThreadID, cfg.Namespace, c)
}

// searchCheckpoint finds checkpoint id in a namespace's checkpoints, which
// are in id order: its index, or where it would go and false.
func searchCheckpoint(list []*memCheckpoint, id string) (int, bool) {
	return slices.BinarySearchFunc(list, id, func(c *memCheckpoint, id string) int { return cmpString(c.cp.ID, id) })
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (t *memThread) tuple(thread, ns string, c *memCheckpoint) (*Tuple, error) {
	cp := c.cp.Clone()
	cp.Values = make(map[string]json.RawMessage, len(cp.Versions))
	for ch, v := range cp.Versions {
		if b, ok := t.blobs[t.blobKeyOf(ns, c, ch, v)]; ok && b != nil {
			// A copy: the caller may change what it reads.
			cp.Values[ch] = slices.Clone(b)
		}
	}
	tp := &Tuple{
		Config:     Config{ThreadID: thread, Namespace: ns, CheckpointID: cp.ID},
		Checkpoint: cp,
		Metadata:   cloneMeta(c.meta),
	}
	if c.parent != "" {
		tp.Parent = &Config{ThreadID: thread, Namespace: ns, CheckpointID: c.parent}
	}
	tp.PendingWrites = slices.Clone(t.writes[writesKey{ns, cp.ID}])
	return tp, nil
}

func cloneMeta(m Metadata) Metadata {
	m.Parents = maps.Clone(m.Parents)
	m.Extra = maps.Clone(m.Extra)
	return m
}

// List implements Driver.
func (m *MemoryDriver) List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error] {
	return func(yield func(*Tuple, error) bool) {
		m.mu.RLock()
		t := m.threads[threadID]
		var out []*Tuple
		if t != nil {
			type item struct {
				ns string
				c  *memCheckpoint
			}
			var items []item
			for ns, list := range t.byNS {
				if opts.Namespace != nil && *opts.Namespace != ns {
					continue
				}
				for _, c := range list {
					items = append(items, item{ns, c})
				}
			}
			sort.Slice(items, func(i, j int) bool { return items[i].c.cp.ID > items[j].c.cp.ID })
			for _, it := range items {
				if opts.Before != "" && it.c.cp.ID >= opts.Before {
					continue
				}
				if !MatchMetadata(it.c.meta, opts.Filter) {
					continue
				}
				tp, err := t.tuple(threadID, it.ns, it.c)
				if err != nil {
					m.mu.RUnlock()
					yield(nil, err)
					return
				}
				out = append(out, tp)
				if opts.Limit > 0 && len(out) >= opts.Limit {
					break
				}
			}
		}
		m.mu.RUnlock()
		for _, tp := range out {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(tp, nil) {
				return
			}
		}
	}
}

// Put implements Driver.
func (m *MemoryDriver) Put(ctx context.Context, cfg Config, cp *Checkpoint, meta Metadata, blobs []Blob) (Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(ctx, cfg.ThreadID); err != nil {
		return Config{}, err
	}
	t := m.threads[cfg.ThreadID]
	if t == nil {
		t = &memThread{
			byNS:   make(map[string][]*memCheckpoint),
			blobs:  make(map[blobKey]json.RawMessage),
			writes: make(map[writesKey][]PendingWrite),
		}
		m.threads[cfg.ThreadID] = t
	}
	list := t.byNS[cfg.Namespace]
	var parent *memCheckpoint
	if i, ok := searchCheckpoint(list, cfg.CheckpointID); ok {
		parent = list[i]
	}
	// Compute every value first, so a bad blob stores nothing.
	vals := make([]json.RawMessage, len(blobs))
	for i, b := range blobs {
		switch {
		case b.Empty:
		case b.Value != nil:
			vals[i] = b.Value
		default:
			bk := blobKey{cfg.Namespace, b.Channel, b.BaseVersion, ""}
			if parent != nil && parent.cp.Versions[b.Channel] == b.BaseVersion {
				bk = t.blobKeyOf(cfg.Namespace, parent, b.Channel, b.BaseVersion)
			}
			base, ok := t.blobs[bk]
			if !ok {
				return Config{}, fmt.Errorf("%w: channel %q in %s: appended items are based on version %d, which is not stored", ErrInvalid, b.Channel, cfg, b.BaseVersion)
			}
			v, err := JoinAppended(base, b.Appended)
			if err != nil {
				return Config{}, fmt.Errorf("channel %q in %s: %w", b.Channel, cfg, err)
			}
			vals[i] = v
		}
	}
	// Blob origins are inherited from the parent, and kept from an earlier
	// Put of the same checkpoint id, for unchanged versions.
	// Made when the first entry is: most checkpoints have none.
	var refs map[string]string
	setRef := func(ch, o string) {
		if refs == nil {
			refs = map[string]string{}
		}
		refs[ch] = o
	}
	inherit := func(c *memCheckpoint) {
		for ch, o := range c.refs {
			if c.cp.Versions[ch] == cp.Versions[ch] {
				setRef(ch, o)
			}
		}
	}
	if parent != nil {
		inherit(parent)
	}
	if i, ok := searchCheckpoint(list, cp.ID); ok {
		inherit(list[i])
	}
	for i, b := range blobs {
		k := blobKey{cfg.Namespace, b.Channel, b.Version, ""}
		delete(refs, b.Channel)
		if old, ok := t.blobs[k]; ok && !bytes.Equal(old, vals[i]) {
			k.origin = cp.ID
			setRef(b.Channel, cp.ID)
		}
		t.blobs[k] = vals[i]
	}
	if len(refs) == 0 {
		refs = nil
	}
	stored := cp.cloneWithoutValues()
	c := &memCheckpoint{cp: stored, meta: cloneMeta(meta), parent: cfg.CheckpointID, refs: refs}
	i, found := searchCheckpoint(list, cp.ID)
	if found {
		list[i] = c
	} else {
		list = slices.Insert(list, i, c)
	}
	t.byNS[cfg.Namespace] = list
	return Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cp.ID}, nil
}

// PutWrites implements Driver.
func (m *MemoryDriver) PutWrites(ctx context.Context, cfg Config, taskID string, writes []PendingWrite) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(ctx, cfg.ThreadID); err != nil {
		return err
	}
	t := m.threads[cfg.ThreadID]
	if t == nil {
		t = &memThread{
			byNS:   make(map[string][]*memCheckpoint),
			blobs:  make(map[blobKey]json.RawMessage),
			writes: make(map[writesKey][]PendingWrite),
		}
		m.threads[cfg.ThreadID] = t
	}
	k := writesKey{cfg.Namespace, cfg.CheckpointID}
	list := t.writes[k]
	// A task's regular writes are stored once: a task that runs again after
	// a resume must not double them. Special channels are replaced.
	hasRegular := false
	for _, w := range list {
		if w.TaskID == taskID && !IsSpecialChannel(w.Channel) {
			hasRegular = true
			break
		}
	}
	for _, w := range writes {
		w.TaskID = taskID
		w.Value = slices.Clone(w.Value)
		if IsSpecialChannel(w.Channel) {
			replaced := false
			for i := range list {
				if list[i].TaskID == taskID && list[i].Channel == w.Channel {
					list[i] = w
					replaced = true
					break
				}
			}
			if !replaced {
				list = append(list, w)
			}
			continue
		}
		if hasRegular {
			continue
		}
		list = append(list, w)
	}
	t.writes[k] = list
	return nil
}

// ReplaceWrites implements Driver.
func (m *MemoryDriver) ReplaceWrites(ctx context.Context, cfg Config, writes []PendingWrite) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(ctx, cfg.ThreadID); err != nil {
		return err
	}
	t := m.threads[cfg.ThreadID]
	found := false
	if t != nil {
		_, found = searchCheckpoint(t.byNS[cfg.Namespace], cfg.CheckpointID)
	}
	if !found {
		return fmt.Errorf("%w: replace writes: thread %q has no checkpoint %q in namespace %q", ErrNotFound, cfg.ThreadID, cfg.CheckpointID, cfg.Namespace)
	}
	list := make([]PendingWrite, len(writes))
	for i, w := range writes {
		w.Value = slices.Clone(w.Value)
		list[i] = w
	}
	k := writesKey{cfg.Namespace, cfg.CheckpointID}
	if len(list) == 0 {
		delete(t.writes, k)
		return nil
	}
	t.writes[k] = list
	return nil
}

// PatchMetadata implements Driver.
func (m *MemoryDriver) PatchMetadata(ctx context.Context, cfg Config, extra map[string]any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(ctx, cfg.ThreadID); err != nil {
		return err
	}
	var c *memCheckpoint
	if t := m.threads[cfg.ThreadID]; t != nil {
		list := t.byNS[cfg.Namespace]
		if i, ok := searchCheckpoint(list, cfg.CheckpointID); ok {
			c = list[i]
		}
	}
	if c == nil {
		return fmt.Errorf("%w: patch metadata: thread %q has no checkpoint %q in namespace %q", ErrNotFound, cfg.ThreadID, cfg.CheckpointID, cfg.Namespace)
	}
	// Stored values are never changed in place: readers may hold them.
	merged := make(map[string]any, len(c.meta.Extra)+len(extra))
	maps.Copy(merged, c.meta.Extra)
	for k, v := range extra {
		merged[k] = cloneJSONValue(v)
	}
	c.meta.Extra = merged
	return nil
}

// DeleteThread implements Driver.
func (m *MemoryDriver) DeleteThread(ctx context.Context, threadID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(ctx, threadID); err != nil {
		return err
	}
	delete(m.threads, threadID)
	return nil
}

// cloneJSONValue is v as a JSON store gives it back (numbers as float64,
// structs as maps), so that the caller's later changes to v do not reach
// what is stored. Saver.PatchMetadata has checked that v encodes.
func cloneJSONValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}
