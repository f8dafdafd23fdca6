// Package storetest is the conformance suite every store backend passes
// unchanged: the in-memory backend, store/sqlite and store/postgres.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, cfg store.Config) *store.Store {
//			s, err := mybackend.Open(ctx, dsnForThisTest(t), cfg)
//			if err != nil { t.Fatal(err) }
//			return s
//		})
//	}
//
// The opener must return a store over empty storage, configured with cfg;
// the suite closes it. It runs with -race.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/store"
)

// Opener returns a store over empty storage configured with cfg.
type Opener func(t *testing.T, cfg store.Config) *store.Store

// Clock is a settable clock for Config.Clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock {
	return &Clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Run runs the conformance suite against stores made by open.
func Run(t *testing.T, open Opener) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"ValueForms", testValueForms},
		{"SearchPrefix", testSearchPrefix},
		{"Filters", testFilters},
		{"LimitOffset", testLimitOffset},
		{"QueryRanking", testQueryRanking},
		{"QueryKorean", testQueryKorean},
		{"QueryFilterAndFields", testQueryFilterAndFields},
		{"QuerySeesWrites", testQuerySeesWrites},
		{"ListNamespaces", testListNamespaces},
		{"TTL", testTTL},
		{"TTLSearch", testTTLSearch},
		{"Sweeper", testSweeper},
		{"BadInput", testBadInput},
		{"PutManyAtomic", testPutManyAtomic},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

// SharedOpener returns two stores over the same new, empty storage, as two
// processes would open it, both configured with cfg.
type SharedOpener func(t *testing.T, cfg store.Config) (*store.Store, *store.Store)

// RunShared checks that stores sharing storage see each other's writes,
// including through their vector caches. Durable backends run it.
func RunShared(t *testing.T, open SharedOpener) {
	clk := NewClock()
	a, b := open(t, store.Config{Index: lexicalIndex("text"), Clock: clk.Now})
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := context.Background()
	ns := []string{"shared", "u1"}
	put(t, a, ns, "x", map[string]any{"text": "gardening notes"}, store.PutOptions{TTL: time.Hour})
	put(t, a, ns, "y", map[string]any{"text": "sailing notes"})
	for _, prefix := range [][]string{nil, {"shared"}, ns} {
		if got := keys(search(t, b, prefix, store.SearchOptions{Query: "chess openings"})); len(got) != 2 {
			t.Fatalf("b's first search under %v = %v, want 2 items", prefix, got)
		}
	}
	put(t, a, ns, "z", map[string]any{"text": "chess openings to study"})
	for _, prefix := range [][]string{nil, {"shared"}, ns} {
		if got := keys(search(t, b, prefix, store.SearchOptions{Query: "chess openings"})); len(got) != 3 || got[0] != "z" {
			t.Errorf("b's search under %v after a's put = %v, want z first of 3", prefix, got)
		}
	}
	if err := a.Delete(ctx, ns, "z"); err != nil {
		t.Fatal(err)
	}
	if got := keys(search(t, b, ns, store.SearchOptions{Query: "chess openings"})); slices.Contains(got, "z") {
		t.Errorf("b's search after a's delete = %v, still has z", got)
	}
	clk.Advance(2 * time.Hour)
	if n, err := a.Sweep(ctx); err != nil || n != 1 {
		t.Errorf("a.Sweep = %d, %v; want 1", n, err)
	}
	if got := keys(search(t, b, nil, store.SearchOptions{Query: "gardening notes"})); !slices.Equal(got, []string{"y"}) {
		t.Errorf("b's search after a's sweep = %v, want [y]", got)
	}
}

func openStore(t *testing.T, open Opener, cfg store.Config) (*store.Store, *Clock) {
	t.Helper()
	clk := NewClock()
	if cfg.Clock == nil {
		cfg.Clock = clk.Now
	}
	s := open(t, cfg)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, clk
}

func lexicalIndex(fields ...string) *store.IndexConfig {
	return &store.IndexConfig{Embedder: embed.NewLexical(0), Fields: fields}
}

func put(t *testing.T, s *store.Store, ns []string, key string, v any, opts ...store.PutOptions) {
	t.Helper()
	var o store.PutOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := s.Put(context.Background(), ns, key, v, o); err != nil {
		t.Fatalf("Put(%v, %q): %v", ns, key, err)
	}
}

func get(t *testing.T, s *store.Store, ns []string, key string) *store.Item {
	t.Helper()
	it, err := s.Get(context.Background(), ns, key, store.GetOptions{})
	if err != nil {
		t.Fatalf("Get(%v, %q): %v", ns, key, err)
	}
	return it
}

func decode(t *testing.T, it *store.Item) map[string]any {
	t.Helper()
	var m map[string]any
	if err := it.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func search(t *testing.T, s *store.Store, prefix []string, opts store.SearchOptions) []store.Item {
	t.Helper()
	items, err := s.Search(context.Background(), prefix, opts)
	if err != nil {
		t.Fatalf("Search(%v, %+v): %v", prefix, opts, err)
	}
	return items
}

func keys(items []store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

func sortedKeys(items []store.Item) []string {
	k := keys(items)
	slices.Sort(k)
	return k
}

func testPutGet(t *testing.T, open Opener) {
	s, clk := openStore(t, open, store.Config{})
	ns := []string{"users", "u1", "prefs"}
	put(t, s, ns, "seat", map[string]any{"value": "window", "n": 3})
	it := get(t, s, ns, "seat")
	if it == nil {
		t.Fatal("Get after Put returned nil")
	}
	if diff := cmp.Diff(map[string]any{"value": "window", "n": 3.0}, decode(t, it)); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
	if !slices.Equal(it.Namespace, ns) || it.Key != "seat" {
		t.Errorf("item address = %v/%q, want %v/seat", it.Namespace, it.Key, ns)
	}
	if !it.CreatedAt.Equal(clk.Now()) || !it.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("times = %v, %v; want both %v", it.CreatedAt, it.UpdatedAt, clk.Now())
	}
	if !it.ExpiresAt.IsZero() || it.Score != nil {
		t.Errorf("ExpiresAt = %v, Score = %v; want zero and nil", it.ExpiresAt, it.Score)
	}
	if it := get(t, s, ns, "missing"); it != nil {
		t.Errorf("Get of a missing key = %+v, want nil", it)
	}
	if it := get(t, s, []string{"users", "u1"}, "seat"); it != nil {
		t.Errorf("Get in the parent namespace = %+v, want nil", it)
	}
	if it := get(t, s, []string{"users", "u2", "prefs"}, "seat"); it != nil {
		t.Errorf("Get in a sibling namespace = %+v, want nil", it)
	}
}

func testOverwrite(t *testing.T, open Opener) {
	s, clk := openStore(t, open, store.Config{})
	ns := []string{"docs"}
	put(t, s, ns, "k", map[string]any{"v": 1, "old": true})
	created := clk.Now()
	clk.Advance(time.Minute)
	put(t, s, ns, "k", map[string]any{"v": 2})
	it := get(t, s, ns, "k")
	if diff := cmp.Diff(map[string]any{"v": 2.0}, decode(t, it)); diff != "" {
		t.Errorf("value after overwrite (-want +got):\n%s", diff)
	}
	if !it.CreatedAt.Equal(created) || !it.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("CreatedAt, UpdatedAt = %v, %v; want %v, %v", it.CreatedAt, it.UpdatedAt, created, clk.Now())
	}
	if got := search(t, s, nil, store.SearchOptions{}); len(got) != 1 {
		t.Errorf("Search after overwrite found %d items, want 1", len(got))
	}
}

func testDelete(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex()})
	ctx := context.Background()
	ns := []string{"docs"}
	put(t, s, ns, "a", map[string]any{"text": "alpha"})
	put(t, s, ns, "b", map[string]any{"text": "beta"})
	if err := s.Delete(ctx, ns, "a"); err != nil {
		t.Fatal(err)
	}
	if it := get(t, s, ns, "a"); it != nil {
		t.Errorf("Get after Delete = %+v, want nil", it)
	}
	if err := s.Delete(ctx, ns, "a"); err != nil {
		t.Errorf("Delete of a missing item: %v, want nil", err)
	}
	if got := keys(search(t, s, ns, store.SearchOptions{})); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Search after Delete = %v, want [b]", got)
	}
	if got := keys(search(t, s, ns, store.SearchOptions{Query: "alpha"})); !slices.Equal(got, []string{"b"}) {
		t.Errorf("query Search after Delete = %v, want [b]", got)
	}
}

type record struct {
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
	Score float64  `json:"score"`
}

func testValueForms(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{})
	ns := []string{"forms"}
	put(t, s, ns, "struct", record{Title: "서울 여행 <계획>", Tags: []string{"a", "b"}, Score: 1.5})
	put(t, s, ns, "raw", json.RawMessage(`{ "nested": {"deep": [1, {"x": null}]}, "s": "é\u00e9" }`))
	put(t, s, ns, "bytes", []byte(`{"big": 12345678901, "neg": -0.25}`))
	got, err := store.DecodeValue[record](get(t, s, ns, "struct"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(record{Title: "서울 여행 <계획>", Tags: []string{"a", "b"}, Score: 1.5}, got); diff != "" {
		t.Errorf("struct round trip (-want +got):\n%s", diff)
	}
	want := map[string]any{"nested": map[string]any{"deep": []any{1.0, map[string]any{"x": nil}}}, "s": "éé"}
	if diff := cmp.Diff(want, decode(t, get(t, s, ns, "raw"))); diff != "" {
		t.Errorf("raw round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"big": 12345678901.0, "neg": -0.25}, decode(t, get(t, s, ns, "bytes"))); diff != "" {
		t.Errorf("bytes round trip (-want +got):\n%s", diff)
	}
	key := "키 with spaces/and.dots%_"
	put(t, s, ns, key, map[string]any{})
	if it := get(t, s, ns, key); it == nil || it.Key != key {
		t.Errorf("unusual key did not round-trip: %+v", it)
	}
}

func testSearchPrefix(t *testing.T, open Opener) {
	s, clk := openStore(t, open, store.Config{})
	for _, x := range []struct {
		ns  []string
		key string
	}{
		{[]string{"a", "b"}, "1"},
		{[]string{"a", "b", "c"}, "2"},
		{[]string{"a", "x"}, "3"},
		{[]string{"ab"}, "4"},
		{[]string{"a", "bc"}, "5"},
		{[]string{"a", "b-"}, "6"},
		{[]string{"a"}, "7"},
	} {
		clk.Advance(time.Second)
		put(t, s, x.ns, x.key, map[string]any{"k": x.key})
	}
	for _, c := range []struct {
		prefix []string
		want   []string
	}{
		{nil, []string{"7", "6", "5", "4", "3", "2", "1"}},
		{[]string{"a"}, []string{"7", "6", "5", "3", "2", "1"}},
		{[]string{"a", "b"}, []string{"2", "1"}},
		{[]string{"a", "b", "c"}, []string{"2"}},
		{[]string{"a", "b", "c", "d"}, nil},
		{[]string{"zz"}, nil},
	} {
		got := keys(search(t, s, c.prefix, store.SearchOptions{}))
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("Search(%v) = %v, want %v (newest first)", c.prefix, got, c.want)
		}
	}
}

func testFilters(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{})
	ns := []string{"f"}
	docs := map[string]map[string]any{
		"a": {"n": 1, "s": "apple", "b": true, "meta": map[string]any{"lang": "en", "level": 2}, "z": nil},
		"b": {"n": 2.5, "s": "banana", "b": false, "meta": map[string]any{"lang": "ko", "level": 5}},
		"c": {"n": 10, "s": "Cherry", "b": true, "meta": map[string]any{"lang": "ko"}},
		"d": {"n": "10", "s": 7, "meta": "flat"},
		"e": {"other": "x"},
	}
	for k, v := range docs {
		put(t, s, ns, k, v)
	}
	cases := []struct {
		filter map[string]any
		want   []string
	}{
		{map[string]any{"s": "apple"}, []string{"a"}},
		{map[string]any{"s": map[string]any{"$eq": "banana"}}, []string{"b"}},
		{map[string]any{"n": 10}, []string{"c"}},
		{map[string]any{"n": "10"}, []string{"d"}},
		{map[string]any{"n": 2.5}, []string{"b"}},
		{map[string]any{"b": true}, []string{"a", "c"}},
		{map[string]any{"b": false}, []string{"b"}},
		{map[string]any{"b": map[string]any{"$ne": true}}, []string{"b", "d", "e"}},
		{map[string]any{"s": map[string]any{"$ne": "apple"}}, []string{"b", "c", "d", "e"}},
		{map[string]any{"n": map[string]any{"$gt": 2}}, []string{"b", "c"}},
		{map[string]any{"n": map[string]any{"$gte": 2.5}}, []string{"b", "c"}},
		{map[string]any{"n": map[string]any{"$lt": 2.5}}, []string{"a"}},
		{map[string]any{"n": map[string]any{"$lte": 2.5}}, []string{"a", "b"}},
		{map[string]any{"n": map[string]any{"$gt": 1, "$lt": 10}}, []string{"b"}},
		{map[string]any{"s": map[string]any{"$gt": "apple"}}, []string{"b"}}, // byte order: "Cherry" < "apple"
		{map[string]any{"s": map[string]any{"$lt": "b"}}, []string{"a", "c"}},
		{map[string]any{"s": map[string]any{"$gte": "Cherry", "$lte": "Cherry"}}, []string{"c"}},
		{map[string]any{"meta.lang": "ko"}, []string{"b", "c"}},
		{map[string]any{"meta": map[string]any{"lang": "ko"}}, []string{"b", "c"}},
		{map[string]any{"meta.level": map[string]any{"$gte": 2}}, []string{"a", "b"}},
		{map[string]any{"meta.level": map[string]any{"$ne": 5}}, []string{"a", "c", "d", "e"}},
		{map[string]any{"meta.lang": "ko", "b": true}, []string{"c"}},
		{map[string]any{"z": nil}, []string{"a", "b", "c", "d", "e"}},
		{map[string]any{"z": map[string]any{"$ne": nil}}, nil},
		{map[string]any{"other": map[string]any{"$eq": "x"}}, []string{"e"}},
		{map[string]any{"missing": "x"}, nil},
		{map[string]any{"meta.lang.deeper": "x"}, nil},
		{map[string]any{}, []string{"a", "b", "c", "d", "e"}},
	}
	for _, c := range cases {
		got := sortedKeys(search(t, s, ns, store.SearchOptions{Filter: c.filter, Limit: 100}))
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("filter %v: got %v, want %v", c.filter, got, c.want)
		}
	}
}

func testLimitOffset(t *testing.T, open Opener) {
	s, clk := openStore(t, open, store.Config{})
	ns := []string{"page"}
	var all []string
	for i := range 25 {
		clk.Advance(time.Second)
		k := fmt.Sprintf("k%02d", i)
		put(t, s, ns, k, map[string]any{"i": i})
		all = append([]string{k}, all...) // newest first
	}
	if got := keys(search(t, s, ns, store.SearchOptions{})); !slices.Equal(got, all[:10]) {
		t.Errorf("default limit: got %v, want %v", got, all[:10])
	}
	if got := keys(search(t, s, ns, store.SearchOptions{Limit: 5, Offset: 5})); !slices.Equal(got, all[5:10]) {
		t.Errorf("limit 5 offset 5: got %v, want %v", got, all[5:10])
	}
	if got := keys(search(t, s, ns, store.SearchOptions{Limit: 10, Offset: 20})); !slices.Equal(got, all[20:]) {
		t.Errorf("limit 10 offset 20: got %v, want %v", got, all[20:])
	}
	if got := search(t, s, ns, store.SearchOptions{Offset: 30}); len(got) != 0 {
		t.Errorf("offset past the end: got %v, want none", keys(got))
	}
	filtered := keys(search(t, s, ns, store.SearchOptions{Filter: map[string]any{"i": map[string]any{"$gte": 10}}, Limit: 3, Offset: 2}))
	if !slices.Equal(filtered, all[2:5]) {
		t.Errorf("filtered page: got %v, want %v", filtered, all[2:5])
	}
}

var travelDocs = map[string]string{
	"seat":    "The user prefers a window seat on long flights",
	"food":    "Vegetarian meals only; allergic to peanuts",
	"hotel":   "Likes quiet hotel rooms on a high floor, away from the elevator",
	"budget":  "Travel budget is about 2000 dollars per trip",
	"city":    "Favourite city is Lisbon for its food and music",
	"meeting": "Team meeting every Monday at 10am about quarterly planning",
}

func testQueryRanking(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex("text")})
	ns := []string{"users", "u1", "memories"}
	for k, v := range travelDocs {
		put(t, s, ns, k, map[string]any{"text": v})
	}
	put(t, s, []string{"users", "u2", "memories"}, "seat", map[string]any{"text": "prefers a window seat on flights"})
	for _, c := range []struct{ query, want string }{
		{"window seat", "seat"},
		{"which hotel room does the user like", "hotel"},
		{"peanut allergy and vegetarian food", "food"},
		{"how much money per trip", "budget"},
		{"planning meeting on monday", "meeting"},
	} {
		items := search(t, s, []string{"users", "u1"}, store.SearchOptions{Query: c.query, Limit: 3})
		if len(items) == 0 || items[0].Key != c.want {
			t.Errorf("query %q ranked %v, want %q first", c.query, keys(items), c.want)
			continue
		}
		for i, it := range items {
			if it.Score == nil {
				t.Fatalf("query %q: item %d has no score", c.query, i)
			}
			if i > 0 && *it.Score > *items[i-1].Score {
				t.Errorf("query %q: scores not descending: %v then %v", c.query, *items[i-1].Score, *it.Score)
			}
			if !slices.Equal(it.Namespace, ns) {
				t.Errorf("query %q returned %v outside the prefix", c.query, it.Namespace)
			}
		}
	}
	all := search(t, s, []string{"users", "u1"}, store.SearchOptions{Query: "window seat", Limit: 100})
	if len(all) != len(travelDocs) {
		t.Errorf("query with a large limit returned %d items, want %d", len(all), len(travelDocs))
	}
	page := search(t, s, []string{"users", "u1"}, store.SearchOptions{Query: "window seat", Limit: 2, Offset: 1})
	if !slices.Equal(keys(page), keys(all[1:3])) {
		t.Errorf("query page limit 2 offset 1 = %v, want %v", keys(page), keys(all[1:3]))
	}
	both := search(t, s, []string{"users"}, store.SearchOptions{Query: "window seat", Limit: 2})
	if len(both) != 2 || both[0].Key != "seat" || both[1].Key != "seat" {
		t.Errorf("query across users = %v %v, want both users' seat first", keys(both), both)
	}
}

func testQueryKorean(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex()})
	ns := []string{"ko"}
	docs := map[string]string{
		"travel":  "다음 달에 제주도로 가족 여행을 계획하고 있어요",
		"food":    "매운 음식을 좋아하고 김치찌개를 자주 먹습니다",
		"work":    "회사에서 분기별 보고서를 작성해야 합니다",
		"english": "The quarterly report is due on Friday",
	}
	for k, v := range docs {
		put(t, s, ns, k, map[string]any{"text": v})
	}
	for _, c := range []struct{ query, want string }{
		{"제주도 여행", "travel"},
		{"김치찌개 좋아해요", "food"},
		{"보고서 작성", "work"},
	} {
		items := search(t, s, ns, store.SearchOptions{Query: c.query, Limit: 2})
		if len(items) == 0 || items[0].Key != c.want {
			t.Errorf("query %q ranked %v, want %q first", c.query, keys(items), c.want)
		}
	}
}

func testQueryFilterAndFields(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex("title", "sections[*].body")})
	ns := []string{"kb"}
	put(t, s, ns, "tokyo", map[string]any{
		"title": "Tokyo guide", "lang": "en",
		"sections": []any{map[string]any{"body": "ramen shops near Shinjuku"}, map[string]any{"body": "cherry blossom parks"}},
	})
	put(t, s, ns, "paris", map[string]any{
		"title": "Paris guide", "lang": "fr",
		"sections": []any{map[string]any{"body": "croissants and bakeries"}, map[string]any{"body": "museums and galleries"}},
	})
	put(t, s, ns, "unindexed", map[string]any{"title": "ramen ramen ramen", "lang": "en"}, store.PutOptions{NoIndex: true})
	put(t, s, ns, "custom", map[string]any{"title": "nothing here", "note": "cherry blossom ramen", "lang": "en"},
		store.PutOptions{Index: []string{"note"}})

	got := keys(search(t, s, ns, store.SearchOptions{Query: "ramen shops"}))
	if len(got) == 0 || got[0] != "tokyo" {
		t.Errorf("query over sections[*].body ranked %v, want tokyo first", got)
	}
	if slices.Contains(got, "unindexed") {
		t.Errorf("query returned the NoIndex item: %v", got)
	}
	if got := keys(search(t, s, ns, store.SearchOptions{Filter: map[string]any{"title": "ramen ramen ramen"}})); !slices.Equal(got, []string{"unindexed"}) {
		t.Errorf("filter search for the NoIndex item = %v, want [unindexed]", got)
	}
	got = keys(search(t, s, ns, store.SearchOptions{Query: "museums and galleries", Filter: map[string]any{"lang": "en"}}))
	if slices.Contains(got, "paris") || len(got) == 0 {
		t.Errorf("query with filter lang=en = %v: want results, none of them paris", got)
	}
	got = keys(search(t, s, ns, store.SearchOptions{Query: "cherry blossom", Filter: map[string]any{"lang": "en"}, Limit: 1}))
	if len(got) != 1 || (got[0] != "custom" && got[0] != "tokyo") {
		t.Errorf("query with filter and limit 1 = %v", got)
	}
	got = keys(search(t, s, ns, store.SearchOptions{Query: "ramen", Filter: map[string]any{"lang": "de"}}))
	if len(got) != 0 {
		t.Errorf("query with a filter nothing matches = %v, want none", got)
	}
	items := search(t, s, ns, store.SearchOptions{Query: "cherry blossom ramen", Limit: 1})
	if len(items) != 1 || items[0].Key != "custom" {
		t.Errorf("per-put index fields: got %v, want custom first", keys(items))
	}
}

func testQuerySeesWrites(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex("text")})
	ctx := context.Background()
	ns := []string{"w"}
	put(t, s, ns, "a", map[string]any{"text": "notes about gardening and tomatoes"})
	put(t, s, ns, "b", map[string]any{"text": "notes about sailing boats"})
	if got := keys(search(t, s, ns, store.SearchOptions{Query: "violin lessons"})); len(got) != 2 {
		t.Fatalf("first search = %v", got)
	}
	put(t, s, ns, "c", map[string]any{"text": "violin lessons on tuesday"})
	if got := keys(search(t, s, ns, store.SearchOptions{Query: "violin lessons"})); len(got) == 0 || got[0] != "c" {
		t.Errorf("after a put, query ranked %v, want c first", got)
	}
	put(t, s, ns, "a", map[string]any{"text": "violin lessons every tuesday evening"})
	put(t, s, ns, "c", map[string]any{"text": "grocery list"})
	if got := keys(search(t, s, ns, store.SearchOptions{Query: "violin lessons"})); len(got) == 0 || got[0] != "a" {
		t.Errorf("after overwrites, query ranked %v, want a first", got)
	}
	if err := s.Delete(ctx, ns, "a"); err != nil {
		t.Fatal(err)
	}
	if got := keys(search(t, s, ns, store.SearchOptions{Query: "violin lessons"})); slices.Contains(got, "a") {
		t.Errorf("after delete, query still returned a: %v", got)
	}
}

func testListNamespaces(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{})
	for _, ns := range [][]string{
		{"a", "b", "c"}, {"a", "b", "d", "e"}, {"a", "b", "d", "i"}, {"a", "b", "f"}, {"a", "c", "f"},
		{"b", "a", "f"}, {"users", "u1"}, {"users", "u2"},
	} {
		put(t, s, ns, "k", map[string]any{})
	}
	ctx := context.Background()
	list := func(opts store.ListNamespacesOptions) [][]string {
		t.Helper()
		got, err := s.ListNamespaces(ctx, opts)
		if err != nil {
			t.Fatalf("ListNamespaces(%+v): %v", opts, err)
		}
		return got
	}
	for _, c := range []struct {
		opts store.ListNamespacesOptions
		want [][]string
	}{
		{store.ListNamespacesOptions{Prefix: []string{"a", "b"}, MaxDepth: 3},
			[][]string{{"a", "b", "c"}, {"a", "b", "d"}, {"a", "b", "f"}}},
		{store.ListNamespacesOptions{Prefix: []string{"a"}},
			[][]string{{"a", "b", "c"}, {"a", "b", "d", "e"}, {"a", "b", "d", "i"}, {"a", "b", "f"}, {"a", "c", "f"}}},
		{store.ListNamespacesOptions{Suffix: []string{"f"}},
			[][]string{{"a", "b", "f"}, {"a", "c", "f"}, {"b", "a", "f"}}},
		{store.ListNamespacesOptions{Prefix: []string{"a"}, Suffix: []string{"f"}},
			[][]string{{"a", "b", "f"}, {"a", "c", "f"}}},
		{store.ListNamespacesOptions{Prefix: []string{"*", "b"}},
			[][]string{{"a", "b", "c"}, {"a", "b", "d", "e"}, {"a", "b", "d", "i"}, {"a", "b", "f"}}},
		{store.ListNamespacesOptions{Suffix: []string{"d", "*"}},
			[][]string{{"a", "b", "d", "e"}, {"a", "b", "d", "i"}}},
		{store.ListNamespacesOptions{MaxDepth: 1}, [][]string{{"a"}, {"b"}, {"users"}}},
		{store.ListNamespacesOptions{MaxDepth: 2, Limit: 2, Offset: 1}, [][]string{{"a", "c"}, {"b", "a"}}},
		{store.ListNamespacesOptions{Prefix: []string{"users"}}, [][]string{{"users", "u1"}, {"users", "u2"}}},
		{store.ListNamespacesOptions{Prefix: []string{"nope"}}, nil},
	} {
		got := list(c.opts)
		if diff := cmp.Diff(c.want, got); diff != "" && !(len(c.want) == 0 && len(got) == 0) {
			t.Errorf("ListNamespaces(%+v) (-want +got):\n%s", c.opts, diff)
		}
	}
	if got := list(store.ListNamespacesOptions{}); len(got) != 8 {
		t.Errorf("ListNamespaces() returned %d namespaces, want 8", len(got))
	}
}

func testTTL(t *testing.T, open Opener) {
	s, clk := openStore(t, open, store.Config{TTL: store.TTLConfig{Default: time.Hour}})
	ctx := context.Background()
	ns := []string{"ttl"}
	t0 := clk.Now()
	put(t, s, ns, "short", map[string]any{"v": 1}, store.PutOptions{TTL: 10 * time.Minute})
	put(t, s, ns, "default", map[string]any{"v": 2})
	put(t, s, ns, "forever", map[string]any{"v": 3}, store.PutOptions{TTL: store.NoTTL})

	if it := get(t, s, ns, "default"); it == nil || !it.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("default TTL item = %+v, want expiry %v", it, t0.Add(time.Hour))
	}
	clk.Advance(5 * time.Minute)
	it := get(t, s, ns, "short") // refreshes: expires at t0+15m
	if it == nil || !it.ExpiresAt.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("Get with refresh = %+v, want expiry %v", it, t0.Add(15*time.Minute))
	}
	clk.Advance(9 * time.Minute) // t0+14m
	it, err := s.Get(ctx, ns, "short", store.GetOptions{RefreshTTL: store.RefreshOff})
	if err != nil || it == nil {
		t.Fatalf("Get at t0+14m = %v, %v; want the item (refreshed at t0+5m)", it, err)
	}
	if !it.ExpiresAt.Equal(t0.Add(15 * time.Minute)) {
		t.Errorf("RefreshOff moved expiry to %v", it.ExpiresAt)
	}
	clk.Advance(time.Minute) // t0+15m: expired (expiry is exclusive)
	if it := get(t, s, ns, "short"); it != nil {
		t.Errorf("expired item returned by Get: %+v", it)
	}
	if got := sortedKeys(search(t, s, ns, store.SearchOptions{})); !slices.Equal(got, []string{"default", "forever"}) {
		t.Errorf("Search after expiry = %v, want [default forever]", got)
	}
	clk.Advance(2 * time.Hour)
	if got := keys(search(t, s, ns, store.SearchOptions{})); !slices.Equal(got, []string{"forever"}) {
		t.Errorf("Search after default TTL = %v, want [forever]", got)
	}
	if got, err := s.ListNamespaces(ctx, store.ListNamespacesOptions{}); err != nil || len(got) != 1 {
		t.Errorf("ListNamespaces = %v, %v; want [[ttl]]", got, err)
	}
	n, err := s.Sweep(ctx)
	if err != nil || n != 2 {
		t.Errorf("Sweep = %d, %v; want 2, nil", n, err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0, nil", n, err)
	}
	// An expired item's key can be reused: it is a new item.
	put(t, s, ns, "short", map[string]any{"v": 4}, store.PutOptions{TTL: time.Minute})
	if it := get(t, s, ns, "short"); it == nil || !it.CreatedAt.Equal(clk.Now()) {
		t.Errorf("re-put after expiry = %+v, want CreatedAt %v", it, clk.Now())
	}
}

func testTTLSearch(t *testing.T, open Opener) {
	s, clk := openStore(t, open, store.Config{Index: lexicalIndex("text"), TTL: store.TTLConfig{NoRefreshOnRead: true}})
	ns := []string{"ttl"}
	t0 := clk.Now()
	put(t, s, ns, "a", map[string]any{"text": "red apples"}, store.PutOptions{TTL: 10 * time.Minute})
	put(t, s, ns, "b", map[string]any{"text": "red apples and pears"}, store.PutOptions{TTL: 10 * time.Minute})
	clk.Advance(5 * time.Minute)
	// The store does not refresh by default; this search asks for it for a only.
	items := search(t, s, ns, store.SearchOptions{Query: "red apples", Limit: 1, RefreshTTL: store.RefreshOn})
	if len(items) != 1 || items[0].Key != "a" || !items[0].ExpiresAt.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("refreshing query search = %+v, want a expiring at %v", items, t0.Add(15*time.Minute))
	}
	if it := get(t, s, ns, "b"); it == nil || !it.ExpiresAt.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("b = %+v, want expiry unchanged at %v", it, t0.Add(10*time.Minute))
	}
	clk.Advance(6 * time.Minute) // t0+11m: b expired, a alive
	if got := keys(search(t, s, ns, store.SearchOptions{Query: "red apples and pears"})); !slices.Equal(got, []string{"a"}) {
		t.Errorf("query after b expired = %v, want [a]", got)
	}
	if got := keys(search(t, s, ns, store.SearchOptions{Filter: map[string]any{"text": "red apples"}, RefreshTTL: store.RefreshOn})); !slices.Equal(got, []string{"a"}) {
		t.Errorf("filter search = %v, want [a]", got)
	}
	clk.Advance(10 * time.Minute) // t0+21m: a was refreshed at t0+11m to t0+21m: expired
	if got := search(t, s, ns, store.SearchOptions{Query: "red apples"}); len(got) != 0 {
		t.Errorf("query after everything expired = %v, want none", keys(got))
	}
}

func testSweeper(t *testing.T, open Opener) {
	clk := NewClock()
	s, _ := openStore(t, open, store.Config{Clock: clk.Now, TTL: store.TTLConfig{SweepInterval: time.Millisecond}})
	ns := []string{"sweep"}
	t0 := clk.Now()
	put(t, s, ns, "gone", map[string]any{"v": 1}, store.PutOptions{TTL: time.Minute})
	put(t, s, ns, "kept", map[string]any{"v": 2})
	clk.Advance(2 * time.Minute)
	// Read the backend as of t0 to see whether the row is still stored.
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := s.Backend().Get(ctx, ns, "gone", t0, false)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background sweeper never deleted the expired item")
		}
		time.Sleep(time.Millisecond)
	}
	if it := get(t, s, ns, "kept"); it == nil {
		t.Error("the sweeper deleted an item without TTL")
	}
}

func testBadInput(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex()})
	ctx := context.Background()
	ns := []string{"good"}
	put(t, s, ns, "k", map[string]any{"v": 1, "text": "kept"})
	checkIntact := func(what string) {
		t.Helper()
		it := get(t, s, ns, "k")
		if it == nil {
			t.Fatalf("after %s the stored item is gone", what)
		}
		if diff := cmp.Diff(map[string]any{"v": 1.0, "text": "kept"}, decode(t, it)); diff != "" {
			t.Fatalf("after %s the stored item changed (-want +got):\n%s", what, diff)
		}
		if got := search(t, s, nil, store.SearchOptions{Limit: 100}); len(got) != 1 {
			t.Fatalf("after %s the store holds %d items, want 1", what, len(got))
		}
	}
	badNS := []struct {
		ns    []string
		label int
	}{
		{nil, -1},
		{[]string{}, -1},
		{[]string{"a", ""}, 1},
		{[]string{"a.b"}, 0},
		{[]string{"good", "x.y", "z"}, 1},
		{[]string{"*"}, 0},
	}
	for _, c := range badNS {
		for op, err := range map[string]error{
			"Put":    s.Put(ctx, c.ns, "k", map[string]any{"v": 2}, store.PutOptions{}),
			"Get":    func() error { _, err := s.Get(ctx, c.ns, "k", store.GetOptions{}); return err }(),
			"Delete": s.Delete(ctx, c.ns, "k"),
		} {
			var nerr *store.NamespaceError
			if !errors.Is(err, store.ErrInvalidNamespace) || !errors.Is(err, store.ErrInvalid) || !errors.As(err, &nerr) {
				t.Errorf("%s(%q) = %v, want a *NamespaceError", op, c.ns, err)
				continue
			}
			if nerr.Label != c.label {
				t.Errorf("%s(%q): error names label %d, want %d (%v)", op, c.ns, nerr.Label, c.label, err)
			}
		}
		checkIntact(fmt.Sprintf("bad namespace %q", c.ns))
	}
	if _, err := s.Search(ctx, []string{"good", "a.b"}, store.SearchOptions{}); !errors.Is(err, store.ErrInvalidNamespace) {
		t.Errorf("Search with a bad prefix = %v, want ErrInvalidNamespace", err)
	}
	if _, err := s.ListNamespaces(ctx, store.ListNamespacesOptions{Prefix: []string{""}}); !errors.Is(err, store.ErrInvalidNamespace) {
		t.Errorf("ListNamespaces with an empty label = %v, want ErrInvalidNamespace", err)
	}
	for _, f := range []map[string]any{
		{"v": map[string]any{"$regex": "x"}},
		{"$or": []any{}},
		{"v": map[string]any{"$gt": true}},
		{"v": map[string]any{"$lt": nil}},
		{"v": []any{1, 2}},
		{"v": map[string]any{}},
		{"v": map[string]any{"$eq": 1, "w": 2}},
		{"a..b": 1},
		{"v": map[string]any{"$eq": map[string]any{"x": 1}}},
	} {
		_, err := s.Search(ctx, ns, store.SearchOptions{Filter: f})
		var ferr *store.FilterError
		if !errors.Is(err, store.ErrInvalidFilter) || !errors.As(err, &ferr) {
			t.Errorf("Search with filter %v = %v, want a *FilterError", f, err)
		}
		_, err = s.Search(ctx, ns, store.SearchOptions{Filter: f, Query: "kept"})
		if !errors.Is(err, store.ErrInvalidFilter) {
			t.Errorf("query Search with filter %v = %v, want ErrInvalidFilter", f, err)
		}
	}
	checkIntact("bad filters")
	for _, v := range []any{
		[]any{1, 2}, "string", 42, nil, json.RawMessage(`{"unterminated": `), []byte(`[1]`), make(chan int),
	} {
		if err := s.Put(ctx, ns, "k", v, store.PutOptions{}); !errors.Is(err, store.ErrInvalidValue) {
			t.Errorf("Put of %T %v = %v, want ErrInvalidValue", v, v, err)
		}
	}
	if err := s.Put(ctx, ns, "", map[string]any{}, store.PutOptions{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Put with an empty key = %v, want ErrInvalid", err)
	}
	if err := s.Put(ctx, ns, "k", map[string]any{"v": 9}, store.PutOptions{Index: []string{"a[x]"}}); !errors.Is(err, store.ErrInvalidValue) {
		t.Errorf("Put with a bad index path = %v, want ErrInvalidValue", err)
	}
	if _, err := s.Search(ctx, ns, store.SearchOptions{Limit: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Search with a negative limit = %v, want ErrInvalid", err)
	}
	checkIntact("bad values")

	plain, _ := openStore(t, open, store.Config{})
	if _, err := plain.Search(ctx, nil, store.SearchOptions{Query: "x"}); !errors.Is(err, store.ErrNoIndex) {
		t.Errorf("query Search without an index = %v, want ErrNoIndex", err)
	}
}

func testPutManyAtomic(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{})
	ctx := context.Background()
	put(t, s, []string{"m"}, "a", map[string]any{"v": "old"})
	err := s.PutMany(ctx, []store.PutRequest{
		{Namespace: []string{"m"}, Key: "a", Value: map[string]any{"v": "new"}},
		{Namespace: []string{"m"}, Key: "b", Value: map[string]any{"v": "new"}},
		{Namespace: []string{"m", "bad.label"}, Key: "c", Value: map[string]any{}},
	})
	if !errors.Is(err, store.ErrInvalidNamespace) {
		t.Fatalf("PutMany with one bad namespace = %v, want ErrInvalidNamespace", err)
	}
	if it := get(t, s, []string{"m"}, "a"); it == nil || decode(t, it)["v"] != "old" {
		t.Errorf("a failed PutMany changed an item: %+v", it)
	}
	if it := get(t, s, []string{"m"}, "b"); it != nil {
		t.Errorf("a failed PutMany stored an item: %+v", it)
	}
	reqs := make([]store.PutRequest, 50)
	for i := range reqs {
		reqs[i] = store.PutRequest{Namespace: []string{"m", "bulk"}, Key: fmt.Sprint(i), Value: map[string]any{"i": i}}
	}
	if err := s.PutMany(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, []string{"m", "bulk"}, store.SearchOptions{Limit: 100}); len(got) != 50 {
		t.Errorf("PutMany of 50 stored %d", len(got))
	}
}

func testConcurrent(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{Index: lexicalIndex("text")})
	ctx := context.Background()
	const writers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ns := []string{"conc", fmt.Sprint(w % 3)}
				if err := s.Put(ctx, ns, fmt.Sprintf("w%d-%d", w, i), map[string]any{"text": fmt.Sprintf("writer %d item %d", w, i)}, store.PutOptions{}); err != nil {
					errs <- err
				}
				if err := s.Put(ctx, []string{"conc", "shared"}, "same", map[string]any{"text": "shared", "by": w}, store.PutOptions{}); err != nil {
					errs <- err
				}
				if _, err := s.Search(ctx, []string{"conc"}, store.SearchOptions{Query: "writer item", Limit: 3}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent operation: %v", err)
	}
	got := search(t, s, []string{"conc"}, store.SearchOptions{Limit: 1000})
	if len(got) != writers*each+1 {
		t.Errorf("after concurrent puts the store holds %d items, want %d", len(got), writers*each+1)
	}
	q := search(t, s, []string{"conc"}, store.SearchOptions{Query: "writer 4 item 7", Limit: 1000})
	if len(q) != writers*each+1 {
		t.Errorf("query after concurrent puts found %d items, want %d", len(q), writers*each+1)
	}
}

func testClosed(t *testing.T, open Opener) {
	s, _ := openStore(t, open, store.Config{})
	ctx := context.Background()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, []string{"x"}, "k", map[string]any{}, store.PutOptions{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Put after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Search(ctx, nil, store.SearchOptions{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Search after Close = %v, want ErrClosed", err)
	}
}
