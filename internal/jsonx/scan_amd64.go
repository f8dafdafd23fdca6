package jsonx

// safeBlocks returns the length of the longest prefix of the n bytes at
// p, in whole 16-byte blocks, that needs no escaping in a JSON string:
// printable ASCII other than '"' and '\\' (and '<', '>', '&' when html is
// set). It is written in assembly with SSE2, 16 bytes at a time.
//
//go:noescape
func safeBlocks(p *byte, n int, html bool) int
