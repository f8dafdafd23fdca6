// Package retrieve chooses tools for a request from a large catalogue
// (LangGraph's "BigTool", document 001): every tool's name, description and
// argument schema is indexed in the long-term store with embeddings, and a
// search returns the k tools that best fit a request or a plan step.
//
// An Index keeps its tools in a store.Store under one namespace (by
// default ["tools"], one item per tool, keyed by the tool's name) and ranks
// them by a hybrid of the store's vector search and a BM25 keyword score
// over the same fields. Sync brings the index up to date with the tools
// that exist now, embedding only new and changed tools (by a content hash
// of name, description and schema) and deleting removed ones, so an MCP
// manager can call it whenever servers announce changes.
//
// SearchFor ranks for one user and lets the user's tool memory (see
// Outcomes) move tools up that succeeded for similar steps and move down
// tools that failed repeatedly, scaled by the cold-start multiplier
// ColdStart of document 001.
package retrieve

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
)

// ErrInvalid is wrapped by the errors for bad arguments: an empty tool
// name, two tools of one name, a k below one, bad options.
var ErrInvalid = errors.New("retrieve: invalid argument")

// Defaults of Options.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultBoostWeight   = 0.3
	DefaultAvoidFailures = 3
	// DefaultKeywordWeight is the keyword score's share of the hybrid
	// score; docs/tool-retrieval.md shows how it was chosen.
	DefaultKeywordWeight = 0.3
)

// putBatch caps the tools embedded and written in one store call, so one
// call's time bound covers a bounded amount of embedding work.
const putBatch = 128

// Ranking chooses how an Index ranks tools.
type Ranking int

// The rankings.
const (
	// Hybrid fuses the vector similarity and the keyword score (default).
	Hybrid Ranking = iota
	// VectorOnly ranks by the store's vector similarity alone.
	VectorOnly
	// KeywordOnly ranks by the BM25 keyword score alone.
	KeywordOnly
)

// Options configure an Index. The zero value is usable.
type Options struct {
	// Namespace is where the tools live in the store (default ["tools"]).
	// Give each catalogue its own namespace; Sync deletes every item under
	// it that is not one of the tools it is given.
	Namespace []string
	// Ranking chooses hybrid (default), vector-only or keyword-only ranking.
	Ranking Ranking
	// KeywordWeight is the keyword score's share of the hybrid score, in
	// (0, 1); 0 means DefaultKeywordWeight.
	KeywordWeight float64
	// Outcomes supplies a user's tool memory to SearchFor; nil turns
	// boosting off.
	Outcomes Outcomes
	// BoostWeight scales the boost of a tool that succeeded: score +=
	// BoostWeight × success rate × ColdStart(samples) (document 001's
	// score_boost = success_rate × 0.3). 0 means DefaultBoostWeight.
	BoostWeight float64
	// AvoidFailures is how many failures, more than its successes, make a
	// tool avoided for a user: it is ranked after every tool that is not
	// (document 001: should_avoid when failure_count > 2). 0 means
	// DefaultAvoidFailures.
	AvoidFailures int
	// Fingerprint names the embedder (a model name and dimension, say).
	// It is part of every tool's content hash, so changing it makes the
	// next Sync embed every tool again.
	Fingerprint string
	// Timeout bounds each store call (default DefaultTimeout).
	Timeout time.Duration
	// Logger receives warnings: a tool memory that could not be read
	// (default slog.Default()).
	Logger *slog.Logger

	// text builds the text a tool is embedded by; nil is embedText.
	// Tests use it to measure other recipes.
	text func(*entry) string
}

// Outcomes is what an Index needs from tool memory: how each tool fared
// for steps like this one, for this user. memory.ToolMemory implements it.
type Outcomes interface {
	ToolOutcomes(ctx context.Context, user, step string) ([]Outcome, error)
}

// Outcome is a tool's record for steps similar to the one searched for.
type Outcome struct {
	Tool      string
	Successes int
	Failures  int
}

// ColdStart is document 001's confidence multiplier by sample count: how
// much a success rate learned from samples observations may be trusted.
// 0 samples give 0, 1 gives 0.3, 2 give 0.5, 3–4 give 0.7, 5 or more 1.
func ColdStart(samples int) float64 {
	switch {
	case samples >= 5:
		return 1
	case samples >= 3:
		return 0.7
	case samples >= 2:
		return 0.5
	case samples >= 1:
		return 0.3
	}
	return 0
}

// Hit is one tool a search returned.
type Hit struct {
	// Spec describes the tool as it was indexed.
	Spec llm.ToolSpec
	// Score orders the hits: the hybrid relevance plus Boost.
	Score float64
	// Similarity is the vector similarity to the query (cosine), 0 when
	// the tool was not among the vector candidates.
	Similarity float64
	// Keyword is the keyword score relative to the best one of the
	// search (1 for the best), 0 when no term matched.
	Keyword float64
	// Boost is what the user's tool memory added.
	Boost float64
	// Avoid is true when the tool failed repeatedly for similar steps; it
	// is ranked after every tool that is not avoided.
	Avoid bool
	// Successes and Failures are the tool's record for similar steps.
	Successes, Failures int
}

// SyncResult says what a Sync changed, by tool name, sorted.
type SyncResult struct {
	Added, Updated, Removed []string
	// Unchanged counts the tools whose content hash matched.
	Unchanged int
}

// Index is a searchable tool catalogue in a store. It is safe for
// concurrent use: searches run in parallel with each other and with Sync,
// and concurrent Syncs run one at a time.
type Index struct {
	st   *store.Store
	opts Options
	// syncMu serializes Sync, so two concurrent calls never race on the
	// diff; searches never take it.
	syncMu sync.Mutex
	snap   atomic.Pointer[snapshot]
}

// snapshot is the catalogue as of the last Sync: searches read it without
// locks.
type snapshot struct {
	tools   map[string]*entry
	keyword *keywordIndex
}

// entry is one indexed tool.
type entry struct {
	spec   llm.ToolSpec
	params []string
	// hash is the content hash over the canonical schema; quick hashes
	// the spec as given, so an unchanged tool is recognised without
	// parsing its schema (empty for entries loaded from the store).
	hash, quick string
}

// stored is an item's value in the store.
type stored struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Hash        string          `json:"hash"`
	// Text is what is embedded.
	Text string `json:"text"`
}

// New returns an Index over st, loading the tools already stored under
// the namespace so that a restarted process does not embed them again.
// st must have a vector index (store.Config.Index) unless Ranking is
// KeywordOnly.
func New(ctx context.Context, st *store.Store, opts Options) (*Index, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if opts.Namespace == nil {
		opts.Namespace = []string{"tools"}
	}
	opts.Namespace = slices.Clone(opts.Namespace)
	if err := store.ValidateNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	switch {
	case opts.Ranking < Hybrid || opts.Ranking > KeywordOnly:
		return nil, fmt.Errorf("%w: unknown Ranking %d; expected Hybrid, VectorOnly or KeywordOnly", ErrInvalid, opts.Ranking)
	case opts.KeywordWeight < 0 || opts.KeywordWeight >= 1:
		return nil, fmt.Errorf("%w: KeywordWeight %v is outside [0, 1)", ErrInvalid, opts.KeywordWeight)
	case opts.BoostWeight < 0 || opts.AvoidFailures < 0 || opts.Timeout < 0:
		return nil, fmt.Errorf("%w: BoostWeight, AvoidFailures and Timeout must not be negative", ErrInvalid)
	}
	opts.KeywordWeight = cmp.Or(opts.KeywordWeight, DefaultKeywordWeight)
	opts.BoostWeight = cmp.Or(opts.BoostWeight, DefaultBoostWeight)
	opts.AvoidFailures = cmp.Or(opts.AvoidFailures, DefaultAvoidFailures)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.text == nil {
		opts.text = embedText
	}
	x := &Index{st: st, opts: opts}
	tools, err := x.load(ctx)
	if err != nil {
		return nil, err
	}
	x.publish(tools)
	return x, nil
}

// load reads every tool stored under the namespace.
func (x *Index) load(ctx context.Context) (map[string]*entry, error) {
	tools := map[string]*entry{}
	const page = 1000
	for offset := 0; ; offset += page {
		var items []store.Item
		err := x.bounded(ctx, func(ctx context.Context) (err error) {
			items, err = x.st.Search(ctx, x.opts.Namespace, store.SearchOptions{Limit: page, Offset: offset, RefreshTTL: store.RefreshOff})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("retrieve: load the tools under %s: %w", store.JoinNamespace(x.opts.Namespace), err)
		}
		for i := range items {
			if !slices.Equal(items[i].Namespace, x.opts.Namespace) {
				continue // a deeper namespace is not this index's
			}
			e, err := decodeEntry(&items[i])
			if err != nil {
				return nil, err
			}
			tools[e.spec.Name] = e
		}
		if len(items) < page {
			return tools, nil
		}
	}
}

func decodeEntry(it *store.Item) (*entry, error) {
	var v stored
	if err := it.Decode(&v); err != nil || v.Name == "" {
		return nil, fmt.Errorf("%w: tool %q under %s is not a tool index entry", store.ErrCorrupt, it.Key, store.JoinNamespace(it.Namespace))
	}
	spec := llm.ToolSpec{Name: v.Name, Description: v.Description, Parameters: v.Parameters}
	return &entry{spec: spec, params: paramNames(spec.Parameters), hash: v.Hash}, nil
}

func (x *Index) publish(tools map[string]*entry) {
	entries := slices.SortedFunc(maps.Values(tools), func(a, b *entry) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	x.snap.Store(&snapshot{tools: tools, keyword: newKeywordIndex(entries)})
}

func (x *Index) bounded(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	return fn(ctx)
}

// Len returns the number of tools indexed.
func (x *Index) Len() int { return len(x.snap.Load().tools) }

// Namespace returns the store namespace the index keeps its tools in.
func (x *Index) Namespace() []string { return slices.Clone(x.opts.Namespace) }

// Sync makes the index hold exactly specs: tools that are new or whose
// name, description or schema changed are embedded and written (in
// batches, each one transaction), tools no longer present are deleted, and
// the rest are left alone, so calling it with an unchanged catalogue costs
// no embedding and no write. Concurrent calls run one after another.
//
// On an error the tools written before it stay written and the index keeps
// serving what it served before; calling Sync again finishes the work.
func (x *Index) Sync(ctx context.Context, specs []llm.ToolSpec) (SyncResult, error) {
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	return x.sync(ctx, specs)
}

// SyncRegistry syncs the index with the tools registered in reg, read
// once this call's turn to sync has come: calls made after each change to
// reg (an MCP manager's Options.OnChange), even from goroutines of their
// own, leave the index holding the registry's latest tools whatever order
// they run in.
func (x *Index) SyncRegistry(ctx context.Context, reg *tool.Registry) (SyncResult, error) {
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	return x.sync(ctx, reg.Specs())
}

// sync is Sync; x.syncMu is held.
func (x *Index) sync(ctx context.Context, specs []llm.ToolSpec) (SyncResult, error) {
	want := make(map[string]*entry, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return SyncResult{}, fmt.Errorf("%w: a tool without a name (description %.40q)", ErrInvalid, s.Description)
		}
		if _, dup := want[s.Name]; dup {
			return SyncResult{}, fmt.Errorf("%w: two tools named %q", ErrInvalid, s.Name)
		}
		want[s.Name] = &entry{spec: s, quick: x.hash(s.Parameters, s)}
	}
	have := x.snap.Load().tools
	var res SyncResult
	var puts []store.PutRequest
	for name, e := range want {
		old, ok := have[name]
		if ok && old.quick == e.quick {
			res.Unchanged++
			want[name] = old
			continue
		}
		e.params = paramNames(e.spec.Parameters)
		e.hash = x.hash(canonicalJSON(e.spec.Parameters), e.spec)
		switch {
		case ok && old.hash == e.hash:
			// The same tool spelled differently (schema keys in another
			// order): remember the new spelling, write nothing.
			res.Unchanged++
			old.quick = e.quick
			continue
		case ok:
			res.Updated = append(res.Updated, name)
		default:
			res.Added = append(res.Added, name)
		}
		puts = append(puts, store.PutRequest{
			Namespace: x.opts.Namespace,
			Key:       name,
			Value:     stored{Name: name, Description: e.spec.Description, Parameters: canonicalJSON(e.spec.Parameters), Hash: e.hash, Text: x.opts.text(e)},
			Options:   store.PutOptions{Index: []string{"text"}, TTL: store.NoTTL, NoIndex: x.opts.Ranking == KeywordOnly},
		})
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			res.Removed = append(res.Removed, name)
		}
	}
	slices.Sort(res.Added)
	slices.Sort(res.Updated)
	slices.Sort(res.Removed)
	if len(puts) == 0 && len(res.Removed) == 0 {
		return res, nil
	}
	slices.SortFunc(puts, func(a, b store.PutRequest) int { return strings.Compare(a.Key, b.Key) })
	// What is written is published even when a later batch fails, so the
	// index and the store never disagree for long.
	next := maps.Clone(have)
	var err error
	for chunk := range slices.Chunk(puts, putBatch) {
		if err = x.bounded(ctx, func(ctx context.Context) error { return x.st.PutMany(ctx, chunk) }); err != nil {
			err = fmt.Errorf("retrieve: write %d tools: %w", len(chunk), err)
			break
		}
		for _, p := range chunk {
			next[p.Key] = want[p.Key]
		}
	}
	if err == nil {
		for _, name := range res.Removed {
			if err = x.bounded(ctx, func(ctx context.Context) error { return x.st.Delete(ctx, x.opts.Namespace, name) }); err != nil {
				err = fmt.Errorf("retrieve: delete tool %q: %w", name, err)
				break
			}
			delete(next, name)
		}
	}
	x.publish(next)
	return res, err
}

// hash identifies what a tool is indexed by, with its schema as given;
// the recipe version and the embedder's fingerprint are part of it so
// either change re-embeds.
func (x *Index) hash(schema json.RawMessage, s llm.ToolSpec) string {
	h := sha256.New()
	for _, part := range []string{textVersion, x.opts.Fingerprint, s.Name, s.Description, string(schema)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// textVersion names the recipe of embedText; change it when the recipe
// changes so that Sync embeds stored tools again.
const textVersion = "t1"

// embedText is the text a tool is embedded by: its name as words, its
// description, and its parameter names.
func embedText(e *entry) string {
	var b strings.Builder
	b.WriteString(strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(e.spec.Name))
	b.WriteString(": ")
	b.WriteString(e.spec.Description)
	if len(e.params) > 0 {
		b.WriteString(" Parameters: ")
		b.WriteString(strings.Join(e.params, ", "))
	}
	return b.String()
}

// canonicalJSON returns a schema with sorted keys and no spacing, so that
// two encodings of one schema hash alike; text that is not JSON is kept.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// paramNames lists the top-level property names of an object schema, as
// words ("issue_number" → "issue number").
func paramNames(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := slices.Sorted(maps.Keys(s.Properties))
	for i, n := range names {
		names[i] = strings.ReplaceAll(n, "_", " ")
	}
	return names
}

// Search returns the k tools that best fit query, best first, without
// any user's tool memory.
func (x *Index) Search(ctx context.Context, query string, k int) ([]Hit, error) {
	return x.SearchFor(ctx, "", query, k)
}

// SearchFor returns the k tools that best fit query for user, best first:
// the hybrid relevance, plus a boost for tools that succeeded for similar
// steps, with tools that failed repeatedly ranked last (see Options). An
// empty user, or no Options.Outcomes, searches without memory. A tool
// memory that cannot be read is logged and the search goes on without it.
func (x *Index) SearchFor(ctx context.Context, user, query string, k int) ([]Hit, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: k = %d; expected at least 1", ErrInvalid, k)
	}
	snap := x.snap.Load()
	if len(snap.tools) == 0 {
		return nil, nil
	}
	// Memory reorders within a wider candidate set than k, so that a tool
	// just below the cut can rise into it.
	pool := k
	if x.opts.Outcomes != nil && user != "" {
		pool = max(2*k, k+5)
	}
	hits, err := x.rank(ctx, snap, query, pool)
	if err != nil {
		return nil, err
	}
	if x.opts.Outcomes != nil && user != "" && len(hits) > 0 {
		x.applyMemory(ctx, user, query, hits)
	}
	return hits[:min(k, len(hits))], nil
}

// RetrieveTools returns the names of the k tools that best fit query for
// user, best first: the form agent/react's retrieval option takes.
func (x *Index) RetrieveTools(ctx context.Context, user, query string, k int) ([]string, error) {
	hits, err := x.SearchFor(ctx, user, query, k)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(hits))
	for i, h := range hits {
		names[i] = h.Spec.Name
	}
	return names, nil
}

// vectorCandidates is how many tools the vector side ranks for a search
// of k: enough that a tool the keyword side puts first but the vector side
// only in the forties still gets its similarity.
func vectorCandidates(k int) int { return max(50, 4*k) }

// rank returns the best n tools for query by the configured ranking.
func (x *Index) rank(ctx context.Context, snap *snapshot, query string, n int) ([]Hit, error) {
	hits := map[string]*Hit{}
	get := func(name string) *Hit {
		h := hits[name]
		if h == nil {
			e := snap.tools[name]
			if e == nil {
				return nil
			}
			h = &Hit{Spec: e.spec}
			hits[name] = h
		}
		return h
	}
	if x.opts.Ranking != KeywordOnly {
		var items []store.Item
		err := x.bounded(ctx, func(ctx context.Context) (err error) {
			items, err = x.st.Search(ctx, x.opts.Namespace, store.SearchOptions{Query: query, Limit: vectorCandidates(n), RefreshTTL: store.RefreshOff})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("retrieve: vector search: %w", err)
		}
		for i := range items {
			// Tools written by another process since this index loaded
			// are not in its snapshot; they are left out until a Sync or
			// a new Index sees them.
			if h := get(items[i].Key); h != nil && items[i].Score != nil {
				h.Similarity = max(*items[i].Score, 0)
			}
		}
	}
	if x.opts.Ranking != VectorOnly {
		scores := snap.keyword.score(query)
		var best float64
		for _, s := range scores {
			best = max(best, s)
		}
		if best > 0 {
			for name, s := range scores {
				if h := get(name); h != nil {
					h.Keyword = s / best
				}
			}
		}
	}
	w := x.opts.KeywordWeight
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		switch x.opts.Ranking {
		case VectorOnly:
			h.Score = h.Similarity
		case KeywordOnly:
			h.Score = h.Keyword
		default:
			h.Score = (1-w)*h.Similarity + w*h.Keyword
		}
		out = append(out, *h)
	}
	sortHits(out)
	return out[:min(n, len(out))], nil
}

// sortHits orders hits: tools not avoided first, then by score, then by
// name so equal scores come out in one order.
func sortHits(hs []Hit) {
	slices.SortFunc(hs, func(a, b Hit) int {
		if a.Avoid != b.Avoid {
			if a.Avoid {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Spec.Name, b.Spec.Name)
	})
}

// applyMemory adds the user's tool memory to hits and re-sorts them.
func (x *Index) applyMemory(ctx context.Context, user, query string, hits []Hit) {
	var outs []Outcome
	err := x.bounded(ctx, func(ctx context.Context) (err error) {
		outs, err = x.opts.Outcomes.ToolOutcomes(ctx, user, query)
		return err
	})
	if err != nil {
		x.opts.Logger.WarnContext(ctx, "retrieve: tool memory unavailable; ranking without it", "user", user, "error", err)
		return
	}
	byTool := make(map[string]Outcome, len(outs))
	for _, o := range outs {
		prev := byTool[o.Tool]
		byTool[o.Tool] = Outcome{Tool: o.Tool, Successes: prev.Successes + o.Successes, Failures: prev.Failures + o.Failures}
	}
	for i := range hits {
		o, ok := byTool[hits[i].Spec.Name]
		if !ok {
			continue
		}
		adj := Adjust(o, x.opts.BoostWeight, x.opts.AvoidFailures)
		hits[i].Successes, hits[i].Failures = o.Successes, o.Failures
		hits[i].Boost, hits[i].Avoid = adj.Boost, adj.Avoid
		hits[i].Score += adj.Boost
	}
	sortHits(hits)
}

// Adjustment is what a tool's record does to its rank.
type Adjustment struct {
	// Boost is added to the tool's score.
	Boost float64
	// Avoid ranks the tool after every tool not avoided.
	Avoid bool
}

// Adjust computes the boost or avoidance of a tool from its record
// (document 001's step preparation): a tool that failed at least
// avoidFailures times, and more often than it succeeded, is avoided;
// otherwise it gains weight × success rate × ColdStart(samples), so one
// lucky success moves a tool a little and five move it fully.
func Adjust(o Outcome, weight float64, avoidFailures int) Adjustment {
	n := o.Successes + o.Failures
	if n <= 0 {
		return Adjustment{}
	}
	if o.Failures >= avoidFailures && o.Failures > o.Successes {
		return Adjustment{Avoid: true}
	}
	return Adjustment{Boost: weight * float64(o.Successes) / float64(n) * ColdStart(n)}
}
