// Package service is the business logic of MateTrip, the travel planner of
// design document 000: places with coordinates, categories, ratings and
// popularity; replacement places within a radius; nearby, popular and
// most-saved recommendations; and visiting orders for a set of places.
//
// The package knows nothing of graphs, models or tools (document 000's first
// rule): each operation queries SQLite, applies the domain rules and returns
// plain DTOs, so the same calls serve a REST handler, a CLI or a tool
// adapter. Open creates the schema and seeds the embedded sample data
// (seed.json: places in Seoul Jongno and Mapo, Busan Haeundae and Jeju, and
// users' trips) once; opening the same file again keeps what is stored.
package service

import (
	"cmp"
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/weftlabs/weft/internal/sqlitefile"
)

//go:embed seed.json
var seedJSON []byte

// Limits on requests.
const (
	// DefaultLimit is the number of places returned when a limit is 0.
	DefaultLimit = 10
	// MaxLimit bounds limits and replace counts.
	MaxLimit = 50
	// MaxRadiusKm bounds search radii.
	MaxRadiusKm = 100
	// MaxRoutePlaces bounds the number of places in a route.
	MaxRoutePlaces = 30
)

// Service is MateTrip's business logic over one SQLite database. It is safe
// for concurrent use.
type Service struct {
	db *sql.DB
}

// Open opens the SQLite database at path (":memory:" for a private in-memory
// database), creates the schema and seeds the sample data if it is not
// seeded yet.
func Open(ctx context.Context, path string) (*Service, error) {
	if strings.TrimSpace(path) == "" {
		return nil, &InputError{Field: "path", Value: path, Expected: `a file path or ":memory:"`}
	}
	// One connection for ":memory:", which is a database per connection.
	db, err := sqlitefile.Open(ctx, sqlitefile.ServiceDSN(path), 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("travel: open %s: %w", path, err)
	}
	s := &Service{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Service) Close() error { return s.db.Close() }

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS regions (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, name_en TEXT NOT NULL, aliases TEXT NOT NULL, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS places (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, name_en TEXT NOT NULL, category TEXT NOT NULL,
	region TEXT NOT NULL REFERENCES regions(id), address TEXT NOT NULL,
	lat REAL NOT NULL CHECK (lat BETWEEN -90 AND 90), lng REAL NOT NULL CHECK (lng BETWEEN -180 AND 180),
	rating REAL NOT NULL, review_count INTEGER NOT NULL, popularity INTEGER NOT NULL, description TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS places_lat_lng ON places(lat, lng);
CREATE INDEX IF NOT EXISTS places_region ON places(region, category);
CREATE TABLE IF NOT EXISTS trips (
	id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trip_places (
	trip_id TEXT NOT NULL REFERENCES trips(id), place_id TEXT NOT NULL REFERENCES places(id),
	position INTEGER NOT NULL, PRIMARY KEY (trip_id, place_id));
`

type seedData struct {
	Version int `json:"version"`
	Regions []struct {
		Region
		Aliases []string `json:"aliases"`
	} `json:"regions"`
	Places []struct {
		Place
		Lat float64 `json:"lat"`
		Lng float64 `json:"lng"`
	} `json:"places"`
	Trips []struct {
		ID     string   `json:"id"`
		UserID string   `json:"user_id"`
		Title  string   `json:"title"`
		Places []string `json:"places"`
	} `json:"trips"`
}

func (s *Service) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("travel: migrate: %w", err)
	}
	var seed seedData
	if err := json.Unmarshal(seedJSON, &seed); err != nil {
		return fmt.Errorf("travel: embedded seed data: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("travel: seed: %w", err)
	}
	defer tx.Rollback()
	var seeded string
	switch err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'seed_version'`).Scan(&seeded); {
	case err == nil:
		return nil // seeded before; never overwrite what users changed
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("travel: seed: %w", err)
	}
	exec := func(q string, args ...any) {
		if err == nil {
			_, err = tx.ExecContext(ctx, q, args...)
		}
	}
	for i, r := range seed.Regions {
		aliases, _ := json.Marshal(r.Aliases)
		exec(`INSERT INTO regions VALUES (?, ?, ?, ?, ?)`, r.ID, r.Name, r.NameEn, string(aliases), i)
	}
	for _, p := range seed.Places {
		exec(`INSERT INTO places VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, p.ID, p.Name, p.NameEn, string(p.Category),
			p.Region, p.Address, p.Lat, p.Lng, p.Rating, p.ReviewCount, p.Popularity, p.Description)
	}
	for _, t := range seed.Trips {
		exec(`INSERT INTO trips VALUES (?, ?, ?)`, t.ID, t.UserID, t.Title)
		for i, id := range t.Places {
			exec(`INSERT INTO trip_places VALUES (?, ?, ?)`, t.ID, id, i+1)
		}
	}
	exec(`INSERT INTO meta (key, value) VALUES ('seed_version', ?)`, fmt.Sprint(seed.Version))
	if err != nil {
		return fmt.Errorf("travel: seed: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("travel: seed: %w", err)
	}
	return nil
}

const placeColumns = `p.id, p.name, p.name_en, p.category, p.region, p.address, p.lat, p.lng,
	p.rating, p.review_count, p.popularity, p.description`

func scanPlace(rows *sql.Rows, extra ...any) (Place, error) {
	var p Place
	err := rows.Scan(append([]any{&p.ID, &p.Name, &p.NameEn, &p.Category, &p.Region, &p.Address,
		&p.Latitude, &p.Longitude, &p.Rating, &p.ReviewCount, &p.Popularity, &p.Description}, extra...)...)
	return p, err
}

func (s *Service) queryPlaces(ctx context.Context, where string, args ...any) ([]Place, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+placeColumns+` FROM places p WHERE `+where+` ORDER BY p.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Place
	for rows.Next() {
		p, err := scanPlace(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Input checks, shared by the operations.

func checkPoint(lat, lng float64) error {
	if math.IsNaN(lat) || lat < -90 || lat > 90 {
		return &InputError{Field: "latitude", Value: lat, Expected: "a number of degrees in [-90, 90]"}
	}
	if math.IsNaN(lng) || lng < -180 || lng > 180 {
		return &InputError{Field: "longitude", Value: lng, Expected: "a number of degrees in [-180, 180]"}
	}
	return nil
}

func checkRadius(r float64) error {
	if math.IsNaN(r) || r <= 0 || r > MaxRadiusKm {
		return &InputError{Field: "radius_km", Value: r, Expected: fmt.Sprintf("a distance in kilometres greater than 0 and at most %d", MaxRadiusKm)}
	}
	return nil
}

// checkLimit returns the limit to use: DefaultLimit for 0.
func checkLimit(field string, n int, zeroOK bool) (int, error) {
	switch {
	case n == 0 && zeroOK:
		return DefaultLimit, nil
	case n < 1 || n > MaxLimit:
		exp := fmt.Sprintf("a whole number from 1 to %d", MaxLimit)
		if zeroOK {
			exp += fmt.Sprintf(", or 0 for %d", DefaultLimit)
		}
		return 0, &InputError{Field: field, Value: n, Expected: exp}
	}
	return n, nil
}

// within returns the places within radiusKm of c (inclusive), of category
// cat unless it is empty, except the excluded ids, nearest first and, at
// equal distance, best rated first.
func (s *Service) within(ctx context.Context, c Point, radiusKm float64, cat Category, excluded []string) ([]NearbyPlace, error) {
	minLat, maxLat, minLng, maxLng, wrap := boundingBox(c, radiusKm)
	where := `p.lat BETWEEN ? AND ?`
	args := []any{minLat, maxLat}
	if !wrap {
		where += ` AND p.lng BETWEEN ? AND ?`
		args = append(args, minLng, maxLng)
	}
	if cat != "" {
		where += ` AND p.category = ?`
		args = append(args, string(cat))
	}
	places, err := s.queryPlaces(ctx, where, args...)
	if err != nil {
		return nil, err
	}
	var out []NearbyPlace
	for _, p := range places {
		if slices.Contains(excluded, p.ID) {
			continue
		}
		if d := DistanceKm(c, Point{p.Latitude, p.Longitude}); d <= radiusKm {
			out = append(out, NearbyPlace{Place: p, DistanceKm: d})
		}
	}
	slices.SortFunc(out, func(a, b NearbyPlace) int {
		return cmp.Or(cmp.Compare(a.DistanceKm, b.DistanceKm), cmp.Compare(b.Rating, a.Rating), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// FindReplacementPlaces returns up to req.ReplaceCount places within
// req.RadiusKm of the given point (a place exactly on the circle counts),
// of req.Category when it is set, skipping req.ExcludedPlaceIDs; nearest
// first and, at equal distance, best rated first. Fewer places, or none, is
// not an error. Bad coordinates, a radius outside (0, MaxRadiusKm], a count
// outside [1, MaxLimit] or an unknown category give an *InputError.
func (s *Service) FindReplacementPlaces(ctx context.Context, req ReplaceRequest) ([]NearbyPlace, error) {
	if err := checkPoint(req.Latitude, req.Longitude); err != nil {
		return nil, err
	}
	if err := checkRadius(req.RadiusKm); err != nil {
		return nil, err
	}
	n, err := checkLimit("replace_count", req.ReplaceCount, false)
	if err != nil {
		return nil, err
	}
	cat, err := ParseCategory(string(req.Category))
	if err != nil {
		return nil, err
	}
	places, err := s.within(ctx, Point{req.Latitude, req.Longitude}, req.RadiusKm, cat, req.ExcludedPlaceIDs)
	if err != nil {
		return nil, fmt.Errorf("travel: find replacement places: %w", err)
	}
	return rounded(places[:min(n, len(places))]), nil
}

// RecommendNearbyPlaces returns up to limit places (0 means DefaultLimit)
// within radiusKm of (lat, lng), of category unless it is empty, best first:
// highest rating, then most popular, then nearest.
func (s *Service) RecommendNearbyPlaces(ctx context.Context, lat, lng, radiusKm float64, category Category, limit int) ([]NearbyPlace, error) {
	if err := checkPoint(lat, lng); err != nil {
		return nil, err
	}
	if err := checkRadius(radiusKm); err != nil {
		return nil, err
	}
	n, err := checkLimit("limit", limit, true)
	if err != nil {
		return nil, err
	}
	cat, err := ParseCategory(string(category))
	if err != nil {
		return nil, err
	}
	places, err := s.within(ctx, Point{lat, lng}, radiusKm, cat, nil)
	if err != nil {
		return nil, fmt.Errorf("travel: recommend nearby places: %w", err)
	}
	slices.SortStableFunc(places, func(a, b NearbyPlace) int {
		return cmp.Or(cmp.Compare(b.Rating, a.Rating), cmp.Compare(b.Popularity, a.Popularity))
	})
	return rounded(places[:min(n, len(places))]), nil
}

func rounded(ps []NearbyPlace) []NearbyPlace {
	out := make([]NearbyPlace, len(ps))
	for i, p := range ps {
		p.DistanceKm = roundKm(p.DistanceKm)
		out[i] = p
	}
	return out
}

// Regions lists the regions, in a fixed order.
func (s *Service) Regions(ctx context.Context) ([]Region, error) {
	rs, err := s.regions(ctx)
	if err != nil {
		return nil, fmt.Errorf("travel: regions: %w", err)
	}
	out := make([]Region, len(rs))
	for i, r := range rs {
		out[i] = r.Region
	}
	return out, nil
}

type regionRow struct {
	Region
	aliases []string
}

func (s *Service) regions(ctx context.Context) ([]regionRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, name_en, aliases FROM regions ORDER BY position`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []regionRow
	for rows.Next() {
		var (
			r       regionRow
			aliases string
		)
		if err := rows.Scan(&r.ID, &r.Name, &r.NameEn, &aliases); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(aliases), &r.aliases); err != nil {
			return nil, fmt.Errorf("region %s aliases: %w", r.ID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// compact lower-cases s and drops everything but letters and digits, so
// "서울 종로" and "서울종로" compare equal.
func compact(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ResolveRegion returns the ids of the regions a name refers to: a region's
// id, Korean or English name, or a neighbourhood alias ("홍대", "해운대",
// "jeju"). A name may cover several regions ("서울", "seoul"). An empty name
// gives an *InputError and a name matching nothing a *NotFoundError listing
// the regions.
func (s *Service) ResolveRegion(ctx context.Context, name string) ([]string, error) {
	q := compact(name)
	if q == "" {
		return nil, &InputError{Field: "region", Value: name, Expected: "a region such as \"서울 종로\", \"부산 해운대\" or \"Jeju\""}
	}
	rs, err := s.regions(ctx)
	if err != nil {
		return nil, fmt.Errorf("travel: regions: %w", err)
	}
	// A region's strength is how much of the name it explains: naming it
	// outright beats all; otherwise the query's length when it is part of a
	// region name ("종로" of "서울 종로"), plus the lengths of the region's
	// names it mentions ("부산 해운대구" holds "해운대"). The strongest
	// regions win, so "Seoul Mapo" is Mapo alone and "서울" is both.
	const exact = 1 << 20
	var (
		ids, known []string
		best       int
	)
	for _, r := range rs {
		known = append(known, r.Name)
		strength, partOf := 0, 0
		for _, f := range append([]string{r.ID, r.Name, r.NameEn}, r.aliases...) {
			cf := compact(f)
			switch {
			case cf == q:
				strength = exact
			case strings.Contains(cf, q):
				partOf = utf8.RuneCountInString(q)
			case utf8.RuneCountInString(cf) >= 2 && strings.Contains(q, cf):
				strength += utf8.RuneCountInString(cf)
			}
		}
		strength = min(exact, strength+partOf)
		switch {
		case strength == 0 || strength < best:
		case strength > best:
			ids, best = []string{r.ID}, strength
		default:
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil, &NotFoundError{Kind: "region", Missing: []string{name}, Known: known}
	}
	return ids, nil
}

// RecommendPopularPlacesInRegion returns up to limit places (0 means
// DefaultLimit) of the region (see ResolveRegion), of category unless it is
// empty, most popular first, then best rated.
func (s *Service) RecommendPopularPlacesInRegion(ctx context.Context, region string, category Category, limit int) ([]Place, error) {
	ids, err := s.ResolveRegion(ctx, region)
	if err != nil {
		return nil, err
	}
	n, err := checkLimit("limit", limit, true)
	if err != nil {
		return nil, err
	}
	cat, err := ParseCategory(string(category))
	if err != nil {
		return nil, err
	}
	where, args := inList("p.region", ids)
	if cat != "" {
		where += ` AND p.category = ?`
		args = append(args, string(cat))
	}
	places, err := s.queryPlaces(ctx, where, args...)
	if err != nil {
		return nil, fmt.Errorf("travel: recommend popular places: %w", err)
	}
	slices.SortStableFunc(places, func(a, b Place) int {
		return cmp.Or(cmp.Compare(b.Popularity, a.Popularity), cmp.Compare(b.Rating, a.Rating))
	})
	if places == nil {
		places = []Place{}
	}
	return places[:min(n, len(places))], nil
}

func inList(col string, vals []string) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return col + ` IN (?` + strings.Repeat(`, ?`, len(vals)-1) + `)`, args
}

// RecommendPlacesByAllUsers returns the places saved most across all users'
// trips (the shared workspace), up to limit (0 means DefaultLimit): the
// places most users saved first, then the most trips, then the best rated.
// region (see ResolveRegion) and category narrow the list when not empty.
// Places nobody saved are not listed.
func (s *Service) RecommendPlacesByAllUsers(ctx context.Context, region string, category Category, limit int) ([]SavedPlace, error) {
	where, args := "1 = 1", []any{}
	if strings.TrimSpace(region) != "" {
		ids, err := s.ResolveRegion(ctx, region)
		if err != nil {
			return nil, err
		}
		where, args = inList("p.region", ids)
	}
	n, err := checkLimit("limit", limit, true)
	if err != nil {
		return nil, err
	}
	cat, err := ParseCategory(string(category))
	if err != nil {
		return nil, err
	}
	if cat != "" {
		where += ` AND p.category = ?`
		args = append(args, string(cat))
	}
	args = append(args, n)
	rows, err := s.db.QueryContext(ctx, `SELECT `+placeColumns+`, count(*) AS saves, count(DISTINCT t.user_id) AS users
		FROM places p JOIN trip_places tp ON tp.place_id = p.id JOIN trips t ON t.id = tp.trip_id
		WHERE `+where+` GROUP BY p.id
		ORDER BY users DESC, saves DESC, p.rating DESC, p.id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("travel: recommend places by all users: %w", err)
	}
	defer rows.Close()
	out := []SavedPlace{}
	for rows.Next() {
		var sp SavedPlace
		if sp.Place, err = scanPlace(rows, &sp.SaveCount, &sp.UserCount); err != nil {
			return nil, fmt.Errorf("travel: recommend places by all users: %w", err)
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("travel: recommend places by all users: %w", err)
	}
	return out, nil
}

// GetPlaces returns the places with the given ids, in the order given. Any
// unknown id gives a *NotFoundError listing every unknown id.
func (s *Service) GetPlaces(ctx context.Context, ids []string) ([]Place, error) {
	if len(ids) == 0 {
		return []Place{}, nil
	}
	where, args := inList("p.id", ids)
	found, err := s.queryPlaces(ctx, where, args...)
	if err != nil {
		return nil, fmt.Errorf("travel: get places: %w", err)
	}
	byID := make(map[string]Place, len(found))
	for _, p := range found {
		byID[p.ID] = p
	}
	out := make([]Place, 0, len(ids))
	var missing []string
	for _, id := range ids {
		p, ok := byID[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		out = append(out, p)
	}
	if len(missing) > 0 {
		return nil, &NotFoundError{Kind: "place", Missing: missing}
	}
	return out, nil
}

// CreateTravelRoute orders the places placeIDs into a short visiting route
// that starts at the place start (placeIDs[0] when start is empty) and ends
// wherever is shortest: nearest neighbour, then 2-opt and or-opt
// improvement. It reports each leg's distance and the total. Errors: an
// *InputError for no ids, more than MaxRoutePlaces, a repeated id or a
// start not among the ids; a *NotFoundError listing unknown ids.
func (s *Service) CreateTravelRoute(ctx context.Context, placeIDs []string, start string) (*TravelRoute, error) {
	if len(placeIDs) == 0 || len(placeIDs) > MaxRoutePlaces {
		return nil, &InputError{Field: "place_ids", Value: placeIDs, Expected: fmt.Sprintf("from 1 to %d place ids", MaxRoutePlaces)}
	}
	seen := make(map[string]bool, len(placeIDs))
	for _, id := range placeIDs {
		if seen[id] {
			return nil, &InputError{Field: "place_ids", Value: placeIDs, Expected: fmt.Sprintf("each place once, but %q appears twice", id)}
		}
		seen[id] = true
	}
	if start == "" {
		start = placeIDs[0]
	}
	startIdx := slices.Index(placeIDs, start)
	if startIdx < 0 {
		return nil, &InputError{Field: "start", Value: start, Expected: fmt.Sprintf("one of the route's place ids %q", placeIDs)}
	}
	places, err := s.GetPlaces(ctx, placeIDs)
	if err != nil {
		return nil, err
	}
	n := len(places)
	d := make([][]float64, n)
	for i := range n {
		d[i] = make([]float64, n)
		for j := range n {
			d[i][j] = DistanceKm(Point{places[i].Latitude, places[i].Longitude}, Point{places[j].Latitude, places[j].Longitude})
		}
	}
	order := planRoute(d, startIdx)
	r := &TravelRoute{Stops: make([]RouteStop, n), Legs: make([]RouteLeg, 0, n-1)}
	var total float64
	for k, i := range order {
		r.Stops[k] = RouteStop{Order: k + 1, Place: places[i]}
		if k > 0 {
			prev := order[k-1]
			total += d[prev][i]
			r.Legs = append(r.Legs, RouteLeg{FromID: places[prev].ID, ToID: places[i].ID, DistanceKm: roundKm(d[prev][i])})
		}
	}
	r.TotalDistanceKm = roundKm(total)
	return r, nil
}
