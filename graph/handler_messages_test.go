package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// The error handler decides where the run goes: the failed node's own edges
// do not fire. Mirrors test_retry.py::test_graph_error_handler_can_route_with_command
// (LangGraph's handler is a node of its own, without the failed node's edges).
func TestOnErrorReplacesNodeRouting(t *testing.T) {
	visited := graph.Topic[string]("visited", &graph.TopicOptions{Accumulate: true})
	mark := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Update, error) {
			return visited.Write(name), nil
		}
	}
	g, err := graph.New(visited).AddNode(
		"work", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return graph.Update{}, errors.New("upstream down")
		}, &graph.NodeOptions{
			Destinations: []string{"fallback"},
			OnError: func(ctx context.Context, s graph.State, err error) (graph.Update, error) {
				return visited.Write("handled: " + err.Error()).Goto("fallback"), nil
			},
		}).AddNode(

		"next", mark("next"), nil).AddNode(

		"fallback", mark("fallback"), nil).
		AddEdge(graph.START, "work").
		AddEdge("work", "next").Compile(nil)

	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Invoke(context.Background(), graph.Input(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`handled: graph: node "work": upstream down`, "fallback"}
	if diff := cmp.Diff(want, visited.Get(s)); diff != "" {
		t.Errorf("visited (-want +got):\n%s", diff)
	}
}

// A message written without an id gets its id when it is written, so the
// updates stream, the messages stream and the stored list agree on it.
// Mirrors test_pregel.py::test_stream_messages_dedupe_state (ids on emitted messages).
func TestMessageIDGivenAtWrite(t *testing.T) {
	msgs := graph.Messages[csMsg]("messages")
	g, err := graph.New(msgs).AddNode(
		"say", func(ctx context.Context, s graph.State) (graph.Update, error) {
			return msgs.Write(csMsg{Role: "ai", Content: "hello"}), nil
		}, nil).
		AddEdge(graph.START, "say").Compile(nil)

	if err != nil {
		t.Fatal(err)
	}
	var updateIDs, streamedIDs []string
	var final []csMsg
	for ev, err := range g.Stream(context.Background(), graph.Input(), &graph.RunOptions{StreamModes: []graph.StreamMode{graph.StreamUpdates, graph.StreamMessages, graph.StreamValues}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case graph.NodeUpdate:
			for _, w := range d.Update.Writes() {
				list, ok := w.Value.([]csMsg)
				if !ok {
					t.Fatalf("messages write reads as %T, want []csMsg", w.Value)
				}
				for _, m := range list {
					updateIDs = append(updateIDs, m.ID)
				}
			}
		case graph.MessageEvent:
			streamedIDs = append(streamedIDs, d.Message.(csMsg).ID)
		case graph.State:
			final = msgs.Get(d)
		}
	}
	if len(final) != 1 || final[0].ID == "" {
		t.Fatalf("final messages = %+v", final)
	}
	want := []string{final[0].ID}
	if diff := cmp.Diff(want, updateIDs); diff != "" {
		t.Errorf("update ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, streamedIDs); diff != "" {
		t.Errorf("streamed ids (-want +got):\n%s", diff)
	}
}

// Removals read as LangChain's RemoveMessage in an update's JSON.
func TestMessageRemovalJSON(t *testing.T) {
	msgs := graph.Messages[csMsg]("messages")
	u := msgs.Remove("b")
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	list := got["messages"]
	if len(list) != 1 || list[0]["type"] != "remove" || list[0]["id"] != "b" {
		t.Errorf("update JSON = %s", b)
	}
}

// A run that stops at an interrupt returns the state with the writes of the
// step's tasks that finished, and streams it as a last values event; they
// are applied for good when the run resumes, without running those tasks
// again. Mirrors test_pregel.py::test_interrupt_stream_mode_values and the
// suppressed-interrupt values event of LangGraph's loop.
func TestInterruptShowsSiblingWrites(t *testing.T) {
	log := graph.Topic[string]("log", &graph.TopicOptions{Accumulate: true})
	calls := map[string]int{}
	var mu sync.Mutex
	count := func(n string) { mu.Lock(); calls[n]++; mu.Unlock() }
	g, err := graph.New(log).AddNode(
		"work", func(ctx context.Context, s graph.State) (graph.Update, error) {
			count("work")
			return log.Write("worked"), nil
		}, nil).AddNode(

		"ask", func(ctx context.Context, s graph.State) (graph.Update, error) {
			count("ask")
			ans, err := graph.Interrupt[string](ctx, "go on?")
			if err != nil {
				return graph.Update{}, err
			}
			return log.Write("answer: " + ans), nil
		}, nil).
		AddEdge(graph.START, "work").
		AddEdge(graph.START, "ask").Compile(&graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})

	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "t", StreamModes: []graph.StreamMode{graph.StreamValues}}
	var last graph.State
	for ev, err := range g.Stream(context.Background(), log.Write("start"), &opts) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev.Data.(graph.State)
	}
	if diff := cmp.Diff([]string{"start", "worked"}, log.Get(last)); diff != "" {
		t.Errorf("last values event (-want +got):\n%s", diff)
	}
	if len(last.Interrupts()) != 1 {
		t.Errorf("last values event has interrupts %v, want one", last.Interrupts())
	}
	s, err := g.Invoke(context.Background(), graph.Resume("yes"), &graph.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// The resumed step folds its writes in task order (ask before work, by
	// name), whatever order the tasks finished in.
	if diff := cmp.Diff([]string{"start", "answer: yes", "worked"}, log.Get(s)); diff != "" {
		t.Errorf("after resume (-want +got):\n%s", diff)
	}
	if calls["work"] != 1 || calls["ask"] != 2 {
		t.Errorf("calls = %v, want work once and ask twice", calls)
	}
}

// An update that writes one channel several times renders the writes as
// {"$writes": [...]}, as LangGraph's task results do, so two writes never
// read as one write of a list. Mirrors
// test_pregel.py::test_multiple_writes_same_channel_from_same_node.
func TestUpdateJSONRepeatedWrites(t *testing.T) {
	log := graph.Topic[string]("log", nil)
	count := graph.Value[int]("count")
	b, err := json.Marshal(log.Write("one", "two").And(count.Write(3)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"log": map[string]any{"$writes": []any{"one", "two"}}, "count": 3.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", b, diff)
	}
}
