package jsonx

import "testing"

func TestValueEnd(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   int
		want int
	}{
		{`"a\"b",1`, 0, 6},
		{`{"a":[1,{"b":"}"}],"c":2}`, 0, 25},
		{`[]`, 0, 2},
		{`{"k":-1.5e3,"x":true}`, 5, 11},
		{`{"k":null}`, 5, 9},
		{`123`, 0, 3},
		{`[1 ,2]`, 1, 2},
	} {
		if got := ValueEnd([]byte(c.in), c.at); got != c.want {
			t.Errorf("ValueEnd(%s, %d) = %d, want %d", c.in, c.at, got, c.want)
		}
	}
}
