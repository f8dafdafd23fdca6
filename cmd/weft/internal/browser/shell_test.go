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

// The answer streams: its first words are on screen, in a reply marked as
// being written, while the run is still going (the model is paused at the
// gate after its first chunk), and the rest follows once it goes on. The
// tool calls are shown folded, and unfold to their arguments and result.
func TestStreamedAnswerAndToolCalls(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("career")
	// Count the changes to the answer's text as they happen.
	eval[bool](p, `(() => { window.__texts = []; new MutationObserver(() => {
		const a = [...document.querySelectorAll('[data-testid="msg-ai"] .body')].pop();
		const t = a ? a.textContent : "";
		if (t && window.__texts[window.__texts.length - 1] !== t) window.__texts.push(t);
	}).observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true}); return true })()`)
	s.Gate.Hold()
	p.send("UX 디자이너가 되고 싶어요")
	s.Gate.Paused(t) // the agent's first reply, after its first words
	p.waitFor("the first words of the reply while the run goes on",
		`(() => { const m = document.querySelector('[data-testid="msg-ai"][aria-busy="true"]');
			return m && m.textContent.includes("UX") && !document.getElementById("stop").hidden })()`)
	if st := p.text(testid("run-status")); st != "Answering…" {
		t.Errorf("status while streaming = %q", st)
	}
	s.Gate.Release()
	p.waitFor("the final answer", `(document.querySelector("#messages").textContent.includes("첫 걸음으로 커리어 전환 세션에서")) && document.getElementById("stop").hidden`)
	if n := eval[int](p, `window.__texts.length`); n < 3 {
		t.Errorf("the answer's text changed %d times on screen, want it streamed in several steps", n)
	}
	if st := p.text(testid("run-status")); st != "Done" {
		t.Errorf("status after the run = %q", st)
	}

	// The tool calls: folded, with their arguments and results inside.
	calls := eval[[]string](p, `[...document.querySelectorAll('[data-testid="tool-call"]')].map(d => d.querySelector(".tool-name").textContent + ":" + d.open)`)
	if strings.Join(calls, ",") != "get_learning_path:false,search_mentoring_sessions:false" {
		t.Fatalf("tool calls = %v, want both folded", calls)
	}
	if eval[bool](p, `document.querySelector('[data-testid="tool-args"]').checkVisibility()`) {
		t.Error("a folded tool call shows its arguments")
	}
	p.click(`[data-testid="tool-call"] summary`)
	p.waitFor("the unfolded tool call", `document.querySelector('[data-testid="tool-args"]').checkVisibility()`)
	args := p.text(testid("tool-args"))
	result := p.text(testid("tool-result"))
	if !strings.Contains(args, `"career": "UX 디자이너"`) {
		t.Errorf("tool arguments = %q", args)
	}
	if !strings.Contains(result, "UX") || len(result) < 40 {
		t.Errorf("tool result = %q", result)
	}
}

// Stop ends a running answer: the run is cancelled on the server, the
// page says it stopped and takes a new message.
func TestStopRun(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("career")
	s.Gate.Hold()
	p.send("UX 디자이너가 되고 싶어요")
	s.Gate.Paused(t)
	p.waitFor("the stop button", `!document.getElementById("stop").hidden`)
	p.click(testid("stop"))
	p.waitFor("the run to stop", `document.getElementById("stop").hidden && document.getElementById("run-status").dataset.status === "stopped"`)
	s.Gate.Release()
	tid := eval[string](p, `location.hash.replace("#thread=", "")`)
	code, body := s.apiGet("/threads/" + tid + "/runs")
	if code != 200 || !strings.Contains(body, `"status":"interrupted"`) {
		t.Errorf("runs after stop = %d %s, want the run interrupted", code, body)
	}
	// The thread takes the next message.
	p.pick("echo")
	p.send("hello after stop")
	p.waitFor("the echo", `document.querySelector("#messages").textContent.includes("hello after stop") && document.getElementById("stop").hidden`)
}
