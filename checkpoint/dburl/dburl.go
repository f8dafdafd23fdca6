// Package dburl opens a durable checkpoint saver from one connection
// string, so a program (the weft CLI, a server) moves from the embedded
// SQLite file to PostgreSQL by setting WEFT_DATABASE_URL and nothing else.
//
//	db, err := dburl.FromEnv(ctx)  // $WEFT_DATABASE_URL, or ./weft.db
//	if err != nil { ... }
//	defer db.Close()
//	g, err := builder.Compile(&graph.CompileOptions{Checkpointer: db.Saver})
//
// Accepted forms:
//
//	postgres://user@host:5432/db?sslmode=disable   PostgreSQL (also postgresql://)
//	sqlite:///var/lib/weft/weft.db                 SQLite (also sqlite:PATH, file:PATH)
//	/var/lib/weft/weft.db, weft.db                 SQLite: any other string is a file path
//	(empty)                                        SQLite at DefaultPath
package dburl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
)

// EnvVar is the environment variable FromEnv reads.
const EnvVar = "WEFT_DATABASE_URL"

// DefaultPath is the SQLite file used when no connection string is given.
const DefaultPath = "weft.db"

// Options tune Open.
type Options struct {
	// Source names where the connection string came from, such as "--db"
	// or "$WEFT_DATABASE_URL"; errors start with it, so the user knows
	// what to fix. Empty names nothing.
	Source string
	// SkipMigrate opens the database without bringing its schema up to
	// date, for a `weft migrate` command that calls Migrate itself.
	SkipMigrate bool
}

// DB is an open durable saver.
type DB struct {
	// Saver is the checkpoint saver to compile graphs with.
	Saver *checkpoint.Saver
	// Backend is "sqlite" or "postgres".
	Backend string
	// Target is the file path or the connection string, without password.
	Target string
	driver interface {
		checkpoint.Driver
		Migrate(context.Context) error
		Close() error
	}
}

// Migrate brings the schema up to date; it is safe to run while other
// processes use or migrate the same database.
func (db *DB) Migrate(ctx context.Context) error { return db.driver.Migrate(ctx) }

// Close closes the database.
func (db *DB) Close() error { return db.driver.Close() }

// Driver returns the checkpoint driver: a *sqlite.Driver or a
// *postgres.Driver, for stores that keep their tables in the same
// database (the server's threads and runs, the long-term store).
func (db *DB) Driver() checkpoint.Driver { return db.driver }

// FromEnv opens the database named by $WEFT_DATABASE_URL, or the SQLite
// file DefaultPath when it is unset. Its errors name the variable.
func FromEnv(ctx context.Context) (*DB, error) {
	return Open(ctx, os.Getenv(EnvVar), Options{Source: "$" + EnvVar})
}

// ErrNoDatabaseName means a PostgreSQL URL names no database. PostgreSQL
// would fall back to a database named after the user (often "root"),
// which is rarely the one meant.
var ErrNoDatabaseName = errors.New("no database name")

// Parse names the backend ("sqlite" or "postgres") a connection string
// selects, and its target: the SQLite file path or the PostgreSQL URL.
// Other stores (the long-term store) use it to open the same database.
func Parse(dsn string) (backend, target string, err error) {
	dsn = strings.TrimSpace(dsn)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if err := needDatabaseName(dsn); err != nil {
			return "", "", err
		}
		return "postgres", dsn, nil
	}
	path := dsn
	for _, p := range []string{"sqlite://", "sqlite:", "file:"} {
		if strings.HasPrefix(path, p) {
			path = strings.TrimPrefix(path, p)
			break
		}
	}
	if path == "" {
		path = DefaultPath
	}
	if strings.Contains(path, "://") {
		return "", "", fmt.Errorf("%w: unknown database URL scheme in %q; use postgres://USER@HOST:PORT/DBNAME or a SQLite file path", checkpoint.ErrInvalid, redact(dsn))
	}
	return "sqlite", path, nil
}

// Open opens the database a connection string names (see the package
// documentation for the forms).
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	db, err := open(ctx, dsn, opts)
	if err != nil && opts.Source != "" {
		return nil, fmt.Errorf("%s: %w", opts.Source, err)
	}
	return db, err
}

func open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	backend, target, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	if backend == "postgres" {
		d, err := postgres.OpenOptions(ctx, target, postgres.Options{SkipMigrate: opts.SkipMigrate})
		if err != nil {
			return nil, err
		}
		return &DB{Saver: checkpoint.New(d), Backend: backend, Target: redact(target), driver: d}, nil
	}
	d, err := sqlite.OpenOptions(ctx, target, sqlite.Options{SkipMigrate: opts.SkipMigrate})
	if err != nil {
		return nil, err
	}
	return &DB{Saver: checkpoint.New(d), Backend: backend, Target: target, driver: d}, nil
}

// needDatabaseName checks that a PostgreSQL URL names its database, in
// its path or as the dbname parameter.
func needDatabaseName(dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		// The driver reports what is wrong with the URL, in its own words.
		return nil
	}
	if strings.Trim(u.Path, "/") != "" || u.Query().Get("dbname") != "" {
		return nil
	}
	return fmt.Errorf("%w: %w in %q; expected postgres://USER@HOST:PORT/DBNAME, e.g. postgres://postgres@127.0.0.1:5432/weft", checkpoint.ErrInvalid, ErrNoDatabaseName, redact(dsn))
}

// redact drops a password from a URL for messages.
func redact(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return dsn
	}
	cred := dsn[scheme+3 : at]
	if i := strings.Index(cred, ":"); i >= 0 {
		return dsn[:scheme+3] + cred[:i] + ":xxxxx" + dsn[at:]
	}
	return dsn
}
