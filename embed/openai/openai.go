// Package openai embeds text through an OpenAI-compatible /v1/embeddings
// endpoint using the official OpenAI Go SDK. Pointing BaseURL elsewhere makes
// it work with Azure OpenAI, Ollama (http://localhost:11434/v1), vLLM and
// other servers that speak the same wire format.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/weftlabs/weft/embed"
)

// DefaultBatchSize is how many texts go in one request when Config.BatchSize
// is zero. OpenAI accepts up to 2,048 inputs a request; smaller batches keep
// requests well under servers' body and token limits.
const DefaultBatchSize = 256

// ErrConfig means the Config cannot work (no model, no dimensions).
var ErrConfig = errors.New("embed/openai: invalid config")

// Config configures an [Embedder].
type Config struct {
	// Model is the embedding model, e.g. "text-embedding-3-small" or, on
	// Ollama, "nomic-embed-text". Required.
	Model string
	// Dims is the vector length the model returns. Required: the store needs
	// it before the first request. For models that can shorten their
	// vectors (text-embedding-3-*), set SendDimensions to ask for Dims.
	Dims int
	// SendDimensions sends Dims as the request's "dimensions" parameter.
	// Leave it false for servers and models that reject the parameter.
	SendDimensions bool
	// BaseURL is the API root, ending in /v1 (default: the SDK's default,
	// https://api.openai.com/v1, or OPENAI_BASE_URL).
	BaseURL string
	// APIKey is sent as a bearer token (default: OPENAI_API_KEY). Local
	// servers usually accept any value.
	APIKey string
	// BatchSize caps the texts sent in one request (default DefaultBatchSize).
	BatchSize int
	// MaxRetries is the SDK's retry count for failed requests (0: the
	// SDK's default of 2; negative: no retries).
	MaxRetries int
	// HTTPClient replaces the SDK's HTTP client (timeouts, proxies, tests).
	HTTPClient *http.Client
	// Options are passed to the SDK as they are, after the ones above.
	Options []option.RequestOption
}

// Embedder is an [embed.Embedder] backed by an OpenAI-compatible server.
// It is safe for concurrent use.
type Embedder struct {
	client oa.Client
	cfg    Config
}

var _ embed.Embedder = (*Embedder)(nil)

// New returns an Embedder for cfg. It makes no request.
func New(cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("%w: Model is required", ErrConfig)
	}
	if cfg.Dims <= 0 {
		return nil, fmt.Errorf("%w: Dims must be positive, got %d", ErrConfig, cfg.Dims)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	var opts []option.RequestOption
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.MaxRetries < 0 {
		opts = append(opts, option.WithMaxRetries(0))
	} else if cfg.MaxRetries > 0 {
		opts = append(opts, option.WithMaxRetries(cfg.MaxRetries))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	opts = append(opts, cfg.Options...)
	return &Embedder{client: oa.NewClient(opts...), cfg: cfg}, nil
}

// Dims returns the configured vector length.
func (e *Embedder) Dims() int { return e.cfg.Dims }

// EmbedQuery embeds one text.
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedDocuments embeds texts in batches of Config.BatchSize, one request
// per batch, in order. Empty texts are sent as a single space, since the
// API rejects empty input.
func (e *Embedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		end := min(start+e.cfg.BatchSize, len(texts))
		vecs, err := e.batch(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("embed/openai: texts %d..%d of %d: %w", start, end-1, len(texts), err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) batch(ctx context.Context, texts []string) ([][]float32, error) {
	input := make([]string, len(texts))
	for i, t := range texts {
		if t == "" {
			t = " "
		}
		input[i] = t
	}
	params := oa.EmbeddingNewParams{
		Model:          e.cfg.Model,
		Input:          oa.EmbeddingNewParamsInputUnion{OfArrayOfStrings: input},
		EncodingFormat: oa.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.cfg.SendDimensions {
		params.Dimensions = oa.Int(int64(e.cfg.Dims))
	}
	resp, err := e.client.Embeddings.New(ctx, params)
	if err != nil {
		return nil, err
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("server returned %d embeddings for %d inputs", len(resp.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("server returned a bad or repeated embedding index %d", d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		vecs[d.Index] = v
	}
	if err := embed.CheckDims(vecs, len(texts), e.cfg.Dims); err != nil {
		return nil, err
	}
	return vecs, nil
}
