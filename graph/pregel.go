package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// interruptKey is the versions_seen entry that records what static
// interrupts have already stopped for.
const interruptKey = checkpoint.InterruptChannel

// run is one execution of a graph (or of a subgraph inside a parent task).
// It is made of five parts, each owning one concern; their fields are
// promoted, so code reads r.step or r.cpID whatever part holds it:
//
//   - runScope: what runs and where (graph, options, thread namespace,
//     static interrupts); fixed once the run starts.
//   - channelState: the channels' values and versions, which each step
//     reads and folds its writes into.
//   - stepLoop: where the loop is (step, limit) and how it started
//     (resume values, replay).
//   - checkpointCursor: the current checkpoint, what the saver already
//     has, and the persister that writes to it.
//   - streamSink: where events go and whether the consumer still reads.
//
// Only the loop goroutine touches a run; tasks on other goroutines reach
// it through their taskCtx (see runTasks).
type run struct {
	runScope
	channelState
	stepLoop
	checkpointCursor
	streamSink
}

// runScope is what a run executes and where: fixed once it starts.
type runScope struct {
	g     *Graph
	opts  RunOptions
	saver *checkpoint.Saver
	ns    string   // checkpoint namespace: "" for the root
	path  []string // ns split on "|", for events
	// parents maps ancestor namespaces to their current checkpoint ids.
	parents map[string]string
	sub     bool
	// alive, in a subgraph, reports whether the parent task's attempt
	// still counts: a subgraph its timeout abandoned may run on, and must
	// not write into the namespace the next attempt uses.
	alive func() bool
	// before and after name the nodes static interrupts stop at.
	before map[string]bool
	after  map[string]bool
}

// channelState is the graph's channels as of the current step: their
// values (slots), versions, and what each node has seen of them.
type channelState struct {
	slots    map[string]slot
	versions map[string]int64
	seen     map[string]map[string]int64
	maxVer   int64
	// updated lists the channels the last step changed; all means unknown
	// (restored from a checkpoint without the list).
	updated    []string
	updatedAll bool
	// snapshot caches the state view of the current step (state()).
	snapshot State
	// snapshotOK says snapshot holds the current step's view.
	snapshotOK bool
}

// stepLoop is where the step loop stands and how the run began.
type stepLoop struct {
	// step is the current superstep; the run fails past stop.
	step, stop int
	// resume holds the resume values of this invocation.
	resume *resumeState
	// replaying is set when the run re-executes the steps after an older
	// checkpoint (a replay or a fork): saved writes are not reused.
	replaying bool
	// inputFlushed is set once the run waited for its first checkpoints
	// to be stored, before its first step.
	inputFlushed bool
}

// checkpointCursor is the run's place in the thread's history: the
// current checkpoint, what the saver already holds, and the persister
// that makes the writes.
type checkpointCursor struct {
	// The current checkpoint: id, time, metadata, and its parent's id.
	cpID     string
	cpTS     time.Time
	cpMeta   checkpoint.Metadata
	cpParent string
	cpSaved  bool
	// lastSaved is the id of the newest checkpoint the saver has.
	lastSaved string
	// saved records each channel's version in the newest saved checkpoint.
	saved map[string]int64
	// pending are the current checkpoint's pending writes.
	pending []checkpoint.PendingWrite
	persist *persister
	// enc encodes a save's channel values: zeroed for each save (its
	// caches hold what one save's values share), kept here rather than
	// allocated each time.
	enc valueEncoder
}

// streamSink is where a run's events go.
type streamSink struct {
	// emit passes an event to the consumer (nil: nobody reads, as in
	// Invoke); false means the consumer stopped.
	emit  func(Event) bool
	modes modeSet
	// stopped is set when the consumer of a stream stopped reading.
	stopped bool
}

// resumeState holds the resume values of one invocation, shared by the
// root run and its subgraphs.
type resumeState struct {
	mu    sync.Mutex
	value json.RawMessage
	has   bool
	used  bool
	byID  map[string]json.RawMessage
}

func (rs *resumeState) take(id string) (json.RawMessage, bool) {
	if rs == nil {
		return nil, false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if v, ok := rs.byID[id]; ok {
		delete(rs.byID, id)
		return v, true
	}
	if rs.has && !rs.used {
		rs.used = true
		return rs.value, true
	}
	return nil, false
}

type taskKind uint8

const (
	pullTask taskKind = iota
	pushTask
)

type task struct {
	id       string
	name     string
	node     *node
	kind     taskKind
	idx      int
	input    State
	triggers []string
	// ns is the task's own namespace: its subgraph's, and its interrupts'.
	ns string

	update     Update
	writes     []write
	err        error
	interrupts []Interruption
	resumes    []json.RawMessage
	// done means the writes came from pending writes or the cache.
	done   bool
	cached bool
	emit   func(Event) bool
	// streamed holds the ids of messages the node streamed itself.
	streamed map[string]bool
	// handled is set when OnError's update stands in for the node's.
	handled bool
	// committed is set by the loop goroutine when the task finished and
	// was committed; a task still running when its run is cancelled is
	// never touched again by the run.
	committed bool
	// claimed is set by whichever goroutine runs the task, in a step that
	// runClaiming runs; inline means the loop goroutine may (its node is
	// short).
	claimed atomic.Bool
	inline  bool
	// pathOnce makes pathV, the task's path (path), once for all the
	// messages the task streams, which may come from several goroutines.
	pathOnce sync.Once
	pathV    []any
}

// Interruption is a question a node asked a human with graph.Interrupt.
type Interruption struct {
	// ID identifies the interrupt for ResumeByID.
	ID string `json:"id"`
	// Value is what the node passed to Interrupt. After a restore from a
	// checkpoint it is the value's JSON-decoded form.
	Value any `json:"value"`
}

// InterruptValue returns what the node asked, as a T: the value it passed
// to Interrupt, or, for an interrupt read back from a checkpoint (GetState,
// a resumed run), that value's JSON form decoded into T.
func InterruptValue[T any](it Interruption) (T, error) {
	if v, ok := it.Value.(T); ok {
		return v, nil
	}
	var v T
	b, err := json.Marshal(it.Value)
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		return v, fmt.Errorf("%w: interrupt %s: value %T does not decode into %T: %v", ErrInvalidInput, it.ID, it.Value, v, err)
	}
	return v, nil
}

func (g *Graph) newRun(opts RunOptions) (*run, error) {
	r := &run{
		runScope:   runScope{g: g, opts: opts, saver: g.saver, before: g.before, after: g.after},
		streamSink: streamSink{modes: modesOf(opts.StreamModes)},
	}
	if opts.InterruptBefore != nil {
		r.before = toSet(opts.InterruptBefore)
	}
	if opts.InterruptAfter != nil {
		r.after = toSet(opts.InterruptAfter)
	}
	for _, set := range []map[string]bool{r.before, r.after} {
		for n := range set {
			if n != All && g.nodes[n] == nil {
				return nil, fmt.Errorf("%w: interrupt names unknown node %q", ErrInvalidInput, n)
			}
		}
	}
	if r.saver != nil && opts.ThreadID == "" {
		return nil, fmt.Errorf("%w: the graph has a checkpointer, so RunOptions.ThreadID is required", ErrInvalidInput)
	}
	return r, nil
}

// errAttemptEnded stops a subgraph whose parent attempt was abandoned.
var errAttemptEnded = errors.New("graph: the node attempt running this subgraph has ended")

func (r *run) live() bool { return r.alive == nil || r.alive() }

// reset starts the run from empty channels, before any checkpoint.
func (r *run) reset() {
	r.channelState.reset(r.g.decls)
	r.saved = make(map[string]int64)
	r.step = -1
	r.cpMeta = checkpoint.Metadata{Step: -2}
	r.cpID = checkpoint.NewID()
}

// reset empties the channels: a fresh slot for each declared one.
func (c *channelState) reset(decls map[string]Channel) {
	c.slots = make(map[string]slot, len(decls))
	for name, d := range decls {
		c.slots[name] = d.newSlot()
	}
	c.versions = make(map[string]int64)
	c.seen = make(map[string]map[string]int64)
	c.maxVer = 0
}

func (r *run) cfg() checkpoint.Config {
	return checkpoint.Config{ThreadID: r.opts.ThreadID, Namespace: r.ns}
}

// load restores the run from the saver: the given checkpoint or the latest.
func (r *run) load(ctx context.Context, checkpointID string) (*checkpoint.Tuple, error) {
	r.reset()
	if r.saver == nil {
		return nil, nil
	}
	c := r.cfg()
	c.CheckpointID = checkpointID
	var tp *checkpoint.Tuple
	err := r.g.boundSaverCall(ctx, "get checkpoint", func(ctx context.Context) (err error) {
		tp, err = r.saver.Get(ctx, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if tp == nil {
		return nil, nil
	}
	if err := r.restore(tp); err != nil {
		return nil, err
	}
	return tp, nil
}

func (r *run) restore(tp *checkpoint.Tuple) error {
	cp := tp.Checkpoint
	for ch, data := range cp.Values {
		s, ok := r.slots[ch]
		if !ok {
			// A channel the graph no longer has: its value is kept in
			// storage but not loaded.
			continue
		}
		if err := s.unmarshal(data); err != nil {
			return fmt.Errorf("graph: cannot decode channel %q of %s: %w", ch, tp.Config, err)
		}
	}
	r.versions = maps.Clone(cp.Versions)
	if r.versions == nil {
		r.versions = map[string]int64{}
	}
	for _, v := range r.versions {
		r.maxVer = max(r.maxVer, v)
	}
	r.seen = make(map[string]map[string]int64, len(cp.VersionsSeen))
	for k, v := range cp.VersionsSeen {
		r.seen[k] = maps.Clone(v)
	}
	r.saved = maps.Clone(r.versions)
	for ch := range r.versions {
		if a, ok := r.slots[ch].(interface{ markSaved() }); ok {
			a.markSaved()
		}
	}
	r.updated = cp.UpdatedChannels
	r.updatedAll = cp.UpdatedChannels == nil
	r.cpID, r.cpTS, r.cpMeta = cp.ID, cp.TS, tp.Metadata
	if tp.Parent != nil {
		r.cpParent = tp.Parent.CheckpointID
	}
	r.cpSaved = true
	r.lastSaved = cp.ID
	r.pending = tp.PendingWrites
	r.step = tp.Metadata.Step + 1
	r.snapshot, r.snapshotOK = State{}, false
	return nil
}

// state returns the step's state view of the graph's state channels.
func (r *run) state() State {
	if r.snapshotOK {
		return r.snapshot
	}
	m := make(map[string]any, len(r.g.stateKeys))
	for _, k := range r.g.stateKeys {
		if v, ok := r.slots[k].get(); ok {
			m[k] = v
		}
	}
	r.snapshot, r.snapshotOK = State{values: m}, true
	return r.snapshot
}

func (r *run) output(interrupts []Interruption) State {
	st := r.state()
	if len(r.g.outputKeys) != len(r.g.stateKeys) {
		m := make(map[string]any, len(r.g.outputKeys))
		for _, k := range r.g.outputKeys {
			if v, ok := st.values[k]; ok {
				m[k] = v
			}
		}
		st = State{values: m}
	}
	st.interrupts = interrupts
	return st
}

// ---------------------------------------------------------------- ids

func hashID(parts ...string) string {
	h := fnv.New128a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var b [16]byte
	sum := h.Sum(b[:0])
	// Shape it as a version-8 UUID so it reads like the other ids.
	sum[6] = (sum[6] & 0x0f) | 0x80
	sum[8] = (sum[8] & 0x3f) | 0x80
	const hexd = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range sum {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hexd[c>>4], hexd[c&0xf]
		j += 2
	}
	return string(out)
}

// taskNS is a task's namespace: "node:taskid" under the run's own, or just
// the node's name for a subgraph that keeps its state, so that every call
// of it finds the same checkpoints.
func (r *run) taskNS(n *node, id string) string {
	own := n.name + ":" + id
	if n.sub != nil && n.sub.keepState {
		own = n.name
	}
	if r.ns == "" {
		return own
	}
	return r.ns + "|" + own
}

// ---------------------------------------------------------------- prepare

// prepare computes the tasks of the next step from the channels.
func (r *run) prepare() []*task {
	var tasks []*task
	stepStr := strconv.Itoa(r.step)
	st := r.state()
	// PULL: nodes whose triggers changed since they last ran.
	var candidates []*node
	if r.updatedAll {
		candidates = r.g.nodeList
	} else {
		for _, ch := range r.updated {
			for _, n := range r.g.triggers[ch] {
				if !slices.Contains(candidates, n) {
					candidates = append(candidates, n)
				}
			}
		}
		slices.SortFunc(candidates, func(a, b *node) int { return strings.Compare(a.name, b.name) })
	}
	for _, n := range candidates {
		if !r.triggered(n) {
			continue
		}
		id := hashID(r.cpID, r.ns, stepStr, n.name, "pull")
		t := &task{id: id, name: n.name, node: n, kind: pullTask, input: st, triggers: n.triggers}
		t.ns = r.taskNS(n, id)
		if n.name == START {
			ws, _ := r.slots[START].get()
			t.input = State{}
			t.writes, _ = ws.([]write)
		}
		tasks = append(tasks, t)
	}
	// PUSH: the Sends of the last step.
	if v, ok := r.slots[checkpoint.TasksChannel].get(); ok {
		for i, sd := range v.([]Send) {
			n := r.g.nodes[sd.Node]
			if n == nil {
				continue
			}
			id := hashID(r.cpID, r.ns, stepStr, n.name, "push", strconv.Itoa(i))
			t := &task{id: id, name: n.name, node: n, kind: pushTask, idx: i}
			t.ns = r.taskNS(n, id)
			t.input = r.sendInput(n, sd.Arg)
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// triggered reports whether one of n's triggers has a value n has not
// seen yet.
func (c *channelState) triggered(n *node) bool {
	seen := c.seen[n.name]
	for _, ch := range n.triggers {
		v := c.versions[ch]
		if v == 0 || v <= seen[ch] {
			continue
		}
		if c.slots[ch].hasValue() {
			return true
		}
	}
	return false
}

// sendInput builds the state a Send's task sees: the Send's writes applied
// to fresh channels.
func (r *run) sendInput(n *node, arg Update) State {
	m := make(map[string]any, len(arg.writes))
	byCh := map[string][]any{}
	var order []string
	for _, w := range arg.writes {
		if _, ok := byCh[w.ch]; !ok {
			order = append(order, w.ch)
		}
		byCh[w.ch] = append(byCh[w.ch], w.v)
	}
	for _, ch := range order {
		d := r.g.decl(n.name, ch)
		if d == nil {
			// Undeclared: pass the last value through as it is.
			vs := byCh[ch]
			m[ch] = vs[len(vs)-1]
			continue
		}
		s := d.newSlot()
		if _, err := s.update(ch, byCh[ch]); err == nil {
			if v, ok := s.get(); ok {
				m[ch] = v
			}
		}
	}
	return State{values: m}
}

// matchPending gives tasks the writes saved for them in the current
// checkpoint, so tasks that already succeeded are not run again.
func (r *run) matchPending(tasks []*task) error {
	if len(r.pending) == 0 {
		return nil
	}
	byID := make(map[string]*task, len(tasks))
	for _, t := range tasks {
		byID[t.id] = t
	}
	for _, pw := range r.pending {
		t := byID[pw.TaskID]
		if t == nil {
			continue
		}
		switch pw.Channel {
		case checkpoint.ErrorChannel, checkpoint.InterruptChannel:
		case checkpoint.ResumeChannel:
			if r.replaying {
				continue
			}
			var vals []json.RawMessage
			if err := json.Unmarshal(pw.Value, &vals); err != nil {
				return fmt.Errorf("graph: cannot decode resume values of task %s in %s: %w", t.id, r.cfg(), err)
			}
			t.resumes = vals
		case noWrites:
			if !r.replaying {
				t.done = true
			}
		default:
			if r.replaying {
				continue
			}
			ws, err := r.g.decodeWrites(t.name, []encodedWrite{{pw.Channel, pw.Value}})
			if err != nil {
				return fmt.Errorf("graph: pending write of task %s in %s: %w", t.id, r.cfg(), err)
			}
			t.done = true
			t.writes = append(t.writes, ws...)
		}
	}
	return nil
}

// noWrites marks a task that succeeded without writing anything.
const noWrites = "__no_writes__"

// ---------------------------------------------------------------- apply

func taskLess(a, b *task) bool {
	if a.kind != b.kind {
		return a.kind == pullTask
	}
	if a.kind == pullTask {
		return a.name < b.name
	}
	return a.idx < b.idx
}

// apply folds the writes of a finished step into the channels. It returns
// the channels that changed.
func (r *run) apply(tasks []*task, bumpStep bool) error {
	// In task order; a step of one task (most steps of a sequential graph)
	// needs no sorted copy.
	sorted := tasks
	if len(tasks) > 1 {
		sorted = slices.Clone(tasks)
		slices.SortStableFunc(sorted, func(a, b *task) int {
			switch {
			case taskLess(a, b):
				return -1
			case taskLess(b, a):
				return 1
			}
			return 0
		})
	}
	for _, t := range sorted {
		if len(t.triggers) == 0 {
			continue
		}
		seen := r.seen[t.name]
		if seen == nil {
			seen = make(map[string]int64, len(t.triggers))
			r.seen[t.name] = seen
		}
		for _, ch := range t.triggers {
			if v, ok := r.versions[ch]; ok {
				seen[ch] = v
			}
		}
	}
	next := r.maxVer + 1
	// Room for every channel: one allocation a step, not one per growth.
	updated := make([]string, 0, len(r.g.channels))
	bumped := false
	bump := func(ch string) {
		r.versions[ch] = next
		bumped = true
		// As in LangGraph, a channel still unavailable after the change (a
		// deferred node's trigger before finish, a join still waiting, a
		// consumed trigger) does not count as updated: it triggers nothing
		// yet, so it must not hold back the release of deferred nodes.
		if !r.slots[ch].hasValue() {
			return
		}
		if !slices.Contains(updated, ch) {
			updated = append(updated, ch)
		}
	}
	for _, t := range sorted {
		for _, ch := range t.triggers {
			if ch == interruptKey {
				continue
			}
			if s, ok := r.slots[ch]; ok && s.consume() {
				bump(ch)
			}
		}
	}
	// Group writes by channel, keeping task order: the channels in the
	// order first written, and each one's values, in task order, in one
	// list (a step writes a few channels: a map of lists cost a list per
	// channel, and the map).
	var order []string
	nw := 0
	for _, t := range sorted {
		for _, w := range t.writes {
			if !slices.Contains(order, w.ch) {
				order = append(order, w.ch)
			}
			nw++
		}
	}
	vals := make([]any, 0, nw)
	for _, ch := range order {
		start := len(vals)
		for _, t := range sorted {
			for _, w := range t.writes {
				if w.ch == ch {
					vals = append(vals, w.v)
				}
			}
		}
		s, ok := r.slots[ch]
		if !ok {
			continue
		}
		changed, err := s.update(ch, vals[start:len(vals):len(vals)])
		if err != nil {
			return err
		}
		if changed {
			bump(ch)
		}
	}
	if bumpStep {
		// Values that last one step (triggers, ephemeral channels, Sends)
		// clear if nothing wrote them again.
		var prev []string
		if r.updatedAll {
			prev = r.g.channels // the keys of r.slots
		} else {
			prev = r.updated
		}
		for _, ch := range prev {
			if slices.Contains(order, ch) { // written in this step
				continue
			}
			if s, ok := r.slots[ch]; ok {
				if changed, _ := s.update(ch, nil); changed {
					r.versions[ch] = next
					bumped = true
				}
			}
		}
		// Nothing left to trigger: release deferred nodes.
		if !r.triggersAny(updated) {
			for _, ch := range r.g.channels {
				if r.slots[ch].finish() {
					bump(ch)
				}
			}
		}
	}
	// Every channel changed in this step got the same next version.
	if bumped {
		r.maxVer = next
	}
	sort.Strings(updated)
	if len(updated) == 0 {
		updated = nil // none, as before the room was made
	}
	r.updated = updated
	r.updatedAll = false
	r.snapshot, r.snapshotOK = State{}, false
	return nil
}

// updatedUnknown makes the next step consider every node, not only those
// the last step's channels trigger. As in LangGraph, a checkpoint made by
// UpdateState records no updated channels: the update is not a step, so a
// node that was already due (a deferred node released earlier, a node
// waiting behind a static interrupt) stays due.
func (c *channelState) updatedUnknown() {
	c.updated, c.updatedAll = nil, true
}

func (r *run) triggersAny(chs []string) bool {
	for _, ch := range chs {
		if len(r.g.triggers[ch]) > 0 {
			return true
		}
		if ch == checkpoint.TasksChannel {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- checkpoints

// newCheckpoint starts the checkpoint for the step just applied and saves
// it unless durability is exit.
func (r *run) newCheckpoint(source string) error {
	r.cpParent = r.lastSaved
	r.cpID = checkpoint.NewID()
	r.cpTS = time.Now().UTC()
	r.cpMeta = checkpoint.Metadata{Source: source, Step: r.step, Parents: r.parents, Extra: r.opts.Metadata}
	r.cpSaved = false
	r.pending = nil
	if r.saver != nil && r.opts.Durability != DurabilityExit {
		if err := r.save(); err != nil {
			return err
		}
	}
	return nil
}

// save writes the current checkpoint, with the channels that changed since
// the last save. The write itself goes through the persister, with its
// context and bound.
func (r *run) save() error {
	if !r.live() {
		return errAttemptEnded
	}
	cp := &checkpoint.Checkpoint{
		V:               checkpoint.FormatVersion,
		ID:              r.cpID,
		TS:              r.cpTS,
		Versions:        maps.Clone(r.versions),
		VersionsSeen:    make(map[string]map[string]int64, len(r.seen)),
		UpdatedChannels: slices.Clone(r.updated),
	}
	for k, v := range r.seen {
		cp.VersionsSeen[k] = maps.Clone(v)
	}
	var blobs []checkpoint.Blob
	r.enc = valueEncoder{}
	enc := &r.enc
	// The graph's channels are those with slots: a version of another
	// channel (restored from a checkpoint of an older graph) has no value
	// to save.
	for _, ch := range r.g.channels {
		ver, ok := r.versions[ch]
		if !ok {
			continue
		}
		base, had := r.saved[ch]
		if had && base == ver {
			continue
		}
		s := r.slots[ch]
		if s == nil {
			continue
		}
		b := checkpoint.Blob{Channel: ch, Version: ver}
		if a, ok := s.(appender); ok && had {
			items, ok, err := a.delta()
			if err != nil {
				return fmt.Errorf("graph: cannot encode channel %q: %w", ch, err)
			}
			if ok {
				b.Appended, b.BaseVersion = items, base
				if b.Appended == nil {
					b.Appended = []json.RawMessage{}
				}
			}
		}
		if b.Appended == nil {
			data, ok, err := s.marshal(enc)
			if err != nil {
				return fmt.Errorf("graph: cannot encode channel %q: %w", ch, err)
			}
			b.Value, b.Empty = data, !ok
		}
		if a, ok := s.(appender); ok {
			a.markSaved()
		}
		if blobs == nil {
			// One allocation for the blobs instead of one per doubling.
			blobs = make([]checkpoint.Blob, 0, len(r.versions))
		}
		blobs = append(blobs, b)
	}
	c := r.cfg()
	c.CheckpointID = r.cpParent
	meta := r.cpMeta
	saver := r.saver
	if err := r.persist.do("put checkpoint", func(ctx context.Context) error {
		_, err := saver.Put(ctx, c, cp, meta, blobs)
		return err
	}); err != nil {
		// Sync durability: the checkpoint is not stored, so the run must
		// not go on as if it were.
		return fmt.Errorf("graph: saving checkpoint: %w", err)
	}
	// cp.Versions is this same copy of r.versions: neither the saver nor
	// the run changes it.
	r.saved = cp.Versions
	r.cpSaved = true
	r.lastSaved = r.cpID
	return nil
}

// putWrites saves a task's writes as pending writes of the current checkpoint.
func (r *run) putWrites(taskID string, pws []checkpoint.PendingWrite) {
	if r.saver == nil || !r.cpSaved || !r.live() {
		return
	}
	c := r.cfg()
	c.CheckpointID = r.cpID
	saver := r.saver
	// A failure is kept by the persister and stops the run before its
	// next step.
	_ = r.persist.do("put writes", func(ctx context.Context) error {
		return saver.PutWrites(ctx, c, taskID, pws)
	})
}

// taskPendingWrites encodes what a finished task leaves in pending writes.
func taskPendingWrites(t *task) ([]checkpoint.PendingWrite, error) {
	var out []checkpoint.PendingWrite
	switch {
	case isInterrupt(t.err) && len(t.interrupts) == 0:
		// A static interrupt inside a subgraph carries no payload: as in
		// LangGraph, nothing is saved for the task (no error), and it runs
		// again when the parent continues.
	case t.err != nil && len(t.interrupts) == 0:
		msg, _ := json.Marshal(t.err.Error())
		out = append(out, checkpoint.PendingWrite{Channel: checkpoint.ErrorChannel, Value: msg})
	case len(t.interrupts) > 0:
		b, err := json.Marshal(t.interrupts)
		if err != nil {
			return nil, fmt.Errorf("graph: cannot encode interrupt value of node %q: %w", t.name, err)
		}
		out = append(out, checkpoint.PendingWrite{Channel: checkpoint.InterruptChannel, Value: b})
	default:
		ews, err := encodeWrites(t.writes)
		if err != nil {
			return nil, fmt.Errorf("graph: node %q: %w", t.name, err)
		}
		for _, ew := range ews {
			out = append(out, checkpoint.PendingWrite{Channel: ew.Channel, Value: ew.Value})
		}
		if len(out) == 0 {
			out = append(out, checkpoint.PendingWrite{Channel: noWrites, Value: json.RawMessage("null")})
		}
	}
	if len(t.resumes) > 0 {
		b, _ := json.Marshal(t.resumes)
		out = append(out, checkpoint.PendingWrite{Channel: checkpoint.ResumeChannel, Value: b})
	}
	return out, nil
}

// ---------------------------------------------------------------- input

// pendingInterrupts lists the interrupts saved on the current checkpoint
// that no resume has answered yet.
func (r *run) pendingInterrupts() ([]Interruption, error) {
	// A task that was interrupted, resumed and then finished keeps its old
	// interrupt write next to its result: that interrupt is answered.
	finished := map[string]bool{}
	for _, pw := range r.pending {
		if !checkpoint.IsSpecialChannel(pw.Channel) {
			finished[pw.TaskID] = true
		}
	}
	var out []Interruption
	for _, pw := range r.pending {
		if pw.Channel != checkpoint.InterruptChannel || finished[pw.TaskID] {
			continue
		}
		var its []Interruption
		if err := json.Unmarshal(pw.Value, &its); err != nil {
			return nil, fmt.Errorf("graph: cannot decode interrupt of task %s in %s: %w", pw.TaskID, r.cfg(), err)
		}
		out = append(out, its...)
	}
	return out, nil
}

// start applies a run's input: new input starts a new run on the thread; a
// resume answers pending interrupts; no input continues from the checkpoint.
func (r *run) start(ctx context.Context, in Update) error {
	r.stop = r.step + r.opts.RecursionLimit + 1
	if err := r.applySavedNullWrites(); err != nil {
		return err
	}
	switch {
	case in.resume != nil:
		if r.saver == nil {
			return fmt.Errorf("%w: resuming needs a checkpointer: compile the graph with CompileOptions.Checkpointer", ErrNoCheckpointer)
		}
		if !r.cpSaved {
			return fmt.Errorf("%w: thread %q has no checkpoint to resume", ErrInvalidInput, r.opts.ThreadID)
		}
		pend, err := r.pendingInterrupts()
		if err != nil {
			return err
		}
		ids := map[string]bool{}
		for _, it := range pend {
			ids[it.ID] = true
		}
		rs := &resumeState{}
		if in.resume.byID != nil {
			rs.byID = make(map[string]json.RawMessage, len(in.resume.byID))
			for id, v := range in.resume.byID {
				if !ids[id] {
					return fmt.Errorf("%w: ResumeByID names interrupt %q, but the pending interrupts are %v", ErrInvalidInput, id, sortedKeys(ids))
				}
				b, err := json.Marshal(v)
				if err != nil {
					return fmt.Errorf("%w: resume value for %q cannot be encoded as JSON: %v", ErrInvalidInput, id, err)
				}
				rs.byID[id] = b
			}
		} else {
			if len(ids) == 0 {
				return fmt.Errorf("%w: Resume given, but thread %q has no pending interrupt", ErrInvalidInput, r.opts.ThreadID)
			}
			if len(ids) > 1 {
				return fmt.Errorf("%w: %d interrupts are pending (%s); resume them with graph.ResumeByID and a value per id", ErrInvalidInput, len(ids), strings.Join(sortedKeys(ids), ", "))
			}
			b, err := json.Marshal(in.resume.value)
			if err != nil {
				return fmt.Errorf("%w: resume value cannot be encoded as JSON: %v", ErrInvalidInput, err)
			}
			rs.value, rs.has = b, true
		}
		r.resume = rs
		r.resumeStatic()
		if len(in.writes) > 0 || len(in.gotos) > 0 || len(in.sends) > 0 {
			if err := r.applyNullWrites(ctx, in); err != nil {
				return err
			}
		}
		r.emitValues(nil)
		return nil
	case in.command:
		return r.startCommand(ctx, in)
	case in.input || len(in.writes) > 0 || len(in.gotos) > 0 || len(in.sends) > 0:
		if in.parent != nil {
			return fmt.Errorf("%w: the input is addressed to a parent graph (ToParent), but this graph has none", ErrInvalidInput)
		}
		if err := r.checkInput(in); err != nil {
			return err
		}
		// Tasks the old checkpoint had pending are dropped: their
		// triggers count as seen.
		discard := r.prepare()
		for _, t := range discard {
			t.writes = nil
		}
		inTask := &task{name: INPUT, writes: []write{{START, r.startWrites(in)}}}
		if err := r.apply(append(discard, inTask), true); err != nil {
			return err
		}
		if err := r.newCheckpoint("input"); err != nil {
			return err
		}
		r.step++
		return nil
	default:
		if r.saver == nil {
			return fmt.Errorf("%w: the zero Update continues a thread from its checkpoint, and the graph has no checkpointer; give the run some input, or compile the graph with CompileOptions.Checkpointer", ErrNoCheckpointer)
		}
		if !r.cpSaved {
			return fmt.Errorf("%w: thread %q has no checkpoint to continue from; give the run some input", ErrInvalidInput, r.opts.ThreadID)
		}
		switch {
		case r.opts.CheckpointID != "" && r.cpMeta.Source != "update" && r.cpMeta.Source != "fork":
			// Replay from an older checkpoint: everything after it runs
			// again, on a fork. A replay continues, so (as in LangGraph) it
			// passes a static breakpoint the checkpoint stopped at.
			r.resumeStatic()
			if err := r.fork(); err != nil {
				return err
			}
		case r.opts.CheckpointID != "":
			// The checkpoint is already a branch of its own (UpdateState
			// or a replay made it): as in LangGraph, run from it without
			// copying it again, re-running every task of its next step.
			r.replaying = true
			r.resumeStatic()
		default:
			r.resumeStatic()
		}
		r.emitValues(nil)
		return nil
	}
}

// startWrites are the writes an input hands to the START task: its channel
// writes, and its Gotos and Sends, which leave from START.
func (r *run) startWrites(in Update) []write {
	ws := slices.Clone(in.writes)
	for _, n := range in.gotos {
		if n != END {
			ws = append(ws, write{triggerName(n), true})
		}
	}
	for _, sd := range in.sends {
		ws = append(ws, write{checkpoint.TasksChannel, sd})
	}
	return ws
}

// resumeStatic records that static interrupts have stopped for the current
// channel versions, so continuing passes them.
func (c *channelState) resumeStatic() {
	c.seen[interruptKey] = maps.Clone(c.versions)
}

// fork copies the loaded checkpoint as a new child, so a replay writes a new
// branch of history and leaves the old one alone.
func (r *run) fork() error {
	r.replaying = true
	r.pending = nil
	// The fork's step follows the checkpoint it copies.
	if err := r.newCheckpoint("fork"); err != nil {
		return err
	}
	r.step++
	return nil
}

func (r *run) checkInput(in Update) error {
	allowed := r.g.inputKeys
	for _, w := range in.writes {
		if !slices.Contains(allowed, w.ch) {
			if r.g.decls[w.ch] == nil || !slices.Contains(r.g.stateKeys, w.ch) {
				return fmt.Errorf("%w: input writes channel %q, which the graph does not have (its channels: %s)", ErrInvalidInput, w.ch, strings.Join(r.g.stateKeys, ", "))
			}
			return fmt.Errorf("%w: input writes channel %q, which is not one of the graph's input channels (%s)", ErrInvalidInput, w.ch, strings.Join(allowed, ", "))
		}
	}
	for _, n := range in.gotos {
		if r.g.nodes[n] == nil && n != END {
			return fmt.Errorf("%w: input goes to unknown node %q", ErrInvalidInput, n)
		}
	}
	return nil
}

// applyNullWrites applies writes that come with a resume, before the step
// runs, without counting a step. As in LangGraph, they are saved as pending
// writes of the current checkpoint under checkpoint.NullTaskID, so a run
// that stops again in the same step (another interrupt, a failure) keeps
// them: the next run on the thread applies them again before its step.
func (r *run) applyNullWrites(ctx context.Context, in Update) error {
	if err := r.checkInput(in); err != nil {
		return err
	}
	t := &task{name: INPUT}
	if err := r.routeWrites(ctx, t, Update{writes: in.writes, gotos: in.gotos, sends: in.sends}); err != nil {
		return err
	}
	ews, err := encodeWrites(t.writes)
	if err != nil {
		return fmt.Errorf("%w: the update that comes with the resume: %v", ErrInvalidInput, err)
	}
	if err := r.applyBetweenSteps(t.writes); err != nil {
		return err
	}
	pws := make([]checkpoint.PendingWrite, len(ews))
	for i, ew := range ews {
		pws[i] = checkpoint.PendingWrite{TaskID: checkpoint.NullTaskID, Channel: ew.Channel, Value: ew.Value}
	}
	r.putWrites(checkpoint.NullTaskID, pws)
	r.pending = append(r.pending, pws...)
	return nil
}

// applySavedNullWrites applies the writes a resume's update left on the
// current checkpoint (see applyNullWrites).
func (r *run) applySavedNullWrites() error {
	var ews []encodedWrite
	for _, pw := range r.pending {
		if pw.TaskID == checkpoint.NullTaskID && !checkpoint.IsSpecialChannel(pw.Channel) {
			ews = append(ews, encodedWrite{pw.Channel, pw.Value})
		}
	}
	if len(ews) == 0 {
		return nil
	}
	ws, err := r.g.decodeWrites(START, ews)
	if err != nil {
		return fmt.Errorf("graph: pending update of %s: %w", r.cfg(), err)
	}
	return r.applyBetweenSteps(ws)
}

// applyBetweenSteps applies writes that belong to no step. The channels
// they change join those the last step changed, so the nodes either
// triggers run next.
func (r *run) applyBetweenSteps(ws []write) error {
	prev, all := r.updated, r.updatedAll
	if err := r.apply([]*task{{name: INPUT, writes: ws}}, false); err != nil {
		return err
	}
	if all {
		r.updated, r.updatedAll = nil, true
		return nil
	}
	for _, ch := range prev {
		if !slices.Contains(r.updated, ch) {
			r.updated = append(r.updated, ch)
		}
	}
	sort.Strings(r.updated)
	return nil
}
