package cli

import (
	"strings"
	"testing"
)

func TestAnswerStream(t *testing.T) {
	tests := []struct {
		name, reply, want string
	}{
		{"finish", `{"thought": "t", "action": "FINISH", "action_input": {"answer": "안녕하세요.\n\n1. \"첫\" 단계"}}`, "안녕하세요.\n\n1. \"첫\" 단계"},
		{"escapes", `{"action": "FINISH", "action_input": {"answer": "a\\b \u00e9 \ud83d\ude00 \/ \t."}}`, "a\\b é 😀 / \t."},
		// Before "action" is read, nothing streams: the agent's parsed
		// answer is printed whole when its step ends.
		{"answer first", `{"action_input": {"answer": "yes"}, "action": "FINISH"}`, ""},
		{"string input before a tool action", `{"thought": "t", "action_input": "Seoul", "action": "search_places"}`, ""},
		// Only the first answer location streams.
		{"two answers", `{"action": "FINISH", "action_input": {"answer": "A"}, "answer": "B"}`, "A"},
		{"top-level answer", `{"thought": "t", "action": "FINISH", "answer": "top"}`, "top"},
		{"string input", `{"action": "FINISH", "action_input": "plain"}`, "plain"},
		{"text around", "Here you go:\n```json\n{\"action\": \"FINISH\", \"action_input\": {\"answer\": \"ok\"}}\n```", "ok"},
		{"tool call", `{"thought": "the answer needs data", "action": "get_learning_path", "action_input": {"career": "UX", "answer": "no"}}`, ""},
		{"nested answer keys", `{"action": "FINISH", "action_input": {"meta": {"answer": "no"}, "list": ["answer", {"answer": "no"}], "answer": "yes"}}`, "yes"},
		{"thought mentions answer", `{"thought": "my \"answer\": is", "action": "FINISH", "action_input": {"answer": "yes"}}`, "yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Whole, byte by byte (splitting escapes and UTF-8 sequences),
			// and in pieces of three bytes.
			for _, size := range []int{len(tt.reply), 1, 3} {
				var a answerStream
				var got strings.Builder
				for i := 0; i < len(tt.reply); i += size {
					got.WriteString(a.Write(tt.reply[i:min(i+size, len(tt.reply))]))
				}
				if got.String() != tt.want || a.Answer() != tt.want {
					t.Errorf("in pieces of %d bytes: streamed %q, Answer %q; want %q", size, got.String(), a.Answer(), tt.want)
				}
			}
		})
	}
}

// A reply that is retried starts the answer over.
func TestAnswerStreamRetry(t *testing.T) {
	var a answerStream
	a.Write(`{"action": "FINISH", "action_input": {"answer": "first"}, oops}`)
	a.Write(`{"action": "FINISH", "action_input": {"answer": "second"}}`)
	if a.Answer() != "second" {
		t.Errorf("Answer = %q, want the retry's", a.Answer())
	}
}
