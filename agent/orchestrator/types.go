package orchestrator

import (
	"encoding/json"
	"time"

	"github.com/weftlabs/weft/agent/events"
)

// Intent is document 003's three-level intent.
type Intent struct {
	Domain      string `json:"domain" jsonschema:"the request's domain, one of the domains listed in the instructions"`
	Category    string `json:"category" jsonschema:"a category of that domain, from the list in the instructions"`
	Subcategory string `json:"subcategory" jsonschema:"a finer label of your own, snake_case, e.g. channel_performance"`
}

// Entity is something the request names: a brand, a product, a period, a
// channel.
type Entity struct {
	Type       string  `json:"type" jsonschema:"what kind of thing: brand, product, date_range, channel, platform, metric, ..."`
	Value      string  `json:"value" jsonschema:"the thing as the request names it"`
	Confidence float64 `json:"confidence" jsonschema:"how sure you are, from 0 to 1"`
}

// Cognition is the cognitive layer's reading of a request (document 003's
// CognitiveOutput): intent, entities, whether it is ambiguous (and what to
// ask), and whether it needs tools at all (document 001's routing: a
// request that does not is answered as plain chat).
type Cognition struct {
	Intent     Intent   `json:"intent"`
	Entities   []Entity `json:"entities"`
	Ambiguous  bool     `json:"ambiguous" jsonschema:"true when the request cannot be planned without asking the user something"`
	Question   string   `json:"question,omitempty" jsonschema:"when ambiguous: the one question to ask the user"`
	NeedsTools bool     `json:"needs_tools" jsonschema:"false for greetings, small talk and questions answerable without data or tools"`
	Confidence float64  `json:"confidence" jsonschema:"how sure you are of the intent, from 0 to 1"`
}

// Step is a todo prepared to run (document 001's step_preparation): the
// tools retrieved for it, the recommended tool and its parameters, and in
// detailed mode the missing required fields and a readiness score.
type Step struct {
	Todo Todo `json:"todo"`
	// Tools are the top tools retrieved for the step, best first, after
	// memory's boosts and avoidances.
	Tools []ScoredTool `json:"tools"`
	// Tool and Params are what will run.
	Tool   string          `json:"tool"`
	Params json.RawMessage `json:"params"`
	// Mode is "light" or "detailed".
	Mode string `json:"mode"`
	// Schema is the tool's parameter schema: in detailed mode, and in a
	// step approval's request whatever the mode, so that a client can
	// build the parameters' form from it.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Description is the tool's description, in a step approval's
	// request.
	Description string `json:"description,omitempty"`
	// Missing names required parameters without a value (detailed mode).
	Missing []string `json:"missing,omitempty"`
	// Readiness is the share of required parameters that have a value
	// (detailed mode), from 0 to 1.
	Readiness float64 `json:"readiness,omitempty"`
	// Note says what preparation noticed (parameters the model proposed
	// that the tool refuses, say).
	Note string `json:"note,omitempty"`
	// Predicted is memory's acceptance probability, when it had one.
	Predicted *float64 `json:"predicted_acceptance,omitempty"`
	// Inputs are the results of the todo's dependencies, handed to the
	// executor.
	Inputs map[string]Result `json:"inputs,omitempty"`
	// Task is the task the step belongs to.
	Task int `json:"task"`
}

// Kind names an approval point.
type Kind string

// The approval points.
const (
	KindClarification Kind = "clarification"
	KindPlan          Kind = "plan"
	KindStep          Kind = "step"
	KindError         Kind = "error"
	KindPause         Kind = "pause"
)

// Action is a person's answer at an approval point.
type Action string

// The actions, by approval point.
const (
	// Clarification (document 001).
	ActionClarify       Action = "clarify"
	ActionProceedAnyway Action = "proceed_anyway"
	ActionReusePast     Action = "reuse_past"
	// Plan and step approval.
	ActionAccept Action = "accept"
	ActionEdit   Action = "edit"
	ActionReject Action = "reject"
	ActionSkip   Action = "skip"
	// Error (document 003).
	ActionRetry Action = "retry"
	ActionAbort Action = "abort"
	// Pause (document 003): verify the coming work and go on, modify
	// it, or delete some of it.
	ActionVerify Action = "verify"
	ActionModify Action = "modify"
	ActionDelete Action = "delete"
)

// Request is the value of every interrupt the orchestrator raises: which
// approval point (Kind), what to ask (Message), the actions it takes and
// the point's own payload. A client shows it and resumes the run with a
// Decision.
type Request struct {
	Kind    Kind     `json:"kind"`
	Message string   `json:"message"`
	Actions []Action `json:"actions"`
	// Problem says why the last answer was refused, when the question is
	// asked again.
	Problem string `json:"problem,omitempty"`
	// One of these, by Kind.
	Clarification *ClarificationRequest `json:"clarification,omitempty"`
	Plan          *Plan                 `json:"plan,omitempty"`
	Step          *Step                 `json:"step,omitempty"`
	Failure       *FailureRequest       `json:"failure,omitempty"`
	Pause         *PauseRequest         `json:"pause,omitempty"`
}

// ClarificationRequest is the payload of a clarification.
type ClarificationRequest struct {
	Request  string   `json:"request"`
	Question string   `json:"question"`
	Intent   Intent   `json:"intent"`
	Entities []Entity `json:"entities,omitempty"`
	// Past are past clarifications of similar requests, for reuse_past.
	Past []PastClarification `json:"past,omitempty"`
}

// FailureRequest is the payload of an error approval: the failed todo
// and its result.
type FailureRequest struct {
	Todo   Todo   `json:"todo"`
	Result Result `json:"result"`
}

// PauseRequest is the payload of a pause: every todo, and the ids of
// those about to run.
type PauseRequest struct {
	Todos []Todo   `json:"todos"`
	Next  []string `json:"next"`
}

// Decision is the resume value of every interrupt:
// graph.Resume(orchestrator.Decision{Action: orchestrator.ActionAccept}),
// or over HTTP command: {resume: {"action": "accept"}}.
type Decision struct {
	Action Action `json:"action"`
	// Answer is the clarification (clarify).
	Answer string `json:"answer,omitempty"`
	// PastID picks a past clarification (reuse_past); empty picks the
	// best.
	PastID string `json:"past_id,omitempty"`
	// Plan is the edited plan (plan edit).
	Plan *EditedPlan `json:"plan,omitempty"`
	// Params are the edited parameters (step edit), a JSON object that
	// replaces the step's.
	Params json.RawMessage `json:"params,omitempty"`
	// Todos are changed todos (pause modify): each replaces the pending
	// todo with its id.
	Todos []Todo `json:"todos,omitempty"`
	// Delete lists pending todos to drop (pause delete).
	Delete []string `json:"delete,omitempty"`
	// Reason is an optional comment (a rejection's reason).
	Reason string `json:"reason,omitempty"`
}

// EditedPlan is a plan as a person edited it: the whole list of todos
// (id, title, executor, tool, params, depends_on; status and version are
// the orchestrator's). It replaces the plan and is validated again.
type EditedPlan struct {
	Summary string `json:"summary,omitempty"`
	Todos   []Todo `json:"todos"`
}

// ApprovalRecord is one decision at an approval point, kept in the
// approval history (document 001's approval_history).
type ApprovalRecord struct {
	Task   int    `json:"task"`
	Kind   Kind   `json:"kind"`
	Action Action `json:"action"`
	// By is "user", "auto" (the point is off) or "memory" (predicted
	// acceptance, reused clarification).
	By     string    `json:"by"`
	TodoID string    `json:"todo_id,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
}

// Response is the response layer's output (document 003's
// ResponseOutput).
type Response struct {
	// Format is "text", "markdown" or "mixed" (Markdown with
	// attachments).
	Format      string              `json:"format"`
	Text        string              `json:"text"`
	Attachments []events.Attachment `json:"attachments,omitempty"`
	NextActions []string            `json:"next_actions,omitempty"`
	// Report is the saved Markdown report's path, when results are
	// saved.
	Report string `json:"report,omitempty"`
	// Outcome is "done", "rejected", "aborted" or "chat".
	Outcome string `json:"outcome"`
}

// The response formats. Document 003's image, pdf and video formats are
// not produced (docs/orchestrator.md); charts come as SVG attachments.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatMixed    = "mixed"
)

// The outcomes of a task.
const (
	OutcomeDone     = "done"
	OutcomeRejected = "rejected"
	OutcomeAborted  = "aborted"
	OutcomeChat     = "chat"
)

// Chart is data a tool offers to draw, in its result's metadata under
// MetaChart: the response layer draws it as an SVG bar chart.
type Chart struct {
	Title  string        `json:"title"`
	Labels []string      `json:"labels"`
	Series []ChartSeries `json:"series"`
	// Unit labels the values' axis.
	Unit string `json:"unit,omitempty"`
}

// ChartSeries is one series of a Chart, a value per label.
type ChartSeries struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// Document is a document a tool wrote (a report, an ad copy), offered in
// its result's metadata under MetaDocument: the response layer saves it as
// a Markdown attachment.
type Document struct {
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

// Metadata keys of tool results that the response layer reads.
const (
	MetaChart    = "chart"
	MetaDocument = "document"
)
