package server_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// nestedGraphs has "nested": START → mid, a subgraph named Mid whose node
// inner is echo's graph (named LangGraph), whose node echo streams a
// model's reply.
func nestedGraphs() map[string]server.GraphFunc {
	graphs := apitestGraphs()
	graphs["nested"] = func(saver *checkpoint.Saver, st *store.Store) (*graph.Graph, error) {
		inner, err := apitest.Echo(nil, st)
		if err != nil {
			return nil, err
		}
		mid, err := graph.New(apitest.Messages).AddSubgraph("inner", inner, nil).AddEdge(graph.START, "inner").
			Compile(&graph.CompileOptions{Name: "Mid"})
		if err != nil {
			return nil, err
		}
		return graph.New(apitest.Messages).AddSubgraph("mid", mid, nil).AddEdge(graph.START, "mid").
			Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	return graphs
}

// The events mode nests the runs of subgraphs, without stream_subgraphs:
// the chain of the node that runs a subgraph holds the subgraph's own run,
// named after the subgraph, which holds its nodes' chains, which hold the
// model replies streamed in them; parent_ids lead through each, and a
// subgraph's node's metadata names its checkpoint namespace.
func TestStreamEventsModeSubgraphs(t *testing.T) {
	s := newServer(t, server.Options{Graphs: nestedGraphs()})
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "nested", "input": human("a b"), "stream_mode": []string{"events"}})
	var lc []lcStreamEvent
	var got []string
	for _, e := range evs {
		if e.Event != "events" {
			if e.Event != "metadata" {
				t.Errorf("event %s %s, asked for events only", e.Event, e.Data)
			}
			continue
		}
		var ev lcStreamEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatalf("events %s: %v", e.Data, err)
		}
		lc = append(lc, ev)
		got = append(got, ev.Event+" "+ev.Name)
	}
	want := []string{
		"on_chain_start LangGraph", "on_chain_start mid", "on_chain_start Mid", "on_chain_start inner",
		"on_chain_start LangGraph", "on_chain_start echo",
		"on_chat_model_start ChatModel", "on_chat_model_stream ChatModel", "on_chat_model_stream ChatModel", "on_chat_model_end ChatModel",
		"on_chain_end echo", "on_chain_end LangGraph", "on_chain_end inner", "on_chain_end Mid", "on_chain_end mid",
		"on_chain_end LangGraph",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	root, midTask, midRun, innerTask, innerRun, echoTask := lc[0].RunID, lc[1].RunID, lc[2].RunID, lc[3].RunID, lc[4].RunID, lc[5].RunID
	seen := map[string]bool{}
	for _, id := range []string{root, midTask, midRun, innerTask, innerRun, echoTask} {
		if !uuidPattern.MatchString(id) || seen[id] {
			t.Errorf("run ids %q are not distinct UUIDs", []string{root, midTask, midRun, innerTask, innerRun, echoTask})
			break
		}
		seen[id] = true
	}
	// Each start and its end: the same run, parent_ids and metadata.
	parents := [][]string{
		{}, {root}, {root, midTask}, {root, midTask, midRun},
		{root, midTask, midRun, innerTask}, {root, midTask, midRun, innerTask, innerRun},
		{root, midTask, midRun, innerTask, innerRun, echoTask},
	}
	nsOf := map[string]string{
		"mid":   "mid:" + midTask,
		"Mid":   "mid:" + midTask,
		"inner": "mid:" + midTask + "|inner:" + innerTask,
		"echo":  "mid:" + midTask + "|inner:" + innerTask + "|echo:" + echoTask,
	}
	nodeOf := map[string]string{"mid": "mid", "Mid": "mid", "inner": "inner", "echo": "echo", "ChatModel": "echo"}
	for i, ev := range lc {
		depth := i
		if i >= 6 && i < 10 {
			depth = 6 // the model's events
		} else if i >= 10 {
			depth = 15 - i
		}
		if diff := cmp.Diff(parents[depth], ev.ParentIDs); diff != "" {
			t.Errorf("%d %s %s: parent_ids (-want +got):\n%s", i, ev.Event, ev.Name, diff)
		}
		if depth == 0 {
			continue
		}
		ns := nsOf[ev.Name]
		if ev.Name == "ChatModel" {
			ns = nsOf["echo"]
		}
		if ev.Name == "LangGraph" { // echo's graph: the inner node's run's
			ns, nodeOf["LangGraph"] = nsOf["inner"], "inner"
		}
		md := ev.Metadata
		if md["langgraph_checkpoint_ns"] != ns || md["checkpoint_ns"] != ns || md["langgraph_node"] != nodeOf[ev.Name] || md["thread_id"] != tid {
			t.Errorf("%d %s %s: metadata %v, want checkpoint_ns %q", i, ev.Event, ev.Name, md, ns)
		}
	}
	for i, ev := range lc[1:6] {
		if end := lc[15-i-1]; end.RunID != ev.RunID {
			t.Errorf("%s %s ends as %s %s", ev.Event, ev.Name, end.RunID, ev.RunID)
		}
	}
	// A subgraph's run starts with its node's input and ends with its
	// last values; a node's chain has its step's tag, a subgraph's run none.
	var in struct{ Messages []any }
	if err := json.Unmarshal(lc[4].Data["input"], &in); err != nil || len(in.Messages) != 1 {
		t.Errorf("the inner graph's input = %s", lc[4].Data["input"])
	}
	var out struct{ Messages []struct{ Content string } }
	if err := json.Unmarshal(lc[11].Data["output"], &out); err != nil || len(out.Messages) != 2 || out.Messages[1].Content != "a b" {
		t.Errorf("the inner graph's output = %s", lc[11].Data["output"])
	}
	if len(lc[4].Tags) != 0 || cmp.Diff([]string{"graph:step:1"}, lc[5].Tags) != "" {
		t.Errorf("tags: the inner graph's %q, echo's %q", lc[4].Tags, lc[5].Tags)
	}
}

// The events mode asks the graph for its subgraphs' events, yet the other
// modes send them only with stream_subgraphs, as without the events mode.
func TestStreamEventsModeLeavesOtherModes(t *testing.T) {
	s := newServer(t, server.Options{Graphs: nestedGraphs()})
	ids := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	others := func(subgraphs bool, modes ...string) []string {
		tid := s.newThread()
		_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{
			"assistant_id": "nested", "input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "a b", "id": "h1"}}},
			"stream_mode": modes, "stream_subgraphs": subgraphs,
		})
		var out []string
		for _, e := range evs {
			if e.Event == "events" || e.Event == "metadata" {
				continue
			}
			out = append(out, ids.ReplaceAllString(e.Event+" "+string(e.Data), "ID"))
		}
		return out
	}
	for _, subgraphs := range []bool{false, true} {
		modes := []string{"values", "updates", "messages-tuple", "custom"}
		want := others(subgraphs, modes...)
		got := others(subgraphs, append(modes, "events")...)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stream_subgraphs %v: the other modes with events (-without +with):\n%s", subgraphs, diff)
		}
		nested := 0
		for _, e := range got {
			if name, _, _ := strings.Cut(e, " "); strings.Contains(name, "|") {
				nested++
			}
		}
		if (nested > 0) != subgraphs || len(got) == 0 {
			t.Errorf("stream_subgraphs %v: %d subgraph events of %q", subgraphs, nested, got)
		}
	}
}

// A subgraph's node that fails, or is interrupted, leaves a stream whose
// every event is nested in runs started before it; a failed node's chain
// has no end.
func TestStreamEventsModeSubgraphFailsOrInterrupts(t *testing.T) {
	s := toolsServer(t)
	for _, text := range []string{"fail", "ask"} {
		lc, _ := eventsOf(t, s, text, "events")
		started := map[string]bool{}
		var names []string
		for _, ev := range lc {
			for _, p := range ev.ParentIDs {
				if !started[p] {
					t.Errorf("%s: %s %s is nested in %s, not started", text, ev.Event, ev.Name, p)
				}
			}
			if strings.HasSuffix(ev.Event, "_start") {
				started[ev.RunID] = true
			}
			names = append(names, ev.Event+" "+ev.Name)
		}
		ends := 0
		for _, n := range names {
			if n == "on_chain_end check" {
				ends++
			}
		}
		if !slices.Contains(names, "on_chain_start check") || (text == "fail" && ends != 0) {
			t.Errorf("%s: events %q", text, names)
		}
	}
}
