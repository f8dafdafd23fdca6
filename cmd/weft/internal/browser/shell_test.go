package browser

import (
	"strings"
	"testing"
)

// The page loads under its Content-Security-Policy without errors, and
// lists the served assistants.
func TestShellLoads(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	opts := eval[string](p, `[...document.querySelectorAll("#assistant option")].map(o => o.textContent).join(",")`)
	for _, want := range []string{"career", "marketing", "approval", "echo"} {
		if !strings.Contains(opts, want) {
			t.Errorf("assistants %q lack %s", opts, want)
		}
	}
	if log := p.consoleLog(); strings.Contains(log, "error") || strings.Contains(log, "exception") {
		t.Errorf("the page logged errors:\n%s", log)
	}
}
