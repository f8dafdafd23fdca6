package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/google/uuid"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/records"
)

// assistantRef resolves what a client names an assistant by: a graph id
// (its system assistant) or an assistant id.
func (s *Server) assistantRef(ref string) string {
	if g, ok := s.graphs[ref]; ok {
		return g.assistantID
	}
	return ref
}

func assistantNotFound() error {
	return api.NotFound("Assistant not found").Because(errNoSuchAssistant)
}

// lookupAssistant returns the assistant ref names that the request's user
// may read.
func (s *Server) lookupAssistant(r *http.Request, ref string) (records.Assistant, error) {
	id := s.assistantRef(ref)
	if _, err := uuid.Parse(id); err != nil {
		return records.Assistant{}, assistantNotFound()
	}
	a, err := s.rec.GetAssistant(r.Context(), user(r), id)
	return a, recordErr(err, assistantNotFound())
}

// runAssistant is lookupAssistant for a new run: the assistant kept from
// an earlier run, unless fresh. The run's own insert checks that it is
// still current (records.NewRun.Assistant), so a run costs no read of its
// assistant.
func (s *Server) runAssistant(r *http.Request, ref string, fresh bool) (records.Assistant, error) {
	id := s.assistantRef(ref)
	if !fresh {
		if a, ok := s.assistants.get(id, user(r)); ok {
			return a, nil
		}
	}
	a, err := s.lookupAssistant(r, ref)
	if err == nil {
		s.assistants.put(a)
	}
	return a, err
}

// maxKeptAssistants bounds the assistants an assistantCache keeps.
const maxKeptAssistants = 1024

// assistantCache keeps, by id, the assistants runs were made from, so
// that a run does not read its assistant first. What it keeps may be
// stale: another process sharing the database may have changed or
// deleted the assistant. It is never served as is: a run made from it
// is created only if the assistant is still that version, checked by the
// run's own insert, and one refused reads the assistant again.
type assistantCache struct {
	mu sync.Mutex
	m  map[string]records.Assistant
}

// get returns the assistant id kept, if user may read it.
func (c *assistantCache) get(id, user string) (records.Assistant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[id]
	if !ok || (a.Owner != "" && a.Owner != user) {
		return records.Assistant{}, false
	}
	return a, true
}

// put keeps a, forgetting another assistant when full.
func (c *assistantCache) put(a records.Assistant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]records.Assistant{}
	}
	if _, ok := c.m[a.ID]; !ok && len(c.m) >= maxKeptAssistants {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[a.ID] = a
}

// forget drops the assistant id.
func (c *assistantCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// pathAssistantGraph returns the assistant the path names and the graph it
// runs.
func (s *Server) pathAssistantGraph(r *http.Request) (records.Assistant, *servedGraph, error) {
	a, err := s.lookupAssistant(r, r.PathValue("assistant_id"))
	if err != nil {
		return records.Assistant{}, nil, err
	}
	g, err := s.servedGraphOf(a)
	return a, g, err
}

// servedGraphOf returns the graph an assistant runs.
func (s *Server) servedGraphOf(a records.Assistant) (*servedGraph, error) {
	g, ok := s.graphs[a.GraphID]
	if !ok {
		return nil, api.NotFound("Graph %q of assistant %s is not served here", a.GraphID, a.ID).Because(errNoSuchAssistant)
	}
	return g, nil
}

// jsonObject checks that raw, when given, is a JSON object, naming field.
func jsonObject(raw json.RawMessage, field string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '{' && json.Valid(raw) {
		return nil // what decoding it into a map would take, without the map
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return api.Invalid(api.TypeIssue("object", kindOf(raw), field))
	}
	return nil
}

// kindOf names the JSON type of a value, as Zod does in its messages.
func kindOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "undefined"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func enumIssue(field, got string, options ...string) error {
	msg := "Invalid enum value. Expected "
	for i, o := range options {
		if i > 0 {
			msg += " | "
		}
		msg += "'" + o + "'"
	}
	return api.Invalid(api.Issue{Code: "invalid_enum_value", Received: got, Path: []any{field}, Message: msg + ", received '" + got + "'"})
}

func (s *Server) createAssistant(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		AssistantID string          `json:"assistant_id"`
		GraphID     *string         `json:"graph_id"`
		Config      json.RawMessage `json:"config"`
		Context     json.RawMessage `json:"context"`
		Metadata    json.RawMessage `json:"metadata"`
		IfExists    string          `json:"if_exists"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if req.GraphID == nil {
		return api.Invalid(api.TypeIssue("string", "undefined", "graph_id"))
	}
	for _, f := range []struct {
		raw  json.RawMessage
		name string
	}{{req.Config, "config"}, {req.Metadata, "metadata"}} {
		if err := jsonObject(f.raw, f.name); err != nil {
			return err
		}
	}
	switch req.IfExists {
	case "", "raise", "do_nothing":
	default:
		return enumIssue("if_exists", req.IfExists, "raise", "do_nothing")
	}
	if req.AssistantID == "" {
		req.AssistantID = uuid.NewString()
	} else if _, err := uuid.Parse(req.AssistantID); err != nil {
		return api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"assistant_id"}, Message: "Invalid uuid"})
	}
	if _, ok := s.graphs[*req.GraphID]; !ok {
		return api.NotFound("Graph %q not found", *req.GraphID)
	}
	a, err := s.rec.CreateAssistant(r.Context(), records.Assistant{
		ID: req.AssistantID, Owner: user(r), GraphID: *req.GraphID, Name: stringsOr(req.Name, "Untitled"),
		Description: req.Description, Config: req.Config, Context: req.Context, Metadata: req.Metadata,
	}, req.IfExists == "do_nothing")
	if err != nil {
		return recordErr(err, assistantNotFound())
	}
	api.WriteJSON(w, http.StatusOK, assistantOut(a))
	return nil
}

type searchRequest struct {
	Metadata  map[string]any `json:"metadata"`
	GraphID   string         `json:"graph_id"`
	Name      string         `json:"name"`
	Limit     *int           `json:"limit"`
	Offset    *int           `json:"offset"`
	SortBy    string         `json:"sort_by"`
	SortOrder string         `json:"sort_order"`
	Select    []string       `json:"select"`
}

// page checks a search's limit (1 to 1000, default 10) and offset.
func page(limit, offset *int) (int, int, error) {
	l, o := 10, 0
	if limit != nil {
		if *limit < 1 || *limit > 1000 {
			return 0, 0, api.Invalid(api.Field("Number must be between 1 and 1000", "limit"))
		}
		l = *limit
	}
	if offset != nil {
		if *offset < 0 {
			return 0, 0, api.Invalid(api.Field("Number must be greater than or equal to 0", "offset"))
		}
		o = *offset
	}
	return l, o, nil
}

// paginate sets the pagination headers of a search: the total, and the
// next offset when there are more.
func paginate(w http.ResponseWriter, offset, n, total int) {
	w.Header().Set("X-Pagination-Total", strconv.Itoa(total))
	if offset+n < total {
		w.Header().Set("X-Pagination-Next", strconv.Itoa(offset+n))
	}
}

// writePage answers a search with a page of its items (offset of total),
// keeping the fields its select names, and the pagination headers.
func writePage[T any](w http.ResponseWriter, items []T, fields []string, offset, total int) error {
	body, err := selectFields(items, fields)
	if err != nil {
		return err
	}
	paginate(w, offset, len(items), total)
	api.WriteJSON(w, http.StatusOK, body)
	return nil
}

// selectFields keeps only the fields a search's select names.
func selectFields[T any](items []T, fields []string) (any, error) {
	if len(fields) == 0 {
		return items, nil
	}
	out := make([]map[string]json.RawMessage, len(items))
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		kept := map[string]json.RawMessage{}
		for _, f := range fields {
			if v, ok := m[f]; ok {
				kept[f] = v
			}
		}
		out[i] = kept
	}
	return out, nil
}

func sortOrder(v string) (bool, error) {
	switch v {
	case "", "desc":
		return true, nil
	case "asc":
		return false, nil
	}
	return false, enumIssue("sort_order", v, "asc", "desc")
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	var req searchRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	limit, offset, err := page(req.Limit, req.Offset)
	if err != nil {
		return err
	}
	switch req.SortBy {
	case "", "assistant_id", "graph_id", "name", "created_at", "updated_at":
	default:
		return enumIssue("sort_by", req.SortBy, "assistant_id", "graph_id", "name", "created_at", "updated_at")
	}
	desc, err := sortOrder(req.SortOrder)
	if err != nil {
		return err
	}
	list, total, err := s.rec.SearchAssistants(r.Context(), records.AssistantQuery{
		User: user(r), GraphID: req.GraphID, Name: req.Name, Metadata: req.Metadata,
		SortBy: req.SortBy, Desc: desc, Limit: limit, Offset: offset,
	})
	if err != nil {
		return err
	}
	out := make([]assistantJSON, len(list))
	for i, a := range list {
		out[i] = assistantOut(a)
	}
	return writePage(w, out, req.Select, offset, total)
}

func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request) error {
	var req searchRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	n, err := s.rec.CountAssistants(r.Context(), records.AssistantQuery{User: user(r), GraphID: req.GraphID, Name: req.Name, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, n)
	return nil
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) error {
	a, err := s.lookupAssistant(r, r.PathValue("assistant_id"))
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, assistantOut(a))
	return nil
}

func (s *Server) patchAssistant(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		GraphID     *string         `json:"graph_id"`
		Config      json.RawMessage `json:"config"`
		Context     json.RawMessage `json:"context"`
		Metadata    json.RawMessage `json:"metadata"`
		Name        *string         `json:"name"`
		Description *string         `json:"description"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		raw  json.RawMessage
		name string
	}{{req.Config, "config"}, {req.Metadata, "metadata"}} {
		if err := jsonObject(f.raw, f.name); err != nil {
			return err
		}
	}
	if req.GraphID != nil {
		if _, ok := s.graphs[*req.GraphID]; !ok {
			return api.NotFound("Graph %q not found", *req.GraphID)
		}
	}
	id := s.assistantRef(r.PathValue("assistant_id"))
	if _, err := uuid.Parse(id); err != nil {
		return assistantNotFound()
	}
	// Runs made from the version kept would be refused and read it again:
	// forgetting it spares them that.
	defer s.assistants.forget(id)
	a, err := s.rec.PatchAssistant(r.Context(), user(r), id, records.AssistantPatch{
		GraphID: req.GraphID, Name: req.Name, Description: req.Description,
		Config: nullToNil(req.Config), Context: nullToNil(req.Context), Metadata: nullToNil(req.Metadata),
	})
	if err != nil {
		return recordErr(err, assistantNotFound())
	}
	api.WriteJSON(w, http.StatusOK, assistantOut(a))
	return nil
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func (s *Server) deleteAssistant(w http.ResponseWriter, r *http.Request) error {
	id := s.assistantRef(r.PathValue("assistant_id"))
	if _, err := uuid.Parse(id); err != nil {
		return assistantNotFound()
	}
	defer s.assistants.forget(id)
	if err := s.rec.DeleteAssistant(r.Context(), user(r), id); err != nil {
		return recordErr(err, assistantNotFound())
	}
	api.WriteJSON(w, http.StatusOK, []string{id})
	return nil
}

func (s *Server) assistantGraph(w http.ResponseWriter, r *http.Request) error {
	_, g, err := s.pathAssistantGraph(r)
	if err != nil {
		return err
	}
	depth := 0
	switch x := r.URL.Query().Get("xray"); x {
	case "", "false", "0":
	case "true":
		depth = -1
	default:
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 {
			return api.Invalid(api.Field("Expected a boolean or a non-negative integer", "xray"))
		}
		depth = n
	}
	api.WriteJSON(w, http.StatusOK, g.g.Drawable(&graph.DrawableOptions{XRay: depth}))
	return nil
}

func (s *Server) assistantSchemas(w http.ResponseWriter, r *http.Request) error {
	a, g, err := s.pathAssistantGraph(r)
	if err != nil {
		return err
	}
	sc, err := g.g.Schemas()
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{
		"graph_id": a.GraphID, "input_schema": sc.Input, "output_schema": sc.Output, "state_schema": sc.State,
	})
	return nil
}

// assistantSubgraphs answers GET /assistants/{id}/subgraphs[/{namespace}]
// (?recurse): the schemas of the graph's subgraphs (graph.Subgraphs), by
// namespace ("node", "node|child" with recurse), each as GET
// /assistants/{id}/schemas gives the graph's own. A namespace with no
// subgraph answers an empty map, as LangGraph's servers do.
func (s *Server) assistantSubgraphs(w http.ResponseWriter, r *http.Request) error {
	a, g, err := s.pathAssistantGraph(r)
	if err != nil {
		return err
	}
	out := map[string]any{}
	for ns, sg := range g.g.Subgraphs(r.PathValue("namespace"), queryBool(r, "recurse")) {
		sc, err := sg.Schemas()
		if err != nil {
			return fmt.Errorf("the schemas of subgraph %s: %w", ns, err)
		}
		out[ns] = map[string]any{"graph_id": a.GraphID, "input_schema": sc.Input, "output_schema": sc.Output, "state_schema": sc.State}
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) assistantVersions(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Metadata map[string]any `json:"metadata"`
		Limit    *int           `json:"limit"`
		Offset   *int           `json:"offset"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	limit, offset, err := page(req.Limit, req.Offset)
	if err != nil {
		return err
	}
	id := s.assistantRef(r.PathValue("assistant_id"))
	if _, err := uuid.Parse(id); err != nil {
		return assistantNotFound()
	}
	vs, err := s.rec.AssistantVersions(r.Context(), user(r), id, req.Metadata, limit, offset)
	if err != nil {
		return recordErr(err, assistantNotFound())
	}
	out := make([]assistantJSON, len(vs))
	for i, v := range vs {
		out[i] = assistantOut(v)
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) setLatestVersion(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Version *int `json:"version"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if req.Version == nil {
		return api.Invalid(api.TypeIssue("number", "undefined", "version"))
	}
	id := s.assistantRef(r.PathValue("assistant_id"))
	if _, err := uuid.Parse(id); err != nil {
		return assistantNotFound()
	}
	defer s.assistants.forget(id)
	a, err := s.rec.SetLatestVersion(r.Context(), user(r), id, *req.Version)
	if err != nil {
		return recordErr(err, api.NotFound("Assistant version not found"))
	}
	api.WriteJSON(w, http.StatusOK, assistantOut(a))
	return nil
}
