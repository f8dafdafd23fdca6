// Package promtest reads metrics in the Prometheus text format, for tests
// that scrape /metrics after real work and check what it counted.
package promtest

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// Parse returns the samples of a scrape by series: the metric's name and
// its labels as the exposition writes them (sorted by name), e.g.
// `weft_runs_total{graph="echo",status="success"}`. A line that is not a
// sample fails the test.
func Parse(t testing.TB, body []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("metrics line %q is not a sample", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// Expect fails the test for every series of want that got lacks or holds
// another value.
func Expect(t testing.TB, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v); want %v", k, g, ok, v)
		}
	}
}
