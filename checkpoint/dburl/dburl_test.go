package dburl

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
)

func TestOpenSQLiteForms(t *testing.T) {
	dir := t.TempDir()
	for _, dsn := range []string{filepath.Join(dir, "a.db"), "sqlite:" + filepath.Join(dir, "b.db"), "sqlite://" + filepath.Join(dir, "c.db"), "file:" + filepath.Join(dir, "d.db")} {
		db, err := Open(context.Background(), dsn, Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if db.Backend != "sqlite" {
			t.Errorf("Open(%q) backend = %s", dsn, db.Backend)
		}
		if err := db.Migrate(context.Background()); err != nil {
			t.Errorf("Migrate: %v", err)
		}
		db.Close()
	}
}

func TestOpenUnknownScheme(t *testing.T) {
	_, err := Open(context.Background(), "mysql://u:secret@h/db", Options{})
	if !errors.Is(err, checkpoint.ErrInvalid) {
		t.Fatalf("Open of a mysql URL = %v; want ErrInvalid", err)
	}
	if got := err.Error(); got == "" || strings.Contains(got, "secret") {
		t.Fatalf("error shows the password: %s", got)
	}
}

// A PostgreSQL URL without a database name is refused before connecting:
// PostgreSQL would pick a database named after the user ("root").
func TestParsePostgresNeedsDatabaseName(t *testing.T) {
	for _, dsn := range []string{"postgres://", "postgresql://", "postgres://u:secret@127.0.0.1:5432", "postgres://u@h/", "postgres://u@h/?sslmode=disable"} {
		_, _, err := Parse(dsn)
		if !errors.Is(err, ErrNoDatabaseName) || !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("Parse(%q) = %v; want ErrNoDatabaseName", dsn, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "expected postgres://USER@HOST:PORT/DBNAME") || strings.Contains(msg, "secret") {
			t.Errorf("Parse(%q) error %q should show the expected form, without the password", dsn, msg)
		}
	}
	for _, dsn := range []string{"postgres://u@h/weft", "postgresql://u@h:5432/weft?sslmode=disable", "postgres://u@h?dbname=weft"} {
		if backend, _, err := Parse(dsn); err != nil || backend != "postgres" {
			t.Errorf("Parse(%q) = %s, %v; want postgres", dsn, backend, err)
		}
	}
}

// Errors start with where the connection string came from: the flag the
// caller names, or the variable FromEnv reads.
func TestOpenErrorsNameTheirSource(t *testing.T) {
	_, err := Open(context.Background(), "postgres://", Options{Source: "--db"})
	if !errors.Is(err, ErrNoDatabaseName) || !strings.HasPrefix(err.Error(), "--db: ") || strings.Contains(err.Error(), EnvVar) {
		t.Errorf("Open with Source --db = %v; want an error starting with --db: and not naming %s", err, EnvVar)
	}
	t.Setenv(EnvVar, "mysql://h/db")
	_, err = FromEnv(context.Background())
	if !errors.Is(err, checkpoint.ErrInvalid) || !strings.HasPrefix(err.Error(), "$"+EnvVar+": ") {
		t.Errorf("FromEnv = %v; want an error naming $%s", err, EnvVar)
	}
}
