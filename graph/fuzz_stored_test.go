package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// swapDriver serves one thread's checkpoints with one stored value
// replaced: a channel value or a pending write's value.
type swapDriver struct {
	*checkpoint.MemoryDriver
	mu     sync.Mutex
	thread string
	ch     string // channel whose value is replaced, or ""
	pw     int    // index of the pending write replaced, or -1
	data   json.RawMessage
}

func (d *swapDriver) swap(tp *checkpoint.Tuple) *checkpoint.Tuple {
	d.mu.Lock()
	defer d.mu.Unlock()
	if tp == nil || tp.Config.ThreadID != d.thread {
		return tp
	}
	c := *tp
	cp := *tp.Checkpoint
	cp.Values = maps.Clone(cp.Values)
	if d.ch != "" {
		cp.Values[d.ch] = d.data
	}
	c.Checkpoint = &cp
	c.PendingWrites = slices.Clone(c.PendingWrites)
	if d.pw >= 0 && d.pw < len(c.PendingWrites) {
		c.PendingWrites[d.pw].Value = d.data
	}
	return &c
}

func (d *swapDriver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	tp, err := d.MemoryDriver.Get(ctx, cfg)
	return d.swap(tp), err
}

func (d *swapDriver) List(ctx context.Context, thread string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		for tp, err := range d.MemoryDriver.List(ctx, thread, opts) {
			if !yield(d.swap(tp), err) {
				return
			}
		}
	}
}

// FuzzStoredChannelValues loads a thread stopped at an interrupt, with
// pending writes of a finished parallel node, after replacing one stored
// channel value or pending write with arbitrary bytes; then reads its
// state, its history, and resumes it. A value that does not decode is an
// error; nothing panics.
func FuzzStoredChannelValues(f *testing.F) {
	ctx := context.Background()
	msgs := graph.Messages[llm.Message]("messages")
	name := graph.Value[string]("name")
	total := graph.Reduce[int]("total", func(a, b int) int { return a + b })
	topic := graph.Topic[string]("topic", nil)
	d := &swapDriver{MemoryDriver: checkpoint.NewMemoryDriver(), pw: -1}
	g, err := graph.New(msgs, name, total, topic).AddNode(
		"a", func(context.Context, graph.State) (graph.Update, error) {
			return msgs.Write(llm.AI("hello")).And(name.Write("n"), total.Write(2), topic.Write("x", "y")), nil
		}, nil).AddNode(

		"b", func(ctx context.Context, _ graph.State) (graph.Update, error) {
			answer, err := graph.Interrupt[string](ctx, "approve?")
			if err != nil {
				return graph.Update{}, err
			}
			return name.Write(answer), nil
		}, nil).
		AddEdge(graph.START, "a").
		AddEdge(graph.START, "b").Compile(&graph.CompileOptions{Checkpointer: checkpoint.New(d)})

	if err != nil {
		f.Fatal(err)
	}
	if _, err := g.Invoke(ctx, msgs.Write(llm.Human("hi")).And(total.Write(1)), &graph.RunOptions{ThreadID: "t"}); err != nil {
		f.Fatal(err)
	}
	tp, err := d.MemoryDriver.Get(ctx, checkpoint.Config{ThreadID: "t"})
	if err != nil || tp == nil || len(tp.PendingWrites) == 0 {
		f.Fatalf("the interrupted thread has no pending writes: %v, %v", tp, err)
	}
	channels := slices.Sorted(maps.Keys(tp.Checkpoint.Values))
	targets := len(channels) + len(tp.PendingWrites)
	for i := range targets {
		f.Add(uint8(i), []byte(`null`))
		f.Add(uint8(i), []byte(`{"overwrite":[1]}`))
		f.Add(uint8(i), []byte(`[{"type":"ai"},{"type":"remove","id":"__remove_all__"}]`))
	}
	for _, c := range channels {
		f.Add(uint8(slices.Index(channels, c)), []byte(tp.Checkpoint.Values[c]))
	}
	for i, pw := range tp.PendingWrites {
		f.Add(uint8(len(channels)+i), []byte(pw.Value))
	}
	n := 0
	f.Fuzz(func(t *testing.T, target uint8, data []byte) {
		n++
		thread := fmt.Sprint("t", n)
		if err := d.CopyThread(ctx, "t", thread); err != nil {
			t.Fatal(err)
		}
		defer d.DeleteThread(ctx, thread)
		d.mu.Lock()
		d.thread, d.ch, d.pw, d.data = thread, "", -1, data
		if i := int(target) % targets; i < len(channels) {
			d.ch = channels[i]
		} else {
			d.pw = i - len(channels)
		}
		d.mu.Unlock()
		cfg := checkpoint.Config{ThreadID: thread}
		g.GetState(ctx, cfg, nil)
		for _, err := range g.GetStateHistory(ctx, thread, nil) {
			if err != nil {
				break
			}
		}
		g.Invoke(ctx, graph.Resume("yes"), &graph.RunOptions{ThreadID: thread})
	})
}
