package graph

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// stepGuard bounds how long a test node waits for its sibling; it only turns
// a hang into a failure.
const stepGuard = 10 * time.Second

// markShort makes the runtime take the nodes for short ones, as if their last
// runs had taken a microsecond, so that runClaiming runs them on the loop
// goroutine.
func markShort(g *Graph, names ...string) {
	for _, n := range names {
		g.nodes[n].lastRun.Store(int64(time.Microsecond))
	}
}

// Two short siblings that wait for each other both finish: the second is
// claimed by its own goroutine while the loop goroutine runs the first.
func TestShortSiblingsThatWaitForEachOther(t *testing.T) {
	log := Reduce("log", func(cur, upd []string) []string { return append(slices.Clip(cur), upd...) })
	aReady, bReady := make(chan struct{}), make(chan struct{})
	// Each run makes new channels; the nodes read them when they run.
	meet := func(mine, other *chan struct{}, word string) NodeFunc {
		return func(ctx context.Context, s State) (Update, error) {
			close(*mine)
			select {
			case <-*other:
			case <-time.After(stepGuard):
				return Update{}, errors.New(word + " never met its sibling")
			}
			return log.Write([]string{word}), nil
		}
	}
	g, err := New(log).AddNode("a", meet(&aReady, &bReady, "a"), nil).AddNode("b", meet(&bReady, &aReady, "b"), nil).
		AddEdge(START, "a").AddEdge(START, "b").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	markShort(g, "a", "b")
	for _, opts := range []*RunOptions{nil, {StreamModes: []StreamMode{StreamUpdates}}, {StreamModes: []StreamMode{StreamValues}}} {
		aReady, bReady = make(chan struct{}), make(chan struct{})
		var got []string
		var err error
		if opts == nil {
			var st State
			st, err = g.Invoke(context.Background(), log.Write([]string{"in"}), nil)
			got = log.Get(st)
		} else {
			for ev, e := range g.Stream(context.Background(), log.Write([]string{"in"}), opts) {
				if e != nil {
					err = e
					break
				}
				if u, ok := ev.Update(); ok {
					got = append(got, u.Node)
				}
				if st, ok := ev.Values(); ok {
					got = log.Get(st)
				}
			}
			slices.Sort(got)
		}
		want := []string{"in", "a", "b"}
		switch {
		case opts == nil:
		case opts.StreamModes[0] == StreamUpdates:
			want = []string{"a", "b"}
		default:
			want = []string{"a", "b", "in"}
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("stream=%v: got %q, %v; want %q", opts != nil, got, err, want)
		}
	}
}

// A short task that fails beside a short sibling: the sibling still runs,
// its writes are kept as pending writes, and the run reports the failure.
func TestShortSiblingOfAFailedTaskKeepsItsWrites(t *testing.T) {
	value := Reduce("value", func(a, b int) int { return a + b })
	var mu sync.Mutex
	ran := map[string]int{}
	hit := func(n string) {
		mu.Lock()
		ran[n]++
		mu.Unlock()
	}
	g, err := New(value).AddNode("one", func(ctx context.Context, s State) (Update, error) {
		hit("one")
		return value.Write(2), nil
	}, nil).AddNode("two", func(ctx context.Context, s State) (Update, error) {
		hit("two")
		return Update{}, errors.New("two is broken")
	}, nil).AddEdge(START, "one").AddEdge(START, "two").Compile(&CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	markShort(g, "one", "two")
	_, err = g.Invoke(context.Background(), value.Write(1), &RunOptions{ThreadID: "t", Durability: DurabilitySync})
	if err == nil || !strings.Contains(err.Error(), "two is broken") {
		t.Fatalf("err = %v, want two's failure", err)
	}
	if ran["one"] != 1 || ran["two"] != 1 {
		t.Errorf("runs = %v, want one and two once each", ran)
	}
	snap, err := g.GetState(context.Background(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := value.Get(snap.Values); got != 3 || !slices.Equal(snap.Next, []string{"two"}) {
		t.Errorf("state %d, next %v; want 3 (one's pending write applied) and two to run again", got, snap.Next)
	}
}

// A task that its node's last run marks short, but that this time waits
// for its sibling's writes to be saved (as a node that crashes mid-step,
// or any slow node, may): the sibling's writes are saved as it finishes,
// whatever the other task does meanwhile, so a crash mid-step cannot lose
// them. Running short tasks on the loop goroutine held the sibling's
// commit back until the waiting task returned.
func TestFinishedSiblingIsSavedWhileAShortTaskWaits(t *testing.T) {
	log := Reduce("log", func(cur, upd []string) []string { return append(slices.Clip(cur), upd...) })
	saver := checkpoint.NewMemory()
	g, err := New(log).AddNode("writer", func(ctx context.Context, s State) (Update, error) {
		return log.Write([]string{"written"}), nil
	}, nil).AddNode("waiter", func(ctx context.Context, s State) (Update, error) {
		for deadline := time.Now().Add(stepGuard); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			tp, err := saver.Get(ctx, checkpoint.Config{ThreadID: "t"})
			if err != nil {
				return Update{}, err
			}
			for _, pw := range tp.PendingWrites {
				if strings.Contains(string(pw.Value), "written") {
					return log.Write([]string{"waited"}), nil
				}
			}
		}
		return Update{}, errors.New("the writer's finished task was never saved while waiter ran")
	}, nil).AddEdge(START, "writer").AddEdge(START, "waiter").Compile(&CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Durability{DurabilityAsync, DurabilitySync} {
		markShort(g, "writer", "waiter")
		if _, err := g.Invoke(context.Background(), log.Write([]string{"in"}), &RunOptions{ThreadID: "t", Durability: d}); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
