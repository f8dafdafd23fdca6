package browser

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShellScreenshots writes the screenshots of the shell's main screens
// that docs/webui.md and the README show, into docs/img/shell-*.png:
//
//	WEFT_SCREENSHOTS=1 go test ./cmd/weft/internal/browser -run Screenshots
//
// Korean text needs a Korean font (apt-get install fonts-nanum). Without
// WEFT_SCREENSHOTS=1 it skips.
func TestShellScreenshots(t *testing.T) {
	if os.Getenv("WEFT_SCREENSHOTS") != "1" {
		t.Skip("set WEFT_SCREENSHOTS=1 to write docs/img/shell-*.png")
	}
	dir := filepath.Join(repoRoot(t), "docs", "img")
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			s := startServer(t, nil)

			// Desktop: an answer with its tool calls, one unfolded.
			p := newPage(t, &pageOptions{ColorScheme: scheme, Width: 1280, Height: 800})
			p.open(s.URL + "/")
			p.pick("echo")
			p.chat("What can weft do?")
			p.pick("career")
			p.chat("UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?")
			p.click(`[data-testid="tool-call"] summary`)
			p.waitFor("the unfolded call", `!!document.querySelector('[data-testid="tool-result"]')`)
			p.screenshot(filepath.Join(dir, "shell-chat-"+scheme+".png"))

			// The history of the thread, with the state at a checkpoint.
			p.click(testid("history-toggle"))
			p.waitFor("the checkpoints", `document.querySelectorAll('[data-testid="checkpoint"]').length > 2`)
			p.click(`[data-testid="checkpoint"]:nth-child(2) ` + testid("checkpoint-view"))
			p.waitFor("the state", `!!document.querySelector('[data-testid="checkpoint-state"]')`)
			p.screenshot(filepath.Join(dir, "shell-history-"+scheme+".png"))

			// A generic interrupt's form.
			p.click(testid("history-close"))
			p.pick("approval")
			p.chat("plan the team offsite")
			p.waitFor("the interrupt", `!!document.querySelector('[data-testid="interrupt-generic"]')`)
			p.click(`.raw-editor summary`)
			p.screenshot(filepath.Join(dir, "shell-interrupt-"+scheme+".png"))

			// A phone, in Korean.
			ph := newPage(t, &pageOptions{ColorScheme: scheme, Width: 390, Height: 844, Phone: true, Lang: "ko-KR"})
			ph.open(s.URL + "/")
			ph.click(testid("threads-toggle"))
			ph.waitFor("the drawer", `document.querySelectorAll('[data-testid="thread-item"]').length === 3`)
			ph.click(`[data-testid="thread-item"]:nth-child(2) ` + testid("thread-open"))
			ph.waitFor("the thread", `document.querySelectorAll('[data-testid="tool-call"]').length === 2 && !document.getElementById("threads").classList.contains("open")`)
			ph.screenshot(filepath.Join(dir, "shell-phone-"+scheme+".png"))
		})
	}
}
