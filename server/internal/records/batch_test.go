package records

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// laneDB is a DB whose transactions say which thread each write of theirs
// is for (Exec "hold", key), so that a test sees two transactions open
// at once on one thread's rows.
type laneDB struct {
	mu       sync.Mutex
	open     map[string]int // open transactions holding each key
	overlaps []string
}

type laneTx struct {
	db   *laneDB
	held []string
}

func (d *laneDB) Write(ctx context.Context, fn func(Tx) error) error {
	tx := &laneTx{db: d}
	err := fn(tx)
	d.mu.Lock()
	for _, k := range tx.held {
		d.open[k]--
	}
	d.mu.Unlock()
	return err
}

func (d *laneDB) Read(ctx context.Context, fn func(Tx) error) error { return fn(&laneTx{db: d}) }

func (t *laneTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if query != "hold" {
		return 0, nil
	}
	k := args[0].(string)
	t.db.mu.Lock()
	defer t.db.mu.Unlock()
	if t.db.open[k] > 0 {
		t.db.overlaps = append(t.db.overlaps, k)
	}
	t.db.open[k]++
	t.held = append(t.held, k)
	return 1, nil
}

func (t *laneTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return nil, fmt.Errorf("laneTx: no queries")
}

// Two committers' transactions never hold one thread's rows at once: a
// write of a thread whose earlier write is in an open transaction waits
// for that transaction's end, while the writes of other threads go on
// through the other committers. (In PostgreSQL, a run's writes in two
// committers' batches deadlocked each other until deadlock_timeout.)
func TestBatcherKeepsAThreadToOneCommitter(t *testing.T) {
	db := &laneDB{open: map[string]int{}}
	b := newBatcher(db, 4, time.Minute)
	defer b.close()
	ctx := context.Background()
	hold := func(key string) func(Tx) error {
		return func(tx Tx) error {
			_, err := tx.Exec(ctx, "hold", key)
			return err
		}
	}
	// A write of thread "a" stays in its transaction until released.
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- b.do(ctx, "a", func(tx Tx) error {
			if err := hold("a")(tx); err != nil {
				return err
			}
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	// Another write of "a", then writes of threads on every other
	// committer: once these are committed, a free committer would have
	// taken the second write of "a" (queued before them) already.
	second := make(chan error, 1)
	go func() { second <- b.do(ctx, "a", hold("a")) }()
	others := map[int]string{}
	for i := 0; len(others) < len(b.lanes)-1; i++ {
		k := fmt.Sprint("t", i)
		if l := b.lane(k); l != b.lane("a") {
			others[l] = k
		}
	}
	var wg sync.WaitGroup
	for _, k := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Several writes each, so that a committer idle now is
			// busy with them for a while.
			for range 20 {
				if err := b.do(ctx, k, hold(k)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.overlaps) > 0 {
		t.Errorf("transactions open at once on the rows of %v; want a thread's writes committed one transaction after the other", db.overlaps)
	}
	for k := range 1000 {
		key := fmt.Sprint("thread-", k)
		first, again := b.lane(key), b.lane(key)
		if first != again || first >= len(b.lanes) {
			t.Fatalf("lane of %q unstable or out of range", key)
		}
	}
}

// The SQLite rewrite of a query is the same whether kept or not, and the
// rewrites kept are bounded.
func TestDialectRewrites(t *testing.T) {
	d := &Dialect{Numbered: true}
	for i := range maxRewritten + 50 {
		query := fmt.Sprintf("SELECT $1 FROM t WHERE a = $2 AND b = %d", i)
		want := fmt.Sprintf("SELECT ?1 FROM t WHERE a = ?2 AND b = %d", i)
		for range 2 {
			if got := d.q(query); got != want {
				t.Fatalf("q(%q) = %q, want %q", query, got, want)
			}
		}
	}
	n := 0
	d.rewritten.Range(func(any, any) bool { n++; return true })
	if n != maxRewritten {
		t.Errorf("%d rewrites kept, want %d", n, maxRewritten)
	}
	if pg := (&Dialect{}); pg.q("SELECT $1") != "SELECT $1" {
		t.Error("a dialect with $N placeholders rewrote a query")
	}
}

// A write's last statement, held back until the next write's statements
// or the COMMIT (execLast, on PostgreSQL), that fails is its write's
// failure only: the batch's other writes are committed, each answered
// nil, and the failed write's statements are not.
func TestExecLastFailureIsItsWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		insert := func(id string) func(Tx) error {
			return func(tx Tx) error {
				return s.execLast(ctx, tx, `INSERT INTO weft_server_workers (worker_id, started_at, heartbeat_at) VALUES ($1, 1, 1)`, id)
			}
		}
		if err := s.db.Write(ctx, insert("dup")); err != nil {
			t.Fatal(err)
		}
		b := newBatcher(s.db, 1, time.Minute)
		defer b.close()
		ids := []string{"a", "dup", "b", "c", "dup", "d"}
		ops := make([]*writeOp, len(ids))
		for i, id := range ids {
			ops[i] = &writeOp{ctx: ctx, done: make(chan error, 1), fn: func(tx Tx) error {
				// A statement before, whose row the failure must not keep.
				if _, err := s.exec(ctx, tx, `INSERT INTO weft_server_workers (worker_id, started_at, heartbeat_at) VALUES ($1, 2, 2)`, fmt.Sprint("before-", i)); err != nil {
					return err
				}
				return insert(id)(tx)
			}}
		}
		b.commit(ops)
		for i, op := range ops {
			err := <-op.done
			if (ids[i] == "dup") != (err != nil) {
				t.Errorf("write %d (%s) = %v", i, ids[i], err)
			}
		}
		var got []string
		err := s.read(ctx, func(tx Tx) error {
			return s.query(ctx, tx, `SELECT worker_id FROM weft_server_workers ORDER BY worker_id`, nil, func(r Rows) error {
				var id string
				err := r.Scan(&id)
				got = append(got, id)
				return err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"a", "b", "before-0", "before-2", "before-3", "before-5", "c", "d", "dup"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rows %v; want %v", got, want)
		}
	})
}
