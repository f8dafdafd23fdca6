package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
)

// saverTimeout bounds one read of the conversations database made by the
// CLI itself (not a run, which has its own bounds).
const saverTimeout = 30 * time.Second

// Errors of pickThread.
var (
	// errNoThread means --thread names a thread the database does not
	// hold; it also wraps checkpoint.ErrNotFound.
	errNoThread = errors.New("no such thread")
	// errThreadExists means --new-thread names a thread that already has
	// a conversation.
	errThreadExists = errors.New("thread already exists")
)

// threadChoice is how the user picked the conversation of a run.
type threadChoice struct {
	// id is the thread's id; empty starts a new thread under a fresh id.
	id string
	// isNew is true for --new-thread: start a thread under id, which must
	// not exist yet. Otherwise (--thread) id must exist, so a mistyped id
	// fails instead of starting a conversation without its context.
	isNew bool
	// where names the database, for messages ("sqlite weft.db").
	where string
	// db is the --db argument to repeat in commands shown (" --db X").
	db string
}

// pickThread checks the thread the user chose against saver and returns
// its id, telling info which thread the run uses when it is a new one.
func pickThread(ctx context.Context, saver *checkpoint.Saver, c threadChoice, info io.Writer) (string, error) {
	if c.id == "" {
		id := uuid.NewString()
		fmt.Fprintf(info, "thread %s (continue it with --thread %s)\n", id, id)
		return id, nil
	}
	exists, err := threadExists(ctx, saver, c.id)
	if err != nil {
		return "", err
	}
	switch {
	case c.isNew && exists:
		return "", fmt.Errorf("%w: %q in %s; continue it with --thread %s, or start a new thread under another id",
			errThreadExists, c.id, c.where, shellQuote(c.id))
	case c.isNew:
		fmt.Fprintf(info, "thread %s (new; continue it with --thread %s)\n", c.id, shellQuote(c.id))
	case !exists:
		return "", fmt.Errorf("%w %q in %s: --thread continues a saved conversation. "+
			"See the saved ones with: weft threads list%s; start a new one under this id with: --new-thread %s",
			notFound{errNoThread}, c.id, c.where, c.db, shellQuote(c.id))
	}
	return c.id, nil
}

// notFound is an error that is also checkpoint.ErrNotFound.
type notFound struct{ error }

func (e notFound) Unwrap() []error { return []error{e.error, checkpoint.ErrNotFound} }

// threadExists reports whether the thread has a checkpoint.
func threadExists(ctx context.Context, saver *checkpoint.Saver, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, saverTimeout)
	defer cancel()
	tp, err := saver.Get(ctx, checkpoint.Config{ThreadID: id})
	if err != nil {
		return false, fmt.Errorf("reading thread %s: %w", id, err)
	}
	return tp != nil, nil
}

// ErrInterrupted means a command stopped because the user interrupted it
// (Ctrl-C).
var ErrInterrupted = errors.New("interrupted")

// interruptedError is ErrInterrupted with how to go on, wrapping the
// error the interrupted work returned.
type interruptedError struct {
	hint string
	err  error
}

func (e *interruptedError) Error() string   { return "interrupted (Ctrl-C); " + e.hint }
func (e *interruptedError) Unwrap() []error { return []error{ErrInterrupted, e.err} }

// onInterrupt returns err as ErrInterrupted, with hint, when ctx was
// cancelled: the weft command's context ends only on Ctrl-C (SIGINT).
func onInterrupt(ctx context.Context, err error, hint string) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &interruptedError{hint: hint, err: err}
}

// continueHint says how to continue thread with agent; db is the --db
// argument to repeat, if any.
func continueHint(agent, thread, db string) string {
	return fmt.Sprintf("thread %s is saved up to its last step: continue it with weft run --agent %s --thread %s%s \"...\"", thread, agent, shellQuote(thread), db)
}
