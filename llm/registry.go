package llm

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
)

// OpenFunc opens a model of one provider. model is the name without the
// provider's prefix ("gpt-4o-mini" of "openai:gpt-4o-mini"); getenv looks
// up the provider's configuration (API keys, endpoints).
type OpenFunc func(ctx context.Context, model string, getenv func(string) string) (ChatModel, error)

// Registry opens models by name: "PROVIDER:MODEL", such as
// "openai:gpt-4o-mini" or "ollama:qwen2.5:7b" (the model part may itself
// hold colons). The package llm/providers returns one with every provider
// of weft registered.
type Registry struct {
	// Getenv looks up configuration; nil means os.Getenv.
	Getenv    func(string) string
	providers map[string]OpenFunc
}

// Register makes a provider available under a prefix, replacing any
// provider registered under it before.
func (r *Registry) Register(provider string, open OpenFunc) {
	if r.providers == nil {
		r.providers = map[string]OpenFunc{}
	}
	r.providers[provider] = open
}

// Providers returns the registered prefixes, sorted.
func (r *Registry) Providers() []string {
	names := make([]string, 0, len(r.providers))
	for name := range r.providers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Open opens the model name names. A name without a provider prefix is
// taken as OpenAI's when it starts as OpenAI's models do ("gpt-", "o1",
// "o3", "o4"), and as Anthropic's when it starts with "claude".
func (r *Registry) Open(ctx context.Context, name string) (ChatModel, error) {
	provider, model, err := ParseModelName(name)
	if err != nil {
		return nil, err
	}
	open, ok := r.providers[provider]
	if !ok {
		return nil, fmt.Errorf("%w %q in model name %q (known: %s)", ErrUnknownProvider, provider, name, strings.Join(r.Providers(), ", "))
	}
	getenv := r.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	m, err := open(ctx, model, getenv)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", name, err)
	}
	return m, nil
}

// ParseModelName splits "PROVIDER:MODEL" at its first colon, inferring the
// provider of a bare OpenAI or Anthropic model name.
func ParseModelName(name string) (provider, model string, err error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", "", fmt.Errorf("%w: empty model name (want PROVIDER:MODEL, such as openai:gpt-4o-mini)", ErrUnknownProvider)
	}
	if p, m, ok := strings.Cut(name, ":"); ok && !strings.ContainsAny(p, "./") {
		if m == "" {
			return "", "", fmt.Errorf("%w: model name %q has no model after the provider", ErrUnknownProvider, name)
		}
		return p, m, nil
	}
	for _, prefix := range []string{"gpt-", "chatgpt-", "o1", "o3", "o4"} {
		if strings.HasPrefix(name, prefix) {
			return "openai", name, nil
		}
	}
	if strings.HasPrefix(name, "claude") {
		return "anthropic", name, nil
	}
	return "", "", fmt.Errorf("%w: model name %q has no provider (want PROVIDER:MODEL, such as openai:gpt-4o-mini or ollama:%s)", ErrUnknownProvider, name, name)
}
