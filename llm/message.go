package llm

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
)

// MessageType is the kind of a message, spelled as LangChain spells it in
// the "type" field of its JSON.
type MessageType string

// The message types.
const (
	TypeSystem MessageType = "system"
	TypeHuman  MessageType = "human"
	TypeAI     MessageType = "ai"
	TypeTool   MessageType = "tool"
	// TypeRemove marks a removal (LangChain's RemoveMessage): written to a
	// message list, it removes the message with its ID.
	TypeRemove MessageType = "remove"
)

// RemoveAllID is the ID that, in a removal, removes every message before it
// (LangGraph's REMOVE_ALL_MESSAGES).
const RemoveAllID = "__remove_all__"

// Tool message statuses.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Message is one chat message. It is a value: copying it is cheap, and the
// slices it holds are treated as immutable once the message is built.
//
// Content holds the message's text. When Parts is non-nil the content is a
// list of parts instead (text and images), and Content must be empty; a
// message built with both encodes Content as a leading text part.
type Message struct {
	Type MessageType
	// ID identifies the message in a thread; a message list assigns one to
	// a message written without it.
	ID string
	// Name is the participant's name, or for a tool message the tool's.
	Name    string
	Content string
	Parts   []Part

	// ToolCalls are the calls an AI message asks for.
	ToolCalls []ToolCall
	// InvalidToolCalls are calls whose arguments the model produced but
	// that are not valid JSON objects; the raw text is kept so the caller
	// can show the model its mistake.
	InvalidToolCalls []InvalidToolCall

	// ToolCallID is, for a tool message, the ID of the call it answers.
	ToolCallID string
	// Status is, for a tool message, StatusSuccess, StatusError or empty.
	Status string
	// Artifact is, for a tool message, data kept with the result that is
	// not sent to the model (LangChain's ToolMessage.artifact).
	Artifact json.RawMessage

	// Usage is, for an AI message, the tokens the call used.
	Usage *Usage
	// ResponseMetadata is, for an AI message, what the provider said about
	// the response (model name, finish reason, ...).
	ResponseMetadata ResponseMetadata
	// AdditionalKwargs keeps LangChain's additional_kwargs as given; weft
	// neither reads nor sends them to a model.
	AdditionalKwargs map[string]json.RawMessage
}

// Part is one element of a message's content list: text, an image, or a
// block of another type kept verbatim.
type Part struct {
	Type PartType
	// Text is the text of a PartText.
	Text string
	// ImageURL is the image of a PartImage: an http(s) URL or a data URL
	// ("data:image/png;base64,...").
	ImageURL string
	// Detail is the image detail hint ("auto", "low", "high"), if any.
	Detail string
	// Raw is the block of any other type, exactly as it was decoded.
	Raw json.RawMessage
}

// PartType is the type of a content part.
type PartType string

// The content part types weft understands; others are kept in Part.Raw.
const (
	PartText  PartType = "text"
	PartImage PartType = "image_url"
)

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID   string
	Name string
	// Args is the arguments, a JSON object.
	Args json.RawMessage
}

// ToolCallRef returns the call's id: a subgraph sent (graph.Send) a
// ToolCall on a channel reports it as the call that started it in its
// lifecycle events (graph.ToolCallRef).
func (c ToolCall) ToolCallRef() string { return c.ID }

// InvalidToolCall is a tool call whose arguments could not be parsed.
type InvalidToolCall struct {
	ID    string
	Name  string
	Args  string
	Error string
}

// Usage counts the tokens of one model call, as LangChain's UsageMetadata.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
	// InputTokenDetails breaks input tokens down, with LangChain's keys
	// ("cache_read", "cache_creation", "audio").
	InputTokenDetails map[string]int64 `json:"input_token_details,omitempty"`
	// OutputTokenDetails breaks output tokens down ("reasoning", "audio").
	OutputTokenDetails map[string]int64 `json:"output_token_details,omitempty"`
}

// Add returns the sum of two usages; a nil operand counts as zero.
func (u *Usage) Add(v *Usage) *Usage {
	switch {
	case u == nil && v == nil:
		return nil
	case u == nil:
		u = &Usage{}
	case v == nil:
		v = &Usage{}
	}
	return &Usage{
		InputTokens:        u.InputTokens + v.InputTokens,
		OutputTokens:       u.OutputTokens + v.OutputTokens,
		TotalTokens:        u.TotalTokens + v.TotalTokens,
		InputTokenDetails:  addDetails(u.InputTokenDetails, v.InputTokenDetails),
		OutputTokenDetails: addDetails(u.OutputTokenDetails, v.OutputTokenDetails),
	}
}

func addDetails(a, b map[string]int64) map[string]int64 {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(map[string]int64, len(a)+len(b))
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

// ResponseMetadata is what a provider said about a response, with
// LangChain's keys ("model_name", "finish_reason", ...).
type ResponseMetadata map[string]any

// ModelName returns the "model_name" entry.
func (m ResponseMetadata) ModelName() string { s, _ := m["model_name"].(string); return s }

// FinishReason returns the "finish_reason" entry, or else the
// "stop_reason" entry (Anthropic's name for it).
func (m ResponseMetadata) FinishReason() string {
	if s, ok := m["finish_reason"].(string); ok {
		return s
	}
	s, _ := m["stop_reason"].(string)
	return s
}

// System returns a system message.
func System(text string) Message { return Message{Type: TypeSystem, Content: text} }

// Human returns a human message.
func Human(text string) Message { return Message{Type: TypeHuman, Content: text} }

// HumanParts returns a human message whose content is a list of parts.
func HumanParts(parts ...Part) Message {
	return Message{Type: TypeHuman, Parts: append([]Part{}, parts...)}
}

// AI returns an AI message with text and, optionally, tool calls.
func AI(text string, calls ...ToolCall) Message {
	m := Message{Type: TypeAI, Content: text}
	if len(calls) > 0 {
		m.ToolCalls = append([]ToolCall{}, calls...)
	}
	return m
}

// ToolResult returns the tool message answering call callID of tool name.
func ToolResult(callID, name, content string) Message {
	return Message{Type: TypeTool, ToolCallID: callID, Name: name, Content: content}
}

// ToolError returns a tool message that reports a failed call; the model
// sees content and can correct itself.
func ToolError(callID, name, content string) Message {
	m := ToolResult(callID, name, content)
	m.Status = StatusError
	return m
}

// Remove returns a removal of the message with id.
func Remove(id string) Message { return Message{Type: TypeRemove, ID: id} }

// RemoveAll returns a removal of every message before it.
func RemoveAll() Message { return Remove(RemoveAllID) }

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Type: PartText, Text: text} }

// ImagePart returns an image part for an http(s) or data URL.
func ImagePart(url string) Part { return Part{Type: PartImage, ImageURL: url} }

// ImageDataPart returns an image part holding base64-encoded data of the
// given media type ("image/png").
func ImageDataPart(mediaType, base64Data string) Part {
	return ImagePart("data:" + mediaType + ";base64," + base64Data)
}

// ImageData returns the media type and base64 data of an image part given
// as a data URL; ok is false for any other part.
func (p Part) ImageData() (mediaType, base64Data string, ok bool) {
	if p.Type != PartImage {
		return "", "", false
	}
	rest, found := strings.CutPrefix(p.ImageURL, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 {
		// A plain (percent-encoded) data URL: re-encode for providers that
		// only take base64.
		raw, err := url.PathUnescape(data)
		if err != nil {
			return "", "", false
		}
		return mediaType, base64.StdEncoding.EncodeToString([]byte(raw)), true
	}
	return mediaType, data, true
}

// Text returns the message's text: Content, or the text parts joined.
func (m Message) Text() string {
	if m.Parts == nil {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// MessageID returns the message's ID.
func (m Message) MessageID() string { return m.ID }

// WithMessageID returns a copy of the message with another ID.
func (m Message) WithMessageID(id string) Message { m.ID = id; return m }

// RemovesMessage reports whether the message is a removal.
func (m Message) RemovesMessage() bool { return m.Type == TypeRemove }

// IsError reports whether a tool message reports a failure.
func (m Message) IsError() bool { return m.Status == StatusError }

// contentParts returns the parts to encode: Parts, with Content in front
// when both are set.
func (m Message) contentParts() []Part {
	if m.Content == "" {
		return m.Parts
	}
	return append([]Part{TextPart(m.Content)}, m.Parts...)
}
