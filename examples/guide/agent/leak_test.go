package agent_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine is left running
// after them (an agent's reflector or knowledge-base index that Close did
// not stop), once the knowledge base the tests share is closed. bleve's
// analysis workers belong to the process (bleve starts them once, at
// init).
func TestMain(m *testing.M) {
	code := m.Run()
	if ix, err := sharedKB(); err == nil && ix != nil {
		ix.Close()
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
