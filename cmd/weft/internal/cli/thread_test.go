package cli_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
)

// --thread with an id the database does not hold fails, saying how to
// find the saved threads and how to start one under that id, and starts
// no conversation.
func TestRunUnknownThread(t *testing.T) {
	db := runEnv(t)
	model := writeScript(t, "- content: \"반가워요!\"\n")
	out, _, err := execute(t, "run", "--agent", "career", "--model", model, "--thread", "t-typo", "hi")
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, want := range []string{`"t-typo"`, "weft threads list", "--new-thread t-typo"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if out != "" {
		t.Errorf("answered %q", out)
	}
	if msgs := threadTexts(t, db, "t-typo"); len(msgs) != 0 {
		t.Errorf("the mistyped thread was started: %v", msgs)
	}
	// With --db, the hint names the same database.
	_, _, err = execute(t, "run", "--agent", "career", "--model", model, "--db", db, "--thread", "t-typo", "hi")
	if err == nil || !strings.Contains(err.Error(), "weft threads list --db "+db) {
		t.Errorf("err = %v, want a hint with --db %s", err, db)
	}
}

// --new-thread starts a thread under the id given, once; then --thread
// continues it.
func TestRunNewThread(t *testing.T) {
	db := runEnv(t)
	model := func() string { return writeScript(t, "- content: \"반가워요!\"\n") }
	_, info, err := execute(t, "run", "--agent", "career", "--model", model(), "--new-thread", "jimin", "안녕하세요")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info, "thread jimin (new; continue it with --thread jimin)\n") {
		t.Errorf("stderr = %q", info)
	}
	_, _, err = execute(t, "run", "--agent", "career", "--model", model(), "--new-thread", "jimin", "안녕하세요")
	if err == nil || !strings.Contains(err.Error(), `thread already exists: "jimin"`) || !strings.Contains(err.Error(), "continue it with --thread jimin") {
		t.Errorf("second --new-thread jimin: err = %v", err)
	}
	if _, _, err := execute(t, "run", "--agent", "career", "--model", model(), "--thread", "jimin", "안녕하세요"); err != nil {
		t.Fatalf("--thread jimin: %v", err)
	}
	if got := threadTexts(t, db, "jimin"); len(got) != 4 {
		t.Errorf("thread jimin has %d messages, want two turns: %v", len(got), got)
	}
	_, _, err = execute(t, "run", "--agent", "career", "--model", model(), "--thread", "jimin", "--new-thread", "x", "hi")
	if err == nil || !strings.Contains(err.Error(), "none of the others can be") {
		t.Errorf("--thread with --new-thread: err = %v", err)
	}
}

// Database errors name --db when the flag gave the connection string and
// the variable when it did.
func TestRunDBErrorsNameTheirSource(t *testing.T) {
	runEnv(t)
	model := writeScript(t, "- content: \"반가워요!\"\n")
	_, _, err := execute(t, "run", "--agent", "career", "--model", model, "--db", "postgres://", "hi")
	if err == nil || !strings.HasPrefix(err.Error(), "--db: ") || !strings.Contains(err.Error(), "no database name") || strings.Contains(err.Error(), "WEFT_DATABASE_URL") {
		t.Errorf("--db postgres://: err = %v", err)
	}
	t.Setenv("WEFT_DATABASE_URL", "mysql://h/db")
	_, _, err = execute(t, "run", "--agent", "career", "--model", model, "hi")
	if err == nil || !strings.HasPrefix(err.Error(), "$WEFT_DATABASE_URL: ") {
		t.Errorf("$WEFT_DATABASE_URL=mysql://h/db: err = %v", err)
	}
	_, _, err = execute(t, "migrate", "--db", "mysql://h/db")
	if err == nil || !strings.HasPrefix(err.Error(), "--db: ") {
		t.Errorf("migrate --db mysql://h/db: err = %v", err)
	}
}
