package browser

import (
	"testing"
)

// marketingRequest is the demo script's request.
const marketingRequest = "지난 분기 채널별 성과를 분석하고 다음 달 캠페인 안을 보고서로 만들어 줘"

func TestOrchSmoke(t *testing.T) {
	s := startServer(t, nil)
	p := newPage(t, nil)
	p.open(s.URL + "/")
	p.pick("marketing")
	p.send(marketingRequest)
	p.waitFor("the plan", `!!document.querySelector('[data-testid="orch-plan"]')`)
	p.screenshot("/tmp/shots/plan.png")
	p.click(testid("plan-accept"))
	p.waitFor("the result", `!!document.querySelector('[data-testid="open-report"]')`)
	p.screenshot("/tmp/shots/done.png")
	p.click(testid("open-report"))
	p.waitFor("the report", `document.querySelector('[data-testid="report-body"]')?.dataset.loaded === "true"`)
	p.screenshot("/tmp/shots/report.png")
	t.Log(p.consoleLog())
}
