//go:build !amd64

package jsonx

// safeBlocks is the assembly scan of amd64; elsewhere safeWords scans
// word by word on its own.
func safeBlocks(p *byte, n int, html bool) int { return 0 }
