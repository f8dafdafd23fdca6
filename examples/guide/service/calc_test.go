package service_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/weftlabs/weft/examples/guide/service"
)

func TestEval(t *testing.T) {
	tests := []struct {
		expr string
		want float64
	}{
		{"1 + 2", 3},
		{"(49 * 12) * 0.8", 470.4},
		{"0.1 + 0.2", 0.3},
		{"2 + 3 * 4", 14},
		{"(2 + 3) * 4", 20},
		{"10 / 4", 2.5},
		{"2 ^ 10", 1024},
		{"2 ^ 3 ^ 2", 512}, // right-associative
		{"-2 ^ 2", -4},     // the power binds tighter than the sign
		{"(-2) ^ 2", 4},
		{"2 ^ -1", 0.5},
		{"20%", 0.2},
		{"49 * 12 * 80%", 470.4},
		{"1200 * (1 + 15%)", 1380},
		{"--3", 3},
		{"+3 - -3", 6},
		{".5 + 1.", 1.5},
		{"1e3 * 2", 2000},
		{"2.5E-1", 0.25},
		{"6 × 7 ÷ 2", 21},
		{"10 − 4", 6},
		{" 7 ", 7},
		{"1 - 1", 0},
		{"-0", 0},
	}
	for _, tt := range tests {
		got, err := service.Eval(tt.expr)
		if err != nil {
			t.Errorf("Eval(%q): %v", tt.expr, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Eval(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"1 / 0", "division by zero"},
		{"1 / (2 - 2)", "division by zero"},
		{"0 ^ -1", "division by zero"},
		{"(-8) ^ 0.5", "no real value"},
		{"10 ^ 400", "too large"},
		{"1e400", "too large"},
		{"1,200 * 3", "thousands separators"},
		{"$49 * 12", "currency sign"},
		{"(1 + 2", "never closed"},
		{"1 + 2)", "unexpected ')'"},
		{"1 +", "ends too early"},
		{"2 (3)", "expected an operator"},
		{"abs(3)", "unexpected 'a'"},
		{"1e", "exponent"},
		{"os.Exit(1)", "unexpected 'o'"},
		{strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "nests deeper"},
		{strings.Repeat("1+", 600) + "1", "characters long"},
	}
	for _, tt := range tests {
		_, err := service.Eval(tt.expr)
		if !errors.Is(err, service.ErrInvalidExpression) {
			t.Errorf("Eval(%q) error = %v, want ErrInvalidExpression", tt.expr, err)
			continue
		}
		var ee *service.ExprError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Eval(%q) error = %q, want one saying %q", tt.expr, err, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{470.4: "470.4", 1e6: "1000000", 0.25: "0.25", 1e22: "1e+22", -3: "-3"} {
		if got := service.Format(v); got != want {
			t.Errorf("Format(%v) = %q, want %q", v, got, want)
		}
	}
}

// FuzzEval: any text either evaluates to a finite number or fails with an
// ExprError; it never panics or hangs.
func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2", "(49*12)*0.8", "2^3^2", "20%%", "-(-(1))", "1e308*10", "((((", "1/0", "٣+1", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := service.Eval(s)
		if err != nil {
			var ee *service.ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("Eval(%q) error %v is not an ExprError", s, err)
			}
			return
		}
		if !utf8.ValidString(service.Format(v)) || v != v {
			t.Fatalf("Eval(%q) = %v", s, v)
		}
	})
}
