//go:build unix

package sdkcompat

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dirLock is an flock(2) on dir/.install.lock: exclusive while installing,
// shared while a suite runs, so parallel test binaries neither install at
// the same time nor replace node_modules under a running suite, and still
// run their suites side by side.
type dirLock struct{ f *os.File }

// lockDir takes the shared lock.
func lockDir(dir string) (*dirLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sdkcompat: %w", err)
	}
	if err := flock(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	return &dirLock{f}, nil
}

// exclusive trades the shared lock for the exclusive one. The trade is not
// atomic: whoever held it exclusively meanwhile may have installed.
func (l *dirLock) exclusive() error { return flock(l.f, syscall.LOCK_EX) }

// share trades the exclusive lock back for a shared one.
func (l *dirLock) share() error { return flock(l.f, syscall.LOCK_SH) }

func (l *dirLock) unlock() {
	flock(l.f, syscall.LOCK_UN)
	l.f.Close()
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sdkcompat: locking %s: %w", f.Name(), err)
		}
		return nil
	}
}
