package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/checkpointtest"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore/sqlstoretest"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/internal/pgtest"
)

// newDatabase creates a uniquely named database for the test (see
// internal/pgtest: skipped without a server, except in CI).
func newDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.NewDatabase(t, "weft_test_")
}

func newSaver(t *testing.T) *checkpoint.Saver {
	t.Helper()
	d, err := postgres.Open(context.Background(), newDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return checkpoint.New(d)
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, newSaver)
}

// TestMigrateConcurrently opens a new database from several pools at once,
// as processes starting together would: the schema is made once.
func TestMigrateConcurrently(t *testing.T) {
	url := newDatabase(t)
	const n = 5
	errs := make(chan error, n)
	for range n {
		go func() {
			d, err := postgres.Open(context.Background(), url)
			if err == nil {
				err = d.Migrate(context.Background())
				d.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, version int
	if err := conn.QueryRow(context.Background(), `SELECT COUNT(*), MAX(version) FROM weft_schema_migrations WHERE component = 'checkpoint'`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	// One row per schema version, each applied once.
	if want := len(postgres.Dialect.Migrations); rows != want || version != want {
		t.Fatalf("weft_schema_migrations has %d rows up to version %d; want %d rows, up to version %d", rows, version, want, want)
	}
}

// TestNoPreparedStatements checks what PgBouncer in transaction mode
// before 1.21 needs: with default_query_exec_mode=exec in its URL, the
// driver works and leaves no named prepared statement on a connection.
func TestNoPreparedStatements(t *testing.T) {
	ctx := context.Background()
	d, err := postgres.Open(ctx, pgtest.ExecMode(t, newDatabase(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := checkpoint.New(d)
	cp := &checkpoint.Checkpoint{V: 1, ID: "c1", Versions: map[string]int64{"m": 1}}
	if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, cp, checkpoint.Metadata{}, []checkpoint.Blob{{Channel: "m", Version: 1, Value: []byte(`[1]`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, checkpoint.Config{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	conns := d.Pool().AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		var n int
		if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM pg_prepared_statements`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("a pooled connection holds %d prepared statements; want none", n)
		}
	}
}

// A database written by schema version 2 (merged chunks, log pointers in
// blob rows) is migrated in place and reads back exactly as before; its
// threads go on.
func TestUpgradeFromV2(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	d, err := postgres.OpenOptions(ctx, url, postgres.Options{SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sqlstoretest.FromV2(t, d, d.Store, func(ctx context.Context, q string, args ...any) error {
		_, err := conn.Exec(ctx, q, args...)
		return err
	}, false)
}
