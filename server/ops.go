package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/server/apikey"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/auth"
	"github.com/weftlabs/weft/telemetry"
)

// Authenticator tells which user a request acts for. *apikey.Set is one.
type Authenticator interface {
	// Authenticate returns the user r acts for, or an error: the request
	// is then answered 401. apikey.ErrMissing and apikey.ErrUnknown get
	// answers of their own; any other error's text is the answer's.
	Authenticate(r *http.Request) (user string, err error)
}

// openEndpoint reports whether r may go on without authentication and
// without counting against a rate limit: the health and metadata
// endpoints, which LangGraph's servers serve to anyone (load balancers,
// Prometheus, the SDK's first call), and CORS preflights, which browsers
// send without credentials.
func openEndpoint(r *http.Request) bool {
	if r.Method == http.MethodOptions {
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/ok", "/info", "/metrics", "/health":
		return true
	}
	return false
}

// reqInfo is what a request's log line and metrics say beyond the
// request itself, filled in as the request goes through the handlers.
type reqInfo struct {
	route, user, threadID, runID string
}

type reqInfoKey struct{}

func reqInfoFrom(ctx context.Context) *reqInfo {
	i, _ := ctx.Value(reqInfoKey{}).(*reqInfo)
	return i
}

// noteRoute records the route pattern that matched r, and the thread and
// run its path names.
func noteRoute(r *http.Request) {
	if i := reqInfoFrom(r.Context()); i != nil {
		i.route = r.Pattern
		i.threadID = r.PathValue("thread_id")
		if i.runID == "" {
			i.runID = r.PathValue("run_id")
		}
	}
}

// noteRun records the run a request created, for its log line.
func noteRun(ctx context.Context, runID string) {
	if i := reqInfoFrom(ctx); i != nil && i.runID == "" {
		i.runID = runID
	}
}

// observe logs each request and counts it in the metrics: method, route
// pattern, status, duration, user and run. It logs no body, no query and
// no header, so no secret.
func (s *Server) observe(mux *http.ServeMux, next http.Handler) http.Handler {
	tel, logRequests := s.opts.Telemetry, s.opts.LogRequests
	if tel == nil && !logRequests {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
		sw := &statusWriter{ResponseWriter: w, tel: tel}
		defer func() {
			d := time.Since(start)
			sw.streamEnded()
			status := sw.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			if info.route == "" {
				// Refused before the mux (401, 429), or a handler of the
				// mux's own (/metrics, 404, 405).
				_, info.route = mux.Handler(r)
			}
			tel.ObserveRequest(r.Method, info.route, status, d)
			if !logRequests {
				return
			}
			attrs := make([]slog.Attr, 0, 8)
			attrs = append(attrs,
				slog.String("method", r.Method),
				slog.String("route", routeOr(info.route, r.URL.Path)),
				slog.Int("status", status),
				slog.Duration("duration", d),
			)
			if info.user != "" {
				attrs = append(attrs, slog.String("user", info.user))
			}
			if info.threadID != "" {
				attrs = append(attrs, slog.String("thread_id", info.threadID))
			}
			if info.runID != "" {
				attrs = append(attrs, slog.String("run_id", info.runID))
			}
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// routeOr is the route pattern, or for a request no route matched its
// path (a 404 says what was asked).
func routeOr(route, path string) string {
	if route != "" {
		return route
	}
	return path
}

// statusWriter remembers the status of a response, and counts an event
// stream open while its handler runs.
type statusWriter struct {
	http.ResponseWriter
	status int
	tel    *telemetry.Telemetry
	closed func()
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		if code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.closed = w.tel.StreamOpened()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines, hijacking) through the wrapper.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher for code that asserts it.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *statusWriter) streamEnded() {
	if w.closed != nil {
		w.closed()
	}
}

// guard authenticates a request, applies the user's rate limit and the
// server's bound on bodies.
func (s *Server) guard(next http.Handler) http.Handler {
	o := s.opts
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if o.MaxBodyBytes > 0 {
			ctx = api.WithBodyLimit(ctx, o.MaxBodyBytes)
		}
		open := openEndpoint(r)
		user := auth.User(ctx)
		if o.Auth != nil && !open {
			u, err := o.Auth.Authenticate(socketKey(r))
			if err != nil {
				o.Telemetry.Rejected(telemetry.RejectUnauthenticated)
				unauthorized(w, r, err)
				return
			}
			user = u
			ctx = auth.WithUser(ctx, u)
			if i := reqInfoFrom(ctx); i != nil {
				i.user = u
			}
		}
		if !open {
			if secs, limited := s.rateLimited(ctx, r, user); limited {
				w.Header().Set("Retry-After", secs)
				msg := "Too many requests: this client's rate limit is spent; retry after " + secs + " s"
				if docPath(r.URL.Path) {
					writeErrorBody(w, http.StatusTooManyRequests, errorJSON{Code: codeRateLimited.Code, Name: codeRateLimited.Name, Category: codeRateLimited.cat(), Message: msg})
				} else {
					api.WriteText(w, http.StatusTooManyRequests, msg)
				}
				return
			}
		}
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// rateLimited counts a request of user against the rate limit and
// reports whether it is beyond it, with the seconds to wait: for a
// request, and for each message a WebSocket of the document API takes.
func (s *Server) rateLimited(ctx context.Context, r *http.Request, user string) (retryAfter string, limited bool) {
	o := s.opts
	if o.RateLimit == nil {
		return "", false
	}
	key := "user:" + user
	if user == "" {
		// No user to count for: count for the client's address.
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		key = "addr:" + host
	}
	d, err := o.RateLimit.Allow(ctx, key)
	if err != nil {
		// The limiter could not decide: let the request through rather
		// than fail it, and say so.
		s.log.Warn("server: the rate limiter failed; the request goes on unlimited", "err", err)
		return "", false
	}
	if d.Allowed {
		return "", false
	}
	o.Telemetry.Rejected(telemetry.RejectRateLimited)
	return retryAfterSeconds(d.RetryAfter), true
}

// unauthorized answers 401, saying what is missing without telling
// whether a key was close.
func unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	msg := "Unauthorized: " + err.Error()
	switch {
	case errors.Is(err, apikey.ErrMissing):
		msg = "Unauthorized: this server needs an API key; send it in the x-api-key header or as Authorization: Bearer <key>"
	case errors.Is(err, apikey.ErrUnknown):
		msg = "Unauthorized: the API key is not valid"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="weft"`)
	if docPath(r.URL.Path) {
		writeErrorBody(w, http.StatusUnauthorized, errorJSON{Code: codeUnauthenticated.Code, Name: codeUnauthenticated.Name, Category: codeUnauthenticated.cat(), Message: msg})
		return
	}
	api.WriteText(w, http.StatusUnauthorized, msg)
}

// retryAfterSeconds is a Retry-After value: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// retryLater is a refusal a client may try again after a while: the
// answer carries a Retry-After header.
type retryLater struct {
	err   *api.StatusError
	after time.Duration
}

func (e *retryLater) Error() string { return e.err.Error() }
func (e *retryLater) Unwrap() error { return e.err }

// errUserRunsBound marks the answer to a run beyond
// Options.MaxRunsPerUser.
var errUserRunsBound = errors.New("server: the user holds as many runs as one user may")

// errTooManyUserRuns is the answer to a run beyond Options.MaxRunsPerUser:
// 429, as a rate limit, with a Retry-After.
func errTooManyUserRuns(limit int) error {
	return &retryLater{
		err: &api.StatusError{Status: http.StatusTooManyRequests, Message: fmt.Sprintf(
			"You hold as many runs as one user may (%d, waiting or running); retry when one of them ends", limit), Err: errUserRunsBound},
		after: time.Second,
	}
}

// errTooManyRuns is the answer to a run beyond Options.MaxRuns.
func errTooManyRuns(limit int) error {
	return &retryLater{
		err: &api.StatusError{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf(
			"The server holds as many runs as it takes (%d, waiting or running); retry later", limit)},
		after: time.Second,
	}
}
