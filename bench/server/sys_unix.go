//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime returns the user plus system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fileLimit returns the soft limit on open files. Go raises the soft limit
// to the hard one when a program starts, so this is what the generator may
// hold; it also bounds the server if it was started from the same shell.
func fileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
