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

// pick selects the assistant of a graph.
func (p *page) pick(graph string) {
	p.t.Helper()
	ok := eval[bool](p, `(() => { const s = document.getElementById("assistant");
		const o = [...s.options].find(o => o.dataset.graph === `+jsString(graph)+`);
		if (!o) return false; s.value = o.value; s.dispatchEvent(new Event("change")); return true })()`)
	if !ok {
		p.t.Fatalf("no assistant of graph %s", graph)
	}
}

func testExploreCareer(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("career")
	s.Gate.Hold()
	p.send("UX 디자이너가 되고 싶어요")
	s.Gate.Paused(t)
	t.Log(eval[string](p, `document.getElementById("messages").innerText`))
	s.Gate.Release()
	p.waitFor("the run to end", `document.getElementById("stop").hidden`)
	t.Log(eval[string](p, `document.getElementById("messages").innerText`))
	t.Log(p.consoleLog())
	t.Fail()
}
