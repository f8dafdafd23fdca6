package llm_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

func ExampleCollect() {
	model := scripted.New(llm.AI("UX 디자인은 사용자 조사부터 시작하세요."))
	msg, err := llm.Collect(model.Stream(context.Background(), []llm.Message{llm.Human("UX 디자이너가 되려면?")}))
	fmt.Println(msg.Text(), err)
	fmt.Println(msg.ResponseMetadata.FinishReason())
	// Output:
	// UX 디자인은 사용자 조사부터 시작하세요. <nil>
	// stop
}

func ExampleMerge() {
	var chunks []llm.Chunk
	var pieces []string
	for c, err := range scripted.New(llm.AI("Hello there, world")).Stream(context.Background(), nil) {
		if err != nil {
			panic(err)
		}
		chunks = append(chunks, c)
		pieces = append(pieces, c.Content)
	}
	fmt.Printf("%q\n", pieces)
	fmt.Println(llm.Merge(chunks...).Content)
	// Output:
	// ["Hello" " there," " world" ""]
	// Hello there, world
}

func ExampleStructured() {
	type Route struct {
		UseAgent bool   `json:"use_agent" jsonschema:"whether the message needs tools"`
		Reason   string `json:"reason"`
	}
	model := scripted.New(llm.AI("", llm.ToolCall{Name: "Route", Args: json.RawMessage(`{"use_agent":true,"reason":"needs a job search"}`)}))
	r, err := llm.Structured[Route](context.Background(), model, []llm.Message{llm.Human("Find UX jobs in Seoul")}, nil)
	fmt.Printf("%+v %v\n", r, err)
	// Output: {UseAgent:true Reason:needs a job search} <nil>
}

func ExampleMessage_MarshalJSON() {
	msg := llm.AI("", llm.ToolCall{ID: "call_1", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX"}`)})
	b, _ := json.Marshal(msg)
	fmt.Println(string(b))
	// Output: {"type":"ai","content":"","tool_calls":[{"name":"search_jobs","args":{"query":"UX"},"id":"call_1","type":"tool_call"}],"invalid_tool_calls":[]}
}
