package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/checkpointtest"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

// BenchmarkEchoRuns runs the apitest echo graph (the server benchmark's)
// from 32 goroutines, each run on a thread of its own with async
// durability, with the run's writes batched and not.
func BenchmarkEchoRuns(b *testing.B) {
	d, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "weft.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	checkpointtest.BenchmarkRuns(b, checkpoint.New(d), 32, func(s *checkpoint.Saver) (*graph.Graph, error) { return apitest.Echo(s, nil) }, echoInput)
}

func echoInput(int64) graph.Update {
	return apitest.Messages.Write(llm.Message{Type: llm.TypeHuman, Content: "hello there"})
}
