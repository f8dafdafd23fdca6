package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// MaxResponseBytes: zero takes the default bound, a negative number none.
func TestNewCallMaxBytes(t *testing.T) {
	for _, tc := range []struct{ given, want int64 }{
		{0, DefaultMaxResponseBytes},
		{-1, 0},
		{1000, 1000},
	} {
		c, _ := NewCall("p", llm.Timeouts{}, 0, llm.RetryPolicy{}, nil, tc.given, nil)
		if c.MaxBytes != tc.want {
			t.Errorf("MaxResponseBytes %d: bound %d, want %d", tc.given, c.MaxBytes, tc.want)
		}
	}
}

// A stream line longer than the SDKs' scanner takes is an invalid
// response, not an unexplained scanner error.
func TestErrTooLong(t *testing.T) {
	att := Start(context.Background(), llm.Timeouts{})
	defer att.End()
	err := att.Err("openai", fmt.Errorf("decoding: %w", bufio.ErrTooLong))
	if !errors.Is(err, llm.ErrInvalidResponse) || !errors.Is(err, bufio.ErrTooLong) {
		t.Errorf("err = %v, want ErrInvalidResponse wrapping bufio.ErrTooLong", err)
	}
}
