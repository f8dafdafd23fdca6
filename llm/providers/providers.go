// Package providers wires weft's model providers into an llm.Registry, so
// a model can be named by a string:
//
//	openai:gpt-4o-mini          OPENAI_API_KEY, OPENAI_BASE_URL
//	anthropic:claude-sonnet-4-5 ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
//	ollama:qwen2.5:7b           OLLAMA_HOST (default http://localhost:11434)
//	azure:DEPLOYMENT            AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY
//	scripted:path/to/script.yaml
//
// It is a separate package so that llm itself imports no provider.
package providers

import (
	"context"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/anthropic"
	"github.com/weftlabs/weft/llm/openai"
	"github.com/weftlabs/weft/llm/scripted"
)

// NewRegistry returns a registry with every provider of weft. Register
// more on it, or set its Getenv to read configuration elsewhere.
func NewRegistry() *llm.Registry {
	r := &llm.Registry{}
	r.Register("openai", openai.Open)
	r.Register("ollama", openai.OpenOllama)
	r.Register("azure", openai.OpenAzure)
	r.Register("anthropic", anthropic.Open)
	r.Register("scripted", scripted.Open)
	return r
}

// Open opens the model name names, configured by the environment.
func Open(ctx context.Context, name string) (llm.ChatModel, error) {
	return NewRegistry().Open(ctx, name)
}
