package browser

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
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
	p.waitFor("the final answer", `(document.querySelector("#messages").textContent.includes("첫 걸음으로 커리어 전환 세션에서")) && document.getElementById("stop").hidden && document.body.dataset.run === "idle"`)
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
	p.waitFor("the echo", `document.querySelector("#messages").textContent.includes("hello after stop") && document.getElementById("stop").hidden && document.body.dataset.run === "idle"`)
}

// chat sends text to the open thread and waits for the run to end.
func (p *page) chat(text string) {
	p.t.Helper()
	ended := eval[string](p, `document.body.dataset.runsEnded || "0"`)
	p.send(text)
	p.waitFor("the run of "+text+" to end", `(document.body.dataset.runsEnded || "0") !== `+jsString(ended)+` && document.body.dataset.run === "idle"`)
}

// threadTitles lists the thread list's titles, in order.
func (p *page) threadTitles() []string {
	p.t.Helper()
	return eval[[]string](p, `[...document.querySelectorAll('[data-testid="thread-item"] .title')].map(e => e.textContent)`)
}

// threadRow is the CSS selector of the thread list's row titled title.
func (p *page) threadRow(title string) string {
	p.t.Helper()
	id := eval[string](p, `(() => { const li = [...document.querySelectorAll('[data-testid="thread-item"]')].find(li => li.querySelector(".title").textContent === `+jsString(title)+`);
		return li ? li.dataset.threadId : "" })()`)
	if id == "" {
		p.t.Fatalf("no thread titled %q in %v", title, p.threadTitles())
	}
	return `[data-thread-id="` + id + `"] `
}

// Past threads are listed newest first, found by the search box, renamed
// (metadata.title) and deleted, each with the page's own controls.
func TestThreadsSearchRenameDelete(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("echo")
	for _, text := range []string{"apples and pears", "bananas", "cherries"} {
		p.click(testid("new-thread"))
		p.chat(text)
	}
	p.waitFor("three threads", `document.querySelectorAll('[data-testid="thread-item"]').length === 3`)
	if got := strings.Join(p.threadTitles(), ","); got != "cherries,bananas,apples and pears" {
		t.Errorf("threads = %s, want newest first", got)
	}

	p.must("searching", chromedp.SendKeys(chromedp.CSS(testid("thread-search")), "BAN"))
	p.waitFor("the search's match", `document.querySelectorAll('[data-testid="thread-item"]').length === 1`)
	if got := strings.Join(p.threadTitles(), ","); got != "bananas" {
		t.Errorf("search BAN = %s", got)
	}
	p.fill(testid("thread-search"), "zzz")
	p.waitFor("no match", `!!document.querySelector('[data-testid="threads-empty"]')`)
	p.fill(testid("thread-search"), "")
	p.waitFor("all threads again", `document.querySelectorAll('[data-testid="thread-item"]').length === 3`)

	// Rename the oldest.
	p.click(p.threadRow("apples and pears") + testid("thread-rename"))
	p.waitFor("the rename dialog", `document.getElementById("rename-dialog").open`)
	p.fill(testid("rename-input"), "fruit salad")
	p.click(testid("rename-save"))
	p.waitFor("the new title", `[...document.querySelectorAll('[data-testid="thread-item"] .title')].some(e => e.textContent === "fruit salad")`)
	code, body := s.apiPost("/threads/search", `{"metadata":{"title":"fruit salad"}}`)
	if code != 200 || strings.Count(body, `"thread_id"`) != 1 {
		t.Errorf("threads titled fruit salad = %d %s", code, body)
	}

	// Delete "bananas", after the page asks.
	p.click(p.threadRow("bananas") + testid("thread-delete"))
	p.waitFor("the confirmation", `document.getElementById("confirm-dialog").open`)
	if q := p.text("#confirm-text"); !strings.Contains(q, "bananas") {
		t.Errorf("the confirmation asks %q", q)
	}
	p.click(testid("confirm-ok"))
	p.waitFor("two threads", `document.querySelectorAll('[data-testid="thread-item"]').length === 2`)
	if got := strings.Join(p.threadTitles(), ","); strings.Contains(got, "bananas") {
		t.Errorf("threads after delete = %s", got)
	}
	if _, body := s.apiPost("/threads/search", `{}`); strings.Contains(body, "bananas") {
		t.Errorf("the server still has the deleted thread: %s", body)
	}

	// Open one: its messages come back.
	p.click(p.threadRow("fruit salad") + testid("thread-open"))
	p.waitFor("the thread's messages", `document.getElementById("messages").textContent.includes("apples and pears") && document.getElementById("thread-title").textContent === "fruit salad"`)
}

// A run stopped at an interrupt is answered after the server restarted:
// the reopened thread shows the pending interrupt with a form built from
// its payload, and the answer resumes the run.
func TestPendingApprovalAfterRestart(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("approval")
	p.chat("plan the team offsite")
	p.waitFor("the interrupt", `!!document.querySelector('[data-testid="interrupt-generic"]')`)
	if st := p.text(testid("run-status")); st != "Waiting for your answer" {
		t.Errorf("status = %q", st)
	}
	// The form has the payload's fields.
	labels := eval[[]string](p, `[...document.querySelectorAll('[data-testid="interrupt-form"] label')].map(l => l.textContent)`)
	if strings.Join(labels, ",") != "goal,plan" {
		t.Errorf("form fields = %v, want goal,plan", labels)
	}
	tid := eval[string](p, `location.hash.replace("#thread=", "")`)

	s.Restart()
	p2 := newPage(t, nil) // another browser, as days later
	p2.open(s.URL + "/")
	p2.waitFor("the thread in the list", `document.querySelectorAll('[data-testid="thread-item"]').length === 1`)
	if meta := p2.text(`[data-testid="thread-item"] .meta`); !strings.Contains(meta, "waiting for you") {
		t.Errorf("the thread's status in the list = %q", meta)
	}
	p2.click(testid("thread-open"))
	p2.waitFor("the pending interrupt", `!!document.querySelector('[data-testid="interrupt-generic"]')`)
	if h := eval[string](p2, `location.hash`); h != "#thread="+tid {
		t.Errorf("hash = %s, want the thread %s", h, tid)
	}
	// An answer that is not JSON is refused before it is sent.
	p2.click(`.raw-editor summary`)
	p2.fill(testid("interrupt-raw"), `{"action": approve}`)
	p2.click(testid("interrupt-raw-submit"))
	p2.waitFor("the JSON error", `document.querySelector('[data-testid="interrupt-raw"]').getAttribute("aria-invalid") === "true"`)
	p2.fill(testid("interrupt-raw"), `{"action": "approve", "reason": "looks good"}`)
	p2.click(testid("interrupt-raw-submit"))
	p2.waitFor("the resumed run's end", `document.getElementById("run-status").dataset.status === "done" && document.getElementById("interrupts").hidden`)
	p2.waitFor("the state after the approval", `(document.querySelector('[data-testid="state-values"]') || {}).textContent.includes('"approved": true')`)
	values := p2.text(testid("state-values"))
	for _, want := range []string{`"approved": true`, `"feedback": "approved: looks good"`, "send the invitations"} {
		if !strings.Contains(values, want) {
			t.Errorf("state after approval lacks %s:\n%s", want, values)
		}
	}
}

// Time travel: the history lists the thread's checkpoints, shows the state
// at one, and a message sent after "fork from here" makes a new branch
// from that checkpoint, without what came after it.
func TestForkFromHistory(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("echo")
	p.chat("first question")
	p.chat("second question")
	p.click(testid("history-toggle"))
	p.waitFor("the checkpoints", `document.querySelectorAll('[data-testid="checkpoint"]').length >= 4`)
	// The checkpoint at the end of the first exchange: two messages, nothing next.
	idx := eval[int](p, `(async () => {
		const items = [...document.querySelectorAll('[data-testid="checkpoint"]')];
		for (let i = 0; i < items.length; i++) {
			const id = items[i].dataset.checkpointId;
			const st = await (await fetch("/threads/" + location.hash.replace("#thread=", "") + "/state/" + id)).json();
			if (st.values.messages && st.values.messages.length === 2 && st.next.length === 0) return i;
		}
		return -1 })()`)
	if idx < 0 {
		t.Fatal("no checkpoint after the first exchange in the history")
	}
	item := fmt.Sprintf(`[data-testid="checkpoint"]:nth-child(%d) `, idx+1)
	p.click(item + testid("checkpoint-view"))
	p.waitFor("the state at the checkpoint", `!!document.querySelector('[data-testid="checkpoint-state"]')`)
	st := p.text(testid("checkpoint-state"))
	if !strings.Contains(st, "first question") || strings.Contains(st, "second question") {
		t.Errorf("state at the checkpoint:\n%s", st)
	}
	p.click(item + testid("checkpoint-fork"))
	p.waitFor("the fork bar", `!!document.querySelector('[data-testid="fork-bar"]')`)
	p.chat("another second question")
	p.waitFor("the branch's answer", `[...document.querySelectorAll('[data-testid="msg-ai"]')].some(m => m.textContent.includes("another second question"))`)
	shown := p.text(testid("messages"))
	if !strings.Contains(shown, "first question") {
		t.Errorf("the branch lost what came before its checkpoint:\n%s", shown)
	}
	if strings.Contains(strings.ReplaceAll(shown, "another second question", ""), "second question") {
		t.Errorf("the branch still shows what came after its checkpoint:\n%s", shown)
	}
	if p.text("#fork-bar") != "" {
		t.Error("the fork bar stays after the branch was made")
	}
	// The history has the new branch on top, and still the old one.
	p.waitFor("the new branch in the history", `document.querySelector('[data-testid="checkpoint"] .cp-last').textContent.includes("another second question")`)
	code, body := s.apiPost("/threads/"+eval[string](p, `location.hash.replace("#thread=", "")`)+"/history", `{"limit": 100}`)
	if code != 200 || !strings.Contains(body, `"second question"`) {
		t.Errorf("the old branch is gone from the history: %d", code)
	}
}

// The interface speaks the browser's language (Korean here), switches to
// English on request, and keeps the choice.
func TestLanguage(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, &pageOptions{Lang: "ko-KR"})
	p.open(s.URL + "/")
	if got := p.text(testid("send")); got != "보내기" {
		t.Errorf("send button in Korean = %q", got)
	}
	if got := eval[string](p, `document.documentElement.lang`); got != "ko" {
		t.Errorf("html lang = %q", got)
	}
	p.pick("echo")
	p.chat("안녕하세요")
	if got := p.text(`[data-testid="msg-human"] .who`); got != "나" {
		t.Errorf("the user's name in Korean = %q", got)
	}
	p.must("switching to English", chromedp.SetValue(chromedp.CSS(testid("lang-select")), "en"))
	eval[bool](p, `document.querySelector('[data-testid="lang-select"]').dispatchEvent(new Event("change")) || true`)
	p.waitFor("English", `document.querySelector('[data-testid="send"]').textContent === "Send"`)
	for sel, want := range map[string]string{
		`[data-testid="msg-human"] .who`: "You",
		testid("run-status"):             "Done",
		testid("history-toggle"):         "History",
	} {
		if got := p.text(sel); got != want {
			t.Errorf("%s in English = %q, want %q", sel, got, want)
		}
	}
	if got := eval[string](p, `document.querySelector('[data-testid="thread-search"]').placeholder`); got != "Search conversations" {
		t.Errorf("search placeholder = %q", got)
	}
	p.open(s.URL + "/")
	if got := p.text(testid("send")); got != "Send" {
		t.Errorf("after a reload the send button says %q: the choice was not kept", got)
	}
}

// The page is usable by keyboard alone: a skip link to the message box,
// a message sent with Enter, every control named, the focus visible.
func TestKeyboard(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.must("tabbing to the skip link", chromedp.KeyEvent("\t"))
	if got := eval[string](p, `document.activeElement.className`); got != "skip" {
		t.Fatalf("the first Tab reaches %q, want the skip link", got)
	}
	p.must("following the skip link", chromedp.KeyEvent("\r"))
	p.waitFor("the message box focused", `document.activeElement.id === "composer-input"`)
	if eval[string](p, `getComputedStyle(document.activeElement).outlineStyle`) == "none" {
		t.Error("the focused message box shows no outline")
	}
	// Back to the assistant picker with Shift+Tab, and pick echo by typing.
	for range 40 {
		if eval[string](p, `document.activeElement.id`) == "assistant" {
			break
		}
		p.must("tabbing back", chromedp.KeyEvent("\t", chromedp.KeyModifiers(chromedp.ModifierShift)))
	}
	if eval[string](p, `document.activeElement.id`) != "assistant" {
		t.Fatal("Shift+Tab never reached the assistant picker")
	}
	p.must("typing the assistant's name", chromedp.KeyEvent("echo"))
	p.waitFor("echo picked", `document.getElementById("assistant").selectedOptions[0].dataset.graph === "echo"`)
	p.must("focusing the message box", chromedp.Focus(chromedp.CSS(testid("composer-input"))))
	p.must("typing a message", chromedp.KeyEvent("typed by keyboard"), chromedp.KeyEvent("\r"))
	p.waitFor("the answer", `[...document.querySelectorAll('[data-testid="msg-ai"]')].some(m => m.textContent.includes("typed by keyboard"))`)

	// Every visible control has a name a screen reader reads.
	unnamed := eval[[]string](p, `[...document.querySelectorAll("button, input, select, textarea, summary, a[href]")]
		.filter(el => el.checkVisibility())
		.filter(el => {
			const name = (el.getAttribute("aria-label") || (el.labels && el.labels.length && el.labels[0].textContent) || el.textContent || el.title || "").trim();
			return !name;
		}).map(el => el.outerHTML.slice(0, 120))`)
	if len(unnamed) > 0 {
		t.Errorf("controls without a name: %v", unnamed)
	}
	// Tab through the page: each stop shows its focus.
	seen := map[string]bool{}
	for range 30 {
		p.must("tabbing", chromedp.KeyEvent("\t"))
		id := eval[string](p, `(() => { const a = document.activeElement; return (a.dataset.testid || a.id || a.tagName) })()`)
		seen[id] = true
		if eval[bool](p, `(() => { const s = getComputedStyle(document.activeElement); return document.activeElement !== document.body && s.outlineStyle === "none" && s.boxShadow === "none" })()`) {
			t.Errorf("no visible focus on %s", id)
		}
	}
	for _, want := range []string{"thread-open", "thread-rename", "thread-delete", "history-toggle", "composer-input", "send", "new-thread", "lang-select", "theme-toggle"} {
		if !seen[want] {
			t.Errorf("Tab never reached %s (reached %v)", want, seen)
		}
	}
}

// On a phone-sized screen the thread list is a drawer behind a button.
func TestPhone(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, &pageOptions{Width: 390, Height: 844, Phone: true})
	p.open(s.URL + "/")
	p.pick("echo")
	p.chat("hello from a phone")
	if eval[bool](p, `document.getElementById("threads").checkVisibility({visibilityProperty: true})`) {
		t.Error("the thread list shows on a phone without being asked for")
	}
	if !eval[bool](p, `document.querySelector('[data-testid="threads-toggle"]').checkVisibility()`) {
		t.Fatal("no button opens the thread list on a phone")
	}
	if w := eval[int](p, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %dpx wide on a 390px screen", w)
	}
	p.click(testid("threads-toggle"))
	p.waitFor("the drawer open", `document.getElementById("threads").classList.contains("open") && document.querySelector('[data-testid="threads-toggle"]').getAttribute("aria-expanded") === "true"`)
	p.waitFor("the thread in the drawer", `document.getElementById("threads").checkVisibility({visibilityProperty: true}) && document.querySelectorAll('[data-testid="thread-item"]').length === 1`)
	p.screenshot(filepath.Join(artifactsDir(t), "TestPhone-drawer.png"))
	p.click(testid("thread-open"))
	p.waitFor("the drawer closed", `!document.getElementById("threads").classList.contains("open")`)
	p.screenshot(filepath.Join(artifactsDir(t), "TestPhone.png"))
}

// A server that requires an API key gets one from the user, once; the
// key is kept in the browser and sent with every request.
func TestAPIKey(t *testing.T) {
	s := startServer(t, &serverOptions{APIKeys: map[string]string{"alice": "alice-0123456789abcdef"}})
	p := newPage(t, nil)
	p.must("opening the page", chromedp.Navigate(s.URL+"/"))
	p.waitFor("the key dialog", `document.getElementById("key-dialog").open`)
	p.fill(testid("key-input"), "alice-0123456789abcdef")
	p.click(testid("key-save"))
	p.waitFor("the UI to be ready", `document.body.dataset.ready === "true"`)
	p.pick("echo")
	p.chat("with a key")
	p.waitFor("the answer", `[...document.querySelectorAll('[data-testid="msg-ai"]')].some(m => m.textContent.includes("with a key"))`)
	p.open(s.URL + "/")
	if eval[bool](p, `document.getElementById("key-dialog").open`) {
		t.Error("the key was asked for again after a reload")
	}
	p.waitFor("the thread, listed with the kept key", `document.querySelectorAll('[data-testid="thread-item"]').length === 1`)
}

// A page reloaded while a run goes on joins the run's stream: what was
// said so far is replayed, and the rest streams in.
func TestReloadDuringRun(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("career")
	s.Gate.Hold()
	p.send("UX 디자이너가 되고 싶어요")
	s.Gate.Paused(t)
	p.waitFor("the thread in the URL", `location.hash.startsWith("#thread=")`)
	eval[bool](p, `window.__beforeReload = true`)
	p.must("reloading", chromedp.Reload())
	p.waitFor("the reloaded page", `document.body.dataset.ready === "true" && window.__beforeReload === undefined`)
	p.waitFor("the joined stream's first words", `(() => { const m = document.querySelector('[data-testid="msg-ai"][aria-busy="true"]');
		return m && m.textContent.includes("UX") && !document.getElementById("stop").hidden })()`)
	s.Gate.Release()
	p.waitFor("the final answer", `document.querySelector("#messages").textContent.includes("첫 걸음으로 커리어 전환 세션에서") && document.getElementById("run-status").dataset.status === "done"`)
	if n := eval[int](p, `document.querySelectorAll('[data-testid="msg-human"]').length`); n != 1 {
		t.Errorf("%d user messages after the reload, want 1", n)
	}
	// Each reply once, though the joined stream replayed their chunks.
	if n := eval[int](p, `document.querySelector("#messages").textContent.split("찾아볼게요").length - 1`); n != 1 {
		t.Errorf("the first reply shows %d times", n)
	}
}

// An interrupt that lists the answers it takes (the approval planner's
// question has "actions") gets a button for each, which answers
// {"action": ...}: a person approves a plan in one click without writing
// JSON.
func TestInterruptOfferedActions(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("approval")
	p.chat("plan the team offsite")
	p.waitFor("the offered actions", `!!document.querySelector('[data-testid="interrupt-actions"]') && document.body.dataset.run === "idle"`)
	buttons := eval[[]string](p, `[...document.querySelectorAll('[data-testid="interrupt-actions"] button')].map(b => b.textContent)`)
	if strings.Join(buttons, ",") != "approve,edit,reject" {
		t.Errorf("action buttons = %v, want approve,edit,reject", buttons)
	}
	labels := eval[[]string](p, `[...document.querySelectorAll('[data-testid="interrupt-form"] label')].map(l => l.textContent)`)
	if strings.Join(labels, ",") != "goal,plan" {
		t.Errorf("form fields = %v, want goal,plan (the actions are buttons, not a field)", labels)
	}
	p.click(testid("interrupt-action-approve"))
	p.waitFor("the resumed run's end", `document.getElementById("run-status").dataset.status === "done" && document.getElementById("interrupts").hidden`)
	p.waitFor("the state after the approval", `(document.querySelector('[data-testid="state-values"]') || {}).textContent.includes('"approved": true')`)
}
