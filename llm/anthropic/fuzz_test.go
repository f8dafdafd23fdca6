package anthropic_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/anthropic"
)

func fuzzModel(t *testing.T, contentType string, body []byte) *anthropic.Model {
	m, err := anthropic.New(anthropic.Options{
		Model: "m", APIKey: "k", BaseURL: "http://model.test/",
		HTTPClient: &http.Client{Transport: wiretest.Answer{ContentType: contentType, Body: body}},
		Retry:      llm.RetryPolicy{MaxRetries: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// told reports whether err is one a caller can act on: a provider's
// error, or a reply that is not one (llm.ErrInvalidResponse).
func told(err error) bool {
	var ae *llm.APIError
	return err == nil || errors.Is(err, llm.ErrInvalidResponse) || errors.As(err, &ae)
}

// Whatever a success body holds, Generate neither panics nor fails with
// an error that is neither an API error nor an invalid response.
func FuzzGenerateBody(f *testing.F) {
	for _, s := range []string{textJSON, toolsJSON, "", "null", "{}", `{"content":null}`, `{"content":5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := fuzzModel(t, "application/json", body).Generate(ctx, []llm.Message{llm.Human("hi")})
		if !told(err) {
			t.Fatalf("err = %v", err)
		}
		if err == nil && got.Type != llm.TypeAI {
			t.Fatalf("reply of type %q", got.Type)
		}
	})
}

// Whatever a stream holds, Stream neither panics nor fails with an error
// that is neither an API error nor an invalid response, and a stream that
// succeeds merges into an AI message.
func FuzzStreamBody(f *testing.F) {
	for _, evs := range [][]wiretest.Event{textStream, toolsStream, textStream[:4], {ev("message_start", `{"type":"message_start","message":5}`)}} {
		var b strings.Builder
		for _, e := range evs {
			b.WriteString("event: " + e.Name + "\ndata: " + e.Data + "\n\n")
		}
		f.Add([]byte(b.String()))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := llm.Collect(fuzzModel(t, "text/event-stream", body).Stream(ctx, []llm.Message{llm.Human("hi")}))
		if !told(err) {
			t.Fatalf("err = %v", err)
		}
		if got.Type != llm.TypeAI {
			t.Fatalf("message of type %q", got.Type)
		}
	})
}
