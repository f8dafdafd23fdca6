package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolName is the longest tool name OpenAI and Anthropic accept; names
// are made of letters, digits, '_' and '-' (^[a-zA-Z0-9_-]{1,64}$).
const MaxToolName = 64

// ToolName is the name under which a server's tool is registered:
// SERVER__TOOL. Server names cannot contain "__" or end in '_' (Parse
// checks), so the first "__" ends the server's part and tools of different
// servers never share a name.
//
// A tool name that does not fit, because it has characters other than
// letters, digits, '_' and '-' (MCP allows '.', and servers send others) or
// because the whole would pass 64 characters, is made to fit: each other
// character becomes '_', the name is cut to fit, and "_" and 8 hexadecimal
// digits of the SHA-256 of the server's own name for the tool are added, so
// that the result is the same at every listing and two names that differ
// only in the replaced characters stay apart.
func ToolName(server, name string) string {
	clean := sanitize(name)
	full := server + "__" + clean
	if clean == name && len(full) <= MaxToolName {
		return full
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	room := max(MaxToolName-len(server)-2-len(suffix), 0)
	if len(clean) > room {
		clean = clean[:room]
	}
	return server + "__" + clean + suffix
}

// sanitize replaces each character that is not a letter, digit, '_' or '-'
// with '_'.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
