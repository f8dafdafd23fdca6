// Package agent is MateTrip's agent (design document 000): tools that adapt
// the travel service for a model, each declared with its post-processing
// node, and a ReAct agent over them whose graph state keeps
// last_recommended_places and the travel route current.
//
// The three layers of document 000 stay apart: the service knows nothing
// of graphs; a tool only checks arguments, builds the service request and
// wraps the result in the tool envelope; a handler reads the typed result
// of its own tool and updates the state. Routing from the tool node to the
// handlers is wired by tool.Wire from the tools' declarations: no node
// names or edges are written here.
package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/examples/travel/service"
	"github.com/weftlabs/weft/tool"
)

// Error codes the tools put in the envelope for the service's errors.
const (
	CodeInvalidInput = "INVALID_INPUT"
	CodeNotFound     = "NOT_FOUND"
)

// Tool names, as the model sees them (document 000).
const (
	ReplacePlaces                  = "replace_places"
	RecommendNearbyPlaces          = "recommend_nearby_places"
	RecommendPopularPlacesInRegion = "recommend_popular_places_in_region"
	RecommendPlacesByAllUsers      = "recommend_places_by_all_users"
	CreateTravelRoute              = "create_travel_route"
)

// Post-processing node names (document 000).
const (
	HandleReplacePlaces           = "handle_replace_places"
	HandlePlaceRecommendation     = "handle_place_recommendation"
	HandleWorkspaceRecommendation = "handle_workspace_recommendation"
	HandleTravelRoute             = "handle_travel_route"
)

// Defaults the tools apply when the model leaves an optional argument out.
const (
	DefaultRadiusKm = 3
	DefaultLimit    = 5
)

// RecommendedPlace is a place as the recommendation tools return it and
// as last_recommended_places keeps it.
type RecommendedPlace struct {
	service.Place
	// DistanceKm is the distance from the point searched around, for
	// nearby and replacement places.
	DistanceKm float64 `json:"distance_km,omitempty"`
	// UserCount is how many users saved the place, for workspace
	// recommendations.
	UserCount int `json:"user_count,omitempty"`
}

// Recommendation is the data of every place-recommending tool
// (document 000's PlaceRecommendationData).
type Recommendation struct {
	Places []RecommendedPlace `json:"places"`
	// ReplacedPlaceIDs are the places replace_places replaces.
	ReplacedPlaceIDs []string `json:"replaced_place_ids,omitempty"`
}

// ReplaceArgs are the arguments of replace_places.
type ReplaceArgs struct {
	ReplaceTargetIDs []string `json:"replace_target_ids" jsonschema:"ids of the places to replace (1 to 50); as many replacements are returned"`
	Latitude         float64  `json:"latitude" jsonschema:"latitude of the point to search around, usually the replaced place's"`
	Longitude        float64  `json:"longitude" jsonschema:"longitude of the point to search around"`
	ExcludedPlaceIDs []string `json:"excluded_place_ids,omitempty" jsonschema:"ids of places not to suggest, such as those already in the plan"`
	Category         string   `json:"category,omitempty" jsonschema:"the kind of place; leave it out for any"`
	RadiusKm         float64  `json:"radius_km,omitempty" jsonschema:"search radius in km, more than 0 and at most 100 (default 3)"`
}

// NearbyArgs are the arguments of recommend_nearby_places.
type NearbyArgs struct {
	Latitude  float64 `json:"latitude" jsonschema:"latitude of the point to search around"`
	Longitude float64 `json:"longitude" jsonschema:"longitude of the point to search around"`
	RadiusKm  float64 `json:"radius_km,omitempty" jsonschema:"search radius in km, more than 0 and at most 100 (default 3)"`
	Category  string  `json:"category,omitempty" jsonschema:"the kind of place; leave it out for any"`
	Limit     int     `json:"limit,omitempty" jsonschema:"how many places, 1 to 50 (default 5)"`
}

// RegionArgs are the arguments of recommend_popular_places_in_region and
// recommend_places_by_all_users.
type RegionArgs struct {
	Region   string `json:"region,omitempty" jsonschema:"region or neighbourhood, e.g. 제주, 종로, 홍대, 해운대"`
	Category string `json:"category,omitempty" jsonschema:"the kind of place; leave it out for any"`
	Limit    int    `json:"limit,omitempty" jsonschema:"how many places, 1 to 50 (default 5)"`
}

// RouteArgs are the arguments of create_travel_route.
type RouteArgs struct {
	PlaceIDs     []string `json:"place_ids" jsonschema:"ids of the places to visit, 1 to 29, each once"`
	StartPlaceID string   `json:"start_place_id,omitempty" jsonschema:"id of the place to start from (default the first of place_ids); a place not among place_ids is visited first"`
}

// Tools returns MateTrip's tools over svc, each declared with its
// post-processing node.
func Tools(svc *service.Service) []*tool.Tool {
	placeRec := tool.Options{Then: HandlePlaceRecommendation, Schema: nearbySchema}
	placeRec.Handler = handlePlaceRecommendation
	regions := regionSchema(svc)
	return []*tool.Tool{
		tool.New(ReplacePlaces,
			"일정의 장소를 반경 안의 다른 장소로 바꿀 후보를 찾습니다. Finds replacements for places of a plan within a radius.",
			func(ctx context.Context, in ReplaceArgs) (Recommendation, error) {
				targets := nonEmpty(in.ReplaceTargetIDs)
				if len(targets) == 0 {
					return Recommendation{}, &tool.Error{Code: CodeInvalidInput, Message: "replace_target_ids is empty; give the ids of the places to replace"}
				}
				cat, err := category(in.Category)
				if err != nil {
					return Recommendation{}, err
				}
				places, err := svc.FindReplacementPlaces(ctx, service.ReplaceRequest{
					Latitude:         in.Latitude,
					Longitude:        in.Longitude,
					ReplaceCount:     len(targets),
					ExcludedPlaceIDs: union(targets, nonEmpty(in.ExcludedPlaceIDs)),
					Category:         cat,
					RadiusKm:         orDefault(in.RadiusKm, DefaultRadiusKm),
				})
				if err != nil {
					return Recommendation{}, toolError(err)
				}
				tool.SetMeta(ctx, "count", len(places))
				return Recommendation{Places: nearby(places), ReplacedPlaceIDs: targets}, nil
			},
			tool.Options{Then: HandleReplacePlaces, Handler: handleReplacePlaces, Schema: replaceSchema}),
		tool.New(RecommendNearbyPlaces,
			"좌표 주변의 평점 높은 장소를 추천합니다. Recommends the best-rated places around a point.",
			func(ctx context.Context, in NearbyArgs) (Recommendation, error) {
				cat, err := category(in.Category)
				if err != nil {
					return Recommendation{}, err
				}
				places, err := svc.RecommendNearbyPlaces(ctx, in.Latitude, in.Longitude, orDefault(in.RadiusKm, DefaultRadiusKm), cat, orDefault(in.Limit, DefaultLimit))
				if err != nil {
					return Recommendation{}, toolError(err)
				}
				tool.SetMeta(ctx, "count", len(places))
				return Recommendation{Places: nearby(places)}, nil
			},
			placeRec),
		tool.New(RecommendPopularPlacesInRegion,
			"지역의 인기 장소를 추천합니다. Recommends the most popular places of a region.",
			func(ctx context.Context, in RegionArgs) (Recommendation, error) {
				region := strings.TrimSpace(in.Region)
				if region == "" {
					return Recommendation{}, &tool.Error{Code: CodeInvalidInput, Message: "region is empty; give a region such as 제주, 종로, 홍대 or 해운대"}
				}
				cat, err := category(in.Category)
				if err != nil {
					return Recommendation{}, err
				}
				places, err := svc.RecommendPopularPlacesInRegion(ctx, region, cat, orDefault(in.Limit, DefaultLimit))
				if err != nil {
					return Recommendation{}, toolError(err)
				}
				rec := Recommendation{Places: make([]RecommendedPlace, len(places))}
				for i, p := range places {
					rec.Places[i] = RecommendedPlace{Place: p}
				}
				tool.SetMeta(ctx, "count", len(places))
				return rec, nil
			},
			tool.Options{Then: HandlePlaceRecommendation, Schema: func(s *jsonschema.Schema) {
				regions(s)
				s.Required = []string{"region"}
			}}),
		tool.New(RecommendPlacesByAllUsers,
			"여러 사용자가 여행 계획에 가장 많이 담은 장소를 추천합니다(공유 워크스페이스). Recommends the places most users saved.",
			func(ctx context.Context, in RegionArgs) (Recommendation, error) {
				cat, err := category(in.Category)
				if err != nil {
					return Recommendation{}, err
				}
				places, err := svc.RecommendPlacesByAllUsers(ctx, strings.TrimSpace(in.Region), cat, orDefault(in.Limit, DefaultLimit))
				if err != nil {
					return Recommendation{}, toolError(err)
				}
				rec := Recommendation{Places: make([]RecommendedPlace, len(places))}
				for i, p := range places {
					rec.Places[i] = RecommendedPlace{Place: p.Place, UserCount: p.UserCount}
				}
				tool.SetMeta(ctx, "count", len(places))
				return rec, nil
			},
			tool.Options{Then: HandleWorkspaceRecommendation, Handler: handleWorkspaceRecommendation, Schema: regions}),
		tool.New(CreateTravelRoute,
			"장소들의 방문 순서(짧은 동선)와 구간별 거리를 만듭니다. Orders places into a short visiting route.",
			func(ctx context.Context, in RouteArgs) (*service.TravelRoute, error) {
				ids := nonEmpty(in.PlaceIDs)
				if len(ids) == 0 {
					return nil, &tool.Error{Code: CodeInvalidInput, Message: "place_ids is empty; give the ids of the places to visit"}
				}
				// A start outside the list is the route's first stop, so
				// that the schema's arguments are all accepted (the
				// service wants the start among the places).
				start := strings.TrimSpace(in.StartPlaceID)
				if start != "" && !slices.Contains(ids, start) {
					ids = append([]string{start}, ids...)
				}
				r, err := svc.CreateTravelRoute(ctx, ids, start)
				if err != nil {
					return nil, toolError(err)
				}
				return r, nil
			},
			tool.Options{Then: HandleTravelRoute, Handler: handleTravelRoute, Schema: routeSchema}),
	}
}

// The schemas state what the service enforces, as far as JSON Schema can
// (document 000: the tool layer validates), so that arguments valid
// against them are not then rejected. What it cannot state, the
// descriptions say: which regions the service knows (an unknown one gets
// NOT_FOUND naming them).

// idPattern is an id: no spaces (ids are trimmed, and two ids that differ
// only by spaces would be the same place).
const idPattern = `^\S+$`

// wordPattern asks for a letter or digit: the service reads names by them.
const wordPattern = `[\p{L}\p{N}]`

// categories are the words service.ParseCategory takes, as an enum.
func categorySchema(p *jsonschema.Schema) {
	words := service.CategoryWords()
	p.Enum = make([]any, len(words))
	for i, w := range words {
		p.Enum[i] = w
	}
}

func radiusSchema(p *jsonschema.Schema) {
	p.ExclusiveMinimum = jsonschema.Ptr(0.0)
	p.Maximum = jsonschema.Ptr(float64(service.MaxRadiusKm))
}

func pointSchema(s *jsonschema.Schema) {
	s.Properties["latitude"].Minimum = jsonschema.Ptr(-90.0)
	s.Properties["latitude"].Maximum = jsonschema.Ptr(90.0)
	s.Properties["longitude"].Minimum = jsonschema.Ptr(-180.0)
	s.Properties["longitude"].Maximum = jsonschema.Ptr(180.0)
}

func limitSchema(p *jsonschema.Schema) {
	p.Minimum = jsonschema.Ptr(1.0)
	p.Maximum = jsonschema.Ptr(float64(service.MaxLimit))
}

func idList(p *jsonschema.Schema, minItems, maxItems int) {
	p.Type, p.Types = "array", nil // a list, never null
	if minItems > 0 {
		p.MinItems = jsonschema.Ptr(minItems)
	}
	if maxItems > 0 {
		p.MaxItems = jsonschema.Ptr(maxItems)
	}
	p.Items.Pattern = idPattern
}

func replaceSchema(s *jsonschema.Schema) {
	pointSchema(s)
	idList(s.Properties["replace_target_ids"], 1, service.MaxLimit)
	idList(s.Properties["excluded_place_ids"], 0, 0)
	categorySchema(s.Properties["category"])
	radiusSchema(s.Properties["radius_km"])
}

func nearbySchema(s *jsonschema.Schema) {
	pointSchema(s)
	radiusSchema(s.Properties["radius_km"])
	categorySchema(s.Properties["category"])
	limitSchema(s.Properties["limit"])
}

func routeSchema(s *jsonschema.Schema) {
	ids := s.Properties["place_ids"]
	// One place is left for a start outside the list.
	idList(ids, 1, service.MaxRoutePlaces-1)
	ids.UniqueItems = true
	s.Properties["start_place_id"].Pattern = idPattern
}

// regionSchema returns the schema adjustment of the region tools: a region
// with a letter or digit in it, the regions the service knows in its description
// (read once; a region it does not know gets a NOT_FOUND naming them), the
// category enum and the limit's bounds.
func regionSchema(svc *service.Service) func(*jsonschema.Schema) {
	known := ""
	if svc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rs, err := svc.Regions(ctx)
		cancel()
		if err == nil && len(rs) > 0 {
			names := make([]string, len(rs))
			for i, r := range rs {
				names[i] = r.Name + " (" + r.NameEn + ")"
			}
			known = fmt.Sprintf("; the service knows %d regions: %s, and neighbourhoods or districts of them", len(rs), strings.Join(names, ", "))
		}
	}
	return func(s *jsonschema.Schema) {
		r := s.Properties["region"]
		r.Pattern = wordPattern
		r.Description += known
		categorySchema(s.Properties["category"])
		limitSchema(s.Properties["limit"])
	}
}

// NewRegistry returns a registry holding Tools(svc).
func NewRegistry(svc *service.Service) (*tool.Registry, error) {
	return tool.NewRegistry(Tools(svc)...)
}

// registry adds tools to reg, or to a new registry when reg is nil.
func registry(reg *tool.Registry, tools []*tool.Tool) (*tool.Registry, error) {
	if reg == nil {
		return tool.NewRegistry(tools...)
	}
	_, err := reg.Apply(tool.Change{Added: tools})
	return reg, err
}

func category(s string) (service.Category, error) {
	c, err := service.ParseCategory(s)
	if err != nil {
		return "", toolError(err)
	}
	return c, nil
}

func nearby(ps []service.NearbyPlace) []RecommendedPlace {
	out := make([]RecommendedPlace, len(ps))
	for i, p := range ps {
		out[i] = RecommendedPlace{Place: p.Place, DistanceKm: p.DistanceKm}
	}
	return out
}

func orDefault[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// nonEmpty trims ids and drops the empty ones.
func nonEmpty(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, id := range b {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// toolError turns the service's typed errors into envelope error codes.
func toolError(err error) error {
	var (
		in *service.InputError
		nf *service.NotFoundError
	)
	switch {
	case errors.As(err, &in):
		return &tool.Error{Code: CodeInvalidInput, Message: err.Error(), Meta: map[string]any{"field": in.Field, "expected": in.Expected}, Err: err}
	case errors.As(err, &nf):
		te := &tool.Error{Code: CodeNotFound, Message: err.Error(), Err: err}
		meta := map[string]any{}
		if len(nf.Missing) > 0 {
			meta["missing"] = nf.Missing
		}
		if len(nf.Known) > 0 {
			meta["known"] = nf.Known
		}
		if len(meta) > 0 {
			te.Meta = meta
		}
		return te
	}
	return err
}
