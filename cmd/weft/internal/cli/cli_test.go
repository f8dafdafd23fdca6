package cli_test

import (
	"bytes"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/cmd/weft/internal/cli"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/graph"
	_ "modernc.org/sqlite"
)

// execute runs the weft command in-process, as `weft args...` would,
// with nothing on standard input.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return executeIn(t, "", args...)
}

// executeIn runs the weft command in-process with stdin piped to it.
func executeIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := cli.New("v0.0.0-test")
	var out, errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestGraphDraw(t *testing.T) {
	for _, args := range [][]string{
		{"graph", "draw", "approval"},
	} {
		out, _, err := execute(t, args...)
		if err != nil {
			t.Fatalf("weft %s: %v", strings.Join(args, " "), err)
		}
		for _, want := range []string{
			"graph TD;\n",
			"\t__start__([<p>__start__</p>]):::first\n",
			"\tplan(plan)\n",
			"\tapprove(approve)\n",
			"\texecute(execute)\n",
			"\tsummarize(summarize)\n",
			"\t__start__ --> plan;\n",
			"\tplan --> approve;\n",
			"\tapprove -.-> execute;\n",
			"\tapprove -. &nbsp;rejected&nbsp; .-> __end__;\n",
			"\texecute --> summarize;\n",
			"\tsummarize --> __end__;\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("weft %s: output lacks %q:\n%s", strings.Join(args, " "), want, out)
			}
		}
	}
}

// No example graph has a subgraph, so graph draw has no --xray promising
// what it cannot draw. An example with a subgraph fails the first check:
// then --xray earns its place back.
func TestGraphDrawHasNoXRay(t *testing.T) {
	for _, e := range examples.All() {
		g, err := e.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.Mermaid(&graph.MermaidOptions{XRay: true}) != g.Mermaid(nil) {
			t.Errorf("graph %s has a subgraph: give graph draw an --xray flag again", e.Name)
		}
	}
	_, _, err := execute(t, "graph", "draw", "approval", "--xray")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --xray") {
		t.Errorf("graph draw --xray: err = %v, want unknown flag", err)
	}
}

func TestGraphDrawUnknown(t *testing.T) {
	out, _, err := execute(t, "graph", "draw", "nope")
	if !errors.Is(err, examples.ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"nope"`) || !strings.Contains(msg, "known graphs: approval") {
		t.Errorf("error %q should name the graph asked for and list the known ones", msg)
	}
	if out != "" {
		t.Errorf("printed %q on failure", out)
	}
}

func TestGraphDrawNeedsOneName(t *testing.T) {
	_, _, err := execute(t, "graph", "draw")
	if err == nil || !strings.Contains(err.Error(), "known graphs: approval") {
		t.Fatalf("err = %v, want one listing the known graphs", err)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "weft v0.0.0-test (go") {
		t.Errorf("version printed %q", out)
	}
}

// weft migrate creates both schemas in an SQLite file, runs again without
// harm, and names a database URL it cannot use.
func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	for range 2 {
		out, _, err := execute(t, "migrate", "--db", path)
		if err != nil {
			t.Fatalf("weft migrate: %v", err)
		}
		if want := "migrated checkpoints and store in sqlite " + path + "\n"; out != want {
			t.Errorf("output %q, want %q", out, want)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"weft_checkpoints", "store_items"} {
		var n int
		if err := db.QueryRow("select count(*) from sqlite_master where type = 'table' and name = ?", table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: count %d, err %v", table, n, err)
		}
	}
	_, _, err = execute(t, "migrate", "--db", "mysql://somewhere/db")
	if err == nil || !strings.Contains(err.Error(), `unknown database URL scheme in "mysql://somewhere/db"`) {
		t.Errorf("bad scheme: err = %v", err)
	}
}
