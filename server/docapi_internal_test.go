package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/server/apikey"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
)

// Every error the document API answers gets the code of its type and of
// the sentinels it wraps, however deep, never of its text.
func TestErrorCodes(t *testing.T) {
	node := func(err error) error { return &graph.NodeError{Node: "n", TaskID: "t", Err: err} }
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"malformed body", api.ErrMalformed, 1001},
		{"validation", api.Invalid(api.Field("bad", "x")), 1002},
		{"field", invalidField("user_input", "required"), 1002},
		{"too large", fmt.Errorf("reading: %w", &http.MaxBytesError{Limit: 10}), 1003},
		{"input", node(&graph.InputError{Key: "k", Err: errors.New("no")}), 1004},
		{"missing key", fmt.Errorf("auth: %w", apikey.ErrMissing), 2001},
		{"unknown key", apikey.ErrUnknown, 2001},
		{"thread 404", threadNotFound("x"), 3001},
		{"records 404", fmt.Errorf("x: %w", records.ErrNotFound), 3001},
		{"duplicate", fmt.Errorf("x: %w", records.ErrConflict), 3002},
		{"busy", api.Conflict(busyText).Because(records.ErrBusy), 3003},
		{"lease busy", &checkpoint.BusyError{}, 3003},
		{"other graph", fmt.Errorf("%w: thread", records.ErrOtherGraph), 3004},
		{"run 404", runNotFound(), 3005},
		{"assistant 404", assistantNotFound(), 4001},
		{"timeout", &docError{code: codeRunTimeout, err: errRunTimeout}, 4002},
		{"node failed", node(errors.New("boom")), 4003},
		{"recursion", &graph.RecursionError{Limit: 3}, 4004},
		{"node timeout", node(graph.ErrNodeTimeout), 4005},
		{"cancelled", &cancelCause{action: records.MultitaskInterrupt}, 4006},
		{"cancel requested", checkpoint.ErrCancelRequested, 4006},
		{"too many runs", errTooManyRuns(3), 4007},
		{"too many runs of one user", errTooManyUserRuns(2), 4009},
		{"invalid update", node(graph.ErrInvalidUpdate), 4008},
		{"nothing pending", &docError{code: codeNothingPending, err: errNothingPending}, 5001},
		{"action", checkAction(hitlJSON{Kind: "plan", Actions: []string{"accept"}}, "nope", "user_action"), 5002},
		{"interrupt", errNoSuchInterrupt, 5003},
		{"tool args", node(fmt.Errorf("call: %w", tool.ErrInvalidArgs)), 6001},
		{"tool unknown", tool.ErrUnknownTool, 6002},
		{"tool timeout", node(tool.ErrTimeout), 6003},
		{"tool panic", tool.ErrPanic, 6004},
		{"tool error", node(&tool.Error{Code: "NOT_FOUND", Message: "no such place"}), 6005},
		// A tool that failed because its model did is the tool's failure.
		{"tool over model", &tool.Error{Code: "x", Err: llm.ErrTimeout}, 6005},
		{"tool result", tool.ErrInvalidResult, 6006},
		{"api error", node(&llm.APIError{Provider: "openai", StatusCode: 418}), 7000},
		{"model auth", &llm.APIError{Provider: "openai", StatusCode: 401}, 7001},
		{"model permission", &llm.APIError{Provider: "openai", StatusCode: 403}, 7002},
		{"model rate", node(&llm.APIError{Provider: "anthropic", StatusCode: 429}), 7003},
		{"model timeout", node(llm.ErrFirstByteTimeout), 7004},
		{"model 5xx", &llm.APIError{Provider: "openai", StatusCode: 503}, 7005},
		{"model 400", &llm.APIError{Provider: "openai", StatusCode: 400}, 7006},
		{"model 404", &llm.APIError{Provider: "openai", StatusCode: 404}, 7007},
		{"model response", llm.ErrInvalidResponse, 7008},
		{"model output", &llm.StructuredOutputError{}, 7009},
		{"model config", &llm.ConfigError{Provider: "openai", Setting: "API key", EnvVar: "OPENAI_API_KEY"}, 7010},
		{"model unsupported", llm.ErrUnsupported, 7011},
		{"database", errDatabase, 8001},
		{"checkpointer", node(graph.ErrCheckpointerTimeout), 8001},
		{"store", fmt.Errorf("x: %w", store.ErrTimeout), 8002},
		{"unknown", errors.New("who knows"), 9001},
		{"panic", node(&graph.PanicError{Value: "boom"}), 9002},
		{"shutting down", &api.StatusError{Status: 503, Err: errShuttingDown}, 9003},
		{"corrupt", fmt.Errorf("x: %w", checkpoint.ErrCorrupt), 9004},
		{"lease lost", checkpoint.ErrLeaseLost, 9005},
		{"trimmed", ErrStreamTrimmed, 9006},
		{"run error keeps its cause", &runError{sessionID: "s", runID: "r", err: node(llm.ErrTimeout)}, 7004},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		got := classify(c.err)
		if got.Code != c.want {
			t.Errorf("%s: %v is code %d (%s), want %d", c.name, c.err, got.Code, got.Name, c.want)
		}
		if lo := c.want / 1000 * 1000; got.Code < lo || got.Code > lo+999 {
			t.Errorf("%s: code %d out of its range", c.name, got.Code)
		}
	}
}

// The text of an error plays no part: a message that names another kind
// of failure does not change the code.
func TestErrorCodesIgnoreText(t *testing.T) {
	for _, text := range []string{"rate limited", "timeout", "not found", "tool: failed", "llm: authentication failed", "session busy"} {
		if c := classify(errors.New(text)); c.Code != codeInternal.Code {
			t.Errorf("%q: code %d, want %d", text, c.Code, codeInternal.Code)
		}
	}
}

// Each code is in the range of its category and has a name and a status
// of its own range.
func TestErrorCodeTable(t *testing.T) {
	seen := map[int]string{}
	codes := []errorCode{codeInvalidRequest, codeMalformedJSON, codeInvalidField, codeBodyTooLarge, codeInvalidInput, codeNotWebSocket,
		codeNoSuchEndpoint, codeMethodNotAllowed, codeUnauthenticated, codeRateLimited, codeOriginRefused, codeTooManyRuns, codeTooManyUserRuns}
	for _, sc := range sentinelCodes {
		codes = append(codes, sc.code)
	}
	for _, c := range codes {
		if n, ok := seen[c.Code]; ok && n != c.Name {
			t.Errorf("code %d named %q and %q", c.Code, n, c.Name)
		}
		seen[c.Code] = c.Name
		if c.Code < 1000 || c.Code > 9999 || c.Name == "" || c.Status < 400 || c.Status > 599 {
			t.Errorf("code %+v", c)
		}
		if (c.cat() == catValidation) != (c.Code/1000 == 1) || (c.cat() == catInternal) != (c.Code/1000 == 9) {
			t.Errorf("code %d in category %s", c.Code, c.cat())
		}
	}
}

// checkDecodeError asserts a decoder's refusal is a 4xx of the
// validation range that names a field.
func checkDecodeError(t *testing.T, what string, in []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	out := errorOut(err)
	code := classify(err)
	if code.Code/1000 != 1 || code.Status >= 500 {
		t.Fatalf("%s %q: code %d status %d: %v", what, in, code.Code, code.Status, err)
	}
	if out.Field == "" && code != codeMalformedJSON {
		t.Fatalf("%s %q: %v names no field", what, in, err)
	}
}

func FuzzDocAPIDecoders(f *testing.F) {
	for _, seed := range []string{
		`{"user_input":"hi"}`, `{"input":{"messages":"hi"},"session_id":"5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2","timeout":3}`,
		`{"user_input":""}`, `{"user_input":"a","input":{}}`, `{"timeout":-1,"user_input":"x"}`, `{"input":[1]}`,
		`{"user_action":"accept"}`, `{"user_action":"edit","edited_content":[{"id":"t1"}]}`, `{"resume":{"action":"x"},"user_action":"y"}`,
		`{"type":"hitl_response","data":{"action":"accept"}}`, `{"type":"ping"}`, `{"type":"hitl_response","interrupt_id":"x","data":1}`,
		`{"type":5}`, `[]`, `null`, `"x"`, `{not json`, ``, `{"metadata":[]}`, `{"user_input":"hi","sesion_id":"x"}`, `{"":1,"user_action":"accept"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := decodeAgentRun(b); err != nil {
			checkDecodeError(t, "agent run", b, err)
		} else if req.UserInput == nil && len(req.Input) == 0 {
			t.Fatalf("agent run %q accepted without an input", b)
		}
		if req, err := decodeApprove(b); err != nil {
			checkDecodeError(t, "approve", b, err)
		} else {
			p := hitlJSON{Kind: "plan", Actions: []string{"accept", "edit", "reject"}, InterruptID: strings.Repeat("a", 32)}
			if resume, err := approvalResume(p, req, false); err != nil {
				code := classify(err)
				if code.Status >= 500 {
					t.Fatalf("approve %q: %v", b, err)
				}
			} else if !json.Valid(resume) {
				t.Fatalf("approve %q: resume %q is not JSON", b, resume)
			}
		}
		if m, err := decodeClientMessage(b); err != nil {
			checkDecodeError(t, "socket message", b, err)
		} else if m.Type != msgPing && m.Type != msgHITLResponse {
			t.Fatalf("socket message %q accepted as %q", b, m.Type)
		}
	})
}

// A hitl_request is read from any interrupt value: the orchestrator's
// requests, a question, a string, a value made in this process.
func TestHITLOf(t *testing.T) {
	type question struct {
		Question string `json:"question"`
	}
	cases := []struct {
		value               any
		kind, message, acts string
	}{
		{map[string]any{"kind": "plan", "message": "Run?", "actions": []any{"accept", "edit", 3}}, "plan", "Run?", "accept,edit"},
		{question{"Approve it?"}, "interrupt", "Approve it?", ""},
		{"yes or no?", "interrupt", "yes or no?", ""},
		{42, "interrupt", "", ""},
		{nil, "interrupt", "", ""},
	}
	for _, c := range cases {
		h := hitlOf(graph.Interruption{ID: "i", Value: c.value})
		if h.Kind != c.kind || h.Message != c.message || strings.Join(h.Actions, ",") != c.acts || h.InterruptID != "i" || !json.Valid(h.Request) {
			t.Errorf("%#v: %+v", c.value, h)
		}
	}
}

// A run's answer is its last AI message, in either form.
func TestLastAnswer(t *testing.T) {
	for in, want := range map[string]string{
		`{"messages":[{"type":"human","content":"q"},{"type":"ai","content":"a"}]}`:                                       "a",
		`{"messages":[{"type":"ai","content":[{"type":"text","text":"x"},{"type":"image"},{"type":"text","text":"y"}]}]}`: "xy",
		`{"messages":[{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`:                                 "b",
		`{"request":"x"}`: "",
		`[]`:              "",
	} {
		if got := lastAnswer(json.RawMessage(in)); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// The approval of document 001 becomes the orchestrator's decision.
func TestApprovalResume(t *testing.T) {
	str := func(s string) *string { return &s }
	id := strings.Repeat("b", 32)
	cases := []struct {
		kind string
		req  approveRequest
		want string
	}{
		{"plan", approveRequest{UserAction: str("accept")}, `{"action":"accept"}`},
		{"plan", approveRequest{UserAction: str("edit"), EditedContent: json.RawMessage(`[{"id":"t1"}]`)}, `{"action":"edit","plan":{"todos":[{"id":"t1"}]}}`},
		{"plan", approveRequest{UserAction: str("reject"), Reason: "no"}, `{"action":"reject","reason":"no"}`},
		{"step", approveRequest{UserAction: str("edit"), EditedContent: json.RawMessage(`{"period":"q1"}`)}, `{"action":"edit","params":{"period":"q1"}}`},
		{"clarification", approveRequest{UserAction: str("clarify"), ClarificationResponse: str("SNS only")}, `{"action":"clarify","answer":"SNS only"}`},
		{"clarification", approveRequest{UserAction: str("reuse_past"), PastID: "p1"}, `{"action":"reuse_past","past_id":"p1"}`},
		{"pause", approveRequest{UserAction: str("delete"), EditedContent: json.RawMessage(`["t4"]`)}, `{"action":"delete","delete":["t4"]}`},
		{"interrupt", approveRequest{UserAction: str("yes"), EditedContent: json.RawMessage(`1`)}, `{"action":"yes","edited_content":1}`},
		{"interrupt", approveRequest{Resume: json.RawMessage(`"yes"`)}, `"yes"`},
		{"plan", approveRequest{UserAction: str("accept"), InterruptID: id}, `{"` + id + `":{"action":"accept"}}`},
	}
	for _, c := range cases {
		got, err := approvalResume(hitlJSON{Kind: c.kind, InterruptID: id}, c.req, false)
		if err != nil || string(got) != c.want {
			t.Errorf("%s %+v: %s, %v; want %s", c.kind, c.req, got, err, c.want)
		}
	}
	// What cannot be used names its field.
	for _, c := range []struct {
		kind, field string
		req         approveRequest
	}{
		{"plan", "edited_content", approveRequest{UserAction: str("edit")}},
		{"step", "edited_content", approveRequest{UserAction: str("edit")}},
		{"clarification", "clarification_response", approveRequest{UserAction: str("clarify")}},
		{"plan", "user_action", approveRequest{UserAction: str("maybe")}},
	} {
		_, err := approvalResume(hitlJSON{Kind: c.kind, Actions: []string{"accept", "edit", "reject", "clarify"}}, c.req, false)
		if out := errorOut(err); err == nil || out.Field != c.field {
			t.Errorf("%s %+v: %v (field %q), want a refusal naming %s", c.kind, c.req, err, out.Field, c.field)
		}
	}
}

// A shutdown closes goAway once, and the watchers of a thread share one
// wake-up that a queued run closes.
func TestDocAPIWatch(t *testing.T) {
	d := newDocAPI()
	a, releaseA := d.watch("t")
	b, releaseB := d.watch("t")
	if a != b {
		t.Fatal("two watchers of a thread do not share its wake-up")
	}
	d.runQueued("t")
	<-a
	releaseA()
	releaseB()
	c, releaseC := d.watch("t")
	releaseC()
	releaseC()
	if len(d.watchers) != 0 {
		t.Errorf("watchers left: %v", d.watchers)
	}
	select {
	case <-c:
		t.Error("a released wake-up closed without a run")
	default:
	}
	d.shutdown(context.Background())
	d.shutdown(context.Background())
	if d.openSocket() {
		t.Error("a socket opened after the shutdown")
	}
}

// The document API's bodies are strict: a key the request does not take is
// refused, named, with the keys it takes, so that a misspelt session_id
// does not silently start a new session.
func TestDocAPIRefusesUnknownFields(t *testing.T) {
	_, err := decodeAgentRun([]byte(`{"user_input":"hi","sesion_id":"5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2"}`))
	out := errorOut(err)
	if err == nil || out.Field != "sesion_id" || !strings.Contains(out.Message, "session_id") || classify(err).Status != http.StatusBadRequest && classify(err).Status != http.StatusUnprocessableEntity {
		t.Errorf("agent run with sesion_id: err %v, field %q, message %q", err, out.Field, out.Message)
	}
	if _, err := decodeApprove([]byte(`{"user_action":"accept","bogus":1}`)); err == nil || errorOut(err).Field != "bogus" {
		t.Errorf("approve with bogus: %v, want an error naming bogus", err)
	}
	if _, err := decodeAgentRun([]byte(`{"user_input":"hi","session_id":"5a791b3a-ac51-4ff1-a47a-2ffb3377d4d2","assistant_id":"career","metadata":{},"timeout":5}`)); err != nil {
		t.Errorf("a request with every known field: %v", err)
	}
}
