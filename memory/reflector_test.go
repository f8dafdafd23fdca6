package memory_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
)

// extractor records its calls; gate, when set, blocks each call until it
// is closed; fail makes calls fail.
type extractor struct {
	mu      sync.Mutex
	calls   []call
	gate    chan struct{}
	entered chan struct{}
	fail    int // calls left to fail; negative: all
	active  map[string]int
	overlap bool
}

type call struct {
	user string
	n    int // messages
}

var errExtract = errors.New("model unavailable")

func (x *extractor) Extract(ctx context.Context, user string, msgs []llm.Message) (memory.Result, error) {
	x.mu.Lock()
	if x.active == nil {
		x.active = map[string]int{}
	}
	if x.active[user] > 0 {
		x.overlap = true
	}
	x.active[user]++
	x.calls = append(x.calls, call{user, len(msgs)})
	gate, entered := x.gate, x.entered
	fail := x.fail != 0
	if x.fail > 0 {
		x.fail--
	}
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.active[user]--
		x.mu.Unlock()
	}()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return memory.Result{}, ctx.Err()
		}
	}
	if fail {
		return memory.Result{}, errExtract
	}
	return memory.Result{}, nil
}

func (x *extractor) got() []call {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]call(nil), x.calls...)
}

func msgs(n int) []llm.Message {
	out := make([]llm.Message, n)
	for i := range out {
		out[i] = llm.Human("message")
	}
	return out
}

func newReflector(t *testing.T, opts memory.ReflectorOptions) *memory.Reflector {
	t.Helper()
	r, err := memory.NewReflector(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func TestSubmitNeverWaitsForExtraction(t *testing.T) {
	x := &extractor{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}})
	if err := r.Submit("u1", "t1", msgs(2)); err != nil {
		t.Fatal(err)
	}
	<-x.entered // the extraction is under way and blocked
	// More submissions return while it is blocked.
	for _, u := range []string{"u2", "u3"} {
		if err := r.Submit(u, "", msgs(1)); err != nil {
			t.Fatal(err)
		}
	}
	close(x.gate)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.Stats(); got.Submitted != 3 || got.Processed != 3 || got.Failed != 0 {
		t.Errorf("stats %+v", got)
	}
}

func TestDebouncePerThread(t *testing.T) {
	x := &extractor{}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}, Debounce: time.Hour})
	for n := 1; n <= 3; n++ {
		if err := r.Submit("u1", "t1", msgs(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Submit("u1", "t2", msgs(7)); err != nil {
		t.Fatal(err)
	}
	// Nothing ran: everything waits out the debounce.
	if got := x.got(); len(got) != 0 {
		t.Fatalf("ran before the debounce: %v", got)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := x.got()
	// Thread t1 ran once, with its latest conversation.
	want := map[int]bool{3: true, 7: true}
	if len(got) != 2 || !want[got[0].n] || !want[got[1].n] || got[0].n == got[1].n {
		t.Errorf("calls %v; want one with 3 messages (t1's latest) and one with 7 (t2)", got)
	}
	if s := r.Stats(); s.Superseded != 2 || s.Processed != 2 {
		t.Errorf("stats %+v", s)
	}
}

// Two users' threads of the same id are two conversations: a newer
// submission replaces only its own user's, never another user's.
func TestDebounceKeepsUsersApart(t *testing.T) {
	x := &extractor{}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}, Debounce: time.Hour})
	if err := r.Submit("alice", "t1", msgs(2)); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit("bob", "t1", msgs(5)); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range x.got() {
		got[c.user] = c.n
	}
	if diff := cmp.Diff(map[string]int{"alice": 2, "bob": 5}, got); diff != "" {
		t.Errorf("conversations learned from, by user (-want +got):\n%s", diff)
	}
	if s := r.Stats(); s.Superseded != 0 {
		t.Errorf("stats %+v: nothing was superseded", s)
	}
}

func TestFailedExtractionIsRetriedKeptAndReplayed(t *testing.T) {
	ctx := context.Background()
	kept := memStore(t)
	var logs bytes.Buffer
	x := &extractor{fail: -1}
	ok := &extractor{}
	r := newReflector(t, memory.ReflectorOptions{
		Extractors: []memory.Extractor{ok, x}, Attempts: 2, Backoff: time.Millisecond,
		Failed: kept, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	conv := []llm.Message{llm.Human("remember that I am vegetarian"), llm.AI("Noted.")}
	if err := r.Submit("alice", "t9", conv); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Failed != 1 || s.Retries != 1 || s.Kept != 1 || s.Processed != 0 {
		t.Errorf("stats %+v", s)
	}
	// The extractor that succeeded is not run again on the retry.
	if n, m := len(ok.got()), len(x.got()); n != 1 || m != 2 {
		t.Errorf("calls: the succeeding extractor %d (want 1), the failing one %d (want 2)", n, m)
	}
	if !bytes.Contains(logs.Bytes(), []byte("model unavailable")) || !bytes.Contains(logs.Bytes(), []byte("thread=t9")) {
		t.Errorf("the failure is not logged with its cause and thread: %s", logs.String())
	}
	// The conversation is kept, whole.
	items, err := kept.Search(ctx, []string{memory.FailedRoot}, store.SearchOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("kept: %d items, %v", len(items), err)
	}
	var rec struct {
		User     string        `json:"user"`
		Messages []llm.Message `json:"messages"`
		Error    string        `json:"error"`
	}
	if err := items[0].Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.User != "alice" || len(rec.Messages) != 2 || rec.Messages[0].Text() != "remember that I am vegetarian" || rec.Error == "" {
		t.Errorf("kept record %+v", rec)
	}

	// Once the model is back, Replay learns from it and forgets the record.
	x.mu.Lock()
	x.fail = 0
	x.mu.Unlock()
	n, err := r.Replay(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Processed != 1 {
		t.Errorf("after replay: %+v", s)
	}
	if items, _ := kept.Search(ctx, []string{memory.FailedRoot}, store.SearchOptions{}); len(items) != 0 {
		t.Errorf("replayed record still kept: %d", len(items))
	}
}

func TestQueueFullAndClosed(t *testing.T) {
	x := &extractor{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}, Queue: 1})
	if err := r.Submit("u1", "a", msgs(1)); err != nil {
		t.Fatal(err)
	}
	<-x.entered // running, so the queue is empty again
	if err := r.Submit("u2", "b", msgs(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit("u3", "c", msgs(1)); !errors.Is(err, memory.ErrQueueFull) {
		t.Errorf("third submission: %v, want ErrQueueFull", err)
	}
	// The same thread replaces its waiting conversation even when full.
	if err := r.Submit("u2", "b", msgs(2)); err != nil {
		t.Errorf("resubmitting a waiting thread: %v", err)
	}
	close(x.gate)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit("u1", "a", msgs(1)); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if s := r.Stats(); s.Dropped != 2 || s.Processed != 2 {
		t.Errorf("stats %+v", s)
	}
	if _, err := memory.NewReflector(memory.ReflectorOptions{}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("no extractors: %v", err)
	}
	if err := r.Submit("", "x", nil); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("no user: %v", err)
	}
}

func TestCloseGivesUpAndKeeps(t *testing.T) {
	kept := memStore(t)
	x := &extractor{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	r, err := memory.NewReflector(memory.ReflectorOptions{Extractors: []memory.Extractor{x}, Failed: kept, Attempts: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.Submit("u1", "running", msgs(1))
	<-x.entered
	r.Submit("u1", "waiting", msgs(1)) // same user: waits for the first
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with a cancelled context: %v", err)
	}
	items, err := kept.Search(context.Background(), []string{memory.FailedRoot}, store.SearchOptions{})
	if err != nil || len(items) != 2 {
		t.Errorf("kept %d conversations, %v; want the running and the waiting one", len(items), err)
	}
	if s := r.Stats(); s.Dropped != 1 || s.Failed != 1 || s.Kept != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestOneUserAtATime(t *testing.T) {
	x := &extractor{}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}, Workers: 4})
	for i := range 40 {
		user := []string{"u1", "u2"}[i%2]
		if err := r.Submit(user, "", msgs(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(x.got()) != 40 {
		t.Errorf("%d calls, want 40", len(x.got()))
	}
	if x.overlap {
		t.Error("two conversations of one user were processed at once")
	}
}

func TestReflectionNode(t *testing.T) {
	x := &extractor{}
	r := newReflector(t, memory.ReflectorOptions{Extractors: []memory.Extractor{x}})
	messages := graph.Messages[llm.Message]("messages")
	g, err := graph.New(messages).
		AddNode("reflection_node", memory.ReflectionNode(r, messages, nil), nil).
		AddEdge(graph.START, "reflection_node").
		AddEdge("reflection_node", graph.END).
		Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := memory.WithUser(context.Background(), "u1")
	if _, err := g.Invoke(ctx, messages.Write(llm.Human("I prefer short answers"), llm.AI("OK.")), &graph.RunOptions{ThreadID: "th"}); err != nil {
		t.Fatal(err)
	}
	// Without a user the run still succeeds; nothing is submitted.
	if _, err := g.Invoke(context.Background(), messages.Write(llm.Human("hi")), &graph.RunOptions{ThreadID: "th2"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]call{{"u1", 2}}, x.got(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
