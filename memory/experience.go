package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool/retrieve"
)

// Thresholds of document 001.
const (
	// AutoApplyReuses and AutoApplyConfidence: a past clarification
	// reused at least this often, with at least this confidence, is
	// applied without asking.
	AutoApplyReuses     = 5
	AutoApplyConfidence = 0.9
	// AutoApproveProbability: a step whose predicted acceptance exceeds
	// it may be approved without asking.
	AutoApproveProbability = 0.8
)

// Adjusted is document 001's cold-start adjustment of a rate learned from
// samples observations: rate × (0.7 + 0.3 × retrieve.ColdStart(samples)),
// and 0 without samples. One sample keeps 79% of the rate, five or more
// keep all of it.
func Adjusted(rate float64, samples int) float64 {
	if samples <= 0 {
		return 0
	}
	return rate * (0.7 + 0.3*retrieve.ColdStart(samples))
}

// ExperienceOptions configure Experience.
type ExperienceOptions struct {
	// MinSimilarity is the least similarity (cosine, by the store's
	// embedder) of a recorded step or request to the one asked about for
	// its record to count (default 0.5: with the offline lexical embedder,
	// rewordings sharing the main words pass and unrelated requests do
	// not; a model embedder may want more).
	MinSimilarity float64
	// Candidates is how many similar records a lookup reads (default 20).
	Candidates int
	// Timeout bounds each store call (default DefaultTimeout).
	Timeout time.Duration
}

// Experience holds document 001's five memory managers over one store.
// Each keeps typed records per user, consolidated by code: recording the
// same thing again updates its record's counts instead of adding one.
// Concurrent updates of one record are serialized within a process;
// processes sharing a store may lose an update when they record the same
// record at the same instant (the last write wins).
type Experience struct {
	Plans          *PlanMemory
	Tools          *ToolMemory
	Clarifications *ClarificationMemory
	Behaviour      *BehaviourMemory
	Workflows      *WorkflowMemory
}

// NewExperience returns the five managers over st, which needs a vector
// index (store.Config.Index) for the similarity lookups.
func NewExperience(st *store.Store, opts ExperienceOptions) (*Experience, error) {
	if err := checkStore(st); err != nil {
		return nil, err
	}
	if opts.MinSimilarity < 0 || opts.MinSimilarity > 1 || opts.Candidates < 0 || opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: MinSimilarity must be in [0, 1], Candidates and Timeout not negative", ErrInvalid)
	}
	opts.MinSimilarity = cmp.Or(opts.MinSimilarity, 0.5)
	opts.Candidates = cmp.Or(opts.Candidates, 20)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	locks := &keyLocks{}
	return &Experience{
		Plans:          &PlanMemory{records[planRecord]{st, Plans, opts, locks}},
		Tools:          &ToolMemory{records[toolRecord]{st, Tools, opts, locks}},
		Clarifications: &ClarificationMemory{records[clarificationRecord]{st, Clarifications, opts, locks}},
		Behaviour:      &BehaviourMemory{records[behaviourRecord]{st, Behaviour, opts, locks}},
		Workflows:      &WorkflowMemory{records[workflowRecord]{st, Workflows, opts, locks}},
	}, nil
}

// records keeps one kind of typed record per user.
type records[V any] struct {
	st    *store.Store
	kind  Kind
	opts  ExperienceOptions
	locks *keyLocks
}

// envelope is a record's value in the store.
type envelope[V any] struct {
	Kind Kind   `json:"kind"`
	Text string `json:"text"`
	Data V      `json:"data"`
}

type found[V any] struct {
	id         string
	data       V
	similarity float64
	updated    time.Time
}

// update reads the record at key, lets fn change it, and writes it back
// under the record's lock. With mustExist a missing record is ErrNotFound.
func (r *records[V]) update(ctx context.Context, user, key string, mustExist bool, fn func(v *V) string) (V, error) {
	var zero V
	ns, err := Namespace(user, r.kind)
	if err != nil {
		return zero, err
	}
	defer r.locks.lock(store.JoinNamespace(ns) + "\x00" + key)()
	var env envelope[V]
	var it *store.Item
	if err := bounded(ctx, r.opts.Timeout, func(ctx context.Context) (err error) {
		it, err = r.st.Get(ctx, ns, key, store.GetOptions{})
		return err
	}); err != nil {
		return zero, fmt.Errorf("memory: read %s record: %w", r.kind, err)
	}
	if it == nil && mustExist {
		return zero, fmt.Errorf("%w: %s record %q of user %q", ErrNotFound, r.kind, key, user)
	}
	if it != nil {
		if err := it.Decode(&env); err != nil {
			return zero, fmt.Errorf("%w: %s record %s: %v", store.ErrCorrupt, r.kind, key, err)
		}
	}
	env.Kind, env.Text = r.kind, fn(&env.Data)
	if err := bounded(ctx, r.opts.Timeout, func(ctx context.Context) error {
		return r.st.Put(ctx, ns, key, env, store.PutOptions{Index: indexText, TTL: store.NoTTL})
	}); err != nil {
		return zero, fmt.Errorf("memory: write %s record: %w", r.kind, err)
	}
	return env.Data, nil
}

// get returns the record at key, if any.
func (r *records[V]) get(ctx context.Context, user, key string) (V, bool, error) {
	var env envelope[V]
	ns, err := Namespace(user, r.kind)
	if err != nil {
		return env.Data, false, err
	}
	var it *store.Item
	if err := bounded(ctx, r.opts.Timeout, func(ctx context.Context) (err error) {
		it, err = r.st.Get(ctx, ns, key, store.GetOptions{})
		return err
	}); err != nil || it == nil {
		return env.Data, false, err
	}
	if err := it.Decode(&env); err != nil {
		return env.Data, false, fmt.Errorf("%w: %s record %s: %v", store.ErrCorrupt, r.kind, key, err)
	}
	return env.Data, true, nil
}

// similar returns the records whose text is at least MinSimilarity
// similar to query, most similar first.
func (r *records[V]) similar(ctx context.Context, user, query string) ([]found[V], error) {
	ns, err := Namespace(user, r.kind)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: an empty %s query", ErrInvalid, r.kind)
	}
	var items []store.Item
	if err := bounded(ctx, r.opts.Timeout, func(ctx context.Context) (err error) {
		items, err = r.st.Search(ctx, ns, store.SearchOptions{Query: query, Limit: r.opts.Candidates})
		return err
	}); err != nil {
		return nil, fmt.Errorf("memory: search %s records: %w", r.kind, err)
	}
	var out []found[V]
	for i := range items {
		if items[i].Score == nil || *items[i].Score < r.opts.MinSimilarity {
			continue
		}
		var env envelope[V]
		if err := items[i].Decode(&env); err != nil {
			return nil, fmt.Errorf("%w: %s record %s: %v", store.ErrCorrupt, r.kind, items[i].Key, err)
		}
		out = append(out, found[V]{id: items[i].Key, data: env.Data, similarity: *items[i].Score, updated: items[i].UpdatedAt})
	}
	return out, nil
}

func rate(part, total int) float64 {
	if total <= 0 {
		return 0
	}
	return float64(part) / float64(total)
}

// ---------------------------------------------------------------- tools

// ToolMemory records how tools fared for the steps they served (document
// 001's tool memory), and tells the tool index which tools to boost or
// avoid for a similar step: it implements retrieve.Outcomes.
type ToolMemory struct{ r records[toolRecord] }

// ToolOutcome is one use of a tool.
type ToolOutcome struct {
	// Step is the plan step or request the tool served.
	Step string
	Tool string
	// Success says whether the call did what the step needed.
	Success  bool
	Duration time.Duration
	// Error is why it failed, if it did.
	Error string
}

type toolRecord struct {
	Step        string    `json:"step"`
	Tool        string    `json:"tool"`
	Successes   int       `json:"successes"`
	Failures    int       `json:"failures"`
	TotalMillis int64     `json:"total_ms"`
	LastError   string    `json:"last_error,omitempty"`
	LastUsed    time.Time `json:"last_used"`
}

// RecordOutcome adds one use of a tool to user's record for that tool and
// step (the same step text, ignoring case and spacing, is one record).
func (m *ToolMemory) RecordOutcome(ctx context.Context, user string, o ToolOutcome) error {
	if strings.TrimSpace(o.Step) == "" || o.Tool == "" {
		return fmt.Errorf("%w: a tool outcome needs a step and a tool", ErrInvalid)
	}
	_, err := m.r.update(ctx, user, digest(o.Tool, normalize(o.Step)), false, func(v *toolRecord) string {
		v.Step, v.Tool, v.LastUsed = o.Step, o.Tool, time.Now().UTC()
		if o.Success {
			v.Successes++
		} else {
			v.Failures++
			v.LastError = clip(o.Error, 300)
		}
		v.TotalMillis += o.Duration.Milliseconds()
		return o.Step
	})
	return err
}

// ToolStats is how a tool fared for steps similar to one.
type ToolStats struct {
	Tool                string
	Successes, Failures int
	// SuccessRate is Successes over both.
	SuccessRate float64
	// Confidence is retrieve.ColdStart of the samples.
	Confidence  float64
	AvgDuration time.Duration
	// ShouldAvoid is document 001's should_avoid: at least three
	// failures, more than the successes.
	ShouldAvoid bool
	LastError   string
}

// Stats returns, per tool, user's record for steps similar to step, the
// best success rate first.
func (m *ToolMemory) Stats(ctx context.Context, user, step string) ([]ToolStats, error) {
	recs, err := m.r.similar(ctx, user, step)
	if err != nil {
		return nil, err
	}
	byTool := map[string]*ToolStats{}
	var millis = map[string]int64{}
	for _, f := range recs {
		s := byTool[f.data.Tool]
		if s == nil {
			s = &ToolStats{Tool: f.data.Tool, LastError: f.data.LastError}
			byTool[f.data.Tool] = s
		}
		s.Successes += f.data.Successes
		s.Failures += f.data.Failures
		millis[f.data.Tool] += f.data.TotalMillis
	}
	out := make([]ToolStats, 0, len(byTool))
	for _, s := range byTool {
		n := s.Successes + s.Failures
		s.SuccessRate = rate(s.Successes, n)
		s.Confidence = retrieve.ColdStart(n)
		if n > 0 {
			s.AvgDuration = time.Duration(millis[s.Tool]/int64(n)) * time.Millisecond
		}
		s.ShouldAvoid = retrieve.Adjust(retrieve.Outcome{Tool: s.Tool, Successes: s.Successes, Failures: s.Failures}, retrieve.DefaultBoostWeight, retrieve.DefaultAvoidFailures).Avoid
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ToolStats) int {
		return cmp.Or(cmp.Compare(b.SuccessRate, a.SuccessRate), cmp.Compare(b.Successes+b.Failures, a.Successes+a.Failures), strings.Compare(a.Tool, b.Tool))
	})
	return out, nil
}

// ToolOutcomes implements retrieve.Outcomes: user's successes and failures
// per tool for steps similar to step.
func (m *ToolMemory) ToolOutcomes(ctx context.Context, user, step string) ([]retrieve.Outcome, error) {
	stats, err := m.Stats(ctx, user, step)
	if err != nil {
		return nil, err
	}
	out := make([]retrieve.Outcome, len(stats))
	for i, s := range stats {
		out[i] = retrieve.Outcome{Tool: s.Tool, Successes: s.Successes, Failures: s.Failures}
	}
	return out, nil
}

// ---------------------------------------------------------------- behaviour

// BehaviourMemory records how a user answers approval requests (document
// 001's behaviour memory), to predict whether they will accept the next.
type BehaviourMemory struct{ r records[behaviourRecord] }

// Approval is one answer to an approval request.
type Approval struct {
	// Kind is what was to be approved: "plan", "step", "clarification".
	Kind string
	// Tool is the step's tool, if any.
	Tool string
	// Action is the user's answer: "accept", "edit", "skip", "reject"...
	Action string
	// ResponseTime is how long the user took to answer.
	ResponseTime time.Duration
}

type behaviourRecord struct {
	Kind          string         `json:"kind"`
	Tool          string         `json:"tool,omitempty"`
	Actions       map[string]int `json:"actions"`
	Total         int            `json:"total"`
	ResponseMilli int64          `json:"response_ms"`
}

func behaviourKey(kind, tool string) string { return digest(normalize(kind), tool) }

// RecordApproval adds one answer to user's record for its kind and tool.
func (m *BehaviourMemory) RecordApproval(ctx context.Context, user string, a Approval) error {
	if a.Kind == "" || a.Action == "" {
		return fmt.Errorf("%w: an approval needs a kind and an action", ErrInvalid)
	}
	_, err := m.r.update(ctx, user, behaviourKey(a.Kind, a.Tool), false, func(v *behaviourRecord) string {
		v.Kind, v.Tool = a.Kind, a.Tool
		if v.Actions == nil {
			v.Actions = map[string]int{}
		}
		v.Actions[strings.ToLower(a.Action)]++
		v.Total++
		v.ResponseMilli += a.ResponseTime.Milliseconds()
		return strings.TrimSpace(a.Kind + " " + a.Tool)
	})
	return err
}

// BehaviourPattern is a user's record of answers for one kind and tool.
type BehaviourPattern struct {
	Kind, Tool string
	// Actions counts answers by action.
	Actions map[string]int
	Samples int
	// EditRate and SkipRate are the shares of "edit" and "skip" answers.
	EditRate, SkipRate float64
	AvgResponseTime    time.Duration
}

// Pattern returns user's record for kind and tool (zero counts if none).
func (m *BehaviourMemory) Pattern(ctx context.Context, user, kind, tool string) (BehaviourPattern, error) {
	v, _, err := m.r.get(ctx, user, behaviourKey(kind, tool))
	if err != nil {
		return BehaviourPattern{}, err
	}
	p := BehaviourPattern{Kind: kind, Tool: tool, Actions: v.Actions, Samples: v.Total,
		EditRate: rate(v.Actions["edit"], v.Total), SkipRate: rate(v.Actions["skip"], v.Total)}
	if v.Total > 0 {
		p.AvgResponseTime = time.Duration(v.ResponseMilli/int64(v.Total)) * time.Millisecond
	}
	return p, nil
}

// PredictAcceptance returns the probability that user accepts the next
// approval request of stepKind ("plan", "step") for toolName ("" for
// none): the share of "accept" answers, cold-start adjusted (Adjusted), 0
// without samples; and the number of samples it rests on. Document 001
// approves a step without asking when p > AutoApproveProbability.
func (m *BehaviourMemory) PredictAcceptance(ctx context.Context, user, stepKind, toolName string) (p float64, samples int, err error) {
	pat, err := m.Pattern(ctx, user, stepKind, toolName)
	if err != nil {
		return 0, 0, err
	}
	return Adjusted(rate(pat.Actions["accept"], pat.Samples), pat.Samples), pat.Samples, nil
}

// ---------------------------------------------------------------- clarifications

// ClarificationMemory records how unclear requests were clarified
// (document 001's clarification memory), so that a later similar request
// can reuse the answer.
type ClarificationMemory struct{ r records[clarificationRecord] }

// Clarification is one clarification: the request, the questions asked,
// and the user's answer.
type Clarification struct {
	Query     string
	Questions []string
	Response  string
	// Confidence is how well the answer clarified the request, 0 to 1
	// (document 001 measures clarity before and after).
	Confidence float64
}

type clarificationRecord struct {
	Query         string   `json:"query"`
	Questions     []string `json:"questions,omitempty"`
	Response      string   `json:"response"`
	ReuseCount    int      `json:"reuse_count"`
	Successes     int      `json:"successes"`
	Failures      int      `json:"failures"`
	ConfidenceSum float64  `json:"confidence_sum"`
	ConfidenceN   int      `json:"confidence_n"`
}

// PastClarification is a recorded clarification found for a request.
type PastClarification struct {
	ID        string
	Query     string
	Questions []string
	Response  string
	// ReuseCount counts the times it was reused; Successes and Failures
	// the reuses whose outcome was reported.
	ReuseCount, Successes, Failures int
	// SuccessRate is Successes over reuses with an outcome (0 if none).
	SuccessRate float64
	// RecordedConfidence is the mean of the confidences recorded.
	RecordedConfidence float64
	// Similarity of the recorded request to the one asked about.
	Similarity float64
	// Confidence that it answers the request asked about:
	// RecordedConfidence × Similarity.
	Confidence float64
	UpdatedAt  time.Time
}

// AutoApply reports document 001's rule: reused at least AutoApplyReuses
// times with a confidence of at least AutoApplyConfidence.
func (p PastClarification) AutoApply() bool {
	return p.ReuseCount >= AutoApplyReuses && p.Confidence >= AutoApplyConfidence
}

// Record stores a clarification and returns its id. The same request
// (ignoring case and spacing) is one record: the newest answer replaces
// the older, and confidences are averaged.
func (m *ClarificationMemory) Record(ctx context.Context, user string, c Clarification) (string, error) {
	if strings.TrimSpace(c.Query) == "" || strings.TrimSpace(c.Response) == "" {
		return "", fmt.Errorf("%w: a clarification needs a query and a response", ErrInvalid)
	}
	if c.Confidence < 0 || c.Confidence > 1 {
		return "", fmt.Errorf("%w: clarification confidence %v is outside [0, 1]", ErrInvalid, c.Confidence)
	}
	id := digest(normalize(c.Query))
	_, err := m.r.update(ctx, user, id, false, func(v *clarificationRecord) string {
		v.Query, v.Questions, v.Response = c.Query, c.Questions, c.Response
		v.ConfidenceSum += c.Confidence
		v.ConfidenceN++
		return c.Query
	})
	return id, err
}

// MarkReused records that clarification id was reused, and whether the
// run it clarified succeeded (document 001's INCREMENT reuse_count).
func (m *ClarificationMemory) MarkReused(ctx context.Context, user, id string, success bool) error {
	_, err := m.r.update(ctx, user, id, true, func(v *clarificationRecord) string {
		v.ReuseCount++
		if success {
			v.Successes++
		} else {
			v.Failures++
		}
		return v.Query
	})
	return err
}

// FindSimilar returns user's recorded clarifications of requests similar
// to question, the most confident first.
func (m *ClarificationMemory) FindSimilar(ctx context.Context, user, question string) ([]PastClarification, error) {
	recs, err := m.r.similar(ctx, user, question)
	if err != nil {
		return nil, err
	}
	out := make([]PastClarification, len(recs))
	for i, f := range recs {
		v := f.data
		p := PastClarification{ID: f.id, Query: v.Query, Questions: v.Questions, Response: v.Response,
			ReuseCount: v.ReuseCount, Successes: v.Successes, Failures: v.Failures,
			SuccessRate: rate(v.Successes, v.Successes+v.Failures), Similarity: f.similarity, UpdatedAt: f.updated}
		if v.ConfidenceN > 0 {
			p.RecordedConfidence = v.ConfidenceSum / float64(v.ConfidenceN)
		}
		p.Confidence = p.RecordedConfidence * p.Similarity
		out[i] = p
	}
	slices.SortStableFunc(out, func(a, b PastClarification) int { return cmp.Compare(b.Confidence, a.Confidence) })
	return out, nil
}

// ---------------------------------------------------------------- plans

// PlanMemory records plans and how they went (document 001's plan
// memory), so that planning can start from what worked for similar
// requests.
type PlanMemory struct{ r records[planRecord] }

// PlanOutcome is one plan's fate.
type PlanOutcome struct {
	Query string
	// Plan is the plan as proposed; Final as run after the user's edits
	// (nil: as proposed).
	Plan, Final []string
	// Accepted is false when the user rejected the plan.
	Accepted bool
	// Success says whether the run achieved the request.
	Success bool
}

type planRecord struct {
	Query     string   `json:"query"`
	Plan      []string `json:"plan"`
	Uses      int      `json:"uses"`
	Accepted  int      `json:"accepted"`
	Rejected  int      `json:"rejected"`
	Edited    int      `json:"edited"`
	Successes int      `json:"successes"`
}

// PastPlan is a recorded plan found for a request.
type PastPlan struct {
	ID    string
	Query string
	// Plan is the plan as it was run (or proposed, if never run).
	Plan                                        []string
	Uses, Accepted, Rejected, Edited, Successes int
	// SuccessRate is Successes over Uses.
	SuccessRate float64
	// Confidence is the success rate cold-start adjusted (Adjusted).
	Confidence float64
	Similarity float64
	UpdatedAt  time.Time
}

// Record adds a plan's outcome; the same request with the same final plan
// is one record. It returns the record's id.
func (m *PlanMemory) Record(ctx context.Context, user string, o PlanOutcome) (string, error) {
	if strings.TrimSpace(o.Query) == "" || len(o.Plan) == 0 {
		return "", fmt.Errorf("%w: a plan outcome needs a query and a plan", ErrInvalid)
	}
	final := o.Final
	if final == nil {
		final = o.Plan
	}
	edited := !slices.Equal(final, o.Plan)
	id := digest(normalize(o.Query), strings.Join(final, "\x1f"))
	_, err := m.r.update(ctx, user, id, false, func(v *planRecord) string {
		v.Query, v.Plan = o.Query, final
		v.Uses++
		switch {
		case !o.Accepted:
			v.Rejected++
		case o.Success:
			v.Accepted++
			v.Successes++
		default:
			v.Accepted++
		}
		if edited {
			v.Edited++
		}
		return o.Query
	})
	return id, err
}

// FindSimilar returns user's plans for requests similar to query, the
// most similar first, at most limit (at least 1).
func (m *PlanMemory) FindSimilar(ctx context.Context, user, query string, limit int) ([]PastPlan, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d; expected at least 1", ErrInvalid, limit)
	}
	recs, err := m.r.similar(ctx, user, query)
	if err != nil {
		return nil, err
	}
	out := make([]PastPlan, 0, min(limit, len(recs)))
	for _, f := range recs[:min(limit, len(recs))] {
		v := f.data
		sr := rate(v.Successes, v.Uses)
		out = append(out, PastPlan{ID: f.id, Query: v.Query, Plan: v.Plan, Uses: v.Uses, Accepted: v.Accepted, Rejected: v.Rejected,
			Edited: v.Edited, Successes: v.Successes, SuccessRate: sr, Confidence: Adjusted(sr, v.Uses), Similarity: f.similarity, UpdatedAt: f.updated})
	}
	return out, nil
}

// ---------------------------------------------------------------- workflows

// WorkflowMemory records finished workflows as templates (document 001's
// workflow memory): the steps and tool sequence that served a kind of
// request.
type WorkflowMemory struct{ r records[workflowRecord] }

// WorkflowRun is one finished workflow.
type WorkflowRun struct {
	Query    string
	Category string
	Steps    []string
	// Tools is the sequence of tools the steps used.
	Tools    []string
	Success  bool
	Duration time.Duration
}

type workflowRecord struct {
	Query       string   `json:"query"`
	Category    string   `json:"category"`
	Steps       []string `json:"steps"`
	Tools       []string `json:"tools"`
	Uses        int      `json:"uses"`
	Successes   int      `json:"successes"`
	TotalMillis int64    `json:"total_ms"`
}

// WorkflowTemplate is a recorded workflow found for a request.
type WorkflowTemplate struct {
	ID, Query, Category string
	Steps, Tools        []string
	Uses, Successes     int
	SuccessRate         float64
	// Confidence is the success rate cold-start adjusted (Adjusted).
	Confidence  float64
	AvgDuration time.Duration
	Similarity  float64
	UpdatedAt   time.Time
}

// Record adds a finished workflow; the same category with the same tool
// sequence is one template, whose query and steps become the latest run's.
func (m *WorkflowMemory) Record(ctx context.Context, user string, w WorkflowRun) (string, error) {
	if strings.TrimSpace(w.Query) == "" || len(w.Steps) == 0 {
		return "", fmt.Errorf("%w: a workflow needs a query and steps", ErrInvalid)
	}
	id := digest(normalize(w.Category), strings.Join(w.Tools, "\x1f"))
	_, err := m.r.update(ctx, user, id, false, func(v *workflowRecord) string {
		v.Query, v.Category, v.Steps, v.Tools = w.Query, w.Category, w.Steps, w.Tools
		v.Uses++
		if w.Success {
			v.Successes++
		}
		v.TotalMillis += w.Duration.Milliseconds()
		return strings.TrimSpace(w.Category + ": " + w.Query)
	})
	return id, err
}

// FindSimilar returns user's workflow templates for requests similar to
// query, the most similar first, at most limit (at least 1).
func (m *WorkflowMemory) FindSimilar(ctx context.Context, user, query string, limit int) ([]WorkflowTemplate, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d; expected at least 1", ErrInvalid, limit)
	}
	recs, err := m.r.similar(ctx, user, query)
	if err != nil {
		return nil, err
	}
	out := make([]WorkflowTemplate, 0, min(limit, len(recs)))
	for _, f := range recs[:min(limit, len(recs))] {
		v := f.data
		sr := rate(v.Successes, v.Uses)
		t := WorkflowTemplate{ID: f.id, Query: v.Query, Category: v.Category, Steps: v.Steps, Tools: v.Tools, Uses: v.Uses,
			Successes: v.Successes, SuccessRate: sr, Confidence: Adjusted(sr, v.Uses), Similarity: f.similarity, UpdatedAt: f.updated}
		if v.Uses > 0 {
			t.AvgDuration = time.Duration(v.TotalMillis/int64(v.Uses)) * time.Millisecond
		}
		out = append(out, t)
	}
	return out, nil
}
