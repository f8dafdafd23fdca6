package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/cmd/weft/internal/cli"
	"github.com/weftlabs/weft/internal/redistest"
	"github.com/weftlabs/weft/internal/sdkcompat"
)

// syncBuffer is a log the test reads while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var urlRE = regexp.MustCompile(`url=(http://\S+)`)

// startServe runs weft serve in-process until the test ends, and returns
// its URL.
func startServe(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := cli.New("v0.0.0-test")
	var out syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("weft serve after SIGINT: %v", err)
		}
		if !strings.Contains(out.String(), "weft serve: stopped") {
			t.Errorf("weft serve did not say it stopped:\n%s", out.String())
		}
	})
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(out.String()); m != nil {
			return m[1], &out
		}
		select {
		case err := <-done:
			t.Fatalf("weft serve exited: %v\n%s", err, out.String())
		default:
		}
	}
	t.Fatalf("weft serve did not start:\n%s", out.String())
	return "", nil
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

func TestServeAPITest(t *testing.T) {
	url, _ := startServe(t, "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"))
	body := post(t, url+"/assistants/search", `{}`)
	for _, g := range []string{`"graph_id":"echo"`, `"graph_id":"approval"`, `"graph_id":"slow"`} {
		if !strings.Contains(body, g) {
			t.Errorf("assistants lack %s: %s", g, body)
		}
	}
	out := post(t, url+"/runs/wait", `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"served"}]}}`)
	if !strings.Contains(out, `"content":"served"`) {
		t.Errorf("wait = %s", out)
	}
}

// Without --model the example agents answer with their demo scripts, and
// the log says so.
func TestServeExamples(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	url, log := startServe(t, "--db", filepath.Join(dir, "weft.db"))
	body := post(t, url+"/assistants/search", `{}`)
	for _, g := range []string{`"graph_id":"approval"`, `"graph_id":"career"`, `"graph_id":"marketing"`, `"graph_id":"travel"`} {
		if !strings.Contains(body, g) {
			t.Errorf("assistants lack %s: %s", g, body)
		}
	}
	if !strings.Contains(log.String(), "offline scripted demo model") {
		t.Errorf("the log does not say the agents are scripted:\n%s", log.String())
	}

	// The orchestrator agent stops at its plan's approval point, and goes
	// on to its report once the plan is accepted.
	var thread struct {
		ID string `json:"thread_id"`
	}
	if err := json.Unmarshal([]byte(post(t, url+"/threads", `{}`)), &thread); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Interrupts []struct {
			Value struct {
				Kind string `json:"kind"`
			} `json:"value"`
		} `json:"__interrupt__"`
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	runs := url + "/threads/" + thread.ID + "/runs/wait"
	if err := json.Unmarshal([]byte(post(t, runs, `{"assistant_id":"marketing","input":{"messages":[{"role":"user","content":"지난 분기 채널별 성과를 분석해 줘"}]}}`)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Interrupts) != 1 || st.Interrupts[0].Value.Kind != "plan" {
		t.Fatalf("marketing did not stop at its plan: %+v", st.Interrupts)
	}
	st.Interrupts = nil
	if err := json.Unmarshal([]byte(post(t, runs, `{"assistant_id":"marketing","command":{"resume":{"action":"accept"}}}`)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Interrupts) != 0 {
		t.Fatalf("marketing stopped again: %+v", st.Interrupts)
	}
	if last := st.Messages[len(st.Messages)-1]; last.Type != "ai" || !strings.Contains(last.Content, "캠페인") {
		t.Errorf("marketing's answer = %+v", last)
	}
	// Its results are kept beside the database.
	if _, err := os.Stat(filepath.Join(dir, "weft-results", thread.ID)); err != nil {
		t.Errorf("marketing's results: %v", err)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestServeRefusesBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:2024", ":2024", "192.0.2.1:2024"} {
		_, _, err := execute(t, "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "weft.db"))
		if !errors.Is(err, cli.ErrInsecureAddr) || !strings.Contains(err.Error(), "--insecure-no-auth") {
			t.Errorf("--addr %s: %v; want a refusal naming --insecure-no-auth", addr, err)
		}
	}
	for _, bad := range [][]string{
		{"--addr", "nonsense"},
		{"--graphs", "everything"},
		{"--durability", "forever"},
	} {
		if _, _, err := execute(t, append([]string{"serve", "--db", filepath.Join(t.TempDir(), "weft.db")}, bad...)...); err == nil {
			t.Errorf("weft serve %v started", bad)
		}
	}
}

// A port another program holds is told at once, as such, with the flag
// that picks another, before the database is created.
func TestServePortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	db := filepath.Join(t.TempDir(), "weft.db")
	_, _, err = execute(t, "serve", "--addr", addr, "--db", db)
	if err == nil {
		t.Fatalf("weft serve --addr %s started on a port another program holds", addr)
	}
	for _, want := range []string{"--addr " + addr, "another program is already listening there", "address already in use", "pass --addr with another port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was created before the port was found taken: %v", err)
	}
}

// The official JS SDK, driven by the compatibility suite, works against
// weft serve --graphs apitest, and where the reference server departs
// from the spec weft follows the spec.
func TestServeSDKCompat(t *testing.T) {
	url, _ := startServe(t, "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"))
	sdkCompat(t, url)
}

// The same, with runs' streams going through Redis (--redis).
func TestServeSDKCompatRedis(t *testing.T) {
	_, prefix := redistest.New(t)
	url, _ := startServe(t, "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"), "--redis", redistest.ServerURL(), "--redis-prefix", prefix)
	sdkCompat(t, url)
}

func sdkCompat(t *testing.T, url string) {
	t.Helper()
	for _, r := range sdkcompat.Run(t, url, nil) {
		for quirk, side := range r.Quirks {
			if side != "spec" {
				t.Errorf("case %s: quirk %s follows the %s", r.Case, quirk, side)
			}
		}
	}
}

// weft serve serves the web UI at / unless --ui=false, and the API beside
// it either way.
func TestServeWebUI(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ui   bool
	}{{nil, true}, {[]string{"--ui=false"}, false}} {
		url, _ := startServe(t, append([]string{"--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db")}, tc.args...)...)
		res, err := http.Get(url + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		served := res.StatusCode == 200 && strings.Contains(string(body), `src="/ui/app.js"`) && res.Header.Get("Content-Security-Policy") != ""
		if served != tc.ui {
			t.Errorf("%v: GET / = %d (UI served: %v, want %v)", tc.args, res.StatusCode, served, tc.ui)
		}
		if out := post(t, url+"/runs/wait", `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"beside the UI"}]}}`); !strings.Contains(out, "beside the UI") {
			t.Errorf("%v: the API answered %s", tc.args, out)
		}
	}
}

// --webhook-hosts limits the hosts runs' webhooks may name, and
// --no-webhooks refuses them: such runs are answered 400 naming webhook.
func TestServeWebhookFlags(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		hook  string
		want  int
	}{
		{[]string{"--no-webhooks"}, "https://hooks.example.com/x", 400},
		{[]string{"--webhook-hosts", "hooks.example.com"}, "http://127.0.0.1:9/x", 400},
		{[]string{"--webhook-hosts", "*.example.com,127.0.0.1"}, "http://127.0.0.1:9/x", 200},
	} {
		url, _ := startServe(t, append([]string{"--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db")}, tc.flags...)...)
		body := `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"x"}]},"webhook":"` + tc.hook + `"}`
		res, err := http.Post(url+"/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want || (tc.want == 400 && !strings.Contains(string(msg), "webhook")) {
			t.Errorf("%v, webhook %s: %d %s; want %d", tc.flags, tc.hook, res.StatusCode, msg, tc.want)
		}
	}
}
