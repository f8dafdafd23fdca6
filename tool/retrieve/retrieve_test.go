package retrieve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/store/sqlite"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/retrieve"
)

// countingEmbedder counts the texts embedded for storage, and can be told
// to fail.
type countingEmbedder struct {
	*embed.Lexical
	docs atomic.Int64
	fail atomic.Bool
}

var errEmbed = errors.New("embedding service down")

func (c *countingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	if c.fail.Load() {
		return nil, errEmbed
	}
	c.docs.Add(int64(len(texts)))
	return c.Lexical.EmbedDocuments(ctx, texts)
}

func newEmbedder() *countingEmbedder { return &countingEmbedder{Lexical: embed.NewLexical(0)} }

func memStore(t *testing.T, e embed.Embedder) *store.Store {
	t.Helper()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: e}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func spec(name, desc string) llm.ToolSpec {
	return llm.ToolSpec{Name: name, Description: desc, Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}
}

var catalogue = []llm.ToolSpec{
	spec("weather_forecast", "Get the weather forecast for a city for the next days."),
	spec("slack_post_message", "Post a message to a Slack channel."),
	spec("github_create_issue", "Create a new issue in a GitHub repository."),
}

func names(hits []retrieve.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Spec.Name)
	}
	return out
}

func storedKeys(t *testing.T, st *store.Store) []string {
	t.Helper()
	items, err := st.Search(context.Background(), []string{"tools"}, store.SearchOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

func TestSyncEmbedsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	e := newEmbedder()
	st := memStore(t, e)
	x, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		specs      []llm.ToolSpec
		want       retrieve.SyncResult
		wantEmbeds int64
	}{
		{"first sync embeds every tool", catalogue, retrieve.SyncResult{Added: []string{"github_create_issue", "slack_post_message", "weather_forecast"}}, 3},
		{"the same tools embed nothing", catalogue, retrieve.SyncResult{Unchanged: 3}, 0},
		{
			"one changed, one new, one gone",
			[]llm.ToolSpec{
				catalogue[0],
				spec("slack_post_message", "Post a message to a Slack channel or a thread."),
				spec("jira_create_issue", "Create a Jira ticket."),
			},
			retrieve.SyncResult{Added: []string{"jira_create_issue"}, Updated: []string{"slack_post_message"}, Removed: []string{"github_create_issue"}, Unchanged: 1},
			2,
		},
	}
	for _, s := range steps {
		before := e.docs.Load()
		got, err := x.Sync(ctx, s.specs)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: result (-want +got):\n%s", s.name, diff)
		}
		if n := e.docs.Load() - before; n != s.wantEmbeds {
			t.Errorf("%s: embedded %d texts, want %d", s.name, n, s.wantEmbeds)
		}
	}
	if diff := cmp.Diff([]string{"jira_create_issue", "slack_post_message", "weather_forecast"}, storedKeys(t, st), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("stored tools (-want +got):\n%s", diff)
	}
	hits, err := x.Search(ctx, "open a ticket in jira", 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"jira_create_issue"}, names(hits)); diff != "" {
		t.Errorf("search after sync (-want +got):\n%s", diff)
	}
	if x.Len() != 3 {
		t.Errorf("Len = %d, want 3", x.Len())
	}
}

func TestSchemaKeyOrderDoesNotReembed(t *testing.T) {
	ctx := context.Background()
	e := newEmbedder()
	x, err := retrieve.New(ctx, memStore(t, e), retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := llm.ToolSpec{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
	b := a
	b.Parameters = json.RawMessage(`{ "properties": {"a": {"type": "string"}}, "type": "object" }`)
	if _, err := x.Sync(ctx, []llm.ToolSpec{a}); err != nil {
		t.Fatal(err)
	}
	got, err := x.Sync(ctx, []llm.ToolSpec{b})
	if err != nil {
		t.Fatal(err)
	}
	if got.Unchanged != 1 {
		t.Errorf("the same schema spelled differently counted as a change: %+v", got)
	}
	// A real schema change is one.
	c := a
	c.Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)
	if got, err = x.Sync(ctx, []llm.ToolSpec{c}); err != nil || len(got.Updated) != 1 {
		t.Errorf("a changed schema: %+v, %v; want one update", got, err)
	}
}

func TestSyncRejectsBadCatalogue(t *testing.T) {
	ctx := context.Background()
	st := memStore(t, embed.NewLexical(0))
	x, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Sync(ctx, catalogue); err != nil {
		t.Fatal(err)
	}
	for name, specs := range map[string][]llm.ToolSpec{
		"no name":        {catalogue[0], {Description: "nameless"}},
		"duplicate name": {catalogue[0], catalogue[0]},
	} {
		if _, err := x.Sync(ctx, specs); !errors.Is(err, retrieve.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if len(storedKeys(t, st)) != 3 || x.Len() != 3 {
		t.Errorf("a rejected sync changed the index: stored %v, Len %d", storedKeys(t, st), x.Len())
	}
}

func TestSyncFailureKeepsServing(t *testing.T) {
	ctx := context.Background()
	e := newEmbedder()
	x, err := retrieve.New(ctx, memStore(t, e), retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Sync(ctx, catalogue); err != nil {
		t.Fatal(err)
	}
	e.fail.Store(true)
	more := append(catalogue[:3:3], spec("jira_create_issue", "Create a Jira ticket."))
	if _, err := x.Sync(ctx, more); !errors.Is(err, errEmbed) {
		t.Fatalf("err = %v, want the embedder's error", err)
	}
	if hits, err := x.Search(ctx, "weather tomorrow", 1); err != nil || len(hits) != 1 || hits[0].Spec.Name != "weather_forecast" {
		t.Errorf("after a failed sync: %v, %v; want the old catalogue served", names(hits), err)
	}
	e.fail.Store(false)
	got, err := x.Sync(ctx, more)
	if err != nil || len(got.Added) != 1 || got.Unchanged != 3 {
		t.Errorf("retried sync: %+v, %v; want the one new tool added", got, err)
	}
}

func TestIndexSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tools.db")
	e := newEmbedder()
	open := func() *store.Store {
		st, err := sqlite.Open(ctx, path, store.Config{Index: &store.IndexConfig{Embedder: e}})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	x, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Sync(ctx, catalogue); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = open()
	defer st.Close()
	before := e.docs.Load()
	x, err = retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if x.Len() != 3 {
		t.Fatalf("reopened index holds %d tools, want 3", x.Len())
	}
	got, err := x.Sync(ctx, catalogue)
	if err != nil {
		t.Fatal(err)
	}
	if got.Unchanged != 3 || e.docs.Load() != before {
		t.Errorf("sync after reopen: %+v and %d texts embedded; want nothing to do", got, e.docs.Load()-before)
	}
	hits, err := x.Search(ctx, "post in the slack channel", 1)
	if err != nil || len(hits) == 0 || hits[0].Spec.Name != "slack_post_message" {
		t.Errorf("search after reopen: %v, %v", names(hits), err)
	}
}

func TestConcurrentSyncAndSearch(t *testing.T) {
	ctx := context.Background()
	x, err := retrieve.New(ctx, memStore(t, embed.NewLexical(256)), retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	variants := [][]llm.ToolSpec{catalogue, catalogue[:2], append(catalogue[:3:3], spec("jira_create_issue", "Create a Jira ticket."))}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Go(func() {
			for j := range 10 {
				if _, err := x.Sync(ctx, variants[(i+j)%len(variants)]); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				if _, err := x.Search(ctx, "weather in Seoul", 2); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Whatever order they ran in, one more sync settles on its catalogue.
	if _, err := x.Sync(ctx, catalogue); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 3 {
		t.Errorf("Len = %d after the final sync, want 3", x.Len())
	}
}

// outcomes is a fixed tool memory.
type outcomes struct {
	byTool []retrieve.Outcome
	err    error
	asked  []string
}

func (o *outcomes) ToolOutcomes(_ context.Context, user, step string) ([]retrieve.Outcome, error) {
	o.asked = append(o.asked, user+": "+step)
	return o.byTool, o.err
}

func TestMemoryBoostsAndAvoids(t *testing.T) {
	ctx := context.Background()
	specs := []llm.ToolSpec{
		spec("gmail_send_email", "Send an email from your Gmail account."),
		spec("outlook_send_mail", "Send an email with Microsoft Outlook."),
		spec("smtp_send", "Send an email through an SMTP relay."),
	}
	mem := &outcomes{}
	x, err := retrieve.New(ctx, memStore(t, embed.NewLexical(0)), retrieve.Options{Outcomes: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Sync(ctx, specs); err != nil {
		t.Fatal(err)
	}
	base, err := x.Search(ctx, "send an email", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(mem.asked) != 0 {
		t.Errorf("Search without a user read the tool memory: %v", mem.asked)
	}
	last := base[2].Spec.Name
	first := base[0].Spec.Name

	// The last tool succeeded five times for this user: it rises above
	// tools without memory. The first failed three times out of four: it
	// is avoided, ranked last.
	mem.byTool = []retrieve.Outcome{{Tool: last, Successes: 5}, {Tool: first, Successes: 1, Failures: 3}}
	got, err := x.SearchFor(ctx, "u1", "send an email", 3)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Spec.Name != last || got[0].Boost != 0.3 {
		t.Errorf("boosted: first hit %s with boost %v; want %s with 0.3 (order %v)", got[0].Spec.Name, got[0].Boost, last, names(got))
	}
	if got[2].Spec.Name != first || !got[2].Avoid {
		t.Errorf("avoided: last hit %s (avoid %v); want %s avoided (order %v)", got[2].Spec.Name, got[2].Avoid, first, names(got))
	}
	if diff := cmp.Diff([]string{"u1: send an email"}, mem.asked); diff != "" {
		t.Errorf("memory asked (-want +got):\n%s", diff)
	}

	// A tool memory that fails is logged; ranking goes on without it.
	var logs bytes.Buffer
	mem.err = errors.New("memory store unreachable")
	x2, err := retrieve.New(ctx, memStore(t, embed.NewLexical(0)), retrieve.Options{Outcomes: mem, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x2.Sync(ctx, specs); err != nil {
		t.Fatal(err)
	}
	got, err = x2.SearchFor(ctx, "u1", "send an email", 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names(base), names(got)); diff != "" {
		t.Errorf("ranking with a failing memory (-want +got):\n%s", diff)
	}
	if !bytes.Contains(logs.Bytes(), []byte("memory store unreachable")) {
		t.Errorf("the memory failure was not logged: %q", logs.String())
	}
}

func TestColdStart(t *testing.T) {
	for samples, want := range map[int]float64{-1: 0, 0: 0, 1: 0.3, 2: 0.5, 3: 0.7, 4: 0.7, 5: 1, 50: 1} {
		if got := retrieve.ColdStart(samples); got != want {
			t.Errorf("ColdStart(%d) = %v, want %v", samples, got, want)
		}
	}
}

func TestAdjust(t *testing.T) {
	for _, c := range []struct {
		o    retrieve.Outcome
		want retrieve.Adjustment
	}{
		{retrieve.Outcome{}, retrieve.Adjustment{}},
		{retrieve.Outcome{Successes: 1}, retrieve.Adjustment{Boost: 0.3 * 0.3}},
		{retrieve.Outcome{Successes: 1, Failures: 1}, retrieve.Adjustment{Boost: 0.3 * 0.5 * 0.5}},
		{retrieve.Outcome{Successes: 5}, retrieve.Adjustment{Boost: 0.3}},
		{retrieve.Outcome{Failures: 2}, retrieve.Adjustment{}},                                 // two failures: not yet avoided
		{retrieve.Outcome{Failures: 3}, retrieve.Adjustment{Avoid: true}},                      // document 001: failure_count > 2
		{retrieve.Outcome{Successes: 4, Failures: 3}, retrieve.Adjustment{Boost: 0.3 * 4 / 7}}, // mostly succeeds
	} {
		got := retrieve.Adjust(c.o, 0.3, 3)
		if diff := cmp.Diff(c.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("Adjust(%+v) (-want +got):\n%s", c.o, diff)
		}
	}
}

func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	st := memStore(t, embed.NewLexical(0))
	for name, opts := range map[string]retrieve.Options{
		"bad namespace":  {Namespace: []string{"a.b"}},
		"bad ranking":    {Ranking: 7},
		"keyword weight": {KeywordWeight: 1.5},
		"negative boost": {BoostWeight: -1},
	} {
		if _, err := retrieve.New(ctx, st, opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
	x, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Search(ctx, "q", 0); !errors.Is(err, retrieve.ErrInvalid) {
		t.Errorf("k = 0: err = %v, want ErrInvalid", err)
	}
	if hits, err := x.Search(ctx, "q", 5); err != nil || len(hits) != 0 {
		t.Errorf("empty index: %v, %v; want no hits", hits, err)
	}
}

func TestSyncRegistryAndRetrieveTools(t *testing.T) {
	ctx := context.Background()
	type in struct {
		City string `json:"city"`
	}
	weather := tool.New("weather_forecast", "Get the weather forecast for a city.", func(context.Context, in) (string, error) { return "sunny", nil })
	clock := tool.New("time_now", "Get the current time in a time zone.", func(context.Context, in) (string, error) { return "noon", nil })
	reg, err := tool.NewRegistry(weather, clock)
	if err != nil {
		t.Fatal(err)
	}
	x, err := retrieve.New(ctx, memStore(t, embed.NewLexical(0)), retrieve.Options{Namespace: []string{"catalogues", "team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.SyncRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	got, err := x.RetrieveTools(ctx, "", "will it rain in the city tomorrow? weather forecast", 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"weather_forecast"}, got); diff != "" {
		t.Errorf("RetrieveTools (-want +got):\n%s", diff)
	}
	if fmt.Sprint(x.Namespace()) != "[catalogues team-a]" {
		t.Errorf("Namespace = %v", x.Namespace())
	}
}

// An index kept by SyncRegistry in a tool source's OnChange (tool/mcp's
// Manager) follows the registry: a tool added while agents run is found by
// search, an updated one by its new description, a removed one no more.
// The source here applies its changes the way the MCP manager does: one
// tool.Change per listing, then OnChange.
func TestSyncRegistryOnChange(t *testing.T) {
	ctx := context.Background()
	type in struct {
		Text string `json:"text"`
	}
	fn := func(context.Context, in) (string, error) { return "ok", nil }
	reg, err := tool.NewRegistry(
		tool.New("weather_forecast", "Get the weather forecast for a city.", fn),
		tool.New("slack_post_message", "Post a message to a Slack channel.", fn),
	)
	if err != nil {
		t.Fatal(err)
	}
	st := memStore(t, embed.NewLexical(0))
	x, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.SyncRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	var synced []retrieve.SyncResult
	onChange := func(tool.Change) {
		res, err := x.SyncRegistry(ctx, reg)
		if err != nil {
			t.Errorf("SyncRegistry after a change: %v", err)
		}
		synced = append(synced, res)
	}
	apply := func(c tool.Change) {
		t.Helper()
		c, err := reg.Apply(c)
		if err != nil {
			t.Fatal(err)
		}
		onChange(c)
	}
	top := func(query string) string {
		t.Helper()
		hits, err := x.Search(ctx, query, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Spec.Name
	}
	const query = "translate this korean text into english"
	if got := top(query); got == "mcp__translate" {
		t.Fatal("found a tool before it was added")
	}

	apply(tool.Change{Added: []*tool.Tool{tool.New("mcp__translate", "Translate text from Korean into English.", fn)}})
	if got := top(query); got != "mcp__translate" {
		t.Errorf("after the tool was added, the best hit for %q is %q", query, got)
	}
	apply(tool.Change{Updated: []*tool.Tool{tool.New("mcp__translate", "Summarize a long document in three sentences.", fn)}})
	if got := top("summarize this long document"); got != "mcp__translate" {
		t.Errorf("after the update, the best hit is %q", got)
	}
	apply(tool.Change{Removed: []string{"mcp__translate"}})
	if got := top("summarize this long document"); got == "mcp__translate" {
		t.Error("a removed tool is still found")
	}
	want := []retrieve.SyncResult{
		{Added: []string{"mcp__translate"}, Unchanged: 2},
		{Updated: []string{"mcp__translate"}, Unchanged: 2},
		{Removed: []string{"mcp__translate"}, Unchanged: 2},
	}
	if diff := cmp.Diff(want, synced); diff != "" {
		t.Errorf("what each change synced (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"slack_post_message", "weather_forecast"}, storedKeys(t, st), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("stored tools (-want +got):\n%s", diff)
	}
}

// Changes reported from several goroutines, each syncing on a goroutine of
// its own in whatever order they are scheduled, leave the index holding
// the registry's final tools: SyncRegistry reads the registry once its turn
// has come, so a sync that read an older registry never runs last.
func TestSyncRegistryConcurrentChanges(t *testing.T) {
	ctx := context.Background()
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	st := memStore(t, embed.NewLexical(0))
	x, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, struct{}) (string, error) { return "ok", nil }
	var syncs sync.WaitGroup
	onChange := func(tool.Change) {
		syncs.Go(func() {
			if _, err := x.SyncRegistry(ctx, reg); err != nil {
				t.Error(err)
			}
		})
	}
	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() {
			for i := range 10 {
				name := fmt.Sprintf("s%d_tool_%d", w, i)
				c, err := reg.Apply(tool.Change{Added: []*tool.Tool{tool.New(name, "Does thing "+name+".", fn)}})
				if err != nil {
					t.Error(err)
					return
				}
				onChange(c)
				if i%3 == 0 {
					c, err := reg.Apply(tool.Change{Removed: []string{name}})
					if err != nil {
						t.Error(err)
						return
					}
					onChange(c)
				}
			}
		})
	}
	writers.Wait()
	syncs.Wait()
	want := reg.Names()
	if len(want) != 3*6 {
		t.Fatalf("%d tools registered, want 18", len(want))
	}
	if diff := cmp.Diff(want, storedKeys(t, st), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("stored tools differ from the registry's (-registry +index):\n%s", diff)
	}
	if x.Len() != len(want) {
		t.Errorf("index holds %d tools, registry %d", x.Len(), len(want))
	}
}
