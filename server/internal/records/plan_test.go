package records

import (
	"context"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/internal/pgtest"
)

// TestRunQueriesPlans checks, on PostgreSQL, the plans of the statements
// every run makes on weft_server_runs, as a new database has them (no
// statistics yet) and as prepared statements get them (generic plans):
// a run's status update goes by its primary key, and the thread's active
// runs are read through the thread's index, never through the partial
// index of active runs, whose every entry the scan would visit (with the
// index of schema version 1, each of them did).
func TestRunQueriesPlans(t *testing.T) {
	ctx := context.Background()
	d, err := postgres.Open(ctx, pgtest.NewDatabase(t, "weft_records_"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := OpenPostgres(ctx, d.Pool(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := d.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET plan_cache_mode`)
	for i, tc := range []struct {
		name, query, args, index string
	}{
		{"run status", setRunStatusSQL, `('success', 1, 'r', 'w')`, "weft_server_runs_pkey"},
		{"thread settled", `UPDATE weft_server_threads SET ` + settledStatus + `, updated_at = $4 WHERE thread_id = $1`, `('t', 'r', 'idle', 1)`, "weft_server_runs_thread"},
		{"thread and active runs", threadAndActiveRunsSQL, `('t', '')`, "weft_server_runs_thread"},
	} {
		name := "plan_test_" + string(rune('a'+i))
		if _, err := conn.Exec(ctx, `PREPARE `+name+` AS `+tc.query); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+name+tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, tc.index) || strings.Contains(text, "weft_server_runs_active") || strings.Contains(text, "weft_server_runs_orphans") {
			t.Errorf("%s: want a plan through %s only, got\n%s", tc.name, tc.index, text)
		}
	}
}
