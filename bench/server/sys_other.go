//go:build !unix

package main

import "time"

// cpuTime is not measured off Unix.
func cpuTime() time.Duration { return 0 }

// fileLimit is not known off Unix.
func fileLimit() uint64 { return 0 }
