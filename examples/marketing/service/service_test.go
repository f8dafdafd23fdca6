package service_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/examples/marketing/service"
)

// now is a fixed day: 2026-02-06 in Korea.
var now = time.Date(2026, 2, 6, 10, 0, 0, 0, time.FixedZone("KST", 9*3600))

var (
	shared     *service.Service
	sharedErr  error
	sharedOnce sync.Once
)

// open returns the package's one service: the tests only read, and
// seeding is slow under the race detector.
func open(t *testing.T) *service.Service {
	t.Helper()
	sharedOnce.Do(func() {
		shared, sharedErr = service.OpenWith(context.Background(), ":memory:", service.Options{Now: func() time.Time { return now }})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func TestResolvePeriod(t *testing.T) {
	s := open(t)
	tests := []struct {
		spec, from, to string
	}{
		{"last_quarter", "2025-10-01", "2025-12-31"},
		{"this_quarter", "2026-01-01", "2026-02-05"},
		{"last_month", "2026-01-01", "2026-01-31"},
		{"next_month", "2026-03-01", "2026-03-31"},
		{"last_30_days", "2026-01-07", "2026-02-05"},
		{"2025-Q3", "2025-07-01", "2025-09-30"},
		{"2025-02", "2025-02-01", "2025-02-28"},
		{"2025-05-01..2025-05-10", "2025-05-01", "2025-05-10"},
	}
	for _, tt := range tests {
		p, err := s.ResolvePeriod(tt.spec)
		if err != nil || p.From != tt.from || p.To != tt.to {
			t.Errorf("%s: %+v %v, want %s..%s", tt.spec, p, err, tt.from, tt.to)
		}
	}
	for _, bad := range []string{"", "yesterday", "2025-Q5", "2025-13", "2025-05-10..2025-05-01"} {
		if _, err := s.ResolvePeriod(bad); !errors.Is(err, service.ErrInvalidInput) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

func TestChannelPerformance(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	r, err := s.ChannelPerformance(ctx, "last_quarter")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Channels) < 5 || r.Total.Revenue <= 0 || r.Total.ROAS <= 0 {
		t.Fatalf("report %+v", r)
	}
	var sum int64
	var share float64
	for i, m := range r.Channels {
		sum += m.Revenue
		share += m.RevenueShare
		if i > 0 && m.Revenue > r.Channels[i-1].Revenue {
			t.Errorf("not sorted by revenue: %v", r.Channels)
		}
		if m.ROAS <= 0 || m.CTR <= 0 || m.CTR >= 1 || m.CVR <= 0 || m.CPA <= 0 {
			t.Errorf("ratios of %s: %+v", m.Channel, m)
		}
	}
	if sum != r.Total.Revenue || share < 0.99 || share > 1.01 {
		t.Errorf("revenues sum to %d of %d, shares to %v", sum, r.Total.Revenue, share)
	}
	in, err := service.AnalyzeChannels(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.ByROAS) != len(r.Channels) || len(in.Findings) < 3 || len(in.Scale)+len(in.Keep)+len(in.Cut) != len(r.Channels) || in.MonthlySpend <= 0 {
		t.Errorf("insights %+v", in)
	}
	if _, err := s.ChannelPerformance(ctx, "2020-Q1"); !errors.Is(err, service.ErrNoData) {
		t.Errorf("a period without data: %v", err)
	}
	tr, err := s.MetricTrend(ctx, "social", "roas", 6)
	if err != nil || len(tr.Points) != 6 || tr.Points[5].Month != "2026-01" {
		t.Errorf("trend %+v %v", tr, err)
	}
	if _, err := s.MetricTrend(ctx, "tv", "roas", 6); !errors.Is(err, service.ErrNotFound) {
		t.Errorf("unknown channel: %v", err)
	}
	if _, err := s.MetricTrend(ctx, "all", "likes", 6); !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("unknown metric: %v", err)
	}
	cs, err := s.Campaigns(ctx, "last_quarter")
	if err != nil || len(cs) == 0 {
		t.Errorf("campaigns %v %v", cs, err)
	}
}

func TestReviewsAndProducts(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rep, err := s.ReviewSentiment(ctx, service.ReviewQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reviews != rep.Positive+rep.Neutral+rep.Negative || rep.Reviews < 200 || len(rep.Keywords) == 0 || len(rep.Praise) == 0 || len(rep.Complaints) == 0 {
		t.Errorf("sentiment %+v", rep)
	}
	if service.Sentiment("보습력이 정말 좋아요") != 1 || service.Sentiment("트러블이 올라왔어요") != -1 || service.Sentiment("보통이에요") != 0 {
		t.Error("lexicon")
	}
	one, err := s.ReviewSentiment(ctx, service.ReviewQuery{Product: "p-05", Period: "last_year"})
	if err != nil || len(one.Products) != 1 || one.Scope != "쿠션 파운데이션" {
		t.Errorf("one product %+v %v", one, err)
	}
	if _, err := s.ReviewSentiment(ctx, service.ReviewQuery{Category: "향수"}); !errors.Is(err, service.ErrNotFound) {
		t.Errorf("unknown category: %v", err)
	}
	inv, err := s.Inventory(ctx, "", "")
	if err != nil || len(inv.Products) != 8 || len(inv.Reorder) == 0 {
		t.Errorf("inventory %+v %v", inv, err)
	}
	comp, err := s.CompareCompetitors(ctx, "스킨케어")
	if err != nil || len(comp.Competitors) != 3 || len(comp.Findings) < 2 || comp.OurRating == 0 {
		t.Errorf("competitors %+v %v", comp, err)
	}
	segs, err := s.Segments(ctx)
	if err != nil || len(segs) != 6 || segs[0].Value < segs[5].Value {
		t.Errorf("segments %+v %v", segs, err)
	}
}

func TestProposalAndReport(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	perf, _ := s.ChannelPerformance(ctx, "last_quarter")
	in, _ := service.AnalyzeChannels(perf)
	segs, _ := s.Segments(ctx)
	sent, _ := s.ReviewSentiment(ctx, service.ReviewQuery{Period: "last_quarter"})
	inv, _ := s.Inventory(ctx, "", "")
	p, err := s.ProposeCampaign(ctx, service.ProposalInput{Month: "next_month", Budget: 50_000_000, Insights: in, Segments: segs, Sentiment: sent, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, a := range p.Allocations {
		total += a.Budget
	}
	if total != 50_000_000 || p.Period.From != "2026-03-01" || len(p.Targets) != 2 || len(p.KPIs) == 0 || p.ExpectedROAS <= 0 {
		t.Errorf("proposal %+v (allocated %d)", p, total)
	}
	// The channel with the best ROAS gets more than the one with the
	// worst.
	if p.Allocations[0].Budget <= p.Allocations[len(p.Allocations)-1].Budget {
		t.Errorf("allocations %+v", p.Allocations)
	}
	if _, err := s.ProposeCampaign(ctx, service.ProposalInput{}); !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("no insights: %v", err)
	}
	rep, err := service.WriteReport(service.ReportInput{Title: "분기 보고서", Performance: perf, Insights: in, Proposal: p, Segments: segs, Sentiment: sent})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# 분기 보고서", "## 요약", "## 채널별 성과", "| 검색광고 |", "## 캠페인 제안", "## 리뷰 감성"} {
		if !strings.Contains(rep.Markdown, want) {
			t.Errorf("report lacks %q:\n%s", want, rep.Markdown)
		}
	}
	if _, err := service.WriteReport(service.ReportInput{}); !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("empty report: %v", err)
	}
	ad, err := s.WriteAdCopy(ctx, "p-01", "seg-30s", "friendly")
	if err != nil || len(ad.Variants) != 3 || !strings.Contains(ad.Markdown, "딥 모이스처 크림") {
		t.Errorf("ad copy %+v %v", ad, err)
	}
	if _, err := s.WriteAdCopy(ctx, "p-01", "seg-x", "friendly"); !errors.Is(err, service.ErrNotFound) {
		t.Errorf("unknown segment: %v", err)
	}
	sm, err := s.WriteSalesMaterial(ctx, "p-02")
	if err != nil || !strings.Contains(sm.Markdown, "## 특징") {
		t.Errorf("sales material %+v %v", sm, err)
	}
}

// The data is seeded once: reopening the file keeps it, and a second
// process's open does not seed again.
func TestSeedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	ctx := context.Background()
	opts := service.Options{Now: func() time.Time { return now }}
	s1, err := service.OpenWith(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := s1.ChannelPerformance(ctx, "last_quarter")
	s1.Close()
	later := service.Options{Now: func() time.Time { return now.AddDate(0, 0, 3) }}
	s2, err := service.OpenWith(ctx, path, later)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r2, _ := s2.ChannelPerformance(ctx, "2025-Q4")
	if r1.Total.Revenue != r2.Total.Revenue {
		t.Errorf("reseeded: %d then %d", r1.Total.Revenue, r2.Total.Revenue)
	}
}
