package store

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the store returns for bad input wraps one of
// them (and [ErrInvalid]), so callers test with errors.Is and never match
// text. Bad input is rejected before anything is written.
var (
	// ErrInvalid is wrapped by every bad-input error below.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrInvalidNamespace means a namespace or namespace label is unusable;
	// the error is a *NamespaceError.
	ErrInvalidNamespace = fmt.Errorf("%w: namespace", ErrInvalid)
	// ErrInvalidFilter means a search filter is malformed; the error is a
	// *FilterError.
	ErrInvalidFilter = fmt.Errorf("%w: filter", ErrInvalid)
	// ErrInvalidValue means an item value is not a JSON object, or an
	// option (key, limit, field path) is out of range.
	ErrInvalidValue = fmt.Errorf("%w: value", ErrInvalid)
	// ErrNoIndex means a search asked for a query but the store has no
	// IndexConfig, so nothing was embedded.
	ErrNoIndex = errors.New("store: search query given but the store has no vector index configured")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrCorrupt means a stored row could not be decoded.
	ErrCorrupt = errors.New("store: stored data is corrupt")
	// ErrTimeout means an operation did not finish within Config.Timeout:
	// its backend or its embedder stalled.
	ErrTimeout = errors.New("store: operation timed out")
)

// NamespaceError describes a bad namespace. It matches ErrInvalidNamespace
// and ErrInvalid with errors.Is.
type NamespaceError struct {
	// Namespace is the namespace as given.
	Namespace []string
	// Label is the index of the bad label, or -1 when the namespace as a
	// whole is wrong (empty).
	Label int
	// Reason says what is wrong.
	Reason string
}

// Error names the namespace, the bad label and what is wrong with it.
func (e *NamespaceError) Error() string {
	ns := "(" + strings.Join(quoteAll(e.Namespace), ", ") + ")"
	if e.Label >= 0 && e.Label < len(e.Namespace) {
		return fmt.Sprintf("store: invalid namespace %s: label %d %q %s", ns, e.Label, e.Namespace[e.Label], e.Reason)
	}
	return fmt.Sprintf("store: invalid namespace %s: %s", ns, e.Reason)
}

// Is reports whether target is ErrInvalidNamespace or ErrInvalid.
func (e *NamespaceError) Is(target error) bool {
	return target == ErrInvalidNamespace || target == ErrInvalid
}

// FilterError describes a bad search filter. It matches ErrInvalidFilter and
// ErrInvalid with errors.Is.
type FilterError struct {
	// Path is the dotted field path the problem was found at.
	Path string
	// Operator is the operator involved, if any ("$gt").
	Operator string
	// Reason says what is wrong and what was expected.
	Reason string
}

// Error names the path, the operator and what was expected.
func (e *FilterError) Error() string {
	if e.Operator != "" {
		return fmt.Sprintf("store: invalid filter at %q: operator %q: %s", e.Path, e.Operator, e.Reason)
	}
	return fmt.Sprintf("store: invalid filter at %q: %s", e.Path, e.Reason)
}

// Is reports whether target is ErrInvalidFilter or ErrInvalid.
func (e *FilterError) Is(target error) bool {
	return target == ErrInvalidFilter || target == ErrInvalid
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
