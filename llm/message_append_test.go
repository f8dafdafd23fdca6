package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// messageJSON and legacyMarshal are the encoding through encoding/json that
// AppendJSON replaced; the test checks that the output is the same.
type messageJSON struct {
	Type             MessageType                `json:"type"`
	ID               string                     `json:"id,omitempty"`
	Name             string                     `json:"name,omitempty"`
	Content          any                        `json:"content"`
	ToolCalls        *[]ToolCall                `json:"tool_calls,omitempty"`
	InvalidToolCalls *[]InvalidToolCall         `json:"invalid_tool_calls,omitempty"`
	ToolCallID       *string                    `json:"tool_call_id,omitempty"`
	Status           string                     `json:"status,omitempty"`
	Artifact         json.RawMessage            `json:"artifact,omitempty"`
	UsageMetadata    *Usage                     `json:"usage_metadata,omitempty"`
	ResponseMetadata ResponseMetadata           `json:"response_metadata,omitempty"`
	AdditionalKwargs map[string]json.RawMessage `json:"additional_kwargs,omitempty"`
}

func legacyMarshal(m Message) ([]byte, error) {
	out := messageJSON{
		Type: m.Type, ID: m.ID, Name: m.Name, Content: m.Content, Status: m.Status,
		Artifact: m.Artifact, UsageMetadata: m.Usage, ResponseMetadata: m.ResponseMetadata,
		AdditionalKwargs: m.AdditionalKwargs,
	}
	if m.Parts != nil {
		out.Content = m.contentParts()
	}
	switch m.Type {
	case TypeAI:
		calls, invalid := m.ToolCalls, m.InvalidToolCalls
		if calls == nil {
			calls = []ToolCall{}
		}
		if invalid == nil {
			invalid = []InvalidToolCall{}
		}
		out.ToolCalls, out.InvalidToolCalls = &calls, &invalid
	case TypeTool:
		out.ToolCallID = &m.ToolCallID
	}
	return json.Marshal(out)
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	big := strings.Repeat("result for query: 0f0e-abcd ", 500)
	ai := AI("thinking <b> & \u2028 \u2029 \xff", ToolCall{ID: "c1", Name: "search", Args: json.RawMessage(`{"q":"x"}`)},
		ToolCall{Name: "s2", Args: json.RawMessage(`{ "b" : 1, "a":"<&>" }`)}, ToolCall{ID: "c3", Name: "s3"})
	ai.ID, ai.Usage = "m1", &Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7, InputTokenDetails: map[string]int64{"cache_read": 1}}
	ai.ResponseMetadata = ResponseMetadata{"model_name": "m<1>", "finish_reason": "stop", "n": 1.5}
	ai.InvalidToolCalls = []InvalidToolCall{{ID: "b1", Name: "bad", Args: "{oops", Error: "not <json>"}}
	ai.AdditionalKwargs = map[string]json.RawMessage{"k": json.RawMessage(`{"z": [1, 2]}`)}
	tool := ToolError("c1", "search", `{"success":false,"data":null,"error":"<no>"}`+big)
	tool.ID, tool.Artifact = "t1", json.RawMessage(`{"rows": [1,2,3]}`)
	parts := HumanParts(TextPart("look"), ImagePart("https://x/y.png"), Part{Type: "audio", Raw: json.RawMessage(`{"type":"audio","data":"x"}`)})
	parts.Content = "lead"
	kw := ToolResult("c2", "t", "x")
	kw.AdditionalKwargs = map[string]json.RawMessage{
		"weft_key": json.RawMessage(`"ab12"`), "a<b": json.RawMessage(`"<tag>"`), "z": json.RawMessage(`{"b":1,"a":2}`),
		"n": nil, "spaced": json.RawMessage(` [ 1 , "x" ] `), "num": json.RawMessage(`1.50`), "": json.RawMessage(`true`),
	}
	msgs := []Message{
		kw, Human("hi?"), System("be nice"), AI("plain"), AI(""), ToolResult("", "t", ""), ToolResult("c", "t", big),
		ai, tool, parts, Remove("gone"), {Type: TypeHuman, Name: "kim", Content: "한국어 텍스트\n\t\x01"},
	}
	for i, m := range msgs {
		want, werr := legacyMarshal(m)
		got, gerr := json.Marshal(m)
		if (werr != nil) != (gerr != nil) || string(got) != string(want) {
			t.Errorf("message %d:\n got %s (%v)\nwant %s (%v)", i, got, gerr, want, werr)
		}
		direct, err := m.AppendJSON([]byte("prefix"))
		if err != nil || string(direct) != "prefix"+string(want) {
			t.Errorf("message %d: AppendJSON gives %s (%v)", i, direct, err)
		}
	}
	bad := AI("", ToolCall{ID: "c", Name: "n", Args: json.RawMessage(`{"a":`)})
	if _, err := json.Marshal(bad); err == nil {
		t.Error("invalid arguments encoded without an error")
	}
	badKw := Human("x")
	badKw.AdditionalKwargs = map[string]json.RawMessage{"k": json.RawMessage(`{"a":`)}
	if _, err := badKw.AppendJSON(nil); err == nil || !strings.Contains(err.Error(), `additional_kwargs "k"`) {
		t.Errorf("invalid additional_kwargs: error %v, want one naming the kwarg", err)
	}
	if _, err := json.Marshal(Message{Content: "x"}); err == nil {
		t.Error("a message without a type encoded without an error")
	}
}
