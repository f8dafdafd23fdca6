// Package service is the workflow-guide agent's business logic (design
// document 004), apart from graphs and models (document 000's first rule):
// an arithmetic evaluator for the calculator tool, the clock for get_time,
// and a web search client for a SearXNG instance.
package service

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidExpression means an expression could not be evaluated: it is
// malformed, divides by zero, or its result is not a finite number. The
// error is an *ExprError naming where and why.
var ErrInvalidExpression = errors.New("invalid expression")

// ExprError says why an expression could not be evaluated.
type ExprError struct {
	// Pos is the rune offset of the problem in the expression (-1 when it
	// is the whole expression's).
	Pos int
	// Msg says what is wrong and what was expected.
	Msg string
}

// Error names the position and the problem.
func (e *ExprError) Error() string {
	if e.Pos < 0 {
		return e.Msg
	}
	return fmt.Sprintf("at character %d: %s", e.Pos+1, e.Msg)
}

// Is makes errors.Is(err, ErrInvalidExpression) true.
func (e *ExprError) Is(target error) bool { return target == ErrInvalidExpression }

// Limits of Eval: a model's expression is a line of arithmetic, and these
// keep a hostile one from costing memory or stack.
const (
	// MaxExpression is the longest expression Eval takes, in runes.
	MaxExpression = 1000
	// maxDepth bounds nested parentheses and operators.
	maxDepth = 300
)

// Eval evaluates an arithmetic expression: numbers (1, 2.5, .5, 1e3), the
// four operations (+ - * /, also × ÷), powers (^, right-associative, binding
// tighter than a leading minus: -2^2 is -4), parentheses, and percentages
// (a number followed by %, 20% is 0.2). It is a parser of these rules
// only: nothing in the expression is run as code. The result is rounded to
// 15 significant digits, so that binary floating point does not show
// (0.1 + 0.2 is 0.3).
func Eval(expr string) (float64, error) {
	if n := utf8.RuneCountInString(expr); n > MaxExpression {
		return 0, &ExprError{Pos: -1, Msg: fmt.Sprintf("the expression is %d characters long; the most is %d", n, MaxExpression)}
	}
	p := &parser{src: []rune(expr)}
	p.skip()
	if p.done() {
		return 0, &ExprError{Pos: -1, Msg: "the expression is empty; write one such as (49 * 12) * 0.8"}
	}
	v, err := p.sum(0)
	if err != nil {
		return 0, err
	}
	if !p.done() {
		return 0, p.unexpected("an operator (+ - * / ^ %) or the end")
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, &ExprError{Pos: -1, Msg: "the result is too large to represent"}
	}
	// Round away binary noise (470.40000000000003 → 470.4).
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	if r == 0 {
		r = 0 // no -0
	}
	return r, nil
}

// Format writes a result as Eval's callers show it: the shortest decimal
// form, without an exponent for everyday magnitudes.
func Format(v float64) string {
	if a := math.Abs(v); a != 0 && (a >= 1e21 || a < 1e-6) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

type parser struct {
	src []rune
	pos int
}

func (p *parser) done() bool { return p.pos >= len(p.src) }

func (p *parser) peek() rune {
	if p.done() {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) skip() {
	for !p.done() && unicode.IsSpace(p.src[p.pos]) {
		p.pos++
	}
}

func (p *parser) unexpected(want string) error {
	if p.done() {
		return &ExprError{Pos: p.pos, Msg: "the expression ends too early; expected " + want}
	}
	c := p.src[p.pos]
	switch {
	case c == ',':
		return &ExprError{Pos: p.pos, Msg: "a comma; write numbers without thousands separators (1200, not 1,200) and decimals with a point"}
	case c == '$' || c == '€' || c == '₩' || c == '£' || c == '¥':
		return &ExprError{Pos: p.pos, Msg: fmt.Sprintf("a currency sign %q; write plain numbers", c)}
	}
	return &ExprError{Pos: p.pos, Msg: fmt.Sprintf("unexpected %q; expected %s", c, want)}
}

func (p *parser) deeper(depth int) error {
	if depth > maxDepth {
		return &ExprError{Pos: p.pos, Msg: fmt.Sprintf("the expression nests deeper than %d levels", maxDepth)}
	}
	return nil
}

// sum: product (('+' | '-') product)*
func (p *parser) sum(depth int) (float64, error) {
	if err := p.deeper(depth); err != nil {
		return 0, err
	}
	v, err := p.product(depth + 1)
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		if op != '+' && op != '-' && op != '−' {
			return v, nil
		}
		p.pos++
		p.skip()
		w, err := p.product(depth + 1)
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
}

// product: unary (('*' | '/' | '×' | '÷') unary)*
func (p *parser) product(depth int) (float64, error) {
	v, err := p.unary(depth + 1)
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		if op != '*' && op != '/' && op != '×' && op != '÷' {
			return v, nil
		}
		at := p.pos
		p.pos++
		p.skip()
		w, err := p.unary(depth + 1)
		if err != nil {
			return 0, err
		}
		if op == '*' || op == '×' {
			v *= w
			continue
		}
		if w == 0 {
			return 0, &ExprError{Pos: at, Msg: "division by zero"}
		}
		v /= w
	}
}

// unary: ('-' | '+') unary | power
func (p *parser) unary(depth int) (float64, error) {
	if err := p.deeper(depth); err != nil {
		return 0, err
	}
	switch p.peek() {
	case '-', '−':
		p.pos++
		p.skip()
		v, err := p.unary(depth + 1)
		return -v, err
	case '+':
		p.pos++
		p.skip()
		return p.unary(depth + 1)
	}
	return p.power(depth + 1)
}

// power: percent ('^' unary)?
func (p *parser) power(depth int) (float64, error) {
	base, err := p.percent(depth + 1)
	if err != nil {
		return 0, err
	}
	if p.peek() != '^' {
		return base, nil
	}
	at := p.pos
	p.pos++
	p.skip()
	exp, err := p.unary(depth + 1)
	if err != nil {
		return 0, err
	}
	v := math.Pow(base, exp)
	if math.IsNaN(v) {
		return 0, &ExprError{Pos: at, Msg: fmt.Sprintf("%s ^ %s has no real value", Format(base), Format(exp))}
	}
	if base == 0 && exp < 0 {
		return 0, &ExprError{Pos: at, Msg: "division by zero (0 to a negative power)"}
	}
	return v, nil
}

// percent: primary '%'*
func (p *parser) percent(depth int) (float64, error) {
	v, err := p.primary(depth + 1)
	if err != nil {
		return 0, err
	}
	for p.peek() == '%' {
		p.pos++
		p.skip()
		v /= 100
	}
	return v, nil
}

// primary: number | '(' sum ')'
func (p *parser) primary(depth int) (float64, error) {
	if p.peek() == '(' {
		open := p.pos
		p.pos++
		p.skip()
		v, err := p.sum(depth + 1)
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			if p.done() {
				return 0, &ExprError{Pos: open, Msg: "this parenthesis is never closed"}
			}
			return 0, p.unexpected("an operator or ')'")
		}
		p.pos++
		p.skip()
		return v, nil
	}
	return p.number()
}

func (p *parser) number() (float64, error) {
	start := p.pos
	digits := false
	for !p.done() && isDigit(p.src[p.pos]) {
		p.pos++
		digits = true
	}
	if p.peek() == '.' {
		p.pos++
		for !p.done() && isDigit(p.src[p.pos]) {
			p.pos++
			digits = true
		}
	}
	if !digits {
		p.pos = start
		return 0, p.unexpected("a number or '('")
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		mark := p.pos
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if p.done() || !isDigit(p.src[p.pos]) {
			p.pos = mark
			return 0, p.unexpected("an operator; an exponent is written 1e3")
		}
		for !p.done() && isDigit(p.src[p.pos]) {
			p.pos++
		}
	}
	v, err := strconv.ParseFloat(string(p.src[start:p.pos]), 64)
	if err != nil {
		// Only a range error is possible here: the syntax was checked.
		return 0, &ExprError{Pos: start, Msg: fmt.Sprintf("the number %s is too large", string(p.src[start:p.pos]))}
	}
	p.skip()
	return v, nil
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// Trim is the expression as the calculator shows it back: its spaces
// collapsed.
func Trim(expr string) string { return strings.Join(strings.Fields(expr), " ") }
