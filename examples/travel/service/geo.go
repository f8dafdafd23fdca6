package service

import (
	"math"
	"slices"
)

// earthRadiusKm is the mean radius of the Earth (IUGG).
const earthRadiusKm = 6371.0088

// DistanceKm returns the great-circle distance between a and b in
// kilometres, by the haversine formula.
func DistanceKm(a, b Point) float64 {
	lat1, lat2 := a.Latitude*math.Pi/180, b.Latitude*math.Pi/180
	dLat := lat2 - lat1
	dLng := (b.Longitude - a.Longitude) * math.Pi / 180
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1)*math.Cos(lat2)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * earthRadiusKm * math.Asin(math.Sqrt(min(1, h)))
}

// boundingBox returns latitude and longitude ranges that contain every point
// within radiusKm of c, for an index-friendly first filter in SQL. wrap is
// true when no longitude bound applies (near a pole or across the
// antimeridian).
func boundingBox(c Point, radiusKm float64) (minLat, maxLat, minLng, maxLng float64, wrap bool) {
	ang := radiusKm / earthRadiusKm // angular radius in radians
	dLat := ang * 180 / math.Pi
	minLat, maxLat = c.Latitude-dLat, c.Latitude+dLat
	cosLat := math.Cos(c.Latitude * math.Pi / 180)
	if s := math.Sin(ang); ang >= math.Pi/2 || s >= cosLat || maxLat >= 90 || minLat <= -90 {
		return minLat, maxLat, -180, 180, true
	}
	dLng := math.Asin(math.Sin(ang)/cosLat) * 180 / math.Pi
	minLng, maxLng = c.Longitude-dLng, c.Longitude+dLng
	if minLng < -180 || maxLng > 180 {
		return minLat, maxLat, -180, 180, true
	}
	// A small margin keeps rounding from dropping a point on the circle;
	// the exact test is DistanceKm.
	const eps = 1e-9
	return minLat - eps, maxLat + eps, minLng - eps, maxLng + eps, false
}

// roundKm rounds a distance to the metre.
func roundKm(d float64) float64 { return math.Round(d*1000) / 1000 }

// planRoute returns a short open path through every index of the distance
// matrix d, starting at start: a nearest-neighbour tour improved by 2-opt
// (reversing a stretch) and or-opt (moving a stretch of up to three stops
// elsewhere, either way round) until neither shortens it.
func planRoute(d [][]float64, start int) []int {
	n := len(d)
	order := make([]int, 0, n)
	visited := make([]bool, n)
	order = append(order, start)
	visited[start] = true
	for len(order) < n {
		last, next := order[len(order)-1], -1
		for j := range n {
			if !visited[j] && (next < 0 || d[last][j] < d[last][next]) {
				next = j
			}
		}
		order = append(order, next)
		visited[next] = true
	}
	// Improvements must beat this to count, so rounding noise cannot loop.
	const eps = 1e-9
	for improved := true; improved; {
		improved = false
		// 2-opt: reverse order[i..j]; the start stays put, the end is free.
		for i := 1; i < n-1; i++ {
			for j := i + 1; j < n; j++ {
				a, b, c := order[i-1], order[i], order[j]
				delta := d[a][c] - d[a][b]
				if j+1 < n {
					e := order[j+1]
					delta += d[b][e] - d[c][e]
				}
				if delta < -eps {
					slices.Reverse(order[i : j+1])
					improved = true
				}
			}
		}
		// or-opt: move order[i:i+k] to another gap, possibly reversed.
		for k := 1; k <= 3; k++ {
			for i := 1; i+k <= n; i++ {
				cur := pathLength(d, order)
				seg := slices.Clone(order[i : i+k])
				rest := slices.Concat(order[:i], order[i+k:])
				best, bestLen := []int(nil), cur
				for p := 1; p <= len(rest); p++ {
					for _, s := range [][]int{seg, reversed(seg)} {
						cand := slices.Concat(rest[:p], s, rest[p:])
						if l := pathLength(d, cand); l < bestLen-eps {
							best, bestLen = cand, l
						}
					}
				}
				if best != nil {
					order = best
					improved = true
				}
			}
		}
	}
	return order
}

func reversed(s []int) []int {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func pathLength(d [][]float64, order []int) float64 {
	var sum float64
	for i := 1; i < len(order); i++ {
		sum += d[order[i-1]][order[i]]
	}
	return sum
}
