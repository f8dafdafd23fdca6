package service_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/examples/guide/service"
)

func TestSearXNG(t *testing.T) {
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		asked = r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"query":"x","results":[
			{"title":" Shorts tips ","url":"https://a.example/1","content":"Keep it under 60 s.","engine":"x"},
			{"title":"no url","url":"","content":"dropped"},
			{"title":"Second","url":"https://b.example/2","content":"Captions matter."},
			{"title":"Third","url":"https://c.example/3","content":"Music rights."}]}`))
	}))
	defer srv.Close()
	got, err := service.SearXNG{URL: srv.URL + "/"}.Search(t.Context(), "유튜브 쇼츠 팁", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []service.WebResult{
		{Title: "Shorts tips", URL: "https://a.example/1", Snippet: "Keep it under 60 s."},
		{Title: "Second", URL: "https://b.example/2", Snippet: "Captions matter."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if asked != "유튜브 쇼츠 팁" {
		t.Errorf("query sent = %q", asked)
	}
}

func TestSearXNGFailures(t *testing.T) {
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "format disabled", http.StatusForbidden)
	}))
	defer forbidden.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>captcha</html>"))
	}))
	defer html.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, tt := range []struct{ url, want string }{
		{forbidden.URL, "json format"},
		{html.URL, "did not answer with SearXNG's JSON"},
		{down.URL, "web search failed"},
		{"ftp://example.com", "not an http(s) URL"},
		{"", "not an http(s) URL"},
	} {
		_, err := service.SearXNG{URL: tt.url}.Search(t.Context(), "q", 3)
		if !errors.Is(err, service.ErrSearch) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Search at %q: error = %v, want ErrSearch saying %q", tt.url, err, tt.want)
		}
	}
}
