// Package memory is weft's long-term memory, after LangMem: memory managers
// read a conversation with a model (structured output) and consolidate what
// they extract with what is already stored — inserting, updating or
// deleting memories, never piling up duplicates — in per-user namespaces of
// a store.Store, so memories survive restarts on the SQLite and PostgreSQL
// backends and one user never sees another's.
//
// Three kinds of memory are extracted by a Manager: semantic (facts and
// preferences, Fact), episodic (what happened and what worked, Episode) and
// procedural (how to act, Procedure). Agents manage and search them
// themselves with ManageTool and SearchTool (document 004's write_memory
// and read_memory), and a Reflector runs the managers in the background
// after a run, so that learning never delays an answer (document 004's
// reflection_node; ReflectionNode is that node).
//
// Document 001's five memory managers — plan, tool, clarification,
// behaviour and workflow — are typed records kept by Experience: counts of
// outcomes, approvals and reuses, consolidated by code rather than by a
// model because counts must be exact. They answer the orchestrator's
// questions: which past clarification to reuse, how likely a step is to be
// accepted, which tools worked for similar steps.
//
// # Store layout
//
// Every memory of user U of kind K is an item under the namespace
// ["memories", U, K]; U is the user id with "%", "." and "*" escaped
// (%25, %2E, %2A), since store labels may not contain "." and an e-mail
// address is a common user id. Items hold {"kind", "text", ...} and are
// embedded by their "text" field, so the store must have a vector index
// (store.Config.Index).
package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/store"
)

// Kind names a kind of memory; it is the last label of the memory's
// namespace.
type Kind string

// The kinds of memory.
const (
	// Semantic memories are facts about the user and the world, and the
	// user's preferences (Fact).
	Semantic Kind = "semantic"
	// Episodic memories record what happened in a conversation and what
	// worked (Episode).
	Episodic Kind = "episodic"
	// Procedural memories are instructions on how to act (Procedure).
	Procedural Kind = "procedural"
	// Plans, Tools, Clarifications, Behaviour and Workflows are document
	// 001's records, kept by Experience.
	Plans          Kind = "plan"
	Tools          Kind = "tool"
	Clarifications Kind = "clarification"
	Behaviour      Kind = "behaviour"
	Workflows      Kind = "workflow"
)

// Root is the first label of every memory namespace.
const Root = "memories"

// DefaultTimeout bounds each store call, and each model call of an
// extraction, when the options say nothing.
const DefaultTimeout = 30 * time.Second

// Errors. Every error for bad input wraps ErrInvalid.
var (
	// ErrInvalid: an argument is unusable (an empty user, a bad kind).
	ErrInvalid = errors.New("memory: invalid argument")
	// ErrNoUser: a memory tool or the reflection node ran without a user
	// (see WithUser).
	ErrNoUser = fmt.Errorf("%w: no user: the run's context names none (memory.WithUser)", ErrInvalid)
	// ErrNotFound: no memory has this id for this user.
	ErrNotFound = errors.New("memory: not found")
	// ErrExtraction: a manager could not extract memories from a
	// conversation (the model failed or answered out of shape).
	ErrExtraction = errors.New("memory: extraction failed")
)

// Namespace returns the store namespace of user's memories of kind k.
func Namespace(user string, k Kind) ([]string, error) {
	u, err := userLabel(user)
	if err != nil {
		return nil, err
	}
	if k == "" || strings.ContainsAny(string(k), ".*") {
		return nil, fmt.Errorf("%w: kind %q must be non-empty and free of '.' and '*'", ErrInvalid, k)
	}
	return []string{Root, u, string(k)}, nil
}

// UserNamespace returns the namespace prefix holding every memory of user.
func UserNamespace(user string) ([]string, error) {
	u, err := userLabel(user)
	if err != nil {
		return nil, err
	}
	return []string{Root, u}, nil
}

var labelEscaper = strings.NewReplacer("%", "%25", ".", "%2E", "*", "%2A")

// userLabel makes a user id a namespace label: "." and "*" may not appear
// in labels, and escaping "%" too keeps the mapping one-to-one.
func userLabel(user string) (string, error) {
	if strings.TrimSpace(user) == "" {
		return "", fmt.Errorf("%w: empty user id", ErrInvalid)
	}
	return labelEscaper.Replace(user), nil
}

type userKey struct{}

// WithUser returns ctx naming the user a run is for; the memory tools and
// the reflection node read it with UserFrom.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user named by WithUser; without one, inside a
// graph's node (or a tool it calls), the user the run acts for
// (graph.RunOptions.User, which weft serve sets to the authenticated
// user); else "".
func UserFrom(ctx context.Context) string {
	if u, _ := ctx.Value(userKey{}).(string); u != "" {
		return u
	}
	ti, _ := graph.CurrentTask(ctx)
	return ti.User
}

// bounded runs fn with ctx bounded by d.
func bounded(ctx context.Context, d time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return fn(ctx)
}

// normalize folds text for identity: lower case, spacing collapsed.
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// digest is a short stable hash of parts, for keys and duplicate checks.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// keyLocks serializes read-modify-write updates of one item within a
// process, so concurrent counts of the same record are not lost. Updates
// from other processes sharing the store are not serialized: the last
// write wins (see docs/memory.md).
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// checkStore rejects a nil store.
func checkStore(st *store.Store) error {
	if st == nil {
		return fmt.Errorf("%w: nil store", ErrInvalid)
	}
	return nil
}
