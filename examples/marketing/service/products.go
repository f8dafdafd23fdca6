package service

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Product is one of the brand's products.
type Product struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Category string   `json:"category"`
	Price    int64    `json:"price_krw"`
	Features []string `json:"features"`
}

// Products lists the products, optionally of one category.
func (s *Service) Products(ctx context.Context, category string) ([]Product, error) {
	if category != "" {
		if err := s.checkCategory(ctx, category); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, category, price, features FROM products WHERE ? = '' OR category = ? ORDER BY id`, category, category)
	if err != nil {
		return nil, fmt.Errorf("marketing: products: %w", err)
	}
	defer rows.Close()
	var out []Product
	for rows.Next() {
		var p Product
		var features string
		if err := rows.Scan(&p.ID, &p.Name, &p.Category, &p.Price, &features); err != nil {
			return nil, fmt.Errorf("marketing: products: %w", err)
		}
		if err := json.Unmarshal([]byte(features), &p.Features); err != nil {
			return nil, fmt.Errorf("marketing: product %s: features: %w", p.ID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Product returns the product with id.
func (s *Service) Product(ctx context.Context, id string) (Product, error) {
	all, err := s.Products(ctx, "")
	if err != nil {
		return Product{}, err
	}
	var known []string
	for _, p := range all {
		if p.ID == id {
			return p, nil
		}
		known = append(known, p.ID+" ("+p.Name+")")
	}
	return Product{}, &NotFoundError{Kind: "product", Query: id, Known: known}
}

func (s *Service) productName(ctx context.Context, id string) (string, error) {
	p, err := s.Product(ctx, id)
	return p.Name, err
}

// Categories lists the product categories.
func (s *Service) Categories(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT category FROM products ORDER BY category`)
	if err != nil {
		return nil, fmt.Errorf("marketing: categories: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *Service) checkCategory(ctx context.Context, category string) error {
	cats, err := s.Categories(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(cats, category) {
		return &NotFoundError{Kind: "category", Query: category, Known: cats}
	}
	return nil
}

// StockStatus is a product's inventory.
type StockStatus struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Category   string  `json:"category"`
	Stock      int64   `json:"stock"`
	DailySales float64 `json:"daily_sales"`
	// DaysOfCover is how many days the stock lasts at the daily sales.
	DaysOfCover float64 `json:"days_of_cover"`
	LeadDays    int     `json:"lead_days"`
	// Reorder is true when the stock will not last the restocking lead
	// time plus a week.
	Reorder bool `json:"reorder"`
	// Promotable is true when the stock lasts a month-long campaign that
	// doubles sales.
	Promotable bool `json:"promotable"`
}

// InventoryReport is the stock of products.
type InventoryReport struct {
	Products []StockStatus `json:"products"`
	Reorder  []string      `json:"reorder"`
}

// Inventory checks the stock of a product (id), of a category, or of
// every product (both empty): days of cover, reorder and promotion
// readiness, shortest cover first.
func (s *Service) Inventory(ctx context.Context, productID, category string) (*InventoryReport, error) {
	where, args := "1 = 1", []any{}
	switch {
	case productID != "":
		if _, err := s.Product(ctx, productID); err != nil {
			return nil, err
		}
		where, args = "id = ?", []any{productID}
	case category != "":
		if err := s.checkCategory(ctx, category); err != nil {
			return nil, err
		}
		where, args = "category = ?", []any{category}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, category, stock, daily_sales, lead_days FROM products WHERE `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("marketing: inventory: %w", err)
	}
	defer rows.Close()
	rep := &InventoryReport{}
	for rows.Next() {
		var st StockStatus
		if err := rows.Scan(&st.ID, &st.Name, &st.Category, &st.Stock, &st.DailySales, &st.LeadDays); err != nil {
			return nil, fmt.Errorf("marketing: inventory: %w", err)
		}
		if st.DailySales > 0 {
			st.DaysOfCover = math.Round(float64(st.Stock)/st.DailySales*10) / 10
		} else {
			st.DaysOfCover = 9999 // no sales: lasts indefinitely
		}
		st.Reorder = st.DaysOfCover < float64(st.LeadDays+7)
		st.Promotable = st.DaysOfCover >= 60
		if st.Reorder {
			rep.Reorder = append(rep.Reorder, st.ID)
		}
		rep.Products = append(rep.Products, st)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(rep.Products, func(a, b StockStatus) int { return cmp.Compare(a.DaysOfCover, b.DaysOfCover) })
	return rep, nil
}

// Competitor is a competitor's product.
type Competitor struct {
	Brand    string  `json:"brand"`
	Name     string  `json:"name"`
	Category string  `json:"category"`
	Price    int64   `json:"price"`
	Rating   float64 `json:"rating"`
	Reviews  int     `json:"reviews"`
	Promo    string  `json:"promo"`
}

// CompetitorReport compares the brand's products of a category with its
// competitors'.
type CompetitorReport struct {
	Category    string       `json:"category"`
	Ours        []Product    `json:"ours"`
	OurAvgPrice int64        `json:"our_avg_price_krw"`
	OurRating   float64      `json:"our_avg_rating"`
	Competitors []Competitor `json:"competitors"`
	TheirPrice  int64        `json:"their_avg_price_krw"`
	TheirRating float64      `json:"their_avg_rating"`
	Findings    []string     `json:"findings"`
}

// CompareCompetitors compares the category's prices, ratings and
// promotions with the competitors'.
func (s *Service) CompareCompetitors(ctx context.Context, category string) (*CompetitorReport, error) {
	ours, err := s.Products(ctx, category)
	if err != nil {
		return nil, err
	}
	if category == "" {
		return nil, &InputError{Field: "category", Value: category, Expected: "a product category"}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT brand, name, category, price, rating, reviews, promo FROM competitors WHERE category = ? ORDER BY brand, name`, category)
	if err != nil {
		return nil, fmt.Errorf("marketing: competitors: %w", err)
	}
	defer rows.Close()
	rep := &CompetitorReport{Category: category, Ours: ours}
	for rows.Next() {
		var c Competitor
		if err := rows.Scan(&c.Brand, &c.Name, &c.Category, &c.Price, &c.Rating, &c.Reviews, &c.Promo); err != nil {
			return nil, err
		}
		rep.Competitors = append(rep.Competitors, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(rep.Competitors) == 0 {
		return nil, &NotFoundError{Kind: "competitor of category", Query: category}
	}
	var sum int64
	for _, p := range ours {
		sum += p.Price
	}
	rep.OurAvgPrice = sum / int64(len(ours))
	var rsum float64
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(r.rating), 0), COUNT(*) FROM reviews r JOIN products p ON p.id = r.product_id WHERE p.category = ?`, category).Scan(&rsum, &n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if n > 0 {
		rep.OurRating = round2(rsum / float64(n))
	}
	var tp int64
	var tr float64
	var promos []string
	for _, c := range rep.Competitors {
		tp += c.Price
		tr += c.Rating
		if c.Promo != "" {
			promos = append(promos, c.Brand+" "+c.Promo)
		}
	}
	rep.TheirPrice = tp / int64(len(rep.Competitors))
	rep.TheirRating = round2(tr / float64(len(rep.Competitors)))
	diff := float64(rep.OurAvgPrice)/float64(rep.TheirPrice) - 1
	rep.Findings = append(rep.Findings, fmt.Sprintf("%s 평균가는 경쟁사보다 %.0f%% %s", category, math.Abs(diff)*100, map[bool]string{true: "높음", false: "낮음"}[diff > 0]))
	rep.Findings = append(rep.Findings, fmt.Sprintf("평균 평점: 자사 %.2f, 경쟁사 %.2f", rep.OurRating, rep.TheirRating))
	if len(promos) > 0 {
		rep.Findings = append(rep.Findings, "경쟁사 프로모션: "+strings.Join(promos, ", "))
	}
	return rep, nil
}
