package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/internal/sqldb"
)

// countDB is a sqlstore.DB over a SQLite file that counts the write
// transactions and the statements the store sends.
type countDB struct {
	db *sql.DB

	mu    sync.Mutex
	txs   int
	stmts []string
	// answered counts the statements whose answer the store waited for
	// (Exec, Query): on PostgreSQL each is a round trip, where the
	// statements of ExecBatch go with the next of them or the COMMIT.
	answered int
}

// takeAnswered returns and forgets the count of answered statements.
func (c *countDB) takeAnswered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.answered
	c.answered = 0
	return n
}

func (c *countDB) note(q string) {
	c.mu.Lock()
	c.stmts = append(c.stmts, q)
	c.mu.Unlock()
}

// take returns and forgets what was counted since the last take.
func (c *countDB) take() (txs int, stmts []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	txs, stmts = c.txs, c.stmts
	c.txs, c.stmts = 0, nil
	return txs, stmts
}

func (c *countDB) Write(ctx context.Context, _ []string, fn func(sqlstore.Tx) error) error {
	c.mu.Lock()
	c.txs++
	c.mu.Unlock()
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(countTx{c, sqldb.Std{Q: tx}}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (c *countDB) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	tx, err := c.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(sqldb.Std{Q: tx})
}

func (c *countDB) WriteOne(ctx context.Context, query string, args []any, dest ...any) (n int64, err error) {
	err = c.Write(ctx, nil, func(tx sqlstore.Tx) error {
		n, err = sqlstore.ExecOne(ctx, tx, query, args, dest...)
		return err
	})
	return n, err
}

type countTx struct {
	c  *countDB
	tx sqlstore.Tx
}

func (t countTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	t.c.note(query)
	t.c.mu.Lock()
	t.c.answered++
	t.c.mu.Unlock()
	return t.tx.Exec(ctx, query, args...)
}

func (t countTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	t.c.note(query)
	t.c.mu.Lock()
	t.c.answered++
	t.c.mu.Unlock()
	return t.tx.Query(ctx, query, args...)
}

// ExecAll is one answer for several statements, as PostgreSQL's pipeline
// gives it.
func (t countTx) ExecAll(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, error) {
	t.c.mu.Lock()
	t.c.answered++
	t.c.mu.Unlock()
	ns := make([]int64, len(stmts))
	for i, st := range stmts {
		t.c.note(st.Query)
		n, err := t.tx.Exec(ctx, st.Query, st.Args...)
		if err != nil {
			return nil, err
		}
		ns[i] = n
	}
	return ns, nil
}

func (t countTx) ExecBatch(ctx context.Context, stmts []sqlstore.Stmt) error {
	for _, s := range stmts {
		t.c.note(s.Query)
	}
	return t.tx.ExecBatch(ctx, stmts)
}

func newCounted(t *testing.T, opts sqlstore.Options) (*countDB, *checkpoint.Saver) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "weft.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	c := &countDB{db: db}
	st := sqlstore.New(c, sqlite.Dialect, opts)
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.take()
	return c, checkpoint.New(st)
}

// echoRun is the writes of a run of a one-node chat graph, as the
// runtime makes them: the input checkpoint, the input task's writes, the
// checkpoint of the step that took the input; then the node's writes and
// the checkpoint after it, whose message list grows by the reply.
func echoRun(thread string) []func(context.Context, *checkpoint.Saver) error {
	put := func(parent, id string, step int, versions map[string]int64, blobs ...checkpoint.Blob) func(context.Context, *checkpoint.Saver) error {
		return func(ctx context.Context, s *checkpoint.Saver) error {
			_, err := s.Put(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: parent},
				&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: id, Versions: versions, VersionsSeen: map[string]map[string]int64{}},
				checkpoint.Metadata{Source: "loop", Step: step}, blobs)
			return err
		}
	}
	writes := func(id, task string, ws ...checkpoint.PendingWrite) func(context.Context, *checkpoint.Saver) error {
		return func(ctx context.Context, s *checkpoint.Saver) error {
			return s.PutWrites(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: id}, task, ws)
		}
	}
	msgs := `[{"type":"human","content":"hello there, echo"}]`
	return []func(context.Context, *checkpoint.Saver) error{
		put("", "01", -1, map[string]int64{"__start__": 1}, checkpoint.Blob{Channel: "__start__", Version: 1, Value: json.RawMessage(`{"messages":` + msgs + `}`)}),
		writes("01", "start", checkpoint.PendingWrite{Channel: "messages", Value: json.RawMessage(msgs)}, checkpoint.PendingWrite{Channel: "branch:to:echo"}),
		put("01", "02", 0, map[string]int64{"__start__": 2, "messages": 2, "branch:to:echo": 2},
			checkpoint.Blob{Channel: "__start__", Version: 2, Empty: true}, checkpoint.Blob{Channel: "messages", Version: 2, Value: json.RawMessage(msgs)},
			checkpoint.Blob{Channel: "branch:to:echo", Version: 2, Value: json.RawMessage(`null`)}),
		// The flush before the node runs ends the first batch here.
		writes("02", "echo", checkpoint.PendingWrite{Channel: "messages", Value: json.RawMessage(`[{"type":"ai","content":"hello there, echo"}]`)}),
		put("02", "03", 1, map[string]int64{"__start__": 2, "messages": 3, "branch:to:echo": 2},
			checkpoint.Blob{Channel: "messages", Version: 3, BaseVersion: 2, Appended: []json.RawMessage{json.RawMessage(`{"type":"ai","content":"hello there, echo"}`)}}),
	}
}

func fenceChecks(stmts []string) int {
	n := 0
	for _, s := range stmts {
		if strings.Contains(s, "weft_thread_leases") {
			n++
		}
	}
	return n
}

// TestBatchStatements counts what a run's writes cost: made in two
// batches (split where the runtime flushes), they take two transactions
// instead of one each, check the lease once per transaction, and send
// fewer statements.
func TestBatchStatements(t *testing.T) {
	ctx := context.Background()
	c, s := newCounted(t, sqlstore.Options{})
	leased := func(thread string) context.Context {
		l, err := s.Acquire(ctx, thread, checkpoint.LeaseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Release(ctx) })
		c.take()
		return checkpoint.WithLease(ctx, l)
	}

	octx := leased("one-by-one")
	run := echoRun("one-by-one")
	var oneTxs, oneStmts, oneFences int
	for i, w := range run {
		if err := w(octx, s); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		txs, stmts := c.take()
		t.Logf("one at a time, write %d: %d statements: %q", i, len(stmts), stmts)
		oneTxs, oneStmts, oneFences = oneTxs+txs, oneStmts+len(stmts), oneFences+fenceChecks(stmts)
	}

	bctx := leased("in-batches")
	run = echoRun("in-batches")
	c.takeAnswered()
	var bTxs, bStmts, bFences int
	for _, part := range [][]func(context.Context, *checkpoint.Saver) error{run[:3], run[3:]} {
		if err := s.Batch(bctx, "in-batches", func(ctx context.Context) error {
			for _, w := range part {
				if err := w(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		txs, stmts := c.take()
		t.Logf("batch of %d writes: %d statements: %q", len(part), len(stmts), stmts)
		bTxs, bStmts, bFences = bTxs+txs, bStmts+len(stmts), bFences+fenceChecks(stmts)
	}
	bAnswered := c.takeAnswered()
	t.Logf("one at a time: %d transactions, %d statements, %d lease checks; in batches: %d, %d, %d, %d answered", oneTxs, oneStmts, oneFences, bTxs, bStmts, bFences, bAnswered)
	// The answers the batches wait for, each a round trip on PostgreSQL
	// (besides the COMMITs): the first checkpoint's lease check and
	// parent (which asks whether its blob row's version is taken), the
	// second's blob row and its insert together (which say whether the
	// version was taken and whether the checkpoint was stored before);
	// then the third checkpoint's parent (with the lease check that the
	// task's writes before it rely on) and its list's log (with the next
	// free log id, so that the new log's insert needs no answer).
	if bAnswered != 4 {
		t.Errorf("in batches: %d round trips for answers; want 4", bAnswered)
	}
	if oneTxs != len(run) || oneFences != len(run) {
		t.Fatalf("one at a time: %d transactions and %d lease checks for %d writes; want one each", oneTxs, oneFences, len(run))
	}
	if bTxs != 2 || bFences != 2 {
		t.Fatalf("in two batches: %d transactions and %d lease checks; want 2 and 2", bTxs, bFences)
	}
	if bStmts >= oneStmts {
		t.Fatalf("in batches: %d statements; one at a time %d; want fewer", bStmts, oneStmts)
	}
}

// TestPutAnswers counts the statements whose answer a run's first
// checkpoint waits for (one round trip each on PostgreSQL): its lease
// check and its parent's entries, and whether its blob row's version is
// taken, in one query; the blob row and the checkpoint go with the
// COMMIT.
func TestPutAnswers(t *testing.T) {
	ctx := context.Background()
	c, s := newCounted(t, sqlstore.Options{})
	l, err := s.Acquire(ctx, "answers", checkpoint.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	c.take()
	c.takeAnswered()
	if err := echoRun("answers")[0](checkpoint.WithLease(ctx, l), s); err != nil {
		t.Fatal(err)
	}
	_, stmts := c.take()
	if n := c.takeAnswered(); n != 1 {
		t.Errorf("the first checkpoint waited for %d answers; want 1 (statements: %q)", n, stmts)
	}
	if len(stmts) != 3 {
		t.Errorf("the first checkpoint sent %d statements; want 3: %q", len(stmts), stmts)
	}
	// A version taken by another checkpoint: the blob row goes under this
	// checkpoint's id, and reads back.
	if _, err := s.Put(checkpoint.WithLease(ctx, l), checkpoint.Config{ThreadID: "answers"},
		&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: "01b", Versions: map[string]int64{"__start__": 1}, VersionsSeen: map[string]map[string]int64{}},
		checkpoint.Metadata{Source: "input", Step: -1}, []checkpoint.Blob{{Channel: "__start__", Version: 1, Value: json.RawMessage(`{"messages":[{"type":"human","content":"another value, same version"}]}`)}}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"01": "hello there, echo", "01b": "another value, same version"} {
		tup, err := s.Get(ctx, checkpoint.Config{ThreadID: "answers", CheckpointID: id})
		if err != nil || tup == nil {
			t.Fatalf("Get %s: %v, %v", id, tup, err)
		}
		if got := string(tup.Checkpoint.Values["__start__"]); !strings.Contains(got, want) {
			t.Errorf("checkpoint %s: __start__ = %s; want it to hold %q", id, got, want)
		}
	}
}

// A checkpoint whose parent's entries are known, with one value to store
// in a row, sends that row's probing insert with its own insert: when
// the version was taken by another checkpoint, the value goes under this
// checkpoint's id and its entries say so, and both read back.
func TestPutKnownParentTakenVersion(t *testing.T) {
	ctx := context.Background()
	c, s := newCounted(t, sqlstore.Options{})
	put := func(id, text string) {
		t.Helper()
		if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "taken"},
			&checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: id, Versions: map[string]int64{"m": 1}, VersionsSeen: map[string]map[string]int64{}},
			checkpoint.Metadata{Source: "input", Step: -1}, []checkpoint.Blob{{Channel: "m", Version: 1, Value: json.RawMessage(`{"text":"` + text + `"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	c.take()
	c.takeAnswered()
	put("a", "the first value of version one")
	if n := c.takeAnswered(); n != 1 {
		t.Errorf("a first checkpoint with one blob row waited for %d answers; want 1", n)
	}
	put("b", "another value of the same version")
	put("a", "the first value of version one, put again")
	for id, want := range map[string]string{"a": "put again", "b": "another value"} {
		tup, err := s.Get(ctx, checkpoint.Config{ThreadID: "taken", CheckpointID: id})
		if err != nil || tup == nil {
			t.Fatalf("Get %s: %v, %v", id, tup, err)
		}
		if got := string(tup.Checkpoint.Values["m"]); !strings.Contains(got, want) {
			t.Errorf("checkpoint %s: m = %s; want it to hold %q", id, got, want)
		}
	}
}
