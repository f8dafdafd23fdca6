package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// A tool call whose arguments are not JSON gets its "→" line, with the raw
// arguments, like any other call (issue 7 §13): streamed, and not.
func TestPrinterShowsCallsWithArgumentsThatAreNotJSON(t *testing.T) {
	raw := `{"region": "제주", "limit": ` + strings.Repeat("9", 300)
	var info bytes.Buffer
	p := &printer{out: &bytes.Buffer{}, info: &info}
	p.event(graph.Event{Data: graph.MessageEvent{Node: react.AgentNode, TaskID: "t1", Message: llm.Chunk{
		ToolCallChunks: []llm.ToolCallChunk{{Index: 0, ID: "c1", Name: "recommend_popular_places_in_region", Args: raw}},
	}}})
	p.event(graph.Event{Data: graph.NodeUpdate{Node: react.AgentNode}})
	got := info.String()
	if !strings.HasPrefix(got, `→ recommend_popular_places_in_region({"region": "제주", "limit": 999`) || !strings.Contains(got, "…") || !strings.Contains(got, "not JSON") {
		t.Errorf("streamed call: stderr = %q", got)
	}

	info.Reset()
	p = &printer{out: &bytes.Buffer{}, info: &info}
	p.message(llm.Message{Type: llm.TypeAI, InvalidToolCalls: []llm.InvalidToolCall{{ID: "c2", Name: "create_travel_route", Args: "place_ids: a, b"}}}, "t2")
	if got := info.String(); got != "→ create_travel_route(place_ids: a, b) [arguments are not JSON]\n" {
		t.Errorf("message: stderr = %q", got)
	}
}
