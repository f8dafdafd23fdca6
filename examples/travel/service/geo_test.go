package service

import (
	"math"
	"slices"
	"testing"
)

// line returns the distance matrix of points on a line.
func line(xs ...float64) [][]float64 {
	d := make([][]float64, len(xs))
	for i := range xs {
		d[i] = make([]float64, len(xs))
		for j := range xs {
			d[i][j] = math.Abs(xs[i] - xs[j])
		}
	}
	return d
}

func TestPlanRoute(t *testing.T) {
	tests := []struct {
		name  string
		xs    []float64
		start int
		want  []int
	}{
		{"one", []float64{5}, 0, []int{0}},
		{"two", []float64{5, 1}, 1, []int{1, 0}},
		{"sorted line from the west end", []float64{3, 0, 2, 1, 4}, 1, []int{1, 3, 2, 0, 4}},
		// Nearest neighbour goes 0 → 1 → 3 → -1.5 (7.5); the best route
		// first goes west: 0 → -1.5 → 1 → 3 (6). 2-opt alone cannot find it.
		{"nearest neighbour trap", []float64{0, 1, -1.5, 3}, 0, []int{0, 2, 1, 3}},
		{"start in the middle", []float64{3, 10, 4, 5, 6, 20}, 3, []int{3, 2, 0, 4, 1, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := line(tt.xs...)
			got := planRoute(d, tt.start)
			if !slices.Equal(got, tt.want) {
				t.Errorf("planRoute = %v (length %g), want %v (length %g)", got, pathLength(d, got), tt.want, pathLength(d, tt.want))
			}
		})
	}
}

func TestBoundingBoxContainsCircle(t *testing.T) {
	for _, c := range []Point{{37.5, 127}, {-33.9, 151.2}, {70, 20}, {0, 179.99}, {89.9, 0}} {
		for _, r := range []float64{0.5, 10, 100} {
			minLat, maxLat, minLng, maxLng, wrap := boundingBox(c, r)
			for deg := 0.0; deg < 360; deg += 7.5 {
				// The point at distance r in direction deg.
				ang, brg := r/earthRadiusKm, deg*math.Pi/180
				lat1, lng1 := c.Latitude*math.Pi/180, c.Longitude*math.Pi/180
				lat2 := math.Asin(math.Sin(lat1)*math.Cos(ang) + math.Cos(lat1)*math.Sin(ang)*math.Cos(brg))
				lng2 := lng1 + math.Atan2(math.Sin(brg)*math.Sin(ang)*math.Cos(lat1), math.Cos(ang)-math.Sin(lat1)*math.Sin(lat2))
				p := Point{lat2 * 180 / math.Pi, lng2 * 180 / math.Pi}
				if p.Latitude < minLat || p.Latitude > maxLat || (!wrap && (p.Longitude < minLng || p.Longitude > maxLng)) {
					t.Errorf("center %v radius %g: point %v at bearing %g is outside the box [%g,%g]x[%g,%g]", c, r, p, deg, minLat, maxLat, minLng, maxLng)
				}
			}
		}
	}
}
