// Package sdkcompat runs the LangGraph Server API compatibility suite from a
// Go test: server/testdata/sdkcompat/compat.mjs drives the official JS client
// @langchain/langgraph-sdk, pinned by that directory's package-lock.json,
// against a server URL and reports one JSON line per case.
//
// A test starts a server that serves the test graphs echo, approval and slow
// (weft: `weft serve --graphs apitest`) and calls Run with its URL. Run
// installs the pinned packages with `npm ci` once per lockfile (a file lock
// keeps parallel test binaries from installing at the same time) and turns
// each failed case into a failed subtest carrying the case's detail.
//
// Without node or npm the test is skipped locally and fails when the
// environment variable CI is "true": in CI the suite must run.
package sdkcompat

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Options adjusts a run; nil means every case, against a server that is
// not the reference.
type Options struct {
	// Only selects cases by name or group prefix, comma separated
	// ("stream,runs.wait"); empty runs them all.
	Only string
	// Reference marks the cases that fail on the reference JS server
	// because of its own defects as expected failures.
	Reference bool
	// Timeout bounds the suite's run, not counting the install; zero
	// means 5 minutes.
	Timeout time.Duration
}

// Result is one case's outcome, as compat.mjs prints it.
type Result struct {
	Case   string `json:"case"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	MS     int    `json:"ms"`
	// Quirks tells, for each place where the reference server departs from
	// the published API spec and the case accepted either, which one the
	// server followed: "spec" or "reference".
	Quirks map[string]string `json:"quirks,omitempty"`
	// XFail marks a case run as an expected failure (Options.Reference).
	XFail bool `json:"xfail,omitempty"`
}

// ErrNoNode reports that node or npm is not on PATH.
var ErrNoNode = errors.New("sdkcompat: node and npm are needed")

const (
	installTimeout = 5 * time.Minute
	defaultTimeout = 5 * time.Minute
	minNodeMajor   = 20
	// stampFile, inside node_modules, records the lockfile an install was
	// made from; npm ci removes node_modules, and the stamp with it.
	stampFile = ".weft-sdkcompat-stamp"
)

// Run runs the suite against url and reports each failed case as a failed
// subtest named after the case. It returns every case's result, so that a
// caller can also check which way the server went on each quirk.
func Run(t *testing.T, url string, opts *Options) []Result {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTools(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the SDK compatibility suite must run in CI: %v", err)
		}
		t.Skip(err)
	}
	results, err := RunSuite(context.Background(), dir, url, opts)
	for _, r := range results {
		t.Run(r.Case, func(t *testing.T) {
			if !r.OK {
				t.Error(r.Detail)
				return
			}
			if r.XFail || len(r.Quirks) > 0 {
				t.Logf("%s; quirks %v", r.Detail, r.Quirks)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// Dir returns the directory of compat.mjs: server/testdata/sdkcompat under
// the module root, found by walking up from the working directory (a test's
// working directory is its package's).
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("sdkcompat: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, "server", "testdata", "sdkcompat")
			if _, err := os.Stat(filepath.Join(dir, "compat.mjs")); err != nil {
				return "", fmt.Errorf("sdkcompat: the suite is missing under the module root %s: %w", d, err)
			}
			return dir, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("sdkcompat: no go.mod above %s", wd)
		}
	}
}

// checkTools checks that node (version 20 or later) and npm are on PATH.
func checkTools(ctx context.Context) error {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %v", ErrNoNode, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return fmt.Errorf("%w: node --version: %v", ErrNoNode, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		return fmt.Errorf("%w: node %s is too old, want %d or later", ErrNoNode, v, minNodeMajor)
	}
	return nil
}

// RunSuite installs the pinned packages in dir if needed and runs
// compat.mjs against url. It returns the cases' results, and an error if
// the suite could not run or its exit status disagrees with the results;
// failed cases alone are not an error.
func RunSuite(ctx context.Context, dir, url string, opts *Options) ([]Result, error) {
	if opts == nil {
		opts = &Options{}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer lock.unlock()
	want, err := lockfileSum(dir)
	if err != nil {
		return nil, err
	}
	if !installed(dir, want) {
		if err := lock.exclusive(); err != nil {
			return nil, err
		}
		if !installed(dir, want) {
			if err := install(ctx, dir, want); err != nil {
				return nil, err
			}
		}
		if err := lock.share(); err != nil {
			return nil, err
		}
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"compat.mjs", "--url", url}
	if opts.Only != "" {
		args = append(args, "--only", opts.Only)
	}
	if opts.Reference {
		args = append(args, "--reference")
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	results, parseErr := ParseResults(&stdout)
	if parseErr != nil {
		return results, fmt.Errorf("sdkcompat: %w; stderr: %s", parseErr, tail(stderr.Bytes()))
	}
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	switch {
	case ctx.Err() != nil:
		return results, fmt.Errorf("sdkcompat: the suite did not finish within %v; stderr: %s", timeout, tail(stderr.Bytes()))
	case runErr != nil && failed == 0:
		return results, fmt.Errorf("sdkcompat: node compat.mjs failed without a failed case: %v; stderr: %s", runErr, tail(stderr.Bytes()))
	case runErr == nil && failed > 0:
		return results, fmt.Errorf("sdkcompat: node compat.mjs exited 0 with %d failed cases", failed)
	case len(results) == 0:
		return results, fmt.Errorf("sdkcompat: no case ran; stderr: %s", tail(stderr.Bytes()))
	}
	return results, nil
}

// ParseResults reads compat.mjs's output: one JSON object per line.
func ParseResults(r io.Reader) ([]Result, error) {
	var results []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var res Result
		if err := json.Unmarshal(line, &res); err != nil {
			return results, fmt.Errorf("output line %d is not a result: %w: %q", n, err, truncate(line, 200))
		}
		if res.Case == "" {
			return results, fmt.Errorf("output line %d has no case name: %q", n, truncate(line, 200))
		}
		results = append(results, res)
	}
	if err := sc.Err(); err != nil {
		return results, fmt.Errorf("reading the output: %w", err)
	}
	return results, nil
}

// lockfileSum returns the SHA-256 of dir's package-lock.json, in hex.
func lockfileSum(dir string) (string, error) {
	lockfile, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("sdkcompat: %w", err)
	}
	sum := sha256.Sum256(lockfile)
	return hex.EncodeToString(sum[:]), nil
}

// installed reports whether node_modules was installed from the lockfile
// whose sum is want.
func installed(dir, want string) bool {
	got, err := os.ReadFile(filepath.Join(dir, "node_modules", stampFile))
	return err == nil && string(got) == want
}

// install runs `npm ci` in dir and stamps node_modules with the lockfile's
// sum. The caller holds the directory's lock exclusively.
func install(ctx context.Context, dir, sum string) error {
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("sdkcompat: npm ci in %s: %w: %s", dir, err, tail(out))
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", stampFile), []byte(sum), 0o644); err != nil {
		return fmt.Errorf("sdkcompat: %w", err)
	}
	return nil
}

// tail returns the last part of a process's output, for an error message.
func tail(b []byte) string {
	const n = 2000
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
