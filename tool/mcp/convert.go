package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/tool"
)

// Error codes of the result envelope for MCP tools, beside the tool
// layer's own (tool.CodeTimeout, tool.CodeInvalidArgs).
const (
	// CodeToolError: the tool answered with isError; the envelope's error
	// is the text of its content.
	CodeToolError = tool.CodeFailed
	// CodeUnavailable: the tool's server is not connected (it died, or
	// has not started); it is being reconnected.
	CodeUnavailable = "unavailable"
	// CodeRemoved: the server no longer offers the tool.
	CodeRemoved = "removed"
	// CodeProtocol: the server answered the call with a protocol error
	// (a JSON-RPC error: unknown tool, invalid parameters).
	CodeProtocol = "mcp_error"
)

// Keys of the envelope's meta for MCP tools.
const (
	// MetaServer is the server's name in the configuration.
	MetaServer = "mcp_server"
	// MetaTool is the server's own name for the tool.
	MetaTool = "mcp_tool"
	// MetaContent holds the result's content blocks as the server sent
	// them (MCP's JSON), when some are not text: images, audio and
	// resources, which the model reads as placeholders.
	MetaContent = "mcp_content"
	// MetaStructured holds the structured content of a result with
	// isError; on success it is the envelope's data.
	MetaStructured = "mcp_structured_content"
	// MetaRPCCode is the JSON-RPC error code of a CodeProtocol failure.
	MetaRPCCode = "mcp_rpc_code"
)

// inputSchema is the JSON of a listed tool's input schema, as the server
// sent it up to key order; a tool without one takes no arguments.
func inputSchema(t *mcp.Tool) (json.RawMessage, error) {
	if t.InputSchema == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	return json.Marshal(t.InputSchema)
}

// description is what the model reads about t.
func description(t *mcp.Tool) string {
	switch {
	case t.Description != "":
		return t.Description
	case t.Title != "":
		return t.Title
	case t.Annotations != nil && t.Annotations.Title != "":
		return t.Annotations.Title
	}
	return ""
}

// result maps a tool's answer onto weft's envelope. On success the data is
// the structured content when there is some (kept as the server sent it),
// or else the content as text: text blocks as they are, one per line, and
// for other blocks a placeholder in brackets, the blocks themselves kept in
// meta (MetaContent). isError becomes a *tool.Error with CodeToolError and
// the content's text as its message.
func result(server, name string, res *mcp.CallToolResult) (data any, meta map[string]any, err error) {
	meta = map[string]any{MetaServer: server, MetaTool: name}
	text, plain := contentText(res.Content)
	if !plain {
		if raw, err := json.Marshal(res.Content); err == nil {
			meta[MetaContent] = json.RawMessage(raw)
		}
	}
	if res.IsError {
		if res.StructuredContent != nil {
			meta[MetaStructured] = res.StructuredContent
		}
		if strings.TrimSpace(text) == "" {
			text = fmt.Sprintf("tool %s of MCP server %s reported an error without a message", name, server)
		}
		return nil, nil, &tool.Error{Code: CodeToolError, Message: text, Meta: meta}
	}
	if res.StructuredContent != nil {
		return res.StructuredContent, meta, nil
	}
	return text, meta, nil
}

// contentText renders content blocks as the text a model reads; plain is
// false when some block is not text.
func contentText(blocks []mcp.Content) (text string, plain bool) {
	plain = true
	parts := make([]string, 0, len(blocks))
	for _, c := range blocks {
		switch b := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, b.Text)
			continue
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %s]", orUnknown(b.MIMEType), size(len(b.Data))))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %s]", orUnknown(b.MIMEType), size(len(b.Data))))
		case *mcp.ResourceLink:
			s := "[resource link " + b.URI
			if b.Name != "" {
				s += " " + b.Name
			}
			if b.Description != "" {
				s += ": " + b.Description
			}
			parts = append(parts, s+"]")
		case *mcp.EmbeddedResource:
			r := b.Resource
			switch {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Blob == nil:
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob))))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
		plain = false
	}
	return strings.Join(parts, "\n"), plain
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

func size(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}
