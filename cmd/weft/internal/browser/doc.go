// Package browser holds the browser tests of weft's web UI (package
// server/webui): they start weft serve's handler in-process over the
// example agents and a temporary SQLite database, and drive Debian's
// headless Chromium with chromedp through the page, as a person would.
//
//	go test -race ./cmd/weft/internal/browser
//
// Without Chromium (/usr/bin/chromium, or $WEFT_CHROMIUM) the tests skip,
// unless CI=true, where they fail. A failing test saves a screenshot and
// the page's console log to $WEFT_ARTIFACTS_DIR (default .ci/artifacts).
// WEFT_SCREENSHOTS=1 with -run Screenshots writes the screenshots of
// docs/img/.
package browser
