package service

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is. The typed errors below wrap them.
var (
	// ErrInvalidInput: an argument is malformed; see *InputError.
	ErrInvalidInput = errors.New("invalid input")
	// ErrNotFound: no record matches; see *NotFoundError.
	ErrNotFound = errors.New("not found")
	// ErrSessionFull: the session has no free seat left.
	ErrSessionFull = errors.New("session is full")
	// ErrAlreadyBooked: the user already holds a seat in the session.
	ErrAlreadyBooked = errors.New("already booked")
	// ErrSessionStarted: the session has already started or ended.
	ErrSessionStarted = errors.New("session already started")
)

// InputError reports an argument that is missing or malformed.
type InputError struct {
	Field    string // the argument's name, as in the JSON DTOs
	Value    any    // what was given
	Expected string // what would have been accepted
}

func (e *InputError) Error() string {
	return fmt.Sprintf("career: invalid %s %q: expected %s", e.Field, fmt.Sprint(e.Value), e.Expected)
}

// Unwrap makes errors.Is(err, ErrInvalidInput) hold.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// NotFoundError reports that nothing matched a lookup. Known lists what
// would have matched, when that list is short enough to help the caller.
type NotFoundError struct {
	Kind  string // "session", "learning path"
	Query string
	Known []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("career: no %s matches %q", e.Kind, e.Query)
	if len(e.Known) > 0 {
		msg += fmt.Sprintf(": expected one of %q", e.Known)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// BookingError reports a booking refused by the rules of the session.
// Reason is ErrSessionFull, ErrAlreadyBooked or ErrSessionStarted.
type BookingError struct {
	SessionID string
	UserID    string
	Reason    error
}

func (e *BookingError) Error() string {
	return fmt.Sprintf("career: cannot book session %q for user %q: %v", e.SessionID, e.UserID, e.Reason)
}

// Unwrap returns Reason, so errors.Is(err, ErrSessionFull) and the like hold.
func (e *BookingError) Unwrap() error { return e.Reason }
