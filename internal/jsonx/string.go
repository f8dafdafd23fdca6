// Package jsonx holds small JSON encoding helpers shared by weft's
// packages where encoding/json's reflection is too slow for large values.
package jsonx

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

const hex = "0123456789abcdef"

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// safeWords returns the length of the longest prefix of s, in whole
// eight-byte words, that needs no escaping in a JSON string: printable
// ASCII other than '"' and '\\' (and '<', '>', '&' when html is set).
func safeWords(s string, html bool) int {
	// A read-only view of the string's bytes, for word loads.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	if len(s) >= 16 {
		// Whole blocks in assembly where there is some; the words of the
		// block that stopped it, and the tail, below.
		i = safeBlocks(unsafe.StringData(s), len(s), html)
	}
	if html {
		for ; i+16 <= len(s); i += 16 {
			w1, w2 := binary.LittleEndian.Uint64(b[i:i+8]), binary.LittleEndian.Uint64(b[i+8:i+16])
			if unsafeWordHTML(w1)|unsafeWordHTML(w2) != 0 {
				break
			}
		}
		for ; i+8 <= len(s); i += 8 {
			if unsafeWordHTML(binary.LittleEndian.Uint64(b[i:i+8])) != 0 {
				break
			}
		}
		return i
	}
	for ; i+32 <= len(b); i += 32 {
		c := b[i : i+32]
		w1, w2 := binary.LittleEndian.Uint64(c[0:8]), binary.LittleEndian.Uint64(c[8:16])
		w3, w4 := binary.LittleEndian.Uint64(c[16:24]), binary.LittleEndian.Uint64(c[24:32])
		if unsafeWord(w1)|unsafeWord(w2)|unsafeWord(w3)|unsafeWord(w4) != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if unsafeWord(binary.LittleEndian.Uint64(b[i:i+8])) != 0 {
			break
		}
	}
	return i
}

// unsafeWord is nonzero when a byte of w (little-endian) is below 0x20, at
// or above 0x80, '"' or '\\'.
func unsafeWord(w uint64) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	return ((w - 0x20*lsb) | w | (q-lsb)&^q | (b-lsb)&^b) & msb
}

// unsafeWordHTML is unsafeWord that also flags '<', '>' and '&'. Setting
// bit 1 maps '<' to '>', and bit 2 '"' to '&', so three comparisons cover
// five characters.
func unsafeWordHTML(w uint64) uint64 {
	lt := (w | 0x02*lsb) ^ (lsb * '>')
	qa := (w | 0x04*lsb) ^ (lsb * '&')
	b := w ^ (lsb * '\\')
	return ((w - 0x20*lsb) | w | (lt-lsb)&^lt | (qa-lsb)&^qa | (b-lsb)&^b) & msb
}

// AppendString appends s to dst as a JSON string, exactly as encoding/json
// encodes a string (escapeHTML as json.Marshal when set, as an Encoder
// with SetEscapeHTML(false) when not), only faster for long ASCII text.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start, slow := 0, 0
	for i := 0; i < len(s); {
		if i >= slow {
			// Skip safe words; the word that stops it goes byte by byte.
			i += safeWords(s[i:], escapeHTML)
			slow = i + 8
			if i >= len(s) {
				break
			}
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || (b != '<' && b != '>' && b != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
