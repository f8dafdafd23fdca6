package llm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/llm"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMessageJSONGolden decodes LangChain-shaped messages (as LangChain's
// model_dump and the LangGraph Server API write them) and checks weft's
// encoding against golden files: it is stable (decoding it gives the same
// messages and encodes the same), and for LangChain's own shapes it says
// nothing the input did not (every key and value it has is in the input).
func TestMessageJSONGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/messages/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			input := readFile(t, in)
			var msgs []llm.Message
			if err := json.Unmarshal(input, &msgs); err != nil {
				t.Fatalf("decode %s: %v", in, err)
			}
			got, err := json.MarshalIndent(msgs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			goldenPath := strings.TrimSuffix(in, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden := readFile(t, goldenPath)
			if !bytes.Equal(got, golden) {
				t.Errorf("encoding differs from %s (run with -update to accept):\n%s", goldenPath, cmp.Diff(string(golden), string(got)))
			}

			var again []llm.Message
			if err := json.Unmarshal(golden, &again); err != nil {
				t.Fatalf("decode %s: %v", goldenPath, err)
			}
			if d := cmp.Diff(msgs, again); d != "" {
				t.Errorf("decoding the golden file gives other messages (-input +golden):\n%s", d)
			}
			reenc, _ := json.MarshalIndent(again, "", "  ")
			if !bytes.Equal(append(reenc, '\n'), golden) {
				t.Errorf("re-encoding the golden file changes it")
			}

			if name != "tolerated" {
				var inV, outV any
				_ = json.Unmarshal(input, &inV)
				_ = json.Unmarshal(golden, &outV)
				if path, ok := subset(outV, inV, "$"); !ok {
					t.Errorf("the encoding has %s, which the input does not", path)
				}
			}
		})
	}
	if n < 5 {
		t.Fatalf("found %d samples in testdata/messages", n)
	}
}

// subset reports whether every object key of a (recursively) is in b with
// the same value, lists matching element by element.
func subset(a, b any, path string) (string, bool) {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range a {
			bv, ok := bm[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := subset(v, bv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(bl) != len(a) {
			return path, false
		}
		for i := range a {
			if p, ok := subset(a[i], bl[i], path+"["+string(rune('0'+i))+"]"); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(a, b)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMessageJSONTolerated(t *testing.T) {
	var msgs []llm.Message
	if err := json.Unmarshal(readFile(t, "testdata/messages/tolerated.json"), &msgs); err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{
		llm.Human("Plan a day in Busan"),
		llm.System("Be brief."),
		llm.AI("", llm.ToolCall{ID: "call_1", Name: "popular_places", Args: json.RawMessage(`{"city":"Busan","limit":5}`)}),
		llm.ToolResult("call_1", "", `["Haeundae", "Gamcheon"]`),
		{
			Type:      llm.TypeAI,
			ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "route", Args: json.RawMessage(`{"stops":["Haeundae","Gamcheon"]}`)}, {ID: "call_4", Name: "noop", Args: json.RawMessage(`{}`)}},
			InvalidToolCalls: []llm.InvalidToolCall{{ID: "call_3", Name: "weather", Args: `{"city": `,
				Error: "tool arguments are not valid JSON: unexpected end of JSON input"}},
		},
		llm.HumanParts(
			llm.TextPart("Is this photo from Gamcheon?"),
			llm.ImageDataPart("image/png", "iVBORw0KGgo="),
			llm.ImagePart("https://example.com/gamcheon.jpg"),
			llm.ImagePart("https://example.com/plain-string-url.jpg"),
		),
		{Type: llm.TypeAI, ID: "run-1", Content: "Yes, it is."},
	}
	if d := cmp.Diff(want, msgs); d != "" {
		t.Errorf("decoded messages (-want +got):\n%s", d)
	}
}

func TestMessageJSONErrors(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"unknown type", `{"type":"robot","content":"hi"}`, `unknown message type "robot"`},
		{"no type", `{"content":"hi"}`, `no "type"`},
		{"content number", `{"type":"human","content":42}`, "content must be a string or a list"},
		{"part without type", `{"type":"human","content":[{"text":"hi"}]}`, `has no "type"`},
		{"image without url", `{"type":"human","content":[{"type":"image_url","image_url":{}}]}`, "has no url"},
		{"tool call without name", `{"type":"ai","content":"","tool_calls":[{"args":{}}]}`, "has no name"},
		{"not an object", `["human"]`, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m llm.Message
			err := json.Unmarshal([]byte(tc.json), &m)
			if !errors.Is(err, llm.ErrInvalidMessage) {
				t.Fatalf("error %v does not match ErrInvalidMessage", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := json.Marshal(llm.Message{Content: "no type"}); !errors.Is(err, llm.ErrInvalidMessage) {
		t.Errorf("encoding a message without a type: got %v, want ErrInvalidMessage", err)
	}
}

func TestMessageAccessors(t *testing.T) {
	m := llm.HumanParts(llm.TextPart("a "), llm.ImagePart("https://x/y.png"), llm.TextPart("b"))
	if got := m.Text(); got != "a b" {
		t.Errorf("Text() = %q, want %q", got, "a b")
	}
	if got := llm.AI("hi").Text(); got != "hi" {
		t.Errorf("Text() = %q", got)
	}
	// Content and Parts both set: Content leads.
	both := llm.Message{Type: llm.TypeHuman, Content: "first ", Parts: []llm.Part{llm.TextPart("second")}}
	if got := both.Text(); got != "first second" {
		t.Errorf("Text() = %q", got)
	}
	b, _ := json.Marshal(both)
	if want := `{"type":"human","content":[{"type":"text","text":"first "},{"type":"text","text":"second"}]}`; string(b) != want {
		t.Errorf("encoding = %s, want %s", b, want)
	}

	h := llm.Human("x")
	h2 := h.WithMessageID("id-2")
	if h.MessageID() != "" || h2.MessageID() != "id-2" {
		t.Errorf("WithMessageID changed the receiver or did not set the id")
	}
	if h.RemovesMessage() || !llm.Remove("id").RemovesMessage() || llm.RemoveAll().ID != llm.RemoveAllID {
		t.Errorf("RemovesMessage wrong")
	}
	if !llm.ToolError("c", "t", "boom").IsError() || llm.ToolResult("c", "t", "ok").IsError() {
		t.Errorf("IsError wrong")
	}

	for _, tc := range []struct {
		part      llm.Part
		mediaType string
		data      string
		ok        bool
	}{
		{llm.ImageDataPart("image/jpeg", "AAAA"), "image/jpeg", "AAAA", true},
		{llm.ImagePart("data:text/plain,hi%20there"), "text/plain", "aGkgdGhlcmU=", true},
		{llm.ImagePart("https://example.com/a.png"), "", "", false},
		{llm.TextPart("data:image/png;base64,AAAA"), "", "", false},
	} {
		mt, data, ok := tc.part.ImageData()
		if mt != tc.mediaType || data != tc.data || ok != tc.ok {
			t.Errorf("ImageData(%q) = %q, %q, %v; want %q, %q, %v", tc.part.ImageURL, mt, data, ok, tc.mediaType, tc.data, tc.ok)
		}
	}

	md := llm.ResponseMetadata{"model_name": "m", "stop_reason": "end_turn"}
	if md.ModelName() != "m" || md.FinishReason() != "end_turn" {
		t.Errorf("metadata accessors: %q %q", md.ModelName(), md.FinishReason())
	}
}

// TestMessageGraphContract checks, without importing graph, the methods
// graph's message channel relies on.
func TestMessageGraphContract(t *testing.T) {
	var _ interface {
		MessageID() string
		WithMessageID(string) llm.Message
		RemovesMessage() bool
	} = llm.Message{}
	// A zero message must encode (graph encodes write ops with omitzero).
	type op struct {
		Msg    llm.Message `json:"msg,omitzero"`
		Remove string      `json:"remove,omitempty"`
	}
	b, err := json.Marshal([]op{{Remove: "x"}, {Msg: llm.Human("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	var back []op
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back[0].Remove != "x" || back[1].Msg.Text() != "hi" {
		t.Errorf("round trip: %s", b)
	}
}
