package service

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// ChannelMetrics are a channel's totals over a period and the ratios
// marketers read them by.
type ChannelMetrics struct {
	Channel     string  `json:"channel"`
	Name        string  `json:"name"`
	Impressions int64   `json:"impressions"`
	Clicks      int64   `json:"clicks"`
	Conversions int64   `json:"conversions"`
	Spend       int64   `json:"spend_krw"`
	Revenue     int64   `json:"revenue_krw"`
	CTR         float64 `json:"ctr"`  // clicks / impressions
	CVR         float64 `json:"cvr"`  // conversions / clicks
	CPA         float64 `json:"cpa"`  // spend / conversions, KRW
	ROAS        float64 `json:"roas"` // revenue / spend
	// RevenueShare is the channel's share of the period's revenue.
	RevenueShare float64 `json:"revenue_share"`
	// RevenueChange and ROASChange compare with the period just before
	// (a ratio: 0.1 is +10 %); nil when that period had no data.
	RevenueChange *float64 `json:"revenue_change,omitempty"`
	ROASChange    *float64 `json:"roas_change,omitempty"`
}

// ChannelReport is the performance of every channel over a period.
type ChannelReport struct {
	Period   Period           `json:"period"`
	Previous Period           `json:"previous"`
	Channels []ChannelMetrics `json:"channels"`
	Total    ChannelMetrics   `json:"total"`
}

func (m *ChannelMetrics) derive() {
	m.CTR = ratio(float64(m.Clicks), float64(m.Impressions))
	m.CVR = ratio(float64(m.Conversions), float64(m.Clicks))
	m.CPA = math.Round(ratio(float64(m.Spend), float64(m.Conversions)))
	m.ROAS = round2(ratio(float64(m.Revenue), float64(m.Spend)))
	m.CTR, m.CVR = round4(m.CTR), round4(m.CVR)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

// totals sums the daily figures per channel over p.
func (s *Service) totals(ctx context.Context, p Period) (map[string]ChannelMetrics, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, c.name, SUM(d.impressions), SUM(d.clicks), SUM(d.conversions), SUM(d.spend), SUM(d.revenue)
		FROM channel_daily d JOIN channels c ON c.id = d.channel_id WHERE d.day BETWEEN ? AND ? GROUP BY c.id, c.name`, p.From, p.To)
	if err != nil {
		return nil, fmt.Errorf("marketing: channel totals: %w", err)
	}
	defer rows.Close()
	out := map[string]ChannelMetrics{}
	for rows.Next() {
		var m ChannelMetrics
		if err := rows.Scan(&m.Channel, &m.Name, &m.Impressions, &m.Clicks, &m.Conversions, &m.Spend, &m.Revenue); err != nil {
			return nil, fmt.Errorf("marketing: channel totals: %w", err)
		}
		out[m.Channel] = m
	}
	return out, rows.Err()
}

// ChannelPerformance collects every channel's totals over the period spec
// names ("last_quarter", see ResolvePeriod), with their ratios and the
// change from the period just before, best revenue first.
func (s *Service) ChannelPerformance(ctx context.Context, spec string) (*ChannelReport, error) {
	p, err := s.ResolvePeriod(spec)
	if err != nil {
		return nil, err
	}
	cur, err := s.totals(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(cur) == 0 {
		return nil, &NoDataError{What: "channel performance", Period: p}
	}
	prevP := previous(p)
	prev, err := s.totals(ctx, prevP)
	if err != nil {
		return nil, err
	}
	r := &ChannelReport{Period: p, Previous: prevP, Total: ChannelMetrics{Channel: "total", Name: "전체"}}
	for _, m := range cur {
		r.Total.Impressions += m.Impressions
		r.Total.Clicks += m.Clicks
		r.Total.Conversions += m.Conversions
		r.Total.Spend += m.Spend
		r.Total.Revenue += m.Revenue
	}
	for _, id := range slices.Sorted(maps.Keys(cur)) {
		m := cur[id]
		m.derive()
		m.RevenueShare = round4(ratio(float64(m.Revenue), float64(r.Total.Revenue)))
		if pm, ok := prev[id]; ok && pm.Revenue > 0 && pm.Spend > 0 {
			pm.derive()
			rc := round4(float64(m.Revenue)/float64(pm.Revenue) - 1)
			oc := round4(m.ROAS/pm.ROAS - 1)
			m.RevenueChange, m.ROASChange = &rc, &oc
		}
		r.Channels = append(r.Channels, m)
	}
	r.Total.derive()
	r.Total.RevenueShare = 1
	slices.SortFunc(r.Channels, func(a, b ChannelMetrics) int { return cmp.Compare(b.Revenue, a.Revenue) })
	return r, nil
}

// Metrics are the names MetricTrend takes.
var Metrics = []string{"revenue", "spend", "conversions", "clicks", "roas", "ctr", "cvr", "cpa"}

// TrendPoint is one month of a trend.
type TrendPoint struct {
	Month string  `json:"month"`
	Value float64 `json:"value"`
}

// Trend is a metric by month.
type Trend struct {
	Channel string       `json:"channel"`
	Metric  string       `json:"metric"`
	Points  []TrendPoint `json:"points"`
	// Change is the last full month against the first, as a ratio.
	Change float64 `json:"change"`
}

// MetricTrend returns a metric of a channel ("all" for every channel) by
// month over the last months (1 to 12), the current month excluded.
func (s *Service) MetricTrend(ctx context.Context, channel, metric string, months int) (*Trend, error) {
	if !slices.Contains(Metrics, metric) {
		return nil, &InputError{Field: "metric", Value: metric, Expected: "one of " + strings.Join(Metrics, ", ")}
	}
	if months < 1 || months > 12 {
		return nil, &InputError{Field: "months", Value: months, Expected: "1 to 12"}
	}
	if channel != "all" {
		if err := s.checkChannel(ctx, channel); err != nil {
			return nil, err
		}
	}
	now := s.now().In(kst)
	t := &Trend{Channel: channel, Metric: metric}
	for i := months; i >= 1; i-- {
		p, _ := resolvePeriod(now.AddDate(0, -i, 0).Format("2006-01"), now)
		tot, err := s.totals(ctx, p)
		if err != nil {
			return nil, err
		}
		var m ChannelMetrics
		for id, c := range tot {
			if channel == "all" || id == channel {
				m.Impressions += c.Impressions
				m.Clicks += c.Clicks
				m.Conversions += c.Conversions
				m.Spend += c.Spend
				m.Revenue += c.Revenue
			}
		}
		m.derive()
		v := map[string]float64{"revenue": float64(m.Revenue), "spend": float64(m.Spend), "conversions": float64(m.Conversions),
			"clicks": float64(m.Clicks), "roas": m.ROAS, "ctr": m.CTR, "cvr": m.CVR, "cpa": m.CPA}[metric]
		t.Points = append(t.Points, TrendPoint{Month: p.From[:7], Value: v})
	}
	if first := t.Points[0].Value; first != 0 {
		t.Change = round4(t.Points[len(t.Points)-1].Value/first - 1)
	}
	return t, nil
}

func (s *Service) checkChannel(ctx context.Context, id string) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM channels ORDER BY position`)
	if err != nil {
		return fmt.Errorf("marketing: channels: %w", err)
	}
	defer rows.Close()
	var known []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return err
		}
		if k == id {
			return nil
		}
		known = append(known, k)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return &NotFoundError{Kind: "channel", Query: id, Known: append(known, "all")}
}

// CampaignResult is a campaign and its figures within a period.
type CampaignResult struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Objective string  `json:"objective"`
	Category  string  `json:"category"`
	Start     string  `json:"start"`
	End       string  `json:"end"`
	Spend     int64   `json:"spend_krw"`
	Revenue   int64   `json:"revenue_krw"`
	ROAS      float64 `json:"roas"`
	Channels  int     `json:"channels"`
}

// Campaigns lists the campaigns that ran in the period, best ROAS first.
func (s *Service) Campaigns(ctx context.Context, spec string) ([]CampaignResult, error) {
	p, err := s.ResolvePeriod(spec)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, c.name, c.objective, c.category, c.start_date, c.end_date,
		SUM(d.spend), SUM(d.revenue), COUNT(DISTINCT d.channel_id)
		FROM campaigns c JOIN channel_daily d ON d.campaign_id = c.id
		WHERE d.day BETWEEN ? AND ? GROUP BY c.id ORDER BY c.start_date`, p.From, p.To)
	if err != nil {
		return nil, fmt.Errorf("marketing: campaigns: %w", err)
	}
	defer rows.Close()
	var out []CampaignResult
	for rows.Next() {
		var c CampaignResult
		if err := rows.Scan(&c.ID, &c.Name, &c.Objective, &c.Category, &c.Start, &c.End, &c.Spend, &c.Revenue, &c.Channels); err != nil {
			return nil, fmt.Errorf("marketing: campaigns: %w", err)
		}
		c.ROAS = round2(ratio(float64(c.Revenue), float64(c.Spend)))
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &NoDataError{What: "campaigns", Period: p}
	}
	slices.SortStableFunc(out, func(a, b CampaignResult) int { return cmp.Compare(b.ROAS, a.ROAS) })
	return out, nil
}

// Segment is a customer segment.
type Segment struct {
	ID               string   `json:"id"`
	Name             string   `json:"name"`
	Size             int64    `json:"size"`
	AOV              int64    `json:"aov"`
	RepurchaseRate   float64  `json:"repurchase_rate"`
	Growth           float64  `json:"growth"`
	PreferredChannel string   `json:"preferred_channel"`
	Interests        []string `json:"interests"`
	// Value is the segment's expected revenue per year: size × order
	// value × (1 + repurchase rate).
	Value int64 `json:"value_krw"`
}

// Segments lists the customer segments, most valuable first.
func (s *Service) Segments(ctx context.Context) ([]Segment, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, size, aov, repurchase_rate, growth, preferred_channel, interests FROM segments ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("marketing: segments: %w", err)
	}
	defer rows.Close()
	var out []Segment
	for rows.Next() {
		var g Segment
		var interests string
		if err := rows.Scan(&g.ID, &g.Name, &g.Size, &g.AOV, &g.RepurchaseRate, &g.Growth, &g.PreferredChannel, &interests); err != nil {
			return nil, fmt.Errorf("marketing: segments: %w", err)
		}
		if err := json.Unmarshal([]byte(interests), &g.Interests); err != nil {
			return nil, fmt.Errorf("marketing: segment %s: interests: %w", g.ID, err)
		}
		g.Value = int64(float64(g.Size*g.AOV) * (1 + g.RepurchaseRate))
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Segment) int { return cmp.Compare(b.Value, a.Value) })
	return out, nil
}

// ChannelInsights are the findings drawn from a channel report.
type ChannelInsights struct {
	Period Period `json:"period"`
	// ByROAS ranks the channels by return on ad spend.
	ByROAS []ChannelMetrics `json:"by_roas"`
	// Findings are the observations, in words.
	Findings []string `json:"findings"`
	// Scale, Keep and Cut sort the channels by what to do with their
	// budget: above the average ROAS and growing, about average, below.
	Scale []string `json:"scale"`
	Keep  []string `json:"keep"`
	Cut   []string `json:"cut"`
	// AvgROAS is the period's overall ROAS.
	AvgROAS float64 `json:"avg_roas"`
	// MonthlySpend is the period's average spend per 30 days.
	MonthlySpend int64 `json:"monthly_spend_krw"`
}

// AnalyzeChannels draws the findings of a channel report: channels ranked
// by ROAS, the best and the weakest, what grew and what fell, and which
// budgets to scale, keep or cut.
func AnalyzeChannels(r *ChannelReport) (*ChannelInsights, error) {
	if r == nil || len(r.Channels) == 0 {
		return nil, &InputError{Field: "report", Value: "empty", Expected: "a channel report with at least one channel"}
	}
	in := &ChannelInsights{Period: r.Period, AvgROAS: r.Total.ROAS}
	in.ByROAS = slices.Clone(r.Channels)
	slices.SortStableFunc(in.ByROAS, func(a, b ChannelMetrics) int { return cmp.Compare(b.ROAS, a.ROAS) })
	best, worst := in.ByROAS[0], in.ByROAS[len(in.ByROAS)-1]
	top := slices.MaxFunc(r.Channels, func(a, b ChannelMetrics) int { return cmp.Compare(a.Revenue, b.Revenue) })
	in.Findings = append(in.Findings,
		fmt.Sprintf("전체 매출 %s원, 광고비 %s원, ROAS %.2f", won(r.Total.Revenue), won(r.Total.Spend), r.Total.ROAS),
		fmt.Sprintf("매출 1위 채널은 %s(매출 비중 %.0f%%)", top.Name, top.RevenueShare*100),
		fmt.Sprintf("ROAS가 가장 높은 채널은 %s(%.2f), 가장 낮은 채널은 %s(%.2f)", best.Name, best.ROAS, worst.Name, worst.ROAS))
	for _, m := range in.ByROAS {
		if m.RevenueChange != nil && math.Abs(*m.RevenueChange) >= 0.1 {
			dir := "증가"
			if *m.RevenueChange < 0 {
				dir = "감소"
			}
			in.Findings = append(in.Findings, fmt.Sprintf("%s 매출이 직전 동기간 대비 %.0f%% %s", m.Name, math.Abs(*m.RevenueChange)*100, dir))
		}
		switch {
		case m.ROAS >= r.Total.ROAS*1.15 && (m.ROASChange == nil || *m.ROASChange > -0.05):
			in.Scale = append(in.Scale, m.Channel)
		case m.ROAS < r.Total.ROAS*0.8:
			in.Cut = append(in.Cut, m.Channel)
		default:
			in.Keep = append(in.Keep, m.Channel)
		}
	}
	from, to := parseDay(r.Period.From), parseDay(r.Period.To)
	days := to.Sub(from).Hours()/24 + 1
	in.MonthlySpend = int64(float64(r.Total.Spend) / days * 30)
	return in, nil
}

// won formats an amount of won with thousands separators.
func won(v int64) string {
	s := fmt.Sprint(v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
