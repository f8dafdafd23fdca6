package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

// A team serves its own graph from its own binary: build the graph over
// the saver the server gives, and serve the server. In a real program,
// open a database with dburl.Open (Options.DB) and listen with
// http.ListenAndServe("127.0.0.1:2024", srv); here the server keeps
// everything in memory and a test server listens.
func ExampleNew() {
	greeting := graph.Value[string]("greeting")
	name := graph.Value[string]("name")
	greet := func(saver *checkpoint.Saver, _ *store.Store) (*graph.Graph, error) {
		return graph.New(name, greeting).
			AddNode("greet", func(ctx context.Context, s graph.State) (graph.Update, error) {
				return greeting.Write("Hello, " + name.Get(s) + "!"), nil
			}, nil).
			AddEdge(graph.START, "greet").
			Compile(&graph.CompileOptions{Checkpointer: saver})
	}

	ctx := context.Background()
	srv, err := server.New(ctx, server.Options{Graphs: map[string]server.GraphFunc{"greeter": greet}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	// Any LangGraph client now runs it; here, a stateless run.
	res, err := http.Post(ts.URL+"/runs/wait", "application/json",
		strings.NewReader(`{"assistant_id": "greeter", "input": {"name": "Ada"}}`))
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(strings.TrimSpace(string(body)))
	// Output: {"greeting":"Hello, Ada!","name":"Ada"}
}
