package checkpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
)

func testPutGet(t *testing.T, s *checkpoint.Saver) {
	if tp, err := s.Get(bg, checkpoint.Config{ThreadID: "t"}); tp != nil || err != nil {
		t.Fatalf("Get on an empty saver = %v, %v; want nil, nil", tp, err)
	}
	_, err := s.Get(bg, checkpoint.Config{ThreadID: "t", CheckpointID: "nope"})
	wantErr(t, err, checkpoint.ErrNotFound, "Get of a missing checkpoint id")

	c1 := cp("0001", map[string]int64{"a": 1, "msgs": 1, "e": 1}, map[string]map[string]int64{"n": {"a": 1}}, "a", "msgs")
	meta1 := checkpoint.Metadata{Source: "input", Step: -1, Extra: map[string]any{"user": "ann", "score": 1.5, "ok": true}}
	mustPut(t, s, "t", "", "", c1, meta1,
		full("a", 1, `{"x":1}`), full("msgs", 1, `["m1"]`), checkpoint.Blob{Channel: "e", Version: 1, Empty: true})

	got := mustGet(t, s, "t", "", "")
	want := &checkpoint.Tuple{
		Config:     checkpoint.Config{ThreadID: "t", CheckpointID: "0001"},
		Checkpoint: c1.Clone(),
		Metadata:   meta1,
	}
	want.Checkpoint.Values = map[string]json.RawMessage{"a": json.RawMessage(`{"x":1}`), "msgs": json.RawMessage(`["m1"]`)}
	if d := cmp.Diff(want, got, tupleOpts); d != "" {
		t.Fatalf("Get latest after one Put (-want +got):\n%s", d)
	}

	c2 := cp("0002", map[string]int64{"a": 1, "msgs": 2, "e": 1}, map[string]map[string]int64{"n": {"a": 1, "msgs": 2}}, "msgs")
	meta2 := checkpoint.Metadata{Source: "loop", Step: 0}
	mustPut(t, s, "t", "", "0001", c2, meta2, appended("msgs", 2, 1, `"m2"`, `{"role":"ai"}`))
	got = mustGet(t, s, "t", "", "")
	if got.Config.CheckpointID != "0002" || got.Parent == nil || got.Parent.CheckpointID != "0001" {
		t.Fatalf("latest = %+v parent %+v; want 0002 with parent 0001", got.Config, got.Parent)
	}
	if d := cmp.Diff(map[string]string{"a": `{"x":1}`, "msgs": `["m1","m2",{"role":"ai"}]`}, values(got)); d != "" {
		t.Fatalf("values of 0002 (-want +got):\n%s", d)
	}
	if d := cmp.Diff(c2.VersionsSeen, got.Checkpoint.VersionsSeen); d != "" {
		t.Fatalf("versions seen (-want +got):\n%s", d)
	}
	if got := mustGet(t, s, "t", "", "0001"); string(got.Checkpoint.Values["msgs"]) != `["m1"]` {
		t.Fatalf("0001 msgs = %s after a child appended; want [\"m1\"]", got.Checkpoint.Values["msgs"])
	}

	// Namespaces are separate.
	mustPut(t, s, "t", "sub:1", "", cp("0003", map[string]int64{"a": 1}, nil), checkpoint.Metadata{Source: "loop", Step: 1, Parents: map[string]string{"": "0002"}},
		full("a", 1, `"sub"`))
	if got := mustGet(t, s, "t", "", ""); got.Config.CheckpointID != "0002" {
		t.Fatalf("root latest = %s after a Put in a subgraph namespace; want 0002", got.Config.CheckpointID)
	}
	sub := mustGet(t, s, "t", "sub:1", "")
	if string(sub.Checkpoint.Values["a"]) != `"sub"` || sub.Metadata.Parents[""] != "0002" {
		t.Fatalf("subgraph checkpoint = %s %v", sub.Checkpoint.Values["a"], sub.Metadata.Parents)
	}
	if _, err := s.Get(bg, checkpoint.Config{ThreadID: "t", Namespace: "sub:1", CheckpointID: "0001"}); err == nil {
		t.Fatal("Get of a root checkpoint id in a subgraph namespace succeeded")
	}

	// Putting a checkpoint id again replaces it.
	meta2b := checkpoint.Metadata{Source: "update", Step: 0}
	mustPut(t, s, "t", "", "0001", c2, meta2b, appended("msgs", 2, 1, `"m2"`, `{"role":"ai"}`))
	if got := mustGet(t, s, "t", "", "0002"); got.Metadata.Source != "update" || string(got.Checkpoint.Values["msgs"]) != `["m1","m2",{"role":"ai"}]` {
		t.Fatalf("after a second Put of 0002: source %q msgs %s", got.Metadata.Source, got.Checkpoint.Values["msgs"])
	}
	if n := len(dump(t, s, "t")); n != 3 {
		t.Fatalf("thread has %d checkpoints after putting 0002 twice; want 3", n)
	}
	// Updated channels come back as written.
	if got := mustGet(t, s, "t", "", "0002"); !cmp.Equal(got.Checkpoint.UpdatedChannels, []string{"msgs"}) {
		t.Fatalf("updated channels = %v; want [msgs]", got.Checkpoint.UpdatedChannels)
	}
	if !got.Checkpoint.TS.Equal(c2.TS) {
		t.Fatalf("TS = %v; want %v", got.Checkpoint.TS, c2.TS)
	}
}

func testList(t *testing.T, s *checkpoint.Saver) {
	var g idGen
	parent := ""
	var all []string
	for i := range 6 {
		id := g.next()
		src := "loop"
		if i == 0 {
			src = "input"
		}
		meta := checkpoint.Metadata{Source: src, Step: i - 1, Extra: map[string]any{"run": fmt.Sprintf("r%d", i%2)}}
		mustPut(t, s, "t", "", parent, cp(id, map[string]int64{"c": int64(i + 1)}, nil), meta, full("c", int64(i+1), fmt.Sprint(i)))
		parent = id
		all = append([]string{id}, all...)
	}
	subID := g.next()
	mustPut(t, s, "t", "child:x", "", cp(subID, nil, nil), checkpoint.Metadata{Source: "loop", Step: 3})
	mustPut(t, s, "other", "", "", cp(g.next(), nil, nil), checkpoint.Metadata{Source: "input", Step: -1})

	root := ""
	sub := "child:x"
	cases := []struct {
		name string
		opts checkpoint.ListOptions
		want []string
	}{
		{"all namespaces", checkpoint.ListOptions{}, append([]string{subID}, all...)},
		{"root", checkpoint.ListOptions{Namespace: &root}, all},
		{"subgraph", checkpoint.ListOptions{Namespace: &sub}, []string{subID}},
		{"limit", checkpoint.ListOptions{Namespace: &root, Limit: 2}, all[:2]},
		{"before", checkpoint.ListOptions{Before: all[1]}, all[2:]},
		{"before and limit", checkpoint.ListOptions{Before: all[1], Limit: 1}, all[2:3]},
		{"filter source", checkpoint.ListOptions{Filter: map[string]any{"source": "input"}}, all[5:]},
		{"filter step", checkpoint.ListOptions{Filter: map[string]any{"step": 3}}, []string{subID, all[1]}},
		{"filter extra", checkpoint.ListOptions{Namespace: &root, Filter: map[string]any{"run": "r1"}}, []string{all[0], all[2], all[4]}},
		{"filter and limit", checkpoint.ListOptions{Namespace: &root, Filter: map[string]any{"run": "r0"}, Limit: 2}, []string{all[1], all[3]}},
		{"filter no match", checkpoint.ListOptions{Filter: map[string]any{"run": "zzz"}}, nil},
	}
	for _, c := range cases {
		got := ids(collect(t, s.List(bg, "t", c.opts)))
		if d := cmp.Diff(c.want, got, tupleOpts); d != "" {
			t.Errorf("List %s (-want +got):\n%s", c.name, d)
		}
	}
	if got := collect(t, s.List(bg, "missing", checkpoint.ListOptions{})); len(got) != 0 {
		t.Errorf("List of a missing thread = %v", ids(got))
	}
	// Values are filled in listed tuples.
	for _, tp := range collect(t, s.List(bg, "t", checkpoint.ListOptions{Namespace: &root})) {
		if _, ok := tp.Checkpoint.Values["c"]; !ok {
			t.Errorf("listed checkpoint %s has no value for c", tp.Config.CheckpointID)
		}
	}
	// Stopping early is allowed.
	for range s.List(bg, "t", checkpoint.ListOptions{}) {
		break
	}
	for _, err := range s.List(bg, "t", checkpoint.ListOptions{Limit: -1}) {
		wantErr(t, err, checkpoint.ErrInvalid, "List with a negative limit")
	}
}

// history builds a thread the way the runtime does, with a model of what
// every checkpoint must read back as.
type history struct {
	t      *testing.T
	s      *checkpoint.Saver
	thread string
	g      idGen
	want   map[string]map[string]string // checkpoint id -> channel -> JSON
	nodes  map[string]*node
}

// historyStart is the time of a history's first checkpoint; each step is a
// minute later.
var historyStart = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// node is one checkpoint of the model.
type node struct {
	id       string
	versions map[string]int64
	items    []string // the messages channel, as JSON items
	counter  int
}

func newHistory(t *testing.T, s *checkpoint.Saver, thread string) *history {
	return &history{t: t, s: s, thread: thread, want: map[string]map[string]string{}, nodes: map[string]*node{}}
}

func (h *history) render(n *node) map[string]string {
	return map[string]string{
		"messages": "[" + strings.Join(n.items, ",") + "]",
		"counter":  fmt.Sprint(n.counter),
	}
}

// step puts a child of parent (nil: a first checkpoint) that appends items
// to messages, or replaces them whole when replace is set.
func (h *history) step(parent *node, items []string, replace bool) *node {
	h.t.Helper()
	n := &node{id: h.g.next(), versions: map[string]int64{}}
	var maxV int64
	parentID := ""
	if parent != nil {
		parentID = parent.id
		for k, v := range parent.versions {
			n.versions[k] = v
			maxV = max(maxV, v)
		}
		n.items = append([]string(nil), parent.items...)
		n.counter = parent.counter
	}
	next := maxV + 1
	var blobs []checkpoint.Blob
	switch {
	case parent == nil || replace:
		n.items = append([]string(nil), items...)
		n.versions["messages"] = next
		blobs = append(blobs, full("messages", next, "["+strings.Join(n.items, ",")+"]"))
	default:
		n.items = append(n.items, items...)
		n.versions["messages"] = next
		blobs = append(blobs, appended("messages", next, parent.versions["messages"], items...))
	}
	// The counter changes every third step, so unchanged channels are
	// inherited from older versions.
	if parent == nil || h.g.n%3 == 0 {
		n.counter++
		n.versions["counter"] = next
		blobs = append(blobs, full("counter", next, fmt.Sprint(n.counter)))
	}
	c := cp(n.id, n.versions, map[string]map[string]int64{"agent": {"messages": n.versions["messages"]}})
	c.TS = historyStart.Add(time.Duration(h.g.n) * time.Minute)
	mustPut(h.t, h.s, h.thread, "", parentID, c, checkpoint.Metadata{Source: "loop", Step: h.g.n}, blobs...)
	h.want[n.id] = h.render(n)
	h.nodes[n.id] = n
	return n
}

// check reads every checkpoint of the model back.
func (h *history) check() {
	h.t.Helper()
	for id, want := range h.want {
		got := mustGet(h.t, h.s, h.thread, "", id)
		if d := cmp.Diff(want, values(got)); d != "" {
			h.t.Fatalf("checkpoint %s (-want +got):\n%s", id, d)
		}
	}
}

func msg(i int, branch string) string {
	return fmt.Sprintf(`{"id":"%s%d","role":"ai","text":"message %d %s"}`, branch, i, i, strings.Repeat("x", i%7))
}

func testDeltaHistory(t *testing.T, s *checkpoint.Saver) {
	h := newHistory(t, s, "long")
	rnd := rand.New(rand.NewPCG(1, 2))
	cur := h.step(nil, []string{msg(0, "m")}, false)
	var forkPoints []*node
	const steps = 600
	for i := 1; i < steps; i++ {
		var items []string
		for j := range rnd.IntN(4) { // 0 to 3 items; 0 is an append of nothing
			items = append(items, msg(i*10+j, "m"))
		}
		replace := i%250 == 0 // a non-append change: the list is rewritten
		if replace {
			items = append([]string{msg(i, "summary")}, cur.items[len(cur.items)-3:]...)
		}
		cur = h.step(cur, items, replace)
		if i%150 == 0 {
			forkPoints = append(forkPoints, cur)
		}
	}
	// Branches from older checkpoints append to a log that has grown past
	// them, and reuse version numbers the main line already has.
	for bi, fp := range forkPoints {
		b := fp
		for k := range 40 {
			b = h.step(b, []string{msg(k, fmt.Sprintf("b%d-", bi))}, false)
		}
		// A branch of a branch of a branch.
		bb := b
		for depth := range 6 {
			back := h.nodes[bb.id]
			bb = h.step(back, []string{msg(depth, "deep")}, false)
			bb = h.step(bb, []string{msg(depth, "deeper")}, false)
			_ = h.step(back, []string{msg(depth, "side")}, false)
		}
	}
	// And the main line goes on after the forks.
	for i := range 50 {
		cur = h.step(cur, []string{msg(i, "tail")}, false)
	}
	h.check()
}

func testForkReusesVersions(t *testing.T, s *checkpoint.Saver) {
	// A replay from checkpoint A makes B' with the same versions as B but
	// other values (a model answered differently). Both branches must keep
	// their own values.
	mustPut(t, s, "t", "", "", cp("a", map[string]int64{"msgs": 1, "v": 1}, nil), checkpoint.Metadata{}, full("msgs", 1, `["q"]`), full("v", 1, `"one"`))
	mustPut(t, s, "t", "", "a", cp("b", map[string]int64{"msgs": 2, "v": 2}, nil), checkpoint.Metadata{}, appended("msgs", 2, 1, `"answer 1"`), full("v", 2, `"two"`))
	mustPut(t, s, "t", "", "b", cp("c", map[string]int64{"msgs": 3, "v": 2}, nil), checkpoint.Metadata{}, appended("msgs", 3, 2, `"more"`))
	mustPut(t, s, "t", "", "a", cp("b2", map[string]int64{"msgs": 2, "v": 2}, nil), checkpoint.Metadata{Source: "fork"}, appended("msgs", 2, 1, `"answer 2"`), full("v", 2, `"TWO"`))
	mustPut(t, s, "t", "", "b2", cp("c2", map[string]int64{"msgs": 3, "v": 2}, nil), checkpoint.Metadata{}, appended("msgs", 3, 2, `"again"`))
	want := map[string]map[string]string{
		"a":  {"msgs": `["q"]`, "v": `"one"`},
		"b":  {"msgs": `["q","answer 1"]`, "v": `"two"`},
		"c":  {"msgs": `["q","answer 1","more"]`, "v": `"two"`},
		"b2": {"msgs": `["q","answer 2"]`, "v": `"TWO"`},
		"c2": {"msgs": `["q","answer 2","again"]`, "v": `"TWO"`},
	}
	for id, w := range want {
		if d := cmp.Diff(w, values(mustGet(t, s, "t", "", id))); d != "" {
			t.Errorf("checkpoint %s (-want +got):\n%s", id, d)
		}
	}
}

// chunked is implemented by drivers that store appends in merged chunks
// (the SQL drivers); the cadence test runs only for them.
type chunked interface {
	SnapshotEvery() int
	Stats(ctx context.Context, threadID string) (sqlstore.Stats, error)
}

func testSnapshotCadence(t *testing.T, s *checkpoint.Saver) {
	d, ok := s.Driver().(chunked)
	if !ok {
		t.Skipf("%T stores values whole; no chunk cadence to check", s.Driver())
	}
	n := d.SnapshotEvery()
	// Appends go to the log's open tail, one slot row each; every N-th
	// append seals the tail into one chunk, and the next tail reuses the
	// slots.
	h := newHistory(t, s, "cadence")
	cur := h.step(nil, []string{msg(0, "m")}, false)
	appends := 0
	checkAt := map[int]bool{1: true, n - 1: true, n: true, n + 1: true, 2*n + 3: true, 3 * n: true}
	stats := func() sqlstore.Stats {
		t.Helper()
		st, err := d.Stats(bg, "cadence")
		if err != nil {
			t.Fatal(err)
		}
		if st.Logs != 1 {
			t.Fatalf("after %d appends: %d logs, want 1", appends, st.Logs)
		}
		return st
	}
	for appends < 3*n {
		cur = h.step(cur, []string{msg(appends, "m")}, false)
		appends++
		if !checkAt[appends] {
			continue
		}
		if st := stats(); st.Chunks != int64(appends/n) || st.Tails != int64(min(appends, n-1)) {
			t.Fatalf("after %d appends with N=%d: %d chunks and %d tail slots, want %d and %d", appends, n, st.Chunks, st.Tails, appends/n, min(appends, n-1))
		}
	}
	// An append too large for a slot seals the tail at once, with it.
	cur = h.step(cur, []string{msg(1, "m"), msg(2, "m")}, false)
	cur = h.step(cur, []string{bigItem(4000)}, false)
	if st := stats(); st.Chunks != 4 {
		t.Fatalf("after a large append: %d chunks, want 4", st.Chunks)
	}
	// And one on an empty tail is a chunk of its own.
	cur = h.step(cur, []string{bigItem(5000)}, false)
	h.step(cur, []string{msg(3, "m")}, false)
	if st := stats(); st.Chunks != 5 {
		t.Fatalf("after a large append on an empty tail: %d chunks, want 5", st.Chunks)
	}
	h.check()
}

// bigItem is a JSON string of n bytes that compresses poorly.
func bigItem(n int) string {
	rnd := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n-2)
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	for i := range b {
		b[i] = chars[rnd.IntN(len(chars))]
	}
	return `"` + string(b) + `"`
}

func testPendingWrites(t *testing.T, s *checkpoint.Saver) {
	mustPut(t, s, "t", "", "", cp("c1", nil, nil), checkpoint.Metadata{})
	cfg := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
	pw := func(ch, v string) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{Channel: ch, Value: json.RawMessage(v)}
	}
	put := func(task string, ws ...checkpoint.PendingWrite) {
		t.Helper()
		if err := s.PutWrites(bg, cfg, task, ws); err != nil {
			t.Fatalf("PutWrites %s: %v", task, err)
		}
	}
	put("task-a", pw("x", `1`), pw("y", `"a"`))
	put("task-b", pw(checkpoint.ErrorChannel, `"boom"`))
	// The same task's regular writes again: stored once.
	put("task-a", pw("x", `2`), pw("z", `3`))
	// Special channels replace the task's earlier write.
	put("task-b", pw(checkpoint.ErrorChannel, `"boom again"`))
	put("task-c", pw(checkpoint.InterruptChannel, `[{"id":"i1","value":"?"}]`))
	put("task-c", pw(checkpoint.ResumeChannel, `["yes"]`))
	put("task-c", pw(checkpoint.ResumeChannel, `["yes","no"]`), pw(checkpoint.InterruptChannel, `[{"id":"i2","value":"??"}]`))
	// A task's writes may follow its special writes.
	put("task-b", pw("x", `9`))
	put(checkpoint.NullTaskID, pw(checkpoint.ResumeChannel, `"all"`))
	// Several regular writes in one call, around a special one, with and
	// without values: all kept, in order.
	put("task-d", pw("x", `1`), pw("y", `{"k": [1, 2]}`), checkpoint.PendingWrite{Channel: "none"}, pw(checkpoint.ErrorChannel, `"e"`), pw("z", `null`))

	got := mustGet(t, s, "t", "", "c1").PendingWrites
	want := []checkpoint.PendingWrite{
		{TaskID: "task-a", Channel: "x", Value: json.RawMessage(`1`)},
		{TaskID: "task-a", Channel: "y", Value: json.RawMessage(`"a"`)},
		{TaskID: "task-b", Channel: checkpoint.ErrorChannel, Value: json.RawMessage(`"boom again"`)},
		{TaskID: "task-c", Channel: checkpoint.InterruptChannel, Value: json.RawMessage(`[{"id":"i2","value":"??"}]`)},
		{TaskID: "task-c", Channel: checkpoint.ResumeChannel, Value: json.RawMessage(`["yes","no"]`)},
		{TaskID: "task-b", Channel: "x", Value: json.RawMessage(`9`)},
		{TaskID: checkpoint.NullTaskID, Channel: checkpoint.ResumeChannel, Value: json.RawMessage(`"all"`)},
		{TaskID: "task-d", Channel: "x", Value: json.RawMessage(`1`)},
		{TaskID: "task-d", Channel: "y", Value: json.RawMessage(`{"k": [1, 2]}`)},
		{TaskID: "task-d", Channel: "none"},
		{TaskID: "task-d", Channel: checkpoint.ErrorChannel, Value: json.RawMessage(`"e"`)},
		{TaskID: "task-d", Channel: "z", Value: json.RawMessage(`null`)},
	}
	if d := cmp.Diff(want, got, tupleOpts); d != "" {
		t.Fatalf("pending writes (-want +got):\n%s", d)
	}
	// Writes belong to their checkpoint only.
	mustPut(t, s, "t", "", "c1", cp("c2", nil, nil), checkpoint.Metadata{})
	if got := mustGet(t, s, "t", "", "c2").PendingWrites; len(got) != 0 {
		t.Fatalf("new checkpoint has pending writes %v", got)
	}
	if got := mustGet(t, s, "t", "", "c1").PendingWrites; len(got) != len(want) {
		t.Fatalf("c1 has %d pending writes after a child was put; want %d", len(got), len(want))
	}
	err := s.PutWrites(bg, checkpoint.Config{ThreadID: "t"}, "task", []checkpoint.PendingWrite{pw("x", "1")})
	wantErr(t, err, checkpoint.ErrInvalid, "PutWrites without a checkpoint id")
	err = s.PutWrites(bg, cfg, "", []checkpoint.PendingWrite{pw("x", "1")})
	wantErr(t, err, checkpoint.ErrInvalid, "PutWrites without a task id")
}

func testListThreads(t *testing.T, s *checkpoint.Saver) {
	var g idGen
	put := func(thread string, extra map[string]any) string {
		id := g.next()
		mustPut(t, s, thread, "", "", cp(id, nil, nil), checkpoint.Metadata{Source: "input", Step: -1, Extra: extra})
		return id
	}
	put("a", map[string]any{"user": "ann"})
	put("b", map[string]any{"user": "bob"})
	put("c", map[string]any{"user": "ann", "team": "x"})
	last := put("a", map[string]any{"user": "ann", "team": "x"}) // a is now the newest
	mustPut(t, s, "d", "sub:1", "", cp(g.next(), nil, nil), checkpoint.Metadata{Extra: map[string]any{"user": "ann"}})

	threads := func(f checkpoint.ThreadFilter) []string {
		var out []string
		for _, ti := range collect(t, s.ListThreads(bg, f)) {
			out = append(out, ti.ThreadID)
		}
		return out
	}
	cases := []struct {
		name string
		f    checkpoint.ThreadFilter
		want []string
	}{
		{"all", checkpoint.ThreadFilter{}, []string{"a", "c", "b"}},
		{"by user", checkpoint.ThreadFilter{Metadata: map[string]any{"user": "ann"}}, []string{"a", "c"}},
		{"by two keys", checkpoint.ThreadFilter{Metadata: map[string]any{"user": "ann", "team": "x"}}, []string{"a", "c"}},
		{"limit", checkpoint.ThreadFilter{Limit: 2}, []string{"a", "c"}},
		{"filter and limit", checkpoint.ThreadFilter{Metadata: map[string]any{"user": "ann"}, Limit: 1}, []string{"a"}},
		{"no match", checkpoint.ThreadFilter{Metadata: map[string]any{"user": "zed"}}, nil},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, threads(c.f), tupleOpts); d != "" {
			t.Errorf("ListThreads %s (-want +got):\n%s", c.name, d)
		}
	}
	first := collect(t, s.ListThreads(bg, checkpoint.ThreadFilter{Limit: 1}))[0]
	if first.Latest.CheckpointID != last || first.Metadata.Extra["team"] != "x" || first.UpdatedAt.IsZero() {
		t.Errorf("thread info = %+v; want latest %s with team x", first, last)
	}
	for _, err := range s.ListThreads(bg, checkpoint.ThreadFilter{Limit: -1}) {
		wantErr(t, err, checkpoint.ErrInvalid, "ListThreads with a negative limit")
	}
}

// buildThread makes a thread of 40 steps with two namespaces, deltas and
// writes.
func buildThread(t *testing.T, s *checkpoint.Saver, thread string) {
	buildThreadN(t, s, thread, 40)
}

// buildThreadN is buildThread with n steps.
func buildThreadN(t *testing.T, s *checkpoint.Saver, thread string, n int) {
	h := newHistory(t, s, thread)
	cur := h.step(nil, []string{msg(0, "m")}, false)
	for i := 1; i < n; i++ {
		cur = h.step(cur, []string{msg(i, "m")}, false)
	}
	if err := s.PutWrites(bg, checkpoint.Config{ThreadID: thread, CheckpointID: cur.id}, "task-1",
		[]checkpoint.PendingWrite{{Channel: "messages", Value: json.RawMessage(`[{"msg":"x"}]`)}}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, thread, "sub:1", "", cp("zz-sub", map[string]int64{"s": 1}, nil), checkpoint.Metadata{Parents: map[string]string{"": cur.id}}, full("s", 1, `"sub"`))
	if err := s.PutWrites(bg, checkpoint.Config{ThreadID: thread, Namespace: "sub:1", CheckpointID: "zz-sub"}, "task-2",
		[]checkpoint.PendingWrite{{Channel: checkpoint.InterruptChannel, Value: json.RawMessage(`[]`)}}); err != nil {
		t.Fatal(err)
	}
}

// retarget rewrites a dump as if it belonged to another thread.
func retarget(tps []*checkpoint.Tuple, thread string) []*checkpoint.Tuple {
	out := make([]*checkpoint.Tuple, len(tps))
	for i, tp := range tps {
		c := *tp
		c.Config.ThreadID = thread
		if c.Parent != nil {
			p := *c.Parent
			p.ThreadID = thread
			c.Parent = &p
		}
		out[i] = &c
	}
	return out
}

func testCopyThread(t *testing.T, s *checkpoint.Saver) {
	buildThread(t, s, "src")
	before := dump(t, s, "src")
	if err := s.CopyThread(bg, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	if d := diffTuples(retarget(before, "dst"), dump(t, s, "dst")); d != "" {
		t.Fatalf("copy differs from the source (-want +got):\n%s", d)
	}
	// The copy is independent: writing to it leaves the source alone.
	latest := mustGet(t, s, "dst", "", "")
	v := latest.Checkpoint.Versions["messages"]
	mustPut(t, s, "dst", "", latest.Config.CheckpointID, cp("zzzz", map[string]int64{"messages": v + 1, "counter": latest.Checkpoint.Versions["counter"]}, nil), checkpoint.Metadata{},
		appended("messages", v+1, v, `"only in dst"`))
	if d := diffTuples(before, dump(t, s, "src")); d != "" {
		t.Fatalf("source changed after writing to the copy (-want +got):\n%s", d)
	}
	if got := mustGet(t, s, "dst", "", "zzzz").Checkpoint.Values["messages"]; !strings.HasSuffix(string(got), `,"only in dst"]`) {
		t.Fatalf("copy's new checkpoint = %s", got)
	}
	wantErr(t, s.CopyThread(bg, "src", "dst"), checkpoint.ErrInvalid, "CopyThread onto a thread with checkpoints")
	wantErr(t, s.CopyThread(bg, "nothing", "x"), checkpoint.ErrNotFound, "CopyThread of a missing thread")
	wantErr(t, s.CopyThread(bg, "src", "src"), checkpoint.ErrInvalid, "CopyThread onto itself")
	wantErr(t, s.CopyThread(bg, "src", ""), checkpoint.ErrInvalid, "CopyThread without a destination")
}

func testDeleteThread(t *testing.T, s *checkpoint.Saver) {
	buildThread(t, s, "gone")
	buildThread(t, s, "kept")
	before := dump(t, s, "kept")
	if err := s.DeleteThread(bg, "gone"); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s, "gone"); len(got) != 0 {
		t.Fatalf("deleted thread still lists %d checkpoints", len(got))
	}
	for _, ns := range []string{"", "sub:1"} {
		if tp, err := s.Get(bg, checkpoint.Config{ThreadID: "gone", Namespace: ns}); tp != nil || err != nil {
			t.Fatalf("Get in deleted thread ns %q = %v, %v", ns, tp, err)
		}
	}
	if d := diffTuples(before, dump(t, s, "kept")); d != "" {
		t.Fatalf("other thread changed (-want +got):\n%s", d)
	}
	for _, ti := range collect(t, s.ListThreads(bg, checkpoint.ThreadFilter{})) {
		if ti.ThreadID == "gone" {
			t.Fatal("deleted thread is still listed")
		}
	}
	// The id can be used again from scratch, deltas included.
	buildThread(t, s, "gone")
	if err := s.DeleteThread(bg, "never-existed"); err != nil {
		t.Fatalf("DeleteThread of a missing thread: %v", err)
	}
	wantErr(t, s.DeleteThread(bg, ""), checkpoint.ErrInvalid, "DeleteThread without a thread id")
}

func testPrune(t *testing.T, s *checkpoint.Saver) {
	// A main line of 120 steps with a summary rewrite and a fork, so kept
	// checkpoints depend on logs and bases made long before them.
	h := newHistory(t, s, "p")
	cur := h.step(nil, []string{msg(0, "m")}, false)
	var fork *node
	for i := 1; i < 120; i++ {
		cur = h.step(cur, []string{msg(i, "m")}, i == 60)
		if i == 90 {
			fork = cur
		}
	}
	b := fork
	for i := range 5 {
		b = h.step(b, []string{msg(i, "fork")}, false)
	}
	tuples := dump(t, s, "p")
	times := map[string]time.Time{}
	for _, tp := range tuples {
		times[tp.Config.CheckpointID] = tp.Checkpoint.TS
	}
	h.check()
	if err := s.PutWrites(bg, checkpoint.Config{ThreadID: "p", CheckpointID: tuples[len(tuples)-1].Config.CheckpointID}, "old-task",
		[]checkpoint.PendingWrite{{Channel: "x", Value: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	buildThread(t, s, "other")
	other := dump(t, s, "other")

	// Keep the newest 30: the 5 fork checkpoints and 25 of the main line.
	n, err := s.Prune(bg, "p", checkpoint.PruneOptions{KeepLatest: 30})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(tuples)-30 {
		t.Fatalf("Prune deleted %d checkpoints; want %d", n, len(tuples)-30)
	}
	kept := dump(t, s, "p")
	if d := cmp.Diff(ids(tuples[:30]), ids(kept)); d != "" {
		t.Fatalf("kept checkpoints (-want +got):\n%s", d)
	}
	for _, tp := range kept {
		if d := cmp.Diff(h.want[tp.Config.CheckpointID], values(tp)); d != "" {
			t.Fatalf("kept checkpoint %s after prune (-want +got):\n%s", tp.Config.CheckpointID, d)
		}
	}
	for _, tp := range tuples[30:] {
		_, err := s.Get(bg, checkpoint.Config{ThreadID: "p", CheckpointID: tp.Config.CheckpointID})
		wantErr(t, err, checkpoint.ErrNotFound, "Get of a pruned checkpoint")
	}
	// The thread goes on from a kept checkpoint after pruning.
	cur = h.step(cur, []string{msg(1000, "after")}, false)
	if got := values(mustGet(t, s, "p", "", cur.id)); got["messages"] != h.want[cur.id]["messages"] {
		t.Fatalf("checkpoint after prune = %s", got["messages"])
	}

	// By time: drop what is older than the 10th newest.
	kept = dump(t, s, "p")
	cutoff := times[kept[10].Config.CheckpointID]
	if _, err := s.Prune(bg, "p", checkpoint.PruneOptions{Before: cutoff}); err != nil {
		t.Fatal(err)
	}
	got := ids(dump(t, s, "p"))
	want := ids(kept[:11])
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("after Prune(Before) (-want +got):\n%s", d)
	}
	h.want = map[string]map[string]string{}
	for _, id := range got {
		h.want[id] = h.render(h.nodes[id])
	}
	h.check()
	if d := diffTuples(other, dump(t, s, "other")); d != "" {
		t.Fatalf("prune changed another thread (-want +got):\n%s", d)
	}
	_, err = s.Prune(bg, "p", checkpoint.PruneOptions{})
	wantErr(t, err, checkpoint.ErrInvalid, "Prune with no options")
	_, err = s.Prune(bg, "p", checkpoint.PruneOptions{KeepLatest: -1})
	wantErr(t, err, checkpoint.ErrInvalid, "Prune with a negative KeepLatest")
}

func testConcurrentWriters(t *testing.T, s *checkpoint.Saver) {
	// Several writers extend one thread from the same checkpoint at once,
	// each its own branch, with pending writes in between.
	root := cp("000-root", map[string]int64{"messages": 1}, nil)
	mustPut(t, s, "t", "", "", root, checkpoint.Metadata{}, full("messages", 1, `["root"]`))
	const writers, steps = 6, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parent := "000-root"
			for i := range steps {
				id := fmt.Sprintf("%03d-%d", i+1, w)
				v := int64(i + 2)
				c := cp(id, map[string]int64{"messages": v}, nil)
				cfg := checkpoint.Config{ThreadID: "t", CheckpointID: parent}
				if _, err := s.Put(bg, cfg, c, checkpoint.Metadata{Step: i}, []checkpoint.Blob{appended("messages", v, v-1, fmt.Sprintf(`"w%d-%d"`, w, i))}); err != nil {
					errs <- err
					return
				}
				if err := s.PutWrites(bg, checkpoint.Config{ThreadID: "t", CheckpointID: id}, fmt.Sprintf("task-%d", w),
					[]checkpoint.PendingWrite{{Channel: "messages", Value: json.RawMessage(fmt.Sprintf(`"w%d"`, w))}}); err != nil {
					errs <- err
					return
				}
				parent = id
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range writers {
		items := []string{`"root"`}
		for i := range steps {
			items = append(items, fmt.Sprintf(`"w%d-%d"`, w, i))
			id := fmt.Sprintf("%03d-%d", i+1, w)
			tp := mustGet(t, s, "t", "", id)
			if got, want := string(tp.Checkpoint.Values["messages"]), "["+strings.Join(items, ",")+"]"; got != want {
				t.Fatalf("writer %d step %d: messages = %s; want %s", w, i, got, want)
			}
			if len(tp.PendingWrites) != 1 {
				t.Fatalf("writer %d step %d: %d pending writes; want 1", w, i, len(tp.PendingWrites))
			}
		}
	}
	if n := len(dump(t, s, "t")); n != 1+writers*steps {
		t.Fatalf("%d checkpoints; want %d", n, 1+writers*steps)
	}
}

func testBadInput(t *testing.T, s *checkpoint.Saver) {
	buildThread(t, s, "t")
	before := dump(t, s, "t")
	latest := mustGet(t, s, "t", "", "")
	parent := latest.Config.CheckpointID
	v := latest.Checkpoint.Versions["messages"]
	next := func() *checkpoint.Checkpoint {
		return cp("zzzz-bad", map[string]int64{"messages": v + 1, "other": v + 1}, nil)
	}
	cfg := checkpoint.Config{ThreadID: "t", CheckpointID: parent}
	cases := []struct {
		name  string
		cfg   checkpoint.Config
		cp    *checkpoint.Checkpoint
		blobs []checkpoint.Blob
		want  error
	}{
		{"no thread", checkpoint.Config{}, next(), nil, checkpoint.ErrInvalid},
		{"no checkpoint", cfg, nil, nil, checkpoint.ErrInvalid},
		{"no checkpoint id", cfg, cp("", nil, nil), nil, checkpoint.ErrInvalid},
		{"blob without channel", cfg, next(), []checkpoint.Blob{{Version: 1, Value: json.RawMessage(`1`)}}, checkpoint.ErrInvalid},
		{"two blobs for a channel", cfg, next(), []checkpoint.Blob{full("other", v+1, `1`), full("other", v+1, `2`)}, checkpoint.ErrInvalid},
		{"blob without value", cfg, next(), []checkpoint.Blob{{Channel: "other", Version: v + 1}}, checkpoint.ErrInvalid},
		{"value not JSON", cfg, next(), []checkpoint.Blob{full("other", v+1, `1`), full("messages", v+1, `{"broken"`)}, checkpoint.ErrInvalid},
		{"appended item not JSON", cfg, next(), []checkpoint.Blob{full("other", v+1, `1`), appended("messages", v+1, v, `"ok"`, `nope`)}, checkpoint.ErrInvalid},
		// The good blob comes first: it must not be stored either.
		{"missing base version", cfg, next(), []checkpoint.Blob{full("other", v+1, `1`), appended("messages", v+1, v+50, `"x"`)}, checkpoint.ErrInvalid},
		{"base not an array", cfg, next(), []checkpoint.Blob{full("other", v+1, `{"a":1}`), appended("messages", v+1, v, `"x"`), appended("counter", v+1, latest.Checkpoint.Versions["counter"], `"x"`)}, checkpoint.ErrInvalid},
	}
	for _, c := range cases {
		_, err := s.Put(bg, c.cfg, c.cp, checkpoint.Metadata{}, c.blobs)
		wantErr(t, err, c.want, "Put with "+c.name)
		if d := diffTuples(before, dump(t, s, "t")); d != "" {
			t.Fatalf("Put with %s changed stored data (-want +got):\n%s", c.name, d)
		}
		if tp, _ := s.Get(bg, checkpoint.Config{ThreadID: "t", CheckpointID: "zzzz-bad"}); tp != nil {
			t.Fatalf("Put with %s stored the checkpoint", c.name)
		}
	}
	err := s.PutWrites(bg, checkpoint.Config{ThreadID: "t", CheckpointID: parent}, "task-x",
		[]checkpoint.PendingWrite{{Channel: "a", Value: json.RawMessage(`1`)}, {Channel: "b", Value: json.RawMessage(`{`)}})
	wantErr(t, err, checkpoint.ErrInvalid, "PutWrites with a value that is not JSON")
	err = s.PutWrites(bg, checkpoint.Config{ThreadID: "t", CheckpointID: parent}, "task-x",
		[]checkpoint.PendingWrite{{Channel: "", Value: json.RawMessage(`1`)}})
	wantErr(t, err, checkpoint.ErrInvalid, "PutWrites without a channel")
	if d := diffTuples(before, dump(t, s, "t")); d != "" {
		t.Fatalf("bad PutWrites changed stored data (-want +got):\n%s", d)
	}
	_, err = s.Get(bg, checkpoint.Config{})
	wantErr(t, err, checkpoint.ErrInvalid, "Get without a thread")
	// The thread still takes good writes.
	mustPut(t, s, "t", "", parent, next(), checkpoint.Metadata{}, full("other", v+1, `1`), appended("messages", v+1, v, `"fine"`))
}

// testPruneSubgraphs: SubgraphsBefore deletes the checkpoints the
// subgraph calls of the steps up to a root checkpoint left, whole
// namespaces too, and keeps those made after it.
func testPruneSubgraphs(t *testing.T, s *checkpoint.Saver) {
	sub := func(parent string) checkpoint.Metadata {
		return checkpoint.Metadata{Parents: map[string]string{"": parent}}
	}
	mustPut(t, s, "ps", "", "", cp("c1", nil, nil), checkpoint.Metadata{})
	mustPut(t, s, "ps", "sub:a", "", cp("c1a-1", nil, nil), sub("c1"))
	mustPut(t, s, "ps", "sub:a", "c1a-1", cp("c1a-2", nil, nil), sub("c1"))
	mustPut(t, s, "ps", "", "c1", cp("c2", nil, nil), checkpoint.Metadata{})
	mustPut(t, s, "ps", "", "c2", cp("c3", nil, nil), checkpoint.Metadata{})
	mustPut(t, s, "ps", "sub:b", "", cp("c3b-1", nil, nil), sub("c3"))
	n, err := s.Prune(bg, "ps", checkpoint.PruneOptions{KeepLatest: 1, SubgraphsBefore: "c3"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("Prune deleted %d checkpoints; want 4 (c1, c2 and sub:a's two)", n)
	}
	var got []string
	for _, tp := range dump(t, s, "ps") {
		got = append(got, tp.Config.Namespace+"/"+tp.Config.CheckpointID)
	}
	if d := cmp.Diff([]string{"sub:b/c3b-1", "/c3"}, got); d != "" {
		t.Fatalf("kept (-want +got):\n%s", d)
	}
	// SubgraphsBefore alone is a prune of its own.
	mustPut(t, s, "ps", "", "c3", cp("c4", nil, nil), checkpoint.Metadata{})
	if n, err := s.Prune(bg, "ps", checkpoint.PruneOptions{SubgraphsBefore: "c4"}); err != nil || n != 1 {
		t.Fatalf("Prune(SubgraphsBefore) = %d, %v; want sub:b's checkpoint deleted", n, err)
	}
}
