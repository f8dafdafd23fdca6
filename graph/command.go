package graph

import (
	"context"
	"fmt"
)

// AsCommand makes u a command, as LangGraph's Command(update=..., goto=...)
// given as a run's input: its writes, Gotos and Sends apply between steps,
// as writes of no node (like the update that comes with Resume), and the
// nodes they trigger run next. It does not start the graph anew from START
// as input does, so a command can skip nodes (Goto) or change the state of a
// thread that waits without running what START leads to. On a thread with
// no checkpoint yet, an empty first checkpoint is made to hold the writes.
// With Resume, the resume applies as well.
func AsCommand(u Update) Update {
	u.command = true
	return u
}

// startCommand applies a command input (see AsCommand).
func (r *run) startCommand(ctx context.Context, in Update) error {
	if in.parent != nil {
		return fmt.Errorf("%w: the command is addressed to a parent graph (ToParent), but this graph has none", ErrInvalidInput)
	}
	if err := r.checkInput(in); err != nil {
		return err
	}
	if !r.cpSaved {
		// The writes are saved as pending writes of a checkpoint, as a
		// resume's are: a new thread gets an empty one first.
		if err := r.newCheckpoint("input"); err != nil {
			return err
		}
		r.step++
	}
	r.resumeStatic()
	if len(in.writes) > 0 || len(in.gotos) > 0 || len(in.sends) > 0 {
		if err := r.applyNullWrites(ctx, in); err != nil {
			return err
		}
	}
	r.emitValues(nil)
	return nil
}
