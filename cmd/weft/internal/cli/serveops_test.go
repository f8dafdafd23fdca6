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
