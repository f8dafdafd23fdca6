package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/server/apikey"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
	"github.com/weftlabs/weft/store"
	"github.com/weftlabs/weft/tool"
)

// The causes the server's own refusals carry (api.StatusError.Err), so
// that the document API tells them apart with errors.Is.
var (
	errNoSuchThread    = errors.New("server: no such thread")
	errNoSuchRun       = errors.New("server: no such run")
	errNoSuchAssistant = errors.New("server: no such assistant")
	errShuttingDown    = errors.New("server: shutting down")
	// errRunTimeout: a blocking run did not end within its bound.
	errRunTimeout = errors.New("server: the run did not end in time")
	// errNothingPending: an approval was sent to a session that waits
	// for none.
	errNothingPending = errors.New("server: the session waits for no approval")
	// errActionNotOffered: the action answered is not one the pending
	// approval takes.
	errActionNotOffered = errors.New("server: the action is not one the pending approval takes")
	// errNoSuchInterrupt: a response names an interrupt that is not
	// pending.
	errNoSuchInterrupt = errors.New("server: no such pending interrupt")
	// errDatabase: the database did not answer the health check.
	errDatabase = errors.New("server: the database is unreachable")
)

// category is a range of document 003's error codes (§8.1).
type category string

// The categories of document 003, by code range.
const (
	catValidation category = "VALIDATION" // 1000-1999
	catAuth       category = "AUTH"       // 2000-2999
	catSession    category = "SESSION"    // 3000-3999
	catAgent      category = "AGENT"      // 4000-4999
	catHITL       category = "HITL"       // 5000-5999
	catTool       category = "TOOL"       // 6000-6999
	catLLM        category = "LLM"        // 7000-7999
	catExternal   category = "EXTERNAL"   // 8000-8999
	catInternal   category = "INTERNAL"   // 9000-9999
)

// errorCode is one error code of the document API: its number in document
// 003's ranges, a stable name, and the HTTP status it is answered with.
type errorCode struct {
	Code   int
	Name   string
	Status int
}

// cat is the range the code falls in.
func (c errorCode) cat() category {
	switch c.Code / 1000 {
	case 1:
		return catValidation
	case 2:
		return catAuth
	case 3:
		return catSession
	case 4:
		return catAgent
	case 5:
		return catHITL
	case 6:
		return catTool
	case 7:
		return catLLM
	case 8:
		return catExternal
	}
	return catInternal
}

// The error codes of the document API (docs/server.md lists them).
var (
	codeInvalidRequest = errorCode{1000, "invalid_request", http.StatusBadRequest}
	codeMalformedJSON  = errorCode{1001, "malformed_json", http.StatusBadRequest}
	codeInvalidField   = errorCode{1002, "invalid_field", http.StatusBadRequest}
	codeBodyTooLarge   = errorCode{1003, "body_too_large", http.StatusRequestEntityTooLarge}
	codeInvalidInput   = errorCode{1004, "invalid_input", http.StatusBadRequest}

	codeUnauthenticated = errorCode{2001, "unauthenticated", http.StatusUnauthorized}
	codeRateLimited     = errorCode{2002, "rate_limited", http.StatusTooManyRequests}

	codeSessionError      = errorCode{3000, "session_error", http.StatusConflict}
	codeSessionNotFound   = errorCode{3001, "session_not_found", http.StatusNotFound}
	codeSessionExists     = errorCode{3002, "session_exists", http.StatusConflict}
	codeSessionBusy       = errorCode{3003, "session_busy", http.StatusConflict}
	codeSessionOtherAgent = errorCode{3004, "session_of_another_agent", http.StatusConflict}
	codeRunNotFound       = errorCode{3005, "run_not_found", http.StatusNotFound}

	codeAgentNotFound   = errorCode{4001, "agent_not_found", http.StatusNotFound}
	codeRunTimeout      = errorCode{4002, "run_timeout", http.StatusGatewayTimeout}
	codeRunFailed       = errorCode{4003, "run_failed", http.StatusInternalServerError}
	codeRecursionLimit  = errorCode{4004, "recursion_limit", http.StatusInternalServerError}
	codeNodeTimeout     = errorCode{4005, "node_timeout", http.StatusGatewayTimeout}
	codeRunCancelled    = errorCode{4006, "run_cancelled", http.StatusConflict}
	codeTooManyRuns     = errorCode{4007, "too_many_runs", http.StatusServiceUnavailable}
	codeTooManyUserRuns = errorCode{4009, "too_many_user_runs", http.StatusTooManyRequests}
	codeInvalidUpdate   = errorCode{4008, "invalid_update", http.StatusInternalServerError}

	codeNothingPending     = errorCode{5001, "nothing_pending", http.StatusConflict}
	codeActionNotOffered   = errorCode{5002, "action_not_offered", http.StatusUnprocessableEntity}
	codeInterruptNotFound  = errorCode{5003, "interrupt_not_pending", http.StatusUnprocessableEntity}
	codeToolInvalidArgs    = errorCode{6001, "tool_invalid_arguments", http.StatusBadGateway}
	codeToolUnknown        = errorCode{6002, "tool_unknown", http.StatusBadGateway}
	codeToolTimeout        = errorCode{6003, "tool_timeout", http.StatusGatewayTimeout}
	codeToolPanic          = errorCode{6004, "tool_panic", http.StatusBadGateway}
	codeToolFailed         = errorCode{6005, "tool_failed", http.StatusBadGateway}
	codeToolInvalidResult  = errorCode{6006, "tool_invalid_result", http.StatusBadGateway}
	codeToolInvalid        = errorCode{6007, "tool_invalid", http.StatusInternalServerError}
	codeModelError         = errorCode{7000, "model_error", http.StatusBadGateway}
	codeModelAuth          = errorCode{7001, "model_authentication", http.StatusBadGateway}
	codeModelPermission    = errorCode{7002, "model_permission", http.StatusBadGateway}
	codeModelRateLimited   = errorCode{7003, "model_rate_limited", http.StatusBadGateway}
	codeModelTimeout       = errorCode{7004, "model_timeout", http.StatusGatewayTimeout}
	codeModelServer        = errorCode{7005, "model_server_error", http.StatusBadGateway}
	codeModelBadRequest    = errorCode{7006, "model_bad_request", http.StatusBadGateway}
	codeModelNotFound      = errorCode{7007, "model_not_found", http.StatusBadGateway}
	codeModelBadResponse   = errorCode{7008, "model_invalid_response", http.StatusBadGateway}
	codeModelBadOutput     = errorCode{7009, "model_invalid_output", http.StatusBadGateway}
	codeModelNotConfigured = errorCode{7010, "model_not_configured", http.StatusInternalServerError}
	codeModelUnsupported   = errorCode{7011, "model_unsupported", http.StatusBadGateway}
	codeDatabase           = errorCode{8001, "database_unavailable", http.StatusServiceUnavailable}
	codeStore              = errorCode{8002, "store_unavailable", http.StatusServiceUnavailable}
	codeInternal           = errorCode{9001, "internal_error", http.StatusInternalServerError}
	codePanic              = errorCode{9002, "panic", http.StatusInternalServerError}
	codeShuttingDown       = errorCode{9003, "shutting_down", http.StatusServiceUnavailable}
	codeCorrupt            = errorCode{9004, "corrupt_data", http.StatusInternalServerError}
	codeLeaseLost          = errorCode{9005, "lease_lost", http.StatusInternalServerError}
	codeStreamTrimmed      = errorCode{9006, "stream_trimmed", http.StatusInternalServerError}
)

// sentinelCodes maps sentinel errors to codes, tested with errors.Is in
// this order: the request's own faults first, then the most specific
// cause of a run's failure (a tool's, a model's), then the run's, the
// services' and the server's. A tool error that wraps a model's is a
// tool's.
var sentinelCodes = []struct {
	err  error
	code errorCode
}{
	{api.ErrMalformed, codeMalformedJSON},
	{apikey.ErrMissing, codeUnauthenticated},
	{apikey.ErrUnknown, codeUnauthenticated},

	{errNoSuchThread, codeSessionNotFound},
	{errNoSuchRun, codeRunNotFound},
	{records.ErrConflict, codeSessionExists},
	{records.ErrBusy, codeSessionBusy},
	{checkpoint.ErrThreadBusy, codeSessionBusy},
	{records.ErrOtherGraph, codeSessionOtherAgent},
	{records.ErrNotFound, codeSessionNotFound},

	{errNothingPending, codeNothingPending},
	{errActionNotOffered, codeActionNotOffered},
	{errNoSuchInterrupt, codeInterruptNotFound},

	{errNoSuchAssistant, codeAgentNotFound},
	{errRunTimeout, codeRunTimeout},

	{tool.ErrInvalidArgs, codeToolInvalidArgs},
	{tool.ErrUnknownTool, codeToolUnknown},
	{tool.ErrTimeout, codeToolTimeout},
	{tool.ErrPanic, codeToolPanic},
	{tool.ErrInvalidResult, codeToolInvalidResult},
	{tool.ErrInvalidTool, codeToolInvalid},
	{tool.ErrFailed, codeToolFailed},

	{llm.ErrAuthentication, codeModelAuth},
	{llm.ErrPermission, codeModelPermission},
	{llm.ErrRateLimit, codeModelRateLimited},
	{llm.ErrTimeout, codeModelTimeout},
	{llm.ErrServer, codeModelServer},
	{llm.ErrBadRequest, codeModelBadRequest},
	{llm.ErrNotFound, codeModelNotFound},
	{llm.ErrInvalidResponse, codeModelBadResponse},
	{llm.ErrInvalidOutput, codeModelBadOutput},
	{llm.ErrMissingConfig, codeModelNotConfigured},
	{llm.ErrUnknownProvider, codeModelNotConfigured},
	{llm.ErrUnsupported, codeModelUnsupported},

	{graph.ErrInvalidInput, codeInvalidInput},
	{graph.ErrRecursionLimit, codeRecursionLimit},
	{graph.ErrNodeTimeout, codeNodeTimeout},
	{graph.ErrInvalidUpdate, codeInvalidUpdate},
	{errCancelled, codeRunCancelled},
	{checkpoint.ErrCancelRequested, codeRunCancelled},

	{errDatabase, codeDatabase},
	{graph.ErrCheckpointerTimeout, codeDatabase},
	{store.ErrTimeout, codeStore},
	{store.ErrClosed, codeStore},

	{errShuttingDown, codeShuttingDown},
	{records.ErrCorrupt, codeCorrupt},
	{checkpoint.ErrCorrupt, codeCorrupt},
	{store.ErrCorrupt, codeCorrupt},
	{checkpoint.ErrLeaseLost, codeLeaseLost},
	{ErrStreamTrimmed, codeStreamTrimmed},
}

// classify returns the code of err, from its type and the sentinels it
// wraps, never from its text.
func classify(err error) errorCode {
	var de *docError
	if errors.As(err, &de) {
		return de.code
	}
	var ve *api.ValidationError
	if errors.As(err, &ve) {
		return codeInvalidField
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return codeBodyTooLarge
	}
	if errors.Is(err, errUserRunsBound) {
		return codeTooManyUserRuns
	}
	var later *retryLater
	if errors.As(err, &later) {
		return codeTooManyRuns
	}
	for _, sc := range sentinelCodes {
		if errors.Is(err, sc.err) {
			return sc.code
		}
	}
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) {
		return codeModelError
	}
	var panicErr *graph.PanicError
	if errors.As(err, &panicErr) {
		return codePanic
	}
	var nodeErr *graph.NodeError
	if errors.As(err, &nodeErr) {
		// A node failed for a reason of its own.
		return codeRunFailed
	}
	var se *api.StatusError
	if errors.As(err, &se) {
		// A refusal of the LangGraph API whose cause is not told: its
		// status says the range.
		switch {
		case se.Status == http.StatusNotFound || se.Status == http.StatusConflict:
			return codeSessionError
		case se.Status == http.StatusServiceUnavailable:
			return codeShuttingDown
		case se.Status < 500:
			return codeInvalidRequest
		}
	}
	return codeInternal
}

// docError is an error the document API answers with a code of its own,
// and the field, session and run it concerns.
type docError struct {
	code    errorCode
	message string
	// field names the request field at fault (dotted for nested ones).
	field string
	// extra is added to the error's JSON (the actions a pending approval
	// takes).
	extra map[string]any
	err   error
}

func (e *docError) Error() string { return e.message }
func (e *docError) Unwrap() error { return e.err }

// invalidField is a 400 (code 1002) naming the field.
func invalidField(field, format string, args ...any) *docError {
	return &docError{code: codeInvalidField, field: field, message: field + ": " + fmt.Sprintf(format, args...)}
}

// errorJSON is the body of every error of the document API:
// {"error": {...}}.
type errorJSON struct {
	Code     int         `json:"code"`
	Name     string      `json:"name"`
	Category category    `json:"category"`
	Message  string      `json:"message"`
	Field    string      `json:"field,omitempty"`
	Issues   []api.Issue `json:"issues,omitempty"`
	// SessionID and RunID name the session and run the error concerns,
	// when there is one: a run that failed or timed out stays readable.
	SessionID string         `json:"session_id,omitempty"`
	RunID     string         `json:"run_id,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
}

// errorOut describes err for a client: its code and what it says.
func errorOut(err error) errorJSON {
	code := classify(err)
	out := errorJSON{Code: code.Code, Name: code.Name, Category: code.cat(), Message: err.Error()}
	var de *docError
	if errors.As(err, &de) {
		out.Field, out.Details = de.field, de.extra
	}
	var ve *api.ValidationError
	if errors.As(err, &ve) {
		out.Issues = ve.Issues
		if out.Field == "" && len(ve.Issues) > 0 {
			out.Field = issuePath(ve.Issues[0].Path)
		}
		if len(ve.Issues) > 0 {
			out.Message = "invalid request: " + strings.TrimPrefix(ve.Error(), "invalid request: ")
		}
	}
	var se *api.StatusError
	if errors.As(err, &se) && !errors.As(err, &de) {
		out.Message = se.Message
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		out.Message = fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit)
	}
	if errors.Is(err, api.ErrMalformed) {
		out.Message = "the request body is not JSON"
	}
	return out
}

// issuePath writes an issue's path as a dotted field name ("body" for
// the body as a whole).
func issuePath(p []any) string {
	if len(p) == 0 {
		return "body"
	}
	parts := make([]string, 0, len(p))
	for _, x := range p {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ".")
}

// runError is the failure of a run, with its session and run.
type runError struct {
	sessionID, runID string
	err              error
}

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// writeDocError answers err as the document API does: the status of its
// code and {"error": {code, name, category, message, ...}}.
func (s *Server) writeDocError(w http.ResponseWriter, r *http.Request, err error) {
	out := errorOut(err)
	var re *runError
	if errors.As(err, &re) {
		out.SessionID, out.RunID = re.sessionID, re.runID
	}
	code := classify(err)
	var later *retryLater
	if errors.As(err, &later) {
		w.Header().Set("Retry-After", retryAfterSeconds(later.after))
	}
	if code.Status >= 500 && re == nil {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away
		}
		s.log.Error("server: request failed", "method", r.Method, "path", r.URL.Path, "code", code.Code, "err", err)
	}
	writeErrorBody(w, code.Status, out)
}

func writeErrorBody(w http.ResponseWriter, status int, out errorJSON) {
	b, err := json.Marshal(map[string]errorJSON{"error": out})
	if err != nil {
		b = []byte(`{"error":{"code":9001,"name":"internal_error","category":"INTERNAL","message":"the error could not be encoded"}}`)
		status = http.StatusInternalServerError
	}
	w.Header()["Content-Type"] = api.JSONType
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// docPath reports whether a request goes to the document API, whose
// refusals (401, 429) carry its error codes.
func docPath(path string) bool {
	for _, p := range []string{"/agent/", "/ws/", "/approve/", "/sessions"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return path == "/health"
}
