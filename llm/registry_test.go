package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

func TestParseModelName(t *testing.T) {
	for _, tc := range []struct{ name, provider, model, err string }{
		{"openai:gpt-4o-mini", "openai", "gpt-4o-mini", ""},
		{"ollama:qwen2.5:7b", "ollama", "qwen2.5:7b", ""},
		{"scripted:examples/career/demo.yaml", "scripted", "examples/career/demo.yaml", ""},
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ""},
		{"gpt-4o", "openai", "gpt-4o", ""},
		{"o3-mini", "openai", "o3-mini", ""},
		{"claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest", ""},
		{"qwen2.5:7b", "", "", "ollama:qwen2.5:7b"},
		{"openai:", "", "", "no model after the provider"},
		{"", "", "", "empty model name"},
	} {
		p, m, err := llm.ParseModelName(tc.name)
		if tc.err != "" {
			if !errors.Is(err, llm.ErrUnknownProvider) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseModelName(%q) error = %v, want one saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || p != tc.provider || m != tc.model {
			t.Errorf("ParseModelName(%q) = %q, %q, %v; want %q, %q", tc.name, p, m, err, tc.provider, tc.model)
		}
	}
}

func TestRegistry(t *testing.T) {
	var r llm.Registry
	r.Getenv = func(k string) string { return map[string]string{"FAKE_KEY": "k"}[k] }
	var gotModel, gotKey string
	r.Register("fake", func(_ context.Context, model string, getenv func(string) string) (llm.ChatModel, error) {
		gotModel, gotKey = model, getenv("FAKE_KEY")
		return scripted.New(), nil
	})
	r.Register("broken", func(context.Context, string, func(string) string) (llm.ChatModel, error) {
		return nil, &llm.ConfigError{Provider: "broken", Setting: "API key", EnvVar: "BROKEN_API_KEY"}
	})
	if _, err := r.Open(context.Background(), "fake:a:b"); err != nil || gotModel != "a:b" || gotKey != "k" {
		t.Errorf("Open = %v; model %q key %q", err, gotModel, gotKey)
	}
	_, err := r.Open(context.Background(), "nope:x")
	if !errors.Is(err, llm.ErrUnknownProvider) || !strings.Contains(err.Error(), "known: broken, fake") {
		t.Errorf("unknown provider: %v", err)
	}
	_, err = r.Open(context.Background(), "broken:x")
	var ce *llm.ConfigError
	if !errors.Is(err, llm.ErrMissingConfig) || !errors.As(err, &ce) || ce.EnvVar != "BROKEN_API_KEY" || !strings.Contains(err.Error(), "set BROKEN_API_KEY") {
		t.Errorf("missing config: %v", err)
	}
}
