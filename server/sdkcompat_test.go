package server_test

import (
	"testing"

	"github.com/weftlabs/weft/internal/sdkcompat"
	"github.com/weftlabs/weft/server"
)

// The SDK compatibility suite's opt-in toolgraph cases: the official JS
// client streams the tools and lifecycle modes of a graph with a tool node
// and a subgraph (toolsGraph, served as "toolgraph" beside the apitest
// graphs) and reads the events as LangGraph's. The rest of the suite runs
// in cmd/weft's TestServeSDKCompat.
func TestSDKCompatToolGraph(t *testing.T) {
	graphs := apitestGraphs()
	graphs["toolgraph"] = toolsGraph
	s := newServer(t, server.Options{Graphs: graphs})
	results := sdkcompat.Run(t, s.ts.URL, &sdkcompat.Options{Only: "toolgraph"})
	if len(results) != 3 {
		t.Errorf("ran %d toolgraph cases, want 3: %+v", len(results), results)
	}
}
