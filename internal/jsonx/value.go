package jsonx

// ValueEnd returns the index after the JSON value that starts at b[i]
// (no space before it), in b that holds valid JSON: a string's closing
// quote, an object's or array's closing bracket, or where a number or
// literal stops. It does not check b; given invalid JSON it may panic.
func ValueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return validStringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j = validStringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(b)
}

// validStringEnd returns the index after the valid JSON string at b[i:],
// escapes and all.
func validStringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// SkipSpace returns the index of the first byte at or after i in b that
// is not JSON white space (len(b) if there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
