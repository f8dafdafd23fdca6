package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/weftlabs/weft/examples/travel/agent"
	"github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/tooltest"
)

// TestSchemasStateWhatTheServiceEnforces runs every tool with arguments
// generated from its schema (enum members, bounds, shortest and longest
// lists, odd strings the schema admits): each must be accepted, or answered
// with a domain result (NOT_FOUND), never refused as invalid input. A model
// that follows the schema must not end in the fallback answer.
func TestSchemasStateWhatTheServiceEnforces(t *testing.T) {
	svc, err := service.Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	tooltest.CheckAccepts(t, agent.Tools(svc), agent.CodeNotFound)
}

// The schema-valid arguments the service used to refuse (issue 7 §13)
// are now refused by the schema, so the model hears of them as invalid
// arguments, with the schema, before the service runs.
func TestSchemasRefuseWhatTheServiceRefuses(t *testing.T) {
	svc, err := service.Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	reg, err := agent.NewRegistry(svc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{agent.RecommendPopularPlacesInRegion, `{}`},
		{agent.RecommendPopularPlacesInRegion, `{"region":"  "}`},
		{agent.RecommendPopularPlacesInRegion, `{"region":"제주","category":"bar"}`},
		{agent.RecommendPopularPlacesInRegion, `{"region":"제주","limit":51}`},
		{agent.RecommendNearbyPlaces, `{"latitude":91,"longitude":0}`},
		{agent.RecommendNearbyPlaces, `{"latitude":33,"longitude":126,"radius_km":101}`},
		{agent.CreateTravelRoute, `{"place_ids":null}`},
		{agent.CreateTravelRoute, `{"place_ids":[]}`},
		{agent.CreateTravelRoute, `{"place_ids":["a","a"]}`},
		{agent.ReplacePlaces, `{"replace_target_ids":[],"latitude":33,"longitude":126}`},
	} {
		tl, _ := reg.Get(c.tool)
		r, err := tl.Run(context.Background(), json.RawMessage(c.args), time.Minute)
		if !errors.Is(err, tool.ErrInvalidArgs) || r.ErrorCode != tool.CodeInvalidArgs {
			t.Errorf("%s %s: %s %v; want invalid arguments", c.tool, c.args, r.ErrorCode, err)
		}
	}
}
