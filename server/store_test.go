package server_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/store"
)

func TestStore(t *testing.T) {
	s := newServer(t, server.Options{})
	ns := []string{"check", "u1"}
	s.must(204, "PUT", "/store/items", map[string]any{"namespace": ns, "key": "k1", "value": map[string]any{"color": "red", "n": 1}})
	s.must(204, "PUT", "/store/items", map[string]any{"namespace": ns, "key": "k2", "value": map[string]any{"color": "blue", "n": 2}})
	s.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"check", "u1", "sub"}, "key": "k3", "value": map[string]any{"color": "red", "n": 3}})
	it := s.must(200, "GET", "/store/items?namespace=check.u1&key=k1", nil).obj(t)
	if diff := cmp.Diff(map[string]any{"color": "red", "n": 1.0}, it["value"]); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
	if it["key"] != "k1" || it["created_at"] == nil || it["updated_at"] == nil {
		t.Errorf("item = %v", it)
	}
	if diff := cmp.Diff([]any{"check", "u1"}, it["namespace"]); diff != "" {
		t.Errorf("namespace (-want +got):\n%s", diff)
	}
	if r := s.must(200, "GET", "/store/items?namespace=check.u1&key=nope", nil); strings.TrimSpace(string(r.body)) != "null" {
		t.Errorf("missing item = %s", r.body)
	}
	keys := func(r response) []string {
		var res struct {
			Items []map[string]any `json:"items"`
		}
		r.json(t, &res)
		out := []string{}
		for _, it := range res.Items {
			out = append(out, it["key"].(string))
		}
		return out
	}
	all := keys(s.must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": ns, "limit": 10}))
	if len(all) != 3 {
		t.Errorf("search = %v", all)
	}
	red := keys(s.must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": ns, "filter": map[string]any{"color": "red"}}))
	if len(red) != 2 {
		t.Errorf("filtered search = %v", red)
	}
	if one := keys(s.must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": ns, "limit": 1})); len(one) != 1 {
		t.Errorf("limit 1 = %v", one)
	}
	var nss struct {
		Namespaces [][]string `json:"namespaces"`
	}
	s.must(200, "POST", "/store/namespaces", map[string]any{"prefix": ns}).json(t, &nss)
	if diff := cmp.Diff([][]string{{"check", "u1"}, {"check", "u1", "sub"}}, nss.Namespaces); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	s.must(200, "POST", "/store/namespaces", map[string]any{"prefix": ns, "max_depth": 2}).json(t, &nss)
	if diff := cmp.Diff([][]string{{"check", "u1"}}, nss.Namespaces); diff != "" {
		t.Errorf("max_depth 2 (-want +got):\n%s", diff)
	}
	s.must(200, "POST", "/store/namespaces", map[string]any{"suffix": []string{"sub"}}).json(t, &nss)
	if diff := cmp.Diff([][]string{{"check", "u1", "sub"}}, nss.Namespaces); diff != "" {
		t.Errorf("suffix (-want +got):\n%s", diff)
	}
	s.must(204, "DELETE", "/store/items", map[string]any{"namespace": ns, "key": "k1"})
	if r := s.must(200, "GET", "/store/items?namespace=check.u1&key=k1", nil); strings.TrimSpace(string(r.body)) != "null" {
		t.Errorf("deleted item = %s", r.body)
	}
	s.must(204, "PUT", "/store/items", map[string]any{"namespace": ns, "key": "k2", "value": map[string]any{"color": "green"}})
	if it := s.must(200, "GET", "/store/items?namespace=check.u1&key=k2", nil).obj(t); it["value"].(map[string]any)["color"] != "green" {
		t.Errorf("overwritten item = %v", it)
	}
	r := s.must(422, "PUT", "/store/items", map[string]any{"namespace": []string{"a.b"}, "key": "x", "value": map[string]any{}})
	if string(r.body) != "Namespace labels cannot be empty or contain periods. Received: a.b" {
		t.Errorf("422 body = %q", r.body)
	}
	for _, bad := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/store/items", map[string]any{"key": "x", "value": map[string]any{}}},
		{"PUT", "/store/items", map[string]any{"namespace": ns, "value": map[string]any{}}},
		{"PUT", "/store/items", map[string]any{"namespace": ns, "key": "x", "value": 5}},
		{"PUT", "/store/items", map[string]any{"namespace": ns, "key": "x", "value": map[string]any{}, "index": 3}},
		{"GET", "/store/items?namespace=check.u1", nil},
		{"DELETE", "/store/items", map[string]any{"namespace": ns}},
		{"POST", "/store/items/search", map[string]any{"limit": 0}},
		{"POST", "/store/items/search", map[string]any{"filter": map[string]any{"n": map[string]any{"$bogus": 1}}}},
		{"POST", "/store/namespaces", map[string]any{"max_depth": 0}},
	} {
		if r := s.do(bad.method, bad.path, bad.body); r.status != 400 {
			t.Errorf("%s %s %v: %d %s", bad.method, bad.path, bad.body, r.status, r.body)
		}
	}
}

// The server's own store ranks a search by its query; a store without an
// index ignores the query and keeps the filter.
func TestStoreQuery(t *testing.T) {
	s := newServer(t, server.Options{})
	for k, v := range map[string]string{"a": "window seat on long flights", "b": "vegetarian meals", "c": "aisle seat"} {
		s.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"prefs"}, "key": k, "value": map[string]any{"text": v}})
	}
	var res struct {
		Items []map[string]any `json:"items"`
	}
	s.must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"prefs"}, "query": "vegetarian food", "limit": 1}).json(t, &res)
	if len(res.Items) != 1 || res.Items[0]["key"] != "b" || res.Items[0]["score"] == nil {
		t.Errorf("query search = %v", res.Items)
	}
	plain, err := store.NewMemory(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s2 := newServer(t, server.Options{Store: plain})
	s2.must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"p"}, "key": "k", "value": map[string]any{"x": 1}})
	s2.must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"p"}, "query": "anything"}).json(t, &res)
	if len(res.Items) != 1 {
		t.Errorf("query on a store without an index = %v", res.Items)
	}
}
