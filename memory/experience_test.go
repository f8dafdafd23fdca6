package memory_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/tool/retrieve"
)

func experience(t *testing.T, st *store.Store) *memory.Experience {
	t.Helper()
	x, err := memory.NewExperience(st, memory.ExperienceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestToolMemory(t *testing.T) {
	ctx := context.Background()
	x := experience(t, memStore(t))
	step := "Send the weekly sales report to the team by email"
	for range 5 {
		if err := x.Tools.RecordOutcome(ctx, "u1", memory.ToolOutcome{Step: step, Tool: "gmail_send_email", Success: true, Duration: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := x.Tools.RecordOutcome(ctx, "u1", memory.ToolOutcome{Step: step, Tool: "outlook_send_mail", Error: "401 Unauthorized"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := x.Tools.Stats(ctx, "u1", "email the weekly sales report to the team")
	if err != nil {
		t.Fatal(err)
	}
	want := []memory.ToolStats{
		{Tool: "gmail_send_email", Successes: 5, SuccessRate: 1, Confidence: 1, AvgDuration: 2 * time.Second},
		{Tool: "outlook_send_mail", Failures: 3, Confidence: 0.7, ShouldAvoid: true, LastError: "401 Unauthorized"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats for a similar step (-want +got):\n%s", diff)
	}
	if got, err := x.Tools.Stats(ctx, "u1", "book a flight to Jeju"); err != nil || len(got) != 0 {
		t.Errorf("an unrelated step: %+v, %v", got, err)
	}
	if got, err := x.Tools.Stats(ctx, "u2", "email the weekly sales report to the team"); err != nil || len(got) != 0 {
		t.Errorf("another user: %+v, %v", got, err)
	}
	if err := x.Tools.RecordOutcome(ctx, "u1", memory.ToolOutcome{Tool: "t"}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("no step: %v", err)
	}
}

// The tool index reads the tool memory: what worked rises, what failed
// repeatedly sinks.
func TestToolMemoryDrivesRetrieval(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	x := experience(t, st)
	idx, err := retrieve.New(ctx, st, retrieve.Options{Outcomes: x.Tools})
	if err != nil {
		t.Fatal(err)
	}
	_, err = idx.Sync(ctx, []llm.ToolSpec{
		{Name: "gmail_send_email", Description: "Send an email from your Gmail account."},
		{Name: "outlook_send_mail", Description: "Send an email with Microsoft Outlook."},
		{Name: "smtp_send_email", Description: "Send an email through the company SMTP relay."},
	})
	if err != nil {
		t.Fatal(err)
	}
	step := "send an email to the team with the report"
	before, err := idx.SearchFor(ctx, "u1", step, 3)
	if err != nil {
		t.Fatal(err)
	}
	worst, best := before[2].Spec.Name, before[0].Spec.Name
	for range 5 {
		x.Tools.RecordOutcome(ctx, "u1", memory.ToolOutcome{Step: step, Tool: worst, Success: true})
	}
	for range 3 {
		x.Tools.RecordOutcome(ctx, "u1", memory.ToolOutcome{Step: step, Tool: best})
	}
	after, err := idx.SearchFor(ctx, "u1", step, 3)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Spec.Name != worst || after[2].Spec.Name != best || !after[2].Avoid {
		t.Errorf("before %v, after %v: want %s first and %s avoided last", names(before), names(after), worst, best)
	}
	// Another user's ranking is untouched.
	other, err := idx.SearchFor(ctx, "u2", step, 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names(before), names(other)); diff != "" {
		t.Errorf("u2's ranking changed (-before +after):\n%s", diff)
	}
}

func names(hs []retrieve.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Spec.Name)
	}
	return out
}

func TestPredictAcceptance(t *testing.T) {
	ctx := context.Background()
	x := experience(t, memStore(t))
	check := func(name string, wantP float64, wantN int) {
		t.Helper()
		p, n, err := x.Behaviour.PredictAcceptance(ctx, "u1", "step", "gmail_send_email")
		if err != nil || !near(p, wantP) || n != wantN {
			t.Errorf("%s: p = %v, samples = %d, err = %v; want %v, %d", name, p, n, err, wantP, wantN)
		}
	}
	check("no samples", 0, 0)
	approve := func(action string) {
		if err := x.Behaviour.RecordApproval(ctx, "u1", memory.Approval{Kind: "step", Tool: "gmail_send_email", Action: action, ResponseTime: 4 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	approve("accept")
	check("one accept", 1*(0.7+0.3*0.3), 1) // 0.79: not yet above 0.8
	approve("accept")
	check("two accepts", 0.85, 2)
	approve("edit")
	approve("accept")
	approve("accept")
	check("four of five", 0.8, 5)
	pat, err := x.Behaviour.Pattern(ctx, "u1", "step", "gmail_send_email")
	if err != nil {
		t.Fatal(err)
	}
	if pat.EditRate != 0.2 || pat.Samples != 5 || pat.AvgResponseTime != 4*time.Second {
		t.Errorf("pattern %+v", pat)
	}
	// Another tool, another kind: no samples.
	if p, n, _ := x.Behaviour.PredictAcceptance(ctx, "u1", "plan", ""); p != 0 || n != 0 {
		t.Errorf("plan acceptance: %v, %d", p, n)
	}
}

func TestClarificationReuse(t *testing.T) {
	ctx := context.Background()
	x := experience(t, memStore(t))
	q := "Make a marketing report for last quarter"
	id, err := x.Clarifications.Record(ctx, "u1", memory.Clarification{Query: q, Questions: []string{"Which channels?"}, Response: "Only Instagram and YouTube", Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	// Recording the same request again consolidates.
	if id2, err := x.Clarifications.Record(ctx, "u1", memory.Clarification{Query: "make a marketing report for  LAST quarter", Response: "Instagram and YouTube only", Confidence: 1}); err != nil || id2 != id {
		t.Fatalf("second record: %s, %v; want the same id %s", id2, err, id)
	}
	for i := range 5 {
		got, err := x.Clarifications.FindSimilar(ctx, "u1", q)
		if err != nil || len(got) != 1 {
			t.Fatalf("FindSimilar: %+v, %v", got, err)
		}
		p := got[0]
		if p.Response != "Instagram and YouTube only" || !near(p.RecordedConfidence, 0.95) || p.ReuseCount != i {
			t.Errorf("reuse %d: %+v", i, p)
		}
		if p.AutoApply() {
			t.Errorf("auto-applied after %d reuses", i)
		}
		if err := x.Clarifications.MarkReused(ctx, "u1", p.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	got, err := x.Clarifications.FindSimilar(ctx, "u1", q)
	if err != nil {
		t.Fatal(err)
	}
	if p := got[0]; !p.AutoApply() || p.ReuseCount != 5 || p.SuccessRate != 1 || p.Confidence < 0.9 {
		t.Errorf("after five successful reuses: %+v, want auto-applied", p)
	}
	// A merely similar request does not clear the bar.
	got, err = x.Clarifications.FindSimilar(ctx, "u1", "marketing report for the new product launch")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 1 && got[0].AutoApply() {
		t.Errorf("auto-applied to a different request: %+v", got[0])
	}
	if err := x.Clarifications.MarkReused(ctx, "u1", "no-such-id", true); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("MarkReused of an unknown id: %v", err)
	}
	if _, err := x.Clarifications.Record(ctx, "u1", memory.Clarification{Query: q, Response: "x", Confidence: 2}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("confidence 2: %v", err)
	}
}

func TestPlansAndWorkflows(t *testing.T) {
	ctx := context.Background()
	x := experience(t, memStore(t))
	q := "plan a team offsite in Jeju"
	plan := []string{"pick dates", "book flights", "book hotel"}
	for range 2 {
		if _, err := x.Plans.Record(ctx, "u1", memory.PlanOutcome{Query: q, Plan: plan, Accepted: true, Success: true}); err != nil {
			t.Fatal(err)
		}
	}
	edited := []string{"pick dates", "book hotel"}
	if _, err := x.Plans.Record(ctx, "u1", memory.PlanOutcome{Query: q, Plan: plan, Final: edited, Accepted: true}); err != nil {
		t.Fatal(err)
	}
	got, err := x.Plans.FindSimilar(ctx, "u1", "plan an offsite for the team in Jeju", 5)
	if err != nil || len(got) != 2 {
		t.Fatalf("FindSimilar: %+v, %v", got, err)
	}
	byLen := map[int]memory.PastPlan{len(got[0].Plan): got[0], len(got[1].Plan): got[1]}
	if p := byLen[3]; p.Uses != 2 || p.Successes != 2 || !near(p.Confidence, 0.85) {
		t.Errorf("the plan run twice: %+v", p)
	}
	if p := byLen[2]; p.Uses != 1 || p.Edited != 1 || p.Successes != 0 {
		t.Errorf("the edited plan: %+v", p)
	}

	w := memory.WorkflowRun{Query: q, Category: "travel", Steps: plan, Tools: []string{"flights_search", "hotels_search"}, Success: true, Duration: time.Minute}
	for range 3 {
		if _, err := x.Workflows.Record(ctx, "u1", w); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := x.Workflows.FindSimilar(ctx, "u1", "team offsite in Jeju", 5)
	if err != nil || len(ts) != 1 {
		t.Fatalf("workflows: %+v, %v", ts, err)
	}
	if tpl := ts[0]; tpl.Uses != 3 || !near(tpl.Confidence, 0.91) || tpl.AvgDuration != time.Minute || tpl.Category != "travel" {
		t.Errorf("template %+v", tpl)
	}
}

func TestConcurrentRecordsAreNotLost(t *testing.T) {
	ctx := context.Background()
	x := experience(t, memStore(t))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := x.Tools.RecordOutcome(ctx, "u1", memory.ToolOutcome{Step: "convert the PDF", Tool: "pdf_extract_text", Success: true}); err != nil {
				t.Error(err)
			}
			if err := x.Behaviour.RecordApproval(ctx, "u1", memory.Approval{Kind: "plan", Action: "accept"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	stats, err := x.Tools.Stats(ctx, "u1", "convert the PDF")
	if err != nil || len(stats) != 1 || stats[0].Successes != 20 {
		t.Errorf("stats %+v, %v; want 20 successes", stats, err)
	}
	if _, n, _ := x.Behaviour.PredictAcceptance(ctx, "u1", "plan", ""); n != 20 {
		t.Errorf("%d approvals recorded, want 20", n)
	}
}

func TestExperienceSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "exp.db")
	cfg := store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}}
	st, err := sqlite.Open(ctx, path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := experience(t, st)
	for range 5 {
		x.Behaviour.RecordApproval(ctx, "alice@example.com", memory.Approval{Kind: "step", Tool: "jira_create_issue", Action: "accept"})
	}
	st.Close()
	st, err = sqlite.Open(ctx, path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x = experience(t, st)
	p, n, err := x.Behaviour.PredictAcceptance(ctx, "alice@example.com", "step", "jira_create_issue")
	if err != nil || p != 1 || n != 5 {
		t.Errorf("after reopen: p %v, n %d, %v", p, n, err)
	}
}

// A limit below one is bad input, told as such (it used to panic making a
// slice of negative capacity).
func TestFindSimilarLimit(t *testing.T) {
	ctx := context.Background()
	x := experience(t, memStore(t))
	if _, err := x.Plans.Record(ctx, "u1", memory.PlanOutcome{Query: "plan a launch", Plan: []string{"brief"}, Accepted: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Workflows.Record(ctx, "u1", memory.WorkflowRun{Query: "plan a launch", Steps: []string{"brief"}}); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, -1} {
		if _, err := x.Plans.FindSimilar(ctx, "u1", "plan a launch", limit); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("plans, limit %d: %v, want ErrInvalid", limit, err)
		}
		if _, err := x.Workflows.FindSimilar(ctx, "u1", "plan a launch", limit); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("workflows, limit %d: %v, want ErrInvalid", limit, err)
		}
	}
}
