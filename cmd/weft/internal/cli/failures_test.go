package cli_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/cli"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// openAIAt points the openai: provider at url.
func openAIAt(t *testing.T, url string) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", url+"/v1")
}

func serve(t *testing.T, h http.HandlerFunc) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// The questions that the career agent's rules send to each route, so that
// no classifier call is made.
var routeQuestions = map[string]string{"chat": "안녕하세요", "agent": "멘토링 세션 찾아 주세요"}

// A model that fails is told on standard error with the provider, the
// status and the provider's message; the command exits with
// ExitModelFailed, on both routes; the thread records the failure as a
// fallback with its cause (issue 7 §2, §4).
func TestRunModelFailureIsTold(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"401", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}`)
		}, []string{"openai", "HTTP 401", "Incorrect API key provided"}},
		{"502 html", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, "<html><body>Bad Gateway</body></html>")
		}, []string{"openai", "HTTP 502", "Bad Gateway"}},
		{"garbage 200", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{not json at all")
		}, []string{"openai", "invalid response"}},
		{"empty 200", func(w http.ResponseWriter, r *http.Request) {}, []string{"openai", "invalid response"}},
	} {
		for route, q := range routeQuestions {
			t.Run(tc.name+"/"+route, func(t *testing.T) {
				db := runEnv(t)
				openAIAt(t, serve(t, tc.handler))
				out, _, err := execute(t, "run", "--agent", "career", "--model", "openai:gpt-4o-mini", "--new-thread", "t1", q)
				if code := cli.ExitCode(err); code != cli.ExitModelFailed {
					t.Fatalf("err = %v, exit %d; want exit %d", err, code, cli.ExitModelFailed)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not tell %q", err, w)
					}
				}
				if strings.Count(err.Error(), "openai:gpt-4o-mini") > 1 {
					t.Errorf("error %q repeats its prefix", err)
				}
				if !strings.Contains(out, "I could not fully complete this request") {
					t.Errorf("stdout = %q, want the fallback answer for users", out)
				}
				msgs := threadMessages(t, db, "t1")
				last := msgs[len(msgs)-1].ResponseMetadata
				if last[react.MetaFallback] != true || !strings.Contains(fmt.Sprint(last[react.MetaError]), "openai") {
					t.Errorf("the thread records %v, want a fallback with its cause", last)
				}
			})
		}
	}
}

// Nothing listening: the cause names the provider and the address.
func TestRunNothingListening(t *testing.T) {
	runEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	openAIAt(t, "http://"+addr)
	_, _, err = execute(t, "run", "--agent", "career", "--model", "openai:gpt-4o-mini", routeQuestions["agent"])
	if cli.ExitCode(err) != cli.ExitModelFailed || !strings.Contains(err.Error(), addr) {
		t.Errorf("err = %v (exit %d), want exit %d naming %s", err, cli.ExitCode(err), cli.ExitModelFailed, addr)
	}
}

// A stream that breaks after some text: the text shown stays, and the
// fallback answer starts on a line of its own (issue 7 §3).
func TestRunBrokenStreamNotGlued(t *testing.T) {
	runEnv(t)
	openAIAt(t, serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, "data: {broken\n\n")
	}))
	out, _, err := execute(t, "run", "--agent", "career", "--model", "openai:gpt-4o-mini", routeQuestions["agent"])
	if cli.ExitCode(err) != cli.ExitModelFailed {
		t.Fatalf("err = %v, exit %d", err, cli.ExitCode(err))
	}
	if !strings.HasPrefix(out, "Hello\nI could not fully complete") {
		t.Errorf("stdout = %q, want the partial text, then the fallback on its own line", out)
	}
}

// Tools that keep failing end the turn in a fallback answer: exit
// ExitNoAnswer, not 0 (issue 7 §13).
func TestRunToolFailuresExitNonZero(t *testing.T) {
	runEnv(t)
	model := writeScript(t, `
- tool_calls: [{name: book_mentoring, args: {session_id: "nope", user_id: "u"}}]
- tool_calls: [{name: book_mentoring, args: {session_id: "nope-2", user_id: "u"}}]
- content: "never used"
`)
	out, _, err := execute(t, "run", "--agent", "career", "--model", model, "멘토링 예약해 주세요")
	if cli.ExitCode(err) != cli.ExitNoAnswer || !strings.Contains(err.Error(), "tool_errors") {
		t.Fatalf("err = %v, exit %d; want exit %d", err, cli.ExitCode(err), cli.ExitNoAnswer)
	}
	if !strings.Contains(out, "kept failing") {
		t.Errorf("stdout = %q", out)
	}
}

// threadMessages reads the career agent's thread from the database db.
func threadMessages(t *testing.T, db, thread string) []llm.Message {
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
	msgs := react.Messages.Get(snap.Values)
	if len(msgs) == 0 {
		t.Fatalf("thread %s is empty", thread)
	}
	return msgs
}

// A failed turn shows as failed in weft threads, with its cause, and the
// next run on the thread starts a new turn after the fallback answer.
func TestRunAfterFailedTurn(t *testing.T) {
	runEnv(t)
	openAIAt(t, serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	if _, _, err := execute(t, "run", "--agent", "career", "--model", "openai:gpt-4o-mini", "--new-thread", "t1", "안녕하세요"); cli.ExitCode(err) != cli.ExitModelFailed {
		t.Fatalf("err = %v, want exit %d", err, cli.ExitModelFailed)
	}
	out, _, err := execute(t, "threads", "list")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads list", out, "t1 ", "career", "failed", "안녕하세요")
	out, _, err = execute(t, "threads", "show", "t1")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show", out, "next        fail\n", "failed      ", "no answer (model_error): openai: HTTP 401", "  ai: I could not fully complete this request")

	out, _, err = execute(t, "run", "--agent", "career", "--model", writeScript(t, "- content: \"반가워요!\"\n"), "--thread", "t1", "hi")
	if err != nil || out != "반가워요!\n" {
		t.Fatalf("next turn: stdout %q, err %v", out, err)
	}
	out, _, err = execute(t, "threads", "show", "t1")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "threads show, next turn", out, "next        nothing: the run finished\n",
		"  human: 안녕하세요\n", "  ai: I could not fully complete this request", "  human: hi\n", "  ai: 반가워요!\n")
	if strings.Contains(out, "failed ") {
		t.Errorf("the thread still shows the old failure:\n%s", out)
	}
}
