package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"
)

// maxPrompt bounds a question read from standard input: far more than
// any model's context, and a stop for `weft run - < /dev/urandom`.
const maxPrompt = 16 << 20

// Errors of readPrompt.
var (
	// errNoPrompt means no question was given.
	errNoPrompt = errors.New("run takes the question to ask")
	// errEmptyPrompt means the question is empty or only whitespace.
	errEmptyPrompt = errors.New("the question is empty")
)

// readPrompt returns the question to ask: the arguments, joined by
// spaces; or standard input when the only argument is "-", or when there
// are none and standard input is not a terminal (a pipe or a file), so a
// question may be longer than one argument can be (128 KB on Linux).
func readPrompt(args []string, stdin io.Reader) (string, error) {
	const example = `e.g. weft run --agent career "UX 디자이너가 되려면?", or echo "..." | weft run --agent career`
	fromStdin := len(args) == 1 && args[0] == "-"
	if len(args) > 1 && slices.Contains(args, "-") {
		return "", errors.New("- reads the question from standard input; pass it alone, not with other words")
	}
	if len(args) == 0 {
		if isTerminal(stdin) {
			return "", fmt.Errorf("%w, as an argument or on standard input; %s", errNoPrompt, example)
		}
		fromStdin = true
	}
	if !fromStdin {
		q := strings.Join(args, " ")
		if strings.TrimSpace(q) == "" {
			return "", fmt.Errorf("%w (only whitespace); ask something, %s", errEmptyPrompt, example)
		}
		return q, nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxPrompt+1))
	if err != nil {
		return "", fmt.Errorf("reading the question from standard input: %w", err)
	}
	if len(b) > maxPrompt {
		return "", fmt.Errorf("the question on standard input is longer than %d MB", maxPrompt>>20)
	}
	q := strings.TrimSpace(string(b))
	if q == "" {
		if len(args) == 0 {
			return "", fmt.Errorf("%w, as an argument or on standard input, and standard input held none; %s", errNoPrompt, example)
		}
		return "", fmt.Errorf("%w: standard input (-) held only whitespace; %s", errEmptyPrompt, example)
	}
	return q, nil
}

// isTerminal reports whether r is a terminal.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
