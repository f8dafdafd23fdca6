package sqlstore

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/weftlabs/weft/internal/jsonx"
)

// appendBody appends b's JSON to dst: the bytes json.Marshal makes of it
// (keys in order, strings escaped as it escapes them), without its
// reflection over the two maps, which a checkpoint write paid for on
// every Put.
func appendBody(dst []byte, b body) ([]byte, error) {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(b.V), 10)
	dst = append(dst, `,"cv":`...)
	dst = appendVersions(dst, b.CV)
	dst = append(dst, `,"vs":`...)
	if b.VS == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(b.VS)) {
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
		uc, err := json.Marshal(*b.UC)
		if err != nil {
			return nil, err
		}
		dst = append(dst, uc...)
	}
	return append(dst, '}'), nil
}

// appendVersions appends a channel-to-version map as json.Marshal does.
func appendVersions(dst []byte, m map[string]int64) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendString(dst, k, true)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, m[k], 10)
	}
	return append(dst, '}')
}
