package graph

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// Durability says when a run's checkpoints reach the checkpointer.
type Durability string

// Durability modes.
const (
	// DurabilityAsync saves each step's checkpoint in the background while
	// the next step runs; writes are saved in order and all are saved
	// before the run returns. The default.
	DurabilityAsync Durability = "async"
	// DurabilitySync saves each step's checkpoint before the next starts.
	DurabilitySync Durability = "sync"
	// DurabilityExit saves only when the run ends: finished, failed or
	// interrupted. Fastest; a crash mid-run loses the run's progress.
	DurabilityExit Durability = "exit"
)

// DefaultRecursionLimit is the number of supersteps a run may take unless
// RunOptions.RecursionLimit says otherwise.
const DefaultRecursionLimit = 25

// RunOptions configures one run (LangGraph's config).
type RunOptions struct {
	// ThreadID names the conversation whose checkpoints the run reads and
	// writes. Required when the graph has a checkpointer.
	ThreadID string
	// CheckpointID starts from this checkpoint instead of the thread's
	// latest: replay (with no input) or fork (with UpdateState).
	CheckpointID string
	// RecursionLimit caps the supersteps of the run (default: the graph's
	// CompileOptions.RecursionLimit, else 25).
	RecursionLimit int
	// StreamModes chooses the events Stream yields (default: updates).
	StreamModes []StreamMode
	// Subgraphs includes the events of subgraphs, with their namespace.
	Subgraphs bool
	// Durability says when checkpoints are saved (default: async).
	Durability Durability
	// MaxConcurrency caps the tasks of one step that run at once; 0 means
	// no cap.
	MaxConcurrency int
	// InterruptBefore and InterruptAfter, when set, replace the graph's.
	InterruptBefore, InterruptAfter []string
	// Metadata is stored with every checkpoint of the run.
	Metadata map[string]any
	// User is who the run acts for: the authenticated user when weft's
	// server runs it (LangGraph's
	// config["configurable"]["langgraph_auth_user_id"]), the --user of
	// weft run; "" when nobody is named (a server without authentication).
	// Nodes, and the tools they call, read it with CurrentTask(ctx).User.
	// Subgraphs share it, and a graph invoked from inside a node takes it
	// from that node's run when its own options name none. It is not
	// stored in checkpoints: each run names its user again (the server
	// keeps it with the run's record, so a run resumed after a restart
	// acts for the same user).
	User string
	// Configurable holds the run's configurable values (LangGraph's
	// config["configurable"]): settings a caller passes to the nodes of
	// one run, such as a model name. Nodes read them with
	// Configurable(ctx, key). The map is copied when the run starts;
	// subgraphs and graphs invoked from inside a node share it, as User.
	Configurable map[string]any

	// namespace is set by At from a subgraph's checkpoint, which a run of
	// the root graph cannot start from.
	namespace string

	// Busy says what the run does when another run owns its thread (see
	// "Thread ownership" in docs/persistence.md): BusyFail (the default)
	// fails at once with an error wrapping checkpoint.ErrThreadBusy,
	// BusyWait waits its turn until ctx ends.
	Busy BusyPolicy
	// OnBusy, if set, is called once when the run starts waiting for a
	// busy thread, with the current holder.
	OnBusy func(*checkpoint.BusyError)
	// Lease is a lease on ThreadID the caller already holds, from the
	// graph's checkpointer: the run uses it instead of taking its own, and
	// leaves releasing it to the caller. A lease attached to the run's
	// context with checkpoint.WithLease is used the same way; that is how
	// UpdateState, too, runs under a caller's lease.
	Lease *checkpoint.Lease
	// LeaseTTL is the lifetime of the lease the run takes, renewed every
	// third of it: how long a crashed run blocks its thread. 0 means
	// checkpoint.DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// At returns o set to run from the checkpoint cfg addresses: its thread,
// and the checkpoint itself when cfg names one. It takes what UpdateState,
// BulkUpdateState and a StateSnapshot's Config give, so a forked or edited
// thread runs in one call: g.Invoke(ctx, graph.Update{}, graph.At(cfg)).
func (o RunOptions) At(cfg checkpoint.Config) *RunOptions {
	o.ThreadID, o.CheckpointID, o.namespace = cfg.ThreadID, cfg.CheckpointID, cfg.Namespace
	return &o
}

// At is RunOptions{}.At(cfg): the options to run from a checkpoint.
func At(cfg checkpoint.Config) *RunOptions { return RunOptions{}.At(cfg) }

// BusyPolicy says what a run does when its thread is owned by another run.
type BusyPolicy string

// Busy policies.
const (
	// BusyFail fails at once with an error wrapping checkpoint.ErrThreadBusy.
	BusyFail BusyPolicy = "fail"
	// BusyWait waits until the thread is free, or ctx ends.
	BusyWait BusyPolicy = "wait"
)

// runOptions returns a run's options with the graph's defaults filled in.
func (g *Graph) runOptions(ctx context.Context, opts *RunOptions) (RunOptions, error) {
	o := deref(opts)
	if o.RecursionLimit == 0 {
		o.RecursionLimit = g.recursionLimit
	}
	// A graph run from inside a node acts for that node's run, as
	// LangGraph's config flows into a graph invoked within a node.
	if tc := taskFrom(ctx); tc != nil {
		if o.User == "" {
			o.User = tc.r.opts.User
		}
		if o.Configurable == nil {
			o.Configurable = tc.r.opts.Configurable
		}
	}
	o.Configurable = maps.Clone(o.Configurable)
	return o.withDefaults()
}

func (o RunOptions) withDefaults() (RunOptions, error) {
	if o.RecursionLimit == 0 {
		o.RecursionLimit = DefaultRecursionLimit
	}
	if o.namespace != "" {
		return o, fmt.Errorf("%w: RunOptions.At was given a subgraph's checkpoint (namespace %q); run the graph from the root's checkpoint (checkpoint.Config with an empty Namespace)", ErrInvalidInput, o.namespace)
	}
	if o.RecursionLimit < 1 {
		return o, fmt.Errorf("%w: RecursionLimit must be at least 1, got %d", ErrInvalidInput, o.RecursionLimit)
	}
	switch o.Durability {
	case "":
		o.Durability = DurabilityAsync
	case DurabilityAsync, DurabilitySync, DurabilityExit:
	default:
		return o, fmt.Errorf("%w: unknown Durability %q; expected %q, %q or %q", ErrInvalidInput, o.Durability, DurabilityAsync, DurabilitySync, DurabilityExit)
	}
	switch o.Busy {
	case "":
		o.Busy = BusyFail
	case BusyFail, BusyWait:
	default:
		return o, fmt.Errorf("%w: unknown Busy policy %q; expected %q or %q", ErrInvalidInput, o.Busy, BusyFail, BusyWait)
	}
	if o.LeaseTTL < 0 {
		return o, fmt.Errorf("%w: LeaseTTL must be 0 (default) or positive, got %s", ErrInvalidInput, o.LeaseTTL)
	}
	if o.MaxConcurrency < 0 {
		return o, fmt.Errorf("%w: MaxConcurrency must be 0 (no cap) or positive, got %d", ErrInvalidInput, o.MaxConcurrency)
	}
	for _, m := range o.StreamModes {
		if _, ok := modeBits[m]; !ok {
			return o, fmt.Errorf("%w: unknown stream mode %q; expected one of values, updates, messages, custom, tasks, checkpoints, debug, tools, lifecycle", ErrInvalidInput, m)
		}
	}
	return o, nil
}

// RetryPolicy retries a failing node with exponential backoff.
type RetryPolicy struct {
	// InitialInterval is the wait before the first retry. Zero means the
	// default (0.5s); a negative value means no wait at all: every retry
	// starts at once (BackoffFactor, MaxInterval and jitter then do not
	// apply).
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each retry (default 2).
	BackoffFactor float64
	// MaxInterval caps the wait (default 128s).
	MaxInterval time.Duration
	// MaxAttempts counts the first attempt too (default 3).
	MaxAttempts int
	// NoJitter turns off the random extra wait (up to a quarter of the
	// interval) that keeps many failing runs from retrying in lockstep.
	NoJitter bool
	// RetryOn decides whether an error is worth retrying (default:
	// DefaultRetryOn).
	RetryOn func(error) bool
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.InitialInterval == 0 {
		p.InitialInterval = 500 * time.Millisecond
	}
	if p.BackoffFactor == 0 {
		p.BackoffFactor = 2
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = 128 * time.Second
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.RetryOn == nil {
		p.RetryOn = DefaultRetryOn
	}
	return p
}

// CachePolicy caches a node's writes by a key computed from its input.
type CachePolicy struct {
	// Key computes the cache key from the node's input; nil uses the
	// input's JSON form.
	Key func(s State) (string, error)
	// TTL is how long an entry lives; 0 means forever.
	TTL time.Duration
}
