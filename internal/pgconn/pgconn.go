// Package pgconn holds what weft's PostgreSQL packages share: how they
// connect (PoolConfig), how they name the database in errors (Describe,
// Explain), and their pipelined transactions (Tx, RunTx).
package pgconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolConfig parses a connection string for a pool that sends statements
// as named prepared statements, cached per connection
// (QueryExecModeCacheStatement, pgx's own default): PostgreSQL parses and
// plans each statement text once per connection instead of on every call
// (a third less of its CPU per run of weft serve). A string that names
// default_query_exec_mode keeps its own choice: "exec" sends every
// statement as the extended protocol's unnamed statement, for PgBouncer in
// transaction mode before version 1.21 (from 1.21 on, PgBouncer keeps
// prepared statements across its server connections when
// max_prepared_statements is above 0, its default from 1.22, and the
// default works). The pool holds up to DefaultMaxConns connections unless
// the string sets pool_max_conns. The error is pgxpool's, for callers to
// wrap.
//
// A string that names no sslmode and no connection service (nor does the
// environment: PGSSLMODE, PGSERVICE) for a server on a loopback address
// (localhost, 127.0.0.0/8, ::1) gets sslmode=allow instead of pgx's and
// libpq's prefer: the connection is
// made without TLS, and with TLS only if the server refuses that. Between
// two processes of one machine TLS protects nothing, and it cost both
// sides about a tenth of their CPU per run of weft serve (the records'
// and checkpoints' statements are small and many).
func PoolConfig(url string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	// A connection service's file may name the mode too: left to it.
	named := strings.Contains(url, "sslmode") || os.Getenv("PGSSLMODE") != "" ||
		strings.Contains(url, "service") || os.Getenv("PGSERVICE") != ""
	if !named && loopback(pc.ConnConfig) {
		if pc, err = pgxpool.ParseConfig(withParam(url, "sslmode", "allow")); err != nil {
			return nil, err
		}
	}
	if !strings.Contains(url, "default_query_exec_mode") {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	}
	if !strings.Contains(url, "pool_max_conns") {
		pc.MaxConns = DefaultMaxConns
	}
	return pc, nil
}

// loopback reports whether every host cfg may connect to (its fallbacks
// too) is this machine: a loopback address, localhost, or a Unix socket.
func loopback(cfg *pgx.ConnConfig) bool {
	local := func(host string) bool {
		if strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	if !local(cfg.Host) {
		return false
	}
	for _, f := range cfg.Fallbacks {
		if !local(f.Host) {
			return false
		}
	}
	return true
}

// withParam adds key=value to a connection string: a query parameter of
// a URL, or a keyword of a key=value string.
func withParam(connString, key, value string) string {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		sep := "?"
		if strings.Contains(connString, "?") {
			sep = "&"
		}
		return connString + sep + key + "=" + value
	}
	return connString + " " + key + "=" + value
}

// Prepares reports whether a connection configured by cfg sends its
// statements as named prepared statements, which a transaction pooler
// older than PgBouncer 1.21 does not carry from one server connection to
// the next.
func Prepares(cfg *pgx.ConnConfig) bool {
	return cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}

// DefaultMaxConns is the most connections a pool opens unless its URL
// sets pool_max_conns. pgxpool's own default, the number of CPUs but at
// least 4, starves a server on a small machine: each write of a
// checkpoint, a lease or a run's record holds a connection while its
// commit waits for PostgreSQL's WAL flush, which costs the database
// little CPU, so a few cores keep many more commits in flight.
const DefaultMaxConns = 16

// Describe names the database a configuration connects to, for errors:
// `database "weft" on 10.0.0.5:5432 as user "app"`, never the password.
func Describe(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if strings.HasPrefix(host, "/") {
		host = "socket " + host
	}
	return fmt.Sprintf("database %q on %s:%d as user %q", cfg.Database, host, cfg.Port, cfg.User)
}

// Explain wraps err, an error of the server or the connection to the
// database that what describes (Describe), with what failed in words a
// user can act on, for the SQLSTATEs that say the database cannot be
// written or reached. Context errors and nil are returned as they are.
func Explain(what string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return fmt.Errorf("%s: cannot connect: %w", what, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	hint := ""
	switch pe.Code {
	case "25006": // read_only_sql_transaction
		hint = "the database is read-only (default_transaction_read_only is on, or the server is a standby)"
	case "53100": // disk_full
		hint = "the server's disk is full"
	case "42501": // insufficient_privilege
		hint = "the user lacks a permission weft needs"
	case "53300": // too_many_connections
		hint = "the server has no free connection"
	case "3D000": // invalid_catalog_name
		hint = "the database does not exist"
	case "57P03": // cannot_connect_now
		hint = "the server is starting up or shutting down"
	case "28P01", "28000": // invalid_password, invalid_authorization_specification
		hint = "the server refused the login"
	}
	if hint == "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %s: %w", what, hint, err)
}
