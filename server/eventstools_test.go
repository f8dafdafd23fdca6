package server_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// lcStreamEvent is an events-mode event as a client reads it.
type lcStreamEvent struct {
	Event     string                     `json:"event"`
	Name      string                     `json:"name"`
	RunID     string                     `json:"run_id"`
	ParentIDs []string                   `json:"parent_ids"`
	Tags      []string                   `json:"tags"`
	Metadata  map[string]any             `json:"metadata"`
	Data      map[string]json.RawMessage `json:"data"`
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// eventsOf runs toolsGraph with text as the human message in modes and
// returns its events-mode events and the names of its other SSE events.
func eventsOf(t *testing.T, s *testServer, text string, modes ...string) (lc []lcStreamEvent, others []string) {
	t.Helper()
	tid := s.newThread()
	_, evs := s.stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "tooly", "input": human(text), "stream_mode": modes})
	for _, e := range evs {
		if e.Event != "events" {
			others = append(others, e.Event)
			continue
		}
		var ev lcStreamEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatalf("events %s: %v", e.Data, err)
		}
		if ev.ParentIDs == nil || ev.Tags == nil || ev.Metadata == nil || ev.Data == nil {
			t.Errorf("event lacks parent_ids, tags, metadata or data: %s", e.Data)
		}
		lc = append(lc, ev)
	}
	return lc, others
}

// In the events mode a tool call the tool node makes is LangChain's tool
// run nested in the node's chain: on_tool_start with its arguments, then
// on_tool_end with them and the tool message, or on_tool_error with the
// error, between the node's on_chain_start and on_chain_end, with a run id
// of its own and the graph's and the node's run ids as parent_ids. Its
// progress has no event. A subgraph's node's tool call is nested in that
// node's chain, inside the subgraph's run, inside the chain of the node
// that runs the subgraph, without stream_subgraphs too.
func TestStreamEventsModeTools(t *testing.T) {
	s := toolsServer(t)
	for _, tc := range []struct {
		text, end string
		data      map[string]string
	}{
		{"search", "on_tool_end", map[string]string{
			"input":  `{"q":"cafe"}`,
			"output": `{"type":"tool","id":"ID","name":"search","content":"found cafe","tool_call_id":"call_1","status":"success"}`,
		}},
		{"broken", "on_tool_error", map[string]string{
			"input": `{"q":"cafe"}`,
			"error": `{"error":"tool_error","message":"out of order"}`,
		}},
	} {
		lc, others := eventsOf(t, s, tc.text, "events")
		if diff := cmp.Diff([]string{"metadata"}, others); diff != "" {
			t.Errorf("%s: events alone sends other events (-want +got):\n%s", tc.text, diff)
		}
		var got []string
		runs := map[string]string{} // chain name → run id
		for _, ev := range lc {
			got = append(got, ev.Event+" "+ev.Name)
			if ev.Event == "on_chain_start" && runs[ev.Name] == "" {
				runs[ev.Name] = ev.RunID
			}
		}
		want := []string{
			"on_chain_start LangGraph",
			"on_chain_start agent", "on_chain_end agent",
			"on_chain_start tools", "on_tool_start " + tc.text, tc.end + " " + tc.text, "on_chain_end tools",
			"on_chain_start sub", "on_chain_start LangGraph", "on_chain_start check",
			"on_tool_start echo", "on_tool_end echo",
			"on_chain_end check", "on_chain_end LangGraph", "on_chain_end sub",
			"on_chain_end LangGraph",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: events (-want +got):\n%s", tc.text, diff)
		}
		// The subgraph's run (the second LangGraph) and its node's tool call.
		subRun, check, echo := lc[8], lc[9], lc[10]
		if subRun.RunID == lc[0].RunID || !uuidPattern.MatchString(subRun.RunID) {
			t.Errorf("%s: the subgraph's run id %q", tc.text, subRun.RunID)
		}
		if diff := cmp.Diff([]string{runs["LangGraph"], runs["sub"]}, subRun.ParentIDs); diff != "" {
			t.Errorf("%s: the subgraph's parent_ids (-want +got):\n%s", tc.text, diff)
		}
		if diff := cmp.Diff([]string{runs["LangGraph"], runs["sub"], subRun.RunID}, check.ParentIDs); diff != "" {
			t.Errorf("%s: the subgraph's node's parent_ids (-want +got):\n%s", tc.text, diff)
		}
		if diff := cmp.Diff([]string{runs["LangGraph"], runs["sub"], subRun.RunID, runs["check"]}, echo.ParentIDs); diff != "" {
			t.Errorf("%s: the subgraph's tool call's parent_ids (-want +got):\n%s", tc.text, diff)
		}
		ns := "sub:" + runs["sub"] + "|check:" + runs["check"]
		for _, ev := range []lcStreamEvent{check, echo} {
			if md := ev.Metadata; md["langgraph_node"] != "check" || md["langgraph_checkpoint_ns"] != ns || md["checkpoint_ns"] != ns {
				t.Errorf("%s: %s %s's metadata = %v", tc.text, ev.Event, ev.Name, md)
			}
		}
		if md := subRun.Metadata; md["langgraph_node"] != "sub" || md["checkpoint_ns"] != "sub:"+runs["sub"] {
			t.Errorf("%s: the subgraph's metadata = %v", tc.text, md)
		}
		if diff := cmp.Diff([]string{runs["LangGraph"]}, lc[3].ParentIDs); diff != "" {
			t.Errorf("%s: the node's parent_ids (-want +got):\n%s", tc.text, diff)
		}
		if len(lc[0].ParentIDs) != 0 {
			t.Errorf("%s: the graph's parent_ids = %q", tc.text, lc[0].ParentIDs)
		}
		start, end := lc[4], lc[5]
		if !uuidPattern.MatchString(start.RunID) || start.RunID != end.RunID || start.RunID == runs["tools"] {
			t.Errorf("%s: the tool's run ids: start %q, end %q, node %q", tc.text, start.RunID, end.RunID, runs["tools"])
		}
		for _, ev := range []lcStreamEvent{start, end} {
			if diff := cmp.Diff([]string{runs["LangGraph"], runs["tools"]}, ev.ParentIDs); diff != "" {
				t.Errorf("%s: %s's parent_ids (-want +got):\n%s", tc.text, ev.Event, diff)
			}
			if len(ev.Tags) != 0 {
				t.Errorf("%s: %s's tags = %q", tc.text, ev.Event, ev.Tags)
			}
			md := ev.Metadata
			if md["langgraph_node"] != "tools" || md["langgraph_step"] != 2.0 || md["langgraph_checkpoint_ns"] != "tools:"+runs["tools"] || md["assistant_id"] == nil {
				t.Errorf("%s: %s's metadata = %v", tc.text, ev.Event, md)
			}
		}
		if diff := cmp.Diff(map[string]string{"input": `{"q":"cafe"}`}, rawStrings(start.Data)); diff != "" {
			t.Errorf("%s: on_tool_start's data (-want +got):\n%s", tc.text, diff)
		}
		data := rawStrings(end.Data)
		var msg struct{ ID string }
		if json.Unmarshal(end.Data["output"], &msg) == nil && msg.ID != "" {
			data["output"] = regexp.MustCompile(`"id":"`+regexp.QuoteMeta(msg.ID)+`"`).ReplaceAllString(data["output"], `"id":"ID"`)
		}
		if diff := cmp.Diff(tc.data, data); diff != "" {
			t.Errorf("%s: %s's data (-want +got):\n%s", tc.text, tc.end, diff)
		}
	}
}

func rawStrings(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// The events mode asks the graph for tools events, yet sends tools SSE
// events only to a client that asked for the tools mode too; the tools
// mode alone sends no events-mode events.
func TestStreamEventsAndToolsModesApart(t *testing.T) {
	s := toolsServer(t)
	count := func(names []string, name string) (n int) {
		for _, x := range names {
			if x == name {
				n++
			}
		}
		return n
	}
	lc, others := eventsOf(t, s, "search", "tools")
	if len(lc) != 0 || count(others, "tools") != 3 {
		t.Errorf("tools alone: %d events events, others %q", len(lc), others)
	}
	lc, others = eventsOf(t, s, "search", "events", "tools")
	tools := 0
	for _, ev := range lc {
		if ev.Event == "on_tool_start" || ev.Event == "on_tool_end" {
			tools++
		}
	}
	// The subgraph's echo call is in the events mode (not in tools, without
	// stream_subgraphs).
	if tools != 4 || count(others, "tools") != 3 {
		t.Errorf("events and tools: %d tool events in events, others %q", tools, others)
	}
}

// A node's own graph.StreamTool events, sent without a run id (and here
// with an output that does not encode), are tool runs too: start and end
// matched by their tool call id and name, the run id made up, the output
// null.
func TestStreamEventsModeOwnToolEvents(t *testing.T) {
	own := func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		msgs := graph.Messages[llm.Message]("messages")
		node := func(ctx context.Context, s graph.State) (graph.Update, error) {
			graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolStarted, ToolCallID: "x", Name: "mine"})
			graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolProgress, ToolCallID: "x", Name: "mine", Data: 1})
			graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolEnded, ToolCallID: "x", Name: "mine", Output: make(chan int)})
			// An end whose start was never sent is no event.
			graph.StreamTool(ctx, graph.ToolEvent{Kind: graph.ToolEnded, ToolCallID: "y", Name: "mine", Output: 1})
			return graph.Update{}, nil
		}
		return graph.New(msgs).AddNode("own", node, nil).AddEdge(graph.START, "own").Compile(&graph.CompileOptions{Checkpointer: saver})
	}
	s := newServer(t, server.Options{Graphs: map[string]server.GraphFunc{"tooly": own}})
	lc, _ := eventsOf(t, s, "hi", "events")
	var got []string
	for _, ev := range lc {
		got = append(got, ev.Event+" "+ev.Name)
	}
	want := []string{"on_chain_start LangGraph", "on_chain_start own", "on_tool_start mine", "on_tool_end mine", "on_chain_end own", "on_chain_end LangGraph"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	start, end := lc[2], lc[3]
	if !uuidPattern.MatchString(start.RunID) || start.RunID != end.RunID {
		t.Errorf("run ids %q, %q", start.RunID, end.RunID)
	}
	if diff := cmp.Diff(map[string]string{"input": "{}", "output": "null"}, rawStrings(end.Data)); diff != "" {
		t.Errorf("on_tool_end's data (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{lc[0].RunID, lc[1].RunID}, end.ParentIDs); diff != "" {
		t.Errorf("parent_ids (-want +got):\n%s", diff)
	}
}
