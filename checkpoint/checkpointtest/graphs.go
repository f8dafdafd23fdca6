package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// Msg is the message type of the suite's graphs.
type Msg struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text"`
}

// MessageID implements graph.MessageLike.
func (m Msg) MessageID() string { return m.ID }

// WithMessageID implements graph.MessageLike.
func (m Msg) WithMessageID(id string) Msg { m.ID = id; return m }

// Messages is the suite's message channel.
var Messages = graph.Messages[Msg]("messages")

func texts(s graph.State) string {
	var out []string
	for _, m := range Messages.Get(s) {
		out = append(out, m.Text)
	}
	return strings.Join(out, ",")
}

func say(text string, calls *atomic.Int64) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Update, error) {
		n := calls.Add(1)
		return Messages.Write(Msg{Text: strings.ReplaceAll(text, "#", fmt.Sprint(n))}), nil
	}
}

func testGraphInterruptResume(t *testing.T, s *checkpoint.Saver) {
	var drafts, asks, finishes atomic.Int64
	build := func() *graph.Graph {
		g, err := graph.New(Messages).AddNode(
			"draft", say("draft", &drafts), nil).AddNode(

			"approve", func(ctx context.Context, st graph.State) (graph.Update, error) {
				asks.Add(1)
				ans, err := graph.Interrupt[string](ctx, "approve "+Messages.Get(st)[len(Messages.Get(st))-1].Text+"?")
				if err != nil {
					return graph.Update{}, err
				}
				return Messages.Write(Msg{Text: "approved:" + ans}), nil
			}, nil).AddNode(

			"finish", say("done", &finishes), nil).
			AddEdge(graph.START, "draft").AddEdge("draft", "approve").AddEdge("approve", "finish").Compile(&graph.CompileOptions{Checkpointer: s})

		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	opts := graph.RunOptions{ThreadID: "hitl", Metadata: map[string]any{"user": "ann"}}
	want := []string{}
	for turn := range 3 {
		st, err := build().Invoke(bg, Messages.Write(Msg{Text: fmt.Sprintf("ask%d", turn)}), &opts)
		if err != nil {
			t.Fatal(err)
		}
		its := st.Interrupts()
		if len(its) != 1 || its[0].Value != "approve draft?" {
			t.Fatalf("turn %d: interrupts = %+v; want one asking to approve the draft", turn, its)
		}
		// A new graph over the same saver, as another process would resume.
		st, err = build().Invoke(bg, graph.Resume(fmt.Sprintf("yes%d", turn)), &opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Interrupts()) != 0 {
			t.Fatalf("turn %d: still interrupted after resume: %+v", turn, st.Interrupts())
		}
		want = append(want, fmt.Sprintf("ask%d", turn), "draft", fmt.Sprintf("approved:yes%d", turn), "done")
		if got := texts(st); got != strings.Join(want, ",") {
			t.Fatalf("turn %d: messages = %s; want %s", turn, got, strings.Join(want, ","))
		}
	}
	if drafts.Load() != 3 || asks.Load() != 6 || finishes.Load() != 3 {
		t.Fatalf("draft ran %d times, approve %d, finish %d; want 3, 6, 3", drafts.Load(), asks.Load(), finishes.Load())
	}
	snap, err := build().GetState(bg, checkpoint.Config{ThreadID: "hitl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Next) != 0 || texts(snap.Values) != strings.Join(want, ",") {
		t.Fatalf("final state: next %v, messages %s", snap.Next, texts(snap.Values))
	}
	if snap.Metadata.Extra["user"] != "ann" {
		t.Fatalf("metadata = %+v; want the run's", snap.Metadata)
	}
	// Every checkpoint of the history reads back.
	n := 0
	for snap, err := range build().GetStateHistory(bg, "hitl", nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 1 {
			continue
		}
		if got := texts(snap.Values); !strings.HasPrefix(strings.Join(want, ","), got) {
			t.Fatalf("history checkpoint %s has messages %q, not a prefix of the final list", snap.Config.CheckpointID, got)
		}
	}
	if n < 12 {
		t.Fatalf("history has %d checkpoints; want at least 12", n)
	}
}

var errFlaky = errors.New("flaky failed")

func testGraphPendingWrites(t *testing.T, s *checkpoint.Saver) {
	var oks, flakies, joins atomic.Int64
	var fail atomic.Bool
	fail.Store(true)
	g, err := graph.New(Messages).AddNode(
		"ok", say("ok#", &oks), nil).AddNode(

		"flaky", func(ctx context.Context, st graph.State) (graph.Update, error) {
			flakies.Add(1)
			if fail.Load() {
				return graph.Update{}, errFlaky
			}
			return Messages.Write(Msg{Text: "flaky"}), nil
		}, nil).AddNode(

		"join", say("join#", &joins), nil).
		AddEdge(graph.START, "ok").AddEdge(graph.START, "flaky").
		AddJoin([]string{"ok", "flaky"}, "join").Compile(&graph.CompileOptions{Checkpointer: s})

	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "fail", Durability: graph.DurabilitySync}
	_, err = g.Invoke(bg, Messages.Write(Msg{Text: "go"}), &opts)
	if !errors.Is(err, errFlaky) {
		t.Fatalf("first run: %v; want the node's error", err)
	}
	snap, err := g.GetState(bg, checkpoint.Config{ThreadID: "fail"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]graph.TaskState{}
	for _, ts := range snap.Tasks {
		byName[ts.Name] = ts
	}
	if byName["flaky"].Error == "" || byName["ok"].Error != "" {
		t.Fatalf("tasks after the failure = %+v; want flaky failed and ok not", snap.Tasks)
	}
	fail.Store(false)
	st, err := g.Invoke(bg, graph.Update{}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if oks.Load() != 1 || flakies.Load() != 2 || joins.Load() != 1 {
		t.Fatalf("ok ran %d times, flaky %d, join %d; want 1, 2, 1 (the step's successful task is not run again)", oks.Load(), flakies.Load(), joins.Load())
	}
	if got := texts(st); got != "go,flaky,ok1,join1" {
		t.Fatalf("messages = %s; want go,flaky,ok1,join1", got)
	}
}

func testGraphForkReplay(t *testing.T, s *checkpoint.Saver) {
	var as, bs, cs atomic.Int64
	g, err := graph.New(Messages).AddNode(
		"a", say("a#", &as), nil).AddNode(
		"b", say("b#", &bs), nil).AddNode(
		"c", say("c#", &cs), nil).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(&graph.CompileOptions{Checkpointer: s})

	if err != nil {
		t.Fatal(err)
	}
	opts := graph.RunOptions{ThreadID: "tt"}
	st, err := g.Invoke(bg, Messages.Write(Msg{Text: "in"}), &opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(st); got != "in,a1,b1,c1" {
		t.Fatalf("first run = %s", got)
	}
	first, err := g.GetState(bg, checkpoint.Config{ThreadID: "tt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var beforeB graph.StateSnapshot
	for snap, err := range g.GetStateHistory(bg, "tt", nil) {
		if err != nil {
			t.Fatal(err)
		}
		if cmp.Equal(snap.Next, []string{"b"}) {
			beforeB = snap
		}
	}
	if beforeB.Config.CheckpointID == "" {
		t.Fatal("no checkpoint in the history has b next")
	}
	// Replay from before b: b and c run again and answer differently; the
	// new branch reuses the old branch's channel versions.
	replay := opts
	replay.CheckpointID = beforeB.Config.CheckpointID
	st, err = g.Invoke(bg, graph.Update{}, &replay)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(st); got != "in,a1,b2,c2" {
		t.Fatalf("replay = %s; want in,a1,b2,c2", got)
	}
	if as.Load() != 1 {
		t.Fatalf("a ran %d times; the replay must start after it", as.Load())
	}
	old, err := g.GetState(bg, first.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(old.Values); got != "in,a1,b1,c1" {
		t.Fatalf("the old branch's last checkpoint now reads %s; want in,a1,b1,c1", got)
	}
	latest, err := g.GetState(bg, checkpoint.Config{ThreadID: "tt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(latest.Values); got != "in,a1,b2,c2" {
		t.Fatalf("latest = %s", got)
	}
	// Fork with UpdateState at the old checkpoint, then continue the fork.
	cfg, err := g.UpdateState(bg, beforeB.Config, Messages.Write(Msg{Text: "edited"}), "a")
	if err != nil {
		t.Fatal(err)
	}
	st, err = g.Invoke(bg, graph.Update{}, &graph.RunOptions{ThreadID: "tt", CheckpointID: cfg.CheckpointID})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(st); got != "in,a1,edited,b3,c3" {
		t.Fatalf("after UpdateState fork = %s; want in,a1,edited,b3,c3", got)
	}
	for _, c := range []struct {
		cfg  checkpoint.Config
		want string
	}{{first.Config, "in,a1,b1,c1"}, {latest.Config, "in,a1,b2,c2"}, {beforeB.Config, "in,a1"}} {
		snap, err := g.GetState(bg, c.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(snap.Values); got != c.want {
			t.Fatalf("checkpoint %s reads %s after the forks; want %s", c.cfg.CheckpointID, got, c.want)
		}
	}
}
