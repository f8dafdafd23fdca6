package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

var ctx = context.Background()

func TestScriptInOrderThenExhausted(t *testing.T) {
	m := scripted.New(llm.AI("one"), llm.AI("two"))
	for _, want := range []string{"one", "two"} {
		got, err := m.Generate(ctx, []llm.Message{llm.Human("hi")})
		if err != nil || got.Text() != want {
			t.Fatalf("Generate = %q, %v; want %q", got.Text(), err, want)
		}
	}
	_, err := m.Generate(ctx, nil)
	if !errors.Is(err, scripted.ErrExhausted) || !strings.Contains(err.Error(), "all 2 responses were used") {
		t.Errorf("err = %v", err)
	}
	for _, err := range m.Stream(ctx, nil) {
		if !errors.Is(err, scripted.ErrExhausted) {
			t.Errorf("stream err = %v", err)
		}
	}
}

func TestScriptLoops(t *testing.T) {
	m := scripted.NewScript(scripted.Options{Loop: true}, scripted.Response{Message: llm.AI("a")}, scripted.Response{Message: llm.AI("b")})
	var got []string
	for range 5 {
		msg, err := m.Generate(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.Text())
	}
	if d := cmp.Diff([]string{"a", "b", "a", "b", "a"}, got); d != "" {
		t.Error(d)
	}
}

func TestStreamMergesToGenerate(t *testing.T) {
	reply := llm.AI("  안녕하세요, let me   check the\njobs. ",
		llm.ToolCall{Name: "search_jobs", Args: json.RawMessage(`{"query":"UX 디자이너","city":"서울"}`)},
		llm.ToolCall{Name: "noop"},
	)
	gen, err := scripted.New(reply).Generate(ctx, []llm.Message{llm.Human("find jobs")})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []llm.Chunk
	for c, err := range scripted.New(reply).Stream(ctx, []llm.Message{llm.Human("find jobs")}) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	if d := cmp.Diff(gen, llm.Merge(chunks...).Message()); d != "" {
		t.Errorf("merged stream differs from Generate (-gen +stream):\n%s", d)
	}
	var words []string
	for _, c := range chunks {
		if c.Content != "" {
			words = append(words, c.Content)
		}
	}
	if d := cmp.Diff([]string{"  안녕하세요,", " let", " me", "   check", " the", "\njobs. "}, words); d != "" {
		t.Errorf("text pieces (-want +got):\n%s", d)
	}
	if gen.ToolCalls[0].ID != "call_1_1" || gen.ToolCalls[1].ID != "call_1_2" || string(gen.ToolCalls[1].Args) != "{}" {
		t.Errorf("tool calls = %+v", gen.ToolCalls)
	}
	if gen.ResponseMetadata.FinishReason() != "tool_calls" || gen.ResponseMetadata.ModelName() != scripted.ModelName {
		t.Errorf("metadata = %v", gen.ResponseMetadata)
	}
	if gen.Usage == nil || gen.Usage.InputTokens != 2 || gen.Usage.OutputTokens != 8 {
		t.Errorf("usage = %+v", gen.Usage)
	}
	var fragments int
	for _, c := range chunks {
		fragments += len(c.ToolCallChunks)
	}
	if fragments != 4 {
		t.Errorf("%d tool-call fragments, want each call in two", fragments)
	}
}

func TestStreamStopsEarlyAndOnCancel(t *testing.T) {
	m := scripted.New(llm.AI("a b c d"), llm.AI("e f g"))
	n := 0
	for range m.Stream(ctx, nil) {
		n++
		if n == 2 {
			break
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	for c, e := range m.Stream(cctx, nil) {
		if e != nil {
			err = e
			break
		}
		if c.Content == "e" {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestScriptedErrorAndRequests(t *testing.T) {
	boom := errors.New("overloaded")
	m := scripted.NewScript(scripted.Options{}, scripted.Response{Err: boom}, scripted.Response{Message: llm.AI("ok")})
	bound := m.BindTools([]llm.ToolSpec{{Name: "t"}})
	if _, err := bound.Generate(ctx, []llm.Message{llm.Human("x")}, llm.CallOptions{ToolChoice: "t"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := m.Generate(ctx, []llm.Message{llm.Human("y")}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || reqs[0].Tools[0].Name != "t" || reqs[0].Options.ToolChoice != "t" || reqs[1].Tools != nil || reqs[1].Messages[0].Text() != "y" {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestConcurrentCalls(t *testing.T) {
	const n = 20
	var replies []llm.Message
	for range n {
		replies = append(replies, llm.AI("r"))
	}
	m := scripted.New(replies...)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				_, _ = m.Generate(ctx, nil)
			} else {
				_, _ = llm.Collect(m.Stream(ctx, nil))
			}
		})
	}
	wg.Wait()
	if m.Remaining() != 0 || len(m.Requests()) != n {
		t.Errorf("remaining %d, requests %d", m.Remaining(), len(m.Requests()))
	}
}

func TestParseYAML(t *testing.T) {
	m, err := scripted.Parse([]byte(`
- content: "UX 디자이너가 되려면 먼저 멘토를 찾아볼게요."
  tool_calls:
    - name: search_mentors
      args: {field: ux, limit: 3}
    - id: call_custom
      name: search_jobs
      args: '{"query": "UX"}'
- content: 멘토 3명을 찾았어요.
`))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := m.Generate(ctx, nil)
	want := []llm.ToolCall{
		{ID: "call_1_1", Name: "search_mentors", Args: json.RawMessage(`{"field":"ux","limit":3}`)},
		{ID: "call_custom", Name: "search_jobs", Args: json.RawMessage(`{"query":"UX"}`)},
	}
	if d := cmp.Diff(want, first.ToolCalls); d != "" || first.Text() != "UX 디자이너가 되려면 먼저 멘토를 찾아볼게요." {
		t.Errorf("first reply %q (-want +got):\n%s", first.Text(), d)
	}
	second, _ := m.Generate(ctx, nil)
	if second.Text() != "멘토 3명을 찾았어요." {
		t.Errorf("second reply %q", second.Text())
	}

	looping, err := scripted.Parse([]byte("loop: true\nresponses:\n  - error: rate limited\n  - content: hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := looping.Generate(ctx, nil); !errors.Is(err, scripted.ErrScripted) || !strings.Contains(err.Error(), "rate limited") {
		t.Errorf("scripted error = %v", err)
	}
	for range 3 {
		_, _ = looping.Generate(ctx, nil)
	}
	if looping.Remaining() != 0 {
		t.Errorf("loop did not restart")
	}
}

func TestParseYAMLErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"", "empty"},
		{"- contnet: hi\n", "field contnet not found"},
		{"- tool_calls:\n    - args: {}\n", "tool call 1: no name"},
		{"- tool_calls:\n    - name: f\n      args: [1, 2]\n", "line 3: args must be a mapping"},
		{"- tool_calls:\n    - name: f\n      args: 'not json'\n", "not a JSON object"},
		{"- content: x\n  error: y\n", "an error and a reply"},
		{"responses: []\n", "no responses"},
		{"42\n", "must be a list"},
	} {
		_, err := scripted.Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := scripted.Load("testdata/missing.yaml"); err == nil {
		t.Errorf("Load of a missing file succeeded")
	}
}

func TestWords(t *testing.T) {
	for _, s := range []string{"", " ", "one", "a  b\tc\n", "  lead", "trail  "} {
		if got := strings.Join(scripted.Words(s), ""); got != s {
			t.Errorf("Words(%q) joins to %q", s, got)
		}
	}
}

// The script in the package documentation parses, as it is written there,
// into its two replies.
func TestPackageDocScript(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "scripted.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(f.Doc.Text(), "in YAML:\n\n")
	var script strings.Builder
	for line := range strings.Lines(rest) {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		script.WriteString(strings.TrimPrefix(line, "\t"))
	}
	m, err := scripted.Parse([]byte(script.String()))
	if err != nil {
		t.Fatalf("the documented script %q: %v", script.String(), err)
	}
	if n := m.Remaining(); n != 2 {
		t.Errorf("the documented script has %d responses, want 2", n)
	}
}
