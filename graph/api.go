package graph

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"sync"

	"github.com/weftlabs/weft/checkpoint"
)

// Invoke runs the graph to the end (or to an interrupt) and returns its
// final state. The input is an Update: channel writes for a new run,
// Resume(v) to answer an interrupt, or the zero Update to continue from the
// thread's checkpoint. When the run stopped for a human, the returned
// state's Interrupts say why.
//
// opts may be nil for the defaults (a graph without a checkpointer).
func (g *Graph) Invoke(ctx context.Context, in Update, opts *RunOptions) (State, error) {
	o, err := g.runOptions(ctx, opts)
	if err != nil {
		return State{}, err
	}
	o.StreamModes = nil
	r, err := g.newRun(o)
	if err != nil {
		return State{}, err
	}
	ctx, release, err := g.ownThread(ctx, o)
	if err != nil {
		return State{}, err
	}
	defer release(nil)
	out, err := r.execute(ctx, in)
	if err = release(err); err != nil {
		return State{}, err
	}
	return out.state, nil
}

// Stream runs the graph like Invoke and yields its events as they happen,
// in the modes RunOptions.StreamModes selects (default: updates). An error
// ends the stream as its last item. Stopping the iteration early cancels
// the run.
func (g *Graph) Stream(ctx context.Context, in Update, opts *RunOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		o, err := g.runOptions(ctx, opts)
		if err != nil {
			yield(Event{}, err)
			return
		}
		if len(o.StreamModes) == 0 {
			o.StreamModes = []StreamMode{StreamUpdates}
		}
		r, err := g.newRun(o)
		if err != nil {
			yield(Event{}, err)
			return
		}
		ctx, release, err := g.ownThread(ctx, o)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer release(nil)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// Once the consumer stops, or this function returns, yield must not
		// be called again: a node may still emit (an Emit after the break,
		// a subgraph's events, a node that outlived its timeout), so every
		// event goes through this guard, one at a time.
		var mu sync.Mutex
		done := false
		defer func() {
			mu.Lock()
			done = true
			mu.Unlock()
		}()
		// A panic in the consumer's loop body is the consumer's, not a
		// node's: it travels out of the nodes' recovers wrapped as a
		// consumerPanic (every yield happens on this goroutine, see
		// callNode) and leaves here as itself. Each hop raises it again
		// inside its deferred call, so its stack is never unwound until
		// the consumer's code handles it.
		defer func() {
			if p := recover(); p != nil {
				if cp, ok := p.(*consumerPanic); ok {
					panic(cp.value)
				}
				panic(p)
			}
		}()
		// offPanic is a loop body's panic on a goroutine a node started
		// (an Emit there): it cannot travel from that goroutine, so this
		// one raises it once the run has returned.
		var offPanic *consumerPanic
		r.emit = func(ev Event) (ok bool) {
			mu.Lock()
			defer mu.Unlock()
			if done {
				return false
			}
			returned := false
			defer func() {
				if returned {
					return
				}
				// The loop body panicked (or called runtime.Goexit, which
				// recover cannot see and which goes on by itself): never
				// yield again.
				done = true
				cancel()
				if p := recover(); p != nil {
					if !onLoopGoroutine() {
						offPanic = &consumerPanic{value: p}
						return
					}
					panic(&consumerPanic{value: p})
				}
			}()
			more := yield(ev, nil)
			returned = true
			if !more {
				done = true
				cancel()
				return false
			}
			return true
		}
		_, err = r.execute(ctx, in)
		err = release(err)
		mu.Lock()
		stopped := done
		done = true
		cp := offPanic
		mu.Unlock()
		if cp != nil {
			panic(cp)
		}
		if err != nil && !stopped {
			yield(Event{}, err)
		}
	}
}

// consumerPanic carries a panic of a Stream consumer's loop body through the
// run back to the consumer.
type consumerPanic struct{ value any }

func (c *consumerPanic) Error() string {
	return fmt.Sprintf("graph: the loop body ranging over Stream panicked: %v", c.value)
}

// StateOptions configures GetState.
type StateOptions struct {
	// Subgraphs fills TaskState.State for subgraph tasks.
	Subgraphs bool
}

// GetState returns the state at a checkpoint: cfg.CheckpointID, or the
// thread's latest. For the latest, the writes of tasks that succeeded in a
// step that did not finish are shown applied.
func (g *Graph) GetState(ctx context.Context, cfg checkpoint.Config, opts *StateOptions) (StateSnapshot, error) {
	if g.saver == nil {
		return StateSnapshot{}, fmt.Errorf("%w: GetState reads checkpoints: compile the graph with CompileOptions.Checkpointer", ErrNoCheckpointer)
	}
	so := deref(opts)
	r, err := g.newRun(RunOptions{ThreadID: cfg.ThreadID, RecursionLimit: DefaultRecursionLimit})
	if err != nil {
		return StateSnapshot{}, err
	}
	r.ns = cfg.Namespace
	tp, err := r.load(ctx, cfg.CheckpointID)
	if err != nil {
		return StateSnapshot{}, err
	}
	if tp == nil {
		return StateSnapshot{Values: State{values: map[string]any{}}, Next: []string{}, Tasks: []TaskState{}, Interrupts: []Interruption{}, Config: cfg}, nil
	}
	return r.describe(ctx, cfg.CheckpointID == "", so)
}

func (r *run) describe(ctx context.Context, applyPending bool, so StateOptions) (StateSnapshot, error) {
	if err := r.applySavedNullWrites(); err != nil {
		return StateSnapshot{}, err
	}
	tasks := r.prepare()
	if err := r.matchPending(tasks); err != nil {
		return StateSnapshot{}, err
	}
	snap := r.snapshotOf(tasks, applyPending)
	if so.Subgraphs {
		for i, ts := range snap.Tasks {
			t := tasks[indexOfTask(tasks, ts.ID)]
			if t.node.sub == nil {
				continue
			}
			sub := t.node.sub
			s := sub
			if s.saver == nil {
				// The subgraph saves through its parent's saver.
				cp := *s
				cp.saver = r.saver
				s = &cp
			}
			st, err := s.GetState(ctx, checkpoint.Config{ThreadID: r.opts.ThreadID, Namespace: t.ns}, &so)
			if err != nil {
				return StateSnapshot{}, err
			}
			if st.Config.CheckpointID != "" {
				snap.Tasks[i].State = &st
			}
		}
	}
	return snap, nil
}

func indexOfTask(tasks []*task, id string) int {
	for i, t := range tasks {
		if t.id == id {
			return i
		}
	}
	return -1
}

// HistoryOptions narrows GetStateHistory.
type HistoryOptions struct {
	// Before lists only checkpoints older than this checkpoint id.
	Before string
	// Limit caps the number of snapshots; 0 means all.
	Limit int
	// Filter keeps checkpoints whose metadata has these values ("source",
	// "step", or RunOptions.Metadata keys).
	Filter map[string]any
}

// GetStateHistory yields a thread's snapshots, newest first.
func (g *Graph) GetStateHistory(ctx context.Context, threadID string, opts *HistoryOptions) iter.Seq2[StateSnapshot, error] {
	return func(yield func(StateSnapshot, error) bool) {
		if g.saver == nil {
			yield(StateSnapshot{}, fmt.Errorf("%w: GetStateHistory reads checkpoints: compile the graph with CompileOptions.Checkpointer", ErrNoCheckpointer))
			return
		}
		ho := deref(opts)
		root := ""
		list := func(ctx context.Context) iter.Seq2[*checkpoint.Tuple, error] {
			return g.saver.List(ctx, threadID, checkpoint.ListOptions{Namespace: &root, Before: ho.Before, Limit: ho.Limit, Filter: ho.Filter})
		}
		for tp, err := range boundedList(ctx, "list checkpoints", g.saverTimeout, list) {
			if err != nil {
				yield(StateSnapshot{}, err)
				return
			}
			r, err := g.newRun(RunOptions{ThreadID: threadID, RecursionLimit: DefaultRecursionLimit})
			if err == nil {
				r.reset()
				err = r.restore(tp)
			}
			if err != nil {
				yield(StateSnapshot{}, err)
				return
			}
			snap, err := r.describe(ctx, false, StateOptions{})
			if !yield(snap, err) || err != nil {
				return
			}
		}
	}
}

// UpdateState writes u to the thread's state at cfg (its latest checkpoint
// when cfg.CheckpointID is empty) as if node asNode had returned it: the
// node's edges and conditional edges fire, so the next step runs what would
// follow asNode, and nodes that were already due stay due. The result is a
// new checkpoint, returned; at an older checkpoint this forks the thread's
// history. asNode may be empty when the graph can tell which node ran last;
// END clears the pending tasks; START applies u as the START node would (its
// writes, and its edges to the first nodes); INPUT records u as a run's
// input, which the next step hands to START. Run from the returned config
// with RunOptions.At.
func (g *Graph) UpdateState(ctx context.Context, cfg checkpoint.Config, u Update, asNode string) (checkpoint.Config, error) {
	return g.BulkUpdateState(ctx, cfg, [][]StateUpdate{{{Update: u, AsNode: asNode}}})
}

// StateUpdate is one update of a BulkUpdateState superstep: u as if node
// AsNode had returned it.
type StateUpdate struct {
	Update Update
	// AsNode is the node the update is made as: a node, START, END or
	// INPUT. It may be empty only for a superstep of one update, when the
	// graph can tell which node ran last.
	AsNode string
}

// BulkUpdateState applies several supersteps of updates, each saved as its
// own checkpoint, as UpdateState does for one (LangGraph's
// bulk_update_state). The updates of one superstep apply together, as the
// writes of the tasks of one step do. With INPUT, START and the graph's
// nodes in turn, it rebuilds a thread's history step for step: the
// checkpoints it makes have the values, next nodes and step numbers a run
// would have made. It returns the last checkpoint's config.
func (g *Graph) BulkUpdateState(ctx context.Context, cfg checkpoint.Config, supersteps [][]StateUpdate) (checkpoint.Config, error) {
	if g.saver == nil {
		return checkpoint.Config{}, fmt.Errorf("%w: UpdateState writes checkpoints: compile the graph with CompileOptions.Checkpointer", ErrNoCheckpointer)
	}
	if len(supersteps) == 0 {
		return checkpoint.Config{}, fmt.Errorf("%w: BulkUpdateState got no supersteps", ErrInvalidInput)
	}
	// An update is a write like a run's: it owns the thread, and fails at
	// once when a run does. Every superstep is made under the one lease.
	ctx, release, err := g.ownThread(ctx, RunOptions{ThreadID: cfg.ThreadID})
	if err != nil {
		return checkpoint.Config{}, err
	}
	defer release(nil)
	for i, ups := range supersteps {
		if len(ups) == 0 {
			return checkpoint.Config{}, fmt.Errorf("%w: superstep %d of BulkUpdateState has no updates", ErrInvalidInput, i)
		}
		next, err := g.updateStep(ctx, cfg, ups)
		if err != nil {
			if len(supersteps) > 1 {
				err = fmt.Errorf("superstep %d: %w", i, err)
			}
			return checkpoint.Config{}, err
		}
		cfg = next
	}
	return cfg, nil
}

// updateStep applies one superstep of updates and saves its checkpoint.
func (g *Graph) updateStep(ctx context.Context, cfg checkpoint.Config, ups []StateUpdate) (checkpoint.Config, error) {
	r, err := g.newRun(RunOptions{ThreadID: cfg.ThreadID, Durability: DurabilitySync, RecursionLimit: DefaultRecursionLimit})
	if err != nil {
		return checkpoint.Config{}, err
	}
	r.ns = cfg.Namespace
	r.persist = newPersister(ctx, false, g.saverTimeout, nil)
	defer r.persist.close()
	tp, err := r.load(ctx, cfg.CheckpointID)
	if err != nil {
		return checkpoint.Config{}, err
	}
	if err := r.applySavedNullWrites(); err != nil {
		return checkpoint.Config{}, err
	}
	asNode := ups[0].AsNode
	switch {
	case len(ups) > 1:
		for _, up := range ups {
			if up.AsNode == "" {
				return checkpoint.Config{}, fmt.Errorf("%w: a superstep of several updates needs AsNode on each", ErrInvalidInput)
			}
			if up.AsNode == START || up.AsNode == END || up.AsNode == INPUT {
				return checkpoint.Config{}, fmt.Errorf("%w: an update as %s must be the only update of its superstep", ErrInvalidInput, up.AsNode)
			}
		}
	case asNode == "":
		asNode, err = r.inferAsNode(tp)
		if err != nil {
			return checkpoint.Config{}, err
		}
		ups = []StateUpdate{{Update: ups[0].Update, AsNode: asNode}}
	}
	if tp == nil && asNode != INPUT {
		// As in LangGraph, an update on an empty thread is step 0; only an
		// input comes before it, at step -1.
		r.step = 0
	}
	switch asNode {
	case INPUT:
		u := ups[0].Update
		if err := r.checkInput(u); err != nil {
			return checkpoint.Config{}, err
		}
		t := &task{name: INPUT, writes: []write{{START, r.startWrites(u)}}}
		if err := r.apply([]*task{t}, false); err != nil {
			return checkpoint.Config{}, err
		}
		r.updatedUnknown()
		if err := r.newCheckpoint("input"); err != nil {
			return checkpoint.Config{}, err
		}
	case END:
		u := ups[0].Update
		tasks := r.prepare()
		if err := r.matchPending(tasks); err != nil {
			return checkpoint.Config{}, err
		}
		for _, t := range tasks {
			if !t.done {
				t.writes = nil
			}
		}
		t := &task{name: END, triggers: []string{interruptKey}}
		if err := r.routeWrites(ctx, t, u); err != nil {
			return checkpoint.Config{}, err
		}
		if err := r.apply(append(tasks, t), true); err != nil {
			return checkpoint.Config{}, err
		}
		r.updatedUnknown()
		if err := r.newCheckpoint("update"); err != nil {
			return checkpoint.Config{}, err
		}
	default:
		tasks := make([]*task, 0, len(ups))
		for i, up := range ups {
			n := g.nodes[up.AsNode]
			if n == nil {
				return checkpoint.Config{}, fmt.Errorf("%w: UpdateState as node %q: the graph has no such node (nodes: %v, or START, END, INPUT)", ErrInvalidInput, up.AsNode, g.Nodes())
			}
			if up.AsNode == START {
				// START writes any input channel; check them as input.
				if err := r.checkInput(up.Update); err != nil {
					return checkpoint.Config{}, err
				}
			}
			t := &task{name: up.AsNode, node: n, triggers: []string{interruptKey}, id: hashID(r.cpID, r.ns, "update", up.AsNode, strconv.Itoa(i))}
			if err := r.routeWrites(ctx, t, up.Update); err != nil {
				return checkpoint.Config{}, err
			}
			tasks = append(tasks, t)
		}
		if err := r.apply(tasks, true); err != nil {
			return checkpoint.Config{}, err
		}
		r.updatedUnknown()
		if err := r.newCheckpoint("update"); err != nil {
			return checkpoint.Config{}, err
		}
	}
	if err := r.persist.close(); err != nil {
		return checkpoint.Config{}, err
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, Namespace: r.ns, CheckpointID: r.lastSaved}, nil
}

// inferAsNode picks the node that ran last, as LangGraph does: the only
// node, START on an empty thread, or the node that saw the newest version.
func (r *run) inferAsNode(tp *checkpoint.Tuple) (string, error) {
	if len(r.g.nodeList) == 2 {
		return r.g.nodeList[1].name, nil
	}
	if tp == nil {
		return START, nil
	}
	best, bestV, tie := "", int64(0), false
	for name, seen := range r.seen {
		if r.g.nodes[name] == nil {
			continue
		}
		for _, v := range seen {
			switch {
			case v > bestV:
				best, bestV, tie = name, v, false
			case v == bestV && name != best:
				tie = true
			}
		}
	}
	if best == "" {
		return START, nil
	}
	if tie {
		return "", fmt.Errorf("%w: UpdateState cannot tell which node ran last (several saw version %d); pass asNode", ErrInvalidInput, bestV)
	}
	return best, nil
}
