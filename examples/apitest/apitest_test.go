package apitest_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/apitest"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"alpha beta gamma", []string{"alpha ", "beta ", "gamma"}},
		{"  lead", []string{"  ", "lead"}},
		{"x", []string{"x"}},
		{"", []string{""}},
	}
	for _, tt := range tests {
		got := apitest.Tokenize(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Tokenize(%q) (-want +got):\n%s", tt.in, diff)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("tokens of %q do not join back", tt.in)
		}
	}
}

// Tokenize scans for what the regular expression it documents finds,
// among all kinds of spaces, Unicode ones (not spaces to \s) and broken
// UTF-8.
func TestTokenizeMatchesItsExpression(t *testing.T) {
	re := regexp.MustCompile(`\S+\s*|\s+`)
	for _, in := range []string{
		"alpha beta gamma", "  lead", "trail  ", " \t\n\f\r", "a\tb\nc\fd\re",
		"wide\u00a0space\u2003here", "héllo wörld ", "bad\xff \xfe\xfd x", "\v tab",
		"w0 w1 w2 w3 w4 w5 w6 w7",
	} {
		want := re.FindAllString(in, -1)
		if diff := cmp.Diff(want, apitest.Tokenize(in)); diff != "" {
			t.Errorf("Tokenize(%q) (-expression +got):\n%s", in, diff)
		}
	}
}

func TestReplyFor(t *testing.T) {
	tests := []struct {
		msgs []llm.Message
		want string
	}{
		{nil, "(no input)"},
		{[]llm.Message{llm.Human("a"), llm.AI("b")}, "a"},
		{[]llm.Message{llm.Human("a"), llm.Human("")}, "(no input)"},
		{[]llm.Message{llm.HumanParts(llm.TextPart("x "), llm.TextPart("y"))}, "x y"},
	}
	for _, tt := range tests {
		if got := apitest.ReplyFor(tt.msgs); got != tt.want {
			t.Errorf("ReplyFor(%v) = %q, want %q", tt.msgs, got, tt.want)
		}
	}
}

func name(ev graph.Event) string {
	if ev.Mode == graph.StreamUpdates {
		u, _ := ev.Update()
		return "updates:" + u.Node
	}
	return string(ev.Mode)
}

// GRAPHS.md: for stream modes values, updates, messages, custom and a
// 2-token input, echo's events come in this order, the chunks share one
// run-<uuid> id, the reply carries it, and the thread has three
// checkpoints.
func TestEcho(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	g, err := apitest.Echo(saver, nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := g.DecodeInput([]byte(`{"messages":[{"role":"user","content":"hello wait"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var chunks []llm.Chunk
	var custom []string
	var last graph.State
	for ev, err := range g.Stream(ctx, in, &graph.RunOptions{ThreadID: "t", StreamModes: []graph.StreamMode{graph.StreamValues, graph.StreamUpdates, graph.StreamMessages, graph.StreamCustom}}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name(ev))
		if c, _, ok := graph.MessageAs[llm.Chunk](ev); ok {
			chunks = append(chunks, c)
		}
		if ev.Mode == graph.StreamCustom {
			b, _ := json.Marshal(ev.Data)
			custom = append(custom, string(b))
		}
		if s, ok := ev.Values(); ok {
			last = s
		}
	}
	want := []string{"values", "custom", "messages", "messages", "custom", "updates:echo", "values"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`{"event":"echo_start","tokens":2}`, `{"event":"echo_end","text":"hello wait"}`}, custom); diff != "" {
		t.Errorf("custom events (-want +got):\n%s", diff)
	}
	if len(chunks) != 2 || chunks[0].Content != "hello " || chunks[1].Content != "wait" || chunks[0].ID != chunks[1].ID || !strings.HasPrefix(chunks[0].ID, "run-") {
		t.Fatalf("chunks = %+v", chunks)
	}
	msgs := apitest.Messages.Get(last)
	if len(msgs) != 2 || msgs[1].Type != llm.TypeAI || msgs[1].Content != "hello wait" || msgs[1].ID != chunks[0].ID {
		t.Errorf("final messages = %+v", msgs)
	}
	var steps []int
	var sources []string
	for snap, err := range g.GetStateHistory(ctx, "t", nil) {
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, snap.Metadata.Step)
		sources = append(sources, snap.Metadata.Source)
	}
	if diff := cmp.Diff([]int{1, 0, -1}, steps); diff != "" {
		t.Errorf("checkpoint steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"loop", "loop", "input"}, sources); diff != "" {
		t.Errorf("checkpoint sources (-want +got):\n%s", diff)
	}
}

func TestApproval(t *testing.T) {
	ctx := context.Background()
	g, err := apitest.Approval(checkpoint.NewMemory(), nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := g.DecodeInput([]byte(`{"request":"deploy"}`))
	if err != nil {
		t.Fatal(err)
	}
	opts := &graph.RunOptions{ThreadID: "t"}
	out, err := g.Invoke(ctx, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	its := out.Interrupts()
	if len(its) != 1 {
		t.Fatalf("interrupts = %v", its)
	}
	b, _ := json.Marshal(its[0].Value)
	if string(b) != `{"question":"Approve deploy?"}` {
		t.Errorf("question = %s", b)
	}
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ask"}, snap.Next); diff != "" {
		t.Errorf("next (-want +got):\n%s", diff)
	}
	out, err = g.Invoke(ctx, graph.Resume("yes"), opts)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	if string(got) != `{"answer":"yes","decided":true,"request":"deploy"}` {
		t.Errorf("final state = %s", got)
	}
}

func TestSlow(t *testing.T) {
	ctx := context.Background()
	g, err := apitest.Slow(checkpoint.NewMemory(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &graph.RunOptions{ThreadID: "t"}
	for _, in := range []string{`{"tag":"a"}`, `{"tag":"b","delay_ms":1}`} {
		u, err := g.DecodeInput([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Invoke(ctx, u, opts); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := g.GetState(ctx, checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(apitest.Log{"a", "b"}, apitest.LogKey.Get(snap.Values)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if _, err := g.DecodeInput([]byte(`{"delay_ms":"soon"}`)); !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), "delay_ms") {
		t.Errorf("a non-number delay_ms: %v; want an input error naming delay_ms", err)
	}
	// A fresh thread shows log as [] before anything is in it.
	u, _ := g.DecodeInput([]byte(`{"delay_ms":0}`))
	var values []string
	for ev, err := range g.Stream(ctx, u, &graph.RunOptions{ThreadID: "t2", StreamModes: []graph.StreamMode{graph.StreamValues}}) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ev.Data)
		values = append(values, string(b))
	}
	// Without a tag the run logs "done".
	if diff := cmp.Diff([]string{`{"delay_ms":0,"log":[]}`, `{"delay_ms":0,"log":["done"]}`}, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

func TestSlowStopsWhenCancelled(t *testing.T) {
	g, err := apitest.Slow(checkpoint.NewMemory(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	u, _ := g.DecodeInput([]byte(`{"delay_ms":600000}`))
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, u, &graph.RunOptions{ThreadID: "t"})
		done <- err
	}()
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v, want context.Canceled", err)
	}
}
