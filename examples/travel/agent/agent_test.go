package agent_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/travel/agent"
	"github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
	"github.com/weftlabs/weft/tool"
)

func call(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
}

// run drives the whole agent graph (the router, then the ReAct agent) with
// model on a fresh seeded service and returns the final state.
func run(t *testing.T, model llm.ChatModel, question string) (react.Outcome, graph.State) {
	t.Helper()
	svc, err := service.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	a, err := agent.New(model, svc, agent.Options{Checkpointer: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	g := a.Graph
	opts := graph.RunOptions{ThreadID: "t"}
	out, err := react.Run(t.Context(), g, question, &opts)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(t.Context(), checkpoint.Config{ThreadID: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out, snap.Values
}

func ids(ps []agent.RecommendedPlace) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func TestDemoScript(t *testing.T) {
	data, err := os.ReadFile("../demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model, err := scripted.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	out, s := run(t, model, "제주 인기 관광지 3곳을 추천하고 동선도 짜 주세요")
	if diff := cmp.Diff([]string{agent.RecommendPopularPlacesInRegion, agent.CreateTravelRoute}, out.ToolsUsed); diff != "" {
		t.Errorf("tools used (-want +got):\n%s", diff)
	}
	if out.Stop != react.StopAnswer || out.ToolErrors != 0 {
		t.Errorf("outcome = %+v", out)
	}
	want := []string{"jj-seongsan", "jj-hyeopjae", "jj-hallasan-seongpanak"}
	if diff := cmp.Diff(want, ids(agent.LastRecommendedPlaces.Get(s))); diff != "" {
		t.Errorf("last_recommended_places (-want +got):\n%s", diff)
	}
	route := agent.TravelRoute.Get(s)
	if route == nil {
		t.Fatal("travel_route not set")
	}
	var stops []string
	for _, st := range route.Stops {
		stops = append(stops, st.Place.ID)
	}
	if diff := cmp.Diff([]string{"jj-seongsan", "jj-hallasan-seongpanak", "jj-hyeopjae"}, stops); diff != "" {
		t.Errorf("route stops (-want +got):\n%s", diff)
	}
	if route.TotalDistanceKm != 66.349 {
		t.Errorf("total distance = %v km, want 66.349 (the answer quotes it)", route.TotalDistanceKm)
	}
}

func TestReplacementUpdatesLastRecommended(t *testing.T) {
	model := scripted.New(
		llm.AI("", call(agent.RecommendPopularPlacesInRegion, `{"region":"제주","category":"관광지","limit":3}`)),
		llm.AI("", call(agent.ReplacePlaces, `{"replace_target_ids":["jj-hallasan-seongpanak"],"latitude":33.3849,"longitude":126.62,"category":"관광지","radius_km":30,"excluded_place_ids":["jj-seongsan","jj-hyeopjae"]}`)),
		llm.AI("한라산 대신 천지연폭포는 어떠세요?"),
	)
	out, s := run(t, model, "제주 관광지 추천해 주고, 한라산은 다른 곳으로 바꿔 줘")
	if out.ToolErrors != 0 {
		t.Fatalf("outcome = %+v", out)
	}
	want := []string{"jj-seongsan", "jj-hyeopjae", "jj-cheonjiyeon"}
	if diff := cmp.Diff(want, ids(agent.LastRecommendedPlaces.Get(s))); diff != "" {
		t.Errorf("last_recommended_places (-want +got):\n%s", diff)
	}
	if got := agent.LastRecommendedPlaces.Get(s)[2].DistanceKm; got <= 0 {
		t.Errorf("replacement distance = %v, want > 0", got)
	}
}

func TestNearbyAndWorkspaceRecommendations(t *testing.T) {
	model := scripted.New(
		llm.AI("", call(agent.RecommendNearbyPlaces, `{"latitude":37.5796,"longitude":126.977,"radius_km":2,"category":"카페","limit":2}`)),
		llm.AI("", call(agent.RecommendPlacesByAllUsers, `{"region":"제주","limit":2}`)),
		llm.AI("다른 여행자들이 많이 담은 곳이에요."),
	)
	out, s := run(t, model, "경복궁 근처 카페, 그리고 다들 많이 가는 제주 장소")
	if out.ToolErrors != 0 {
		t.Fatalf("outcome = %+v", out)
	}
	last := agent.LastRecommendedPlaces.Get(s)
	if len(last) != 2 {
		t.Fatalf("last_recommended_places = %v, want the 2 workspace places", ids(last))
	}
	for _, p := range last {
		if p.Region != "jeju" || p.UserCount == 0 {
			t.Errorf("place %s: region %q, user count %d; want a saved Jeju place", p.ID, p.Region, p.UserCount)
		}
	}
}

func TestFailedRecommendationKeepsState(t *testing.T) {
	model := scripted.New(
		llm.AI("", call(agent.RecommendPopularPlacesInRegion, `{"region":"제주","limit":2}`)),
		llm.AI("", call(agent.RecommendPopularPlacesInRegion, `{"region":"화성"}`)),
		llm.AI("화성은 아직 지원하지 않아요."),
	)
	_, s := run(t, model, "제주, 그리고 화성 추천")
	msgs := react.Messages.Get(s)
	last := msgs[len(msgs)-2]
	if last.Type != llm.TypeTool || last.Status != llm.StatusError {
		t.Fatalf("second tool message = %+v, want an error", last)
	}
	env, err := tool.ResultOf[agent.Recommendation](last)
	if err != nil || env.ErrorCode != agent.CodeNotFound || env.Meta["known"] == nil || !strings.Contains(last.Content, "제주") {
		t.Errorf("envelope = %+v, %v, content %q; want NOT_FOUND listing the known regions to the model and in meta", env, err, last.Content)
	}
	if got := ids(agent.LastRecommendedPlaces.Get(s)); len(got) != 2 {
		t.Errorf("last_recommended_places = %v, want the 2 Jeju places kept", got)
	}
}

func TestHandlersAreWired(t *testing.T) {
	svc, err := service.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	a, err := agent.New(scripted.New(), svc, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := a.Graph.Nodes()
	for _, n := range []string{agent.HandleReplacePlaces, agent.HandlePlaceRecommendation, agent.HandleWorkspaceRecommendation, agent.HandleTravelRoute} {
		if !slices.Contains(nodes, n) {
			t.Errorf("node %s missing from %v", n, nodes)
		}
	}
}
