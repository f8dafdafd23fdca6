package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ThreadID   string          `json:"thread_id"`
		Metadata   json.RawMessage `json:"metadata"`
		IfExists   string          `json:"if_exists"`
		Supersteps []struct {
			Updates []struct {
				Values  json.RawMessage `json:"values"`
				Command *commandJSON    `json:"command"`
				AsNode  string          `json:"as_node"`
			} `json:"updates"`
		} `json:"supersteps"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if err := jsonObject(req.Metadata, "metadata"); err != nil {
		return err
	}
	switch req.IfExists {
	case "", "raise", "do_nothing":
	default:
		return enumIssue("if_exists", req.IfExists, "raise", "do_nothing")
	}
	if req.ThreadID == "" {
		req.ThreadID = newThreadID()
	} else if _, err := uuid.Parse(req.ThreadID); err != nil || len(req.ThreadID) != 36 {
		return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"thread_id"}, Message: "Invalid uuid"})
	}
	var g *servedGraph
	var steps [][]graph.StateUpdate
	if len(req.Supersteps) > 0 {
		var err error
		if g, err = s.superstepsGraph(req.Metadata); err != nil {
			return err
		}
		for i, st := range req.Supersteps {
			if len(st.Updates) == 0 {
				return api.Invalid(api.Field("a superstep needs at least one update", "supersteps", i, "updates"))
			}
			var ups []graph.StateUpdate
			for j, u := range st.Updates {
				up, err := superstepUpdate(g, u.Values, u.Command)
				if err != nil {
					return api.Invalid(api.Field(err.Error(), "supersteps", i, "updates", j))
				}
				ups = append(ups, graph.StateUpdate{Update: up, AsNode: u.AsNode})
			}
			steps = append(steps, ups)
		}
	}
	ctx := r.Context()
	t, err := s.rec.CreateThread(ctx, records.Thread{ID: req.ThreadID, Owner: user(r), Metadata: req.Metadata}, req.IfExists == "do_nothing")
	if err != nil {
		if errors.Is(err, records.ErrConflict) {
			return api.Conflict("Thread already exists")
		}
		return err
	}
	if steps != nil && t.Values == nil && t.Status == records.ThreadIdle {
		// A new thread (do_nothing answers an existing one as it is): its
		// history is built step by step; if that fails, the thread goes.
		if err := s.applySupersteps(ctx, g, t.ID, steps); err != nil {
			if rerr := s.removeThread(context.WithoutCancel(ctx), t.Owner, t.ID); rerr != nil {
				s.log.Error("server: removing a thread whose supersteps failed", "thread_id", t.ID, "err", rerr)
			}
			return err
		}
		if t, err = s.rec.GetThread(ctx, t.Owner, t.ID); err != nil {
			return err
		}
	}
	api.WriteJSON(w, http.StatusOK, threadOut(t))
	return nil
}

// superstepsGraph returns the graph a new thread's supersteps update: the one
// its metadata's graph_id names (the SDK's threads.create sets it from
// graphId).
func (s *Server) superstepsGraph(metadata json.RawMessage) (*servedGraph, error) {
	id := metadataGraphID(metadata)
	if id == "" {
		return nil, api.Invalid(api.Field("supersteps update a graph's state: name it in metadata.graph_id (the SDK's graphId)", "metadata", "graph_id"))
	}
	g, ok := s.graphs[id]
	if !ok {
		return nil, api.Invalid(api.Field(fmt.Sprintf("graph %q is not served here", id), "metadata", "graph_id"))
	}
	return g, nil
}

// superstepUpdate decodes one update of a superstep: its values, and a
// command's update and goto (a resume has nothing to resume in a new
// thread).
func superstepUpdate(g *servedGraph, values json.RawMessage, cmd *commandJSON) (graph.Update, error) {
	var u graph.Update
	if !isNullJSON(values) {
		v, err := decodeValues(g.g, values)
		if err != nil {
			return graph.Update{}, fmt.Errorf("values: %v", err)
		}
		u = v
	}
	if cmd != nil {
		if !isNullJSON(cmd.Resume) {
			return graph.Update{}, errors.New("command.resume: a new thread has no interrupt to resume; give values, or a command's update and goto")
		}
		c, err := commandUpdate(g.g, cmd)
		if err != nil {
			return graph.Update{}, fmt.Errorf("command: %v", err)
		}
		u = u.And(c)
	}
	return u, nil
}

// applySupersteps builds a new thread's history (graph.BulkUpdateState)
// and records its state.
func (s *Server) applySupersteps(ctx context.Context, g *servedGraph, threadID string, steps [][]graph.StateUpdate) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	if _, err := g.g.BulkUpdateState(ctx, checkpoint.Config{ThreadID: threadID}, steps); err != nil {
		if errors.Is(err, graph.ErrInvalidInput) || errors.Is(err, graph.ErrInvalidUpdate) {
			return api.Invalid(api.Field(err.Error(), "supersteps"))
		}
		return err
	}
	return s.recordThreadState(ctx, g, threadID)
}

// ownThread returns the request user's thread from the path.
func (s *Server) ownThread(r *http.Request) (records.Thread, error) {
	id, err := pathUUID(r, "thread_id")
	if err != nil {
		return records.Thread{}, err
	}
	t, err := s.rec.GetThread(r.Context(), user(r), id)
	return t, recordErr(err, threadNotFound(id))
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) error {
	t, err := s.ownThread(r)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, threadOut(t))
	return nil
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "thread_id")
	if err != nil {
		return err
	}
	var req struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if err := jsonObject(req.Metadata, "metadata"); err != nil {
		return err
	}
	t, err := s.rec.PatchThread(r.Context(), user(r), id, req.Metadata)
	if err != nil {
		return recordErr(err, threadNotFound(id))
	}
	api.WriteJSON(w, http.StatusOK, threadOut(t))
	return nil
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) error {
	t, err := s.ownThread(r)
	if err != nil {
		return err
	}
	if err := s.removeThread(r.Context(), user(r), t.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeThread deletes owner's thread: its runs, checkpoints and record.
func (s *Server) removeThread(ctx context.Context, owner, id string) error {
	// Its runs stop first, so none writes to the thread once it is gone.
	if err := s.runs.stopThread(ctx, id); err != nil {
		return err
	}
	// The checkpoints go first: when another process's run (weft run)
	// holds the thread, that fails with nothing deleted.
	if err := s.deleteCheckpoints(ctx, id); err != nil {
		return err
	}
	if err := s.rec.DeleteThread(ctx, owner, id); err != nil {
		return recordErr(err, threadNotFound(id))
	}
	s.removeThreadFiles(id)
	// Who follows the thread (the document API's WebSockets) learns it
	// is gone.
	s.doc.runQueued(id)
	return nil
}

func (s *Server) deleteCheckpoints(ctx context.Context, threadID string) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	return s.saver.DeleteThread(ctx, threadID)
}

// maxPruneThreads bounds the threads one prune request names.
const maxPruneThreads = 1000

// pruneThreads answers POST /threads/prune (the SDK's threads.prune):
// strategy "delete" (the default) deletes each named thread as DELETE
// /threads/{id} does, its runs stopped first; "keep_latest" keeps each
// thread and its latest state but deletes its older checkpoints, with
// their pending writes and the stored values only they needed. Threads
// that do not exist or are another user's are passed over, as a search
// would; pruned_count counts the user's threads pruned. keep_latest on a
// thread with a run pending or running is a 409 naming it, checked for
// every thread before any is pruned.
func (s *Server) pruneThreads(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ThreadIDs []string `json:"thread_ids"`
		Strategy  string   `json:"strategy"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	switch req.Strategy {
	case "":
		req.Strategy = "delete"
	case "delete", "keep_latest":
	default:
		return enumIssue("strategy", req.Strategy, "delete", "keep_latest")
	}
	if req.ThreadIDs == nil {
		return api.Invalid(api.Issue{Code: "invalid_type", Path: []any{"thread_ids"}, Message: "Required: a list of thread ids"})
	}
	if len(req.ThreadIDs) > maxPruneThreads {
		return api.Invalid(api.Issue{Code: "too_big", Path: []any{"thread_ids"}, Message: fmt.Sprintf("At most %d thread ids in one request, got %d", maxPruneThreads, len(req.ThreadIDs))})
	}
	ids := make([]string, 0, len(req.ThreadIDs))
	seen := make(map[string]bool, len(req.ThreadIDs))
	for i, id := range req.ThreadIDs {
		if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
			return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"thread_ids", i}, Message: "Invalid uuid"})
		}
		if id = strings.ToLower(id); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	ctx, owner := r.Context(), user(r)
	var threads []records.Thread
	if len(ids) > 0 {
		// The user's threads among them, in one read (ids are unique).
		var err error
		if threads, _, err = s.rec.SearchThreads(ctx, records.ThreadQuery{Owner: owner, IDs: ids, Limit: len(ids)}); err != nil {
			return err
		}
	}
	for _, t := range threads {
		if req.Strategy == "keep_latest" && t.Status == records.ThreadBusy {
			return api.Conflict("Thread %s is busy: a run is pending or running; nothing was pruned", t.ID)
		}
	}
	pruned := 0
	for _, t := range threads {
		var err error
		if req.Strategy == "delete" {
			err = s.removeThread(ctx, owner, t.ID)
			if errors.Is(err, errNoSuchThread) {
				continue // deleted meanwhile
			}
		} else {
			err = s.pruneCheckpoints(ctx, t.ID)
		}
		if err != nil {
			return fmt.Errorf("pruning thread %s (%d of the %d named threads pruned before it): %w", t.ID, pruned, len(ids), err)
		}
		pruned++
	}
	api.WriteJSON(w, http.StatusOK, map[string]int{"pruned_count": pruned})
	return nil
}

// pruneCheckpoints deletes every checkpoint of a thread but its latest,
// and but the subgraph checkpoints made after it (a subgraph interrupted
// in the step that follows it, which a resume goes on from).
func (s *Server) pruneCheckpoints(ctx context.Context, threadID string) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	latest, err := s.saver.Get(ctx, checkpoint.Config{ThreadID: threadID})
	if err != nil || latest == nil {
		return err // no checkpoint: nothing to prune
	}
	_, err = s.saver.Prune(ctx, threadID, checkpoint.PruneOptions{KeepLatest: 1, SubgraphsBefore: latest.Config.CheckpointID})
	return err
}

func (s *Server) copyThread(w http.ResponseWriter, r *http.Request) error {
	from, err := s.ownThread(r)
	if err != nil {
		return err
	}
	id := newThreadID()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(from.Metadata, &m); err != nil {
		return err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m["thread_id"] = json.RawMessage(strconv.Quote(id))
	meta, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpointTimeout)
	defer cancel()
	if err := s.saver.CopyThread(ctx, from.ID, id); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	t, err := s.rec.CreateThread(r.Context(), records.Thread{ID: id, Owner: user(r), Metadata: meta}, false)
	if err != nil {
		return err
	}
	if from.Values != nil {
		if err := s.rec.SetThreadValues(r.Context(), id, records.ThreadIdle, from.Values, from.Interrupts); err != nil {
			return err
		}
		t.Values, t.Interrupts = from.Values, from.Interrupts
	}
	api.WriteJSON(w, http.StatusOK, threadOut(t))
	return nil
}

type threadSearchRequest struct {
	Metadata  map[string]any `json:"metadata"`
	Values    map[string]any `json:"values"`
	IDs       []string       `json:"ids"`
	Status    string         `json:"status"`
	Limit     *int           `json:"limit"`
	Offset    *int           `json:"offset"`
	SortBy    string         `json:"sort_by"`
	SortOrder string         `json:"sort_order"`
	Select    []string       `json:"select"`
}

func (req threadSearchRequest) query(r *http.Request) (records.ThreadQuery, error) {
	switch req.Status {
	case "", records.ThreadIdle, records.ThreadBusy, records.ThreadInterrupted, records.ThreadError:
	default:
		return records.ThreadQuery{}, enumIssue("status", req.Status, "idle", "busy", "interrupted", "error")
	}
	for i, id := range req.IDs {
		if _, err := uuid.Parse(id); err != nil {
			return records.ThreadQuery{}, api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"ids", i}, Message: "Invalid uuid"})
		}
	}
	return records.ThreadQuery{Owner: user(r), IDs: req.IDs, Metadata: req.Metadata, Values: req.Values, Status: req.Status}, nil
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) error {
	var req threadSearchRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	q, err := req.query(r)
	if err != nil {
		return err
	}
	if q.Limit, q.Offset, err = page(req.Limit, req.Offset); err != nil {
		return err
	}
	switch req.SortBy {
	case "", "thread_id", "status", "created_at", "updated_at":
		q.SortBy = req.SortBy
	default:
		return enumIssue("sort_by", req.SortBy, "thread_id", "status", "created_at", "updated_at")
	}
	if q.Desc, err = sortOrder(req.SortOrder); err != nil {
		return err
	}
	list, total, err := s.rec.SearchThreads(r.Context(), q)
	if err != nil {
		return err
	}
	out := make([]threadJSON, len(list))
	for i, t := range list {
		out[i] = threadOut(t)
	}
	return writePage(w, out, req.Select, q.Offset, total)
}

func (s *Server) countThreads(w http.ResponseWriter, r *http.Request) error {
	var req threadSearchRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	q, err := req.query(r)
	if err != nil {
		return err
	}
	n, err := s.rec.CountThreads(r.Context(), q)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, n)
	return nil
}

// ownThreadGraph returns the request user's thread from the path and the
// graph its runs used (nil before any run).
func (s *Server) ownThreadGraph(r *http.Request) (records.Thread, *servedGraph, error) {
	t, err := s.ownThread(r)
	if err != nil {
		return records.Thread{}, nil, err
	}
	g, err := s.threadGraph(t)
	return t, g, err
}

// threadGraph returns the graph a thread's runs used (its metadata's
// graph_id), or nil when no run has used one yet.
func (s *Server) threadGraph(t records.Thread) (*servedGraph, error) {
	id := metadataGraphID(t.Metadata)
	if id == "" {
		return nil, nil
	}
	g, ok := s.graphs[id]
	if !ok {
		return nil, api.NotFound("Graph %q of thread %s is not served here", id, t.ID).Because(errNoSuchAssistant)
	}
	return g, nil
}

// metadataGraphID reads the graph_id of a thread's metadata ("" when it
// has none, or the metadata does not read).
func metadataGraphID(metadata json.RawMessage) string {
	var m struct {
		GraphID string `json:"graph_id"`
	}
	_ = json.Unmarshal(metadata, &m)
	return m.GraphID
}

// checkpointTimeout bounds a checkpoint read or write made for a request.
const checkpointTimeout = 10 * time.Second

func (s *Server) writeState(w http.ResponseWriter, r *http.Request, checkpointID, ns string, subgraphs bool) error {
	t, g, err := s.ownThreadGraph(r)
	if err != nil {
		return err
	}
	if g == nil {
		api.WriteJSON(w, http.StatusOK, emptyState())
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpointTimeout)
	defer cancel()
	snap, err := g.g.GetState(ctx, checkpoint.Config{ThreadID: t.ID, Namespace: ns, CheckpointID: checkpointID}, &graph.StateOptions{Subgraphs: subgraphs})
	if errors.Is(err, checkpoint.ErrNotFound) {
		return api.NotFound("Checkpoint %s of thread %s not found", checkpointID, t.ID)
	}
	if err != nil {
		return err
	}
	if snap.Config.CheckpointID == "" {
		api.WriteJSON(w, http.StatusOK, emptyState())
		return nil
	}
	api.WriteJSON(w, http.StatusOK, stateOut(snap))
	return nil
}

// stateJSON is a thread's latest state, snap, as GET
// /threads/{id}/state answers it.
func stateJSON(snap graph.StateSnapshot) threadStateJSON {
	if snap.Config.CheckpointID == "" {
		return emptyState()
	}
	return stateOut(snap)
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) error {
	return s.writeState(w, r, "", "", queryBool(r, "subgraphs"))
}

func (s *Server) getStateAt(w http.ResponseWriter, r *http.Request) error {
	cp := r.PathValue("checkpoint_id")
	if _, err := uuid.Parse(cp); err != nil {
		return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"checkpoint_id"}, Message: "Invalid uuid"})
	}
	return s.writeState(w, r, cp, "", queryBool(r, "subgraphs"))
}

// checkpointRef is how a request names a checkpoint.
type checkpointRef struct {
	CheckpointID string `json:"checkpoint_id"`
	CheckpointNS string `json:"checkpoint_ns"`
}

func (s *Server) getStateAtPost(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Checkpoint *checkpointRef `json:"checkpoint"`
		Subgraphs  bool           `json:"subgraphs"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	var cp checkpointRef
	if req.Checkpoint != nil {
		cp = *req.Checkpoint
	}
	return s.writeState(w, r, cp.CheckpointID, cp.CheckpointNS, req.Subgraphs)
}

// patchState answers PATCH /threads/{id}/state (the SDK's
// threads.patchState): it sets keys of the metadata of the thread's
// latest checkpoint, as a bookmark or a rating, and answers 204. The
// checkpoint's own fields (source, step, parents and the ids) are refused
// with a 400 naming the key; a thread with no state is a 404; a thread a
// run holds is a 409.
func (s *Server) patchState(w http.ResponseWriter, r *http.Request) error {
	t, err := s.ownThread(r)
	if err != nil {
		return err
	}
	var req struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if req.Metadata == nil {
		return api.Invalid(api.Issue{Code: "invalid_type", Path: []any{"metadata"}, Message: "Required: an object of the metadata keys to set"})
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpointTimeout)
	defer cancel()
	_, err = s.saver.PatchMetadata(ctx, checkpoint.Config{ThreadID: t.ID}, req.Metadata)
	switch {
	case errors.Is(err, checkpoint.ErrInvalid):
		return api.Invalid(api.Field(err.Error(), "metadata"))
	case errors.Is(err, checkpoint.ErrNotFound):
		return api.NotFound("Thread %s has no state to patch: it has not run yet", t.ID)
	case err != nil:
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) updateState(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Values       json.RawMessage `json:"values"`
		AsNode       string          `json:"as_node"`
		CheckpointID string          `json:"checkpoint_id"`
		Checkpoint   *checkpointRef  `json:"checkpoint"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	t, g, err := s.ownThreadGraph(r)
	if err != nil {
		return err
	}
	if g == nil {
		return api.Invalid(api.Field("the thread has no graph yet: run it once (or create it with a run) before updating its state", "thread_id"))
	}
	u, err := decodeValues(g.g, req.Values)
	if err != nil {
		return err
	}
	cfg := checkpoint.Config{ThreadID: t.ID, CheckpointID: req.CheckpointID}
	if req.Checkpoint != nil {
		cfg.CheckpointID, cfg.Namespace = req.Checkpoint.CheckpointID, req.Checkpoint.CheckpointNS
	}
	active, err := s.rec.ActiveRuns(r.Context(), t.ID)
	if err != nil {
		return err
	}
	if len(active) > 0 {
		return api.Conflict("Thread is busy: a run is pending or running")
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpointTimeout)
	defer cancel()
	var next checkpoint.Config
	err = whileReleasing(ctx, func() (err error) {
		next, err = g.g.UpdateState(ctx, cfg, u, req.AsNode)
		return err
	})
	switch {
	case errors.Is(err, checkpoint.ErrThreadBusy):
		return api.Conflict("Thread is busy: a run is using it")
	case errors.Is(err, checkpoint.ErrNotFound):
		return api.NotFound("Checkpoint %s of thread %s not found", cfg.CheckpointID, t.ID)
	case errors.Is(err, graph.ErrInvalidInput), errors.Is(err, graph.ErrInvalidUpdate):
		return api.Invalid(api.Field(err.Error(), "values"))
	case err != nil:
		return err
	}
	snap, err := s.readRecordThreadState(ctx, g, t.ID)
	if err != nil {
		return err
	}
	s.stateUpdated(t.ID, snap)
	api.WriteJSON(w, http.StatusOK, map[string]any{"checkpoint": map[string]string{
		"thread_id": next.ThreadID, "checkpoint_ns": next.Namespace, "checkpoint_id": next.CheckpointID,
	}})
	return nil
}

// decodeValues decodes a state update's values: an object, or a list of
// objects applied in order.
func decodeValues(g *graph.Graph, raw json.RawMessage) (graph.Update, error) {
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return graph.Update{}, api.Invalid(api.Field(err.Error(), "values"))
		}
		u := graph.Input()
		for i, item := range list {
			v, err := g.DecodeUpdate(item)
			if err != nil {
				return graph.Update{}, inputIssue(err, "values", i)
			}
			u = u.And(v)
		}
		return u, nil
	}
	u, err := g.DecodeUpdate(raw)
	if err != nil {
		return graph.Update{}, inputIssue(err, "values")
	}
	return u, nil
}

// inputIssue turns a graph input error into a 400 naming the key.
func inputIssue(err error, path ...any) error {
	var ie *graph.InputError
	if errors.As(err, &ie) && ie.Key != "" {
		path = append(path, ie.Key)
	}
	return api.Invalid(api.Field(err.Error(), path...))
}

// recordThreadState copies a thread's latest state into its record:
// values, pending interrupts, and status (interrupted when tasks wait).
func (s *Server) recordThreadState(ctx context.Context, g *servedGraph, threadID string) error {
	_, err := s.readRecordThreadState(ctx, g, threadID)
	return err
}

// readRecordThreadState is recordThreadState, returning the state it
// read.
func (s *Server) readRecordThreadState(ctx context.Context, g *servedGraph, threadID string) (graph.StateSnapshot, error) {
	snap, err := g.g.GetState(ctx, checkpoint.Config{ThreadID: threadID}, nil)
	if err != nil {
		return snap, err
	}
	return snap, s.recordSnapshot(ctx, threadID, snap)
}

// recordSnapshot copies snap, a thread's latest state, into its record.
func (s *Server) recordSnapshot(ctx context.Context, threadID string, snap graph.StateSnapshot) error {
	values, err := json.Marshal(snap.Values)
	if err != nil {
		return err
	}
	interrupts, err := json.Marshal(interruptsByTask(snap))
	if err != nil {
		return err
	}
	status := records.ThreadIdle
	if len(snap.Next) > 0 && len(snap.Interrupts) > 0 {
		status = records.ThreadInterrupted
	}
	return s.rec.SetThreadValues(ctx, threadID, status, values, interrupts)
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Limit      *int            `json:"limit"`
		Before     json.RawMessage `json:"before"`
		Metadata   map[string]any  `json:"metadata"`
		Checkpoint *checkpointRef  `json:"checkpoint"`
	}
	if r.Method == http.MethodPost {
		if err := api.DecodeBody(w, r, 0, &req); err != nil {
			return err
		}
	} else {
		q := r.URL.Query()
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return api.Invalid(api.TypeIssue("number", "string", "limit"))
			}
			req.Limit = &n
		}
		if v := q.Get("before"); v != "" {
			req.Before, _ = json.Marshal(v)
		}
	}
	limit := 10
	if req.Limit != nil {
		if *req.Limit < 1 {
			return api.Invalid(api.Field("Number must be greater than or equal to 1", "limit"))
		}
		limit = *req.Limit
	}
	before, err := beforeID(req.Before)
	if err != nil {
		return err
	}
	t, g, err := s.ownThreadGraph(r)
	if err != nil {
		return err
	}
	out := []threadStateJSON{}
	if g == nil {
		api.WriteJSON(w, http.StatusOK, out)
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpointTimeout)
	defer cancel()
	for snap, err := range g.g.GetStateHistory(ctx, t.ID, &graph.HistoryOptions{Before: before, Limit: limit, Filter: req.Metadata}) {
		if err != nil {
			return err
		}
		out = append(out, stateOut(snap))
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// beforeID reads a history request's before: a checkpoint id, or a config
// naming one ({"configurable": {"checkpoint_id": ...}}, the SDK's typed
// form).
func beforeID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id, nil
	}
	var cfg struct {
		Configurable checkpointRef `json:"configurable"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", api.Invalid(api.TypeIssue("string", kindOf(raw), "before"))
	}
	return cfg.Configurable.CheckpointID, nil
}

// releaseWait bounds how long a state update waits for the thread's
// lease once no run is recorded pending or running on it.
const releaseWait = 2 * time.Second

// whileReleasing calls write, and again while it fails with
// checkpoint.ErrThreadBusy, for releaseWait at most: the caller found no
// run recorded active on the thread, so the lease's holder is a run whose
// end is recorded and whose lease is on its way back (where the records
// and the checkpoints are two databases, the end and the release are two
// writes), or another program that holds the thread for a moment. A
// client that saw the run end must not get a 409 for it.
func whileReleasing(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(releaseWait)
	pause := 2 * time.Millisecond
	for {
		err := write()
		if !errors.Is(err, checkpoint.ErrThreadBusy) || time.Now().Add(pause).After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}
