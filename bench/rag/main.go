// Command rag measures document retrieval (package rag) on the
// workflow-guide knowledge base, examples/guide/kb, and its labelled query
// set, examples/guide/kb/testdata/queries.json.
//
// Quality: for each analyzer and each mode (lexical, vector, hybrid with
// relative-score fusion, hybrid with reciprocal-rank fusion) it prints
// recall@k, nDCG@k and MRR over all queries and over the Korean and the
// English ones. Then it adds generated filler documents (Korean and English
// prose over a shared work vocabulary, words drawn with Zipf's law from a
// fixed seed) until the index holds --chunks chunks, prints the time the
// build took, the quality again (the filler are distractors), and the
// latency of Index.Search per mode: p50, p90 and p99 over --searches
// searches cycling through the query set.
//
// One JSON line per figure:
//
//	{"bench":"quality","corpus":"kb","chunks","analyzer","fusion","mode","subset","queries","k","recall","ndcg","mrr"}
//	{"bench":"build","chunks","seconds"}
//	{"bench":"latency","chunks","mode","searches","p50_ms","p90_ms","p99_ms"}
//
// Usage:
//
//	go run ./bench/rag [--chunks 10000] [--searches 750] [--k 5]
//	    [--embed-model text-embedding-3-small --embed-dims 1536 [--embed-url URL]]
//
// Without --embed-model vectors come from the offline embed.Lexical; with
// it, from an OpenAI-compatible server (OPENAI_API_KEY, --embed-url).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/embed"
	"github.com/weftlabs/weft/embed/openai"
	"github.com/weftlabs/weft/examples/guide/kb"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/rag/eval"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rag:", err)
		os.Exit(1)
	}
}

type options struct {
	chunks, searches, k int
	queries             string
	newEmbedder         func() (embed.Embedder, error)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rag", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.chunks, "chunks", 10000, "chunks in the latency corpus (knowledge base plus filler)")
	fs.IntVar(&o.searches, "searches", 750, "searches timed per mode")
	fs.IntVar(&o.k, "k", 5, "results judged per query")
	fs.StringVar(&o.queries, "queries", filepath.Join("examples", "guide", "kb", "testdata", "queries.json"), "the labelled query set")
	model := fs.String("embed-model", "", "an OpenAI-compatible embedding model (default: the offline lexical embedder)")
	dims := fs.Int("embed-dims", 0, "the model's vector length")
	url := fs.String("embed-url", "", "the embedding server's /v1 URL (default OpenAI)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.newEmbedder = func() (embed.Embedder, error) { return embed.NewLexical(0), nil }
	if *model != "" {
		o.newEmbedder = func() (embed.Embedder, error) {
			return openai.New(openai.Config{Model: *model, Dims: *dims, BaseURL: *url})
		}
	}
	f, err := os.Open(o.queries)
	if err != nil {
		return err
	}
	qs, err := eval.Load(f)
	f.Close()
	if err != nil {
		return err
	}
	docs, err := kb.Documents()
	if err != nil {
		return err
	}
	out := json.NewEncoder(stdout)
	fmt.Fprintf(stderr, "%d documents, %d queries, GOMAXPROCS %d, %s\n", len(docs), len(qs), runtime.GOMAXPROCS(0), runtime.Version())

	// Quality on the knowledge base alone. Vectors do not depend on the
	// analyzer, so vector search is reported once.
	for _, an := range []string{rag.AnalyzerKoEn, rag.AnalyzerCJK, rag.AnalyzerStandard} {
		ix, err := build(ctx, o, rag.Config{Analyzer: an}, docs)
		if err != nil {
			return err
		}
		runs := []struct {
			m  rag.Mode
			fu rag.FusionMethod
		}{{rag.Lexical, ""}, {rag.Vector, ""}, {rag.Hybrid, rag.ScoreFusion}, {rag.Hybrid, rag.RRF}}
		for _, r := range runs {
			if r.m == rag.Vector && an != rag.AnalyzerKoEn {
				continue
			}
			if err := quality(ctx, out, ix, qs, "kb", an, r.fu, r.m, o.k); err != nil {
				return err
			}
		}
		ix.Close()
	}

	// The latency corpus: the knowledge base plus filler.
	start := time.Now()
	ix, err := build(ctx, o, rag.Config{}, docs)
	if err != nil {
		return err
	}
	defer ix.Close()
	filler := fillerDocs(o.chunks - ix.Len())
	for len(filler) > 0 {
		n := min(len(filler), 1000)
		if err := ix.Add(ctx, filler[:n]...); err != nil {
			return err
		}
		filler = filler[n:]
	}
	for i := 0; ix.Len() < o.chunks; i++ {
		// Filler documents are one chunk each, so this is rarely needed.
		if err := ix.Add(ctx, fillerDocs(o.chunks - ix.Len() + i)[i:]...); err != nil {
			return err
		}
	}
	if err := out.Encode(map[string]any{"bench": "build", "chunks": ix.Len(), "seconds": round(time.Since(start).Seconds())}); err != nil {
		return err
	}
	for _, r := range []struct {
		m  rag.Mode
		fu rag.FusionMethod
	}{{rag.Lexical, ""}, {rag.Vector, ""}, {rag.Hybrid, rag.ScoreFusion}, {rag.Hybrid, rag.RRF}} {
		if err := quality(ctx, out, ix, qs, "kb+filler", rag.AnalyzerKoEn, r.fu, r.m, o.k); err != nil {
			return err
		}
	}
	for _, m := range []rag.Mode{rag.Lexical, rag.Vector, rag.Hybrid} {
		// Warm up once over the query set.
		for _, q := range qs {
			if _, err := ix.Search(ctx, q.Query, rag.SearchOptions{K: o.k, Mode: m}); err != nil {
				return err
			}
		}
		times := make([]time.Duration, o.searches)
		for i := range o.searches {
			q := qs[i%len(qs)]
			t0 := time.Now()
			if _, err := ix.Search(ctx, q.Query, rag.SearchOptions{K: o.k, Mode: m}); err != nil {
				return err
			}
			times[i] = time.Since(t0)
		}
		slices.Sort(times)
		pct := func(p float64) float64 {
			return round(float64(times[int(p*float64(len(times)-1))].Microseconds()) / 1000)
		}
		if err := out.Encode(map[string]any{
			"bench": "latency", "chunks": ix.Len(), "mode": m, "searches": o.searches,
			"p50_ms": pct(0.5), "p90_ms": pct(0.9), "p99_ms": pct(0.99),
		}); err != nil {
			return err
		}
	}
	return nil
}

func build(ctx context.Context, o options, cfg rag.Config, docs []rag.Document) (*rag.Index, error) {
	e, err := o.newEmbedder()
	if err != nil {
		return nil, err
	}
	cfg.Embedder = e
	ix, err := rag.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := ix.Add(ctx, docs...); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

func quality(ctx context.Context, out *json.Encoder, ix *rag.Index, qs []eval.Query, corpus, analyzer string, fu rag.FusionMethod, m rag.Mode, k int) error {
	subsets := []struct {
		name string
		keep func(eval.Query) bool
	}{
		{"all", func(eval.Query) bool { return true }},
		{"ko", func(q eval.Query) bool { return q.Language == "ko" }},
		{"en", func(q eval.Query) bool { return q.Language == "en" }},
		{"same-language", func(q eval.Query) bool { return !q.CrossLingual }},
	}
	for _, s := range subsets {
		var sub []eval.Query
		for _, q := range qs {
			if s.keep(q) {
				sub = append(sub, q)
			}
		}
		opts := rag.SearchOptions{Mode: m}
		if fu != "" {
			opts.Fusion = &rag.Fusion{Method: fu}
		}
		res, err := eval.Run(ctx, ix, sub, opts, k)
		if err != nil {
			return err
		}
		line := map[string]any{
			"bench": "quality", "corpus": corpus, "chunks": ix.Len(), "analyzer": analyzer, "mode": m,
			"subset": s.name, "queries": res.Queries, "k": k,
			"recall": round(res.Recall), "ndcg": round(res.NDCG), "mrr": round(res.MRR),
		}
		if fu != "" {
			line["fusion"] = fu
		}
		if err := out.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

func round(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// Words of the filler text: the vocabulary of office work the knowledge
// base uses too, so the filler competes with it for the same terms.
var (
	koWords = strings.Fields(`데이터 보고서 계획 도구 회의 고객 일정 예산 승인 검토 팀 프로젝트 작업 결과 요청 문서 설정 분석 지표 매출
		자동화 업무 관리 담당자 공유 정리 요약 검색 저장 기록 시간 비용 계산 품질 개선 목표 단계 절차 기준 방법 사용자 서비스 제품 영상
		콘텐츠 마케팅 일정표 주간 월간 분기 연간 발표 자료 교육 온보딩 계정 권한 보안 백업 복구 알림 메일 메신저 서버 배포 테스트 오류
		재시도 로그 모니터링 대시보드 파일 형식 표 차트 초안 피드백 수정 완료 진행 대기 우선순위 마감 담당 부서 협업 외부 내부 정책
		를 을 이 가 은 는 에서 으로 와 과 하고 합니다 했습니다 있습니다 필요합니다 확인합니다 준비합니다 진행합니다 공유합니다`)
	enWords = strings.Fields(`data report plan tool meeting customer schedule budget approval review team project task result request
		document setting analysis metric revenue automation work owner share summary search store record time cost quality goal step
		process standard method user service product video content marketing weekly monthly quarterly slide training onboarding
		account permission security backup restore alert mail chat server release test error retry log monitoring dashboard file
		format table chart draft feedback change done waiting priority deadline department external internal policy
		the a of to and in for with on by is are was be will should can the the of and to a`)
)

// fillerDocs returns n generated documents of one chunk each, alternating
// Korean and English, the same for every run.
func fillerDocs(n int) []rag.Document {
	r := rand.New(rand.NewPCG(7, 11))
	zko := rand.NewZipf(r, 1.1, 1, uint64(len(koWords)-1))
	zen := rand.NewZipf(r, 1.1, 1, uint64(len(enWords)-1))
	docs := make([]rag.Document, 0, max(n, 0))
	for i := range max(n, 0) {
		ko := i%2 == 0
		var b strings.Builder
		for s := range 3 + r.IntN(4) {
			if s > 0 {
				b.WriteByte(' ')
			}
			for w := range 6 + r.IntN(9) {
				if w > 0 {
					b.WriteByte(' ')
				}
				if ko {
					b.WriteString(koWords[zko.Uint64()])
				} else {
					b.WriteString(enWords[zen.Uint64()])
				}
			}
			b.WriteByte('.')
		}
		lang, words := "en", enWords
		if ko {
			lang, words = "ko", koWords
		}
		docs = append(docs, rag.Document{
			ID: fmt.Sprintf("filler-%05d", i), Source: "filler.json", Language: lang,
			Title: words[r.IntN(40)] + " " + words[r.IntN(40)], Text: b.String(),
		})
	}
	return docs
}
