package sqldb

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	_ "modernc.org/sqlite"
)

func openTemp(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func inTx(t *testing.T, db *sql.DB, fn func(*sql.Tx)) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	fn(tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A statement is prepared once and reused by later transactions; past the
// cache's bound statements still run, unprepared.
func TestStmtCache(t *testing.T) {
	db := openTemp(t)
	var c StmtCache
	ctx := context.Background()
	for i := range 3 {
		inTx(t, db, func(tx *sql.Tx) {
			if _, err := (Std{Q: Cached{Tx: tx, DB: db, Cache: &c}}).Exec(ctx, `INSERT INTO t (v) VALUES ($1)`, i); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(c.m) != 1 {
		t.Errorf("%d statements cached, want 1", len(c.m))
	}
	inTx(t, db, func(tx *sql.Tx) {
		q := Std{Q: Cached{Tx: tx, DB: db, Cache: &c}}
		for i := range maxCachedStmts + 10 {
			// Distinct texts, as statements built for one call are.
			if _, err := q.Exec(ctx, `INSERT INTO t (v) VALUES (`+strconv.Itoa(i)+`)`); err != nil {
				t.Fatal(err)
			}
		}
		// ExecBatch's statements come from the cache too, and closing them
		// leaves the cached ones prepared.
		if err := q.ExecBatch(ctx, []Stmt{{Query: `INSERT INTO t (v) VALUES ($1)`, Args: []any{1}}, {Query: `INSERT INTO t (v) VALUES ($1)`, Args: []any{2}}}); err != nil {
			t.Fatal(err)
		}
	})
	if len(c.m) != maxCachedStmts {
		t.Errorf("%d statements cached, want the bound %d", len(c.m), maxCachedStmts)
	}
	if got, want := count(t, db), 3+maxCachedStmts+10+2; got != want {
		t.Errorf("%d rows, want %d", got, want)
	}
	inTx(t, db, func(tx *sql.Tx) {
		if _, err := (Std{Q: Cached{Tx: tx, DB: db, Cache: &c}}).Exec(ctx, `INSERT INTO t (v) VALUES ($1)`, 9); err != nil {
			t.Fatalf("the cached statement after ExecBatch closed its copy: %v", err)
		}
	})
}

// With Ctx set, a statement runs under it, not under the context it is
// given: a caller's cancelling does not reach a shared transaction.
func TestCachedCtx(t *testing.T) {
	db := openTemp(t)
	var c StmtCache
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	inTx(t, db, func(tx *sql.Tx) {
		if _, err := (Std{Q: Cached{Tx: tx, DB: db, Cache: &c, Ctx: context.Background()}}).Exec(cancelled, `INSERT INTO t (v) VALUES (1)`); err != nil {
			t.Fatalf("with Ctx: %v", err)
		}
		if _, err := (Std{Q: Cached{Tx: tx, DB: db, Cache: &c}}).Exec(cancelled, `INSERT INTO t (v) VALUES (2)`); err == nil {
			t.Fatal("without Ctx a cancelled context ran the statement")
		}
	})
}

// With Bound, statements run under Ctx while Bound lasts, and fail with
// Bound's error once it ended, without running.
func TestCachedBound(t *testing.T) {
	db := openTemp(t)
	var cache StmtCache
	bound, cancel := context.WithCancel(context.Background())
	inTx(t, db, func(tx *sql.Tx) {
		c := Cached{Tx: tx, DB: db, Cache: &cache, Ctx: context.WithoutCancel(bound), Bound: bound}
		if _, err := c.ExecContext(context.Background(), `INSERT INTO t (v) VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := c.ExecContext(context.Background(), `INSERT INTO t (v) VALUES (2)`); err != context.Canceled {
			t.Errorf("exec after Bound ended: %v, want context.Canceled", err)
		}
		if _, err := c.QueryContext(context.Background(), `SELECT v FROM t`); err != context.Canceled {
			t.Errorf("query after Bound ended: %v, want context.Canceled", err)
		}
		if _, err := c.PrepareContext(context.Background(), `SELECT v FROM t`); err != context.Canceled {
			t.Errorf("prepare after Bound ended: %v, want context.Canceled", err)
		}
	})
	if n := count(t, db); n != 1 {
		t.Errorf("%d rows, want the one inserted before Bound ended", n)
	}
}
