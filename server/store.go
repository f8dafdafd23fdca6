package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/auth"
	"github.com/weftlabs/weft/store"
)

// storeTimeout bounds a long-term store call made for a request.
const storeTimeout = 10 * time.Second

type itemJSON struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	CreatedAt apiTime         `json:"created_at"`
	UpdatedAt apiTime         `json:"updated_at"`
	Score     *float64        `json:"score,omitempty"`
}

func itemOut(u string, it store.Item) itemJSON {
	return itemJSON{
		Namespace: auth.StripNamespace(u, it.Namespace), Key: it.Key, Value: it.Value,
		CreatedAt: apiTime(it.CreatedAt), UpdatedAt: apiTime(it.UpdatedAt), Score: it.Score,
	}
}

// checkNamespace answers a namespace the store cannot hold: empty (when
// required), or with an empty label or one with a '.'.
func checkNamespace(ns []string, field string, required bool) error {
	if len(ns) == 0 {
		if required {
			return api.Invalid(api.Field("Namespace is required", field))
		}
		return nil
	}
	for _, l := range ns {
		if l == "" || strings.Contains(l, ".") {
			return api.Unprocessable("Namespace labels cannot be empty or contain periods. Received: %s", strings.Join(ns, "."))
		}
	}
	return nil
}

// storeErr maps the store's errors: bad input is a 400 naming it.
func storeErr(err error, field string) error {
	if errors.Is(err, store.ErrInvalid) {
		return api.Invalid(api.Field(err.Error(), field))
	}
	return err
}

func refresh(v *bool) store.Refresh {
	switch {
	case v == nil:
		return store.RefreshDefault
	case *v:
		return store.RefreshOn
	}
	return store.RefreshOff
}

func (s *Server) putItem(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Namespace []string        `json:"namespace"`
		Key       *string         `json:"key"`
		Value     json.RawMessage `json:"value"`
		Index     json.RawMessage `json:"index"`
		TTL       *float64        `json:"ttl"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if err := checkNamespace(req.Namespace, "namespace", true); err != nil {
		return err
	}
	if req.Key == nil {
		return api.Invalid(api.TypeIssue("string", "undefined", "key"))
	}
	if len(req.Value) == 0 || req.Value[0] != '{' {
		return api.Invalid(api.TypeIssue("object", kindOf(req.Value), "value"))
	}
	var opts store.PutOptions
	switch {
	case len(req.Index) == 0 || string(req.Index) == "null" || string(req.Index) == "true":
	case string(req.Index) == "false":
		opts.NoIndex = true
	default:
		if err := json.Unmarshal(req.Index, &opts.Index); err != nil {
			return api.Invalid(api.Field("Expected false or a list of field paths", "index"))
		}
	}
	if req.TTL != nil {
		opts.TTL = time.Duration(*req.TTL * float64(time.Minute))
		if *req.TTL <= 0 {
			opts.TTL = store.NoTTL
		}
	}
	u := user(r)
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	if err := s.store.Put(ctx, auth.Namespace(u, req.Namespace), *req.Key, req.Value, opts); err != nil {
		return storeErr(err, "value")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	key := q.Get("key")
	if !q.Has("key") {
		return api.Invalid(api.TypeIssue("string", "undefined", "key"))
	}
	var ns []string
	if v := q.Get("namespace"); v != "" {
		ns = strings.Split(v, ".")
	}
	if err := checkNamespace(ns, "namespace", true); err != nil {
		return err
	}
	var rt *bool
	if q.Has("refresh_ttl") {
		b := queryBool(r, "refresh_ttl")
		rt = &b
	}
	u := user(r)
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	it, err := s.store.Get(ctx, auth.Namespace(u, ns), key, store.GetOptions{RefreshTTL: refresh(rt)})
	if err != nil {
		return storeErr(err, "namespace")
	}
	if it == nil {
		api.WriteJSON(w, http.StatusOK, nil)
		return nil
	}
	api.WriteJSON(w, http.StatusOK, itemOut(u, *it))
	return nil
}

func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Namespace []string `json:"namespace"`
		Key       *string  `json:"key"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if err := checkNamespace(req.Namespace, "namespace", true); err != nil {
		return err
	}
	if req.Key == nil {
		return api.Invalid(api.TypeIssue("string", "undefined", "key"))
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	if err := s.store.Delete(ctx, auth.Namespace(user(r), req.Namespace), *req.Key); err != nil {
		return storeErr(err, "namespace")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) searchItems(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		NamespacePrefix []string       `json:"namespace_prefix"`
		Filter          map[string]any `json:"filter"`
		Limit           *int           `json:"limit"`
		Offset          *int           `json:"offset"`
		Query           string         `json:"query"`
		RefreshTTL      *bool          `json:"refresh_ttl"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	if err := checkNamespace(req.NamespacePrefix, "namespace_prefix", false); err != nil {
		return err
	}
	limit, offset, err := page(req.Limit, req.Offset)
	if err != nil {
		return err
	}
	u := user(r)
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	opts := store.SearchOptions{Query: req.Query, Filter: req.Filter, Limit: limit, Offset: offset, RefreshTTL: refresh(req.RefreshTTL)}
	items, err := s.store.Search(ctx, auth.Namespace(u, req.NamespacePrefix), opts)
	if errors.Is(err, store.ErrNoIndex) {
		// A store without a vector index cannot rank by a query: as in
		// LangGraph, the query is ignored and the filter still applies.
		opts.Query = ""
		items, err = s.store.Search(ctx, auth.Namespace(u, req.NamespacePrefix), opts)
	}
	if err != nil {
		return storeErr(err, "filter")
	}
	out := make([]itemJSON, len(items))
	for i, it := range items {
		out[i] = itemOut(u, it)
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"items": out})
	return nil
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Prefix   []string `json:"prefix"`
		Suffix   []string `json:"suffix"`
		MaxDepth *int     `json:"max_depth"`
		Limit    *int     `json:"limit"`
		Offset   *int     `json:"offset"`
	}
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		ns   []string
		name string
	}{{req.Prefix, "prefix"}, {req.Suffix, "suffix"}} {
		if err := checkNamespace(f.ns, f.name, false); err != nil {
			return err
		}
	}
	limit, offset := 100, 0
	if req.Limit != nil {
		if *req.Limit < 1 {
			return api.Invalid(api.Field("Number must be greater than or equal to 1", "limit"))
		}
		limit = *req.Limit
	}
	if req.Offset != nil {
		if *req.Offset < 0 {
			return api.Invalid(api.Field("Number must be greater than or equal to 0", "offset"))
		}
		offset = *req.Offset
	}
	u := user(r)
	opts := store.ListNamespacesOptions{Prefix: auth.Namespace(u, req.Prefix), Suffix: req.Suffix, Limit: limit, Offset: offset}
	if req.MaxDepth != nil {
		if *req.MaxDepth < 1 {
			return api.Invalid(api.Field("Number must be greater than or equal to 1", "max_depth"))
		}
		opts.MaxDepth = *req.MaxDepth
		if u != "" {
			opts.MaxDepth++ // the user's own first label
		}
	}
	if u != "" && len(opts.Prefix) == 0 {
		opts.Prefix = auth.Namespace(u, nil)
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	nss, err := s.store.ListNamespaces(ctx, opts)
	if err != nil {
		return storeErr(err, "prefix")
	}
	out := make([][]string, 0, len(nss))
	for _, ns := range nss {
		if stripped := auth.StripNamespace(u, ns); len(stripped) > 0 {
			out = append(out, stripped)
		}
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"namespaces": out})
	return nil
}
