package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/auth"
	"github.com/weftlabs/weft/server/internal/records"
)

// CORSOptions configure cross-origin requests.
type CORSOptions struct {
	// AllowOrigins lists the origins allowed; empty or "*" allows any.
	AllowOrigins []string
	// AllowCredentials lets browsers send cookies and authorization;
	// it needs named origins.
	AllowCredentials bool
	// MaxAge is how long a browser may cache a preflight answer, in
	// seconds; 0 leaves it to the browser.
	MaxAge int
}

// exposedHeaders are the response headers browsers let the SDK read:
// where a created run lives, where a resumable stream is joined again,
// and the pagination of searches.
const exposedHeaders = "content-location,location,x-pagination-total,x-pagination-next,retry-after"

const allowedMethods = "GET,HEAD,PUT,POST,DELETE,PATCH"

// Header values every answer of the server sets (as those of the streams
// in runs.go), shared by all answers: set by assignment with canonical
// keys, a header costs no allocation, where Set makes a slice each time.
// Nothing changes a header's values in place.
var (
	anyOriginHeader      = []string{"*"}
	exposedHeadersHeader = []string{exposedHeaders}
)

// cors answers preflight requests and marks every response with the
// allowed origin.
func (s *Server) cors(next http.Handler) http.Handler {
	o := s.opts.CORS
	if o == nil {
		o = &CORSOptions{}
	}
	anyOrigin := len(o.AllowOrigins) == 0 || (len(o.AllowOrigins) == 1 && o.AllowOrigins[0] == "*")
	allowed := map[string]bool{}
	for _, a := range o.AllowOrigins {
		allowed[a] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		origin := r.Header.Get("Origin")
		switch {
		case anyOrigin && !o.AllowCredentials:
			h["Access-Control-Allow-Origin"] = anyOriginHeader
		case origin != "" && (anyOrigin || allowed[origin]):
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if o.AllowCredentials {
				h.Set("Access-Control-Allow-Credentials", "true")
			}
		}
		h["Access-Control-Expose-Headers"] = exposedHeadersHeader
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", allowedMethods)
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
				h.Add("Vary", "Access-Control-Request-Headers")
			}
			if o.MaxAge > 0 {
				h.Set("Access-Control-Max-Age", strconv.Itoa(o.MaxAge))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handlerFunc is a handler that returns its error, for WriteError to
// answer in the API's shapes.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) wrap(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		noteRoute(r)
		defer func() {
			// A handler panic is a bug; the client gets a 500 and the log
			// the cause, and the server lives on.
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("server: handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				api.WriteText(w, http.StatusInternalServerError, "internal error")
			}
		}()
		if err := h(w, r); err != nil {
			if errors.Is(err, checkpoint.ErrThreadBusy) {
				// A run (of this server, another one, or weft run) holds
				// the thread a whole-thread operation needed.
				err = api.Conflict("Thread is busy: %v", err).Because(err)
			}
			var later *retryLater
			if errors.As(err, &later) {
				// A refusal to retry, not a failure: counted, not logged.
				w.Header().Set("Retry-After", retryAfterSeconds(later.after))
			} else if api.Status(err) >= 500 {
				if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
					return // the client went away
				}
				s.log.Error("server: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			api.WriteError(w, err)
		}
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h handlerFunc) { mux.Handle(pattern, s.wrap(h)) }

	handle("GET /ok", func(w http.ResponseWriter, r *http.Request) error {
		api.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
		return nil
	})
	handle("GET /info", s.info)

	handle("POST /assistants", s.createAssistant)
	handle("POST /assistants/search", s.searchAssistants)
	handle("POST /assistants/count", s.countAssistants)
	handle("GET /assistants/{assistant_id}", s.getAssistant)
	handle("PATCH /assistants/{assistant_id}", s.patchAssistant)
	handle("DELETE /assistants/{assistant_id}", s.deleteAssistant)
	handle("GET /assistants/{assistant_id}/graph", s.assistantGraph)
	handle("GET /assistants/{assistant_id}/schemas", s.assistantSchemas)
	handle("GET /assistants/{assistant_id}/subgraphs", s.assistantSubgraphs)
	handle("GET /assistants/{assistant_id}/subgraphs/{namespace}", s.assistantSubgraphs)
	handle("POST /assistants/{assistant_id}/versions", s.assistantVersions)
	handle("POST /assistants/{assistant_id}/latest", s.setLatestVersion)

	handle("POST /threads", s.createThread)
	handle("POST /threads/search", s.searchThreads)
	handle("POST /threads/count", s.countThreads)
	handle("GET /threads/{thread_id}", s.getThread)
	handle("PATCH /threads/{thread_id}", s.patchThread)
	handle("DELETE /threads/{thread_id}", s.deleteThread)
	handle("POST /threads/{thread_id}/copy", s.copyThread)
	handle("POST /threads/prune", s.pruneThreads)
	handle("GET /threads/{thread_id}/state", s.getState)
	handle("POST /threads/{thread_id}/state", s.updateState)
	handle("PATCH /threads/{thread_id}/state", s.patchState)
	handle("GET /threads/{thread_id}/state/{checkpoint_id}", s.getStateAt)
	handle("POST /threads/{thread_id}/state/checkpoint", s.getStateAtPost)
	handle("GET /threads/{thread_id}/history", s.history)
	handle("POST /threads/{thread_id}/history", s.history)
	handle("GET /threads/{thread_id}/stream", s.streamThread)
	handle("GET /threads/{thread_id}/files", s.listFiles)
	handle("GET /threads/{thread_id}/files/{name...}", s.getFile)

	handle("POST /threads/{thread_id}/runs", s.createRun)
	handle("POST /threads/{thread_id}/runs/stream", s.streamRun)
	handle("POST /threads/{thread_id}/runs/wait", s.waitRun)
	handle("GET /threads/{thread_id}/runs", s.listRuns)
	handle("GET /threads/{thread_id}/runs/{run_id}", s.getRun)
	handle("DELETE /threads/{thread_id}/runs/{run_id}", s.deleteRun)
	handle("GET /threads/{thread_id}/runs/{run_id}/join", s.joinRun)
	handle("GET /threads/{thread_id}/runs/{run_id}/stream", s.joinStream)
	handle("POST /threads/{thread_id}/runs/{run_id}/cancel", s.cancelRun)
	handle("POST /runs", s.createRun)
	handle("POST /runs/stream", s.streamRun)
	handle("POST /runs/wait", s.waitRun)
	handle("GET /runs/{run_id}/stream", s.joinStreamByID)
	handle("POST /runs/batch", s.batchRuns)
	handle("POST /runs/cancel", s.cancelRuns)

	handle("POST /threads/{thread_id}/runs/crons", s.createCron)
	handle("POST /runs/crons", s.createCron)
	handle("PATCH /runs/crons/{cron_id}", s.patchCron)
	handle("DELETE /runs/crons/{cron_id}", s.deleteCron)
	handle("POST /runs/crons/search", s.searchCrons)
	handle("POST /runs/crons/count", s.countCrons)

	handle("PUT /store/items", s.putItem)
	handle("GET /store/items", s.getItem)
	handle("DELETE /store/items", s.deleteItem)
	handle("POST /store/items/search", s.searchItems)
	handle("POST /store/namespaces", s.listNamespaces)

	s.docRoutes(mux)

	if s.opts.Telemetry != nil {
		mux.Handle("GET /metrics", s.opts.Telemetry.Handler())
	}
	return s.observe(mux, s.cors(s.guard(mux)))
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) error {
	api.WriteJSON(w, http.StatusOK, map[string]any{
		"version": stringsOr(s.opts.Version, "weft"),
		"context": "weft",
		"flags":   map[string]bool{"assistants": true, "crons": true, "langsmith": false},
	})
	return nil
}

// pathUUID reads a path parameter that must be a UUID: anything else is a
// 400 naming it.
func pathUUID(r *http.Request, name string) (string, error) {
	v := r.PathValue(name)
	if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
		return "", api.Invalid(api.Issue{Code: "invalid_string", Path: []any{name}, Message: "Invalid uuid"})
	}
	return strings.ToLower(v), nil
}

// user is the user the request acts for.
func user(r *http.Request) string { return auth.User(r.Context()) }

// threadNotFound is the API's 404 for a thread.
func threadNotFound(id string) error {
	return api.NotFound("Thread with ID %s not found", id).Because(errNoSuchThread)
}

// recordErr maps a records error to the API's status codes; notFound is
// the 404 to answer.
func recordErr(err error, notFound error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, records.ErrNotFound):
		return notFound
	case errors.Is(err, records.ErrConflict):
		return api.Conflict("%s", conflictText(err)).Because(err)
	}
	return err
}

func conflictText(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg + " already exists"
}

// queryBool reads a boolean query parameter ("1", "true"); other values,
// and none, are false.
func queryBool(r *http.Request, name string) bool {
	v := strings.ToLower(r.URL.Query().Get(name))
	return v == "1" || v == "true" || v == "yes"
}
