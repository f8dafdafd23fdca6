package react

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/llm"
)

// answerCalls answers exactly the calls, valid or not, that have no tool
// message after their AI message, in the calls' order, and leaves a
// history whose calls are all answered as it is.
func TestAnswerCalls(t *testing.T) {
	c := func(id string) llm.ToolCall { return llm.ToolCall{ID: id, Name: "f", Args: json.RawMessage(`{}`)} }
	interrupted := func(id string) llm.Message { return llm.ToolError(id, "f", interruptedCall) }
	bad := llm.Message{Type: llm.TypeAI, InvalidToolCalls: []llm.InvalidToolCall{{ID: "x", Name: "f", Args: "{"}}}
	for _, tc := range []struct {
		name     string
		in, want []llm.Message
	}{
		{"all answered",
			[]llm.Message{llm.Human("q"), llm.AI("", c("a")), llm.ToolResult("a", "f", "ok"), llm.AI("done")},
			nil},
		{"one of two answered",
			[]llm.Message{llm.Human("q"), llm.AI("", c("a"), c("b")), llm.ToolResult("b", "f", "ok"), llm.Human("next")},
			[]llm.Message{llm.Human("q"), llm.AI("", c("a"), c("b")), llm.ToolResult("b", "f", "ok"), interrupted("a"), llm.Human("next")}},
		{"none answered, then more turns",
			[]llm.Message{llm.AI("", c("a")), llm.Human("next"), llm.AI("", c("b")), llm.ToolResult("b", "f", "ok")},
			[]llm.Message{llm.AI("", c("a")), interrupted("a"), llm.Human("next"), llm.AI("", c("b")), llm.ToolResult("b", "f", "ok")}},
		{"an invalid call, last",
			[]llm.Message{llm.Human("q"), bad},
			[]llm.Message{llm.Human("q"), bad, interrupted("x")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answerCalls(tc.in)
			want := tc.want
			if want == nil {
				want = tc.in
				if &got[0] != &tc.in[0] {
					t.Error("a history with every call answered was copied")
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
