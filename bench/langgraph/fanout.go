package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// The joke subgraph's channels (JokeState in bench.mjs). The subject is
// untyped, as in bench.mjs: it comes in as a list of one-letter strings and
// edit replaces it with a string.
var (
	jokeSubject = graph.Value[any]("subject")
	jokeJokes   = graph.Value[[]string]("jokes")
)

// The parent graph's channels (Overall in bench.mjs): each subject is a
// list of 1,000 one-letter strings.
var (
	fanSubjects = graph.Value[[][]string]("subjects")
	fanJokes    = graph.Reduce("jokes", concat[string])
)

// jsString is JavaScript's `${v}` for the subject's values: a list of
// strings is joined with commas.
func jsString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []string:
		return strings.Join(v, ",")
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = jsString(p)
		}
		return strings.Join(parts, ",")
	case nil:
		return "undefined"
	}
	return fmt.Sprint(v)
}

// bumped is the suffix that ends the subgraph's bump loop: ten bumps.
var bumped = strings.Repeat(" a", 10)

// jokeSubgraph is edit -> generate -> bump, where bump loops on itself until
// the joke has been bumped ten times. Input: subject; output: jokes.
func jokeSubgraph() (*graph.Graph, error) {
	return graph.New(jokeSubject, jokeJokes).AddNode(
		"edit", func(_ context.Context, s graph.State) (graph.Update, error) {
			return jokeSubject.Write(jsString(jokeSubject.Get(s)) + " - hohoho"), nil
		}, nil).AddNode(

		"generate", func(_ context.Context, s graph.State) (graph.Update, error) {
			return jokeJokes.Write([]string{"Joke about " + jsString(jokeSubject.Get(s))}), nil
		}, nil).AddNode(

		"bump", func(_ context.Context, s graph.State) (graph.Update, error) {
			return jokeJokes.Write([]string{jokeJokes.Get(s)[0] + " a"}), nil
		}, nil).
		AddEdge(graph.START, "edit").
		AddEdge("edit", "generate").
		AddEdge("generate", "bump").
		AddEdge("generate", graph.END).AddConditionalEdges(

		"bump", func(_ context.Context, s graph.State) (graph.Route, error) {
			if strings.HasSuffix(jokeJokes.Get(s)[0], bumped) {
				return graph.To(graph.END), nil
			}
			return graph.To("bump"), nil
		}, nil).
		Input(jokeSubject).
		Output(jokeJokes).Compile(nil)

}

// fanoutToSubgraph sends each of k random subjects, each a list of 1,000
// one-letter strings as in bench.mjs, to the joke subgraph from START and
// concatenates the jokes.
func fanoutToSubgraph(k int, saver *checkpoint.Saver) (*graph.Graph, graph.Update, error) {
	sub, err := jokeSubgraph()
	if err != nil {
		return nil, graph.Update{}, err
	}
	g, err := graph.New(fanSubjects, fanJokes).AddSubgraph(
		"generate_joke", sub, nil).AddConditionalEdges(

		graph.START, func(_ context.Context, s graph.State) (graph.Route, error) {
			subjects := fanSubjects.Get(s)
			sends := make([]graph.Send, len(subjects))
			for i, subject := range subjects {
				sends[i] = graph.Send{Node: "generate_joke", Arg: jokeSubject.Write(subject)}
			}
			return graph.Sends(sends...), nil
		}, nil).
		AddEdge("generate_joke", graph.END).Compile(&graph.CompileOptions{Checkpointer: saver})

	if err != nil {
		return nil, graph.Update{}, err
	}
	// bench.mjs passes each subject as an array of 1,000 letters, which
	// the parent's checkpoint stores as such and the subgraph's template
	// string joins with commas; the same values here do the same work.
	subjects := make([][]string, k)
	for i := range subjects {
		subjects[i] = randLetters(1000)
	}
	return g, fanSubjects.Write(subjects), nil
}
