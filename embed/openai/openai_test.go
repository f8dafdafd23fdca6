package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/embed/openai"
)

// fakeServer speaks the /v1/embeddings wire format: it embeds each input as
// [len(text), index-in-request, 1, ...] and records requests.
type fakeServer struct {
	mu       sync.Mutex
	requests []map[string]any
	dims     int
	reverse  bool // return data in reverse order (the API gives an index)
	status   int
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.NotFound(w, r)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	status := f.status
	f.mu.Unlock()
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"error":{"message":"model not found","type":"invalid_request_error"}}`))
		return
	}
	inputs, _ := req["input"].([]any)
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	var data []datum
	for i, in := range inputs {
		v := make([]float64, f.dims)
		v[0], v[1] = float64(len(in.(string))), float64(i)
		for j := 2; j < f.dims; j++ {
			v[j] = 1
		}
		data = append(data, datum{"embedding", i, v})
	}
	if f.reverse {
		slices.Reverse(data)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req["model"],
		"usage": map[string]any{"prompt_tokens": 3, "total_tokens": 3},
	})
}

func newEmbedder(t *testing.T, f *fakeServer, cfg openai.Config) *openai.Embedder {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1"
	cfg.APIKey = "test-key"
	cfg.MaxRetries = -1
	e, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEmbedDocumentsBatchesInOrder(t *testing.T) {
	f := &fakeServer{dims: 4, reverse: true}
	e := newEmbedder(t, f, openai.Config{Model: "nomic-embed-text", Dims: 4, BatchSize: 2})
	var _ embed.Embedder = e
	texts := []string{"a", "bb", "ccc", "", "eeeee"}
	vecs, err := e.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		wantLen := float32(len(texts[i]))
		if texts[i] == "" {
			wantLen = 1 // sent as " "
		}
		if v[0] != wantLen || v[1] != float32(i%2) {
			t.Errorf("vector %d = %v: out of order or wrong", i, v)
		}
	}
	if len(f.requests) != 3 {
		t.Fatalf("made %d requests for 5 texts in batches of 2, want 3", len(f.requests))
	}
	for _, r := range f.requests {
		if r["model"] != "nomic-embed-text" || r["encoding_format"] != "float" {
			t.Errorf("request = %v, want model nomic-embed-text and float encoding", r)
		}
		if _, ok := r["dimensions"]; ok {
			t.Errorf("request sent dimensions without SendDimensions: %v", r)
		}
	}
}

func TestEmbedQueryAndDimensions(t *testing.T) {
	f := &fakeServer{dims: 8}
	e := newEmbedder(t, f, openai.Config{Model: "text-embedding-3-small", Dims: 8, SendDimensions: true})
	v, err := e.EmbedQuery(context.Background(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 8 || v[0] != 5 || e.Dims() != 8 {
		t.Errorf("EmbedQuery = %v (Dims %d)", v, e.Dims())
	}
	if got := f.requests[0]["dimensions"]; got != 8.0 {
		t.Errorf("dimensions sent = %v, want 8", got)
	}
}

func TestWrongDimensionsIsAnError(t *testing.T) {
	f := &fakeServer{dims: 3}
	e := newEmbedder(t, f, openai.Config{Model: "m", Dims: 4})
	_, err := e.EmbedDocuments(context.Background(), []string{"x"})
	if !errors.Is(err, embed.ErrDimensions) {
		t.Errorf("server vectors of 3 dims for a 4-dim embedder: err = %v, want ErrDimensions", err)
	}
}

func TestServerErrorIsReturned(t *testing.T) {
	f := &fakeServer{dims: 4, status: http.StatusNotFound}
	e := newEmbedder(t, f, openai.Config{Model: "missing", Dims: 4})
	if _, err := e.EmbedQuery(context.Background(), "x"); err == nil {
		t.Error("a 404 from the server gave no error")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []openai.Config{{Dims: 4}, {Model: "m"}, {Model: "m", Dims: -1}} {
		if _, err := openai.New(cfg); !errors.Is(err, openai.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}
