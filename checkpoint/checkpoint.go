// Package checkpoint defines how a graph's progress is saved and read back.
//
// A checkpoint is a snapshot of a thread's channels at the end of a superstep:
// each channel's value and version, which channel versions every node has
// seen, and the writes of tasks that finished in a step that did not. The
// graph runtime serializes channel values to JSON before they reach a saver,
// so a saver stores bytes and never needs to know a Go type.
//
// The shape follows database/sql: [Driver] is the small interface a backend
// implements (the in-memory one here, SQLite and PostgreSQL in subpackages),
// and [Saver] is the concrete type callers use. The saver validates what it
// is given before the driver sees it.
//
// A run owns its thread through a [Lease] (Saver.Acquire): one writer per
// thread across goroutines, processes and machines, with every write of
// the owner fenced by it. See lease.go and "Thread ownership" in
// docs/persistence.md.
package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/weftlabs/weft/internal/ids"
)

// FormatVersion is the version of the checkpoint layout written by this package.
const FormatVersion = 1

// Special pending-write channels. A write to one of these replaces an earlier
// write of the same task to the same channel; any other write is kept as first
// written.
const (
	ErrorChannel     = "__error__"
	InterruptChannel = "__interrupt__"
	ResumeChannel    = "__resume__"
	ScheduledChannel = "__scheduled__"
	// TasksChannel carries Send packets: tasks pushed for the next step.
	TasksChannel = "__pregel_tasks"
)

// NullTaskID is the task id of writes that belong to no task, such as a
// resume value given for every pending interrupt.
const NullTaskID = "00000000-0000-0000-0000-000000000000"

// IsSpecialChannel reports whether writes to ch replace earlier writes of the
// same task instead of being appended.
func IsSpecialChannel(ch string) bool {
	switch ch {
	case ErrorChannel, InterruptChannel, ResumeChannel, ScheduledChannel:
		return true
	}
	return false
}

// Sentinel errors. Drivers wrap them so callers can test with errors.Is.
var (
	// ErrNotFound means the thread, namespace or checkpoint does not exist.
	ErrNotFound = errors.New("checkpoint: not found")
	// ErrInvalid means the caller passed something the saver cannot store.
	ErrInvalid = errors.New("checkpoint: invalid argument")
	// ErrCorrupt means stored data cannot be decoded: a damaged row, or one
	// written in a format this build does not read. The error names the
	// thread, checkpoint and channel.
	ErrCorrupt = errors.New("checkpoint: stored data cannot be decoded")
)

// Config addresses a checkpoint: a thread, a namespace within it (empty for
// the root graph, "node:taskid|..." for subgraphs) and a checkpoint id (empty
// for the latest).
type Config struct {
	ThreadID     string `json:"thread_id"`
	Namespace    string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// String renders the config for error messages.
func (c Config) String() string {
	s := "thread " + quote(c.ThreadID)
	if c.Namespace != "" {
		s += " namespace " + quote(c.Namespace)
	}
	if c.CheckpointID != "" {
		s += " checkpoint " + quote(c.CheckpointID)
	}
	return s
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// Checkpoint is the saved state of a graph at the end of one superstep.
type Checkpoint struct {
	// V is the layout version, FormatVersion when written by this package.
	V int `json:"v"`
	// ID is time-ordered: a later checkpoint has a larger id.
	ID string `json:"id"`
	// TS is when the checkpoint was created.
	TS time.Time `json:"ts"`
	// Values holds each channel's value as JSON. Channels without a value
	// are absent. On Put only Blobs are read; drivers fill Values on read.
	Values map[string]json.RawMessage `json:"channel_values"`
	// Versions is each channel's current version.
	Versions map[string]int64 `json:"channel_versions"`
	// VersionsSeen records, per node, the version of each channel the node
	// last ran on. It decides which nodes run next.
	VersionsSeen map[string]map[string]int64 `json:"versions_seen"`
	// UpdatedChannels lists the channels written in the step that made it.
	UpdatedChannels []string `json:"updated_channels,omitempty"`
}

// Blob is one channel value at one version, as given to Put. Only channels
// whose version changed since the parent checkpoint have a blob. Put takes
// ownership of Value and Appended: a driver may keep them without copying,
// so the caller must not change them afterwards.
type Blob struct {
	Channel string
	Version int64
	// Empty means the channel has no value at this version.
	Empty bool
	// Value is the whole value as JSON; nil when Empty.
	Value json.RawMessage
	// Appended is set for append-only channels whose change since
	// BaseVersion only added items: the value is the value at BaseVersion
	// followed by these items. A driver may store it as a delta.
	Appended    []json.RawMessage
	BaseVersion int64
}

// Metadata describes how a checkpoint came to be.
type Metadata struct {
	// Source is "input", "loop", "update" or "fork".
	Source string `json:"source"`
	// Step is the superstep number: -1 for the input checkpoint.
	Step int `json:"step"`
	// Parents maps a parent graph's namespace to its checkpoint id, for
	// checkpoints of subgraphs.
	Parents map[string]string `json:"parents,omitempty"`
	// Extra is caller-supplied metadata, matched by ListOptions.Filter.
	Extra map[string]any `json:"extra,omitempty"`
}

// PendingWrite is a write of a task that finished in a step that has not
// been checkpointed yet.
type PendingWrite struct {
	TaskID  string          `json:"task_id"`
	Channel string          `json:"channel"`
	Value   json.RawMessage `json:"value"`
}

// Tuple is a checkpoint with its address, metadata, parent and pending writes.
type Tuple struct {
	Config        Config
	Checkpoint    *Checkpoint
	Metadata      Metadata
	Parent        *Config
	PendingWrites []PendingWrite
}

// ListOptions narrows List.
type ListOptions struct {
	// Namespace restricts the listing to one namespace; nil lists all.
	Namespace *string
	// Before lists only checkpoints older than this checkpoint id.
	Before string
	// Limit caps the number of results; 0 means no limit.
	Limit int
	// Filter keeps checkpoints whose metadata has these values: the keys
	// "source" and "step", or keys of Metadata.Extra.
	Filter map[string]any
}

// Driver is what a checkpoint backend implements. The Saver validates its
// arguments before calling it; drivers must be safe for concurrent use, and
// must return soon after their context ends: that is how the runtime bounds
// a call to a stalled store (graph.CompileOptions.CheckpointerTimeout).
type Driver interface {
	// Get returns the checkpoint cfg names, or the newest of the thread and
	// namespace when cfg.CheckpointID is empty; (nil, nil) if there is none.
	Get(ctx context.Context, cfg Config) (*Tuple, error)
	// List yields a thread's checkpoints, newest first.
	List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error]
	// Put stores cp as a child of cfg.CheckpointID (empty for a first
	// checkpoint) with the values in blobs, and returns its address.
	Put(ctx context.Context, cfg Config, cp *Checkpoint, meta Metadata, blobs []Blob) (Config, error)
	// PutWrites stores pending writes of one task for checkpoint cfg.
	//
	// Put and PutWrites are fenced when ctx carries a lease for cfg's
	// thread (FenceOwner): in the write's own transaction the driver checks
	// that the lease still names that owner, and otherwise stores nothing
	// and returns an error wrapping ErrLeaseLost.
	PutWrites(ctx context.Context, cfg Config, taskID string, writes []PendingWrite) error
	// DeleteThread removes every checkpoint, blob and write of a thread.
	// Like every operation on a whole thread (ThreadDriver), it is fenced
	// as Put is, by FenceOwner of the thread.
	DeleteThread(ctx context.Context, threadID string) error
	ThreadDriver
	LeaseDriver
}

// BatchDriver is an optional capability of a Driver: several writes to one
// thread in one transaction. A run's checkpoint writes made in the
// background (async durability) are batched this way: a transaction, and
// one lease check, for all the writes queued at once, instead of one each.
type BatchDriver interface {
	// WriteBatch runs fn inside one write transaction on threadID's data.
	// Put and PutWrites of threadID called with fn's context, or one
	// derived from it, join that transaction instead of running their
	// own; they must be made one after another, not concurrently. When fn
	// returns nil and every write in it succeeded, the transaction
	// commits; otherwise nothing fn wrote is stored and WriteBatch returns
	// fn's error, or the first failed write's. A write of another thread
	// with fn's context fails with ErrInvalid.
	//
	// A batch is fenced as its writes are (FenceOwner), but checks the
	// lease once, in its first fenced write, and keeps the check valid to
	// its commit (the store locks the lease row, or has one writer at a
	// time): a batch whose lease is lost stores nothing and fails with an
	// error wrapping ErrLeaseLost.
	WriteBatch(ctx context.Context, threadID string, fn func(ctx context.Context) error) error
}

// Saver stores and reads checkpoints through a Driver.
type Saver struct {
	d       Driver
	waiters leaseWaiters
}

// New returns a Saver over d.
func New(d Driver) *Saver { return &Saver{d: d} }

// NewMemory returns a Saver that keeps checkpoints in memory: for tests,
// demos and single-process use where nothing must survive a restart.
func NewMemory() *Saver { return New(NewMemoryDriver()) }

// Driver returns the backend.
func (s *Saver) Driver() Driver { return s.d }

func needThread(op string, threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: %s needs a thread id (RunOptions.ThreadID), got none", ErrInvalid, op)
	}
	return nil
}

// CanBatch reports whether Batch makes its writes in one transaction: the
// driver is a BatchDriver.
func (s *Saver) CanBatch() bool {
	_, ok := s.d.(BatchDriver)
	return ok
}

// Batch runs fn with a context in which this saver's Put and PutWrites of
// threadID are made in one transaction of the driver (see BatchDriver):
// all of them are stored, or none, and Batch returns the first error.
// With a driver that cannot batch (CanBatch is false), fn's writes are
// made one at a time as fn calls them, each stored when it returns. A
// lease of threadID that ctx carries (WithLease) fences the batch as it
// fences each write.
func (s *Saver) Batch(ctx context.Context, threadID string, fn func(ctx context.Context) error) error {
	if err := needThread("batch", threadID); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: batch of thread %q needs a function making its writes, got nil", ErrInvalid, threadID)
	}
	bd, ok := s.d.(BatchDriver)
	if !ok {
		return fn(ctx)
	}
	fctx, l, err := s.fenceThread(ctx, threadID)
	if err != nil {
		return err
	}
	err = bd.WriteBatch(fctx, threadID, fn)
	noteLostOne(l, err)
	return err
}

// Get returns the checkpoint cfg names, or the latest of its thread and
// namespace. It returns (nil, nil) when the thread has no checkpoint and
// ErrNotFound when a named checkpoint does not exist.
func (s *Saver) Get(ctx context.Context, cfg Config) (*Tuple, error) {
	if err := needThread("get", cfg.ThreadID); err != nil {
		return nil, err
	}
	t, err := s.d.Get(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if t == nil && cfg.CheckpointID != "" {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, cfg)
	}
	return t, nil
}

// List yields a thread's checkpoints, newest first.
func (s *Saver) List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error] {
	if err := needThread("list", threadID); err != nil {
		return func(yield func(*Tuple, error) bool) { yield(nil, err) }
	}
	if opts.Limit < 0 {
		return func(yield func(*Tuple, error) bool) {
			yield(nil, fmt.Errorf("%w: list limit must be 0 (no limit) or positive, got %d", ErrInvalid, opts.Limit))
		}
	}
	return s.d.List(ctx, threadID, opts)
}

// Put stores a checkpoint. cfg.CheckpointID names the parent, if any.
func (s *Saver) Put(ctx context.Context, cfg Config, cp *Checkpoint, meta Metadata, blobs []Blob) (Config, error) {
	if err := needThread("put", cfg.ThreadID); err != nil {
		return Config{}, err
	}
	if cp == nil || cp.ID == "" {
		return Config{}, fmt.Errorf("%w: put needs a checkpoint with an id", ErrInvalid)
	}
	seen := make(map[string]bool, len(blobs))
	for _, b := range blobs {
		if b.Channel == "" {
			return Config{}, fmt.Errorf("%w: blob at version %d has no channel name", ErrInvalid, b.Version)
		}
		if seen[b.Channel] {
			return Config{}, fmt.Errorf("%w: two blobs for channel %q in one checkpoint", ErrInvalid, b.Channel)
		}
		seen[b.Channel] = true
		if !b.Empty && b.Value == nil && b.Appended == nil {
			return Config{}, fmt.Errorf("%w: blob for channel %q has neither a value nor appended items", ErrInvalid, b.Channel)
		}
		// Values get a cheap shape check, not a full parse: they are
		// almost always the runtime's own encoding, and parsing every
		// checkpoint twice doubled the cost of saving. Drivers store a
		// checkpoint in one transaction (or not at all), so a value a
		// driver's JSON column refuses leaves nothing half written.
		// The value's name is built only when the check fails: this
		// runs for every blob of every checkpoint.
		if !b.Empty && b.Value != nil {
			if !jsonShaped(b.Value) {
				return Config{}, notJSONShaped(fmt.Sprintf("the value of channel %q at version %d", b.Channel, b.Version), b.Value)
			}
		} else if !b.Empty {
			for i, it := range b.Appended {
				if !jsonShaped(it) {
					return Config{}, notJSONShaped(fmt.Sprintf("appended item %d of channel %q at version %d", i, b.Channel, b.Version), it)
				}
			}
		}
	}
	ctx, l, err := s.fenceThread(ctx, cfg.ThreadID)
	if err != nil {
		return Config{}, err
	}
	out, err := s.d.Put(ctx, cfg, cp, meta, blobs)
	noteLostOne(l, err)
	return out, err
}

// PutWrites stores pending writes of one task for the checkpoint cfg names.
func (s *Saver) PutWrites(ctx context.Context, cfg Config, taskID string, writes []PendingWrite) error {
	if err := needThread("put writes", cfg.ThreadID); err != nil {
		return err
	}
	if cfg.CheckpointID == "" {
		return fmt.Errorf("%w: pending writes need a checkpoint id in %s", ErrInvalid, cfg)
	}
	if taskID == "" {
		return fmt.Errorf("%w: pending writes need a task id", ErrInvalid)
	}
	for i, w := range writes {
		if w.Channel == "" {
			return fmt.Errorf("%w: pending write %d of task %s has no channel name", ErrInvalid, i, taskID)
		}
		if w.Value == nil {
			continue
		}
		// Named only on failure, as in Put.
		if !json.Valid(w.Value) {
			return notJSON(fmt.Sprintf("pending write %d (channel %q) of task %s", i, w.Channel, taskID), w.Value)
		}
	}
	ctx, l, err := s.fenceThread(ctx, cfg.ThreadID)
	if err != nil {
		return err
	}
	err = s.d.PutWrites(ctx, cfg, taskID, writes)
	noteLostOne(l, err)
	return err
}

// DeleteThread removes everything stored for a thread. Like CopyThread,
// Prune and Rewind, it owns the thread while it runs (see Thread
// ownership in docs/persistence.md): when another run holds the thread's
// lease it fails with a *BusyError (errors.Is ErrThreadBusy), unless ctx
// carries that lease (WithLease), which then fences it as it fences Put.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := needThread("delete thread", threadID); err != nil {
		return err
	}
	ctx, done, err := s.own(ctx, "delete thread", threadID)
	if err != nil {
		return err
	}
	return done(s.d.DeleteThread(ctx, threadID))
}

// NewID returns a new time-ordered checkpoint id: ids compare as strings in
// the order they were made.
func NewID() string { return ids.TimeOrdered() }

// MatchMetadata reports whether meta has every value in filter. Drivers that
// cannot filter in their query language use it.
func MatchMetadata(meta Metadata, filter map[string]any) bool {
	for k, want := range filter {
		var got any
		switch k {
		case "source":
			got = meta.Source
		case "step":
			got = meta.Step
		default:
			v, ok := meta.Extra[k]
			if !ok {
				return false
			}
			got = v
		}
		if !looselyEqual(got, want) {
			return false
		}
	}
	return true
}

// looselyEqual compares values that may have passed through JSON, where
// every number becomes a float64.
func looselyEqual(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Clone returns a deep copy of the checkpoint's maps, so a caller may change
// it without touching what a driver keeps.
func (c *Checkpoint) Clone() *Checkpoint {
	if c == nil {
		return nil
	}
	out := c.cloneWithoutValues()
	out.Values = maps.Clone(c.Values)
	return out
}

// cloneWithoutValues is Clone with no Values, which the memory driver
// keeps apart: without copying them first.
func (c *Checkpoint) cloneWithoutValues() *Checkpoint {
	out := *c
	out.Values = nil
	out.Versions = maps.Clone(c.Versions)
	out.VersionsSeen = make(map[string]map[string]int64, len(c.VersionsSeen))
	for k, v := range c.VersionsSeen {
		out.VersionsSeen[k] = maps.Clone(v)
	}
	out.UpdatedChannels = append([]string(nil), c.UpdatedChannels...)
	return &out
}

// JoinAppended rebuilds a JSON array value from a base array and appended
// items, for drivers that store append-only channels as deltas.
func JoinAppended(base json.RawMessage, items []json.RawMessage) (json.RawMessage, error) {
	b := bytes.TrimSpace(base)
	if len(b) == 0 || string(b) == "null" {
		b = []byte("[]")
	}
	if b[0] != '[' || b[len(b)-1] != ']' {
		return nil, fmt.Errorf("%w: appended items need a JSON array as base, got %.20q", ErrInvalid, b)
	}
	n := len(b)
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, b[:len(b)-1]...)
	first := len(bytes.TrimSpace(b[1:len(b)-1])) == 0
	for _, it := range items {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, it...)
	}
	out = append(out, ']')
	return out, nil
}

// ThreadFilter narrows ListThreads.
type ThreadFilter struct {
	// Metadata keeps threads whose newest root checkpoint has these
	// metadata values, matched as ListOptions.Filter is.
	Metadata map[string]any
	// Limit caps the number of threads; 0 means no limit.
	Limit int
}

// ThreadInfo describes one thread: its newest checkpoint in the root
// namespace.
type ThreadInfo struct {
	ThreadID string
	// Latest addresses the thread's newest root checkpoint.
	Latest Config
	// Metadata is that checkpoint's metadata.
	Metadata Metadata
	// UpdatedAt is that checkpoint's time.
	UpdatedAt time.Time
}

// PruneOptions says which checkpoints of a thread Prune keeps. Each
// namespace is pruned on its own, and its newest checkpoint is always kept.
// With both fields set, a checkpoint is deleted only when neither keeps it.
type PruneOptions struct {
	// KeepLatest keeps the newest KeepLatest checkpoints of each namespace.
	KeepLatest int
	// Before deletes checkpoints made before this time.
	Before time.Time
	// SubgraphsBefore, when set (a root checkpoint's id, such as the
	// thread's latest), deletes every checkpoint of every subgraph
	// namespace whose id is not greater, its namespace's newest too: what
	// the subgraph calls of the steps up to that checkpoint left, which
	// its state no longer needs. Subgraph checkpoints made after it (a
	// subgraph interrupted in the step that followed) are kept; KeepLatest
	// and Before then apply to the root namespace alone.
	SubgraphsBefore string
}

// ThreadDriver is the part of Driver that manages whole threads. Every
// method that changes a thread is fenced, as Put is, by FenceOwner of each
// thread it changes: in its transaction the driver checks that the lease
// still names that owner, and otherwise changes nothing and returns an
// error wrapping ErrLeaseLost.
type ThreadDriver interface {
	// ListThreads yields threads newest first (by their newest root
	// checkpoint), with the metadata of that checkpoint.
	ListThreads(ctx context.Context, filter ThreadFilter) iter.Seq2[ThreadInfo, error]
	// CopyThread copies every checkpoint, blob and write of thread from to
	// the thread to, which must have none. Checkpoint ids are kept.
	CopyThread(ctx context.Context, from, to string) error
	// Prune deletes the checkpoints opts does not keep, with their pending
	// writes and every stored value no kept checkpoint needs, and returns
	// how many checkpoints it deleted. Kept checkpoints read back exactly as
	// before.
	Prune(ctx context.Context, threadID string, opts PruneOptions) (int, error)
	// Rewind deletes every checkpoint of the thread, in every namespace,
	// whose id is greater than checkpointID (all of them when it is
	// empty), with their pending writes and every stored value no kept
	// checkpoint needs, and returns how many checkpoints it deleted. A
	// non-empty checkpointID must name a checkpoint of the thread, in any
	// namespace (ErrNotFound otherwise, with nothing deleted): a subgraph's
	// cuts the thread back to when that checkpoint was made. Kept checkpoints read
	// back exactly as before, and the thread goes on from them as if the
	// deleted ones had never been written.
	Rewind(ctx context.Context, threadID, checkpointID string) (int, error)
	// ReplaceWrites makes the pending writes of checkpoint cfg (which
	// must exist: ErrNotFound otherwise, with nothing changed) exactly
	// writes, in their order, as a Tuple of it read them earlier: every
	// write stored since is deleted and every special write replaced
	// since is back. Writes of one task that follow each other are stored
	// as one PutWrites of that task would store them.
	ReplaceWrites(ctx context.Context, cfg Config, writes []PendingWrite) error
	// PatchMetadata sets each key of extra in the Extra metadata of
	// checkpoint cfg (which must exist: ErrNotFound otherwise, with
	// nothing changed), keeping the keys extra does not name.
	PatchMetadata(ctx context.Context, cfg Config, extra map[string]any) error
}

// ListThreads yields the threads that have checkpoints, most recently
// updated first.
func (s *Saver) ListThreads(ctx context.Context, filter ThreadFilter) iter.Seq2[ThreadInfo, error] {
	if filter.Limit < 0 {
		return func(yield func(ThreadInfo, error) bool) {
			yield(ThreadInfo{}, fmt.Errorf("%w: thread list limit must be 0 (no limit) or positive, got %d", ErrInvalid, filter.Limit))
		}
	}
	return s.d.ListThreads(ctx, filter)
}

// CopyThread copies thread from, with its whole history, to thread to. It
// returns ErrNotFound if from has no checkpoint and ErrInvalid if to already
// has one. It owns both threads while it runs, as DeleteThread does: it
// fails with a *BusyError when another run holds either, unless ctx
// carries that lease.
func (s *Saver) CopyThread(ctx context.Context, from, to string) error {
	if err := needThread("copy thread", from); err != nil {
		return err
	}
	if to == "" {
		return fmt.Errorf("%w: copy thread needs a destination thread id, got none", ErrInvalid)
	}
	if from == to {
		return fmt.Errorf("%w: copy thread: source and destination are both %q", ErrInvalid, from)
	}
	// Both threads are owned, in one order, so that two copies between
	// the same threads cannot each hold one.
	a, b := from, to
	if b < a {
		a, b = b, a
	}
	ctx, done, err := s.own(ctx, "copy thread", a, b)
	if err != nil {
		return err
	}
	return done(s.d.CopyThread(ctx, from, to))
}

// Prune deletes old checkpoints of a thread, as opts says, and returns how
// many it deleted. The checkpoints it keeps read back exactly as before.
// It owns the thread while it runs, as DeleteThread does.
func (s *Saver) Prune(ctx context.Context, threadID string, opts PruneOptions) (int, error) {
	if err := needThread("prune", threadID); err != nil {
		return 0, err
	}
	if opts.KeepLatest < 0 {
		return 0, fmt.Errorf("%w: prune KeepLatest must be 0 (unset) or positive, got %d", ErrInvalid, opts.KeepLatest)
	}
	if opts.KeepLatest == 0 && opts.Before.IsZero() && opts.SubgraphsBefore == "" {
		return 0, fmt.Errorf("%w: prune needs KeepLatest, Before or SubgraphsBefore; with none it would keep everything", ErrInvalid)
	}
	ctx, done, err := s.own(ctx, "prune", threadID)
	if err != nil {
		return 0, err
	}
	n, err := s.d.Prune(ctx, threadID, opts)
	return n, done(err)
}

// Rewind takes a thread back to when checkpoint checkpointID was made: it
// deletes every checkpoint made after it (ids are time-ordered), in every
// namespace, so subgraph checkpoints too, with their pending writes and
// the stored values no kept checkpoint needs, and returns how many
// checkpoints it deleted. checkpointID is usually one of the root graph's,
// the one the next run goes on from; a subgraph's cuts the thread where
// that subgraph was (a server's rollback of a run that resumed an
// interrupt inside a subgraph keeps the subgraph's checkpoints made before
// the run). An empty checkpointID deletes every checkpoint of the thread
// (for a run on a thread that had none). The kept checkpoints read back
// exactly as before. A checkpointID the thread does not have is
// ErrNotFound, and nothing is deleted.
//
// It is what a server's "rollback" strategy and the cancelling of a run
// with rollback call, holding the thread's lease in ctx (WithLease), which
// fences it as it fences Put. Without that lease it owns the thread while
// it runs, as DeleteThread does: it fails with a *BusyError when another
// run holds it.
func (s *Saver) Rewind(ctx context.Context, threadID, checkpointID string) (int, error) {
	if err := needThread("rewind", threadID); err != nil {
		return 0, err
	}
	ctx, done, err := s.own(ctx, "rewind", threadID)
	if err != nil {
		return 0, err
	}
	n, err := s.d.Rewind(ctx, threadID, checkpointID)
	return n, done(err)
}

// RestoreWrites makes the pending writes of checkpoint cfg exactly writes,
// the PendingWrites of a Tuple of it read earlier: what was written to it
// since is deleted, and what was replaced since is back. It undoes what a
// run wrote to the checkpoint it started from, which Rewind keeps: a
// server's rollback of a run that resumed an interrupt restores the
// interrupted checkpoint's writes as they were before the run, so the
// resume value and the writes of the tasks the run finished are gone and
// the thread waits at its interrupt again. cfg must name a checkpoint
// (ErrNotFound when it does not exist). Each write names its task and
// channel, and its value, if any, is JSON; a task writes a special channel
// at most once (ErrInvalid otherwise, with nothing changed). It owns the
// thread while it runs, as Rewind does, or is fenced by the lease ctx
// carries.
func (s *Saver) RestoreWrites(ctx context.Context, cfg Config, writes []PendingWrite) error {
	if err := needThread("restore writes", cfg.ThreadID); err != nil {
		return err
	}
	if cfg.CheckpointID == "" {
		return fmt.Errorf("%w: restore writes: no checkpoint id given for thread %q", ErrInvalid, cfg.ThreadID)
	}
	// A task writes each special channel once (a second write replaces
	// the first), as a Tuple reads them: specials holds those seen.
	type special struct{ task, channel string }
	specials := map[special]bool{}
	for i, w := range writes {
		if w.TaskID == "" || w.Channel == "" {
			return fmt.Errorf("%w: restore writes: write %d has no task id or channel (task %q, channel %q)", ErrInvalid, i, w.TaskID, w.Channel)
		}
		if w.Value != nil && !json.Valid(w.Value) {
			return notJSON(fmt.Sprintf("restore writes: write %d (channel %q) of task %s", i, w.Channel, w.TaskID), w.Value)
		}
		if IsSpecialChannel(w.Channel) {
			k := special{w.TaskID, w.Channel}
			if specials[k] {
				return fmt.Errorf("%w: restore writes: write %d is task %s's second write to %s; a task has at most one write to each special channel", ErrInvalid, i, w.TaskID, w.Channel)
			}
			specials[k] = true
		}
	}
	ctx, done, err := s.own(ctx, "restore writes", cfg.ThreadID)
	if err != nil {
		return err
	}
	return done(s.d.ReplaceWrites(ctx, cfg, writes))
}

// reservedMetadata are the metadata keys a checkpoint's own fields hold
// (Metadata's Source, Step and Parents, and the ids LangGraph puts
// beside them): PatchMetadata refuses them.
var reservedMetadata = []string{"source", "step", "parents", "thread_id", "checkpoint_id", "checkpoint_ns"}

// PatchMetadata sets each key of extra in the caller-supplied metadata
// (Metadata.Extra) of checkpoint cfg, or of the latest checkpoint of cfg's
// namespace when cfg.CheckpointID is empty, and returns the address of
// the checkpoint it patched: LangGraph Platform's PATCH
// /threads/{id}/state, which tags a state (a bookmark, a rating) after
// the fact. Keys extra does not name are kept; a key set to nil is stored
// as null. The checkpoint's own fields cannot be patched: a key among
// source, step, parents, thread_id, checkpoint_id and checkpoint_ns is
// ErrInvalid, as is a value that is not JSON. A thread with no checkpoint
// is ErrNotFound. It owns the thread while it runs, as Rewind does.
func (s *Saver) PatchMetadata(ctx context.Context, cfg Config, extra map[string]any) (Config, error) {
	if err := needThread("patch metadata", cfg.ThreadID); err != nil {
		return Config{}, err
	}
	for k := range extra {
		if slices.Contains(reservedMetadata, k) {
			return Config{}, fmt.Errorf("%w: patch metadata: %q is a checkpoint's own field, not caller metadata; patch other keys", ErrInvalid, k)
		}
	}
	if _, err := json.Marshal(extra); err != nil {
		return Config{}, fmt.Errorf("%w: patch metadata: the values must be JSON: %v", ErrInvalid, err)
	}
	ctx, done, err := s.own(ctx, "patch metadata", cfg.ThreadID)
	if err != nil {
		return Config{}, err
	}
	if cfg.CheckpointID == "" {
		t, err := s.d.Get(ctx, cfg)
		if err != nil {
			return Config{}, done(err)
		}
		if t == nil {
			return Config{}, done(fmt.Errorf("%w: patch metadata: thread %q has no checkpoint in namespace %q", ErrNotFound, cfg.ThreadID, cfg.Namespace))
		}
		cfg = t.Config
	}
	return cfg, done(s.d.PatchMetadata(ctx, cfg, extra))
}

// PruneKeeps reports which of namespace ns's checkpoints opts keeps. ids
// and times are in id order, oldest first; the newest is always kept,
// except in a subgraph namespace SubgraphsBefore cuts. Drivers share it so
// every backend prunes alike.
func PruneKeeps(opts PruneOptions, ns string, ids []string, times []time.Time) []bool {
	keep := make([]bool, len(ids))
	if ns != "" && opts.SubgraphsBefore != "" {
		for i, id := range ids {
			keep[i] = id > opts.SubgraphsBefore
		}
		return keep
	}
	if opts.KeepLatest == 0 && opts.Before.IsZero() {
		// SubgraphsBefore alone: the other namespaces stay whole.
		for i := range keep {
			keep[i] = true
		}
		return keep
	}
	for i := range ids {
		switch {
		case i == len(ids)-1:
			keep[i] = true
		case opts.KeepLatest > 0 && i >= len(ids)-opts.KeepLatest:
			keep[i] = true
		case !opts.Before.IsZero() && !times[i].Before(opts.Before):
			keep[i] = true
		}
	}
	return keep
}

// jsonShaped is a constant-time plausibility check of a JSON value: it
// starts and ends as one. It catches empty, text and truncated values.
func jsonShaped(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false
	}
	first, last := b[0], b[len(b)-1]
	switch first {
	case '{':
		return last == '}'
	case '[':
		return last == ']'
	case '"':
		return len(b) >= 2 && last == '"'
	case 't', 'f', 'n':
		return string(b) == "true" || string(b) == "false" || string(b) == "null"
	default:
		return first == '-' || (first >= '0' && first <= '9')
	}
}

// notJSONShaped is the error for a value, named by what, that jsonShaped
// refused.
func notJSONShaped(what string, b json.RawMessage) error {
	return fmt.Errorf("%w: %s is not a JSON value: %.40q", ErrInvalid, what, bytes.TrimSpace(b))
}

// notJSON is the error for a value, named by what, that is not one
// well-formed JSON value (json.Valid).
func notJSON(what string, b json.RawMessage) error {
	return fmt.Errorf("%w: %s is not valid JSON: %.40q", ErrInvalid, what, b)
}
