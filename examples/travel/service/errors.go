package service

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is. The typed errors below wrap them.
var (
	// ErrInvalidInput: an argument is out of range or malformed; see *InputError.
	ErrInvalidInput = errors.New("invalid input")
	// ErrNotFound: a place or region does not exist; see *NotFoundError.
	ErrNotFound = errors.New("not found")
)

// InputError reports an argument that is missing, out of range or malformed.
type InputError struct {
	Field    string // the argument's name, as in the JSON DTOs
	Value    any    // what was given
	Expected string // what would have been accepted
}

func (e *InputError) Error() string {
	return fmt.Sprintf("travel: invalid %s %v: expected %s", e.Field, quote(e.Value), e.Expected)
}

// Unwrap makes errors.Is(err, ErrInvalidInput) hold.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// NotFoundError reports ids or names that match nothing. Missing lists the
// unknown place ids; Known lists what would have matched when that list is
// short enough to help (the regions).
type NotFoundError struct {
	Kind    string // "place" or "region"
	Missing []string
	Known   []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("travel: unknown %s %q", e.Kind, e.Missing)
	if len(e.Known) > 0 {
		msg += fmt.Sprintf(": expected one of %q", e.Known)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }
