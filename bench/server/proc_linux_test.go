//go:build linux

package main

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGroupPIDs: a server's RSS is summed over its process group (the
// reference server is several processes), but never over the generator's
// own group.
func TestGroupPIDs(t *testing.T) {
	start := func(pgid int) *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start sleep: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	leader := start(0)
	member := start(leader.Process.Pid)
	other := start(0)

	got := groupPIDs([]int{leader.Process.Pid})
	slices.Sort(got)
	want := []int{leader.Process.Pid, member.Process.Pid}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the leader's group (-want +got):\n%s", diff)
	}
	if got := groupPIDs([]int{other.Process.Pid}); !slices.Equal(got, []int{other.Process.Pid}) {
		t.Errorf("a group of one: %v", got)
	}
	if got := groupPIDs([]int{os.Getpid()}); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("the generator's own group: %v, want only the given pid", got)
	}
	s := newRSSSampler([]int{leader.Process.Pid})
	if v := s.sampleMB(); v == nil || *v <= 0 {
		t.Errorf("RSS of two sleeps: %v", v)
	}
}
