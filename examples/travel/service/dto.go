package service

// Category is the kind of a place. Requests also accept the Korean words
// listed in ParseCategory.
type Category string

// The categories of places.
const (
	Cafe          Category = "cafe"
	Restaurant    Category = "restaurant"
	Attraction    Category = "attraction"
	Accommodation Category = "accommodation"
	Shopping      Category = "shopping"
)

// Point is a position in degrees (WGS 84).
type Point struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// Region is an area places belong to, such as "서울 종로".
type Region struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	NameEn string `json:"name_en"`
}

// Place is a place a traveller can visit.
type Place struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	NameEn      string   `json:"name_en"`
	Category    Category `json:"category"`
	Region      string   `json:"region"` // a Region's ID
	Address     string   `json:"address"`
	Latitude    float64  `json:"latitude"`
	Longitude   float64  `json:"longitude"`
	Rating      float64  `json:"rating"` // 0 to 5
	ReviewCount int      `json:"review_count"`
	Popularity  int      `json:"popularity"` // 0 to 100
	Description string   `json:"description"`
}

// NearbyPlace is a place with its distance from the point searched around,
// rounded to the metre.
type NearbyPlace struct {
	Place
	DistanceKm float64 `json:"distance_km"`
}

// SavedPlace is a place with how often users saved it in their trips.
type SavedPlace struct {
	Place
	SaveCount int `json:"save_count"` // trips that include the place
	UserCount int `json:"user_count"` // distinct users whose trips include it
}

// ReplaceRequest asks for places to replace some in a plan: up to
// ReplaceCount places within RadiusKm of the point, of Category when it is
// not empty, skipping ExcludedPlaceIDs (typically the places being replaced
// and the ones already in the plan).
type ReplaceRequest struct {
	Latitude         float64  `json:"latitude"`
	Longitude        float64  `json:"longitude"`
	ReplaceCount     int      `json:"replace_count"`
	ExcludedPlaceIDs []string `json:"excluded_place_ids,omitempty"`
	Category         Category `json:"category,omitempty"`
	RadiusKm         float64  `json:"radius_km"`
}

// RouteLeg is one move between consecutive stops.
type RouteLeg struct {
	FromID     string  `json:"from_place_id"`
	ToID       string  `json:"to_place_id"`
	DistanceKm float64 `json:"distance_km"`
}

// RouteStop is one place of a route; Order starts at 1.
type RouteStop struct {
	Order int   `json:"order"`
	Place Place `json:"place"`
}

// TravelRoute is a visiting order through a set of places, starting at the
// requested place and ending wherever is shortest. Distances are great-circle
// distances in kilometres, rounded to the metre; Legs[i] leads from
// Stops[i] to Stops[i+1].
type TravelRoute struct {
	Stops           []RouteStop `json:"stops"`
	Legs            []RouteLeg  `json:"legs"`
	TotalDistanceKm float64     `json:"total_distance_km"`
}
