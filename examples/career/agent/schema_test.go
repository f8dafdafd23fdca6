package agent_test

import (
	"testing"

	"github.com/weftlabs/weft/examples/career/agent"
	"github.com/weftlabs/weft/tool/tooltest"
)

// TestSchemasStateWhatTheServiceEnforces runs every tool with arguments
// generated from its schema (shortest and longest strings, odd strings the
// schema admits): each must be accepted, or answered with a domain result
// (not found, a full or started session, a seat already booked), never
// refused as invalid input.
func TestSchemasStateWhatTheServiceEnforces(t *testing.T) {
	tooltest.CheckAccepts(t, agent.Tools(openService(t)), agent.CodeNotFound, agent.CodeSessionFull, agent.CodeAlreadyBooked, agent.CodeSessionStarted)
}
