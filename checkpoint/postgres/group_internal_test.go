package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/internal/sqldb"
)

// queued waits until n writers wait in db's queue.
func queued(db pgDB, n int) {
	for {
		db.groups.mu.Lock()
		k := len(db.groups.waiting)
		db.groups.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

// Writers of several threads that queue while every committer is busy
// commit in one transaction, each in a savepoint: a writer's failure (its
// own error, a failed statement, its context ended while it waited)
// undoes its statements only, and each writer is told its own outcome.
func TestGroupCommitIsolatesWriters(t *testing.T) {
	for _, mode := range []struct {
		name string
		exec bool
	}{{"prepared", false}, {"exec", true}} {
		t.Run(mode.name, func(t *testing.T) {
			db := txDB(t, mode.exec)
			db.groups = newGroups()
			ctx := context.Background()
			if _, err := db.pool.Exec(ctx, "INSERT INTO t (k) VALUES (1000)"); err != nil {
				t.Fatal(err)
			}
			// Every committer is busy: the writers queue.
			for range groupCommitters {
				db.groups.slots <- struct{}{}
			}
			failure := errors.New("test: the work failed")
			cancelled, cancel := context.WithCancel(ctx)
			const n = 12
			errs := make([]error, n)
			txids := make([]int64, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				wctx := ctx
				if i == 5 {
					wctx = cancelled
				}
				go func() {
					defer wg.Done()
					errs[i] = db.Write(wctx, []string{fmt.Sprint("thread", i%4)}, func(tx sqlstore.Tx) error {
						if _, err := sqldb.QueryRow(ctx, tx, "SELECT txid_current()", nil, &txids[i]); err != nil {
							return err
						}
						switch i % 4 {
						case 1: // its own error, after a statement
							if _, err := tx.Exec(ctx, "INSERT INTO t (k) VALUES ($1)", i); err != nil {
								return err
							}
							return failure
						case 2: // a failed statement, queued and sent with the next
							if err := tx.ExecBatch(ctx, []sqlstore.Stmt{{Query: "INSERT INTO t (k) VALUES ($1)", Args: []any{i}}, {Query: "INSERT INTO t (k) VALUES (1000)"}}); err != nil {
								return err
							}
							_, err := tx.Exec(ctx, "SELECT 1")
							return err
						}
						return tx.ExecBatch(ctx, []sqlstore.Stmt{{Query: "INSERT INTO t (k) VALUES ($1)", Args: []any{i}}})
					})
				}()
			}
			queued(db, n)
			// Cancelled while it waits: it leaves the queue, or the group
			// that took it skips it.
			cancel()
			for range groupCommitters {
				<-db.groups.slots
			}
			wg.Wait()
			var want []int
			for i, err := range errs {
				switch {
				case i == 5:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("writer %d (cancelled) = %v; want context.Canceled", i, err)
					}
				case i%4 == 1:
					if !errors.Is(err, failure) {
						t.Errorf("writer %d = %v; want its own error", i, err)
					}
				case i%4 == 2:
					var pe *pgconn.PgError
					if !errors.As(err, &pe) || pe.Code != "23505" {
						t.Errorf("writer %d = %v; want the unique violation", i, err)
					}
				default:
					if err != nil {
						t.Errorf("writer %d = %v", i, err)
					}
					want = append(want, i)
				}
			}
			// One transaction for all of them.
			for _, i := range want {
				if txids[i] != txids[want[0]] {
					t.Errorf("writer %d committed in transaction %d, writer %d in %d; want one group", i, txids[i], want[0], txids[want[0]])
				}
			}
			want = append(want, 1000)
			if got := keys(t, db); !slices.Equal(got, want) {
				t.Errorf("rows %v; want %v", got, want)
			}
			idle(t, db)
		})
	}
}

// A writer whose function panics panics in its own goroutine, as it would
// alone, and its group's other writers commit.
func TestGroupCommitWriterPanics(t *testing.T) {
	db := txDB(t, false)
	db.groups = newGroups()
	ctx := context.Background()
	for range groupCommitters {
		db.groups.slots <- struct{}{}
	}
	const n = 4
	errs := make([]error, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			errs[i] = db.Write(ctx, []string{fmt.Sprint("thread", i)}, func(tx sqlstore.Tx) error {
				if _, err := tx.Exec(ctx, "INSERT INTO t (k) VALUES ($1)", i); err != nil {
					return err
				}
				if i == 1 {
					panic("test: writer 1 panics")
				}
				return nil
			})
		}()
	}
	queued(db, n)
	for range groupCommitters {
		<-db.groups.slots
	}
	wg.Wait()
	for i := range n {
		switch {
		case i == 1 && panics[i] != "test: writer 1 panics":
			t.Errorf("writer 1 recovered %v; want its panic", panics[i])
		case i != 1 && (panics[i] != nil || errs[i] != nil):
			t.Errorf("writer %d: panic %v, error %v", i, panics[i], errs[i])
		}
	}
	if got := keys(t, db); !slices.Equal(got, []int{0, 2, 3}) {
		t.Errorf("rows %v; want [0 2 3]", got)
	}
	idle(t, db)
}
