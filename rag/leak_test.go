package rag

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine is left running
// after them: an Index whose Close leaves its keyword index's goroutine
// behind, say. bleve's analysis workers belong to the process (bleve
// starts them once, at init).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
