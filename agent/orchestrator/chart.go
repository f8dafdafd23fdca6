package orchestrator

import (
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// ErrInvalidChart means a Chart cannot be drawn: no labels, no series, or
// a series whose values do not match the labels.
var ErrInvalidChart = errors.New("orchestrator: invalid chart")

// chartColors are the series' colours, repeated when there are more.
var chartColors = []string{"#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#e53935", "#00acc1"}

// SVG draws c as a grouped bar chart in SVG: a bar per label and series,
// a value axis from zero (or from the lowest value, when it is below
// zero), the labels under the bars and a legend for several series.
func (c Chart) SVG() ([]byte, error) {
	if len(c.Labels) == 0 || len(c.Series) == 0 {
		return nil, fmt.Errorf("%w %q: it needs labels and at least one series", ErrInvalidChart, c.Title)
	}
	lo, hi := 0.0, 0.0
	for _, s := range c.Series {
		if len(s.Values) != len(c.Labels) {
			return nil, fmt.Errorf("%w %q: series %q has %d values for %d labels", ErrInvalidChart, c.Title, s.Name, len(s.Values), len(c.Labels))
		}
		for _, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w %q: series %q has a value that is not a number", ErrInvalidChart, c.Title, s.Name)
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step

	const (
		width, height = 720, 400
		left, right   = 70, 20
		top, bottom   = 50, 80
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	y := func(v float64) float64 { return top + plotH*(hi-v)/(hi-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	// Grid lines and the value axis.
	for v := lo; v <= hi+step/2; v += step {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, width-right, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y(v), esc(formatValue(v)))
	}
	if c.Unit != "" {
		fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, top+plotH/2, esc(c.Unit))
	}
	group := plotW / float64(len(c.Labels))
	barW := group * 0.8 / float64(len(c.Series))
	for i, label := range c.Labels {
		x0 := float64(left) + group*float64(i) + group*0.1
		for j, s := range c.Series {
			v := s.Values[i]
			y1, y2 := y(max(v, 0)), y(min(v, 0))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
				x0+barW*float64(j), y1, barW, math.Max(y2-y1, 0.5), chartColors[j%len(chartColors)], esc(s.Name+" · "+label), esc(formatValue(v)))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x0+group*0.4, height-bottom+18, esc(label))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#616161"/>`+"\n", left, width-right, y(0), y(0))
	if len(c.Series) > 1 {
		for j, s := range c.Series {
			lx := left + j*150
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", lx, height-30, chartColors[j%len(chartColors)])
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+18, height-20, esc(s.Name))
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String()), nil
}

// niceStep rounds a raw grid step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func esc(s string) string { return html.EscapeString(s) }
