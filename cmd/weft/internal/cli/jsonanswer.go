package cli

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// answerStream picks the answer out of a react.JSONFormat reply as the
// reply's text streams in, so the answer can be shown token by token
// rather than as raw JSON. The answer is the string "answer" in the
// reply's "action_input" object ({"action": "FINISH", "action_input":
// {"answer": ...}}), a top-level "answer", or a string "action_input":
// the places the react package reads it from. Only a reply whose
// "action" FINISH comes first streams, and only its first answer location;
// text outside a JSON object is ignored, and so is everything in a reply
// that calls a tool.
type answerStream struct {
	stack   []frame
	inStr   bool
	isKey   bool
	escaped bool
	// str holds the raw bytes of the string being read.
	str []byte
	// capturing is true while the string being read is the answer.
	capturing bool
	// raw is the answer's raw JSON string content so far; flushed is
	// its length when last decoded.
	raw     []byte
	flushed int
	// shown is the decoded answer returned so far.
	shown string
	// action is the reply's "action", once read.
	action string
	// started is set when the answer's string begins.
	started bool
}

// frame is an open JSON object or array.
type frame struct {
	object bool
	// expectKey is true where the object's next string is a key.
	expectKey bool
	// key is the object's latest key.
	key string
}

// Write reads more of the reply's text and returns the answer's text that
// it completes, if any.
func (a *answerStream) Write(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if a.inStr {
			a.stringByte(c)
			continue
		}
		if len(a.stack) == 0 {
			if c == '{' {
				// A new reply: the retry of one that did not parse.
				a.stack = append(a.stack, frame{object: true, expectKey: true})
				a.action, a.raw, a.flushed, a.shown, a.started = "", a.raw[:0], 0, "", false
			}
			continue
		}
		top := &a.stack[len(a.stack)-1]
		switch c {
		case '{':
			a.stack = append(a.stack, frame{object: true, expectKey: true})
		case '[':
			a.stack = append(a.stack, frame{})
		case '}', ']':
			a.stack = a.stack[:len(a.stack)-1]
		case ',':
			if top.object {
				top.expectKey = true
			}
		case '"':
			a.inStr, a.str = true, a.str[:0]
			a.isKey = top.object && top.expectKey
			a.capturing = !a.isKey && a.atAnswer()
			a.started = a.started || a.capturing
		}
	}
	return a.flush()
}

// stringByte reads one byte inside a string.
func (a *answerStream) stringByte(c byte) {
	switch {
	case a.escaped:
		a.escaped = false
	case c == '\\':
		a.escaped = true
	case c == '"':
		a.inStr = false
		top := &a.stack[len(a.stack)-1]
		switch {
		case a.isKey:
			top.key, top.expectKey = decodeString(a.str), false
		case len(a.stack) == 1 && top.key == "action":
			a.action = decodeString(a.str)
		}
		a.capturing = false
		return
	}
	if a.capturing {
		a.raw = append(a.raw, c)
	} else {
		a.str = append(a.str, c)
	}
}

// atAnswer reports whether a string value starting now is the answer.
func (a *answerStream) atAnswer() bool {
	// Only a reply already known to answer streams (document 002's order
	// puts "action" first), and only its first answer location: a reply
	// that calls a tool, or names its action late, is shown when the agent
	// has parsed it.
	if !strings.EqualFold(a.action, "FINISH") || a.started {
		return false
	}
	switch len(a.stack) {
	case 1:
		k := a.stack[0].key
		return k == "answer" || k == "action_input"
	case 2:
		return a.stack[0].key == "action_input" && a.stack[1].object && a.stack[1].key == "answer"
	}
	return false
}

// flush returns the answer's newly decodable text: raw up to the last
// complete escape and character, decoded.
func (a *answerStream) flush() string {
	if len(a.raw) == a.flushed {
		return ""
	}
	a.flushed = len(a.raw)
	raw := a.raw
	for n := -1; n != len(raw); {
		n = len(raw)
		raw = trimPartialEscape(raw)
	}
	// A chunk may end inside a UTF-8 sequence.
	for k := 0; k < 3 && len(raw) > 0 && !utf8.Valid(raw); k++ {
		raw = raw[:len(raw)-1]
	}
	text := decodeString(raw)
	if len(text) <= len(a.shown) || text[:len(a.shown)] != a.shown {
		return ""
	}
	out := text[len(a.shown):]
	a.shown = text
	return out
}

// Answer returns the answer's text shown so far.
func (a *answerStream) Answer() string { return a.shown }

// trimPartialEscape removes an escape that is cut short at the end of raw:
// a backslash, "\u" with fewer than four digits, or the first half of a
// surrogate pair, whose character is known only with the second.
func trimPartialEscape(raw []byte) []byte {
	if trailingBackslashes(raw)%2 == 1 {
		return raw[:len(raw)-1]
	}
	for k := 1; k <= 5 && k < len(raw); k++ {
		if raw[len(raw)-k] != 'u' || trailingBackslashes(raw[:len(raw)-k])%2 == 0 {
			continue
		}
		if k < 5 {
			return raw[:len(raw)-k-1]
		}
		if isHighSurrogate(raw[len(raw)-4:]) {
			return raw[:len(raw)-6]
		}
		return raw
	}
	return raw
}

func trailingBackslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

func isHighSurrogate(hex []byte) bool {
	var v rune
	for _, c := range hex {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			v |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= rune(c-'A') + 10
		default:
			return false
		}
	}
	return v >= 0xD800 && v < 0xDC00
}

// decodeString decodes the content of a JSON string; "" if it is not
// valid.
func decodeString(raw []byte) string {
	b := make([]byte, 0, len(raw)+2)
	b = append(append(append(b, '"'), raw...), '"')
	var s string
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s
}
