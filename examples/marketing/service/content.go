package service

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ProposalInput is what a campaign proposal is drawn from. Insights is
// required; the rest sharpen it when given.
type ProposalInput struct {
	// Month is the month the campaign runs, a period spec ("next_month",
	// "2026-03").
	Month string
	// Budget is the month's budget in won; 0 takes the analysed period's
	// monthly spend.
	Budget    int64
	Insights  *ChannelInsights
	Segments  []Segment
	Sentiment *SentimentReport
	Inventory *InventoryReport
}

// Allocation is a channel's share of a proposal's budget.
type Allocation struct {
	Channel string  `json:"channel"`
	Name    string  `json:"name"`
	Budget  int64   `json:"budget_krw"`
	Share   float64 `json:"share"`
	Reason  string  `json:"reason"`
	// ExpectedRevenue is the budget times the channel's ROAS.
	ExpectedRevenue int64 `json:"expected_revenue_krw"`
}

// CampaignProposal is a month's campaign plan.
type CampaignProposal struct {
	Period          Period       `json:"period"`
	Title           string       `json:"title"`
	Budget          int64        `json:"budget_krw"`
	Allocations     []Allocation `json:"allocations"`
	ExpectedRevenue int64        `json:"expected_revenue_krw"`
	ExpectedROAS    float64      `json:"expected_roas"`
	Targets         []string     `json:"target_segments"`
	Messages        []string     `json:"key_messages"`
	Products        []string     `json:"hero_products,omitempty"`
	KPIs            []string     `json:"kpis"`
	Risks           []string     `json:"risks,omitempty"`
}

// ProposeCampaign plans a month's campaign: the budget goes to the
// channels by their ROAS (channels to scale get more, channels to cut
// less), the targets are the most valuable and fastest-growing segments,
// and the messages come from what reviews praise.
func (s *Service) ProposeCampaign(ctx context.Context, in ProposalInput) (*CampaignProposal, error) {
	if in.Insights == nil || len(in.Insights.ByROAS) == 0 {
		return nil, &InputError{Field: "insights", Value: "none", Expected: "the channel insights of an analysed period"}
	}
	p, err := s.ResolvePeriod(cmp.Or(in.Month, "next_month"))
	if err != nil {
		return nil, err
	}
	budget := in.Budget
	if budget == 0 {
		// The analysed period's monthly spend, in round 100,000 won.
		budget = int64(math.Round(float64(in.Insights.MonthlySpend)/100_000) * 100_000)
	}
	if budget <= 0 {
		return nil, &InputError{Field: "budget_krw", Value: budget, Expected: "a positive amount of won"}
	}
	weight := func(m ChannelMetrics) (float64, string) {
		switch {
		case slices.Contains(in.Insights.Scale, m.Channel):
			return m.ROAS * 1.3, fmt.Sprintf("ROAS %.2f로 평균(%.2f)보다 높아 증액", m.ROAS, in.Insights.AvgROAS)
		case slices.Contains(in.Insights.Cut, m.Channel):
			return m.ROAS * 0.5, fmt.Sprintf("ROAS %.2f로 평균보다 낮아 감액", m.ROAS)
		}
		return m.ROAS, fmt.Sprintf("ROAS %.2f, 평균 수준으로 유지", m.ROAS)
	}
	// Every channel keeps at least minShare of the budget, so that a
	// channel cut this month still has data next month.
	const minShare = 0.05
	var total float64
	for _, m := range in.Insights.ByROAS {
		w, _ := weight(m)
		total += w
	}
	shares := make([]float64, len(in.Insights.ByROAS))
	var rest float64
	for i, m := range in.Insights.ByROAS {
		w, _ := weight(m)
		shares[i] = max(w/total, minShare)
		rest += shares[i]
	}
	prop := &CampaignProposal{Period: p, Budget: budget, Title: p.Label + " 통합 캠페인"}
	var spent int64
	for i, m := range in.Insights.ByROAS {
		_, why := weight(m)
		b := int64(math.Round(float64(budget)*shares[i]/rest/10000) * 10000)
		if i == len(in.Insights.ByROAS)-1 {
			b = budget - spent // the rounding's remainder
		}
		spent += b
		a := Allocation{Channel: m.Channel, Name: m.Name, Budget: b, Share: round4(float64(b) / float64(budget)), Reason: why,
			ExpectedRevenue: int64(float64(b) * m.ROAS)}
		prop.ExpectedRevenue += a.ExpectedRevenue
		prop.Allocations = append(prop.Allocations, a)
	}
	prop.ExpectedROAS = round2(ratio(float64(prop.ExpectedRevenue), float64(budget)))
	segs := slices.Clone(in.Segments)
	slices.SortStableFunc(segs, func(a, b Segment) int {
		return cmp.Compare(float64(b.Value)*(1+b.Growth), float64(a.Value)*(1+a.Growth))
	})
	for _, g := range segs {
		if len(prop.Targets) < 2 && g.Growth >= 0 {
			prop.Targets = append(prop.Targets, fmt.Sprintf("%s (선호 채널 %s, 연 성장 %.0f%%)", g.Name, g.PreferredChannel, g.Growth*100))
		}
	}
	if in.Sentiment != nil && len(in.Sentiment.Praise) > 0 {
		prop.Messages = append(prop.Messages, "고객이 꼽은 강점 강조: "+strings.Join(in.Sentiment.Praise, ", "))
	}
	if in.Sentiment != nil && len(in.Sentiment.Complaints) > 0 {
		prop.Messages = append(prop.Messages, "불만 요인 선제 대응: "+strings.Join(in.Sentiment.Complaints, ", "))
		prop.Risks = append(prop.Risks, "리뷰 불만("+strings.Join(in.Sentiment.Complaints, ", ")+")이 광고 유입 고객의 전환을 낮출 수 있음")
	}
	if len(prop.Messages) == 0 {
		prop.Messages = append(prop.Messages, "상위 채널 성과 소재를 중심으로 메시지 일원화")
	}
	if in.Inventory != nil {
		for _, st := range in.Inventory.Products {
			if st.Promotable && len(prop.Products) < 3 {
				prop.Products = append(prop.Products, st.Name)
			}
			if st.Reorder {
				prop.Risks = append(prop.Risks, fmt.Sprintf("%s 재고가 %.0f일분으로 프로모션 전 재입고 필요", st.Name, st.DaysOfCover))
			}
		}
	}
	prop.KPIs = []string{
		fmt.Sprintf("ROAS %.2f 이상", prop.ExpectedROAS),
		fmt.Sprintf("매출 %s원 이상", won(prop.ExpectedRevenue)),
		"상위 2개 채널 CPA 직전 분기 대비 10% 개선",
	}
	return prop, nil
}

// ReportInput is what a report is written from: any of the analyses.
type ReportInput struct {
	Title       string
	Brand       string
	Performance *ChannelReport
	Insights    *ChannelInsights
	Proposal    *CampaignProposal
	Segments    []Segment
	Sentiment   *SentimentReport
	Competitors []*CompetitorReport
	Inventory   *InventoryReport
}

// Report is a written report.
type Report struct {
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
	// Sections names the sections written.
	Sections []string `json:"sections"`
}

// WriteReport writes a Markdown report with a section per analysis given.
func WriteReport(in ReportInput) (*Report, error) {
	title := cmp.Or(strings.TrimSpace(in.Title), "마케팅 분석 보고서")
	var b strings.Builder
	r := &Report{Title: title}
	fmt.Fprintf(&b, "# %s\n\n", title)
	if in.Brand != "" {
		fmt.Fprintf(&b, "_%s 마케팅팀_\n\n", in.Brand)
	}
	section := func(name string) {
		r.Sections = append(r.Sections, name)
		fmt.Fprintf(&b, "## %s\n\n", name)
	}
	if in.Insights != nil {
		section("요약")
		for _, f := range in.Insights.Findings {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	if in.Performance != nil {
		section(fmt.Sprintf("채널별 성과 (%s, %s ~ %s)", in.Performance.Period.Label, in.Performance.Period.From, in.Performance.Period.To))
		b.WriteString("| 채널 | 광고비 | 매출 | 매출 비중 | CTR | CVR | CPA | ROAS | 매출 증감 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, m := range append(slices.Clone(in.Performance.Channels), in.Performance.Total) {
			change := "-"
			if m.RevenueChange != nil {
				change = fmt.Sprintf("%+.0f%%", *m.RevenueChange*100)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f%% | %.2f%% | %.2f%% | %s | %.2f | %s |\n", m.Name, won(m.Spend), won(m.Revenue),
				m.RevenueShare*100, m.CTR*100, m.CVR*100, won(int64(m.CPA)), m.ROAS, change)
		}
		b.WriteString("\n")
	}
	if in.Insights != nil && (len(in.Insights.Scale)+len(in.Insights.Cut)) > 0 {
		section("예산 시사점")
		fmt.Fprintf(&b, "- 증액: %s\n- 유지: %s\n- 감액: %s\n\n", list(in.Insights.Scale), list(in.Insights.Keep), list(in.Insights.Cut))
	}
	if in.Sentiment != nil {
		section(fmt.Sprintf("리뷰 감성 (%s, %d건)", in.Sentiment.Scope, in.Sentiment.Reviews))
		fmt.Fprintf(&b, "긍정 %d · 중립 %d · 부정 %d (감성 점수 %.2f)\n\n", in.Sentiment.Positive, in.Sentiment.Neutral, in.Sentiment.Negative, in.Sentiment.Score)
		fmt.Fprintf(&b, "- 칭찬: %s\n- 불만: %s\n\n", list(in.Sentiment.Praise), list(in.Sentiment.Complaints))
	}
	if len(in.Segments) > 0 {
		section("고객 세그먼트")
		b.WriteString("| 세그먼트 | 규모 | 객단가 | 재구매율 | 성장률 | 선호 채널 |\n|---|---:|---:|---:|---:|---|\n")
		for _, g := range in.Segments {
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f%% | %+.0f%% | %s |\n", g.Name, won(g.Size), won(g.AOV), g.RepurchaseRate*100, g.Growth*100, g.PreferredChannel)
		}
		b.WriteString("\n")
	}
	for _, c := range in.Competitors {
		section("경쟁사 비교: " + c.Category)
		for _, f := range c.Findings {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	if in.Inventory != nil && len(in.Inventory.Reorder) > 0 {
		section("재고")
		for _, st := range in.Inventory.Products {
			if st.Reorder {
				fmt.Fprintf(&b, "- %s: %.0f일분 (리드타임 %d일) — 재입고 필요\n", st.Name, st.DaysOfCover, st.LeadDays)
			}
		}
		b.WriteString("\n")
	}
	if p := in.Proposal; p != nil {
		section(fmt.Sprintf("캠페인 제안: %s (%s ~ %s)", p.Title, p.Period.From, p.Period.To))
		fmt.Fprintf(&b, "총 예산 %s원, 예상 매출 %s원 (예상 ROAS %.2f)\n\n", won(p.Budget), won(p.ExpectedRevenue), p.ExpectedROAS)
		b.WriteString("| 채널 | 예산 | 비중 | 예상 매출 | 근거 |\n|---|---:|---:|---:|---|\n")
		for _, a := range p.Allocations {
			fmt.Fprintf(&b, "| %s | %s | %.0f%% | %s | %s |\n", a.Name, won(a.Budget), a.Share*100, won(a.ExpectedRevenue), a.Reason)
		}
		fmt.Fprintf(&b, "\n- 타깃: %s\n- 핵심 메시지: %s\n", list(p.Targets), list(p.Messages))
		if len(p.Products) > 0 {
			fmt.Fprintf(&b, "- 주력 상품: %s\n", list(p.Products))
		}
		fmt.Fprintf(&b, "- KPI: %s\n", list(p.KPIs))
		if len(p.Risks) > 0 {
			fmt.Fprintf(&b, "- 리스크: %s\n", list(p.Risks))
		}
		b.WriteString("\n")
	}
	if len(r.Sections) == 0 {
		return nil, &InputError{Field: "inputs", Value: "none", Expected: "at least one analysis to report on"}
	}
	r.Markdown = b.String()
	return r, nil
}

func list(s []string) string {
	if len(s) == 0 {
		return "없음"
	}
	return strings.Join(s, ", ")
}

// Tones are the tones ad copy can take.
var Tones = []string{"friendly", "premium", "urgent"}

// AdCopy is ad copy for a product and a segment.
type AdCopy struct {
	Product  string   `json:"product"`
	Segment  string   `json:"segment"`
	Tone     string   `json:"tone"`
	Variants []AdText `json:"variants"`
	Markdown string   `json:"markdown"`
}

// AdText is one variant.
type AdText struct {
	Headline string `json:"headline"`
	Body     string `json:"body"`
	CTA      string `json:"cta"`
}

// WriteAdCopy drafts three variants of ad copy for a product aimed at a
// segment, from the product's features and what reviews praise.
func (s *Service) WriteAdCopy(ctx context.Context, productID, segmentID, tone string) (*AdCopy, error) {
	if !slices.Contains(Tones, tone) {
		return nil, &InputError{Field: "tone", Value: tone, Expected: "one of " + strings.Join(Tones, ", ")}
	}
	p, err := s.Product(ctx, productID)
	if err != nil {
		return nil, err
	}
	segs, err := s.Segments(ctx)
	if err != nil {
		return nil, err
	}
	var seg *Segment
	var known []string
	for i := range segs {
		known = append(known, segs[i].ID)
		if segs[i].ID == segmentID {
			seg = &segs[i]
		}
	}
	if seg == nil {
		return nil, &NotFoundError{Kind: "segment", Query: segmentID, Known: known}
	}
	praise := []string{}
	if rep, err := s.ReviewSentiment(ctx, ReviewQuery{Product: productID}); err == nil {
		praise = rep.Praise
	}
	cta := map[string]string{"friendly": "지금 만나보기", "premium": "컬렉션 보기", "urgent": "오늘만 특가 확인"}[tone]
	lead := map[string]string{"friendly": "", "premium": "프리미엄 ", "urgent": "[한정 특가] "}[tone]
	ac := &AdCopy{Product: p.Name, Segment: seg.Name, Tone: tone}
	for i, f := range p.Features {
		if i == 3 {
			break
		}
		body := fmt.Sprintf("%s을(를) 위한 %s. %s", seg.Name, p.Name, f)
		if i < len(praise) {
			body += fmt.Sprintf(" — 고객이 먼저 말하는 '%s'", praise[i])
		}
		ac.Variants = append(ac.Variants, AdText{Headline: lead + f + ", " + p.Name, Body: body, CTA: cta})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# 광고 카피: %s × %s (%s)\n\n", p.Name, seg.Name, tone)
	for i, v := range ac.Variants {
		fmt.Fprintf(&b, "## 안 %d\n\n**%s**\n\n%s\n\n[%s]\n\n", i+1, v.Headline, v.Body, v.CTA)
	}
	ac.Markdown = b.String()
	return ac, nil
}

// SalesMaterial is a one-page sales sheet for a product.
type SalesMaterial struct {
	Product  string `json:"product"`
	Markdown string `json:"markdown"`
}

// WriteSalesMaterial writes a product's sales sheet: features, price
// against competitors, what reviews say, and stock.
func (s *Service) WriteSalesMaterial(ctx context.Context, productID string) (*SalesMaterial, error) {
	p, err := s.Product(ctx, productID)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s · %s원\n\n## 특징\n\n", p.Name, p.Category, won(p.Price))
	for _, f := range p.Features {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	if rep, err := s.ReviewSentiment(ctx, ReviewQuery{Product: productID}); err == nil {
		fmt.Fprintf(&b, "\n## 고객 반응 (최근 1년 리뷰 %d건)\n\n긍정 비율 %.0f%%, 칭찬 키워드: %s\n", rep.Reviews, float64(rep.Positive)/float64(rep.Reviews)*100, list(rep.Praise))
	}
	if comp, err := s.CompareCompetitors(ctx, p.Category); err == nil {
		fmt.Fprintf(&b, "\n## 시장 비교\n\n")
		for _, f := range comp.Findings {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	if inv, err := s.Inventory(ctx, productID, ""); err == nil && len(inv.Products) == 1 {
		st := inv.Products[0]
		fmt.Fprintf(&b, "\n## 공급\n\n재고 %s개, 약 %.0f일분", won(st.Stock), st.DaysOfCover)
		if st.Reorder {
			b.WriteString(" (재입고 필요)")
		}
		b.WriteString("\n")
	}
	return &SalesMaterial{Product: p.Name, Markdown: b.String()}, nil
}
