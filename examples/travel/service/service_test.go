package service_test

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/weftlabs/weft/examples/travel/service"
)

func open(t *testing.T) *service.Service {
	t.Helper()
	s, err := service.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Coordinates of seeded places.
var (
	gyeongbokgung = service.Point{Latitude: 37.5796, Longitude: 126.9770}
	haeundaeBeach = service.Point{Latitude: 35.1587, Longitude: 129.1604}
)

func nearbyIDs(ps []service.NearbyPlace) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func placeIDs(ps []service.Place) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func TestDistanceKm(t *testing.T) {
	cityHall := service.Point{Latitude: 37.5663, Longitude: 126.9779}
	busanStation := service.Point{Latitude: 35.1151, Longitude: 129.0415}
	if d := service.DistanceKm(cityHall, busanStation); math.Abs(d-325) > 5 {
		t.Errorf("Seoul City Hall to Busan Station = %.1f km, want about 325", d)
	}
	if d := service.DistanceKm(cityHall, cityHall); d != 0 {
		t.Errorf("distance to itself = %g, want 0", d)
	}
	// A quarter of the equator.
	if d := service.DistanceKm(service.Point{}, service.Point{Longitude: 90}); math.Abs(d-10007.5) > 1 {
		t.Errorf("quarter equator = %.1f km, want about 10007.5", d)
	}
}

func TestFindReplacementPlaces(t *testing.T) {
	s := open(t)
	tests := []struct {
		name string
		req  service.ReplaceRequest
		want []string
	}{
		{
			name: "nearest attractions, replaced place excluded",
			req: service.ReplaceRequest{Latitude: gyeongbokgung.Latitude, Longitude: gyeongbokgung.Longitude,
				ReplaceCount: 2, ExcludedPlaceIDs: []string{"jn-gyeongbokgung"}, Category: service.Attraction, RadiusKm: 3},
			want: []string{"jn-bukchon", "jn-gwanghwamun-square"},
		},
		{
			name: "Korean category word",
			req: service.ReplaceRequest{Latitude: gyeongbokgung.Latitude, Longitude: gyeongbokgung.Longitude,
				ReplaceCount: 5, Category: "카페", RadiusKm: 2},
			want: []string{"jn-bluebottle-samcheong", "jn-onion-anguk"},
		},
		{
			name: "any category, several excluded",
			req: service.ReplaceRequest{Latitude: haeundaeBeach.Latitude, Longitude: haeundaeBeach.Longitude,
				ReplaceCount: 3, ExcludedPlaceIDs: []string{"hd-haeundae-beach", "hd-paradise-hotel", "unknown-id"}, RadiusKm: 5},
			want: []string{"hd-geumsu-bokguk", "hd-haeundae-market", "hd-amso-galbi"},
		},
		{
			name: "fewer places than asked",
			req: service.ReplaceRequest{Latitude: haeundaeBeach.Latitude, Longitude: haeundaeBeach.Longitude,
				ReplaceCount: 10, Category: service.Accommodation, RadiusKm: 2},
			want: []string{"hd-paradise-hotel", "hd-westin-josun"},
		},
		{
			name: "nothing in the ocean",
			req:  service.ReplaceRequest{Latitude: 0, Longitude: 0, ReplaceCount: 3, RadiusKm: 100},
			want: []string{},
		},
		{
			name: "everything excluded",
			req: service.ReplaceRequest{Latitude: haeundaeBeach.Latitude, Longitude: haeundaeBeach.Longitude,
				ReplaceCount: 3, Category: service.Shopping, ExcludedPlaceIDs: []string{"hd-shinsegae-centum"}, RadiusKm: 10},
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FindReplacementPlaces(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, nearbyIDs(got)); diff != "" {
				t.Errorf("places (-want +got):\n%s", diff)
			}
			for i, p := range got {
				if p.DistanceKm > tt.req.RadiusKm || (i > 0 && p.DistanceKm < got[i-1].DistanceKm) {
					t.Errorf("place %s at %g km: outside the radius or out of distance order", p.ID, p.DistanceKm)
				}
				if slices.Contains(tt.req.ExcludedPlaceIDs, p.ID) {
					t.Errorf("excluded place %s returned", p.ID)
				}
			}
		})
	}
}

// TestFindReplacementPlacesRadiusBoundary: a place exactly on the circle is
// in; a hair inside the circle's edge, it is out.
func TestFindReplacementPlacesRadiusBoundary(t *testing.T) {
	s := open(t)
	bukchon, err := s.GetPlaces(t.Context(), []string{"jn-bukchon"})
	if err != nil {
		t.Fatal(err)
	}
	d := service.DistanceKm(gyeongbokgung, service.Point{Latitude: bukchon[0].Latitude, Longitude: bukchon[0].Longitude})
	for _, tt := range []struct {
		radius float64
		want   bool
	}{{d, true}, {d * (1 + 1e-9), true}, {d * (1 - 1e-9), false}} {
		got, err := s.FindReplacementPlaces(t.Context(), service.ReplaceRequest{
			Latitude: gyeongbokgung.Latitude, Longitude: gyeongbokgung.Longitude,
			ReplaceCount: 50, RadiusKm: tt.radius, Category: service.Attraction})
		if err != nil {
			t.Fatal(err)
		}
		if in := slices.Contains(nearbyIDs(got), "jn-bukchon"); in != tt.want {
			t.Errorf("radius %.12f km (Bukchon at %.12f km): included = %v, want %v", tt.radius, d, in, tt.want)
		}
	}
}

func TestBadInput(t *testing.T) {
	s := open(t)
	ok := service.ReplaceRequest{Latitude: 37.57, Longitude: 126.98, ReplaceCount: 3, RadiusKm: 2}
	with := func(f func(*service.ReplaceRequest)) service.ReplaceRequest {
		r := ok
		f(&r)
		return r
	}
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"latitude above 90", func() error {
			_, err := s.FindReplacementPlaces(t.Context(), with(func(r *service.ReplaceRequest) { r.Latitude = 91 }))
			return err
		}, "latitude"},
		{"latitude NaN", func() error {
			_, err := s.FindReplacementPlaces(t.Context(), with(func(r *service.ReplaceRequest) { r.Latitude = math.NaN() }))
			return err
		}, "latitude"},
		{"longitude below -180", func() error {
			_, err := s.FindReplacementPlaces(t.Context(), with(func(r *service.ReplaceRequest) { r.Longitude = -180.5 }))
			return err
		}, "longitude"},
		{"zero radius", func() error {
			_, err := s.FindReplacementPlaces(t.Context(), with(func(r *service.ReplaceRequest) { r.RadiusKm = 0 }))
			return err
		}, "radius_km"},
		{"negative radius", func() error {
			_, err := s.RecommendNearbyPlaces(t.Context(), 37.57, 126.98, -1, "", 5)
			return err
		}, "radius_km"},
		{"radius too large", func() error {
			_, err := s.RecommendNearbyPlaces(t.Context(), 37.57, 126.98, 1000, "", 5)
			return err
		}, "radius_km"},
		{"zero replace count", func() error {
			_, err := s.FindReplacementPlaces(t.Context(), with(func(r *service.ReplaceRequest) { r.ReplaceCount = 0 }))
			return err
		}, "replace_count"},
		{"unknown category", func() error {
			_, err := s.FindReplacementPlaces(t.Context(), with(func(r *service.ReplaceRequest) { r.Category = "술집" }))
			return err
		}, "category"},
		{"negative limit", func() error {
			_, err := s.RecommendPopularPlacesInRegion(t.Context(), "제주", "", -1)
			return err
		}, "limit"},
		{"empty region", func() error {
			_, err := s.RecommendPopularPlacesInRegion(t.Context(), " ", "", 5)
			return err
		}, "region"},
		{"no route places", func() error {
			_, err := s.CreateTravelRoute(t.Context(), nil, "")
			return err
		}, "place_ids"},
		{"repeated route place", func() error {
			_, err := s.CreateTravelRoute(t.Context(), []string{"jj-seongsan", "jj-osulloc", "jj-seongsan"}, "")
			return err
		}, "place_ids"},
		{"start not in route", func() error {
			_, err := s.CreateTravelRoute(t.Context(), []string{"jj-seongsan", "jj-osulloc"}, "jj-hyeopjae")
			return err
		}, "start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ie *service.InputError
			if !errors.As(err, &ie) || !errors.Is(err, service.ErrInvalidInput) {
				t.Fatalf("error = %v; want *InputError", err)
			}
			if ie.Field != tt.field || ie.Expected == "" {
				t.Errorf("error names field %q expecting %q; want field %q and what is expected", ie.Field, ie.Expected, tt.field)
			}
		})
	}
}

func TestRecommendNearbyPlaces(t *testing.T) {
	s := open(t)
	tests := []struct {
		name     string
		radius   float64
		category service.Category
		limit    int
		want     []string
	}{
		{"best rated restaurants first", 1, service.Restaurant, 0, []string{"hd-amso-galbi", "hd-geumsu-bokguk", "hd-haeundae-market"}},
		{"limit", 1, "맛집", 2, []string{"hd-amso-galbi", "hd-geumsu-bokguk"}},
		{"nothing of the category", 0.1, service.Cafe, 5, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.RecommendNearbyPlaces(t.Context(), haeundaeBeach.Latitude, haeundaeBeach.Longitude, tt.radius, tt.category, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, nearbyIDs(got)); diff != "" {
				t.Errorf("places (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecommendPopularPlacesInRegion(t *testing.T) {
	s := open(t)
	tests := []struct {
		region   string
		category service.Category
		limit    int
		want     []string
	}{
		{"서울 종로", service.Attraction, 3, []string{"jn-gyeongbokgung", "jn-bukchon", "jn-changdeokgung"}},
		{"종로", "관광지", 3, []string{"jn-gyeongbokgung", "jn-bukchon", "jn-changdeokgung"}},
		{"Seoul Mapo", service.Restaurant, 0, []string{"mp-mangwon-market", "mp-tuktuk", "mp-eulmildae"}},
		{"홍대", service.Cafe, 1, []string{"mp-anthracite-hapjeong"}},
		{"서울", "", 3, []string{"jn-gyeongbokgung", "jn-bukchon", "jn-gwangjang-market"}}, // both Seoul regions
		{"부산 해운대구", "", 1, []string{"hd-haeundae-beach"}},
		{"seoul mapo-gu", service.Shopping, 0, []string{"mp-ak-hongdae"}},
		{"seoul", service.Shopping, 0, []string{"jn-ssamziegil", "jn-kyobo-gwanghwamun", "mp-ak-hongdae"}},
		{"jeju", service.Cafe, 0, []string{"jj-delmundo", "jj-monsant-aewol", "jj-anthracite-hallim"}},
		{"제주도", service.Shopping, 5, []string{"jj-shilla-dutyfree"}},
		{"마포", service.Accommodation, 5, []string{"mp-ryse-hotel"}},
	}
	for _, tt := range tests {
		t.Run(tt.region+"/"+string(tt.category), func(t *testing.T) {
			got, err := s.RecommendPopularPlacesInRegion(t.Context(), tt.region, tt.category, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, placeIDs(got)); diff != "" {
				t.Errorf("places (-want +got):\n%s", diff)
			}
		})
	}

	_, err := s.RecommendPopularPlacesInRegion(t.Context(), "도쿄", "", 5)
	var nf *service.NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, service.ErrNotFound) || len(nf.Known) != 4 {
		t.Errorf("unknown region: error = %v; want *NotFoundError listing the 4 regions", err)
	}
}

func TestRecommendPlacesByAllUsers(t *testing.T) {
	s := open(t)
	tests := []struct {
		name     string
		region   string
		category service.Category
		limit    int
		want     []string
	}{
		// Four places are in three users' trips; equal counts go to the
		// better rated, then by id.
		{"everywhere", "", "", 5, []string{"jj-seongsan", "jn-gyeongbokgung", "hd-haeundae-beach", "jj-dongmun-market", "hd-blueline-mipo"}},
		{"Busan", "부산", "", 2, []string{"hd-haeundae-beach", "hd-blueline-mipo"}},
		{"Jeju cafes", "제주", service.Cafe, 0, []string{"jj-anthracite-hallim", "jj-delmundo", "jj-monsant-aewol"}},
		{"nobody saved one", "마포", service.Accommodation, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.RecommendPlacesByAllUsers(t.Context(), tt.region, tt.category, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			gotIDs := []string{}
			for _, p := range got {
				gotIDs = append(gotIDs, p.ID)
			}
			if diff := cmp.Diff(tt.want, gotIDs); diff != "" {
				t.Errorf("places (-want +got):\n%s", diff)
			}
		})
	}
	got, err := s.RecommendPlacesByAllUsers(t.Context(), "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].UserCount != 3 || got[0].SaveCount != 3 {
		t.Errorf("top place saved by %d users in %d trips; want 3 and 3", got[0].UserCount, got[0].SaveCount)
	}
}

func TestCreateTravelRoute(t *testing.T) {
	s := open(t)
	t.Run("one place", func(t *testing.T) {
		r, err := s.CreateTravelRoute(t.Context(), []string{"jj-seongsan"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Stops) != 1 || len(r.Legs) != 0 || r.TotalDistanceKm != 0 || r.Stops[0].Order != 1 {
			t.Errorf("route = %+v; want one stop, no legs, 0 km", r)
		}
	})
	t.Run("two places", func(t *testing.T) {
		r, err := s.CreateTravelRoute(t.Context(), []string{"jj-seongsan", "jj-osulloc"}, "jj-osulloc")
		if err != nil {
			t.Fatal(err)
		}
		want := []service.RouteLeg{{FromID: "jj-osulloc", ToID: "jj-seongsan", DistanceKm: r.TotalDistanceKm}}
		if diff := cmp.Diff(want, r.Legs); diff != "" {
			t.Errorf("legs (-want +got):\n%s", diff)
		}
		if r.TotalDistanceKm < 60 || r.TotalDistanceKm > 70 {
			t.Errorf("Osulloc to Seongsan = %g km; want about 65 (across Jeju)", r.TotalDistanceKm)
		}
	})
	t.Run("Jeju west to east", func(t *testing.T) {
		// Starting in the far west, the shortest way visits the island
		// westernmost first and ends at Seongsan in the east.
		in := []string{"jj-seongsan", "jj-dongmun-market", "jj-hyeopjae", "jj-manjanggul", "jj-monsant-aewol", "jj-anthracite-hallim"}
		r, err := s.CreateTravelRoute(t.Context(), in, "jj-hyeopjae")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"jj-hyeopjae", "jj-anthracite-hallim", "jj-monsant-aewol", "jj-dongmun-market", "jj-manjanggul", "jj-seongsan"}
		var got []string
		for _, st := range r.Stops {
			got = append(got, st.Place.ID)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stops (-want +got):\n%s", diff)
		}
	})
	// Whatever the input order, the route is as short as the best of all
	// orders from the same start (checked by brute force), and its legs add
	// up to its total.
	sets := [][]string{
		{"jn-naksan-park", "jn-tosokchon", "jn-gwangjang-market", "jn-bukchon", "jn-gyeongbokgung", "jn-ssamziegil", "jn-changdeokgung"},
		{"hd-shinsegae-centum", "hd-cheongsapo", "hd-dongbaekseom", "hd-haeundae-beach", "hd-bibibidang", "hd-the-bay-101", "hd-amso-galbi"},
		{"mp-haneul-park", "mp-ryse-hotel", "mp-eulmildae", "mp-mangwon-hangang", "mp-coffee-libre", "mp-anthracite-hapjeong"},
		{"jj-shilla-jeju", "jj-cheonjiyeon", "jj-seongsan", "jj-hallasan-seongpanak", "jj-osulloc", "jj-delmundo", "jj-hyeopjae"},
		{"jn-gyeongbokgung", "hd-haeundae-beach", "jj-seongsan", "mp-hongdae-street", "jj-hyeopjae"},
	}
	for _, set := range sets {
		t.Run(set[0], func(t *testing.T) {
			places, err := s.GetPlaces(t.Context(), set)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.CreateTravelRoute(t.Context(), set, set[0])
			if err != nil {
				t.Fatal(err)
			}
			best := bruteForce(places)
			if r.TotalDistanceKm > best+0.001 {
				t.Errorf("route is %.3f km; the best order is %.3f km", r.TotalDistanceKm, best)
			}
			var sum float64
			for i, leg := range r.Legs {
				if leg.FromID != r.Stops[i].Place.ID || leg.ToID != r.Stops[i+1].Place.ID {
					t.Errorf("leg %d goes %s → %s; want %s → %s", i, leg.FromID, leg.ToID, r.Stops[i].Place.ID, r.Stops[i+1].Place.ID)
				}
				sum += leg.DistanceKm
			}
			if math.Abs(sum-r.TotalDistanceKm) > 0.001*float64(len(r.Legs)) {
				t.Errorf("legs add up to %.3f km; total says %.3f", sum, r.TotalDistanceKm)
			}
			if r.Stops[0].Place.ID != set[0] || len(r.Stops) != len(set) {
				t.Errorf("route starts at %s with %d stops; want %s with %d", r.Stops[0].Place.ID, len(r.Stops), set[0], len(set))
			}
		})
	}
	t.Run("unknown ids", func(t *testing.T) {
		_, err := s.CreateTravelRoute(t.Context(), []string{"jj-seongsan", "nowhere-1", "jj-osulloc", "nowhere-2"}, "")
		var nf *service.NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, service.ErrNotFound) {
			t.Fatalf("error = %v; want *NotFoundError", err)
		}
		if diff := cmp.Diff([]string{"nowhere-1", "nowhere-2"}, nf.Missing); diff != "" {
			t.Errorf("missing (-want +got):\n%s", diff)
		}
	})
}

// bruteForce returns the length of the shortest open path through places
// starting at places[0].
func bruteForce(places []service.Place) float64 {
	pt := func(p service.Place) service.Point {
		return service.Point{Latitude: p.Latitude, Longitude: p.Longitude}
	}
	rest := places[1:]
	idx := make([]int, len(rest))
	for i := range idx {
		idx[i] = i
	}
	best := math.Inf(1)
	var permute func(k int)
	permute = func(k int) {
		if k == len(idx) {
			l, prev := 0.0, places[0]
			for _, i := range idx {
				l += service.DistanceKm(pt(prev), pt(rest[i]))
				prev = rest[i]
			}
			best = min(best, l)
			return
		}
		for i := k; i < len(idx); i++ {
			idx[k], idx[i] = idx[i], idx[k]
			permute(k + 1)
			idx[k], idx[i] = idx[i], idx[k]
		}
	}
	permute(0)
	return best
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "travel.db")
	for range 2 {
		s, err := service.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		regions, err := s.Regions(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		top, err := s.RecommendPlacesByAllUsers(t.Context(), "", "", 1)
		if err != nil {
			t.Fatal(err)
		}
		// A second seeding would have doubled the trips.
		if len(regions) != 4 || top[0].SaveCount != 3 {
			t.Errorf("regions = %d, top saves = %d; want 4 and 3", len(regions), top[0].SaveCount)
		}
		s.Close()
	}
}

func TestParseCategory(t *testing.T) {
	for in, want := range map[string]service.Category{
		"": "", "cafe": service.Cafe, " CAFE ": service.Cafe, "카페": service.Cafe, "맛집": service.Restaurant,
		"명소": service.Attraction, "호텔": service.Accommodation, "쇼핑": service.Shopping,
	} {
		if got, err := service.ParseCategory(in); err != nil || got != want {
			t.Errorf("ParseCategory(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := service.ParseCategory("nightclub"); !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("ParseCategory(nightclub) error = %v; want ErrInvalidInput", err)
	}
}
