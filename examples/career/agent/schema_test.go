package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weftlabs/weft/examples/career/agent"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

// TestSchemasStateWhatTheServiceEnforces runs every tool with arguments
// generated from its schema (shortest and longest strings, odd strings the
// schema admits): each must be accepted, or answered with a domain result
// (not found, a full or started session, a seat already booked), never
// refused as invalid input.
func TestSchemasStateWhatTheServiceEnforces(t *testing.T) {
	svc := openService(t)
	domain := map[string]bool{agent.CodeNotFound: true, agent.CodeSessionFull: true, agent.CodeAlreadyBooked: true, agent.CodeSessionStarted: true}
	for _, tl := range agent.Tools(svc) {
		t.Run(tl.Name(), func(t *testing.T) {
			all, err := tooltest.Arguments(tl.Spec().Parameters)
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range all {
				r, err := tl.Run(context.Background(), args, time.Minute)
				switch {
				case errors.Is(err, tool.ErrInvalidArgs):
					t.Errorf("%s: the tool rejects arguments its schema accepts: %v", args, err)
				case r.Success, domain[r.ErrorCode]:
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
