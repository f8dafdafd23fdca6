package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weftlabs/weft/internal/jsonx"
)

// The JSON form of a message is LangChain's (and the LangGraph Server
// API's): {"type": "ai", "content": ..., "tool_calls": [...], ...}.
// Decoding also takes what LangGraph's own input coercion takes: a "role"
// instead of a "type" ("user", "assistant", "developer"), OpenAI-shaped
// tool calls, string arguments, and content lists with plain strings or
// LangChain's standard image blocks.

// MarshalJSON encodes the message in LangChain's form. An AI message always
// has "tool_calls" and "invalid_tool_calls" lists, and a tool message a
// "tool_call_id", as LangChain's own serialization does.
func (m Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil) }

// AppendJSON appends the message's JSON, as MarshalJSON gives it, to b. The
// output is compact and escaped as json.Marshal escapes, so a caller may use
// it without encoding/json's pass over a Marshaler's output (a checkpoint
// of a long conversation holding large tool results).
func (m Message) AppendJSON(b []byte) ([]byte, error) {
	if m.Type == "" {
		return nil, fmt.Errorf("%w: message has no type", ErrInvalidMessage)
	}
	b = slices.Grow(b, m.JSONSizeHint())
	b = append(b, `{"type":`...)
	b = jsonx.AppendString(b, string(m.Type), true)
	if m.ID != "" {
		b = append(b, `,"id":`...)
		b = jsonx.AppendString(b, m.ID, true)
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = jsonx.AppendString(b, m.Name, true)
	}
	b = append(b, `,"content":`...)
	var err error
	if m.Parts != nil {
		if b, err = appendMarshal(b, m.contentParts()); err != nil {
			return nil, err
		}
	} else {
		b = jsonx.AppendString(b, m.Content, true)
	}
	switch m.Type {
	case TypeAI:
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = c.appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, `],"invalid_tool_calls":`...)
		if len(m.InvalidToolCalls) == 0 {
			b = append(b, `[]`...)
		} else if b, err = appendMarshal(b, m.InvalidToolCalls); err != nil {
			return nil, err
		}
	case TypeTool:
		b = append(b, `,"tool_call_id":`...)
		b = jsonx.AppendString(b, m.ToolCallID, true)
	}
	if m.Status != "" {
		b = append(b, `,"status":`...)
		b = jsonx.AppendString(b, m.Status, true)
	}
	if len(m.Artifact) > 0 {
		b = append(b, `,"artifact":`...)
		if b, err = appendMarshal(b, m.Artifact); err != nil {
			return nil, err
		}
	}
	if m.Usage != nil {
		b = append(b, `,"usage_metadata":`...)
		if b, err = appendMarshal(b, m.Usage); err != nil {
			return nil, err
		}
	}
	if len(m.ResponseMetadata) > 0 {
		b = append(b, `,"response_metadata":`...)
		if b, err = appendMarshal(b, m.ResponseMetadata); err != nil {
			return nil, err
		}
	}
	if len(m.AdditionalKwargs) > 0 {
		b = append(b, `,"additional_kwargs":`...)
		if b, err = appendKwargs(b, m.AdditionalKwargs); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// JSONSizeHint estimates the length of the JSON AppendJSON writes for m,
// so that a caller encoding many messages into one buffer (a checkpoint of
// a conversation) can size it once. Text that needs escaping can make the
// JSON longer than the estimate.
func (m Message) JSONSizeHint() int {
	n := 112 + len(m.Type) + len(m.ID) + len(m.Name) + len(m.Content) + len(m.ToolCallID) + len(m.Status) + len(m.Artifact)
	for _, p := range m.Parts {
		n += 48 + len(p.Type) + len(p.Text) + len(p.ImageURL) + len(p.Detail) + len(p.Raw)
	}
	for _, c := range m.ToolCalls {
		n += 56 + len(c.ID) + len(c.Name) + len(c.Args)
	}
	for _, c := range m.InvalidToolCalls {
		n += 72 + len(c.ID) + len(c.Name) + len(c.Args) + len(c.Error)
	}
	if m.Usage != nil {
		n += 160
	}
	n += 48 * len(m.ResponseMetadata)
	for k, v := range m.AdditionalKwargs {
		n += 8 + len(k) + len(v)
	}
	// Escapes (quotes, newlines) in ordinary text.
	return n + n/32
}

// appendKwargs appends json.Marshal(kw) to b without encoding/json's
// reflection over the map (a tool node marks every tool message with a
// kwarg): keys sorted as json.Marshal sorts them, and a value that is
// already canonical as it is, since json.Marshal of such a RawMessage
// returns its bytes unchanged.
func appendKwargs(b []byte, kw map[string]json.RawMessage) ([]byte, error) {
	b, err := jsonx.AppendObject(b, kw, func(b []byte, k string, v json.RawMessage) ([]byte, error) {
		if jsonx.Canonical(v) {
			return append(b, v...), nil
		}
		b, err := appendMarshal(b, v)
		if err != nil {
			return nil, fmt.Errorf("additional_kwargs %q: %w", k, err)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// appendMarshal appends json.Marshal(v) to b.
func appendMarshal(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

type messageIn struct {
	Type             string                     `json:"type"`
	Role             string                     `json:"role"`
	ID               string                     `json:"id"`
	Name             string                     `json:"name"`
	Content          json.RawMessage            `json:"content"`
	ToolCalls        []toolCallIn               `json:"tool_calls"`
	InvalidToolCalls []InvalidToolCall          `json:"invalid_tool_calls"`
	ToolCallID       string                     `json:"tool_call_id"`
	Status           string                     `json:"status"`
	Artifact         json.RawMessage            `json:"artifact"`
	UsageMetadata    *Usage                     `json:"usage_metadata"`
	ResponseMetadata ResponseMetadata           `json:"response_metadata"`
	AdditionalKwargs map[string]json.RawMessage `json:"additional_kwargs"`
}

var typeNames = map[string]MessageType{
	"system": TypeSystem, "developer": TypeSystem, "SystemMessageChunk": TypeSystem,
	"human": TypeHuman, "user": TypeHuman, "HumanMessageChunk": TypeHuman,
	"ai": TypeAI, "assistant": TypeAI, "AIMessageChunk": TypeAI,
	"tool": TypeTool, "ToolMessageChunk": TypeTool,
	"remove": TypeRemove,
}

// UnmarshalJSON decodes a message in LangChain's form (see MarshalJSON),
// and the looser forms LangGraph accepts as input.
func (m *Message) UnmarshalJSON(data []byte) error {
	var in messageIn
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	name := in.Type
	if name == "" {
		name = in.Role
	}
	t, ok := typeNames[name]
	if !ok {
		if name == "" {
			return fmt.Errorf(`%w: no "type" (want one of system, human, ai, tool, remove)`, ErrInvalidMessage)
		}
		return fmt.Errorf("%w: unknown message type %q (want one of system, human, ai, tool, remove)", ErrInvalidMessage, name)
	}
	out := Message{
		Type:             t,
		ID:               in.ID,
		Name:             in.Name,
		InvalidToolCalls: in.InvalidToolCalls,
		ToolCallID:       in.ToolCallID,
		Status:           in.Status,
		Artifact:         compact(nonNull(in.Artifact)),
		Usage:            in.UsageMetadata,
		ResponseMetadata: in.ResponseMetadata,
		AdditionalKwargs: in.AdditionalKwargs,
	}
	if len(out.ResponseMetadata) == 0 {
		out.ResponseMetadata = nil
	}
	if len(out.AdditionalKwargs) == 0 {
		out.AdditionalKwargs = nil
	}
	for k, v := range out.AdditionalKwargs {
		out.AdditionalKwargs[k] = compact(v)
	}
	if len(out.InvalidToolCalls) == 0 {
		out.InvalidToolCalls = nil
	}
	if err := decodeContent(in.Content, &out); err != nil {
		return err
	}
	for i, tc := range in.ToolCalls {
		call, bad, err := tc.toolCall()
		if err != nil {
			return fmt.Errorf("%w: tool_calls[%d]: %w", ErrInvalidMessage, i, err)
		}
		if bad != nil {
			out.InvalidToolCalls = append(out.InvalidToolCalls, *bad)
			continue
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	*m = out
	return nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// compact drops insignificant space from JSON kept verbatim, so equal
// values compare equal however they were indented.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func decodeContent(raw json.RawMessage, m *Message) error {
	raw = nonNull(raw)
	if raw == nil {
		return nil
	}
	switch raw[0] {
	case '"':
		return json.Unmarshal(raw, &m.Content)
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%w: content: %w", ErrInvalidMessage, err)
		}
		m.Parts = make([]Part, 0, len(items))
		for i, item := range items {
			var p Part
			if err := p.UnmarshalJSON(item); err != nil {
				return fmt.Errorf("content[%d]: %w", i, err)
			}
			m.Parts = append(m.Parts, p)
		}
		return nil
	}
	return fmt.Errorf("%w: content must be a string or a list of parts, got %s", ErrInvalidMessage, abbreviate(raw))
}

func abbreviate(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

type imageURLJSON struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// MarshalJSON encodes a part as LangChain's content block:
// {"type":"text","text":...} or {"type":"image_url","image_url":{"url":...}}.
func (p Part) MarshalJSON() ([]byte, error) {
	switch p.Type {
	case PartText:
		return json.Marshal(struct {
			Type PartType `json:"type"`
			Text string   `json:"text"`
		}{p.Type, p.Text})
	case PartImage:
		return json.Marshal(struct {
			Type     PartType     `json:"type"`
			ImageURL imageURLJSON `json:"image_url"`
		}{p.Type, imageURLJSON{p.ImageURL, p.Detail}})
	}
	if len(p.Raw) == 0 {
		return nil, fmt.Errorf("%w: content part of type %q has no data", ErrInvalidMessage, p.Type)
	}
	return p.Raw, nil
}

// UnmarshalJSON decodes a content block. Besides text and image_url blocks
// it takes a plain string (a text part) and LangChain's standard image
// block ({"type":"image", "url"|"base64"|"data", "mime_type"}); a block of
// any other type is kept in Raw.
func (p *Part) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		*p = TextPart(s)
		return nil
	}
	var in struct {
		Type       PartType        `json:"type"`
		Text       string          `json:"text"`
		ImageURL   json.RawMessage `json:"image_url"`
		URL        string          `json:"url"`
		Base64     string          `json:"base64"`
		Data       string          `json:"data"`
		SourceType string          `json:"source_type"`
		MimeType   string          `json:"mime_type"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("%w: content part: %w", ErrInvalidMessage, err)
	}
	switch in.Type {
	case "":
		return fmt.Errorf(`%w: content part has no "type"`, ErrInvalidMessage)
	case PartText:
		*p = TextPart(in.Text)
		return nil
	case PartImage:
		var u imageURLJSON
		if len(in.ImageURL) > 0 && in.ImageURL[0] == '"' {
			if err := json.Unmarshal(in.ImageURL, &u.URL); err != nil {
				return fmt.Errorf("%w: image_url: %w", ErrInvalidMessage, err)
			}
		} else if err := json.Unmarshal(in.ImageURL, &u); err != nil {
			return fmt.Errorf("%w: image_url: %w", ErrInvalidMessage, err)
		}
		if u.URL == "" {
			return fmt.Errorf("%w: image_url part has no url", ErrInvalidMessage)
		}
		*p = Part{Type: PartImage, ImageURL: u.URL, Detail: u.Detail}
		return nil
	case "image":
		b64 := in.Base64
		if in.SourceType == "base64" || (b64 == "" && in.Data != "") {
			b64 = in.Data
		}
		switch {
		case b64 != "":
			if in.MimeType == "" {
				return fmt.Errorf("%w: base64 image part has no mime_type", ErrInvalidMessage)
			}
			*p = ImageDataPart(in.MimeType, b64)
			return nil
		case in.URL != "":
			*p = ImagePart(in.URL)
			return nil
		}
	}
	*p = Part{Type: in.Type, Raw: compact(data)}
	return nil
}

// MarshalJSON encodes a tool call as LangChain's
// {"name", "args", "id", "type": "tool_call"}.
func (c ToolCall) MarshalJSON() ([]byte, error) { return c.appendJSON(nil) }

func (c ToolCall) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"name":`...)
	b = jsonx.AppendString(b, c.Name, true)
	b = append(b, `,"args":`...)
	switch {
	case len(c.Args) == 0:
		b = append(b, `{}`...)
	case jsonx.Canonical(c.Args):
		// Valid, compact and escaped: what json.Marshal would return.
		b = append(b, c.Args...)
	default:
		var err error
		if b, err = appendMarshal(b, c.Args); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"id":`...)
	if c.ID == "" {
		b = append(b, `null`...)
	} else {
		b = jsonx.AppendString(b, c.ID, true)
	}
	return append(b, `,"type":"tool_call"}`...), nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON encodes an invalid tool call as LangChain's
// {"name", "args", "id", "error", "type": "invalid_tool_call"}.
func (c InvalidToolCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name  *string `json:"name"`
		Args  *string `json:"args"`
		ID    *string `json:"id"`
		Error *string `json:"error"`
		Type  string  `json:"type"`
	}{nullable(c.Name), nullable(c.Args), nullable(c.ID), nullable(c.Error), "invalid_tool_call"})
}

// UnmarshalJSON decodes an invalid tool call.
func (c *InvalidToolCall) UnmarshalJSON(data []byte) error {
	var in struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Args  string `json:"args"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("%w: invalid_tool_calls: %w", ErrInvalidMessage, err)
	}
	*c = InvalidToolCall(in)
	return nil
}

type toolCallIn struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Function *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// toolCall converts a decoded tool call; arguments that are not a JSON
// object make an invalid tool call instead.
func (in toolCallIn) toolCall() (ToolCall, *InvalidToolCall, error) {
	name, args := in.Name, in.Args
	if in.Function != nil { // OpenAI's shape
		name, args = in.Function.Name, in.Function.Arguments
	}
	if name == "" {
		return ToolCall{}, nil, fmt.Errorf("tool call has no name")
	}
	args = nonNull(args)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return ToolCall{}, nil, err
		}
		args = json.RawMessage(s)
	}
	obj, err := ParseArgs(string(args))
	if err != nil {
		return ToolCall{}, &InvalidToolCall{ID: in.ID, Name: name, Args: string(args), Error: err.Error()}, nil
	}
	return ToolCall{ID: in.ID, Name: name, Args: obj}, nil, nil
}

// ParseArgs checks that s is a JSON object and returns it compacted; empty
// (or blank) text is the empty object.
func ParseArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	if s[0] != '{' {
		return nil, fmt.Errorf("tool arguments are not a JSON object: %s", abbreviate([]byte(s)))
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, fmt.Errorf("tool arguments are not valid JSON: %w", err)
	}
	return b.Bytes(), nil
}

// UnmarshalJSON decodes a tool call in LangChain's or OpenAI's shape; its
// arguments must be a JSON object (or a string holding one).
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var in toolCallIn
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("%w: tool call: %w", ErrInvalidMessage, err)
	}
	call, bad, err := in.toolCall()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if bad != nil {
		return fmt.Errorf("%w: tool call %q: %s", ErrInvalidMessage, bad.Name, bad.Error)
	}
	*c = call
	return nil
}
