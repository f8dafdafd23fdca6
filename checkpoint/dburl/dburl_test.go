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
