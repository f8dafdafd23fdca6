package server

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server/internal/records"
)

// The JSON shapes of the LangGraph Server API, as the official SDK reads
// them.

// timeLayout writes times as the API does: UTC, microseconds.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// apiTime is a time written in timeLayout.
type apiTime time.Time

func (t apiTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(timeLayout) + `"`), nil
}

// assistantNamespace is the namespace of system assistant ids, as
// LangGraph's servers use it.
var assistantNamespace = uuid.MustParse("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

func systemAssistantID(graphID string) string {
	return uuid.NewSHA1(assistantNamespace, []byte(graphID)).String()
}

type threadJSON struct {
	ThreadID   string          `json:"thread_id"`
	CreatedAt  apiTime         `json:"created_at"`
	UpdatedAt  apiTime         `json:"updated_at"`
	Metadata   json.RawMessage `json:"metadata"`
	Status     string          `json:"status"`
	Config     json.RawMessage `json:"config"`
	Values     json.RawMessage `json:"values,omitempty"`
	Interrupts json.RawMessage `json:"interrupts,omitempty"`
}

func threadOut(t records.Thread) threadJSON {
	return threadJSON{
		ThreadID: t.ID, CreatedAt: apiTime(t.CreatedAt), UpdatedAt: apiTime(t.UpdatedAt),
		Metadata: t.Metadata, Status: t.Status, Config: t.Config, Values: t.Values, Interrupts: t.Interrupts,
	}
}

type runJSON struct {
	RunID             string          `json:"run_id"`
	ThreadID          string          `json:"thread_id"`
	AssistantID       string          `json:"assistant_id"`
	Metadata          json.RawMessage `json:"metadata"`
	Status            string          `json:"status"`
	Kwargs            json.RawMessage `json:"kwargs"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	CreatedAt         apiTime         `json:"created_at"`
	UpdatedAt         apiTime         `json:"updated_at"`
}

func runOut(r records.Run) runJSON {
	return runJSON{
		RunID: r.ID, ThreadID: r.ThreadID, AssistantID: r.AssistantID, Metadata: r.Metadata, Status: r.Status,
		Kwargs: r.Kwargs, MultitaskStrategy: r.MultitaskStrategy, CreatedAt: apiTime(r.CreatedAt), UpdatedAt: apiTime(r.UpdatedAt),
	}
}

type assistantJSON struct {
	AssistantID string          `json:"assistant_id"`
	GraphID     string          `json:"graph_id"`
	Config      json.RawMessage `json:"config"`
	Context     json.RawMessage `json:"context"`
	CreatedAt   apiTime         `json:"created_at"`
	UpdatedAt   apiTime         `json:"updated_at"`
	Metadata    json.RawMessage `json:"metadata"`
	Version     int             `json:"version"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
}

func assistantOut(a records.Assistant) assistantJSON {
	return assistantJSON{
		AssistantID: a.ID, GraphID: a.GraphID, Config: a.Config, Context: a.Context, CreatedAt: apiTime(a.CreatedAt),
		UpdatedAt: apiTime(a.UpdatedAt), Metadata: a.Metadata, Version: a.Version, Name: a.Name, Description: a.Description,
	}
}

// checkpointJSON addresses a checkpoint.
type checkpointJSON struct {
	ThreadID      string  `json:"thread_id"`
	CheckpointNS  string  `json:"checkpoint_ns"`
	CheckpointID  *string `json:"checkpoint_id"`
	CheckpointMap any     `json:"checkpoint_map"`
}

func checkpointOut(c *checkpoint.Config) *checkpointJSON {
	if c == nil || c.ThreadID == "" {
		return nil
	}
	out := &checkpointJSON{ThreadID: c.ThreadID, CheckpointNS: c.Namespace}
	if c.CheckpointID != "" {
		id := c.CheckpointID
		out.CheckpointID = &id
	}
	return out
}

type taskJSON struct {
	ID         string               `json:"id"`
	Name       string               `json:"name"`
	Error      *string              `json:"error"`
	Interrupts []graph.Interruption `json:"interrupts"`
	Path       []any                `json:"path"`
	Checkpoint *checkpointJSON      `json:"checkpoint"`
	State      *threadStateJSON     `json:"state"`
	Result     *graph.Update        `json:"result"`
}

type threadStateJSON struct {
	Values           any                  `json:"values"`
	Next             []string             `json:"next"`
	Tasks            []taskJSON           `json:"tasks"`
	Metadata         map[string]any       `json:"metadata,omitempty"`
	CreatedAt        *apiTime             `json:"created_at"`
	Checkpoint       *checkpointJSON      `json:"checkpoint"`
	ParentCheckpoint *checkpointJSON      `json:"parent_checkpoint"`
	Interrupts       []graph.Interruption `json:"interrupts,omitempty"`
}

// emptyState is the state of a thread with no checkpoint.
func emptyState() threadStateJSON {
	return threadStateJSON{Values: map[string]any{}, Next: []string{}, Tasks: []taskJSON{}}
}

// metadataOut flattens a checkpoint's metadata as LangGraph writes it: the
// run's metadata with source, step and parents beside it.
func metadataOut(m checkpoint.Metadata) map[string]any {
	out := make(map[string]any, len(m.Extra)+3)
	for k, v := range m.Extra {
		out[k] = v
	}
	out["source"] = m.Source
	out["step"] = m.Step
	parents := m.Parents
	if parents == nil {
		parents = map[string]string{}
	}
	out["parents"] = parents
	return out
}

func stateOut(snap graph.StateSnapshot) threadStateJSON {
	out := threadStateJSON{
		Values:           snap.Values,
		Next:             snap.Next,
		Tasks:            make([]taskJSON, 0, len(snap.Tasks)),
		Metadata:         metadataOut(snap.Metadata),
		Checkpoint:       checkpointOut(&snap.Config),
		ParentCheckpoint: checkpointOut(snap.Parent),
		Interrupts:       snap.Interrupts,
	}
	if out.Next == nil {
		out.Next = []string{}
	}
	if !snap.CreatedAt.IsZero() {
		t := apiTime(snap.CreatedAt)
		out.CreatedAt = &t
	}
	for _, t := range snap.Tasks {
		tj := taskJSON{ID: t.ID, Name: t.Name, Interrupts: t.Interrupts, Path: []any{"__pregel_pull", t.Name}, Result: t.Result}
		if tj.Interrupts == nil {
			tj.Interrupts = []graph.Interruption{}
		}
		if t.Error != "" {
			e := t.Error
			tj.Error = &e
		}
		if t.Namespace != "" {
			tj.Checkpoint = &checkpointJSON{ThreadID: snap.Config.ThreadID, CheckpointNS: t.Namespace}
		}
		if t.State != nil {
			st := stateOut(*t.State)
			tj.State = &st
		}
		out.Tasks = append(out.Tasks, tj)
	}
	return out
}

// interruptsByTask is a thread's pending interrupts keyed by task id.
func interruptsByTask(snap graph.StateSnapshot) map[string][]graph.Interruption {
	out := map[string][]graph.Interruption{}
	for _, t := range snap.Tasks {
		if len(t.Interrupts) > 0 {
			out[t.ID] = t.Interrupts
		}
	}
	return out
}

// cronJSON is a cron as the API writes it.
type cronJSON struct {
	CronID         string          `json:"cron_id"`
	AssistantID    string          `json:"assistant_id"`
	ThreadID       *string         `json:"thread_id"`
	OnRunCompleted string          `json:"on_run_completed"`
	EndTime        *apiTime        `json:"end_time"`
	Schedule       string          `json:"schedule"`
	Timezone       string          `json:"timezone"`
	CreatedAt      apiTime         `json:"created_at"`
	UpdatedAt      apiTime         `json:"updated_at"`
	Payload        json.RawMessage `json:"payload"`
	UserID         *string         `json:"user_id"`
	NextRunDate    *apiTime        `json:"next_run_date"`
	Metadata       json.RawMessage `json:"metadata"`
	Enabled        bool            `json:"enabled"`
	// Now is the server's time, written when a search selects it.
	Now *apiTime `json:"now,omitempty"`
}

// cronOut writes a cron; withNow adds the server's time.
func cronOut(c records.Cron, withNow bool) cronJSON {
	out := cronJSON{
		CronID: c.ID, AssistantID: c.AssistantID, OnRunCompleted: c.OnRunCompleted, Schedule: c.Schedule, Timezone: c.Timezone,
		CreatedAt: apiTime(c.CreatedAt), UpdatedAt: apiTime(c.UpdatedAt), Payload: c.Payload, Metadata: c.Metadata, Enabled: c.Enabled,
	}
	if c.ThreadID != "" {
		out.ThreadID = &c.ThreadID
	}
	if c.Owner != "" {
		out.UserID = &c.Owner
	}
	if c.EndTime != nil {
		t := apiTime(*c.EndTime)
		out.EndTime = &t
	}
	if c.NextRunDate != nil {
		t := apiTime(*c.NextRunDate)
		out.NextRunDate = &t
	}
	if withNow {
		t := apiTime(time.Now())
		out.Now = &t
	}
	return out
}
