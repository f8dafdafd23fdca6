package service

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, for errors.Is. The typed errors below wrap them.
var (
	// ErrInvalidInput: an argument is malformed; see *InputError.
	ErrInvalidInput = errors.New("invalid input")
	// ErrNotFound: nothing matches; see *NotFoundError.
	ErrNotFound = errors.New("not found")
	// ErrNoData: the period holds no data to work on.
	ErrNoData = errors.New("no data")
)

// InputError reports an argument that is missing or malformed.
type InputError struct {
	Field    string // the argument's name, as in the JSON DTOs
	Value    any    // what was given
	Expected string // what would have been accepted
}

func (e *InputError) Error() string {
	return fmt.Sprintf("marketing: invalid %s %q: expected %s", e.Field, fmt.Sprint(e.Value), e.Expected)
}

// Unwrap makes errors.Is(err, ErrInvalidInput) hold.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// NotFoundError reports that nothing matched a lookup; Known lists what
// would have.
type NotFoundError struct {
	Kind  string // "product", "segment", "channel"
	Query string
	Known []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("marketing: no %s matches %q", e.Kind, e.Query)
	if len(e.Known) > 0 {
		msg += ": expected one of " + strings.Join(e.Known, ", ")
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// NoDataError reports a period without data.
type NoDataError struct {
	What   string
	Period Period
}

func (e *NoDataError) Error() string {
	return fmt.Sprintf("marketing: no %s between %s and %s", e.What, e.Period.From, e.Period.To)
}

// Unwrap makes errors.Is(err, ErrNoData) hold.
func (e *NoDataError) Unwrap() error { return ErrNoData }
