// Package pgtest gives tests a PostgreSQL database of their own.
//
// Tests that need PostgreSQL call NewDatabase: it creates a uniquely named
// database on the test server and drops it when the test ends. Without a
// reachable server the test is skipped locally, but fails when the
// environment variable CI is "true": in CI those tests must run.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the administrative connection string of the test server.
const EnvVar = "WEFT_TEST_POSTGRES_URL"

// DefaultURL is the server used when EnvVar is not set: the one every
// development and CI machine runs.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the administrative connection string of the test server.
func ServerURL() string {
	if u := os.Getenv(EnvVar); u != "" {
		return u
	}
	return DefaultURL
}

// ExecMode returns url, a postgres:// URL, asking for
// default_query_exec_mode=exec: every statement goes as the extended
// protocol's unnamed statement, never a named prepared one, as PgBouncer
// in transaction mode before 1.21 needs. Tests run the default (prepared
// statements) and, through ExecMode, this mode too.
func ExecMode(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("the database's address must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String()
}

// NewDatabase creates a database named prefix plus a random suffix, drops
// it when the test ends, and returns its connection string.
func NewDatabase(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := ServerURL()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: cannot connect to %s: %v", server, err)
		}
		t.Skipf("no PostgreSQL server at %s (%v); set %s to run these tests", server, err, EnvVar)
	}
	admin.Close(context.Background())
	dbURL, drop, err := CreateDatabase(ctx, server, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return dbURL
}

// CreateDatabase creates a database named prefix plus a random suffix on
// the server at admin (a postgres:// URL), for a test or a benchmark, and
// returns its connection string and the function that drops it.
func CreateDatabase(ctx context.Context, admin, prefix string) (dbURL string, drop func() error, err error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, fmt.Errorf("the server's address must be a postgres:// URL: %w", err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(context.Background())
	var b [6]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("creating database %s: %w", name, err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return fmt.Errorf("dropping database %s: %w", name, err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("dropping database %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}
