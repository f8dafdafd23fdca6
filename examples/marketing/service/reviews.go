package service

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The sentiment lexicon: words and endings that mark a review positive or
// negative. Reviews are scored by what they say, not by their rating.
var (
	positiveWords = []string{"좋아요", "좋고", "촉촉", "만족", "최고", "부드러워", "은은", "예뻐", "순해", "오래가", "고급스러", "시원", "개운", "재구매 의사 있", "빨라"}
	negativeWords = []string{"강해요", "트러블", "비싸", "적어요", "늦었", "끈적", "아쉬워", "뻑뻑", "불편", "건조함", "별로"}
)

// aspects are the keywords reviews are counted by: what customers talk
// about.
var aspects = []string{"보습", "촉촉", "향", "발림성", "가성비", "가격", "배송", "지속력", "재구매", "자극", "트러블", "발색", "패키지", "두피", "용량", "끈적임", "건조함"}

// ReviewQuery selects reviews: by product id or category (empty: all), in
// a period (empty: the last year).
type ReviewQuery struct {
	Product  string
	Category string
	Period   string
}

// Keyword is an aspect and how often positive and negative reviews name
// it.
type Keyword struct {
	Keyword  string `json:"keyword"`
	Mentions int    `json:"mentions"`
	Positive int    `json:"positive"`
	Negative int    `json:"negative"`
}

// ProductSentiment is one product's share of positive reviews.
type ProductSentiment struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Reviews  int     `json:"reviews"`
	Positive float64 `json:"positive_share"`
	Rating   float64 `json:"avg_rating"`
}

// SentimentReport is the sentiment and keywords of a set of reviews.
type SentimentReport struct {
	Period   Period             `json:"period"`
	Scope    string             `json:"scope"`
	Reviews  int                `json:"reviews"`
	Positive int                `json:"positive"`
	Neutral  int                `json:"neutral"`
	Negative int                `json:"negative"`
	Score    float64            `json:"score"` // (positive − negative) / reviews
	Keywords []Keyword          `json:"keywords"`
	Products []ProductSentiment `json:"products"`
	// Praise and Complaints are the aspects most named by positive and by
	// negative reviews.
	Praise     []string `json:"praise"`
	Complaints []string `json:"complaints"`
	Samples    []string `json:"samples"`
}

// Sentiment scores a review's text: +1 positive, -1 negative, 0 neutral.
func Sentiment(text string) int {
	p, n := 0, 0
	for _, w := range positiveWords {
		p += strings.Count(text, w)
	}
	for _, w := range negativeWords {
		n += strings.Count(text, w)
	}
	switch {
	case p > n:
		return 1
	case n > p:
		return -1
	}
	return 0
}

// ReviewSentiment analyses the reviews q selects: sentiment by lexicon,
// aspects named by positive and negative reviews, and each product's
// share of positive reviews.
func (s *Service) ReviewSentiment(ctx context.Context, q ReviewQuery) (*SentimentReport, error) {
	spec := cmp.Or(q.Period, "last_year")
	p, err := s.ResolvePeriod(spec)
	if err != nil {
		return nil, err
	}
	where, args := "r.day BETWEEN ? AND ?", []any{p.From, p.To}
	scope := "전체 상품"
	switch {
	case q.Product != "":
		name, err := s.productName(ctx, q.Product)
		if err != nil {
			return nil, err
		}
		where, args, scope = where+" AND r.product_id = ?", append(args, q.Product), name
	case q.Category != "":
		if err := s.checkCategory(ctx, q.Category); err != nil {
			return nil, err
		}
		where, args, scope = where+" AND p.category = ?", append(args, q.Category), q.Category
	}
	rows, err := s.db.QueryContext(ctx, `SELECT p.id, p.name, r.rating, r.text FROM reviews r JOIN products p ON p.id = r.product_id WHERE `+where+` ORDER BY r.day DESC, r.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("marketing: reviews: %w", err)
	}
	defer rows.Close()
	rep := &SentimentReport{Period: p, Scope: scope}
	kw := map[string]*Keyword{}
	type acc struct {
		name              string
		n, pos, ratingSum int
	}
	prods := map[string]*acc{}
	for rows.Next() {
		var id, name, text string
		var rating int
		if err := rows.Scan(&id, &name, &rating, &text); err != nil {
			return nil, fmt.Errorf("marketing: reviews: %w", err)
		}
		rep.Reviews++
		sent := Sentiment(text)
		switch sent {
		case 1:
			rep.Positive++
		case -1:
			rep.Negative++
		default:
			rep.Neutral++
		}
		a := prods[id]
		if a == nil {
			a = &acc{name: name}
			prods[id] = a
		}
		a.n++
		a.ratingSum += rating
		if sent == 1 {
			a.pos++
		}
		for _, asp := range aspects {
			if !strings.Contains(text, asp) {
				continue
			}
			k := kw[asp]
			if k == nil {
				k = &Keyword{Keyword: asp}
				kw[asp] = k
			}
			k.Mentions++
			switch sent {
			case 1:
				k.Positive++
			case -1:
				k.Negative++
			}
		}
		if len(rep.Samples) < 5 && sent != 0 {
			rep.Samples = append(rep.Samples, fmt.Sprintf("[%s] %s", name, text))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if rep.Reviews == 0 {
		return nil, &NoDataError{What: "reviews of " + scope, Period: p}
	}
	rep.Score = round2(float64(rep.Positive-rep.Negative) / float64(rep.Reviews))
	for _, k := range kw {
		rep.Keywords = append(rep.Keywords, *k)
	}
	slices.SortFunc(rep.Keywords, func(a, b Keyword) int {
		return cmp.Or(cmp.Compare(b.Mentions, a.Mentions), strings.Compare(a.Keyword, b.Keyword))
	})
	rep.Praise = topBy(rep.Keywords, func(k Keyword) int { return k.Positive })
	rep.Complaints = topBy(rep.Keywords, func(k Keyword) int { return k.Negative })
	for _, id := range slices.Sorted(maps.Keys(prods)) {
		a := prods[id]
		rep.Products = append(rep.Products, ProductSentiment{ID: id, Name: a.name, Reviews: a.n,
			Positive: round2(float64(a.pos) / float64(a.n)), Rating: round2(float64(a.ratingSum) / float64(a.n))})
	}
	slices.SortStableFunc(rep.Products, func(a, b ProductSentiment) int { return cmp.Compare(b.Positive, a.Positive) })
	return rep, nil
}

// topBy returns the three keywords with the highest count by, those with
// a count at all.
func topBy(kws []Keyword, by func(Keyword) int) []string {
	s := slices.Clone(kws)
	slices.SortStableFunc(s, func(a, b Keyword) int { return cmp.Compare(by(b), by(a)) })
	var out []string
	for _, k := range s {
		if by(k) > 0 && len(out) < 3 {
			out = append(out, k.Keyword)
		}
	}
	return out
}

func parseDay(s string) time.Time {
	t, _ := time.ParseInLocation(dateLayout, s, kst)
	return t
}
