package cli_test

import (
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/llm/scripted"
)

// An empty or blank question is refused before any model is asked.
func TestRunRefusesEmptyQuestion(t *testing.T) {
	runEnv(t)
	model := writeScript(t, "- content: \"반가워요!\"\n")
	for name, c := range map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"empty argument":      {"", []string{""}, "the question is empty (only whitespace)"},
		"blank arguments":     {"", []string{"  ", "\t\n"}, "the question is empty (only whitespace)"},
		"blank stdin, dash":   {" \n\t\n", []string{"-"}, "the question is empty: standard input (-) held only whitespace"},
		"blank stdin, piped":  {" \n", nil, "run takes the question to ask, as an argument or on standard input, and standard input held none"},
		"dash and more words": {"hi", []string{"-", "more"}, "- reads the question from standard input; pass it alone"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"run", "--agent", "career", "--model", model}, c.args...)
			out, _, err := executeIn(t, c.stdin, args...)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err = %v\nwant %s...", err, c.want)
			}
			if out != "" {
				t.Errorf("answered %q", out)
			}
		})
	}
}

// A question longer than one argument may be (128 KB on Linux) comes on
// standard input, with - or through a pipe; the thread keeps it whole.
func TestRunQuestionFromStdin(t *testing.T) {
	db := runEnv(t)
	long := strings.Repeat("제주 여행 동선을 짜 주세요. ", 20000) // ~400 KB
	for i, args := range [][]string{{"-"}, nil} {
		thread := []string{"stdin-dash", "stdin-pipe"}[i]
		model := writeScript(t, "- tool_calls: [{name: route, args: {route: agent}}]\n- content: \"네!\"\n")
		all := append([]string{"run", "--agent", "career", "--model", model, "--new-thread", thread}, args...)
		out, _, err := executeIn(t, long+"\n", all...)
		if err != nil {
			t.Fatal(err)
		}
		if out != "네!\n" {
			t.Errorf("stdout = %q", out)
		}
		msgs := threadTexts(t, db, thread)
		if len(msgs) == 0 || msgs[0] != "human: "+strings.TrimSpace(long) {
			t.Errorf("%v: the thread does not start with the whole question from stdin (%d messages)", args, len(msgs))
		}
	}
}

// threadTexts reads a career thread's messages as "type: text".
func threadTexts(t *testing.T, db, thread string) []string {
	t.Helper()
	saver, err := dburl.Open(t.Context(), db, dburl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	e, _ := examples.Lookup("career")
	a, err := e.Open(t.Context(), scripted.New(), examples.OpenOptions{Saver: saver.Saver})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	snap, err := a.Graph.GetState(t.Context(), checkpoint.Config{ThreadID: thread}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range react.Messages.Get(snap.Values) {
		got = append(got, string(m.Type)+": "+m.Text())
	}
	return got
}
