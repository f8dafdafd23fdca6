package jsonx

import "slices"

// AppendObject appends m to dst as json.Marshal writes a map with string
// keys: its keys sorted by their bytes and escaped as json.Marshal
// escapes them, each value written by value, given the value's key.
// value's error stops the object there and is returned. The keys of a
// small map (up to 32) are sorted without an allocation, which is why
// the checkpoint stores and the server write their maps through it
// rather than through encoding/json's reflection. A nil m is written as
// an empty object; callers that want json.Marshal's null check for it.
func AppendObject[V any](dst []byte, m map[string]V, value func(dst []byte, key string, v V) ([]byte, error)) ([]byte, error) {
	var buf [32]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k, true)
		dst = append(dst, ':')
		var err error
		if dst, err = value(dst, k, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}
