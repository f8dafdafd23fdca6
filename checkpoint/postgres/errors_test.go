package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/graph"
)

// A database that cannot be written is refused when it is opened, and a
// run on one opened without migrating fails before its first node; the
// errors name the database (never the password) and say what failed.
func TestReadOnlyDatabaseIsNamed(t *testing.T) {
	ctx := context.Background()
	dbURL := newDatabase(t)
	d, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+name+" SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	// The test server trusts every login: the password is only there to
	// be kept out of messages.
	u.User = url.UserPassword(u.User.Username(), "s3cret-pw")
	withPassword := u.String()
	named := func(what string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "25006" {
			t.Fatalf("%s = %v; want the server's read-only error (SQLSTATE 25006)", what, err)
		}
		msg := err.Error()
		for _, want := range []string{`database "` + name + `"`, u.Host, "read-only"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q does not say %q", what, msg, want)
			}
		}
		if strings.Contains(msg, "s3cret-pw") {
			t.Errorf("%s: %q shows the password", what, msg)
		}
	}
	_, err = postgres.Open(ctx, withPassword)
	named("Open", err)
	t.Logf("Open: %v", err)

	d, err = postgres.OpenOptions(ctx, withPassword, postgres.Options{SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var ran atomic.Bool
	g, err := graph.New(checkpointtestTurns).
		AddNode("a", func(ctx context.Context, s graph.State) (graph.Update, error) {
			ran.Store(true)
			return graph.Update{}, nil
		}, nil).
		AddEdge(graph.START, "a").
		Compile(&graph.CompileOptions{Checkpointer: checkpoint.New(d)})
	if err != nil {
		t.Fatal(err)
	}
	for _, dur := range []graph.Durability{graph.DurabilityAsync, graph.DurabilitySync, graph.DurabilityExit} {
		_, err = g.Invoke(ctx, checkpointtestTurns.Write([]string{"in"}), &graph.RunOptions{ThreadID: "t", Durability: dur})
		named("Invoke ("+string(dur)+")", err)
		t.Logf("Invoke (%s): %v", dur, err)
		if ran.Load() {
			t.Fatalf("durability %s: the node ran although the thread cannot be written", dur)
		}
	}
}

var checkpointtestTurns = graph.Reduce("turns", func(cur, upd []string) []string { return append(cur, upd...) })
