package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/internal/wiretest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/openai"
)

var ctx = context.Background()

// Responses in the Chat Completions wire format, as OpenAI sends them.
const plainJSON = `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "UX 디자인은 사용자 조사부터 시작하세요.", "refusal": null, "annotations": []},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {
    "prompt_tokens": 25, "completion_tokens": 12, "total_tokens": 37,
    "prompt_tokens_details": {"cached_tokens": 8, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_06737a9306"
}`

const chunkHead = `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306",`

func chunk(rest string) wiretest.Event { return wiretest.Event{Data: chunkHead + rest} }

var plainStream = []wiretest.Event{
	chunk(`"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`),
	chunk(`"choices":[{"index":0,"delta":{"content":"UX 디자인은"},"logprobs":null,"finish_reason":null}],"usage":null}`),
	chunk(`"choices":[{"index":0,"delta":{"content":" 사용자 조사부터"},"logprobs":null,"finish_reason":null}],"usage":null}`),
	chunk(`"choices":[{"index":0,"delta":{"content":" 시작하세요."},"logprobs":null,"finish_reason":null}],"usage":null}`),
	chunk(`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`),
	chunk(`"choices":[],"usage":{"prompt_tokens":25,"completion_tokens":12,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`),
	{Data: "[DONE]"},
}

var plainWant = llm.Message{
	Type:             llm.TypeAI,
	ID:               "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
	Content:          "UX 디자인은 사용자 조사부터 시작하세요.",
	Usage:            &llm.Usage{InputTokens: 25, OutputTokens: 12, TotalTokens: 37, InputTokenDetails: map[string]int64{"cache_read": 8}},
	ResponseMetadata: llm.ResponseMetadata{"model_name": "gpt-4o-mini-2024-07-18", "finish_reason": "stop"},
}

const toolsJSON = `{
  "id": "chatcmpl-tools1",
  "object": "chat.completion",
  "created": 1741570300,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant", "content": null, "refusal": null, "annotations": [],
      "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "search_jobs", "arguments": "{\"query\": \"UX 디자이너\", \"city\": \"서울\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "search_mentors", "arguments": "{\"field\":\"ux\"}"}},
        {"id": "call_c", "type": "function", "function": {"name": "book_session", "arguments": "{\"mentor_id\": 7,"}}
      ]
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 80, "completion_tokens": 40, "total_tokens": 120}
}`

// The same reply streamed: the calls' fragments interleave, and only the
// first fragment of each call has its id and name.
var toolsStream = []wiretest.Event{
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search_jobs","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`},
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\": \"UX 디"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`},
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"search_mentors","arguments":"{\"fie"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`},
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"자이너\", \"city\": \"서울\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`},
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"ld\":\"ux\"}"}},{"index":2,"id":"call_c","type":"function","function":{"name":"book_session","arguments":"{\"mentor_id\": 7,"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`},
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`},
	{Data: `{"id":"chatcmpl-tools1","object":"chat.completion.chunk","created":1741570300,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":40,"total_tokens":120}}`},
	{Data: "[DONE]"},
}

var toolsWant = llm.Message{
	Type: llm.TypeAI,
	ID:   "chatcmpl-tools1",
	ToolCalls: []llm.ToolCall{
		{ID: "call_a", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX 디자이너","city":"서울"}`)},
		{ID: "call_b", Name: "search_mentors", Args: json.RawMessage(`{"field":"ux"}`)},
	},
	InvalidToolCalls: []llm.InvalidToolCall{{ID: "call_c", Name: "book_session", Args: `{"mentor_id": 7,`, Error: "tool arguments are not valid JSON: unexpected end of JSON input"}},
	Usage:            &llm.Usage{InputTokens: 80, OutputTokens: 40, TotalTokens: 120},
	ResponseMetadata: llm.ResponseMetadata{"model_name": "gpt-4o-mini-2024-07-18", "finish_reason": "tool_calls"},
}

var tools = []llm.ToolSpec{
	{Name: "search_jobs", Description: "Search job postings.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"city":{"type":"string"}},"required":["query"]}`)},
	{Name: "search_mentors", Parameters: json.RawMessage(`{"type":"object","properties":{"field":{"type":"string"}}}`)},
	{Name: "book_session"},
}

func newModel(t *testing.T, s *wiretest.Server, sleeps *wiretest.Sleeps, mod ...func(*openai.Options)) *openai.Model {
	t.Helper()
	o := openai.Options{Model: "gpt-4o-mini", APIKey: "test-key", BaseURL: s.URL + "/v1/"}
	if sleeps != nil {
		o.Retry.Sleep = sleeps.Sleep
	}
	for _, f := range mod {
		f(&o)
	}
	m, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collect(t *testing.T, m llm.ChatModel, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, []llm.Chunk, error) {
	t.Helper()
	var chunks []llm.Chunk
	for c, err := range m.Stream(ctx, msgs, opts...) {
		if err != nil {
			return llm.Merge(chunks...).Message(), chunks, err
		}
		chunks = append(chunks, c)
	}
	return llm.Merge(chunks...).Message(), chunks, nil
}

func TestGeneratePlain(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, plainJSON))
	m := newModel(t, s, nil)
	got, err := m.Generate(ctx, []llm.Message{llm.System("Answer in Korean."), llm.Human("UX 디자이너가 되려면?")},
		llm.CallOptions{Temperature: llm.Ptr(0.2), MaxTokens: 300, Stop: []string{"END"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plainWant, got); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}
	req := s.Requests()[0]
	if req.Path != "/v1/chat/completions" || req.Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("request to %s with auth %q", req.Path, req.Header.Get("Authorization"))
	}
	want := map[string]any{
		"model": "gpt-4o-mini",
		"messages": []any{
			map[string]any{"role": "system", "content": "Answer in Korean."},
			map[string]any{"role": "user", "content": "UX 디자이너가 되려면?"},
		},
		"temperature": 0.2, "max_completion_tokens": 300.0, "stop": []any{"END"},
	}
	if d := cmp.Diff(want, req.Body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
}

func TestStreamPlain(t *testing.T) {
	s := wiretest.New(t, wiretest.SSE(false, plainStream...))
	got, chunks, err := collect(t, newModel(t, s, nil), []llm.Message{llm.Human("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plainWant, got); d != "" {
		t.Errorf("merged stream (-want +got):\n%s", d)
	}
	if len(chunks) < 4 || chunks[1].Content != "UX 디자인은" {
		t.Errorf("chunks = %+v", chunks)
	}
	body := s.Requests()[0].Body
	if body["stream"] != true || !cmp.Equal(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("stream request body = %v", body)
	}
}

func TestToolCalls(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, toolsJSON), wiretest.SSE(false, toolsStream...))
	m := newModel(t, s, nil).BindTools(tools)
	msgs := []llm.Message{llm.Human("Find UX jobs and mentors")}
	opts := llm.CallOptions{ToolChoice: llm.ToolChoiceRequired, ParallelToolCalls: llm.Ptr(true)}
	gen, err := m.Generate(ctx, msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(toolsWant, gen); d != "" {
		t.Errorf("Generate (-want +got):\n%s", d)
	}
	streamed, _, err := collect(t, m, msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(gen, streamed); d != "" {
		t.Errorf("merged stream differs from Generate (-gen +stream):\n%s", d)
	}
	body := s.Requests()[0].Body
	wantTools := []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "search_jobs", "description": "Search job postings.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}, "city": map[string]any{"type": "string"}}, "required": []any{"query"}}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "search_mentors",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"field": map[string]any{"type": "string"}}}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "book_session",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
	}
	if d := cmp.Diff(wantTools, body["tools"]); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	if body["tool_choice"] != "required" || body["parallel_tool_calls"] != true {
		t.Errorf("tool_choice %v, parallel_tool_calls %v", body["tool_choice"], body["parallel_tool_calls"])
	}

	// Forcing one tool by name.
	s2 := wiretest.New(t, wiretest.JSON(200, toolsJSON))
	if _, err := newModel(t, s2, nil).BindTools(tools).Generate(ctx, msgs, llm.CallOptions{ToolChoice: "search_jobs"}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"type": "function", "function": map[string]any{"name": "search_jobs"}}, s2.Requests()[0].Body["tool_choice"]); d != "" {
		t.Errorf("named tool_choice (-want +got):\n%s", d)
	}
}

func TestConversationEncoding(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, plainJSON))
	msgs := []llm.Message{
		llm.System("sys"),
		llm.Human("find jobs"),
		llm.AI("Searching.", llm.ToolCall{ID: "call_a", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX"}`)}),
		llm.ToolResult("call_a", "search_jobs", `[{"id":1}]`),
		{Type: llm.TypeAI, InvalidToolCalls: []llm.InvalidToolCall{{ID: "call_bad", Name: "book", Args: `{"x":`}}},
		llm.ToolError("call_bad", "book", "arguments are not valid JSON"),
		llm.HumanParts(llm.TextPart("and this?"), llm.Part{Type: llm.PartImage, ImageURL: "https://example.com/a.png", Detail: "low"}, llm.ImageDataPart("image/png", "AAAA")),
		// An empty answer (a model that said nothing) is sent with empty
		// content: the API requires content when there are no tool calls,
		// and refuses the whole conversation without it.
		llm.AI(""),
		llm.Human("hello?"),
	}
	if _, err := newModel(t, s, nil).Generate(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"role": "system", "content": "sys"},
		map[string]any{"role": "user", "content": "find jobs"},
		map[string]any{"role": "assistant", "content": "Searching.", "tool_calls": []any{
			map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "search_jobs", "arguments": `{"query":"UX"}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_a", "content": `[{"id":1}]`},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "call_bad", "type": "function", "function": map[string]any{"name": "book", "arguments": `{"x":`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_bad", "content": "arguments are not valid JSON"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "and this?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png", "detail": "low"}},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}},
		}},
		map[string]any{"role": "assistant", "content": ""},
		map[string]any{"role": "user", "content": "hello?"},
	}
	if d := cmp.Diff(want, s.Requests()[0].Body["messages"]); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}

	if _, err := newModel(t, s, nil).Generate(ctx, []llm.Message{llm.Remove("x")}); !errors.Is(err, llm.ErrInvalidMessage) {
		t.Errorf("a removal sent to the model: %v", err)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		sentinel error
		typ, msg string
	}{
		{"bad request", 400, `{"error":{"message":"Invalid schema for function 'search_jobs'.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}`,
			llm.ErrBadRequest, "invalid_function_parameters", "Invalid schema for function 'search_jobs'."},
		{"unauthorized", 401, `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			llm.ErrAuthentication, "invalid_api_key", "Incorrect API key provided"},
		{"forbidden", 403, `{"error":{"message":"Project does not have access to model gpt-5","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			llm.ErrPermission, "model_not_found", "does not have access"},
		{"not found", 404, `{"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			llm.ErrNotFound, "model_not_found", "does not exist"},
		{"ollama style", 404, `{"error":"model \"qwen9\" not found, try pulling it first"}`,
			llm.ErrNotFound, "", `model "qwen9" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wiretest.New(t, wiretest.JSON(tc.status, tc.body, "X-Request-Id", "req_123"))
			var sleeps wiretest.Sleeps
			m := newModel(t, s, &sleeps)
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					_, _, err = collect(t, m, []llm.Message{llm.Human("hi")})
				} else {
					_, err = m.Generate(ctx, []llm.Message{llm.Human("hi")})
				}
				var ae *llm.APIError
				if !errors.Is(err, tc.sentinel) || !errors.As(err, &ae) {
					t.Fatalf("stream=%v: err = %v, want %v", stream, err, tc.sentinel)
				}
				if ae.StatusCode != tc.status || ae.Type != tc.typ || !strings.Contains(ae.Message, tc.msg) || ae.Provider != "openai" || ae.RequestID != "req_123" {
					t.Errorf("stream=%v: error = %+v", stream, ae)
				}
				if want := fmt.Sprintf("HTTP %d %s", tc.status, http.StatusText(tc.status)); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name the status", err)
				}
			}
			if n := len(s.Requests()); n != 2 || len(sleeps.Waits()) != 0 {
				t.Errorf("%d requests, %d waits: a client error must not be retried", n, len(sleeps.Waits()))
			}
		})
	}
}

func TestRetries(t *testing.T) {
	rateLimited := wiretest.JSON(429, `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After", "7")
	for _, tc := range []struct {
		name      string
		first     http.HandlerFunc
		wantWait  func(time.Duration) bool
		waitRange string
	}{
		{"429 with Retry-After", rateLimited, func(d time.Duration) bool { return d == 7*time.Second }, "7s"},
		{"429 with Retry-After-Ms", wiretest.JSON(429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After-Ms", "1500"),
			func(d time.Duration) bool { return d == 1500*time.Millisecond }, "1.5s"},
		{"500", wiretest.JSON(500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`),
			func(d time.Duration) bool { return d >= 250*time.Millisecond && d <= 500*time.Millisecond }, "[250ms, 500ms]"},
		{"502 from a proxy", wiretest.Text(502, "<html><body>Bad Gateway</body></html>"),
			func(d time.Duration) bool { return d > 0 }, "> 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				var second http.HandlerFunc = wiretest.JSON(200, plainJSON)
				if stream {
					second = wiretest.SSE(false, plainStream...)
				}
				s := wiretest.New(t, tc.first, second)
				var sleeps wiretest.Sleeps
				m := newModel(t, s, &sleeps)
				var got llm.Message
				var err error
				if stream {
					got, _, err = collect(t, m, []llm.Message{llm.Human("hi")})
				} else {
					got, err = m.Generate(ctx, []llm.Message{llm.Human("hi")})
				}
				if err != nil {
					t.Fatalf("stream=%v: %v", stream, err)
				}
				if d := cmp.Diff(plainWant, got); d != "" {
					t.Errorf("stream=%v: (-want +got):\n%s", stream, d)
				}
				waits := sleeps.Waits()
				if len(s.Requests()) != 2 || len(waits) != 1 || !tc.wantWait(waits[0]) {
					t.Errorf("stream=%v: %d requests, waits %v; want 2 and one wait of %s", stream, len(s.Requests()), waits, tc.waitRange)
				}
			}
		})
	}

	t.Run("gives up", func(t *testing.T) {
		s := wiretest.New(t, rateLimited)
		var sleeps wiretest.Sleeps
		_, err := newModel(t, s, &sleeps).Generate(ctx, []llm.Message{llm.Human("hi")})
		if !errors.Is(err, llm.ErrRateLimit) || len(s.Requests()) != 3 || !strings.Contains(err.Error(), "rate_limit_exceeded") {
			t.Errorf("err = %v after %d requests", err, len(s.Requests()))
		}
	})
}

func TestTimeoutRetried(t *testing.T) {
	// The first attempt gets no answer within the timeout and is retried.
	s := wiretest.New(t, wiretest.Hang(), wiretest.JSON(200, plainJSON))
	var sleeps wiretest.Sleeps
	m := newModel(t, s, &sleeps, func(o *openai.Options) { o.Timeout = 100 * time.Millisecond })
	got, err := m.Generate(ctx, []llm.Message{llm.Human("hi")})
	if err != nil || got.ID != plainWant.ID {
		t.Fatalf("Generate = %v, %v", got.ID, err)
	}
	// A slow machine may time out the second attempt too; what matters is
	// that timed-out attempts were retried.
	if n := len(s.Requests()); n < 2 || len(sleeps.Waits()) != n-1 {
		t.Errorf("%d requests, waits %v", n, sleeps.Waits())
	}

	s = wiretest.New(t, wiretest.Hang())
	m = newModel(t, s, &sleeps, func(o *openai.Options) { o.Timeout = 20 * time.Millisecond; o.Retry.MaxRetries = -1 })
	_, err = m.Generate(ctx, []llm.Message{llm.Human("hi")})
	if !errors.Is(err, llm.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
}

func TestCancellation(t *testing.T) {
	s := wiretest.New(t, wiretest.Hang())
	m := newModel(t, s, nil)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.Generate(cctx, []llm.Message{llm.Human("hi")})
		done <- err
	}()
	waitForRequests(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Generate err = %v, want context.Canceled", err)
	}

	// A stream cancelled after its first chunk ends with the context's
	// error, and the connection is released.
	s = wiretest.New(t, wiretest.SSE(true, plainStream[:2]...))
	m = newModel(t, s, nil)
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	var n int
	var err error
	for _, e := range m.Stream(cctx, []llm.Message{llm.Human("hi")}) {
		if e != nil {
			err = e
			break
		}
		n++
		if n == 2 {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Errorf("stream: %d chunks then %v; want 2 then context.Canceled", n, err)
	}
}

func waitForRequests(t *testing.T, s *wiretest.Server, n int) {
	t.Helper()
	for len(s.Requests()) < n {
		time.Sleep(time.Millisecond)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	s := wiretest.New(t, wiretest.SSE(false, plainStream[1],
		wiretest.Event{Data: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`}))
	got, _, err := collect(t, newModel(t, s, nil), []llm.Message{llm.Human("hi")})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Type != "server_error" || !strings.Contains(ae.Message, "server had an error") {
		t.Errorf("err = %v", err)
	}
	if got.Text() != "UX 디자인은" {
		t.Errorf("partial text = %q", got.Text())
	}
}

func TestResponseFormat(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, strings.Replace(plainJSON, `"UX 디자인은 사용자 조사부터 시작하세요."`, `"{\"use_agent\": true}"`, 1)))
	type out struct {
		UseAgent bool `json:"use_agent"`
	}
	got, err := llm.Structured[out](ctx, newModel(t, s, nil), []llm.Message{llm.Human("hi")}, &llm.StructuredOptions{Method: llm.StructuredJSONSchema, Name: "route"})
	if err != nil || !got.UseAgent {
		t.Fatalf("Structured = %+v, %v", got, err)
	}
	rf, _ := s.Requests()[0].Body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "route" || js["schema"] == nil {
		t.Errorf("response_format = %v", rf)
	}
}

func TestStructuredRepairOverTheWire(t *testing.T) {
	reply := func(args string) http.HandlerFunc {
		body, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-r", "object": "chat.completion", "created": 1741570300, "model": "gpt-4o-mini-2024-07-18",
			"choices": []any{map[string]any{
				"index": 0, "logprobs": nil, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": []any{
					map[string]any{"id": "call_r", "type": "function", "function": map[string]any{"name": "route", "arguments": args}},
				}},
			}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		return wiretest.JSON(200, string(body))
	}
	type route struct {
		UseAgent bool `json:"use_agent"`
	}
	s := wiretest.New(t, reply(`{"use_agent": "maybe"}`), reply(`{"use_agent": true}`))
	got, err := llm.Structured[route](ctx, newModel(t, s, nil), []llm.Message{llm.Human("hi")}, &llm.StructuredOptions{Name: "route"})
	if err != nil || !got.UseAgent {
		t.Fatalf("Structured = %+v, %v", got, err)
	}
	reqs := s.Requests()
	msgs, _ := reqs[1].Body["messages"].([]any)
	if len(reqs) != 2 || len(msgs) != 3 {
		t.Fatalf("%d requests; second has %d messages", len(reqs), len(msgs))
	}
	fix, _ := msgs[2].(map[string]any)
	if fix["role"] != "tool" || fix["tool_call_id"] != "call_r" || !strings.Contains(fix["content"].(string), "use_agent") {
		t.Errorf("repair message = %v", fix)
	}
	if d := cmp.Diff(map[string]any{"type": "function", "function": map[string]any{"name": "route"}}, reqs[0].Body["tool_choice"]); d != "" {
		t.Errorf("tool_choice (-want +got):\n%s", d)
	}
}
