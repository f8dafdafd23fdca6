// Package auth carries the user a request acts for. The server's
// authentication middleware (API keys, added with the auth work of issue 8)
// puts the user in the request's context; every handler and the run
// manager read it from there and keep each user's threads, runs,
// assistants and store namespaces apart. With authentication off the user
// is "", and everything belongs to that one user.
package auth

import (
	"context"
	"encoding/base64"
)

type userKey struct{}

// WithUser returns a context acting for user.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// User returns the user ctx acts for, or "" when authentication is off.
func User(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// Namespace returns the long-term store namespace that ns names for user:
// ns itself without authentication, else ns under a first label of the
// user's own ("weft-user-" and the user id in unpadded base64url), so
// that users' items never meet. The label has no '.', which store
// namespaces forbid.
func Namespace(user string, ns []string) []string {
	if user == "" {
		return ns
	}
	out := make([]string, 0, len(ns)+1)
	out = append(out, UserLabel(user))
	return append(out, ns...)
}

// UserLabel is the first namespace label of user's store items.
func UserLabel(user string) string {
	return "weft-user-" + base64.RawURLEncoding.EncodeToString([]byte(user))
}

// StripNamespace undoes Namespace for a namespace read back from the store.
func StripNamespace(user string, ns []string) []string {
	if user == "" || len(ns) == 0 || ns[0] != UserLabel(user) {
		return ns
	}
	return ns[1:]
}
