// Package service is the business logic of the marketing agent of design
// document 003 over SQLite: channel performance of campaigns, customer
// segments, products and their inventory, competitors, and reviews for
// sentiment and keywords; and the content built from them (a campaign
// proposal, a report, ad copy, sales material).
//
// The package knows nothing of graphs, models or tools (document 000's
// first rule): each operation queries the database, applies the domain
// rules and returns plain DTOs. Open creates the schema and seeds the
// sample data once: the campaigns' daily figures and the reviews are
// generated from seed.json with a fixed random seed, laid out relative to
// the day the database is first seeded, so "last quarter" always has
// data.
package service

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/weftlabs/weft/internal/sqlitefile"
)

//go:embed seed.json
var seedJSON []byte

// kst is Korea Standard Time, fixed so the package needs no time zone
// database.
var kst = time.FixedZone("KST", 9*60*60)

// dateLayout is how days are stored.
const dateLayout = "2006-01-02"

// Options configure a Service.
type Options struct {
	// Now returns the current time; nil means time.Now. Periods such as
	// "last_quarter" are relative to it, and the seed data is laid out
	// relative to it when the database is first seeded.
	Now func() time.Time
}

// Service is the marketing business logic over one SQLite database. It is
// safe for concurrent use.
type Service struct {
	db    *sql.DB
	now   func() time.Time
	brand string
}

// Open opens the SQLite database at path (":memory:" for a private
// in-memory one), creates the schema and seeds the sample data if it is not
// seeded yet.
func Open(ctx context.Context, path string) (*Service, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (*Service, error) {
	if strings.TrimSpace(path) == "" {
		return nil, &InputError{Field: "path", Value: path, Expected: `a file path or ":memory:"`}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	db, err := sqlitefile.Open(ctx, sqlitefile.ServiceDSN(path), 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("marketing: open %s: %w", path, err)
	}
	s := &Service{db: db, now: now}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Service) Close() error { return s.db.Close() }

// Brand is the brand the data belongs to.
func (s *Service) Brand() string { return s.brand }

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS channels (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, objective TEXT NOT NULL, category TEXT NOT NULL,
	start_date TEXT NOT NULL, end_date TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS channel_daily (
	campaign_id TEXT NOT NULL REFERENCES campaigns(id), channel_id TEXT NOT NULL REFERENCES channels(id),
	day TEXT NOT NULL, impressions INTEGER NOT NULL, clicks INTEGER NOT NULL, conversions INTEGER NOT NULL,
	spend INTEGER NOT NULL, revenue INTEGER NOT NULL, PRIMARY KEY (campaign_id, channel_id, day));
CREATE INDEX IF NOT EXISTS channel_daily_day ON channel_daily(day);
CREATE TABLE IF NOT EXISTS products (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price INTEGER NOT NULL,
	stock INTEGER NOT NULL, daily_sales REAL NOT NULL, lead_days INTEGER NOT NULL, features TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS competitors (
	brand TEXT NOT NULL, name TEXT NOT NULL, category TEXT NOT NULL, price INTEGER NOT NULL,
	rating REAL NOT NULL, reviews INTEGER NOT NULL, promo TEXT NOT NULL, PRIMARY KEY (brand, name));
CREATE TABLE IF NOT EXISTS segments (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, size INTEGER NOT NULL, aov INTEGER NOT NULL,
	repurchase_rate REAL NOT NULL, growth REAL NOT NULL, preferred_channel TEXT NOT NULL,
	interests TEXT NOT NULL, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS reviews (
	id INTEGER PRIMARY KEY, product_id TEXT NOT NULL REFERENCES products(id), day TEXT NOT NULL,
	rating INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS reviews_day ON reviews(day);
`

// seedData mirrors seed.json.
type seedData struct {
	Version  int    `json:"version"`
	Brand    string `json:"brand"`
	Channels []struct {
		ID    string  `json:"id"`
		Name  string  `json:"name"`
		CPC   float64 `json:"cpc"`
		CTR   float64 `json:"ctr"`
		CVR   float64 `json:"cvr"`
		AOV   float64 `json:"aov"`
		Trend float64 `json:"trend"` // change of efficiency per month
	} `json:"channels"`
	Campaigns []struct {
		ID           string           `json:"id"`
		Name         string           `json:"name"`
		Objective    string           `json:"objective"`
		Category     string           `json:"category"`
		StartDaysAgo int              `json:"start_days_ago"`
		Days         int              `json:"days"`
		Budgets      map[string]int64 `json:"budgets"` // daily budget per channel, KRW
	} `json:"campaigns"`
	Products []struct {
		ID         string   `json:"id"`
		Name       string   `json:"name"`
		Category   string   `json:"category"`
		Price      int64    `json:"price"`
		Stock      int64    `json:"stock"`
		DailySales float64  `json:"daily_sales"`
		LeadDays   int      `json:"lead_days"`
		Features   []string `json:"features"`
	} `json:"products"`
	Competitors   []Competitor         `json:"competitors"`
	Segments      []Segment            `json:"segments"`
	ReviewPhrases map[string][]string  `json:"review_phrases"`
	Profiles      map[string][]float64 `json:"review_profiles"`
}

func (s *Service) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("marketing: migrate: %w", err)
	}
	var seed seedData
	if err := json.Unmarshal(seedJSON, &seed); err != nil {
		return fmt.Errorf("marketing: embedded seed data: %w", err)
	}
	s.brand = seed.Brand
	return sqlitefile.RetryBusy(ctx, 10*time.Second, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("marketing: seed: %w", err)
		}
		defer tx.Rollback()
		var seeded string
		switch err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'seed_version'`).Scan(&seeded); {
		case err == nil:
			return nil // seeded before
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("marketing: seed: %w", err)
		}
		if err := insertSeed(ctx, tx, &seed, s.now().In(kst)); err != nil {
			return fmt.Errorf("marketing: seed: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('seed_version', ?), ('seeded_on', ?)`,
			fmt.Sprint(seed.Version), s.now().In(kst).Format(dateLayout)); err != nil {
			return fmt.Errorf("marketing: seed: %w", err)
		}
		return tx.Commit()
	})
}

// insertSeed writes the seed data, generating the campaigns' daily
// figures and the reviews with a fixed random seed.
func insertSeed(ctx context.Context, tx *sql.Tx, seed *seedData, now time.Time) error {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, kst)
	rng := rand.New(rand.NewPCG(20260206, 3))
	type channel struct{ cpc, ctr, cvr, aov, trend float64 }
	chans := map[string]channel{}
	for i, c := range seed.Channels {
		chans[c.ID] = channel{c.CPC, c.CTR, c.CVR, c.AOV, c.Trend}
		if _, err := tx.ExecContext(ctx, `INSERT INTO channels VALUES (?, ?, ?)`, c.ID, c.Name, i); err != nil {
			return err
		}
	}
	daily := &batch{table: "channel_daily", cols: 8}
	for _, c := range seed.Campaigns {
		start := today.AddDate(0, 0, -c.StartDaysAgo)
		end := start.AddDate(0, 0, c.Days-1)
		if _, err := tx.ExecContext(ctx, `INSERT INTO campaigns VALUES (?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, c.Objective, c.Category, start.Format(dateLayout), end.Format(dateLayout)); err != nil {
			return err
		}
		for _, chID := range slices.Sorted(maps.Keys(c.Budgets)) {
			ch, ok := chans[chID]
			if !ok {
				return fmt.Errorf("campaign %s: unknown channel %q", c.ID, chID)
			}
			for d := start; !d.After(end) && d.Before(today); d = d.AddDate(0, 0, 1) {
				// Efficiency drifts by the channel's trend per month
				// (months counted back from today), weekends spend less.
				months := today.Sub(d).Hours() / 24 / 30
				eff := math.Max(0.3, 1-ch.trend*months)
				week := 1.0
				if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
					week = 0.8
				}
				spend := float64(c.Budgets[chID]) * week * (0.85 + 0.3*rng.Float64())
				clicks := spend / (ch.cpc * (0.9 + 0.2*rng.Float64()))
				impressions := clicks / (ch.ctr * (0.85 + 0.3*rng.Float64()))
				conversions := clicks * ch.cvr * eff * (0.8 + 0.4*rng.Float64())
				revenue := conversions * ch.aov * (0.9 + 0.2*rng.Float64())
				if err := daily.add(ctx, tx, c.ID, chID, d.Format(dateLayout), int64(impressions), int64(clicks), int64(math.Round(conversions)),
					int64(spend), int64(revenue)); err != nil {
					return err
				}
			}
		}
	}
	if err := daily.flush(ctx, tx); err != nil {
		return err
	}
	for _, p := range seed.Products {
		if _, err := tx.ExecContext(ctx, `INSERT INTO products VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Name, p.Category, p.Price, p.Stock, p.DailySales, p.LeadDays, mustJSON(p.Features)); err != nil {
			return err
		}
	}
	for _, c := range seed.Competitors {
		if _, err := tx.ExecContext(ctx, `INSERT INTO competitors VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.Brand, c.Name, c.Category, c.Price, c.Rating, c.Reviews, c.Promo); err != nil {
			return err
		}
	}
	for i, g := range seed.Segments {
		if _, err := tx.ExecContext(ctx, `INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.ID, g.Name, g.Size, g.AOV, g.RepurchaseRate, g.Growth, g.PreferredChannel, mustJSON(g.Interests), i); err != nil {
			return err
		}
	}
	pos, neg, neu := seed.ReviewPhrases["positive"], seed.ReviewPhrases["negative"], seed.ReviewPhrases["neutral"]
	id := 0
	reviews := &batch{table: "reviews", cols: 5}
	for _, p := range seed.Products {
		prof := seed.Profiles[p.ID]
		if len(prof) != 2 {
			return fmt.Errorf("product %s: want a review profile [positive, negative]", p.ID)
		}
		for range 40 {
			id++
			day := today.AddDate(0, 0, -1-rng.IntN(360))
			var text string
			var rating int
			switch x := rng.Float64(); {
			case x < prof[0]:
				text, rating = pos[rng.IntN(len(pos))]+". "+pos[rng.IntN(len(pos))]+".", 4+rng.IntN(2)
			case x < prof[0]+prof[1]:
				text, rating = neg[rng.IntN(len(neg))]+". "+neg[rng.IntN(len(neg))]+".", 1+rng.IntN(2)
			default:
				text, rating = neu[rng.IntN(len(neu))]+". "+neu[rng.IntN(len(neu))]+".", 3
			}
			if err := reviews.add(ctx, tx, id, p.ID, day.Format(dateLayout), rating, text); err != nil {
				return err
			}
		}
	}
	return reviews.flush(ctx, tx)
}

// batch inserts rows many at a time: one statement per row would make
// seeding thousands of rows slow.
type batch struct {
	table string
	cols  int
	args  []any
}

// batchRows is how many rows one statement inserts (SQLite allows 32,766
// parameters).
const batchRows = 400

func (b *batch) add(ctx context.Context, tx *sql.Tx, row ...any) error {
	b.args = append(b.args, row...)
	if len(b.args) >= batchRows*b.cols {
		return b.flush(ctx, tx)
	}
	return nil
}

func (b *batch) flush(ctx context.Context, tx *sql.Tx) error {
	if len(b.args) == 0 {
		return nil
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", b.cols), ", ") + ")"
	rows := len(b.args) / b.cols
	q := "INSERT INTO " + b.table + " VALUES " + strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
	_, err := tx.ExecContext(ctx, q, b.args...)
	b.args = b.args[:0]
	return err
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only lists of strings reach here
	}
	return string(b)
}
