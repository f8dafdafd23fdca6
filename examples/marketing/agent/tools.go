// Package agent is the marketing agent of design document 003 on the
// orchestrator (agent/orchestrator): typed tools that adapt the marketing
// service, grouped into document 003's four domain executors (data,
// insight, content, operations), and the agent's configuration in YAML
// (marketing.yaml: approvals, tools, prompts).
//
// The tools are thin adapters (document 000's second layer): they check
// arguments, call the service, and wrap its result in the tool envelope,
// turning the service's typed errors into error codes. A tool that works
// on the results of earlier todos (an analysis of collected metrics, a
// report over analyses) reads them with orchestrator.InputData. No
// business logic lives here.
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/examples/marketing/service"
	"github.com/weftlabs/weft/tool"
)

// Tool names, by executor.
const (
	// data
	CollectChannelMetrics = "collect_channel_metrics"
	GetMetricTrend        = "get_metric_trend"
	ListCampaigns         = "list_campaigns"
	GetCustomerSegments   = "get_customer_segments"
	// insight
	AnalyzeChannelPerformance = "analyze_channel_performance"
	AnalyzeReviewSentiment    = "analyze_review_sentiment"
	CompareCompetitors        = "compare_competitors"
	// content
	DraftCampaignProposal = "draft_campaign_proposal"
	DraftReport           = "draft_report"
	DraftAdCopy           = "draft_ad_copy"
	// operations
	CheckInventory      = "check_inventory"
	CreateSalesMaterial = "create_sales_material"
)

// Error codes the tools put in the envelope.
const (
	CodeInvalidInput = "INVALID_INPUT"
	CodeNotFound     = "NOT_FOUND"
	CodeNoData       = "NO_DATA"
	CodeNeedsInput   = "NEEDS_INPUT"
)

// periodPattern is what service.ResolvePeriod accepts.
const periodPattern = `^(last_quarter|this_quarter|last_month|this_month|next_month|last_30_days|last_90_days|last_year|\d{4}-Q[1-4]|\d{4}-(0[1-9]|1[0-2])|\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2})$`

const periodHelp = "기간: last_quarter(지난 분기), this_quarter, last_month, this_month, last_30_days, last_90_days, last_year, 2025-Q4, 2025-11, 2025-10-01..2025-12-31"

// PeriodArgs selects a period.
type PeriodArgs struct {
	Period string `json:"period" jsonschema:"the period"`
}

// TrendArgs are the arguments of get_metric_trend.
type TrendArgs struct {
	Channel string `json:"channel" jsonschema:"a channel id, or all"`
	Metric  string `json:"metric" jsonschema:"the metric"`
	Months  int    `json:"months" jsonschema:"how many full months back, 1 to 12"`
}

// NoArgs is the argument of tools that take none.
type NoArgs struct{}

// AnalysisArgs are the arguments of analyze_channel_performance.
type AnalysisArgs struct {
	Period string `json:"period,omitempty" jsonschema:"the period to collect when no collect_channel_metrics result comes before; default last_quarter"`
}

// ReviewArgs are the arguments of analyze_review_sentiment.
type ReviewArgs struct {
	Period    string `json:"period,omitempty" jsonschema:"the period; default last_year"`
	Category  string `json:"category,omitempty" jsonschema:"a product category, or empty for all"`
	ProductID string `json:"product_id,omitempty" jsonschema:"a product id, or empty"`
}

// CategoryArgs select a product category.
type CategoryArgs struct {
	Category string `json:"category" jsonschema:"a product category"`
}

// ProposalArgs are the arguments of draft_campaign_proposal.
type ProposalArgs struct {
	Month  string `json:"month" jsonschema:"the month the campaign runs: next_month or YYYY-MM"`
	Budget int64  `json:"budget_krw,omitempty" jsonschema:"the month's budget in won; 0 or absent takes the analysed period's monthly spend"`
}

// ReportArgs are the arguments of draft_report.
type ReportArgs struct {
	Title string `json:"title" jsonschema:"the report's title"`
}

// AdCopyArgs are the arguments of draft_ad_copy.
type AdCopyArgs struct {
	ProductID string `json:"product_id" jsonschema:"the product"`
	SegmentID string `json:"segment_id" jsonschema:"the customer segment"`
	Tone      string `json:"tone" jsonschema:"friendly, premium or urgent"`
}

// InventoryArgs are the arguments of check_inventory.
type InventoryArgs struct {
	ProductID string `json:"product_id,omitempty" jsonschema:"one product, or empty"`
	Category  string `json:"category,omitempty" jsonschema:"one category, or empty for every product"`
}

// ProductArgs select a product.
type ProductArgs struct {
	ProductID string `json:"product_id" jsonschema:"the product"`
}

// SegmentList is what get_customer_segments returns.
type SegmentList struct {
	Segments []service.Segment `json:"segments"`
}

// Executors groups the tools over svc into document 003's four domain
// executors. The tools' enums (channels, products, segments, categories)
// come from the service's data.
func Executors(ctx context.Context, svc *service.Service) ([]orchestrator.Executor, error) {
	products, err := svc.Products(ctx, "")
	if err != nil {
		return nil, err
	}
	segments, err := svc.Segments(ctx)
	if err != nil {
		return nil, err
	}
	categories, err := svc.Categories(ctx)
	if err != nil {
		return nil, err
	}
	var productIDs, segmentIDs []any
	var productHelp, segmentHelp []string
	for _, p := range products {
		productIDs = append(productIDs, p.ID)
		productHelp = append(productHelp, p.ID+" "+p.Name)
	}
	for _, g := range segments {
		segmentIDs = append(segmentIDs, g.ID)
		segmentHelp = append(segmentHelp, g.ID+" "+g.Name)
	}
	channels := []any{"search", "social", "display", "video", "email", "affiliate", "all"}
	enum := func(name string, values []any, help string, optional bool) func(*jsonschema.Schema) {
		return func(s *jsonschema.Schema) {
			p := s.Properties[name]
			p.Enum = values
			if optional {
				p.Enum = append([]any{""}, values...)
			}
			if help != "" {
				p.Description += " (" + help + ")"
			}
		}
	}
	period := func(name string) func(*jsonschema.Schema) {
		return func(s *jsonschema.Schema) {
			p := s.Properties[name]
			p.Pattern = periodPattern
			p.Description += " — " + periodHelp
		}
	}
	schema := func(fns ...func(*jsonschema.Schema)) tool.Options {
		return tool.Options{Schema: func(s *jsonschema.Schema) {
			for _, fn := range fns {
				fn(s)
			}
		}}
	}
	anyOf := func(vs []string) []any {
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v
		}
		return out
	}
	optionalPeriod := func(name string) func(*jsonschema.Schema) {
		return func(s *jsonschema.Schema) {
			p := s.Properties[name]
			p.Pattern = "^(|" + periodPattern[1:len(periodPattern)-1] + ")$"
			p.Description += " — " + periodHelp
		}
	}
	metrics := anyOf(service.Metrics)

	data := []*tool.Tool{
		tool.New(CollectChannelMetrics, "채널별 광고 성과(노출, 클릭, 전환, 광고비, 매출, CTR, CVR, CPA, ROAS)와 직전 동기간 대비 증감을 수집합니다. Collects every channel's ad performance for a period.",
			func(ctx context.Context, in PeriodArgs) (*service.ChannelReport, error) {
				r, err := svc.ChannelPerformance(ctx, in.Period)
				if err != nil {
					return nil, toolError(err)
				}
				tool.SetMeta(ctx, "channels", len(r.Channels))
				return r, nil
			}, schema(period("period"))),
		tool.New(GetMetricTrend, "채널(또는 전체)의 지표를 월별 추이로 가져옵니다. Gets a metric of a channel by month.",
			func(ctx context.Context, in TrendArgs) (*service.Trend, error) {
				t, err := svc.MetricTrend(ctx, in.Channel, in.Metric, in.Months)
				if err != nil {
					return nil, toolError(err)
				}
				labels := make([]string, len(t.Points))
				values := make([]float64, len(t.Points))
				for i, p := range t.Points {
					labels[i], values[i] = p.Month, p.Value
				}
				tool.SetMeta(ctx, orchestrator.MetaChart, orchestrator.Chart{Title: fmt.Sprintf("%s %s 월별 추이", in.Channel, in.Metric), Labels: labels,
					Series: []orchestrator.ChartSeries{{Name: in.Metric, Values: values}}})
				return t, nil
			}, schema(enum("channel", channels, "", false), enum("metric", metrics, "", false), func(s *jsonschema.Schema) {
				p := s.Properties["months"]
				p.Minimum, p.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(12.0)
			})),
		tool.New(ListCampaigns, "기간 중 집행된 캠페인과 캠페인별 광고비, 매출, ROAS를 가져옵니다. Lists the campaigns that ran in a period.",
			func(ctx context.Context, in PeriodArgs) ([]service.CampaignResult, error) {
				cs, err := svc.Campaigns(ctx, in.Period)
				if err != nil {
					return nil, toolError(err)
				}
				return cs, nil
			}, schema(period("period"))),
		tool.New(GetCustomerSegments, "고객 세그먼트(규모, 객단가, 재구매율, 성장률, 선호 채널, 관심사)를 가져옵니다. Gets the customer segments.",
			func(ctx context.Context, _ NoArgs) (*SegmentList, error) {
				gs, err := svc.Segments(ctx)
				if err != nil {
					return nil, toolError(err)
				}
				return &SegmentList{Segments: gs}, nil
			}),
	}
	insight := []*tool.Tool{
		tool.New(AnalyzeChannelPerformance, "수집된 채널 성과를 분석합니다: ROAS 순위, 주요 발견, 증액/유지/감액 채널. collect_channel_metrics 결과를 입력으로 씁니다. Analyses collected channel performance.",
			func(ctx context.Context, in AnalysisArgs) (*service.ChannelInsights, error) {
				reports, err := orchestrator.InputData[service.ChannelReport](ctx, CollectChannelMetrics)
				if err != nil {
					return nil, &tool.Error{Code: CodeInvalidInput, Message: err.Error()}
				}
				var r *service.ChannelReport
				if len(reports) > 0 {
					r = &reports[0]
				} else if r, err = svc.ChannelPerformance(ctx, cmp.Or(in.Period, "last_quarter")); err != nil {
					return nil, toolError(err)
				}
				ins, err := service.AnalyzeChannels(r)
				if err != nil {
					return nil, toolError(err)
				}
				labels := make([]string, len(ins.ByROAS))
				roas := make([]float64, len(ins.ByROAS))
				for i, m := range ins.ByROAS {
					labels[i], roas[i] = m.Name, m.ROAS
				}
				tool.SetMeta(ctx, orchestrator.MetaChart, orchestrator.Chart{Title: "채널별 ROAS (" + r.Period.Label + ")", Labels: labels, Unit: "ROAS",
					Series: []orchestrator.ChartSeries{{Name: "ROAS", Values: roas}}})
				return ins, nil
			}, schema(optionalPeriod("period"))),
		tool.New(AnalyzeReviewSentiment, "상품 리뷰의 감성(긍정/중립/부정)과 키워드(칭찬, 불만)를 분석합니다. Analyses review sentiment and keywords.",
			func(ctx context.Context, in ReviewArgs) (*service.SentimentReport, error) {
				r, err := svc.ReviewSentiment(ctx, service.ReviewQuery{Product: in.ProductID, Category: in.Category, Period: in.Period})
				if err != nil {
					return nil, toolError(err)
				}
				tool.SetMeta(ctx, orchestrator.MetaChart, orchestrator.Chart{Title: "리뷰 감성: " + r.Scope, Labels: []string{"긍정", "중립", "부정"},
					Series: []orchestrator.ChartSeries{{Name: "리뷰 수", Values: []float64{float64(r.Positive), float64(r.Neutral), float64(r.Negative)}}}})
				return r, nil
			}, schema(optionalPeriod("period"), enum("category", anyOf(categories), "", true), enum("product_id", productIDs, strings.Join(productHelp, ", "), true))),
		tool.New(CompareCompetitors, "카테고리별로 자사와 경쟁사의 가격, 평점, 프로모션을 비교합니다. Compares prices, ratings and promotions with competitors.",
			func(ctx context.Context, in CategoryArgs) (*service.CompetitorReport, error) {
				r, err := svc.CompareCompetitors(ctx, in.Category)
				if err != nil {
					return nil, toolError(err)
				}
				return r, nil
			}, schema(enum("category", anyOf(categories), "", false))),
	}
	content := []*tool.Tool{
		tool.New(DraftCampaignProposal, "채널 분석(analyze_channel_performance), 고객 세그먼트, 리뷰 감성, 재고 결과를 바탕으로 한 달 캠페인 안(채널별 예산, 타깃, 메시지, KPI)을 작성합니다. Drafts a month's campaign proposal from the analyses before it.",
			func(ctx context.Context, in ProposalArgs) (*service.CampaignProposal, error) {
				pin, err := proposalInput(ctx, svc, in)
				if err != nil {
					return nil, err
				}
				p, err := svc.ProposeCampaign(ctx, pin)
				if err != nil {
					return nil, toolError(err)
				}
				labels := make([]string, len(p.Allocations))
				budgets := make([]float64, len(p.Allocations))
				for i, a := range p.Allocations {
					labels[i], budgets[i] = a.Name, float64(a.Budget)/10000
				}
				tool.SetMeta(ctx, orchestrator.MetaChart, orchestrator.Chart{Title: p.Title + " 채널별 예산", Labels: labels, Unit: "만원",
					Series: []orchestrator.ChartSeries{{Name: "예산(만원)", Values: budgets}}})
				return p, nil
			}, schema(func(s *jsonschema.Schema) {
				s.Properties["month"].Pattern = `^(next_month|\d{4}-(0[1-9]|1[0-2]))$`
				s.Properties["budget_krw"].Minimum = jsonschema.Ptr(0.0)
			})),
		tool.New(DraftReport, "앞선 할 일들의 결과(성과, 분석, 세그먼트, 리뷰, 경쟁사, 재고, 캠페인 안)로 마크다운 보고서를 작성합니다. Writes a Markdown report from the results before it.",
			func(ctx context.Context, in ReportArgs) (*service.Report, error) {
				rin, err := reportInput(ctx, svc, in.Title)
				if err != nil {
					return nil, err
				}
				r, err := service.WriteReport(rin)
				if err != nil {
					return nil, &tool.Error{Code: CodeNeedsInput, Message: "draft_report needs the results of analyses before it (depends_on): " + err.Error(), Err: err}
				}
				tool.SetMeta(ctx, orchestrator.MetaDocument, orchestrator.Document{Title: r.Title, Markdown: r.Markdown})
				return r, nil
			}, schema(func(s *jsonschema.Schema) { s.Properties["title"].MinLength = jsonschema.Ptr(1) })),
		tool.New(DraftAdCopy, "상품과 고객 세그먼트에 맞춘 광고 카피 3안을 작성합니다. Drafts three ad copy variants.",
			func(ctx context.Context, in AdCopyArgs) (*service.AdCopy, error) {
				a, err := svc.WriteAdCopy(ctx, in.ProductID, in.SegmentID, in.Tone)
				if err != nil {
					return nil, toolError(err)
				}
				tool.SetMeta(ctx, orchestrator.MetaDocument, orchestrator.Document{Title: "광고 카피: " + a.Product, Markdown: a.Markdown})
				return a, nil
			}, schema(enum("product_id", productIDs, strings.Join(productHelp, ", "), false), enum("segment_id", segmentIDs, strings.Join(segmentHelp, ", "), false),
				enum("tone", anyOf(service.Tones), "", false))),
	}
	operations := []*tool.Tool{
		tool.New(CheckInventory, "상품 재고, 소진 예상 일수, 재입고 필요 여부, 프로모션 가능 여부를 확인합니다. Checks stock and days of cover.",
			func(ctx context.Context, in InventoryArgs) (*service.InventoryReport, error) {
				r, err := svc.Inventory(ctx, in.ProductID, in.Category)
				if err != nil {
					return nil, toolError(err)
				}
				return r, nil
			}, schema(enum("product_id", productIDs, strings.Join(productHelp, ", "), true), enum("category", anyOf(categories), "", true))),
		tool.New(CreateSalesMaterial, "상품 판매 자료(특징, 고객 반응, 시장 비교, 공급)를 한 장으로 작성합니다. Writes a product's sales sheet.",
			func(ctx context.Context, in ProductArgs) (*service.SalesMaterial, error) {
				m, err := svc.WriteSalesMaterial(ctx, in.ProductID)
				if err != nil {
					return nil, toolError(err)
				}
				tool.SetMeta(ctx, orchestrator.MetaDocument, orchestrator.Document{Title: "판매 자료: " + m.Product, Markdown: m.Markdown})
				return m, nil
			}, schema(enum("product_id", productIDs, strings.Join(productHelp, ", "), false))),
	}
	return []orchestrator.Executor{
		{Name: "data", Description: "데이터 수집: 채널 성과, 지표 추이, 캠페인, 고객 세그먼트", Tools: data},
		{Name: "insight", Description: "분석: 채널 성과 분석, 리뷰 감성과 키워드, 경쟁사 비교", Tools: insight},
		{Name: "content", Description: "콘텐츠 생성: 캠페인 안, 보고서, 광고 카피", Tools: content},
		{Name: "operations", Description: "운영: 재고 확인, 판매 자료", Tools: operations},
	}, nil
}

// proposalInput gathers what a proposal is drawn from: the results of the
// todos before it, or, for what none gave, the service's own data.
func proposalInput(ctx context.Context, svc *service.Service, in ProposalArgs) (service.ProposalInput, error) {
	pin := service.ProposalInput{Month: in.Month, Budget: in.Budget}
	insights, err := orchestrator.InputData[service.ChannelInsights](ctx, AnalyzeChannelPerformance)
	if err != nil {
		return pin, &tool.Error{Code: CodeInvalidInput, Message: err.Error()}
	}
	if len(insights) > 0 {
		pin.Insights = &insights[0]
	} else {
		r, err := svc.ChannelPerformance(ctx, "last_quarter")
		if err != nil {
			return pin, toolError(err)
		}
		if pin.Insights, err = service.AnalyzeChannels(r); err != nil {
			return pin, toolError(err)
		}
	}
	if segs, err := orchestrator.InputData[SegmentList](ctx, GetCustomerSegments); err == nil && len(segs) > 0 {
		pin.Segments = segs[0].Segments
	} else if pin.Segments, err = svc.Segments(ctx); err != nil {
		return pin, toolError(err)
	}
	if sent, err := orchestrator.InputData[service.SentimentReport](ctx, AnalyzeReviewSentiment); err == nil && len(sent) > 0 {
		pin.Sentiment = &sent[0]
	}
	if inv, err := orchestrator.InputData[service.InventoryReport](ctx, CheckInventory); err == nil && len(inv) > 0 {
		pin.Inventory = &inv[0]
	}
	return pin, nil
}

// reportInput gathers the results of the todos before a report.
func reportInput(ctx context.Context, svc *service.Service, title string) (service.ReportInput, error) {
	rin := service.ReportInput{Title: title, Brand: svc.Brand()}
	var errs []error
	if v, err := orchestrator.InputData[service.ChannelReport](ctx, CollectChannelMetrics); len(v) > 0 {
		rin.Performance = &v[0]
	} else if err != nil {
		errs = append(errs, err)
	}
	if v, err := orchestrator.InputData[service.ChannelInsights](ctx, AnalyzeChannelPerformance); len(v) > 0 {
		rin.Insights = &v[0]
	} else if err != nil {
		errs = append(errs, err)
	}
	if v, err := orchestrator.InputData[service.CampaignProposal](ctx, DraftCampaignProposal); len(v) > 0 {
		rin.Proposal = &v[0]
	} else if err != nil {
		errs = append(errs, err)
	}
	if v, err := orchestrator.InputData[SegmentList](ctx, GetCustomerSegments); len(v) > 0 {
		rin.Segments = v[0].Segments
	} else if err != nil {
		errs = append(errs, err)
	}
	if v, err := orchestrator.InputData[service.SentimentReport](ctx, AnalyzeReviewSentiment); len(v) > 0 {
		rin.Sentiment = &v[0]
	} else if err != nil {
		errs = append(errs, err)
	}
	if v, err := orchestrator.InputData[service.CompetitorReport](ctx, CompareCompetitors); err == nil {
		for i := range v {
			rin.Competitors = append(rin.Competitors, &v[i])
		}
	} else {
		errs = append(errs, err)
	}
	if v, err := orchestrator.InputData[service.InventoryReport](ctx, CheckInventory); len(v) > 0 {
		rin.Inventory = &v[0]
	} else if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return rin, &tool.Error{Code: CodeInvalidInput, Message: err.Error(), Err: err}
	}
	return rin, nil
}

// toolError turns the service's typed errors into envelope codes the
// model can act on.
func toolError(err error) error {
	code := ""
	switch {
	case errors.Is(err, service.ErrInvalidInput):
		code = CodeInvalidInput
	case errors.Is(err, service.ErrNotFound):
		code = CodeNotFound
	case errors.Is(err, service.ErrNoData):
		code = CodeNoData
	default:
		return err
	}
	return &tool.Error{Code: code, Message: err.Error(), Err: err}
}
