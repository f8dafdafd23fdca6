package agent

import (
	"context"
	"slices"

	"github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/tool"
)

// LastRecommendedPlaces is the places the user was last shown (document
// 000's last_recommended_places): a recommendation sets it, a replacement
// swaps the replaced places for the new ones. The model refers to "the
// second place" or "replace the cafe" against it.
//
// When tools of two handlers run in one step, both handlers write it; the
// write folded last wins (handlers fold in a fixed order), so the value is
// always one handler's complete list, never a mix.
var LastRecommendedPlaces = graph.Reduce("last_recommended_places", func(_, update []RecommendedPlace) []RecommendedPlace {
	return update
})

// TravelRoute is the last route create_travel_route built.
var TravelRoute = graph.Value[*service.TravelRoute]("travel_route")

// handleReplacePlaces drops the replaced places from
// last_recommended_places and appends their replacements.
var handleReplacePlaces = tool.Handle(func(_ context.Context, s graph.State, rs []tool.Result[Recommendation]) (graph.Update, error) {
	current := slices.Clone(LastRecommendedPlaces.Get(s))
	changed := false
	for _, r := range rs {
		if !r.Success {
			continue
		}
		current = slices.DeleteFunc(current, func(p RecommendedPlace) bool {
			return slices.Contains(r.Data.ReplacedPlaceIDs, p.ID)
		})
		current = appendNew(current, r.Data.Places)
		changed = true
	}
	if !changed {
		return graph.Update{}, nil
	}
	return LastRecommendedPlaces.Write(current), nil
})

// handlePlaceRecommendation serves recommend_nearby_places and
// recommend_popular_places_in_region: the places they found become
// last_recommended_places.
var handlePlaceRecommendation = tool.Handle(setRecommended)

// handleWorkspaceRecommendation does the same for
// recommend_places_by_all_users, a node of its own as in document 000.
var handleWorkspaceRecommendation = tool.Handle(setRecommended)

func setRecommended(_ context.Context, _ graph.State, rs []tool.Result[Recommendation]) (graph.Update, error) {
	var places []RecommendedPlace
	ok := false
	for _, r := range rs {
		if r.Success {
			places = appendNew(places, r.Data.Places)
			ok = true
		}
	}
	if !ok {
		// A failed search leaves what the user was shown as it was.
		return graph.Update{}, nil
	}
	if places == nil {
		places = []RecommendedPlace{}
	}
	return LastRecommendedPlaces.Write(places), nil
}

// handleTravelRoute keeps the last route built.
var handleTravelRoute = tool.Handle(func(_ context.Context, _ graph.State, rs []tool.Result[*service.TravelRoute]) (graph.Update, error) {
	for _, r := range slices.Backward(rs) {
		if r.Success && r.Data != nil {
			return TravelRoute.Write(r.Data), nil
		}
	}
	return graph.Update{}, nil
})

// appendNew appends the places of add whose ids list does not hold yet.
func appendNew(list, add []RecommendedPlace) []RecommendedPlace {
	for _, p := range add {
		if !slices.ContainsFunc(list, func(q RecommendedPlace) bool { return q.ID == p.ID }) {
			list = append(list, p)
		}
	}
	return list
}
