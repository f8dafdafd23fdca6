package graph

import (
	"errors"
	"fmt"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrInvalidUpdate means a node's writes break a channel's rule, such
	// as two writes to a Value channel in one step.
	ErrInvalidUpdate = errors.New("graph: invalid update")
	// ErrInvalidGraph means the builder found a problem at Compile.
	ErrInvalidGraph = errors.New("graph: invalid graph")
	// ErrRecursionLimit means a run took more supersteps than its limit.
	ErrRecursionLimit = errors.New("graph: recursion limit reached")
	// ErrNoCheckpointer means an operation needs a checkpointer and the
	// graph was compiled without one.
	ErrNoCheckpointer = errors.New("graph: no checkpointer")
	// ErrInvalidInput means the input or options of a run are wrong.
	ErrInvalidInput = errors.New("graph: invalid input")
	// ErrNodeTimeout means a node ran longer than its NodeOptions.Timeout.
	ErrNodeTimeout = errors.New("graph: node timed out")
	// ErrInterrupted is what Interrupt returns to stop a node for a human.
	// A node returns it (or an error wrapping it) unchanged.
	ErrInterrupted = errors.New("graph: interrupted")
	// ErrAskOffNodeGoroutine means a node called Ask on a goroutine it
	// started, where Ask cannot stop the node; the node fails with it.
	ErrAskOffNodeGoroutine = errors.New("graph: Ask called off the node's goroutine")
)

// NodeError is a node's error with the node and task that returned it.
type NodeError struct {
	Node   string
	TaskID string
	Err    error
}

// Error names the node and gives its error.
func (e *NodeError) Error() string { return fmt.Sprintf("graph: node %q: %v", e.Node, e.Err) }

// Unwrap returns the node's own error.
func (e *NodeError) Unwrap() error { return e.Err }

// PanicError is a panic inside a node, turned into an error.
type PanicError struct {
	Value any
	Stack []byte
}

// Error gives the panic's value; Stack holds where it happened.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// RecursionError reports the limit a run reached.
type RecursionError struct{ Limit int }

// Error names the limit and what to do about it.
func (e *RecursionError) Error() string {
	return fmt.Sprintf("graph: recursion limit of %d supersteps reached without reaching END; "+
		"raise RunOptions.RecursionLimit if the graph is meant to run longer, or check its loop's exit condition", e.Limit)
}

// Is makes errors.Is(err, ErrRecursionLimit) true.
func (e *RecursionError) Is(target error) bool { return target == ErrRecursionLimit }

// parentCommand carries an update addressed to the parent graph out of a
// subgraph.
type parentCommand struct{ u Update }

func (e *parentCommand) Error() string {
	return "graph: an update addressed to the parent graph (Update.ToParent) was returned by a graph that is not a subgraph"
}

// interruptSignal is the error Interrupt returns; it carries what the human
// is asked.
type interruptSignal struct {
	interrupts []Interruption
}

func (e *interruptSignal) Error() string {
	if len(e.interrupts) == 1 {
		return fmt.Sprintf("graph: interrupted (%s)", e.interrupts[0].ID)
	}
	return fmt.Sprintf("graph: %d interrupts", len(e.interrupts))
}

func (e *interruptSignal) Is(target error) bool { return target == ErrInterrupted }
