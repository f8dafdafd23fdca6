package service

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Period is a range of days, From to To inclusive ("2026-01-01").
type Period struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Label string `json:"label"`
}

// PeriodSpecs are the relative periods ResolvePeriod understands, besides
// "YYYY-Qn", "YYYY-MM" and "YYYY-MM-DD..YYYY-MM-DD".
var PeriodSpecs = []string{"last_quarter", "this_quarter", "last_month", "this_month", "next_month", "last_30_days", "last_90_days", "last_year"}

var (
	quarterSpec = regexp.MustCompile(`^(\d{4})-Q([1-4])$`)
	monthSpec   = regexp.MustCompile(`^(\d{4})-(0[1-9]|1[0-2])$`)
	rangeSpec   = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$`)
)

// ResolvePeriod turns a period spec into days, relative to now.
func (s *Service) ResolvePeriod(spec string) (Period, error) {
	return resolvePeriod(spec, s.now().In(kst))
}

func resolvePeriod(spec string, now time.Time) (Period, error) {
	spec = strings.TrimSpace(spec)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, kst)
	qStart := func(t time.Time) time.Time {
		return time.Date(t.Year(), time.Month((int(t.Month())-1)/3*3+1), 1, 0, 0, 0, 0, kst)
	}
	mStart := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, kst) }
	mk := func(from, to time.Time, label string) Period {
		return Period{From: from.Format(dateLayout), To: to.Format(dateLayout), Label: label}
	}
	quarterLabel := func(t time.Time) string { return fmt.Sprintf("%d년 %d분기", t.Year(), (int(t.Month())-1)/3+1) }
	switch spec {
	case "last_quarter":
		start := qStart(today).AddDate(0, -3, 0)
		return mk(start, start.AddDate(0, 3, -1), quarterLabel(start)), nil
	case "this_quarter":
		start := qStart(today)
		return mk(start, today.AddDate(0, 0, -1), quarterLabel(start)+" (진행 중)"), nil
	case "last_month":
		start := mStart(today).AddDate(0, -1, 0)
		return mk(start, start.AddDate(0, 1, -1), start.Format("2006년 1월")), nil
	case "this_month":
		start := mStart(today)
		return mk(start, today.AddDate(0, 0, -1), start.Format("2006년 1월")+" (진행 중)"), nil
	case "next_month":
		start := mStart(today).AddDate(0, 1, 0)
		return mk(start, start.AddDate(0, 1, -1), start.Format("2006년 1월")), nil
	case "last_30_days":
		return mk(today.AddDate(0, 0, -30), today.AddDate(0, 0, -1), "최근 30일"), nil
	case "last_90_days":
		return mk(today.AddDate(0, 0, -90), today.AddDate(0, 0, -1), "최근 90일"), nil
	case "last_year":
		return mk(today.AddDate(-1, 0, 0), today.AddDate(0, 0, -1), "최근 1년"), nil
	}
	if m := quarterSpec.FindStringSubmatch(spec); m != nil {
		y, _ := strconv.Atoi(m[1])
		q, _ := strconv.Atoi(m[2])
		start := time.Date(y, time.Month(3*q-2), 1, 0, 0, 0, 0, kst)
		return mk(start, start.AddDate(0, 3, -1), quarterLabel(start)), nil
	}
	if m := monthSpec.FindStringSubmatch(spec); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		start := time.Date(y, time.Month(mo), 1, 0, 0, 0, 0, kst)
		return mk(start, start.AddDate(0, 1, -1), start.Format("2006년 1월")), nil
	}
	if m := rangeSpec.FindStringSubmatch(spec); m != nil {
		from, err1 := time.ParseInLocation(dateLayout, m[1], kst)
		to, err2 := time.ParseInLocation(dateLayout, m[2], kst)
		if err1 == nil && err2 == nil && !to.Before(from) {
			return mk(from, to, m[1]+" ~ "+m[2]), nil
		}
	}
	return Period{}, &InputError{Field: "period", Value: spec,
		Expected: strings.Join(PeriodSpecs, ", ") + `, "YYYY-Qn", "YYYY-MM" or "YYYY-MM-DD..YYYY-MM-DD"`}
}

// previous returns the period of the same length just before p.
func previous(p Period) Period {
	from, _ := time.ParseInLocation(dateLayout, p.From, kst)
	to, _ := time.ParseInLocation(dateLayout, p.To, kst)
	days := int(to.Sub(from).Hours()/24) + 1
	pt := from.AddDate(0, 0, -1)
	pf := from.AddDate(0, 0, -days)
	return Period{From: pf.Format(dateLayout), To: pt.Format(dateLayout), Label: "직전 동기간"}
}
