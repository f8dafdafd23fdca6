package react

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

type everything struct{}

func (everything) RetrieveTools(context.Context, string, string, int) ([]string, error) {
	return []string{"a", "missing"}, nil
}

// The search tool accepts every query its schema admits.
func TestSearchToolAcceptsItsSchema(t *testing.T) {
	reg, err := tool.NewRegistry(tool.New("a", "A tool.", func(context.Context, struct{}) (string, error) { return "", nil }))
	if err != nil {
		t.Fatal(err)
	}
	tooltest.CheckAccepts(t, []*tool.Tool{searchTool(&Retrieval{Tools: everything{}, K: 5, SearchToolName: DefaultSearchToolName}, &agent{tools: reg})})
}
