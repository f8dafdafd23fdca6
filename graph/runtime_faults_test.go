package graph_test

// Tests for the runtime defects of issue 7 §10: each reproduces one.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// A value that contains itself, in an any-typed channel, fails the run with
// an error naming the channel (as encoding/json fails), instead of
// overflowing the stack and killing the process.
func TestCyclicValueFailsCheckpointWithError(t *testing.T) {
	Blob := graph.Value[any]("blob")
	g, err := graph.New(Blob).
		AddNode("loop", func(ctx context.Context, s graph.State) (graph.Update, error) {
			m := map[string]any{"name": "self"}
			m["self"] = []any{m}
			return Blob.Write(m), nil
		}).
		AddEdge(graph.START, "loop").
		Compile(graph.CompileOptions{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		_, err = g.Invoke(context.Background(), Blob.Write("start"), graph.RunOptions{ThreadID: "cycle-" + string(d), Durability: d})
		var uve *json.UnsupportedValueError
		if !errors.As(err, &uve) {
			t.Fatalf("%s: err = %v, want a *json.UnsupportedValueError", d, err)
		}
		if !strings.Contains(err.Error(), `"blob"`) {
			t.Fatalf("%s: err = %v, want it to name channel \"blob\"", d, err)
		}
	}
}
