package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
)

// Group commit. Each write of a thread is a transaction, and on
// PostgreSQL a transaction costs more than the few statements of a
// checkpoint write: its BEGIN and COMMIT, the commit's WAL record and
// flush, and the round trip a writer's last statements wait for. At most
// groupCommitters writes run at once; writers that arrive while they run
// queue up, and the next free committer runs all of them (up to maxGroup)
// in one transaction: the advisory locks of all their threads first, in
// sorted order (so two groups, or a group and a lone writer, never wait
// for each other in a cycle, in this process or another), then each
// writer inside a savepoint of its own, whose error rolls back that
// writer's statements only. The pipeline (pgconnx.Tx) sends one writer's
// last statements with the next writer's first: a group of n writes takes
// about n+1 round trips and one commit, where n lone writes take 2n to 3n
// round trips and n commits. A writer alone runs as before, without a
// savepoint, under its own context.
//
// A failure of the group's transaction itself (a savepoint, its commit,
// a lost connection) commits none of it; each writer whose own statements
// had succeeded is then run again alone, so that the failure is its own
// answer only.

// groupCommitters bounds the write transactions of a driver in flight:
// enough to keep PostgreSQL's cores busy while others wait for their WAL
// flush, few enough that writers queue, and are grouped, under load.
const groupCommitters = 8

// maxGroup bounds the writers committed together: each runs in a
// subtransaction, and PostgreSQL tracks up to 64 of a transaction's
// subtransactions cheaply (past that, every snapshot of every session
// looks them up on disk).
const maxGroup = 32

// groupTimeout bounds a group's transaction: its statements run under it
// rather than under one writer's context.
const groupTimeout = 30 * time.Second

// groupSavepoint names the savepoint each writer of a group runs in.
const groupSavepoint = "weft_group_writer"

// writeReq is one writer waiting for its turn.
type writeReq struct {
	ctx  context.Context
	key  string
	fn   func(sqlstore.Tx) error
	err  error
	done chan struct{}
	// taken is set, under groups.mu, when a group takes the writer.
	taken bool
	// panicked holds what fn panicked with, in the goroutine that ran the
	// group, for the writer's own goroutine to panic with (result).
	panicked any
}

// errPanicked is a writer's error when its function panicked.
var errPanicked = errors.New("checkpoint/postgres: the write's function panicked")

// guard runs f, which calls r's function, and keeps a panic of it in r.
func (r *writeReq) guard(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked = v
			err = errPanicked
		}
	}()
	return f()
}

// result is r's outcome once done is closed: its error, or its panic
// raised again in the writer's goroutine.
func (r *writeReq) result() error {
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

// groups queues the writers waiting for a committer.
type groups struct {
	slots   chan struct{}
	mu      sync.Mutex
	waiting []*writeReq
}

func newGroups() *groups {
	return &groups{slots: make(chan struct{}, groupCommitters)}
}

// submit runs r's write, alone or in a group, and returns its error.
func (p pgDB) submit(r *writeReq) error {
	g := p.groups
	r.done = make(chan struct{})
	g.mu.Lock()
	g.waiting = append(g.waiting, r)
	g.mu.Unlock()
	for {
		select {
		case <-r.done:
			return r.result()
		case g.slots <- struct{}{}:
			g.mu.Lock()
			n := min(len(g.waiting), maxGroup)
			group := slices.Clone(g.waiting[:n])
			g.waiting = append(g.waiting[:0], g.waiting[n:]...)
			for _, w := range group {
				w.taken = true
			}
			g.mu.Unlock()
			if len(group) > 0 {
				p.runGroup(group)
			}
			<-g.slots
			g.mu.Lock()
			taken := r.taken
			g.mu.Unlock()
			if taken {
				// In this group or another: its outcome is decided
				// there. (Looping for a slot would spin while another
				// group runs.)
				<-r.done
				return r.result()
			}
			// Behind a full group, it waits for the next.
		case <-r.ctx.Done():
			g.mu.Lock()
			if i := slices.Index(g.waiting, r); i >= 0 {
				g.waiting = slices.Delete(g.waiting, i, i+1)
				g.mu.Unlock()
				return r.ctx.Err()
			}
			g.mu.Unlock()
			// A group holds it already: its outcome is decided there.
			<-r.done
			return r.result()
		}
	}
}

// runGroup runs writers in one transaction and tells each its outcome.
func (p pgDB) runGroup(group []*writeReq) {
	defer func() {
		for _, r := range group {
			close(r.done)
		}
	}()
	if len(group) == 1 {
		p.runAlone(group[0])
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	keys := make([]string, len(group))
	for i, r := range group {
		keys[i] = r.key
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	// failed marks the writers whose error is their own, whatever becomes
	// of the group: they failed before sending anything, or their
	// savepoint was rolled back.
	failed := make([]bool, len(group))
	err := p.run(ctx, "BEGIN", keys, func(tx sqlstore.Tx) error {
		t := tx.(pgTx).t
		for i, r := range group {
			if err := r.ctx.Err(); err != nil {
				r.err, failed[i] = err, true
				continue
			}
			mark, sends := t.Queued(), t.Sends()
			t.Queue("SAVEPOINT " + groupSavepoint)
			if r.err = r.guard(func() error { return r.fn(pgTx{t: t, group: ctx}) }); r.err != nil {
				if t.Sends() == sends {
					// Nothing of the writer's was sent: forget it.
					t.Unqueue(mark)
					failed[i] = true
					continue
				}
				// What it queued after its failure is not sent. Should
				// the rollback fail, the error may have been an earlier
				// writer's, sent with this one's first statement.
				t.Unqueue(0)
				if _, err := t.Exec(ctx, "ROLLBACK TO SAVEPOINT "+groupSavepoint); err != nil {
					return err
				}
				failed[i] = true
			}
			t.Queue("RELEASE SAVEPOINT " + groupSavepoint)
		}
		return nil
	})
	if err == nil {
		return
	}
	// Nothing was committed: the other writers try alone.
	for i, r := range group {
		if !failed[i] {
			p.runAlone(r)
		}
	}
}

// runAlone runs r's write in a transaction of its own, under its own
// context.
func (p pgDB) runAlone(r *writeReq) {
	r.err = r.guard(func() error { return p.run(r.ctx, "BEGIN", []string{r.key}, r.fn) })
}
