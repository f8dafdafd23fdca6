package orchestrator

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/weftlabs/weft/agent/events"
	"github.com/weftlabs/weft/graph"
)

// emit sends an event to the run's custom stream.
func emit(ctx context.Context, ev events.Event) { graph.Emit(ctx, ev) }

// ask stops the run at an approval point with req, and returns the
// person's decision when the run is resumed. When it stops, it tells the
// stream (hitl_request and human_input_required); a node resumed runs
// again from its top, and then Interrupt returns the answer without
// stopping, so the events go out once per stop.
func ask(ctx context.Context, req Request) (Decision, error) {
	d, err := graph.Interrupt[Decision](ctx, req)
	if errors.Is(err, graph.ErrInterrupted) {
		actions := make([]string, len(req.Actions))
		for i, a := range req.Actions {
			actions[i] = string(a)
		}
		payload, _ := json.Marshal(req)
		emit(ctx, events.HITLRequest{Kind: string(req.Kind), Message: req.Message, Actions: actions, Request: payload})
		emit(ctx, events.HumanInputRequired{Kind: string(req.Kind), Message: req.Message, Actions: actions})
	}
	return d, err
}

// counts returns how many todos ended and how many there are.
func counts(todos []Todo) (ended, total int) {
	for _, t := range todos {
		if t.Status.Ended() {
			ended++
		}
	}
	return ended, len(todos)
}

// sessionState is document 003's session_state for todos at layer.
func sessionState(thread string, task int, layer string, todos []Todo) events.SessionState {
	st := events.SessionState{Thread: thread, Task: task, Layer: layer, Todos: make([]events.TodoState, len(todos))}
	for i, t := range todos {
		st.Todos[i] = events.TodoState{ID: t.ID, Title: t.Title, Executor: t.Executor, Tool: t.Tool, DependsOn: t.DependsOn, Status: string(t.Status), Version: t.Version}
	}
	return st
}

// progress is a todo_progress event for t.
func (a *Agent) progress(t Todo, method string) events.TodoProgress {
	return events.TodoProgress{TodoID: t.ID, Title: t.Title, Executor: t.Executor, Tool: t.Tool, Status: string(t.Status),
		Version: t.Version, Attempt: t.Attempt, Method: method, Reason: t.Reason, Time: a.now().UTC()}
}

// withChanges returns todos with changed ones replaced (MergeTodos), for
// counting before the writes apply.
func withChanges(todos []Todo, changed ...Todo) []Todo { return MergeTodos(todos, changed) }
