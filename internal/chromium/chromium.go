// Package chromium finds the Chromium that weft's browser tests and the web
// UI's benchmark drive: Debian's package, installed by .ci/run.
package chromium

import (
	"os"
	"os/exec"
)

// Path returns Chromium's path: $WEFT_CHROMIUM, /usr/bin/chromium,
// /usr/bin/chromium-browser, or chromium on the PATH; "" when there is none.
func Path() string {
	if p := os.Getenv("WEFT_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}
