//go:build !unix

package sdkcompat

import "sync"

// dirLock serialises installs within one process where flock(2) is not
// available; the suite runs in CI on Linux only.
type dirLock struct{}

var installMu sync.Mutex

func lockDir(string) (*dirLock, error) {
	installMu.Lock()
	return &dirLock{}, nil
}

func (*dirLock) exclusive() error { return nil }

func (*dirLock) share() error { return nil }

func (*dirLock) unlock() { installMu.Unlock() }
