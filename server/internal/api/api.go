// Package api holds what every handler of the weft server shares: the
// response shapes of the LangGraph Server API for JSON bodies and errors,
// and the bounded decoding of request bodies.
//
// The shapes follow the reference server (the official JS dev server) as
// recorded in ../shared/bench/server/samples, so that the official SDK and
// agent-chat-ui read them: a missing resource is a 404 with a text/plain
// body, a validation failure a 400 with a Zod-style issue list naming the
// field, malformed JSON a 400 with a fixed text.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxBodyBytes bounds a request body unless a handler says otherwise.
const MaxBodyBytes = 8 << 20

// MalformedJSON is the body of a 400 answer to a request body that is not
// JSON, as the reference server words it.
const MalformedJSON = "Malformed JSON in request body"

// Issue is one validation failure, in the shape of a Zod issue: the path
// names the field (object keys as strings, list indexes as numbers).
type Issue struct {
	Code     string `json:"code"`
	Expected string `json:"expected,omitempty"`
	Received string `json:"received,omitempty"`
	Path     []any  `json:"path"`
	Message  string `json:"message"`
}

// Field returns an issue with code "custom" for the field at path.
func Field(message string, path ...any) Issue {
	if path == nil {
		path = []any{}
	}
	return Issue{Code: "custom", Path: path, Message: message}
}

// TypeIssue returns an "invalid_type" issue: the field at path should have
// held expected but held received ("undefined" when it is missing).
func TypeIssue(expected, received string, path ...any) Issue {
	if path == nil {
		path = []any{}
	}
	msg := fmt.Sprintf("Expected %s, received %s", expected, received)
	if received == "undefined" {
		msg = "Required"
	}
	return Issue{Code: "invalid_type", Expected: expected, Received: received, Path: path, Message: msg}
}

// ValidationError is a request that failed validation; its issues name the
// fields. Handlers return it and WriteError answers 400 with its body.
type ValidationError struct{ Issues []Issue }

// Invalid returns a *ValidationError with the given issues.
func Invalid(issues ...Issue) *ValidationError { return &ValidationError{Issues: issues} }

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = fmt.Sprintf("%s: %s", pathString(is.Path), is.Message)
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

func pathString(p []any) string {
	if len(p) == 0 {
		return "body"
	}
	var b strings.Builder
	for i, x := range p {
		switch x := x.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", x)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, x)
		}
	}
	return b.String()
}

// StatusError is an answer with a status and a plain-text message: 404 for
// what does not exist, 409 for a duplicate, 422 for a request the current
// state refuses.
type StatusError struct {
	Status  int
	Message string
	// Err is the cause, for callers that tell refusals apart with
	// errors.Is and errors.As (the document API's error codes); the
	// answer shows only Status and Message.
	Err error
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// Unwrap returns the cause.
func (e *StatusError) Unwrap() error { return e.Err }

// Because sets the cause of e and returns e.
func (e *StatusError) Because(err error) *StatusError {
	e.Err = err
	return e
}

// NotFound returns a 404 with message as its text body.
func NotFound(format string, args ...any) *StatusError {
	return &StatusError{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// Conflict returns a 409 with message as its text body.
func Conflict(format string, args ...any) *StatusError {
	return &StatusError{Status: http.StatusConflict, Message: fmt.Sprintf(format, args...)}
}

// Unprocessable returns a 422 with message as its text body.
func Unprocessable(format string, args ...any) *StatusError {
	return &StatusError{Status: http.StatusUnprocessableEntity, Message: fmt.Sprintf(format, args...)}
}

// ErrMalformed marks a body that is not JSON.
var ErrMalformed = errors.New("malformed JSON in request body")

// JSONType is the Content-Type value of a JSON answer, shared by all of
// them: a header set to it (Header()["Content-Type"] = JSONType, the key
// in canonical form) costs no allocation, where Set makes a slice each
// time. Nothing changes a header's values in place.
var JSONType = []string{"application/json"}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, fmt.Errorf("encoding the response: %w", err))
		return
	}
	w.Header()["Content-Type"] = JSONType
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// WriteText answers status with a text/plain body.
func WriteText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

// Status returns the status WriteError answers err with: 500 means the
// server failed, anything else that the request did.
func Status(err error) int {
	var ve *ValidationError
	var se *StatusError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ve), errors.Is(err, ErrMalformed):
		return http.StatusBadRequest
	case errors.As(err, &se):
		return se.Status
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// WriteError answers err in the reference server's shapes: a
// *ValidationError is a 400 with its issues, a *StatusError its status and
// text, a malformed or oversized body a 400 or 413, anything else a 500
// whose text is the error (never a panic, never an empty body).
func WriteError(w http.ResponseWriter, err error) {
	var ve *ValidationError
	var se *StatusError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ve):
		WriteJSON(w, http.StatusBadRequest, map[string]any{
			"success": false,
			"error":   map[string]any{"issues": ve.Issues, "name": "ZodError"},
		})
	case errors.As(err, &se):
		WriteText(w, se.Status, se.Message)
	case errors.As(err, &tooBig):
		WriteText(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", tooBig.Limit))
	case errors.Is(err, ErrMalformed):
		WriteText(w, http.StatusBadRequest, MalformedJSON)
	default:
		WriteText(w, http.StatusInternalServerError, err.Error())
	}
}

// bodyLimitKey carries the server's bound on request bodies.
type bodyLimitKey struct{}

// WithBodyLimit returns a context whose requests' bodies DecodeBody reads
// up to n bytes unless a handler passes its own limit: the server's
// configured bound (server.Options.MaxBodyBytes).
func WithBodyLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, bodyLimitKey{}, n)
}

// BodyLimit returns the bound WithBodyLimit set on ctx, or MaxBodyBytes.
func BodyLimit(ctx context.Context) int64 {
	if n, ok := ctx.Value(bodyLimitKey{}).(int64); ok && n > 0 {
		return n
	}
	return MaxBodyBytes
}

// exactBodyBytes is the largest body DecodeBody reads into a buffer of
// its announced length, made before the body arrives.
const exactBodyBytes = 64 << 10

// DecodeBody reads r's JSON body, at most limit bytes (when limit is 0,
// the request context's BodyLimit: MaxBodyBytes unless the server was
// configured otherwise), into dst. An empty body leaves dst as it is. A body that is
// not JSON gives an error WriteError answers with 400 "Malformed JSON in
// request body"; a value of the wrong type for a field gives a
// *ValidationError naming the field.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	if limit <= 0 {
		limit = BodyLimit(r.Context())
	}
	var body []byte
	if n := r.ContentLength; n > 0 && n <= min(limit, exactBodyBytes) {
		// The server's reader of a body with a Content-Length ends
		// after it: read a small one into one buffer of that size,
		// instead of one grown as it is read. A larger one grows as it
		// arrives, so that a client announcing a large body and sending
		// none holds no more memory than it sent.
		body = make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return err
		}
	} else {
		var err error
		if body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit)); err != nil {
			return err
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return Decode(body, dst)
}

// Decode unmarshals a JSON body into dst, with DecodeBody's errors.
func Decode(body []byte, dst any) error {
	if !json.Valid(body) {
		return ErrMalformed
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			var path []any
			if te.Field != "" {
				for _, p := range strings.Split(te.Field, ".") {
					path = append(path, p)
				}
			}
			return Invalid(TypeIssue(jsonKind(te.Type.Kind().String()), te.Value, path...))
		}
		return Invalid(Field(err.Error()))
	}
	return nil
}

// jsonKind names a Go kind as the JSON type a client sends.
func jsonKind(k string) string {
	switch k {
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "number"
	}
	return k
}
