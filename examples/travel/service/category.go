package service

import (
	"slices"
	"strings"
)

// categoryWords maps the words a user or model may use for a category,
// English and Korean, to the category.
var categoryWords = map[string]Category{
	"cafe": Cafe, "café": Cafe, "coffee": Cafe, "카페": Cafe, "커피": Cafe, "찻집": Cafe,
	"restaurant": Restaurant, "food": Restaurant, "식당": Restaurant, "음식점": Restaurant,
	"맛집": Restaurant, "레스토랑": Restaurant, "음식": Restaurant,
	"attraction": Attraction, "sightseeing": Attraction, "관광지": Attraction, "명소": Attraction,
	"관광": Attraction, "볼거리": Attraction, "관광명소": Attraction,
	"accommodation": Accommodation, "hotel": Accommodation, "lodging": Accommodation,
	"숙소": Accommodation, "숙박": Accommodation, "호텔": Accommodation,
	"shopping": Shopping, "shop": Shopping, "쇼핑": Shopping, "쇼핑몰": Shopping, "상점": Shopping,
}

// CategoryWords returns every word ParseCategory takes, in lower case: each
// category's own name first, in the order of Categories, then the other
// words sorted.
func CategoryWords() []string {
	out := make([]string, 0, len(categoryWords))
	for _, c := range Categories {
		out = append(out, string(c))
	}
	var rest []string
	for w, c := range categoryWords {
		if w != string(c) {
			rest = append(rest, w)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// Categories lists every category, in a fixed order.
var Categories = []Category{Cafe, Restaurant, Attraction, Accommodation, Shopping}

// ParseCategory returns the category named by s: a category's own name
// ("cafe", "restaurant", "attraction", "accommodation", "shopping") or a
// common English or Korean word for it ("카페", "맛집", "식당", "관광지",
// "명소", "숙소", "호텔", "쇼핑", ...), in any case and with surrounding
// spaces. An empty s is the empty category, which means "any".
func ParseCategory(s string) (Category, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	if w == "" {
		return "", nil
	}
	if c, ok := categoryWords[w]; ok {
		return c, nil
	}
	return "", &InputError{Field: "category", Value: s,
		Expected: "one of cafe, restaurant, attraction, accommodation, shopping (or 카페, 식당, 관광지, 숙소, 쇼핑), or empty for any"}
}
