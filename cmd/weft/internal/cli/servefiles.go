package cli

import (
	"path/filepath"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/server"
)

// ExampleThreadFiles is server.Options.ThreadFiles for the example agents
// served over dataDir (as ExampleGraphs and weft serve build them): an
// orchestrator agent's thread keeps its results in
// dataDir/weft-results/THREAD; the other agents write no files.
func ExampleThreadFiles(dataDir string) server.ThreadFilesFunc {
	orchestrators := map[string]bool{}
	for _, e := range examples.All() {
		if e.Orchestrate != nil {
			orchestrators[e.Name] = true
		}
	}
	dir := filepath.Join(dataDir, resultsDirName)
	return func(graphID, threadID string) string {
		if !orchestrators[graphID] {
			return ""
		}
		return orchestrator.ThreadDir(dir, threadID)
	}
}
