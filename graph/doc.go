// Package graph runs graphs with LangGraph's execution model: typed state in
// channels, nodes run in supersteps, interrupts for humans, and checkpoints
// that let a run stop and continue.
//
// # State: channels and reducers
//
// A graph's state is a set of named, typed channels. Each channel says how
// the writes of one step combine: Value takes one write per step (two fail
// with ErrInvalidUpdate, naming the channel), Reduce folds writes with a
// function, Topic collects them, Messages merges chat messages by id, and
// Ephemeral lasts one step. Nodes read the state through the channels
// (Plan.Get(s)) and write through them (Plan.Write(p)); an Update is a
// set of such writes, combined with And. A write of a zero value is a write.
//
//	plan := graph.Value[*Plan]("plan")
//	log := graph.Reduce("log", func(cur, upd []string) []string { return append(cur, upd...) })
//	b := graph.New(plan, log)
//
// # Supersteps
//
// A run proceeds in supersteps. In each, every node triggered by the last
// step's writes runs, in parallel, on the state as of the start of the
// step; no node sees another's writes of the same step. (A node that took
// microseconds last time may run on the run's own goroutine, when nothing
// streams during the step: cheaper than a hand-off to another thread.) When all are done
// their writes are applied, in a fixed order (node name, then Send index),
// not in completion order, and the channels they changed trigger the next
// step. The run ends when no node is triggered, or fails with
// ErrRecursionLimit after RunOptions.RecursionLimit steps. A step whose
// node fails fails the run; the writes of its nodes that did succeed are
// kept as pending writes, so a retry does not run them again.
//
// # Nodes, edges, Send and Goto
//
// AddNode adds a NodeFunc; AddEdge(a, b) runs b after a; AddJoin runs a node
// once all its sources ran; AddConditionalEdges lets a Router choose the
// next nodes from the state. A node can also route itself: Goto("x") in its
// Update, or SendTo(Send{Node, Arg}) to start one task of a node per Send,
// each with its own input (map-reduce). NodeOptions add retries, a timeout,
// caching, an error handler, and Defer (run only once nothing else is left).
// AddSubgraph runs a compiled graph as one node; Update.ToParent addresses
// the parent graph from inside it.
//
// # Interrupts and resume
//
// A node asks a human with Ask (or Interrupt, which returns an error to pass
// on): the run stops, its result's Interrupts carry the question, and the
// thread waits. Invoke with Resume(answer) (ResumeByID for several) runs the
// node again from its top, where Ask now returns the answer; code before it
// runs again, so it should be safe to repeat. Resume(v).And(update) also
// applies an update first. Static breakpoints (CompileOptions or
// RunOptions InterruptBefore/InterruptAfter) stop before or after named
// nodes; Invoke with the zero Update continues.
//
// # Checkpoints and threads
//
// A graph compiled with a checkpoint.Saver saves a checkpoint after every
// step, per thread (RunOptions.ThreadID): a conversation's memory, the
// place an interrupted run waits, and its history. GetState reads a
// checkpoint, GetStateHistory lists them, UpdateState and BulkUpdateState
// write new ones as if nodes had returned updates, and At(cfg) runs from any
// of them: replay, or a fork of the thread's history. RunOptions.Durability
// says when saves happen.
//
// # Streaming
//
// Stream runs like Invoke and yields Events as they happen, in the modes
// RunOptions.StreamModes selects: values (the state after each step),
// updates (each node's writes), messages (model tokens and messages),
// custom (Emit), tasks, checkpoints and debug. Event's methods (Values,
// Update, Message, ...) and CustomAs give each mode's data typed.
// RunOptions.Subgraphs adds subgraph events, tagged with their namespace.
// Breaking out of the loop cancels the run.
package graph
