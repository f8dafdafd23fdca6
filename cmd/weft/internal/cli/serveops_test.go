package cli_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/cmd/weft/internal/cli"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/internal/redistest"
	"github.com/weftlabs/weft/server/apikey"
)

const (
	cliAliceKey = "alice-cli-key-0123456789"
	cliBobKey   = "bob-cli-key-0123456789ab"
)

func request(t *testing.T, method, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func keysFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.yaml")
	doc := "keys:\n  - user: alice\n    sha256: " + apikey.Hash(cliAliceKey) + "\n"
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// weft serve with keys from a file and from $WEFT_API_KEYS: each key is a
// user, a request without one is refused, /ok and /metrics stay open, and
// a user's thread is not another's.
func TestServeAPIKeys(t *testing.T) {
	t.Setenv(apikey.EnvVar, "bob:"+cliBobKey)
	url, log := startServe(t, "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"), "--api-keys", keysFile(t))
	if st, _, body := request(t, "POST", url+"/threads", `{}`); st != 401 || !strings.Contains(body, "x-api-key") {
		t.Errorf("no key: %d %s", st, body)
	}
	st, _, body := request(t, "POST", url+"/threads", `{}`, "x-api-key", cliAliceKey)
	if st != 200 {
		t.Fatalf("alice's key: %d %s", st, body)
	}
	tid := strings.Split(strings.Split(body, `"thread_id":"`)[1], `"`)[0]
	if st, _, _ := request(t, "GET", url+"/threads/"+tid, "", "Authorization", "Bearer "+cliBobKey); st != 404 {
		t.Errorf("bob reads alice's thread: %d", st)
	}
	if st, _, _ := request(t, "GET", url+"/ok", ""); st != 200 {
		t.Errorf("/ok: %d", st)
	}
	st, _, metrics := request(t, "GET", url+"/metrics", "")
	if st != 200 || !strings.Contains(metrics, `weft_http_requests_total{method="POST",route="POST /threads",status="401"} 1`) {
		t.Errorf("/metrics: %d, lacks the refused request:\n%s", st, metrics)
	}
	if !strings.Contains(log.String(), "API keys required") || !strings.Contains(log.String(), "users=2") {
		t.Errorf("the log does not say keys are required:\n%s", log.String())
	}
	if !strings.Contains(log.String(), `msg="http request" method=POST route="POST /threads" status=200`) {
		t.Errorf("the request is not logged:\n%s", log.String())
	}
	if strings.Contains(log.String(), cliAliceKey) || strings.Contains(log.String(), cliBobKey) {
		t.Error("the log holds a key")
	}
}

func TestServeLimits(t *testing.T) {
	url, _ := startServe(t, "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"),
		"--rate-limit", "0.001", "--rate-burst", "2", "--max-body-bytes", "200")
	if st, _, body := request(t, "POST", url+"/threads", `{"metadata":{"x":"`+strings.Repeat("y", 300)+`"}}`); st != 413 {
		t.Errorf("a body beyond --max-body-bytes: %d %s", st, body)
	}
	request(t, "POST", url+"/threads/search", `{}`)
	st, h, body := request(t, "POST", url+"/threads/search", `{}`)
	if st != 429 || h.Get("Retry-After") == "" {
		t.Errorf("past the burst: %d %s (Retry-After %q)", st, body, h.Get("Retry-After"))
	}
}

// With keys the server may listen beyond loopback; keys are checked
// before anything starts.
func TestServeKeysConfiguration(t *testing.T) {
	db := filepath.Join(t.TempDir(), "weft.db")
	// Keys configured: the address is accepted (listening on a TEST-NET
	// address then fails, which is not the refusal).
	if _, _, err := execute(t, "serve", "--db", db, "--addr", "192.0.2.1:0", "--api-keys", keysFile(t)); err == nil || errors.Is(err, cli.ErrInsecureAddr) {
		t.Errorf("with keys beyond loopback: %v; want the listen to fail, not a refusal", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("keys:\n  - user: alice\n    secret: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--api-keys", bad}, "", `unknown field "secret"`},
		{[]string{"--api-keys", filepath.Join(t.TempDir(), "missing.yaml")}, "", "no such file"},
		{nil, "alice", "USER:KEY"},
		{[]string{"--api-keys", keysFile(t), "--insecure-no-auth"}, "", "contradict"},
		{[]string{"--rate-limit", "-1"}, "", "--rate-limit"},
	} {
		t.Setenv(apikey.EnvVar, tt.env)
		_, _, err := execute(t, append([]string{"serve", "--db", db}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %v (env %q): %v; want an error saying %q", tt.args, tt.env, err, tt.want)
		}
	}
}

// Two weft serve processes on one PostgreSQL database and one Redis
// (--redis): a run executing on one streams, whole and in order, through
// the other.
func TestServeRedisBroker(t *testing.T) {
	_, prefix := redistest.New(t)
	db := pgtest.NewDatabase(t, "weft_cli_broker_")
	args := []string{"--graphs", "apitest", "--db", db, "--redis", redistest.ServerURL(), "--redis-prefix", prefix}
	a, outA := startServe(t, args...)
	b, _ := startServe(t, args...)
	if !strings.Contains(outA.String(), "streams shared through Redis") {
		t.Errorf("weft serve --redis does not say it shares streams:\n%s", outA.String())
	}
	_, _, thread := request(t, "POST", a+"/threads", `{}`)
	tid := between(t, thread, `"thread_id":"`, `"`)
	_, _, run := request(t, "POST", a+"/threads/"+tid+"/runs", `{"assistant_id":"slow","input":{"delay_ms":200,"tag":"x"},"stream_resumable":true}`)
	rid := between(t, run, `"run_id":"`, `"`)
	st, _, onB := request(t, "GET", b+"/threads/"+tid+"/runs/"+rid+"/stream", "")
	_, _, onA := request(t, "GET", a+"/threads/"+tid+"/runs/"+rid+"/stream", "")
	if st != 200 || onA != onB || !strings.Contains(onB, "event: metadata") || !strings.Contains(onB, `"log":["x"]`) {
		t.Errorf("the run's stream through the other process (%d):\n%s\nthrough its own:\n%s", st, onB, onA)
	}
}

// A --redis that is not a Redis URL is refused, naming the flag.
func TestServeRedisURL(t *testing.T) {
	cmd := cli.New("v0.0.0-test")
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--graphs", "apitest", "--db", filepath.Join(t.TempDir(), "weft.db"), "--redis", "http://nope"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--redis") {
		t.Errorf("weft serve --redis http://nope: %v; want an error naming --redis", err)
	}
}

// between returns what s holds between start and end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		t.Fatalf("%q not in %s", start, s)
	}
	v, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("%q not after %q in %s", end, start, s)
	}
	return v
}
