package retrieve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/retrieve"
)

// An index over a registry, searched directly and used by a ReAct agent
// that binds only the tools retrieved for each request.
func Example() {
	ctx := context.Background()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	type city struct {
		City string `json:"city"`
	}
	reg, _ := tool.NewRegistry(
		tool.New("weather_forecast", "Get the weather forecast for a city.", func(_ context.Context, c city) (string, error) { return "sunny in " + c.City, nil }),
		tool.New("flights_search", "Search flight offers between two airports.", func(context.Context, struct{}) (string, error) { return "", nil }),
		tool.New("hotels_search", "Search hotels in a city for given dates.", func(context.Context, struct{}) (string, error) { return "", nil }),
		tool.New("currency_convert", "Convert an amount between currencies.", func(context.Context, struct{}) (string, error) { return "", nil }),
	)
	idx, err := retrieve.New(ctx, st, retrieve.Options{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := idx.SyncRegistry(ctx, reg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("indexed:", len(res.Added))

	hits, err := idx.Search(ctx, "what's the weather forecast in Busan", 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("best tool:", hits[0].Spec.Name)

	model := scripted.New(
		llm.AI("", llm.ToolCall{Name: "weather_forecast", Args: json.RawMessage(`{"city":"Busan"}`)}),
		llm.AI("It will be sunny in Busan."),
	)
	agent, err := react.New(model, reg, react.Options{Retrieval: &react.Retrieval{Tools: idx, K: 2}})
	if err != nil {
		log.Fatal(err)
	}
	out, err := react.Run(ctx, agent, "what's the weather forecast in Busan", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answer:", out.Answer)
	fmt.Println("tools offered to the model:", len(model.Requests()[0].Tools), "of", len(reg.Names())+1)
	// Output:
	// indexed: 4
	// best tool: weather_forecast
	// answer: It will be sunny in Busan.
	// tools offered to the model: 3 of 5
}
