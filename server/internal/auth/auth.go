// Package auth carries the user a request acts for. The server's
// authentication middleware (API keys, added with the auth work of issue 8)
// puts the user in the request's context; every handler and the run
// manager read it from there and keep each user's threads, runs,
// assistants and store namespaces apart. With authentication off the user
// is "", and everything belongs to that one user.
package auth

import "context"

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
