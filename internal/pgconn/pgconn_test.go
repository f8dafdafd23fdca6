package pgconn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Describe names the database, host, port and user, never the password.
func TestDescribe(t *testing.T) {
	cfg, err := PoolConfig("postgres://app:s3cret@db.example:6543/weft?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	got := Describe(cfg.ConnConfig)
	if want := `database "weft" on db.example:6543 as user "app"`; got != want {
		t.Fatalf("Describe = %q; want %q", got, want)
	}
}

// Explain says what a server error means for a store that must write, and
// keeps the error for errors.As; the caller's context errors pass as they
// are.
func TestExplain(t *testing.T) {
	const what = `database "weft" on h:5432 as user "u"`
	cases := []struct {
		code, want string
	}{
		{"25006", "read-only"},
		{"53100", "disk is full"},
		{"42501", "lacks a permission"},
		{"3D000", "does not exist"},
		{"23505", ""}, // a unique violation: nothing to add
	}
	for _, c := range cases {
		err := Explain(what, fmt.Errorf("inserting: %w", &pgconn.PgError{Code: c.code, Message: "m"}))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v does not wrap the server's error", c.code, err)
		}
		if !strings.HasPrefix(err.Error(), what+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q; want it to start with the database and say %q", c.code, err, c.want)
		}
	}
	for _, err := range []error{nil, context.Canceled, fmt.Errorf("x: %w", context.DeadlineExceeded)} {
		if got := Explain(what, err); got != err {
			t.Errorf("Explain(%v) = %v; want it unchanged", err, got)
		}
	}
}

// A pool opens DefaultMaxConns connections unless its URL says how many.
func TestPoolConfigMaxConns(t *testing.T) {
	for url, want := range map[string]int32{
		"postgres://u@localhost:5432/db":                   DefaultMaxConns,
		"postgres://u@localhost:5432/db?pool_max_conns=3":  3,
		"postgres://u@localhost:5432/db?pool_max_conns=40": 40,
	} {
		pc, err := PoolConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if pc.MaxConns != want {
			t.Errorf("%s: MaxConns %d, want %d", url, pc.MaxConns, want)
		}
	}
}

// A pool prepares its statements unless its URL names another mode (exec
// for PgBouncer before 1.21).
func TestPoolConfigExecMode(t *testing.T) {
	for url, want := range map[string]pgx.QueryExecMode{
		"postgres://u@localhost:5432/db":                                        pgx.QueryExecModeCacheStatement,
		"postgres://u@localhost:5432/db?default_query_exec_mode=exec":           pgx.QueryExecModeExec,
		"postgres://u@localhost:5432/db?default_query_exec_mode=cache_describe": pgx.QueryExecModeCacheDescribe,
	} {
		pc, err := PoolConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if got := pc.ConnConfig.DefaultQueryExecMode; got != want {
			t.Errorf("%s: exec mode %v, want %v", url, got, want)
		}
		if got := Prepares(pc.ConnConfig); got != (want == pgx.QueryExecModeCacheStatement) {
			t.Errorf("%s: Prepares = %v", url, got)
		}
	}
}

// A server on this machine is reached without TLS first (sslmode=allow)
// unless the string or PGSSLMODE names a mode; any other keeps pgx's
// prefer (TLS first).
func TestPoolConfigLoopbackTLS(t *testing.T) {
	t.Setenv("PGSSLMODE", "")
	cases := []struct {
		conn string
		// tlsFirst: the first attempt uses TLS; plainFallback: some
		// attempt goes without it.
		tlsFirst, plainFallback bool
	}{
		{"postgres://u@127.0.0.1:5432/db", false, false},
		{"postgresql://u@[::1]:5432/db?pool_max_conns=4", false, false},
		{"host=localhost dbname=db user=u", false, false},
		{"postgres://u@localhost,127.0.0.2/db", false, false},
		{"postgres://u@db.example:5432/db", true, true},
		{"postgres://u@localhost,db.example/db", true, true},
		{"postgres://u@127.0.0.1:5432/db?sslmode=prefer", true, true},
		{"postgres://u@127.0.0.1:5432/db?sslmode=require", true, false},
		{"host=127.0.0.1 dbname=db sslmode=disable", false, true},
	}
	for _, c := range cases {
		pc, err := PoolConfig(c.conn)
		if err != nil {
			t.Fatalf("%s: %v", c.conn, err)
		}
		cfg := pc.ConnConfig
		plain := cfg.TLSConfig == nil
		for _, f := range cfg.Fallbacks {
			plain = plain || f.TLSConfig == nil
		}
		if got := cfg.TLSConfig != nil; got != c.tlsFirst {
			t.Errorf("%s: first attempt with TLS = %v; want %v", c.conn, got, c.tlsFirst)
		}
		if want := !c.tlsFirst || c.plainFallback; plain != want {
			t.Errorf("%s: some attempt without TLS = %v; want %v", c.conn, plain, want)
		}
		if !c.tlsFirst && !strings.Contains(c.conn, "sslmode") {
			// allow: TLS when the server refuses a plain connection.
			withTLS := false
			for _, f := range cfg.Fallbacks {
				withTLS = withTLS || f.TLSConfig != nil
			}
			if !withTLS {
				t.Errorf("%s: no attempt with TLS after the plain one", c.conn)
			}
		}
	}
	t.Setenv("PGSSLMODE", "require")
	pc, err := PoolConfig("postgres://u@127.0.0.1:5432/db")
	if err != nil {
		t.Fatal(err)
	}
	if pc.ConnConfig.TLSConfig == nil {
		t.Error("PGSSLMODE=require: the first attempt goes without TLS")
	}
}

// A connection service (PGSERVICE, or service= in the string) may name
// the sslmode in its service file: a server on this machine is then
// reached as the file says, not without TLS first.
func TestPoolConfigLoopbackServiceFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pg_service.conf")
	if err := os.WriteFile(file, []byte("[weft]\nhost=127.0.0.1\nport=5432\nuser=u\ndbname=db\nsslmode=verify-full\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGSERVICEFILE", file)
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGSERVICE", "")
	check := func(conn string) {
		t.Helper()
		pc, err := PoolConfig(conn)
		if err != nil {
			t.Fatalf("%s: %v", conn, err)
		}
		if pc.ConnConfig.TLSConfig == nil {
			t.Errorf("%s: the service's sslmode=verify-full, yet the first attempt goes without TLS", conn)
		}
		for _, f := range pc.ConnConfig.Fallbacks {
			if f.TLSConfig == nil {
				t.Errorf("%s: the service's sslmode=verify-full, yet an attempt goes without TLS", conn)
			}
		}
	}
	check("service=weft")
	check("postgres:///db?service=weft")
	t.Setenv("PGSERVICE", "weft")
	check("")
}
