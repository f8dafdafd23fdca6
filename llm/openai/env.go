package openai

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// Open opens an OpenAI model configured by the environment: OPENAI_API_KEY,
// and OPENAI_BASE_URL for another server that speaks the API (vLLM, LM
// Studio, a proxy). It is the llm.OpenFunc of the "openai" provider.
func Open(_ context.Context, model string, getenv func(string) string) (llm.ChatModel, error) {
	key, base := getenv("OPENAI_API_KEY"), getenv("OPENAI_BASE_URL")
	if key == "" && base == "" {
		return nil, &llm.ConfigError{Provider: "openai", Setting: "API key", EnvVar: "OPENAI_API_KEY"}
	}
	return New(Options{Model: model, APIKey: key, BaseURL: base})
}

// OpenOllama opens a model served by Ollama, through its OpenAI-compatible
// API at $OLLAMA_HOST/v1 (default http://localhost:11434). It is the
// llm.OpenFunc of the "ollama" provider.
func OpenOllama(_ context.Context, model string, getenv func(string) string) (llm.ChatModel, error) {
	base, err := OllamaBaseURL(getenv("OLLAMA_HOST"))
	if err != nil {
		return nil, err
	}
	return New(Options{Model: model, BaseURL: base, Provider: "ollama", APIKey: "ollama", LegacyMaxTokens: true})
}

// OllamaBaseURL returns the OpenAI-compatible API root of the Ollama
// server named as OLLAMA_HOST names it: "host", "host:port" or a URL. As in
// Ollama's own client, a bare host gets port 11434, and a URL its scheme's
// port.
func OllamaBaseURL(host string) (string, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		return "http://localhost:11434/v1", nil
	}
	if !strings.Contains(host, "://") {
		h := host
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "11434")
		}
		host = "http://" + h
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("ollama: OLLAMA_HOST %q is not a host or URL (want host, host:port or http://host:port)", host)
	}
	return strings.TrimSuffix(u.String(), "/") + "/v1", nil
}

// OpenAzure opens an Azure OpenAI deployment through Azure's v1 API, which
// speaks OpenAI's: AZURE_OPENAI_ENDPOINT (https://RESOURCE.openai.azure.com)
// and AZURE_OPENAI_API_KEY. model is the deployment's name. It is the
// llm.OpenFunc of the "azure" provider.
func OpenAzure(_ context.Context, model string, getenv func(string) string) (llm.ChatModel, error) {
	endpoint, key := getenv("AZURE_OPENAI_ENDPOINT"), getenv("AZURE_OPENAI_API_KEY")
	if endpoint == "" {
		return nil, &llm.ConfigError{Provider: "azure", Setting: "endpoint", EnvVar: "AZURE_OPENAI_ENDPOINT"}
	}
	if key == "" {
		return nil, &llm.ConfigError{Provider: "azure", Setting: "API key", EnvVar: "AZURE_OPENAI_API_KEY"}
	}
	base := strings.TrimSuffix(endpoint, "/")
	if !strings.HasSuffix(base, "/openai/v1") {
		base += "/openai/v1"
	}
	return New(Options{
		Model: model, APIKey: key, BaseURL: base + "/", Provider: "azure",
		Headers: map[string]string{"api-key": key},
	})
}
