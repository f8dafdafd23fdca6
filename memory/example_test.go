package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/store"
)

// A semantic memory manager run in the background after a conversation,
// then searched.
func Example() {
	ctx := context.Background()
	st, err := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// The model's part: it answers the extraction with one insert.
	model := scripted.New(llm.AI("", llm.ToolCall{Name: "memory_operations", Args: json.RawMessage(
		`{"operations":[{"op":"insert","content":{"category":"preference","content":"Prefers answers in Korean"}}]}`)}))
	facts, err := memory.NewManager[memory.Fact](model, st, memory.ManagerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	r, err := memory.NewReflector(memory.ReflectorOptions{Extractors: []memory.Extractor{facts}})
	if err != nil {
		log.Fatal(err)
	}
	// After the answer is sent: returns at once.
	r.Submit("alice", "thread-1", []llm.Message{llm.Human("From now on, please answer in Korean."), llm.AI("알겠습니다.")})
	if err := r.Close(ctx); err != nil { // waits for the work in flight
		log.Fatal(err)
	}

	found, err := facts.Search(ctx, "alice", "which language to answer in", 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found[0].Content.Content)
	fmt.Println(r.Stats().Processed, "conversation learned from")
	// Output:
	// Prefers answers in Korean
	// 1 conversation learned from
}

// Document 001's hooks: predicted acceptance of a step from past approvals.
func ExampleBehaviourMemory_PredictAcceptance() {
	ctx := context.Background()
	st, _ := store.NewMemory(store.Config{Index: &store.IndexConfig{Embedder: embed.NewLexical(0)}})
	defer st.Close()
	exp, err := memory.NewExperience(st, memory.ExperienceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		exp.Behaviour.RecordApproval(ctx, "alice", memory.Approval{Kind: "step", Tool: "gmail_send_email", Action: "accept"})
	}
	p, n, _ := exp.Behaviour.PredictAcceptance(ctx, "alice", "step", "gmail_send_email")
	fmt.Printf("p = %.2f from %d samples; auto-approve: %v\n", p, n, p > memory.AutoApproveProbability)
	// Output: p = 0.91 from 3 samples; auto-approve: true
}
