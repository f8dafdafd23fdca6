package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/openai"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestOpenMissingConfig(t *testing.T) {
	for _, tc := range []struct {
		open   func() error
		envVar string
	}{
		{func() error { _, err := openai.Open(ctx, "gpt-4o-mini", env()); return err }, "OPENAI_API_KEY"},
		{func() error { _, err := openai.New(openai.Options{Model: "gpt-4o-mini"}); return err }, "OPENAI_API_KEY"},
		{func() error { _, err := openai.OpenAzure(ctx, "dep", env("AZURE_OPENAI_API_KEY", "k")); return err }, "AZURE_OPENAI_ENDPOINT"},
		{func() error {
			_, err := openai.OpenAzure(ctx, "dep", env("AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com"))
			return err
		}, "AZURE_OPENAI_API_KEY"},
	} {
		err := tc.open()
		var ce *llm.ConfigError
		if !errors.Is(err, llm.ErrMissingConfig) || !errors.As(err, &ce) || ce.EnvVar != tc.envVar || !strings.Contains(err.Error(), "set "+tc.envVar) {
			t.Errorf("err = %v, want one naming %s", err, tc.envVar)
		}
	}
	// A server of one's own needs no key.
	if _, err := openai.Open(ctx, "llama", env("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")); err != nil {
		t.Errorf("OPENAI_BASE_URL without a key: %v", err)
	}
}

func TestOllamaBaseURL(t *testing.T) {
	for host, want := range map[string]string{
		"":                        "http://localhost:11434/v1",
		"127.0.0.1":               "http://127.0.0.1:11434/v1",
		"0.0.0.0:8080":            "http://0.0.0.0:8080/v1",
		"http://gpu-box":          "http://gpu-box/v1",
		"https://ollama.example/": "https://ollama.example/v1",
		"[::1]":                   "http://[::1]:11434/v1",
	} {
		got, err := openai.OllamaBaseURL(host)
		if err != nil || got != want {
			t.Errorf("OllamaBaseURL(%q) = %q, %v; want %q", host, got, err, want)
		}
	}
	if _, err := openai.OllamaBaseURL("http://"); err == nil || !strings.Contains(err.Error(), "OLLAMA_HOST") {
		t.Errorf("bad host: %v", err)
	}
}

func TestOllamaAndAzureOverTheWire(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, plainJSON))
	m, err := openai.OpenOllama(ctx, "qwen2.5:7b", env("OLLAMA_HOST", s.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(ctx, []llm.Message{llm.Human("hi")}, llm.CallOptions{MaxTokens: 64}); err != nil {
		t.Fatal(err)
	}
	req := s.Requests()[0]
	if req.Path != "/v1/chat/completions" || req.Body["model"] != "qwen2.5:7b" || req.Body["max_tokens"] != 64.0 {
		t.Errorf("ollama request: %s %v", req.Path, req.Body)
	}

	s = wiretest.New(t, wiretest.JSON(404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`))
	m, err = openai.OpenAzure(ctx, "gpt4o-prod", env("AZURE_OPENAI_ENDPOINT", s.URL+"/", "AZURE_OPENAI_API_KEY", "az-key"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(ctx, []llm.Message{llm.Human("hi")})
	var ae *llm.APIError
	if !errors.Is(err, llm.ErrNotFound) || !errors.As(err, &ae) || ae.Provider != "azure" || ae.Type != "DeploymentNotFound" {
		t.Errorf("azure err = %v", err)
	}
	req = s.Requests()[0]
	if req.Path != "/openai/v1/chat/completions" || req.Header.Get("Api-Key") != "az-key" || req.Header.Get("Authorization") != "Bearer az-key" {
		t.Errorf("azure request: %s %v", req.Path, req.Header)
	}
}
