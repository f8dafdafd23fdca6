package anthropic_test

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
	"github.com/weftlabs/weft/llm/anthropic"
)

var ctx = context.Background()

// A reply in the Messages API's wire format: text and two parallel tool
// calls, with prompt-cache usage.
const toolsJSON = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "두 가지를 찾아볼게요."},
    {"type": "tool_use", "id": "toolu_01A", "name": "search_jobs", "input": {"query": "UX 디자이너", "city": "서울"}},
    {"type": "tool_use", "id": "toolu_01B", "name": "search_mentors", "input": {}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 472, "output_tokens": 89, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100}
}`

func ev(name, data string) wiretest.Event { return wiretest.Event{Name: name, Data: data} }

// The same reply streamed.
var toolsStream = []wiretest.Event{
	ev("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":100}}}`),
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	ev("ping", `{"type": "ping"}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"두 가지를"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" 찾아볼게요."}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A","name":"search_jobs","input":{}}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"UX 디"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"자이너\", \"ci"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ty\": \"서울\"}"}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
	ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01B","name":"search_mentors","input":{}}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":2}`),
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`),
	ev("message_stop", `{"type":"message_stop"}`),
}

var toolsWant = llm.Message{
	Type:    llm.TypeAI,
	ID:      "msg_01XFDUDYJgAACzvnptvVoYEL",
	Content: "두 가지를 찾아볼게요.",
	ToolCalls: []llm.ToolCall{
		{ID: "toolu_01A", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX 디자이너","city":"서울"}`)},
		{ID: "toolu_01B", Name: "search_mentors", Args: json.RawMessage(`{}`)},
	},
	Usage: &llm.Usage{InputTokens: 572, OutputTokens: 89, TotalTokens: 661,
		InputTokenDetails: map[string]int64{"cache_read": 100, "cache_creation": 0}},
	ResponseMetadata: llm.ResponseMetadata{"model_name": "claude-sonnet-4-5-20250929", "stop_reason": "tool_use"},
}

const textJSON = `{"id":"msg_text","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
  "content":[{"type":"text","text":"안녕하세요!"}],"stop_reason":"end_turn","stop_sequence":null,
  "usage":{"input_tokens":12,"output_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`

var textStream = []wiretest.Event{
	ev("message_start", `{"type":"message_start","message":{"id":"msg_text","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`),
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"안녕"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"하세요!"}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`),
	ev("message_stop", `{"type":"message_stop"}`),
}

var textWant = llm.Message{
	Type: llm.TypeAI, ID: "msg_text", Content: "안녕하세요!",
	Usage:            &llm.Usage{InputTokens: 12, OutputTokens: 6, TotalTokens: 18},
	ResponseMetadata: llm.ResponseMetadata{"model_name": "claude-sonnet-4-5-20250929", "stop_reason": "end_turn"},
}

var tools = []llm.ToolSpec{
	{Name: "search_jobs", Description: "Search job postings.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"city":{"type":"string"}},"required":["query"],"additionalProperties":false}`)},
	{Name: "search_mentors"},
}

func newModel(t *testing.T, s *wiretest.Server, sleeps *wiretest.Sleeps, mod ...func(*anthropic.Options)) *anthropic.Model {
	t.Helper()
	o := anthropic.Options{Model: "claude-sonnet-4-5", APIKey: "test-key", BaseURL: s.URL}
	if sleeps != nil {
		o.Retry.Sleep = sleeps.Sleep
	}
	for _, f := range mod {
		f(&o)
	}
	m, err := anthropic.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collect(m llm.ChatModel, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, []llm.Chunk, error) {
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
	s := wiretest.New(t, wiretest.JSON(200, textJSON))
	got, err := newModel(t, s, nil).Generate(ctx, []llm.Message{llm.System("Answer in Korean."), llm.Human("hi")},
		llm.CallOptions{Temperature: llm.Ptr(0.5), Stop: []string{"END"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(textWant, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	req := s.Requests()[0]
	if req.Path != "/v1/messages" || req.Header.Get("X-Api-Key") != "test-key" || req.Header.Get("Anthropic-Version") == "" {
		t.Errorf("request to %s, headers %v", req.Path, req.Header)
	}
	want := map[string]any{
		"model":          "claude-sonnet-4-5",
		"max_tokens":     float64(anthropic.DefaultMaxTokens),
		"system":         []any{map[string]any{"type": "text", "text": "Answer in Korean."}},
		"messages":       []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
		"temperature":    0.5,
		"stop_sequences": []any{"END"},
	}
	if d := cmp.Diff(want, req.Body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
}

func TestStreamPlain(t *testing.T) {
	s := wiretest.New(t, wiretest.SSE(false, textStream...))
	got, chunks, err := collect(newModel(t, s, nil), []llm.Message{llm.Human("hi")}, llm.CallOptions{MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(textWant, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var texts []string
	for _, c := range chunks {
		if c.ID != "msg_text" {
			t.Errorf("chunk without the message id: %+v", c)
		}
		if c.Content != "" {
			texts = append(texts, c.Content)
		}
	}
	if d := cmp.Diff([]string{"안녕", "하세요!"}, texts); d != "" {
		t.Errorf("text chunks: %s", d)
	}
	if body := s.Requests()[0].Body; body["stream"] != true || body["max_tokens"] != 100.0 {
		t.Errorf("body = %v", body)
	}
}

func TestToolCalls(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, toolsJSON), wiretest.SSE(false, toolsStream...))
	m := newModel(t, s, nil).BindTools(tools)
	msgs := []llm.Message{llm.Human("UX 일자리와 멘토를 찾아줘")}
	opts := llm.CallOptions{ToolChoice: llm.ToolChoiceRequired, ParallelToolCalls: llm.Ptr(true)}
	gen, err := m.Generate(ctx, msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(toolsWant, gen); d != "" {
		t.Errorf("Generate (-want +got):\n%s", d)
	}
	streamed, _, err := collect(m, msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(gen, streamed); d != "" {
		t.Errorf("merged stream differs from Generate (-gen +stream):\n%s", d)
	}
	body := s.Requests()[0].Body
	wantTools := []any{
		map[string]any{"name": "search_jobs", "description": "Search job postings.", "input_schema": map[string]any{
			"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}, "city": map[string]any{"type": "string"}},
			"required": []any{"query"}, "additionalProperties": false}},
		map[string]any{"name": "search_mentors", "input_schema": map[string]any{"type": "object", "properties": map[string]any{}}},
	}
	if d := cmp.Diff(wantTools, body["tools"]); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"type": "any"}, body["tool_choice"]); d != "" {
		t.Errorf("tool_choice (-want +got):\n%s", d)
	}

	for choice, want := range map[llm.ToolChoice]any{
		"search_jobs":        map[string]any{"type": "tool", "name": "search_jobs"},
		llm.ToolChoiceNone:   map[string]any{"type": "none"},
		llm.ToolChoiceAuto:   map[string]any{"type": "auto"},
		"":                   nil,
		"search_jobs|serial": map[string]any{"type": "tool", "name": "search_jobs", "disable_parallel_tool_use": true},
	} {
		s := wiretest.New(t, wiretest.JSON(200, toolsJSON))
		o := llm.CallOptions{ToolChoice: choice}
		if name, ok := strings.CutSuffix(string(choice), "|serial"); ok {
			o = llm.CallOptions{ToolChoice: llm.ToolChoice(name), ParallelToolCalls: llm.Ptr(false)}
		}
		if _, err := newModel(t, s, nil).BindTools(tools).Generate(ctx, msgs, o); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, s.Requests()[0].Body["tool_choice"]); d != "" {
			t.Errorf("tool choice %q (-want +got):\n%s", choice, d)
		}
	}
}

func TestConversationEncoding(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, textJSON))
	msgs := []llm.Message{
		llm.System("You are DreamPath."),
		llm.Human("find jobs"),
		llm.AI("Searching.",
			llm.ToolCall{ID: "toolu_a", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX"}`)},
			llm.ToolCall{ID: "toolu_b", Name: "book", Args: json.RawMessage(`{"mentor_id":99}`)}),
		llm.ToolResult("toolu_a", "search_jobs", `[{"id":1}]`),
		llm.ToolError("toolu_b", "book", "mentor 99 does not exist"),
		llm.System("Be brief."),
		llm.HumanParts(llm.TextPart("and this?"), llm.ImagePart("https://example.com/a.png"), llm.ImageDataPart("image/png", "AAAA")),
	}
	if _, err := newModel(t, s, nil).Generate(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	body := s.Requests()[0].Body
	wantSystem := []any{map[string]any{"type": "text", "text": "You are DreamPath."}, map[string]any{"type": "text", "text": "Be brief."}}
	if d := cmp.Diff(wantSystem, body["system"]); d != "" {
		t.Errorf("system (-want +got):\n%s", d)
	}
	want := []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "find jobs"}}},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Searching."},
			map[string]any{"type": "tool_use", "id": "toolu_a", "name": "search_jobs", "input": map[string]any{"query": "UX"}},
			map[string]any{"type": "tool_use", "id": "toolu_b", "name": "book", "input": map[string]any{"mentor_id": 99.0}},
		}},
		// Tool results and the next human message are one user turn.
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": []any{map[string]any{"type": "text", "text": `[{"id":1}]`}}},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true, "content": []any{map[string]any{"type": "text", "text": "mentor 99 does not exist"}}},
			map[string]any{"type": "text", "text": "and this?"},
			map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.png"}},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "AAAA"}},
		}},
	}
	if d := cmp.Diff(want, body["messages"]); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
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
		{"bad request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate between \"user\" and \"assistant\""}}`,
			llm.ErrBadRequest, "invalid_request_error", "roles must alternate"},
		{"unauthorized", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			llm.ErrAuthentication, "authentication_error", "invalid x-api-key"},
		{"forbidden", 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			llm.ErrPermission, "permission_error", "does not have permission"},
		{"not found", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`,
			llm.ErrNotFound, "not_found_error", "model: claude-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wiretest.New(t, wiretest.JSON(tc.status, tc.body, "Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy"))
			var sleeps wiretest.Sleeps
			m := newModel(t, s, &sleeps)
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					_, _, err = collect(m, []llm.Message{llm.Human("hi")})
				} else {
					_, err = m.Generate(ctx, []llm.Message{llm.Human("hi")})
				}
				var ae *llm.APIError
				if !errors.Is(err, tc.sentinel) || !errors.As(err, &ae) {
					t.Fatalf("stream=%v: err = %v, want %v", stream, err, tc.sentinel)
				}
				if ae.StatusCode != tc.status || ae.Type != tc.typ || !strings.Contains(ae.Message, tc.msg) ||
					ae.Provider != "anthropic" || ae.RequestID != "req_011CSHoEeqs5C35K2UUqR7Fy" {
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
	for _, tc := range []struct {
		name     string
		first    http.HandlerFunc
		wantWait func(time.Duration) bool
	}{
		{"429 with Retry-After", wiretest.JSON(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, "Retry-After", "12"),
			func(d time.Duration) bool { return d == 12*time.Second }},
		{"500", wiretest.JSON(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`),
			func(d time.Duration) bool { return d >= 250*time.Millisecond && d <= 500*time.Millisecond }},
		{"529 overloaded", wiretest.JSON(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			func(d time.Duration) bool { return d > 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				var second http.HandlerFunc = wiretest.JSON(200, textJSON)
				if stream {
					second = wiretest.SSE(false, textStream...)
				}
				s := wiretest.New(t, tc.first, second)
				var sleeps wiretest.Sleeps
				m := newModel(t, s, &sleeps)
				var got llm.Message
				var err error
				if stream {
					got, _, err = collect(m, []llm.Message{llm.Human("hi")})
				} else {
					got, err = m.Generate(ctx, []llm.Message{llm.Human("hi")})
				}
				if err != nil {
					t.Fatalf("stream=%v: %v", stream, err)
				}
				if d := cmp.Diff(textWant, got); d != "" {
					t.Errorf("stream=%v (-want +got):\n%s", stream, d)
				}
				waits := sleeps.Waits()
				if len(s.Requests()) != 2 || len(waits) != 1 || !tc.wantWait(waits[0]) {
					t.Errorf("stream=%v: %d requests, waits %v", stream, len(s.Requests()), waits)
				}
			}
		})
	}
}

func TestTimeoutRetried(t *testing.T) {
	s := wiretest.New(t, wiretest.Hang(), wiretest.SSE(false, textStream...))
	var sleeps wiretest.Sleeps
	m := newModel(t, s, &sleeps, func(o *anthropic.Options) { o.Timeout = 100 * time.Millisecond })
	got, _, err := collect(m, []llm.Message{llm.Human("hi")})
	if err != nil || got.Text() != "안녕하세요!" {
		t.Fatalf("stream = %q, %v", got.Text(), err)
	}
	// A slow machine may time out the second attempt too; what matters is
	// that timed-out attempts were retried.
	if n := len(s.Requests()); n < 2 || len(sleeps.Waits()) != n-1 {
		t.Errorf("%d requests, waits %v", n, sleeps.Waits())
	}
}

func TestStreamErrorEvent(t *testing.T) {
	s := wiretest.New(t, wiretest.SSE(false, textStream[0], textStream[1], textStream[2],
		ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	got, _, err := collect(newModel(t, s, nil), []llm.Message{llm.Human("hi")})
	var ae *llm.APIError
	if !errors.Is(err, llm.ErrServer) || !errors.As(err, &ae) || ae.Type != "overloaded_error" || ae.StatusCode != 0 {
		t.Errorf("err = %v (%+v)", err, ae)
	}
	if got.Text() != "안녕" {
		t.Errorf("partial text = %q", got.Text())
	}
	if len(s.Requests()) != 1 {
		t.Errorf("a stream failing after its first chunk was retried")
	}
}

func TestCancellation(t *testing.T) {
	s := wiretest.New(t, wiretest.SSE(true, textStream[:3]...))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	var n int
	for c, e := range newModel(t, s, nil).Stream(cctx, []llm.Message{llm.Human("hi")}) {
		if e != nil {
			err = e
			break
		}
		n++
		if c.Content != "" {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Errorf("%d chunks then %v; want 2 then context.Canceled", n, err)
	}

	s = wiretest.New(t, wiretest.Hang())
	cctx, cancel2 := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := newModel(t, s, nil).Generate(cctx, []llm.Message{llm.Human("hi")})
		done <- err
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Generate err = %v", err)
	}
}

func TestResponseFormat(t *testing.T) {
	s := wiretest.New(t, wiretest.JSON(200, strings.Replace(textJSON, `"안녕하세요!"`, `"{\"use_agent\": false}"`, 1)))
	type route struct {
		UseAgent bool `json:"use_agent"`
	}
	_, err := llm.Structured[route](ctx, newModel(t, s, nil), []llm.Message{llm.Human("hi")}, &llm.StructuredOptions{Method: llm.StructuredJSONSchema})
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := s.Requests()[0].Body["output_config"].(map[string]any)
	format, _ := oc["format"].(map[string]any)
	if format["type"] != "json_schema" || format["schema"] == nil {
		t.Errorf("output_config = %v", oc)
	}
}

func TestMissingKey(t *testing.T) {
	_, err := anthropic.Open(ctx, "claude-sonnet-4-5", func(string) string { return "" })
	var ce *llm.ConfigError
	if !errors.As(err, &ce) || ce.EnvVar != "ANTHROPIC_API_KEY" || !strings.Contains(err.Error(), "set ANTHROPIC_API_KEY") {
		t.Errorf("err = %v", err)
	}
	if _, err := anthropic.New(anthropic.Options{APIKey: "k"}); err == nil {
		t.Errorf("New without a model name succeeded")
	}
}

func TestLongGenerateStreams(t *testing.T) {
	// A reply that may take longer than the SDK allows without streaming
	// is streamed and merged.
	s := wiretest.New(t, wiretest.SSE(false, textStream...))
	got, err := newModel(t, s, nil).Generate(ctx, []llm.Message{llm.Human("hi")}, llm.CallOptions{MaxTokens: 64000})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(textWant, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if body := s.Requests()[0].Body; body["stream"] != true || body["max_tokens"] != 64000.0 {
		t.Errorf("body = %v", body)
	}
}
