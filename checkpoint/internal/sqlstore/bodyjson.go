package sqlstore

import (
	"slices"
	"strconv"

	"github.com/weftlabs/weft/internal/jsonx"
)

// appendBody appends b's JSON to dst: the bytes json.Marshal makes of it
// (keys in order, strings escaped as it escapes them), without its
// reflection over the two maps, which a checkpoint write paid for on
// every Put.
func appendBody(dst []byte, b body) ([]byte, error) {
	// Room for it all at once, not grown append by append.
	n := 64
	for k := range b.CV {
		n += len(k) + 24
	}
	for k, m := range b.VS {
		n += len(k) + 8
		for c := range m {
			n += len(c) + 24
		}
	}
	if b.UC != nil {
		for _, c := range *b.UC {
			n += len(c) + 4
		}
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(b.V), 10)
	dst = append(dst, `,"cv":`...)
	dst = appendVersions(dst, b.CV)
	dst = append(dst, `,"vs":`...)
	if b.VS == nil {
		dst = append(dst, "null"...)
	} else {
		var buf [32]string
		dst = append(dst, '{')
		for i, k := range sortedNames(buf[:0], b.VS) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendString(dst, k, true)
			dst = append(dst, ':')
			dst = appendVersions(dst, b.VS[k])
		}
		dst = append(dst, '}')
	}
	if b.UC != nil {
		dst = append(dst, `,"uc":`...)
		// As json.Marshal writes a []string.
		if *b.UC == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i, c := range *b.UC {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = jsonx.AppendString(dst, c, true)
			}
			dst = append(dst, ']')
		}
	}
	return append(dst, '}'), nil
}

// appendVersions appends a channel-to-version map as json.Marshal does.
func appendVersions(dst []byte, m map[string]int64) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	var buf [32]string
	dst = append(dst, '{')
	for i, k := range sortedNames(buf[:0], m) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendString(dst, k, true)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, m[k], 10)
	}
	return append(dst, '}')
}

// sortedNames appends the keys of m to names, sorted: with names a
// buffer on the caller's stack, a checkpoint's few channel names are
// sorted without an allocation, where slices.Sorted(maps.Keys(m)) made
// several for each map of every checkpoint written.
func sortedNames[V any](names []string, m map[string]V) []string {
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
