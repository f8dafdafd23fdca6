package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// The metadata of messages events built from canonical run metadata
// without decoding it is what decoding and encoding it again gives.
func TestRunMetaCanonicalIsRunMetaDecoded(t *testing.T) {
	const thread, run = "1fb18415-bddb-43fe-92fd-5a156c2cb466", "01a219e4-a2d6-7402-a3d3-4c13a49ab119"
	for _, md := range []string{
		``, `null`, `{}`,
		`{"assistant_id":"046b5dc7-2108-582c-9c6c-31d556d138f0","created_by":"system","graph_id":"echo"}`,
		// The server's keys replace the metadata's, first, between and last.
		`{"a":1,"langgraph_host":"x","m":[1,"b",{"c":null}],"run_id":"mine","thread_id":"t","z":true}`,
		`{"langgraph_host":{"x":[{},[]]},"langgraph_plan":false,"langgraph_version":-3,"run_attempt":"9","run_id":[],"thread_id":{}}`,
		`{"tags":["a"],"zz":{"k":"v","l":[1,2,{"m":"n"}]}}`,
		`{"a":{"b":{"c":{"d":"}],"}}}}`,
		`{"": 1}`, `{"a":"<b>"}`, `{"b":1,"a":2}`, `{"a":1.5}`, `{"a":12345678901234567890}`, `{"a":"\u00e9"}`,
		`{"é":"ü","langgraph_host":"ok"}`,
		`[1]`, `"s"`, `3`, `{"a":`, `{"a":1}x`,
	} {
		want := runMetaDecoded(json.RawMessage(md), thread, run, 2)
		if got := runMeta(json.RawMessage(md), thread, run, 2); string(got) != string(want) {
			t.Errorf("runMeta(%s) =\n%s\nwant\n%s", md, got, want)
		}
		if got, ok := runMetaCanonical(json.RawMessage(md), thread, run, 2); ok && string(got) != string(want) {
			t.Errorf("runMetaCanonical(%s) =\n%s\nwant\n%s", md, got, want)
		}
	}
	if _, ok := runMetaCanonical(json.RawMessage(`{"a":"x","m":[1,{"b":null}],"run_id":"r"}`), thread, run, 1); !ok {
		t.Error("canonical metadata took the slow path")
	}
}

// The events built by appending are what json.Marshal gives.
func TestAppendedEventsAreMarshalled(t *testing.T) {
	meta, _ := json.Marshal(struct {
		RunID   string `json:"run_id"`
		Attempt int    `json:"attempt"`
	}{"r<&>1", 12})
	if got := metadataEvent("r<&>1", 12); string(got) != string(meta) {
		t.Errorf("metadataEvent = %s, want %s", got, meta)
	}
	for _, path := range [][]any{nil, {}, {"__pregel_pull", "n<>"}, {"__pregel_push", 3}, {"a", 1.5, int64(2)}, {"a", []any{"b", 1}}} {
		want, _ := json.Marshal(path)
		if path == nil {
			want = []byte("[]")
		}
		if got := appendPath([]byte("x"), path); string(got) != "x"+string(want) {
			t.Errorf("appendPath(%#v) = %s, want x%s", path, got, want)
		}
	}
	// A chunk without calls or usage: the constant tail is what the
	// Marshal of the general case gives.
	c := llm.Chunk{Content: "a <b>", ID: "run-1"}
	got, err := appendChunk(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	c.ToolCallChunks = []llm.ToolCallChunk{}
	c.Usage = &llm.Usage{}
	general, err := appendChunk(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	usage := `,"usage_metadata":` + string(mustMarshal(t, c.Usage))
	if stripped := strings.Replace(string(general), usage, "", 1); string(got) != stripped {
		t.Errorf("chunk = %s, want %s (%s without its usage)", got, stripped, general)
	}
	want := `{"content":"a \u003cb\u003e","additional_kwargs":{},"response_metadata":{},"tool_call_chunks":[],"tool_calls":[],"invalid_tool_calls":[],"id":"run-1","type":"ai"}`
	if string(got) != want {
		t.Errorf("chunk = %s, want %s", got, want)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
