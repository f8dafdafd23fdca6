package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the driver Conn runs on in weft
)

// withConn runs fn with a Conn on a connection of a new SQLite file,
// inside (*sql.Conn).Raw, as checkpoint/sqlite's writers do.
func withConn(t *testing.T, fn func(c *Conn)) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var c Conn
	if err := conn.Raw(func(dc any) error {
		if err := c.Use(dc); err != nil {
			return err
		}
		defer c.Close()
		fn(&c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

type status string

func TestConnRunsStatements(t *testing.T) {
	ctx := context.Background()
	withConn(t, func(c *Conn) {
		tx := c.Tx(ctx, nil)
		mustExec := func(q string, args ...any) int64 {
			t.Helper()
			n, err := tx.Exec(ctx, q, args...)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return n
		}
		mustExec(`CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT, b BLOB, f REAL, n INTEGER)`)
		mustExec(`BEGIN IMMEDIATE`)
		// Arguments of the types a driver takes and of others converted
		// as database/sql converts them.
		mustExec(`INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)`, 1, "one", []byte{1}, 1.5, nil)
		mustExec(`INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)`, int32(2), status("two"), json.RawMessage(`{}`), float32(2), true)
		if err := tx.ExecBatch(ctx, []Stmt{
			{Query: `INSERT INTO t VALUES (?1, ?2, NULL, NULL, ?3)`, Args: []any{int64(3), "three", uint64(3)}},
			{Query: `INSERT INTO t VALUES (?1, ?2, NULL, NULL, ?3)`, Args: []any{int64(4), "four", uint32(4)}},
		}); err != nil {
			t.Fatal(err)
		}
		if n := mustExec(`UPDATE t SET n = COALESCE(n, 0) + 1 WHERE k >= ?1`, 2); n != 3 {
			t.Fatalf("UPDATE changed %d rows, want 3", n)
		}
		mustExec(`COMMIT`)

		rows, err := tx.Query(ctx, `SELECT k, s, b, f, n FROM t ORDER BY k`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var k int64
			var s status
			var b []byte
			var f sql.NullFloat64
			var n *int64
			if err := rows.Scan(&k, &s, &b, &f, &n); err != nil {
				t.Fatal(err)
			}
			// The same query again while this one's rows are open takes
			// a statement of its own.
			var count int
			if _, err := QueryRow(ctx, tx, `SELECT count(*) FROM t WHERE k <= ?1`, []any{k}, &count); err != nil {
				t.Fatal(err)
			}
			if inner, err := tx.Query(ctx, `SELECT k, s, b, f, n FROM t ORDER BY k`); err != nil {
				t.Fatal(err)
			} else {
				inner.Close()
			}
			nv := "NULL"
			if n != nil {
				nv = fmt.Sprint(*n)
			}
			got = append(got, fmt.Sprintf("%d:%s:%x:%v:%s:%d", k, s, b, f.Float64, nv, count))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		want := "1:one:01:1.5:NULL:1 2:two:7b7d:2:2:2 3:three::0:4:3 4:four::0:5:4"
		if g := strings.Join(got, " "); g != want {
			t.Fatalf("rows %s, want %s", g, want)
		}
		if n := len(c.stmts); n != 8 {
			t.Errorf("%d statements kept, want 8 (one per distinct query)", n)
		}
	})
}

func TestConnErrors(t *testing.T) {
	ctx := context.Background()
	withConn(t, func(c *Conn) {
		tx := c.Tx(ctx, nil)
		if _, err := tx.Exec(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (?1)`, struct{}{}); err == nil || !strings.Contains(err.Error(), "argument $1") {
			t.Errorf("a struct argument: %v, want an error naming argument $1", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (?1)`, uint64(1<<63)); err == nil {
			t.Error("a uint64 past int64's range was accepted")
		}
		if _, err := tx.Exec(ctx, `INSERT INTO nowhere VALUES (1)`); err == nil || !strings.Contains(err.Error(), "no such table") {
			t.Errorf("a missing table: %v", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
			t.Errorf("a duplicate key: %v", err)
		}
		var s string
		if _, err := QueryRow(ctx, tx, `SELECT NULL`, nil, &s); err == nil || !strings.Contains(err.Error(), "converting NULL to string") {
			t.Errorf("NULL into a string: %v", err)
		}
		var a, b int64
		if _, err := QueryRow(ctx, tx, `SELECT 1`, nil, &a, &b); err == nil || !strings.Contains(err.Error(), "expected 1 destination arguments") {
			t.Errorf("two destinations for one column: %v", err)
		}
		// A bound that ended fails the next statement before it runs.
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := tx.Bounded(ended).Exec(ctx, `INSERT INTO t VALUES (2)`); !errors.Is(err, context.Canceled) {
			t.Errorf("a statement past its bound: %v, want context.Canceled", err)
		}
		if _, err := tx.Bounded(ended).Query(ctx, `SELECT k FROM t`); !errors.Is(err, context.Canceled) {
			t.Errorf("a query past its bound: %v, want context.Canceled", err)
		}
		var n int
		if _, err := QueryRow(ctx, tx, `SELECT count(*) FROM t`, nil, &n); err != nil || n != 1 {
			t.Errorf("%d rows (%v), want 1: a statement past its bound ran", n, err)
		}
	})
}

// Statements past the Conn's bound are prepared for their call only.
func TestConnKeepsBoundedStatements(t *testing.T) {
	ctx := context.Background()
	withConn(t, func(c *Conn) {
		tx := c.Tx(ctx, nil)
		for i := range maxConnStmts + 10 {
			var n int
			if _, err := QueryRow(ctx, tx, fmt.Sprintf(`SELECT %d`, i), nil, &n); err != nil || n != i {
				t.Fatalf("SELECT %d: %d, %v", i, n, err)
			}
		}
		if len(c.stmts) != maxConnStmts {
			t.Fatalf("%d statements kept, want %d", len(c.stmts), maxConnStmts)
		}
	})
}

// A Conn given another driver connection forgets the statements of the
// last (closed with it); one used outside Raw fails.
func TestConnUse(t *testing.T) {
	ctx := context.Background()
	var c Conn
	if _, err := c.Tx(ctx, nil).Exec(ctx, `SELECT 1`); err == nil {
		t.Error("a Conn used outside Raw ran a statement")
	}
	if err := c.Use(42); err == nil {
		t.Error("Use took an int for a driver connection")
	}
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := func(conn *sql.Conn) int {
		t.Helper()
		var kept int
		if err := conn.Raw(func(dc any) error {
			if err := c.Use(dc); err != nil {
				return err
			}
			if _, err := c.Tx(ctx, nil).Exec(ctx, `SELECT 1`); err != nil {
				return err
			}
			kept = len(c.stmts)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return kept
	}
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	run(c1)
	c.stmts["other"] = c.stmts["SELECT 1"]
	if n := run(c2); n != 1 {
		t.Fatalf("%d statements after switching connections, want 1", n)
	}
	if err := c2.Raw(func(dc any) error { c.Use(dc); return c.Close() }); err != nil {
		t.Fatal(err)
	}
	if len(c.stmts) != 0 {
		t.Fatalf("%d statements after Close", len(c.stmts))
	}
}
