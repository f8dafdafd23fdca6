package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
)

func TestAppendObjectIsMarshal(t *testing.T) {
	big := map[string]int64{}
	for i := range 40 {
		big[fmt.Sprintf("k%02d<&>", 39-i)] = int64(i)
	}
	for _, m := range []map[string]int64{
		{},
		{"b": 2, "a": 1, "é": 3, "A": -4, "\u2028": 5, "<tag>": 6, "": 7},
		big,
	} {
		got, err := AppendObject([]byte("x"), m, func(b []byte, _ string, v int64) ([]byte, error) {
			return strconv.AppendInt(b, v, 10), nil
		})
		want, _ := json.Marshal(m)
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("AppendObject(%v) = %s, %v; want x%s", m, got, err, want)
		}
	}
}

func TestAppendObjectStopsAtError(t *testing.T) {
	stop := errors.New("stop")
	var seen []string
	_, err := AppendObject(nil, map[string]int{"a": 1, "b": 2, "c": 3}, func(b []byte, k string, v int) ([]byte, error) {
		seen = append(seen, k)
		if k == "b" {
			return b, stop
		}
		return strconv.AppendInt(b, int64(v), 10), nil
	})
	if !errors.Is(err, stop) || fmt.Sprint(seen) != "[a b]" {
		t.Errorf("err %v, keys seen %v; want stop after a and b", err, seen)
	}
}

func BenchmarkAppendObject(b *testing.B) {
	m := map[string]int64{"__start__": 1, "messages": 2, "echo": 3, "branch:to:echo": 4}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendObject(buf[:0], m, func(b []byte, _ string, v int64) ([]byte, error) {
			return strconv.AppendInt(b, v, 10), nil
		})
	}
}
