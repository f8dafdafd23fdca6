// Package embed turns text into vectors for similarity search.
//
// [Embedder] is the interface the store and the retrievers use. Two
// implementations ship with weft: [Lexical], an offline embedder built from
// hashed word and character n-gram features that needs no model and no
// network (the default, so search works out of the box), and the
// OpenAI-compatible client in the embed/openai package, which works with
// OpenAI, Azure, Ollama, vLLM and any other server speaking /v1/embeddings.
package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Embedder turns text into vectors of a fixed length.
//
// Implementations must be safe for concurrent use. EmbedDocuments returns
// one vector per input text, in input order; every vector has Dims()
// elements.
type Embedder interface {
	// EmbedDocuments embeds texts that will be stored and searched.
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	// EmbedQuery embeds a search query. Some models embed queries and
	// documents differently; most treat them alike.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
	// Dims is the length of every vector this embedder returns.
	Dims() int
}

// ErrDimensions means an embedder returned a vector of the wrong length.
var ErrDimensions = errors.New("embed: vector has the wrong number of dimensions")

// CheckDims returns an error wrapping [ErrDimensions] unless every vector in
// vecs has exactly dims elements and there are want of them.
func CheckDims(vecs [][]float32, want, dims int) error {
	if len(vecs) != want {
		return fmt.Errorf("embed: got %d vectors for %d texts", len(vecs), want)
	}
	for i, v := range vecs {
		if len(v) != dims {
			return fmt.Errorf("%w: vector %d has %d dimensions, expected %d", ErrDimensions, i, len(v), dims)
		}
	}
	return nil
}

// Cosine returns the cosine similarity of a and b, or 0 when either has zero
// length. a and b must have the same length.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// Normalize scales v in place to unit length; a zero vector is left as is.
func Normalize(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}
