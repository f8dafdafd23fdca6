package providers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/anthropic"
	"github.com/weftlabs/weft/llm/openai"
	"github.com/weftlabs/weft/llm/providers"
	"github.com/weftlabs/weft/llm/scripted"
)

func registry(kv ...string) *llm.Registry {
	r := providers.NewRegistry()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	r.Getenv = func(k string) string { return m[k] }
	return r
}

func TestOpenEachProvider(t *testing.T) {
	ctx := context.Background()
	script := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(script, []byte("- content: hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := registry("OPENAI_API_KEY", "sk-test", "ANTHROPIC_API_KEY", "ak-test",
		"AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com", "AZURE_OPENAI_API_KEY", "az")
	for name, check := range map[string]func(llm.ChatModel) bool{
		"openai:gpt-4o-mini":          func(m llm.ChatModel) bool { _, ok := m.(*openai.Model); return ok },
		"gpt-4o":                      func(m llm.ChatModel) bool { _, ok := m.(*openai.Model); return ok },
		"ollama:qwen2.5:7b":           func(m llm.ChatModel) bool { _, ok := m.(*openai.Model); return ok },
		"azure:gpt4o-prod":            func(m llm.ChatModel) bool { _, ok := m.(*openai.Model); return ok },
		"anthropic:claude-sonnet-4-5": func(m llm.ChatModel) bool { _, ok := m.(*anthropic.Model); return ok },
		"scripted:" + script:          func(m llm.ChatModel) bool { _, ok := m.(*scripted.Model); return ok },
	} {
		m, err := r.Open(ctx, name)
		if err != nil || !check(m) {
			t.Errorf("Open(%q) = %T, %v", name, m, err)
		}
	}

	// The scripted model opened by name plays its script offline.
	m, _ := r.Open(ctx, "scripted:"+script)
	got, err := llm.Collect(m.Stream(ctx, []llm.Message{llm.Human("hi")}))
	if err != nil || got.Text() != "hello" {
		t.Errorf("scripted stream = %q, %v", got.Text(), err)
	}
}

func TestOpenNamesWhatToSet(t *testing.T) {
	ctx := context.Background()
	for name, envVar := range map[string]string{
		"openai:gpt-4o-mini":          "OPENAI_API_KEY",
		"anthropic:claude-sonnet-4-5": "ANTHROPIC_API_KEY",
		"azure:dep":                   "AZURE_OPENAI_ENDPOINT",
	} {
		_, err := registry().Open(ctx, name)
		var ce *llm.ConfigError
		if !errors.As(err, &ce) || ce.EnvVar != envVar || !strings.Contains(err.Error(), "set "+envVar) || !strings.Contains(err.Error(), name) {
			t.Errorf("Open(%q) err = %v, want one naming %s", name, err, envVar)
		}
	}
	_, err := registry().Open(ctx, "scripted:does/not/exist.yaml")
	if err == nil || !strings.Contains(err.Error(), "does/not/exist.yaml") {
		t.Errorf("missing script: %v", err)
	}
	_, err = registry().Open(ctx, "mistral:large")
	if !errors.Is(err, llm.ErrUnknownProvider) || !strings.Contains(err.Error(), "anthropic, azure, ollama, openai, scripted") {
		t.Errorf("unknown provider: %v", err)
	}
}
