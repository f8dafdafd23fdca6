// Package dag20 is the plan the orchestrator benchmarks run (bench/orchestrator
// and bench/webui): 20 todos in a dependency DAG of 7 levels, each todo a
// call of a stub tool that waits a fixed time, planned by a scripted model
// for an orchestrator whose approval points are off.
package dag20

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// Levels is the DAG's shape: todos per level. Its length is the critical
// path, in todos.
var Levels = []int{2, 3, 5, 4, 3, 2, 1}

// Cognition is the scripted model's reading of any request: clear, and
// needing tools.
const Cognition = `{"intent": {"domain": "ANALYSIS", "category": "trend", "subcategory": "bench"}, "entities": [], "ambiguous": false, "needs_tools": true, "confidence": 1}`

// PlanJSON is the model's plan, with summary: a todo per stub call, each
// depending on one to three todos of the level before, spread over it. It
// returns the plan's JSON and its number of todos.
func PlanJSON(summary string) (string, int) {
	type todo struct {
		ID        string            `json:"id"`
		Title     string            `json:"title"`
		Executor  string            `json:"executor"`
		Tool      string            `json:"tool"`
		Params    map[string]string `json:"params"`
		DependsOn []string          `json:"depends_on,omitempty"`
	}
	var todos []todo
	var prev []string
	n := 0
	for lv, size := range Levels {
		var cur []string
		for i := range size {
			n++
			id := fmt.Sprintf("t%d", n)
			t := todo{ID: id, Title: fmt.Sprintf("step %d of level %d", i+1, lv+1), Executor: "stub", Tool: "wait", Params: map[string]string{"name": id}}
			for k := range min(len(prev), 1+i%3) {
				if d := prev[(i+k)%len(prev)]; !slices.Contains(t.DependsOn, d) {
					t.DependsOn = append(t.DependsOn, d)
				}
			}
			todos = append(todos, t)
			cur = append(cur, id)
		}
		prev = cur
	}
	b, _ := json.Marshal(map[string]any{"summary": summary, "todos": todos})
	return string(b), n
}

type waitArgs struct {
	Name string `json:"name"`
}

// Agent is the orchestrator over the stub tool "wait", which waits latency
// and answers its name argument, with model as every layer's model and
// every approval point, the ReAct fallback and next actions off.
func Agent(saver *checkpoint.Saver, model llm.ChatModel, latency time.Duration) (*orchestrator.Agent, error) {
	wait := tool.New("wait", "Waits a fixed time.", func(ctx context.Context, in waitArgs) (string, error) {
		if latency == 0 {
			return in.Name, nil
		}
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
			return in.Name, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	cfg := orchestrator.DefaultConfig()
	cfg.Approvals.Enabled = false
	cfg.Response.NextActions = false
	cfg.Execution.ReactFallback = false
	cfg.Execution.Preparation = orchestrator.PrepareLight
	return orchestrator.New(orchestrator.Options{
		Config:       &cfg,
		Models:       orchestrator.Models{Default: model},
		Executors:    []orchestrator.Executor{{Name: "stub", Description: "waits", Tools: []*tool.Tool{wait}}},
		Checkpointer: saver,
	})
}
