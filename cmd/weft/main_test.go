package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestMain runs main itself when the test starts this binary as weft.
func TestMain(m *testing.M) {
	if os.Getenv("WEFT_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Ctrl-C while the model thinks ends weft run with exit status 130 and
// says how to continue the thread, which is saved.
func TestRunInterruptedExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	// A model that never answers: the request waits until the client
	// goes away, or the test ends.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end, so the server notices when the client leaves.
		io.Copy(io.Discard, r.Body)
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	db := filepath.Join(t.TempDir(), "conv.db")
	cmd := exec.Command(os.Args[0], "run", "--agent", "career", "--model", "openai:gpt-test", "--db", db, "데이터 분석가가 되고 싶어요")
	cmd.Env = append(os.Environ(), "WEFT_TEST_RUN_MAIN=1", "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=test", "WEFT_DATABASE_URL=", "WEFT_MODEL=", "WEFT_TOOLS=", "NO_COLOR=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("weft ended before asking the model: %v\n%s", err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("exit = %v, want status 130\nstderr:\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`thread ([0-9a-f-]{36}) \(continue it`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no thread id on stderr:\n%s", stderr.String())
	}
	want := "weft run --agent career --thread " + m[1] + " --db " + db + ` "..."`
	if !strings.Contains(stderr.String(), "weft: interrupted (Ctrl-C); thread "+m[1]+" is saved") || !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say how to continue (%s):\n%s", want, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q", stdout.String())
	}
}
