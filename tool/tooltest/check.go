package tooltest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/weftlabs/weft/tool"
)

// CheckAccepts runs each tool, in a subtest named after it, with every
// argument set Arguments generates from its schema. A tool passes when it
// accepts each set, or answers it with one of the domain error codes (a
// result the service may rightly give, such as not found). It fails when it
// refuses as invalid arguments its schema admits, answers with any other
// error, or when fewer than two argument sets could be generated (the check
// would then prove little).
func CheckAccepts(t *testing.T, tools []*tool.Tool, domain ...string) {
	t.Helper()
	for _, tl := range tools {
		t.Run(tl.Name(), func(t *testing.T) {
			all, err := Arguments(tl.Spec().Parameters)
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range all {
				r, err := tl.Run(context.Background(), args, time.Minute)
				switch {
				case errors.Is(err, tool.ErrInvalidArgs):
					t.Errorf("%s: the tool rejects arguments its schema accepts: %v", args, err)
				case r.Success, slices.Contains(domain, r.ErrorCode):
				default:
					t.Errorf("%s: schema-valid arguments refused: %s: %s", args, r.ErrorCode, r.Error)
				}
			}
			if len(all) < 2 {
				t.Errorf("only %d argument sets generated", len(all))
			}
		})
	}
}
