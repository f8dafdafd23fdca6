package postgres

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	pgconnx "github.com/weftlabs/weft/internal/pgconn"
	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/internal/sqldb"
)

// txDB opens a driver with one pooled connection, so that a test sees the
// connection a write leaves behind, and a table t(k int primary key).
func txDB(t *testing.T, exec bool) pgDB {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t, "weft_test_")
	if exec {
		dbURL = pgtest.ExecMode(t, dbURL)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	d, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.pool.Exec(ctx, "CREATE TABLE t (k int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return pgDB{pool: d.pool, what: "test", cleanup: 5 * time.Second}
}

// idle checks that the pool's connection is open and in no transaction.
func idle(t *testing.T, db pgDB) {
	t.Helper()
	c, err := db.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if c.Conn().IsClosed() {
		t.Fatal("the pool's connection is closed")
	}
	if st := c.Conn().PgConn().TxStatus(); st != 'I' {
		t.Fatalf("the pool's connection is in transaction state %q; want idle", st)
	}
}

func keys(t *testing.T, db pgDB) []int {
	t.Helper()
	var ks []int
	rows, err := db.pool.Query(context.Background(), "SELECT k FROM t ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k int
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ks
}

// A write's statements are pipelined (the locks with its first statement,
// its last batch with COMMIT); what fails anywhere in the pipeline fails
// the write, keeps nothing of it, names the statement's error, and
// leaves the connection idle for the next write. In both exec modes.
func TestWritePipeline(t *testing.T) {
	for _, mode := range []struct {
		name string
		exec bool
	}{{"prepared", false}, {"exec", true}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			db := txDB(t, mode.exec)
			insert := func(k int) sqlstore.Stmt {
				return sqlstore.Stmt{Query: "INSERT INTO t (k) VALUES ($1)", Args: []any{k}}
			}
			unique := func(t *testing.T, err error) {
				t.Helper()
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "23505" {
					t.Fatalf("Write = %v; want the unique violation (23505)", err)
				}
			}

			// A batch, a query that reads it, then a batch sent with COMMIT.
			err := db.Write(ctx, []string{"a"}, func(tx sqlstore.Tx) error {
				if err := tx.ExecBatch(ctx, []sqlstore.Stmt{insert(1), insert(2)}); err != nil {
					return err
				}
				var n int
				if _, err := sqldb.QueryRow(ctx, tx, "SELECT COUNT(*) FROM t", nil, &n); err != nil {
					return err
				}
				if n != 2 {
					t.Errorf("the transaction sees %d rows of its batch; want 2", n)
				}
				return tx.ExecBatch(ctx, []sqlstore.Stmt{insert(3)})
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(t, db); len(got) != 3 {
				t.Fatalf("rows %v after the write; want [1 2 3]", got)
			}

			// A failing statement in the batch sent with COMMIT.
			err = db.Write(ctx, []string{"a"}, func(tx sqlstore.Tx) error {
				return tx.ExecBatch(ctx, []sqlstore.Stmt{insert(4), insert(1), insert(5)})
			})
			unique(t, err)
			idle(t, db)

			// A failing queued statement, told by the query sent after it.
			err = db.Write(ctx, []string{"a"}, func(tx sqlstore.Tx) error {
				if err := tx.ExecBatch(ctx, []sqlstore.Stmt{insert(6), insert(2)}); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, "INSERT INTO t (k) VALUES ($1)", 7)
				return err
			})
			unique(t, err)
			idle(t, db)

			// A statement's error the work does not return still fails the
			// write at COMMIT.
			err = db.Write(ctx, []string{"a"}, func(tx sqlstore.Tx) error {
				tx.Exec(ctx, "INSERT INTO t (k) VALUES ($1)", 3)
				return nil
			})
			if !errors.Is(err, pgconnx.ErrRolledBack) {
				t.Fatalf("Write = %v; want pgconnx.ErrRolledBack", err)
			}
			idle(t, db)

			// The work's own error, after statements.
			failure := errors.New("test: the work failed")
			err = db.Write(ctx, []string{"a"}, func(tx sqlstore.Tx) error {
				if _, err := tx.Exec(ctx, "INSERT INTO t (k) VALUES ($1)", 8); err != nil {
					return err
				}
				return failure
			})
			if !errors.Is(err, failure) {
				t.Fatalf("Write = %v; want the work's error", err)
			}
			idle(t, db)

			// Several statements answered in one round trip, after a
			// queued one: each one's count of rows; a failing one fails
			// the write.
			err = db.Write(ctx, []string{"a"}, func(tx sqlstore.Tx) error {
				if err := tx.ExecBatch(ctx, []sqlstore.Stmt{insert(9)}); err != nil {
					return err
				}
				ns, err := tx.(pgTx).ExecAll(ctx, []sqlstore.Stmt{
					{Query: "INSERT INTO t (k) VALUES ($1) ON CONFLICT DO NOTHING", Args: []any{1}},
					{Query: "INSERT INTO t (k) VALUES ($1) ON CONFLICT DO NOTHING", Args: []any{10}},
				})
				if err != nil {
					return err
				}
				if len(ns) != 2 || ns[0] != 0 || ns[1] != 1 {
					t.Errorf("ExecAll counted %v rows; want [0 1]", ns)
				}
				_, err = tx.(pgTx).ExecAll(ctx, []sqlstore.Stmt{insert(11), insert(2), insert(12)})
				return err
			})
			unique(t, err)
			idle(t, db)

			if got := keys(t, db); len(got) != 3 {
				t.Fatalf("rows %v after the failed writes; want [1 2 3]", got)
			}

			// A read sees one snapshot, and ends its transaction.
			err = db.Read(ctx, func(tx sqlstore.Tx) error {
				var n int
				_, err := sqldb.QueryRow(ctx, tx, "SELECT COUNT(*) FROM t", nil, &n)
				if n != 3 {
					t.Errorf("Read sees %d rows; want 3", n)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			idle(t, db)
		})
	}
}

// A write holds its key's lock, under the name every weft version locks,
// until it commits.
func TestWriteHoldsLock(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t, "weft_test_")
	d, err := Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	db := pgDB{pool: d.pool, what: "test", cleanup: 5 * time.Second}
	other, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	free := func(key string) bool {
		t.Helper()
		var ok bool
		// A transaction of one statement: a lock taken is let go at once.
		if err := other.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(hashtextextended('weft.checkpoint:' || $1, 0))", key).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	err = db.Write(ctx, []string{"th'1", "th2"}, func(tx sqlstore.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
			return err
		}
		for _, k := range []string{"th'1", "th2"} {
			if free(k) {
				t.Errorf("the lock of %q is free during its write", k)
			}
		}
		if !free("th3") {
			t.Error("the lock of another key is held")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !free("th'1") {
		t.Error("the lock is held after the write")
	}
}
